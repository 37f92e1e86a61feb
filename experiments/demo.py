"""`make demo`, the main job: solve 3x3, train a TD agent briefly, benchmark the agents against the optimum.

    python -m experiments.demo [--minutes 3] [--episodes 1000] [--out results]

1. The exact 3x3 table: reused from the cache (``$SOLVED2048_HOME`` or ``~/.cache/solved2048``), else solved
   there (about 16 s).  One greedy game on ``Solved2048-3x3`` shows the oracle pricing every move.
2. An n-tuple network trained by TD(0) for ``--minutes`` (``experiments.train.td``) -> ``OUT/td-3x3.npz``.
3. The benchmark (``experiments.benchmark``, protocol in docs/benchmark.md) on random, greedy, expectimax:2 (the
   heuristic), td and expectimax:2 on the td network: ``OUT/3x3/benchmark.{md,csv,json}``, ``gap-by-age.png``.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

import env2048  # noqa: F401  (registers the environments)
from agents import GreedyAgent
from experiments import benchmark
from experiments.train import td as train_td


def priced_game(seed: int = 0) -> None:
    """One greedy game on Solved2048-3x3, its final board and the regret the oracle charges for it."""
    env = gym.make("Solved2048-3x3", oracle=True, render_mode="ansi")
    obs, info = env.reset(seed=seed)
    print(f"Solved2048-3x3: the optimal expected score from this start is {np.nanmax(info['q_values']):.2f}")
    agent, done, regret = GreedyAgent(), False, 0.0
    while not done:
        obs, _, done, _, info = env.step(agent.act(obs, info))
        regret += info["regret"]
    print(
        f"a greedy game: {info['moves']} moves, score {info['score']}, max tile {info['max_tile']}; its moves "
        f"gave away {regret:.2f} points of expected score\n{env.render()}"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=3.0, help="TD training time")
    parser.add_argument("--episodes", type=int, default=1000, help="benchmark games per agent")
    parser.add_argument("--out", default="results")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    out = Path(args.out)
    priced_game()
    weights = out / "td-3x3.npz"
    print(f"\ntraining TD(0) on 3x3 for {args.minutes:g} min ...", flush=True)
    train_td.train(train_td.Args(board="3x3", minutes=args.minutes, out=str(weights), evaluate=False))
    print("\nbenchmark (docs/benchmark.md) ...", flush=True)
    specs = ["random", "greedy", "expectimax:2", f"td:{weights}", f"expectimax:2:{weights}"]
    result = benchmark.run("3x3", specs, episodes=args.episodes, seed=0, out=out)
    folder = out / result["board"]
    print("\n" + benchmark.markdown_table(result))
    print(
        f"results: {folder}/benchmark.md (.csv, .json), {folder}/gap-by-age.png, {folder}/agent-*.png; "
        f"TD weights {weights}; {time.perf_counter() - start:.0f} s in all"
    )


if __name__ == "__main__":
    main()
