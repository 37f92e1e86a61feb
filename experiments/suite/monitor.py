"""What a learning algorithm's run records while it trains (``python -m experiments.suite run --trainer ... --curve
K``): its policy's score at K checkpoints spread evenly over the budget, and the regret of every move it made while
learning, priced by the oracle.

The :class:`TrainingMonitor` is the runner's: it holds the task's oracle and the scores, and the trainer never sees
it.  A trainer that declares ``train.checkpoints = True`` hands its policy and its moves to its run
(:class:`experiments.suite.training.TrainingRun`) as it trains::

    def train(run, budget_steps, seed):
        ...
        for each batch of moves played while learning:
            run.record_moves(boards, actions)   # the boards before the moves, and the moves
            if run.checkpoint_due():
                run.checkpoint(policy)          # scored as the suite scores any policy; nothing comes back
    train.checkpoints = True

The run file then holds ``curve`` (one point per checkpoint at the steps counted when it was handed, the last one
the run's own final score) and ``training_regret``: the sum over the moves priced of max Q* − Q*(move), in the
task's units (score points, or probability of success).
"""

from __future__ import annotations

import numpy as np

from agents.registry import make_policy
from env2048 import metering
from oracle import Oracle

from .scoring import score_policy
from .tasks import Task
from .training import check_learned


class TrainingMonitor:
    """Checkpoints at fractions 0, 1/K, ..., (K-1)/K of ``task.budget_steps`` (the runner adds the final score at
    1) and the running sum of the training moves' regret."""

    def __init__(self, task: Task, oracle: Oracle, points: int, seed: int, progress: bool = False):
        if not isinstance(points, int) or points < 2:
            raise ValueError(f"--curve needs at least 2 points (the start and the end), got {points!r}")
        self.task, self.oracle, self.seed, self.progress = task, oracle, seed, progress
        self.fractions = [i / points for i in range(points)]
        self.steps = [round(f * task.budget_steps) for f in self.fractions]
        self.curve: list[dict] = []
        self.regret = 0.0
        self.moves_priced = 0
        self.moves_unpriced = 0  # moves from a board without an allowed move (a stuck endgame start)

    def due(self, steps: int) -> bool:
        """Whether a checkpoint is due at ``steps`` environment steps (the next one not yet recorded)."""
        return len(self.curve) < len(self.steps) and steps >= self.steps[len(self.curve)]

    def record(self, steps: int, policy, avoid_seeds=()) -> None:
        """Score ``policy`` now (``steps`` taken so far) for every checkpoint due; one evaluation serves them all
        (a Monte-Carlo one from a secret start none of whose games has a seed of ``avoid_seeds``)."""
        check_learned(policy)
        rows, cols = self.task.shape
        with metering.paused():  # a Monte-Carlo score plays the runner's games, not the learner's
            result = score_policy(
                self.task,
                self.oracle,
                make_policy(policy, rows, cols, self.seed),
                self.progress,
                avoid_seeds=avoid_seeds,
            )
        while self.due(steps):
            self.curve.append(_point(self.fractions[len(self.curve)], int(steps), result))

    def price(self, boards, actions) -> None:
        """Add the regret of moves ``actions int[n]`` made on ``boards`` (packed ``uint64[n]``, or exponent boards
        ``uint8 (n, rows, cols)``)."""
        boards = np.asarray(boards)
        boards = boards.astype(np.uint64) if boards.ndim == 1 else boards.astype(np.uint8)
        actions = np.asarray(actions, np.int64).reshape(-1)
        if actions.size == 0:
            return
        q = self.oracle.q_values(boards).reshape(-1, 4)
        chosen = q[np.arange(q.shape[0]), actions]
        legal = ~np.isnan(q).all(axis=1)
        if np.isnan(chosen[legal]).any():
            raise ValueError("a training move was not allowed on its board: the trainer's moves and boards disagree")
        self.regret += float((np.nanmax(q[legal], axis=1) - chosen[legal]).sum())
        self.moves_priced += int(legal.sum())
        self.moves_unpriced += int((~legal).sum())

    def result(self, final: dict, train_steps: int | None) -> dict:
        """What the run file keeps: the curve, ending with the run's final score ``final``, and the regret; a
        ``ValueError`` if the trainer handed fewer checkpoints than were due."""
        if len(self.curve) < len(self.steps):
            raise ValueError(
                f"--curve {len(self.steps)}: the trainer handed checkpoints for {len(self.curve)} of the "
                f"{len(self.steps)} points due before the end (at steps {self.steps}); it calls "
                "run.checkpoint(policy) whenever run.checkpoint_due() as it trains"
            )
        return {
            "curve": [*self.curve, _point(1.0, train_steps, final)],
            "training_regret": self.regret,
            "training_moves_priced": self.moves_priced,
            "training_moves_unpriced": self.moves_unpriced,
        }


def _point(fraction: float, steps: int | None, scored: dict) -> dict:
    """One point of a curve: where in the budget, after how many steps, and the score there."""
    kept = ("value", "normalized", "method", "evaluation_seed")
    return {"fraction": fraction, "steps": steps, **{k: scored[k] for k in kept if k in scored}}
