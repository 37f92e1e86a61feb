"""The Gymnasium envs of the suite's tasks (``env2048.SUITE_IDS``): the task's game with its oracle, the table
built on first use."""

from __future__ import annotations

import gymnasium as gym

from env2048.env import Game2048Env

from .tasks import ensure_table, get_task


class GoalReward(gym.Wrapper):
    """Reward 1 for the move that makes the goal tile and 0 otherwise, so that an episode's return is 1 exactly
    when the goal is made (the game's score stays in ``info["score"]``)."""

    def step(self, action):
        obs, _, terminated, truncated, info = self.env.step(action)
        made = info["max_tile"] >= self.env.unwrapped.goal_tile
        return obs, float(made), terminated, truncated, info


def make_task_env(task: str, oracle: bool = True, progress: bool = True, **kwargs) -> gym.Env:
    """The env of suite task ``task`` (a name of ``experiments.suite.tasks.TASKS``).  With ``oracle`` (default),
    ``info`` carries the exact Q-values and regret in the task's units, from the task's table (built here on
    first use, with a progress bar unless ``progress=False``).  ``kwargs`` go to the game's env."""
    from oracle import Oracle
    from oracle.wrapper import OracleWrapper, make_endgame_env, make_solved_env

    t = get_task(task)
    table = ensure_table(t, progress) if oracle else None
    if t.pattern is not None:
        return make_endgame_env(t.pattern, t.target, oracle_table=table, **kwargs)
    rows, cols = t.shape
    if t.kind == "score":
        return make_solved_env(rows, cols, oracle=oracle, oracle_table=table, **kwargs)
    env = GoalReward(Game2048Env(rows, cols, goal_tile=1 << t.spec().target_exponent, **kwargs))
    return OracleWrapper(env, Oracle.open(table)) if oracle else env
