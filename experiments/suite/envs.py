"""The Gymnasium envs of the suite's tasks (``env2048.SUITE_IDS``): the task's game, with its oracle only when
asked in suite v2 (always by default in v1), the table built on first use."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from env2048.engine import onehot
from env2048.env import Game2048Env, observation_space_for

from .tasks import SUITE_VERSION, Task, ensure_table, get_task


class GoalReward(gym.Wrapper):
    """Reward 1 for the move that makes the goal tile and 0 otherwise, so that an episode's return is 1 exactly
    when the goal is made (the game's score stays in ``info["score"]``)."""

    def step(self, action):
        obs, _, terminated, truncated, info = self.env.step(action)
        made = info["max_tile"] >= self.env.unwrapped.goal_tile
        return obs, float(made), terminated, truncated, info


def _task(task: str | Task, version: int) -> Task:
    return task if isinstance(task, Task) else get_task(task, version)


def make_task_env(
    task: str | Task, oracle: bool | None = None, progress: bool = True, version: int = SUITE_VERSION, **kwargs
) -> gym.Env:
    """The env of suite task ``task`` (a :class:`Task`, or a task's name in suite ``version``).  With ``oracle``
    (default: False in suite v2, True in v1), ``info`` carries the exact Q-values and regret in the task's units,
    from the task's table (built here on first use, with a progress bar unless ``progress=False``).  In v2 an
    illegal move ends the game (``invalid_action="terminate"``) unless ``kwargs`` say otherwise; ``kwargs`` go to
    the game's env."""
    from oracle import Oracle
    from oracle.wrapper import OracleWrapper, make_endgame_env, make_solved_env

    t = _task(task, version)
    if oracle is None:
        oracle = t.version == 1
    kwargs.setdefault("invalid_action", t.invalid_action)
    table = ensure_table(t, progress) if oracle else None
    kwargs = t.env_kwargs | kwargs
    if t.pattern is not None:
        return make_endgame_env(t.pattern, t.target, oracle_table=table, **kwargs)
    rows, cols = t.shape
    if t.kind == "score":
        return make_solved_env(rows, cols, oracle=oracle, oracle_table=table, **kwargs)
    env = GoalReward(Game2048Env(rows, cols, goal_tile=1 << t.spec().target_exponent, **kwargs))
    return OracleWrapper(env, Oracle.open(table)) if oracle else env


class OneHotBoard(gym.ObservationWrapper):
    """The exponent board ``uint8 (rows, cols)`` as one-hot planes ``uint8 (rows*cols + 2, rows, cols)``, the
    encoding of ``Game2048Env(obs_mode="onehot")`` (so that ``oracle.sb3_policy.SB3Policy`` reads it from a model)."""

    def __init__(self, env: gym.Env):
        super().__init__(env)
        self.observation_space = observation_space_for(*env.observation_space.shape, "onehot")
        self.channels = self.observation_space.shape[0]

    def observation(self, observation):
        planes = onehot(np.asarray(observation, np.uint8).reshape(1, -1), self.channels)
        return planes.reshape(self.observation_space.shape)


def make_task_vec_env(task: str | Task, n_envs: int, seed: int, reward: str, version: int = SUITE_VERSION):
    """``n_envs`` games of suite task ``task`` (a :class:`Task` or a name in suite ``version``) as a
    Stable-Baselines3 ``VecEnv`` with one-hot observations and action masks, without the oracle (extra ``rl``).
    In v2 an illegal move ends the game, as in the task's env.  ``reward``: ``"score"`` (the merge reward; score
    tasks only) or ``"goal"`` (1 for the move that makes the goal, the task's own reward).  Board tasks step in the
    native vector env (:class:`agents.vec_env.Game2048SB3VecEnv`), endgames in
    :class:`agents.endgame_vec_env.Endgame2048SB3VecEnv` (the games of SB3's ``DummyVecEnv`` of
    :class:`env2048.endgame.Endgame2048Env`, move for move).  Env ``i`` is seeded with ``seed + i``."""
    from agents.endgame_vec_env import Endgame2048SB3VecEnv
    from agents.vec_env import Game2048SB3VecEnv

    t = _task(task, version)
    if reward not in ("score", "goal"):
        raise ValueError(f"reward must be 'score' or 'goal', got {reward!r}")
    if reward == "score" and t.kind != "score":
        raise ValueError(f"task {t.name} is scored on success, not on the game's score: use reward 'goal'")
    if t.pattern is not None:
        vec = Endgame2048SB3VecEnv(n_envs, t.pattern, t.target, invalid_action=t.invalid_action)
    else:
        rows, cols = t.shape
        goal = None if t.kind == "score" else 1 << t.spec().target_exponent
        vec = Game2048SB3VecEnv(
            n_envs,
            rows,
            cols,
            goal_tile=goal,
            obs_mode="onehot",
            reward=reward,
            invalid_action=t.invalid_action,
            **t.env_kwargs,
        )
    vec.seed(seed)
    return vec


def make_task_jax_games(task: str | Task, n_envs: int, version: int = SUITE_VERSION):
    """``n_envs`` games of suite task ``task`` in JAX (:func:`env2048.jax.counted.make_counted`): the task's board
    or endgame, its target, its reward (the merge score on score tasks, 1 for a success otherwise), an illegal
    move ending the game (v2's rule; the JAX game has no other)."""
    from env2048.jax.counted import make_counted

    t = _task(task, version)
    if t.invalid_action != "terminate":
        raise ValueError(
            f"task {t.name} (suite v{t.version}) lets an illegal move {t.invalid_action!r}; the JAX game ends the game "
            "on one, as suite v2's tasks do"
        )
    rows, cols = t.shape
    p4 = t.spec().p4
    if t.pattern is not None:
        return make_counted(rows, cols, n_envs, target=t.target, pattern=t.pattern, p4=p4)
    target = None if t.kind == "score" else 1 << t.spec().target_exponent
    return make_counted(rows, cols, n_envs, target=target, p4=p4, start_p4=t.start_p4)
