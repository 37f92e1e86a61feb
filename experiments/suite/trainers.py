"""Learning algorithms for ``python -m experiments.suite run --trainer``, each ``train(task, budget_steps, seed)
-> policy``.

- ``experiments.suite.trainers:td``: afterstate TD(0) on the n-tuple network of ``agents.ntuple`` (its default
  tuples and stages for the board), trained on the task's board with the game's score as reward, one thread
  (reproducible from the seed), the learning rate following ``experiments.train.td``'s schedule over the budget.
  Games are played in rounds of :data:`ROUND` and training stops at the first round that reaches the budget, so
  it may overshoot by at most one round's moves (the run file records ``train_steps``).
"""

from __future__ import annotations

from agents.ntuple import NTupleAgent, tuple_set
from experiments.train.td import BOARD_SCHEDULES, DEFAULT_SCHEDULE, alpha_at, parse_schedule

#: Games per round of TD training.
ROUND = 50


def td(task, budget_steps: int, seed: int) -> NTupleAgent:
    """An n-tuple network trained by TD(0) for ``budget_steps`` moves on the task's board."""
    rows, cols = task.shape
    schedule = parse_schedule(BOARD_SCHEDULES.get((rows, cols), DEFAULT_SCHEDULE))
    agent = NTupleAgent(rows, cols, tuples=tuple_set("default", rows, cols), alpha=schedule[0][1], seed=seed)
    moves = 0
    while moves < budget_steps:
        agent.alpha = alpha_at(schedule, moves / budget_steps)
        moves += agent.train(ROUND, threads=1).moves
    agent.train_steps = moves
    return agent
