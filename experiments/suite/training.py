"""What a trainer gets: ``train(run, budget_steps, seed)`` receives a :class:`TrainingRun`, the task's game (the
attributes of :data:`TASK_ATTRIBUTES`) with the run's counted budget and the only ways to reach the game that the
budget allows (docs/suite.md, "Tracks").

A trainer declares its track with a ``track`` attribute (``"env-only"`` when it has none)::

    def train(run, budget_steps, seed):
        env = run.make_env()                      # env-only: every step is counted
        ...
    train.track = "env-only"

``known-rules`` trainers may also simulate the game through :meth:`TrainingRun.simulator`, whose every move is
counted against the same budget.  The first step past the budget raises
:class:`experiments.suite.budget.BudgetExceeded`; stop at ``run.budget.remaining == 0``.

The runner trains under :func:`sealed_training`: no table opens, and every env2048 game the trainer steps, made
by the run or by itself, is counted (docs/suite.md, "What a trainer may touch").
"""

from __future__ import annotations

from contextlib import contextmanager

from env2048 import metering
from solver import seal

from .budget import TRACKS, CountedEnv, CountedSimulator, StepBudget, counted_vec_env
from .tasks import Task


class NotLearned(ValueError):
    """A trainer returned a spec string or a fixed reference agent: nothing it learned."""


def reference_agent_types() -> tuple[type, ...]:
    """The fixed reference agents' classes that a trainer may never return (random, greedy, optimal); an expectimax
    search is one only on its heuristic (:func:`check_learned`), since a learned network played by search shares
    its class."""
    from agents import GreedyAgent, OptimalAgent, RandomAgent

    return RandomAgent, GreedyAgent, OptimalAgent


def check_learned(policy) -> None:
    """Raise :class:`NotLearned` if ``policy``, what a trainer returned, is a spec string (``"optimal"``,
    ``"greedy"``, ``"td:PATH"``, ...) or one of the fixed reference agents (random, greedy, optimal, expectimax with
    its heuristic): those are scored as ``--agent`` on the reference track, never as what a trainer learned."""
    from agents.expectimax import ExpectimaxAgent

    if isinstance(policy, str):
        what = f"the spec string {policy!r}"
    elif isinstance(policy, reference_agent_types()) or (isinstance(policy, ExpectimaxAgent) and policy.uses_heuristic):
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


#: The task's attributes a trainer may read through its run: the game, its goal, its ids and its budget; not V*,
#: the table's digest, the evaluation's settings or the oracle, which are the runner's.
TASK_ATTRIBUTES = (
    "name",
    "env_id",
    "board",
    "objective",
    "pattern",
    "target",
    "kind",
    "shape",
    "invalid_action",
    "start_p4",
    "env_kwargs",
    "version",
    "spec",
    "describe",
)


def declares_checkpoints(train) -> bool:
    """Whether a trainer hands checkpoints to its run (``train.checkpoints = True``), as ``run --curve`` needs."""
    return getattr(train, "checkpoints", False) is True


@contextmanager
def sealed_training(budget: StepBudget, who: str):
    """While ``who`` (a trainer's name) trains: the tables sealed (:mod:`solver.seal`) and ``budget`` installed
    as the step meter (:mod:`env2048.metering`), so that every env2048 game stepped is counted."""
    with seal.sealed(f"{who} is training"), metering.installed(budget):
        yield


def sealed_scoring(who: str):
    """While the policy that ``who`` returned is scored: the tables sealed, so that the policy cannot open one
    (the runner's own, opened before, scores it)."""
    return seal.sealed(f"the policy {who} returned is being scored")


class TrainingRun:
    """One training run on a task: the task's :data:`TASK_ATTRIBUTES` (``run.name``, ``run.shape``,
    ``run.spec()``, ...), ``budget`` (a :class:`StepBudget`), the task's envs and, on the ``known-rules``
    track, its simulator.  ``progress``: whether the trainer may show a progress bar (``run --quiet`` says no).

    With ``run --curve K`` the runner also takes checkpoints: a trainer that declares ``train.checkpoints =
    True`` hands its policy to :meth:`checkpoint` as it trains (it is scored there, and nothing of the score
    comes back) and its training moves to :meth:`record_moves` (priced by the runner).  ``monitor``: the
    runner's :class:`experiments.suite.monitor.TrainingMonitor` (None: no curve)."""

    def __init__(self, task: Task, budget: StepBudget, progress: bool = True, monitor=None):
        self.__task, self.__monitor = task, monitor
        self.budget, self.progress = budget, progress

    def __getattr__(self, name: str):
        if name in TASK_ATTRIBUTES:
            return getattr(self.__task, name)
        raise AttributeError(
            f"a training run has no attribute {name!r}: it shows the task's {', '.join(TASK_ATTRIBUTES)}, its "
            "budget, envs and simulator; V*, the table and the evaluation are the runner's"
        )

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
        return CountedEnv(make_task_env(self.__task, oracle=False, **kwargs), self.budget)

    def make_vec_env(self, n_envs: int, seed: int, reward: str = "goal"):
        """``n_envs`` games of the task as an SB3 ``VecEnv`` (one-hot observations, action masks, no oracle; see
        :func:`experiments.suite.envs.make_task_vec_env`), every step of every env counted."""
        from .envs import make_task_vec_env

        return counted_vec_env(make_task_vec_env(self.__task, n_envs, seed, reward), self.budget)

    def make_jax_games(self, n_envs: int):
        """``n_envs`` games of the task in JAX (extra ``jax``) as a :class:`env2048.jax.counted.CountedGames`: the
        task's game and reward (an illegal move ends the game), every step charged to the budget when the
        compiled code runs (once per ``rollout``)."""
        from .envs import make_task_jax_games

        return make_task_jax_games(self.__task, n_envs)

    def simulator(self) -> CountedSimulator:
        """The game's rules, every simulated move counted (``known-rules`` track only)."""
        if self.budget.track != "known-rules":
            raise ValueError(
                f"an {self.budget.track} trainer has no simulator: it learns from the task's envs "
                "(run.make_env, run.make_vec_env); declare train.track = 'known-rules' to simulate the game"
            )
        return CountedSimulator(self.__task, self.budget)

    # -- checkpoints (run --curve K) ---------------------------------------------------------------------------
    @property
    def records_curve(self) -> bool:
        """Whether the runner takes checkpoints in this run (``run --curve K``)."""
        return self.__monitor is not None

    def checkpoint_due(self) -> bool:
        """Whether a checkpoint is due now, at the steps counted so far (so that a trainer builds a policy to
        hand only then)."""
        return self.__monitor is not None and self.__monitor.due(self.budget.used)

    def checkpoint(self, policy) -> None:
        """Hand ``policy`` (what the trainer would return now) to the runner, which scores it for every checkpoint
        due at the steps counted so far; nothing of the score comes back.  A no-op when none is due."""
        if self.checkpoint_due():
            self.__monitor.record(self.budget.used, policy, self.budget.training_seeds)

    def record_moves(self, boards, actions) -> None:
        """Hand the moves ``actions int[n]`` the trainer made while learning, on ``boards`` (packed ``uint64[n]``
        or exponent boards ``uint8 (n, rows, cols)``), for the run's training regret.  A no-op without a curve."""
        if self.__monitor is not None:
            self.__monitor.price(boards, actions)
