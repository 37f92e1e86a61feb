"""Playing strength and speed of the agents: 4x4 games and the 3x3 oracle's verdict on expectimax.

    python -m experiments.bench.play [--games-4x4 200] [--weights-4x4 W.npz] [--games-3x3 1000]
        [--weights-3x3 W.npz] [--depths 1,2,3] [--skip-4x4]

4x4 (no oracle: mean score ± 95% CI and the rate of reaching each tile from 512 on) for random, greedy,
expectimax:2 on the heuristic and, with ``--weights-4x4`` (from ``experiments.train.td --board 4x4``), the TD
network 1-ply and under expectimax:2; decisions per second are the agent's own time (median over games of
moves / agent seconds).  Game i is seeded with i.  3x3: expectimax on the heuristic (and on the ``--weights-3x3``
network if given) at each of ``--depths``, priced by the oracle over ``--games-3x3`` games (mean score, % of
optimal, regret per game, optimal moves, decisions/s).
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym
import numpy as np

import env2048  # noqa: F401  (registers the environments)
from agents import ExpectimaxAgent, GreedyAgent, NTupleAgent, RandomAgent
from oracle import Oracle
from oracle.priced_games import mean_ci


def play_games(agent, rows: int, cols: int, games: int, seed: int = 0) -> dict:
    """``games`` games of ``agent`` (game i reset with seed ``seed + i``): scores, max tiles, decisions/s."""
    env = gym.make("Game2048-v0", rows=rows, cols=cols, invalid_action="raise")
    scores, tops, rates = [], [], []
    for g in range(games):
        obs, info = env.reset(seed=seed + g)
        done, spent, moves = False, 0.0, 0
        while not done:
            t = time.perf_counter()
            action = agent.act(obs, info)
            spent += time.perf_counter() - t
            moves += 1
            obs, _, done, _, info = env.step(action)
        scores.append(info["score"])
        tops.append(info["max_tile"])
        rates.append(moves / spent)
    mean, ci = mean_ci(np.array(scores))
    tops = np.array(tops)
    reached = {int(t): float((tops >= t).mean()) for t in (512, 1024, 2048, 4096, 8192, 16384) if (tops >= t).any()}
    return {
        "games": games,
        "mean_score": mean,
        "score_ci": ci,
        "reached": reached,
        "decisions_per_second": statistics.median(rates),
    }


def describe(name: str, r: dict) -> str:
    tiles = ", ".join(f"{t}: {100 * p:.1f}%" for t, p in r["reached"].items()) or "none reached 512"
    return (
        f"{name:>22}: score {r['mean_score']:,.0f} ± {r['score_ci']:,.0f} over {r['games']} games; reached "
        f"{tiles}; {r['decisions_per_second']:,.0f} decisions/s"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--games-4x4", type=int, default=200)
    parser.add_argument("--weights-4x4", default=None, help="4x4 n-tuple weights (.npz)")
    parser.add_argument("--games-3x3", type=int, default=1000, help="0: skip the 3x3 part")
    parser.add_argument("--weights-3x3", default=None, help="3x3 n-tuple weights: expectimax on them as well")
    parser.add_argument("--depths", default="1,2,3")
    parser.add_argument("--skip-4x4", action="store_true")
    args = parser.parse_args(argv)

    if not args.skip_4x4:
        players = [
            ("random", RandomAgent(seed=0)),
            ("greedy", GreedyAgent()),
            ("expectimax:2", ExpectimaxAgent(4, 4, depth=2)),
        ]
        if args.weights_4x4:
            network = NTupleAgent.load(args.weights_4x4)
            players += [
                ("td 1-ply", network),
                ("expectimax:2 on td", ExpectimaxAgent(4, 4, depth=2, evaluator=network)),
            ]
        for name, agent in players:
            agent.act(np.zeros((4, 4), np.uint8) + np.eye(4, dtype=np.uint8), {"action_mask": np.ones(4, bool)})
            print(describe(f"4x4 {name}", play_games(agent, 4, 4, args.games_4x4)), flush=True)

    if args.games_3x3 <= 0:
        return
    oracle = Oracle.for_board("3x3")
    evaluators = [("heuristic", "heuristic")]
    if args.weights_3x3:
        evaluators.append(("td", NTupleAgent.load(args.weights_3x3)))
    for label, evaluator in evaluators:
        for depth in (int(d) for d in args.depths.split(",")):
            agent = ExpectimaxAgent(3, 3, depth=depth, evaluator=evaluator)
            t = time.perf_counter()
            report = oracle.regret(agent, episodes=args.games_3x3, seed=0, progress=False)
            dt = time.perf_counter() - t
            speed = play_games(agent, 3, 3, 20)["decisions_per_second"]
            print(
                f"3x3 expectimax:{depth} ({label}): {report.summary()}; {speed:,.0f} decisions/s ({dt:.0f} s)",
                flush=True,
            )


if __name__ == "__main__":
    main()
