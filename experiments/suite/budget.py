"""Counted training budgets: every environment step (``env-only``) or simulated move (``known-rules``) a learner
takes goes through a counter of the suite, which refuses the first one past the budget.

A step past the budget raises :class:`BudgetExceeded` (the runner reports it with the task and seed, and keeps
the seeds finished before); a trainer stops cleanly by looking at :attr:`StepBudget.remaining`.  The runner
records :attr:`StepBudget.used`, what was counted, not what the trainer says it used.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from env2048 import metering

#: The tracks of the suite (docs/suite.md): what a learner may use, and what its budget counts.
TRACKS = {
    "env-only": "the learner acts only through the suite's environments; the budget counts their steps",
    "known-rules": "the learner may simulate the game (it knows the rules) through the suite's counted simulator; "
    "the budget counts every simulated move",
}
#: The track of a fixed agent (no training in the suite: random, greedy, expectimax, optimal, a given model).
REFERENCE_TRACK = "reference"


class BudgetExceeded(RuntimeError):
    """A step past a training budget."""


class StepBudget:
    """``limit`` steps of one training run on one track; :meth:`charge` counts, and refuses to pass the limit.

    It is also the step meter (:mod:`env2048.metering`) that the runner installs while the trainer trains: every
    env2048 environment stepped then, and every self-play move, is charged here; an ``env-only`` budget refuses
    simulated moves.  :attr:`training_seeds` keeps the seeds the training envs were reset with."""

    def __init__(self, limit: int, track: str):
        if track not in TRACKS:
            raise ValueError(f"unknown track {track!r}; the tracks are {', '.join(TRACKS)}")
        if not isinstance(limit, int | np.integer) or limit < 0:
            raise ValueError(f"a budget is a whole number of steps >= 0, got {limit!r}")
        self.limit, self.track, self.used = int(limit), track, 0
        self.training_seeds: set[int] = set()

    @property
    def remaining(self) -> int:
        return self.limit - self.used

    def charge(self, steps: int, kind: str = metering.ENV_STEP) -> None:
        """Count ``steps`` more of ``kind`` (``"env"`` steps or ``"simulated"`` moves); :class:`BudgetExceeded`
        (nothing counted) if they would pass the limit, a :class:`PermissionError` for simulated moves on the
        ``env-only`` track."""
        steps = int(steps)
        if steps < 0:
            raise ValueError(f"cannot charge {steps} steps")
        if kind == metering.SIMULATED and self.track != "known-rules":
            raise PermissionError(
                f"an {self.track} trainer cannot simulate the game (an n-tuple agent's train() plays its own games "
                "by the rules): learn from the task's envs (run.make_env, run.make_vec_env), or declare "
                "train.track = 'known-rules'"
            )
        if self.used + steps > self.limit:
            what = "environment steps" if self.track == "env-only" else "simulated moves"
            raise BudgetExceeded(
                f"the {self.track} budget of {self.limit:,} {what} is spent ({self.used:,} used); "
                f"{steps:,} more {'was' if steps == 1 else 'were'} asked for: stop training at budget.remaining == 0"
            )
        self.used += steps

    def note_seeds(self, seeds) -> None:
        """Keep the seeds a training env was reset with (see :mod:`experiments.suite.scoring`)."""
        self.training_seeds.update(seeds)


def charge_own(budget: StepBudget, steps: int, kind: str = metering.ENV_STEP) -> None:
    """Charge ``budget`` for steps that the game's envs or kernels do not charge themselves: those they charge go
    to the installed meter, so only a budget that is not the installed meter is charged here (a run made outside
    the runner, as a test or a benchmark makes one)."""
    if metering.active() is not budget:
        budget.charge(steps, kind)


class CountedEnv(gym.Wrapper):
    """A Gymnasium env whose every ``step`` is charged to a :class:`StepBudget` (before it is taken)."""

    def __init__(self, env: gym.Env, budget: StepBudget):
        super().__init__(env)
        self.budget = budget

    def step(self, action):
        charge_own(self.budget, 1)
        return self.env.step(action)

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()


def counted_vec_env(venv, budget: StepBudget):
    """An SB3 ``VecEnv`` whose every ``step`` charges ``num_envs`` steps to ``budget`` (before they are taken);
    ``env_method`` and action masks pass through (extra ``rl``)."""
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class CountedVecEnv(VecEnvWrapper):
        def reset(self):
            return self.venv.reset()

        def step_async(self, actions):
            charge_own(budget, self.num_envs)
            self.venv.step_async(actions)

        def step_wait(self):
            return self.venv.step_wait()

    counted = CountedVecEnv(venv)
    counted.budget = budget
    return counted


class CountedSimulator:
    """The game's rules for a learner of the ``known-rules`` track, on the project's own kernels, every simulated
    move charged to ``budget``.

    :meth:`step` plays a batch of moves (and spawns) for a planner; :meth:`train_ntuple` runs an n-tuple
    network's TD games, whose moves its numba kernel plays and counts: the kernel is told the moves left and
    stops there, and the moves it played are charged (the count costs the kernel one comparison per move).
    """

    def __init__(self, task, budget: StepBudget):
        if budget.track != "known-rules":
            raise ValueError(f"the simulator counts known-rules budgets, not {budget.track!r} ones")
        self.task, self.budget = task, budget
        spec = task.spec()
        self.rows, self.cols, self.p4, self.rules = spec.rows, spec.cols, spec.p4, spec.rules
        self._rng = None

    @property
    def remaining(self) -> int:
        return self.budget.remaining

    def step(self, boards: np.ndarray, actions: np.ndarray, seed: int | None = None):
        """``(next_boards uint8 (n, rows, cols), rewards int64[n], legal bool[n])`` of a plain board game: each
        board's move then a random spawn (none after an illegal move); charges ``n`` moves.  ``seed`` restarts
        the spawn generator."""
        from env2048 import board as B

        if self.task.pattern is not None:
            raise ValueError(f"{self.task.name}: step() simulates whole boards; an endgame's learner uses train_ntuple")
        boards = np.asarray(boards, np.uint8).reshape(-1, self.rows, self.cols)
        actions = np.asarray(actions, np.int64).reshape(-1)
        if actions.shape != (len(boards),) or (actions < 0).any() or (actions > 3).any():
            raise ValueError(f"one action in 0..3 per board, got {actions[:8]!r} for {len(boards)} boards")
        metering.charge(len(boards), metering.SIMULATED)
        charge_own(self.budget, len(boards), metering.SIMULATED)
        ids = B.pack(boards)
        after = ids.copy()
        rewards = np.zeros(len(ids), np.int64)
        for a in range(4):
            sel = actions == a
            if sel.any():
                after[sel], rewards[sel] = B.move(ids[sel], a, self.rows, self.cols)
        legal = after != ids
        if self._rng is None or seed is not None:
            self._rng = np.random.default_rng(seed)
        grid = B.unpack(after, self.rows, self.cols).reshape(len(ids), -1)
        empty = (grid == 0) & legal[:, None]
        count = empty.sum(axis=1)
        pick = (self._rng.random(len(ids)) * np.maximum(count, 1)).astype(np.int64)
        cell = np.argmax(np.cumsum(empty, axis=1) > pick[:, None], axis=1)
        tile = np.where(self._rng.random(len(ids)) < self.p4, 2, 1).astype(np.uint8)
        rows = np.flatnonzero(count > 0)
        grid[rows, cell[rows]] = tile[rows]
        return grid.reshape(-1, self.rows, self.cols), np.where(legal, rewards, 0), legal

    def train_ntuple(self, agent, games: int, **kwargs):
        """``agent.train(games, max_moves=remaining)``, its moves charged (by the agent, to the installed meter);
        the :class:`agents.ntuple.TrainStats`."""
        stats = agent.train(games, max_moves=self.budget.remaining, **kwargs)
        charge_own(self.budget, stats.moves, metering.SIMULATED)
        return stats
