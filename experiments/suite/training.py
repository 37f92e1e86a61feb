"""What a trainer gets: ``train(run, budget_steps, seed)`` receives a :class:`TrainingRun`, the task (every
attribute of :class:`experiments.suite.tasks.Task`) with the run's counted budget and the only ways to reach the
game that the budget allows (docs/suite.md, "Tracks").

A trainer declares its track with a ``track`` attribute (``"env-only"`` when it has none)::

    def train(run, budget_steps, seed):
        env = run.make_env()                      # env-only: every step is counted
        ...
    train.track = "env-only"

``known-rules`` trainers may also simulate the game through :meth:`TrainingRun.simulator`, whose every move is
counted against the same budget.  The first step past the budget raises
:class:`experiments.suite.budget.BudgetExceeded`; stop at ``run.budget.remaining == 0``.
"""

from __future__ import annotations

from .budget import TRACKS, CountedEnv, CountedSimulator, StepBudget, counted_vec_env
from .tasks import Task


class NotLearned(ValueError):
    """A trainer returned a spec string or a fixed reference agent: nothing it learned."""


def check_learned(policy) -> None:
    """Raise :class:`NotLearned` if ``policy``, what a trainer returned, is a spec string (``"optimal"``,
    ``"greedy"``, ``"td:PATH"``, ...) or one of the fixed reference agents (random, greedy, optimal, expectimax with
    its heuristic): those are scored as ``--agent`` on the reference track, never as what a trainer learned."""
    from agents import GreedyAgent, OptimalAgent, RandomAgent
    from agents.expectimax import ExpectimaxAgent

    if isinstance(policy, str):
        what = f"the spec string {policy!r}"
    elif isinstance(policy, RandomAgent | GreedyAgent | OptimalAgent) or (
        isinstance(policy, ExpectimaxAgent) and policy.uses_heuristic
    ):
        what = f"the fixed reference agent {type(policy).__name__}"
    else:
        return
    raise NotLearned(
        f"the trainer returned {what}: a trainer returns the policy it learned (an agent object, an SB3 model, a "
        "torch module or a callable); the fixed reference agents (random, greedy, optimal, expectimax) run as "
        "--agent, on the reference track"
    )


def track_of(train) -> str:
    """The track a trainer declares (its ``track`` attribute; ``"env-only"`` if none), checked."""
    track = getattr(train, "track", "env-only")
    if track not in TRACKS:
        raise ValueError(
            f"trainer {getattr(train, '__name__', train)!r} declares track {track!r}; tracks: {', '.join(TRACKS)}"
        )
    return track


class TrainingRun:
    """One training run on a task: ``task``'s attributes, ``budget`` (a :class:`StepBudget`) and the counted
    environments and simulator.  None of them carries the oracle.  ``progress``: whether the trainer may show a
    progress bar (``run --quiet`` says no)."""

    def __init__(self, task: Task, budget: StepBudget, progress: bool = True):
        self.task, self.budget, self.progress = task, budget, progress

    def __getattr__(self, name: str):
        return getattr(self.task, name)

    @property
    def track(self) -> str:
        return self.budget.track

    @property
    def budget_steps(self) -> int:
        return self.budget.limit

    def make_env(self, **kwargs):
        """The task's Gymnasium env (no oracle; an illegal move ends the game, as in the v2 ids), every step
        counted; ``kwargs`` go to the game's env."""
        from .envs import make_task_env

        kwargs.setdefault("invalid_action", "terminate")
        return CountedEnv(make_task_env(self.task, oracle=False, **kwargs), self.budget)

    def make_vec_env(self, n_envs: int, seed: int, reward: str = "goal"):
        """``n_envs`` games of the task as an SB3 ``VecEnv`` (one-hot observations, action masks, no oracle; see
        :func:`experiments.suite.envs.make_task_vec_env`), every step of every env counted."""
        from .envs import make_task_vec_env

        return counted_vec_env(make_task_vec_env(self.task, n_envs, seed, reward), self.budget)

    def simulator(self) -> CountedSimulator:
        """The game's rules, every simulated move counted (``known-rules`` track only)."""
        if self.budget.track != "known-rules":
            raise ValueError(
                f"an {self.budget.track} trainer has no simulator: it learns from the task's envs "
                "(run.make_env, run.make_vec_env); declare train.track = 'known-rules' to simulate the game"
            )
        return CountedSimulator(self.task, self.budget)
