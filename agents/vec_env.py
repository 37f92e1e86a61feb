"""Stable-Baselines3's ``VecEnv`` over the native :class:`~env2048.vector.Game2048VectorEnv` (extra ``rl``).

SB3 steps a ``DummyVecEnv`` of Python envs one by one; this adapter steps all games in one numba kernel and gives
MaskablePPO the action masks of every env at once (``env_method("action_masks")``).

    vec = Game2048SB3VecEnv(8, 3, 3, obs_mode="onehot", reward="log")
    model = MaskablePPO("MlpPolicy", vec, ...)

Semantics are SB3's: a finished game is reset in the same step; the returned observation is the new game's and
``infos[i]["terminal_observation"]`` the final board's; ``infos[i]["episode"]`` gives the finished game's score
(``r``, the game score whatever the reward transform), moves (``l``) and wall time (``t``), as SB3's Monitor
does.  With ``seed(s)`` (or ``reset(seed=s)`` of the native env) env ``i`` plays the games that
``Game2048Env`` plays after ``reset(seed=s + i)``, then ``reset()`` again and again.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from stable_baselines3.common.vec_env import VecEnv

from env2048.vector import Game2048VectorEnv

#: Training rewards: the game's merge reward as is, log2(1 + reward) (which tames the late, large merges), or 1
#: for the move that makes the goal tile and 0 otherwise (``goal_tile`` needed).
REWARDS = ("score", "log", "goal")


def transform_reward(reward: np.ndarray, mode: str) -> np.ndarray:
    """``float32[n]`` training rewards from the game's merge rewards (``float64[n]``); the ``goal`` reward is not
    a transform of the merge reward and is computed by the adapter."""
    if mode == "score":
        return reward.astype(np.float32)
    if mode == "log":
        return np.log2(1.0 + reward).astype(np.float32)
    raise ValueError(f"reward must be one of {REWARDS}, got {mode!r}")


def finished_game_info(observation: np.ndarray, score: float, moves: int, seconds: float, truncated: bool) -> dict:
    """A finished game's ``info`` in SB3's form: its last observation, and ``episode`` as SB3's Monitor gives it
    (score ``r``, moves ``l``, wall time ``t``)."""
    return {
        "terminal_observation": observation.copy(),
        "episode": {"r": float(score), "l": int(moves), "t": round(float(seconds), 6)},
        "TimeLimit.truncated": bool(truncated),
    }


class SharedSettingsVecEnv(VecEnv):
    """The per-env half of SB3's ``VecEnv`` protocol for adapters whose games share one set of settings and step
    in one kernel: ``get_attr`` answers the adapter's attribute for every env, ``env_method`` answers only
    ``action_masks`` (what MaskablePPO asks), from the subclass's ``action_masks()`` (``bool[n, 4]``)."""

    def action_masks(self) -> np.ndarray:
        raise NotImplementedError

    def _indices(self, indices) -> list[int]:
        if indices is None:
            return list(range(self.num_envs))
        if isinstance(indices, int | np.integer):
            return [int(indices)]
        return [int(i) for i in indices]

    def get_attr(self, attr_name: str, indices=None) -> list[Any]:
        """The attribute is the adapter's (``action_masks``, ``render_mode``, ``rows``, ...), the same for every env."""
        value = getattr(self, attr_name)
        return [value for _ in self._indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices=None) -> None:
        raise AttributeError(f"the games of a {type(self).__name__} share their settings; cannot set {attr_name!r}")

    def env_method(self, method_name: str, *method_args, indices=None, **method_kwargs) -> list[Any]:
        """Only ``action_masks`` has a per-env answer (one ``bool[4]`` per env); other methods are refused."""
        if method_name != "action_masks":
            raise AttributeError(f"{type(self).__name__} has no per-env method {method_name!r} (only 'action_masks')")
        masks = self.action_masks()
        return [masks[i] for i in self._indices(indices)]

    def env_is_wrapped(self, wrapper_class, indices=None) -> list[bool]:
        return [False for _ in self._indices(indices)]

    def get_images(self):
        raise NotImplementedError(f"{type(self).__name__} does not render")


class Game2048SB3VecEnv(SharedSettingsVecEnv):
    """``num_envs`` games of 2048 on a ``rows`` x ``cols`` board as one SB3 ``VecEnv``.

    ``obs_mode`` ``"onehot"`` (``uint8 (channels, rows, cols)`` per env) or ``"exponent"``; ``reward`` one of
    :data:`REWARDS`; ``p4``, ``goal_tile``, ``invalid_action`` and ``start_p4`` as in
    :class:`~env2048.env.Game2048Env`.
    """

    def __init__(
        self,
        num_envs: int,
        rows: int = 3,
        cols: int = 3,
        p4: float = 0.1,
        goal_tile: int | None = None,
        obs_mode: str = "onehot",
        reward: str = "score",
        invalid_action: str = "noop",
        start_p4: float | None = None,
    ):
        if reward not in REWARDS:
            raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
        if reward == "goal" and goal_tile is None:
            raise ValueError("reward='goal' needs a goal_tile (the tile whose making earns 1)")
        self.game = Game2048VectorEnv(
            num_envs,
            rows,
            cols,
            p4=p4,
            goal_tile=goal_tile,
            invalid_action=invalid_action,
            obs_mode=obs_mode,
            start_p4=start_p4,
        )
        self.rows, self.cols, self.reward_mode, self.goal_tile = rows, cols, reward, goal_tile
        self.render_mode = None
        super().__init__(num_envs, self.game.single_observation_space, self.game.single_action_space)
        self._actions: np.ndarray | None = None
        self._started = np.zeros(num_envs)

    # -- the VecEnv protocol ----------------------------------------------------------------------------------
    def reset(self) -> np.ndarray:
        seeds = None if self._seeds[0] is None else [int(s) for s in self._seeds]
        obs, _ = self.game.reset(seed=seeds)
        self._reset_seeds()
        self._started[:] = time.perf_counter()
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions).reshape(self.num_envs).astype(np.int64)

    def step_wait(self):
        if self._actions is None:
            raise RuntimeError("step_wait() without step_async()")
        obs, reward, terminated, truncated, info = self.game.step(self._actions)
        self._actions = None
        if self.reward_mode == "goal":  # the goal ends the game, so only a finishing move can make it
            reward = (terminated & (info["max_tile"] >= self.goal_tile)).astype(np.float32)
        else:
            reward = transform_reward(reward, self.reward_mode)
        done = terminated | truncated
        infos: list[dict[str, Any]] = [{} for _ in range(self.num_envs)]
        if done.any():
            now = time.perf_counter()
            for i in np.flatnonzero(done):
                infos[i] = finished_game_info(
                    obs[i],
                    info["score"][i],
                    info["moves"][i],
                    now - self._started[i],
                    truncated[i] and not terminated[i],
                )
                self._started[i] = now
            obs, _ = self.game.reset_done(done)
        return obs, reward, done, infos

    def action_masks(self) -> np.ndarray:
        """``bool[n, 4]``: the legal moves of every env's current board."""
        return self.game.action_masks()

    def close(self) -> None:
        self.game.close()

    def get_images(self):
        raise NotImplementedError("Game2048SB3VecEnv does not render; use Game2048VectorEnv(render_mode=...)")
