"""Environment throughput: steps per second with random legal actions.

    python -m experiments.bench.env [--repeats 5] [--boards 3x3,4x3,4x4] [--quick]

Measures, per board: ``Game2048Env`` called directly, the same env through ``gym.make`` (default wrappers),
and ``Game2048VectorEnv`` at 1, 64 and 4096 envs (every env-step counts, autoreset steps included).  Each
figure is the median of ``--repeats`` timed runs after a warm-up run (numba compilation excluded).
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import time
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

import env2048  # noqa: F401
from env2048 import Game2048Env, Game2048VectorEnv, parse_board
from env2048.engine import sample_legal_actions

# mask bytes -> the legal actions, so that choosing a random legal action costs one dict lookup.
_LEGAL = {
    np.array(bits, dtype=bool).tobytes(): tuple(a for a in range(4) if bits[a])
    for bits in itertools.product([False, True], repeat=4)
}


@dataclass
class Figure:
    board: str
    mode: str
    steps_per_s: float
    runs: list[float]


def run_single(env, steps: int, seed: int) -> float:
    """Seconds for ``steps`` env steps with uniformly random legal actions (resets not counted as steps)."""
    rnd = random.Random(seed).random
    legal_of = _LEGAL
    obs, info = env.reset(seed=seed)
    mask = info["action_mask"]
    step = env.step
    start = time.perf_counter()
    for _ in range(steps):
        legal = legal_of[mask.tobytes()]
        obs, reward, terminated, truncated, info = step(legal[int(rnd() * len(legal))])
        mask = info["action_mask"]
        if terminated:
            obs, info = env.reset()
            mask = info["action_mask"]
    return time.perf_counter() - start


def run_vector(envs: Game2048VectorEnv, vector_steps: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    _, info = envs.reset(seed=seed)
    mask = info["action_mask"]
    start = time.perf_counter()
    for _ in range(vector_steps):
        actions = sample_legal_actions(mask, rng.random(envs.num_envs))
        _, _, _, _, info = envs.step(actions)
        mask = info["action_mask"]
    return time.perf_counter() - start


def measure(fn, work: int, repeats: int) -> tuple[float, list[float]]:
    fn(max(1, work // 10), 999)  # warm-up: compile and fill caches
    rates = [work / fn(work, seed) for seed in range(repeats)]
    return statistics.median(rates), rates


def main(argv=None) -> list[Figure]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--boards", default="3x3,4x3,4x4")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="10x less work per run (for smoke tests)")
    args = parser.parse_args(argv)
    scale = 10 if args.quick else 1
    figures: list[Figure] = []
    print(f"{'board':>5}  {'mode':<22} {'steps/s (median)':>18}   runs")
    for spec in args.boards.split(","):
        rows, cols = parse_board(spec)
        direct = Game2048Env(rows, cols)
        made = gym.make("Game2048-v0", rows=rows, cols=cols)
        cases = [
            ("Game2048Env", lambda n, s, e=direct: run_single(e, n, s), 300_000 // scale),
            ("gym.make", lambda n, s, e=made: run_single(e, n, s), 300_000 // scale),
        ]
        for num_envs, vsteps in ((1, 100_000), (64, 10_000), (4096, 500)):
            vec = Game2048VectorEnv(num_envs, rows, cols)
            cases.append((f"vector x{num_envs}", lambda n, s, v=vec: run_vector(v, n, s), max(1, vsteps // scale)))
        for mode, fn, work in cases:
            per_call = int(mode.split("x")[-1]) if mode.startswith("vector") else 1
            rate, runs = measure(fn, work, args.repeats)
            fig = Figure(spec, mode, rate * per_call, [r * per_call for r in runs])
            figures.append(fig)
            runs_text = " ".join(f"{r:,.0f}" for r in fig.runs)
            print(f"{spec:>5}  {mode:<22} {fig.steps_per_s:>18,.0f}   {runs_text}", flush=True)
    return figures


if __name__ == "__main__":
    main()
