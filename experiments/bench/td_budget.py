"""The cost of counting TD's moves: the suite's TD trainer through its counted simulator against the same games
played by ``NTupleAgent.train`` with no budget, interleaved, median of ``--repeats``.

    python -m experiments.bench.td_budget [--task 3x3] [--moves 2000000] [--repeats 5]

Both play rounds of the trainer's games from the same seed on one thread; the counted run, sealed and metered as
the runner trains it, has its kernel check the moves left before each move, and each round's moves charged to the
budget.
"""

from __future__ import annotations

import argparse
import statistics
import time

from agents.ntuple import NTupleAgent, tuple_set
from experiments.suite import get_task
from experiments.suite.budget import StepBudget
from experiments.suite.trainers import ROUND, td
from experiments.suite.training import TrainingRun, sealed_training
from experiments.train.td import BOARD_SCHEDULES, DEFAULT_SCHEDULE, alpha_at, parse_schedule


def uncounted(rows: int, cols: int, moves: int, seed: int) -> float:
    """Seconds of the suite TD trainer's loop (same network, schedule and seed) on ``NTupleAgent.train`` with no
    budget, until ``moves`` moves."""
    schedule = parse_schedule(BOARD_SCHEDULES.get((rows, cols), DEFAULT_SCHEDULE))
    agent = NTupleAgent(rows, cols, tuples=tuple_set("default", rows, cols), alpha=schedule[0][1], seed=seed)
    start, done = time.perf_counter(), 0
    while done < moves:
        agent.alpha = alpha_at(schedule, done / moves)
        done += agent.train(ROUND, threads=1).moves
    return time.perf_counter() - start


def counted(task, moves: int, seed: int) -> float:
    """Seconds of the suite TD trainer as the runner trains it: its budget installed as the step meter and the
    tables sealed (:func:`experiments.suite.training.sealed_training`), every round's moves counted."""
    budget = StepBudget(moves, "known-rules")
    start = time.perf_counter()
    with sealed_training(budget, "td"):
        td(TrainingRun(task, budget, progress=False), moves, seed)
    return time.perf_counter() - start


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--task", default="3x3", help="a score task of the suite (default 3x3)")
    p.add_argument("--moves", type=int, default=2_000_000)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)
    task = get_task(args.task)
    if task.kind != "score":
        raise SystemExit(f"{args.task}: choose a score task (the uncounted loop trains the score agent)")
    rows, cols = task.shape
    uncounted(rows, cols, 20_000, 0)  # compile both before timing
    counted(task, 20_000, 0)
    plain, budgeted = [], []
    for r in range(args.repeats):
        plain.append(uncounted(rows, cols, args.moves, r))
        budgeted.append(counted(task, args.moves, r))
    a, b = statistics.median(plain), statistics.median(budgeted)
    print(f"{args.task}, {args.moves:,} moves, median of {args.repeats}:")
    print(f"  NTupleAgent.train, no budget: {a:.3f} s ({args.moves / a / 1e6:.2f} M moves/s)")
    print(f"  suite TD, counted simulator:  {b:.3f} s ({args.moves / b / 1e6:.2f} M moves/s)")
    print(f"  overhead of the count: {100 * (b / a - 1):+.1f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
