"""The cost per move of ``td_expectimax``'s search: depth-2 expectimax on a TD network, on boards of each task's
own games, median of ``--repeats``.

    python -m experiments.bench.search_cost [--tasks 3x3,3x3-512,L3-256,t-512] [--moves 400] [--repeats 5]

The network is trained for ``--train`` moves (its values change what the search visits little: the cost is the
tree's); the boards are ``--moves`` positions of games played from ``reset(seed=1)`` by cycling through the
legal moves.  Run it with ``NUMBA_NUM_THREADS=1`` for one core's figure.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time

import numpy as np

from experiments.suite import get_task
from experiments.suite.envs import make_task_env
from experiments.suite.trainers import td_expectimax


def positions(task, moves: int) -> tuple[np.ndarray, np.ndarray]:
    """``(boards uint8 (moves, rows, cols), masks bool (moves, 4))`` of games of the task's env."""
    env = make_task_env(task, oracle=False)
    boards, masks = [], []
    obs, info = env.reset(seed=1)
    while len(boards) < moves:
        legal = np.flatnonzero(info["action_mask"])
        if legal.size == 0:  # a start with no allowed move
            obs, info = env.reset()
            continue
        boards.append(np.asarray(obs, np.uint8))
        masks.append(info["action_mask"])
        obs, _, terminated, truncated, info = env.step(int(legal[len(boards) % legal.size]))
        if terminated or truncated:
            obs, info = env.reset()
    return np.array(boards), np.array(masks)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tasks", default="3x3,3x3-512,L3-256,t-512")
    parser.add_argument("--moves", type=int, default=400)
    parser.add_argument("--train", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    for name in args.tasks.split(","):
        task = dataclasses.replace(get_task(name), budget_steps=args.train)
        player = td_expectimax(task, args.train, seed=0)
        boards, masks = positions(task, args.moves)
        player.act_batch(boards[:5], masks[:5])  # compiled and warm
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            player.act_batch(boards, masks)
            times.append((time.perf_counter() - start) / len(boards))
        print(f"{name}: {1e3 * statistics.median(times):.3f} ms per move (median of {args.repeats} x {len(boards)})")


if __name__ == "__main__":
    main()
