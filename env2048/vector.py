"""Native batched 2048: every env's step in one parallel numba kernel."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from . import metering
from .board import check_p4
from .engine import (
    INVALID_RAISE,
    PARALLEL_MIN_ENVS,
    draw_key,
    onehot,
    vector_reset_parallel,
    vector_reset_serial,
    vector_step_parallel,
    vector_step_serial,
)
from .env import (
    IllegalActionError,
    check_goal_tile,
    check_invalid_action,
    check_obs_mode,
    observation_space_for,
)
from .render import render_ansi, render_rgb
from .shape import ACTION_NAMES, check_shape, max_exponent
from .tables import line_tables_for


class Game2048VectorEnv(VectorEnv):
    """``num_envs`` independent games of 2048 stepped together (same rules and arguments as ``Game2048Env``).

    * Autoreset mode ``NEXT_STEP``: the step after an env terminates resets it (its action is ignored,
      reward 0, ``info["_afterstate"]`` False for it).
    * Seeds: ``reset(seed=s)`` seeds env i with ``s + i`` (or pass a list of per-env seeds); env i then plays
      exactly the game that ``Game2048Env`` plays after ``reset(seed=s + i)`` with the same actions.
    * ``info``: the single-env keys as arrays over envs: ``action_mask bool[n, 4]``, ``score int64[n]``,
      ``max_tile int64[n]``, ``age int64[n]``, ``moves int64[n]``, ``illegal_moves int64[n]``,
      ``afterstate uint8[n, rows, cols]`` with its validity mask ``_afterstate bool[n]``.
    * ``max_episode_steps`` (what ``gym.make_vec`` passes from a registered id's time limit): an env whose game
      reaches that many steps (illegal ones included) is truncated, and reset on its next step.
    * ``render_mode`` ``"ansi"`` or ``"rgb_array"`` renders every board (a list).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4, "autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
        rows: int = 4,
        cols: int = 4,
        p4: float = 0.1,
        goal_tile: int | None = None,
        invalid_action: str = "noop",
        obs_mode: str = "exponent",
        render_mode: str | None = None,
        max_episode_steps: int | None = None,
        start_p4: float | None = None,
    ):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int | np.integer) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        if max_episode_steps is not None and (isinstance(max_episode_steps, bool) or int(max_episode_steps) < 1):
            raise ValueError(f"max_episode_steps must be a positive int or None, got {max_episode_steps!r}")
        self.max_episode_steps = None if max_episode_steps is None else int(max_episode_steps)
        self.num_envs = int(num_envs)
        self.rows, self.cols = check_shape(rows, cols)
        self.p4 = check_p4(p4)
        self.start_p4 = self.p4 if start_p4 is None else check_p4(start_p4, "start_p4")
        self._goal_exponent = check_goal_tile(goal_tile, self.rows, self.cols)
        self._invalid_mode = check_invalid_action(invalid_action)
        self.obs_mode = check_obs_mode(obs_mode)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.render_mode = render_mode
        self.single_observation_space = observation_space_for(self.rows, self.cols, self.obs_mode)
        self.single_action_space = spaces.Discrete(4)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._channels = max_exponent(self.rows, self.cols) + 1

        n, cells = self.num_envs, self.rows * self.cols
        self._boards = np.zeros((n, cells), np.uint8)
        self._lines = line_tables_for(self.rows, self.cols)
        self._keys = np.zeros(n, np.uint64)  # per-env spawn-stream state, drawn from each env's generator
        self._seeded = False
        self._needs_reset = np.ones(n, bool)
        self._score = np.zeros(n, np.int64)
        self._moves = np.zeros(n, np.int64)
        self._illegal = np.zeros(n, np.int64)
        self._steps = np.zeros(n, np.int64)  # steps of each env's current game, illegal ones included
        self._mask = np.zeros((n, 4), bool)
        self._started = False
        parallel = self.num_envs >= PARALLEL_MIN_ENVS
        self._step_kernel = vector_step_parallel if parallel else vector_step_serial
        self._reset_kernel = vector_reset_parallel if parallel else vector_reset_serial

    # -- randomness -----------------------------------------------------------------------------------------
    def _seed(self, seed) -> None:
        if seed is None:
            seeds = [None] * self.num_envs
        elif isinstance(seed, int | np.integer):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"got {len(seeds)} seeds for {self.num_envs} envs")
        metering.note_seeds(seeds)
        self._keys[:] = [draw_key(seeding.np_random(s)[0]) for s in seeds]
        self._seeded = True

    # -- API ------------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | list[int] | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed if isinstance(seed, int | np.integer) else None)
        if seed is not None or not self._seeded:
            self._seed(seed)
        obs, info = self._reset_where(np.ones(self.num_envs, bool))
        self._started = True
        return obs, info

    def reset_done(self, which) -> tuple[np.ndarray, dict]:
        """Start a new game in the envs where ``which`` (``bool[n]``) is set, now, instead of on their next step
        (each env's spawn stream continues, as ``Game2048Env.reset()`` without a seed).  Returns the observation
        and info of every env, the others unchanged; for same-step autoreset adapters (e.g. SB3's VecEnv)."""
        if not self._started:
            raise RuntimeError("call reset() before reset_done()")
        which = np.asarray(which, bool)
        if which.shape != (self.num_envs,):
            raise ValueError(f"which must be a bool array of shape ({self.num_envs},), got {which.shape}")
        return self._reset_where(which)

    def _reset_where(self, which: np.ndarray) -> tuple[np.ndarray, dict]:
        # the envs left alone keep their current board, mask, largest tile and age; the kernel fills the others
        obs = self._boards.copy()
        mask = self._mask.copy()
        max_exp = self._boards.max(axis=1).astype(np.int64)
        age = np.where(self._boards > 0, np.left_shift(1, self._boards.astype(np.int64)), 0).sum(axis=1)
        self._reset_kernel(
            self._boards,
            self.rows,
            self.cols,
            self.start_p4,
            self._keys,
            self._score,
            self._moves,
            self._illegal,
            obs,
            mask,
            self._needs_reset,
            max_exp,
            age,
            which,
        )
        self._mask = mask
        self._steps[which] = 0
        return self._observe(obs), self._info(mask, max_exp, age)

    def step(self, actions):
        if not self._started:
            raise RuntimeError("call reset() before step()")
        acts = np.asarray(actions)
        if acts.shape != (self.num_envs,) or not np.issubdtype(acts.dtype, np.integer):
            raise ValueError(f"actions must be an int array of shape ({self.num_envs},), got {acts.dtype} {acts.shape}")
        if acts.min() < 0 or acts.max() > 3:
            raise ValueError("actions must be 0..3 (UP, RIGHT, DOWN, LEFT)")
        acts = acts.astype(np.int64, copy=False)
        if self._invalid_mode == INVALID_RAISE:
            bad = ~self._mask[np.arange(self.num_envs), acts] & ~self._needs_reset
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise IllegalActionError(f"env {i}: {ACTION_NAMES[acts[i]]} ({acts[i]}) is illegal there")
        n, cells = self.num_envs, self.rows * self.cols
        metering.charge(n)
        starting = self._needs_reset.copy()  # these envs start a new game in this step (their action is ignored)
        obs = np.empty((n, cells), np.uint8)
        after = np.empty((n, cells), np.uint8)
        mask = np.empty((n, 4), bool)
        reward = np.empty(n, np.float64)
        terminated = np.empty(n, bool)
        after_valid = np.empty(n, bool)
        max_exp = np.empty(n, np.int64)
        age = np.empty(n, np.int64)
        self._step_kernel(
            self._boards,
            acts,
            self.rows,
            self.cols,
            self.p4,
            self.start_p4,
            self._keys,
            self._goal_exponent,
            self._invalid_mode,
            self._needs_reset,
            self._score,
            self._moves,
            self._illegal,
            obs,
            after,
            mask,
            reward,
            terminated,
            after_valid,
            max_exp,
            age,
            self._lines,
        )
        self._mask = mask
        self._steps = np.where(starting, 0, self._steps + 1)
        truncated = np.zeros(n, bool)
        if self.max_episode_steps is not None:
            truncated = (self._steps >= self.max_episode_steps) & ~terminated & ~starting
            self._needs_reset |= truncated
        info = self._info(mask, max_exp, age)
        info["afterstate"] = after.reshape(n, self.rows, self.cols)
        info["_afterstate"] = after_valid
        return self._observe(obs), reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        """Legal actions of every env, ``bool[n, 4]``."""
        return self._mask.copy()

    def render(self):
        boards = self._boards.reshape(self.num_envs, self.rows, self.cols)
        if self.render_mode == "ansi":
            return [render_ansi(b) for b in boards]
        if self.render_mode == "rgb_array":
            return [render_rgb(b) for b in boards]
        return None

    def _info(self, mask, max_exp, age) -> dict[str, np.ndarray]:
        return {
            "action_mask": mask.copy(),
            "score": self._score.copy(),
            "max_tile": np.left_shift(1, max_exp),
            "age": age,
            "moves": self._moves.copy(),
            "illegal_moves": self._illegal.copy(),
        }

    def _observe(self, obs: np.ndarray) -> np.ndarray:
        n = self.num_envs
        if self.obs_mode == "exponent":
            return obs.reshape(n, self.rows, self.cols)
        return onehot(obs, self._channels).reshape(n, self._channels, self.rows, self.cols)
