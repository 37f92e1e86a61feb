"""Gymnasium adapter around the engine kernels; the rules live in :mod:`env2048.grid` and :mod:`env2048.engine`."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from . import metering
from .board import check_p4
from .engine import (
    INVALID_MODES,
    INVALID_RAISE,
    INVALID_SPAWN,
    INVALID_TERMINATE,
    NO_GOAL,
    draw_key,
    onehot,
    reset_kernel,
    step_kernel,
)
from .grid import grid_age, grid_max_exponent
from .render import render_ansi, render_rgb
from .shape import ACTION_NAMES, check_shape, max_exponent
from .tables import line_tables_for

OBS_MODES = ("exponent", "onehot")


class IllegalActionError(ValueError):
    """Raised for an illegal move when ``invalid_action="raise"``."""


def check_goal_tile(goal_tile, rows: int, cols: int) -> int:
    """Validate ``goal_tile`` (a tile value such as 2048) and return its exponent, or ``NO_GOAL`` for None."""
    if goal_tile is None:
        return NO_GOAL
    top = max_exponent(rows, cols)
    value = int(goal_tile) if isinstance(goal_tile, int | np.integer) else None
    if value is None or value < 8 or value & (value - 1) or value.bit_length() - 1 > top:
        raise ValueError(
            f"goal_tile must be a power of two from 8 to {1 << top} (the largest tile a {rows}x{cols} board can "
            f"make), or None; got {goal_tile!r}"
        )
    return value.bit_length() - 1


def check_invalid_action(mode: str) -> int:
    if mode not in INVALID_MODES:
        raise ValueError(f"invalid_action must be one of {sorted(INVALID_MODES)}, got {mode!r}")
    return INVALID_MODES[mode]


def check_obs_mode(mode: str) -> str:
    if mode not in OBS_MODES:
        raise ValueError(f"obs_mode must be one of {OBS_MODES}, got {mode!r}")
    return mode


def observation_space_for(rows: int, cols: int, obs_mode: str) -> spaces.Box:
    """Observation space of one env: exponents ``uint8 (rows, cols)`` or one-hot ``uint8 (K, rows, cols)``."""
    top = max_exponent(rows, cols)
    if obs_mode == "exponent":
        return spaces.Box(0, top, (rows, cols), np.uint8)
    return spaces.Box(0, 1, (top + 1, rows, cols), np.uint8)


class Game2048Env(gym.Env):
    """2048 on an r x c board.

    ## Description
    The sliding-tile game 2048 (Cirulli, 2014) with the exact rules of the Solved2048 benchmark: tiles slide
    toward the chosen wall, two equal tiles that meet merge once per move (of three in a row the two nearest
    the wall merge), and after every legal move one tile spawns in a uniformly random empty cell: a 2 with
    probability ``1 - p4``, a 4 with ``p4``.  A move that changes nothing is illegal and spawns nothing.
    Small boards are solved exactly by this project's solver, so every move can be scored against the optimum.

    ## Action Space
    ``Discrete(4)``: 0 = UP, 1 = RIGHT, 2 = DOWN, 3 = LEFT.  ``info["action_mask"]`` and ``action_masks()``
    give the legal ones (for sb3-contrib's MaskablePPO).

    ## Observation Space
    * ``obs_mode="exponent"`` (default): ``Box(0, rows*cols+1, (rows, cols), uint8)``, each cell the tile
      exponent (0 empty, 1 for tile 2, 11 for 2048).
    * ``obs_mode="onehot"``: ``Box(0, 1, (K, rows, cols), uint8)`` with ``K = rows*cols + 2`` planes; plane k
      marks the cells holding exponent k (plane 0 the empty cells).

    ## Rewards
    The merge score of the move: the sum of the values of the tiles it creates (``[2 2 4 4] -> [4 8 . .]``
    gives 12).  Illegal moves give 0.  The return of an episode is the game's score.

    ## Starting State
    Two tiles placed one after the other by the spawn rule on the empty board, each a 4 with probability
    ``start_p4`` (default ``p4``): ``start_p4=0`` starts from two 2-tiles, the starts whose optimal value
    Kaneko & Yamashita (2025) give for the 4x3 game.

    ## Episode End
    * Termination: no legal move is left (game over); or a tile of value ``goal_tile`` is on the board; or,
      with ``invalid_action="terminate"``, an illegal move is played.
    * Truncation: none in the class.  The ids registered with ``invalid_action="noop"`` (``Game2048-v0``,
      ``Solved2048-RxC-v1``) truncate at ``max_episode_steps`` = :func:`env2048.shape.longest_game`, a bound on the
      legal moves of any game, so that an agent repeating an illegal move cannot play for ever; the v2 ids end
      the game on an illegal move instead.

    ## Information
    ``action_mask`` (bool[4]), ``score`` (total reward so far), ``max_tile`` (value), ``age`` (sum of the tile
    values), ``moves`` (legal moves played), ``illegal_moves``, and after a step ``afterstate``
    (``uint8 (rows, cols)`` exponents after the move, before the spawn).

    ## Arguments
    ``Game2048Env(rows=4, cols=4, p4=0.1, goal_tile=None, invalid_action="noop", obs_mode="exponent",
    render_mode=None, start_p4=None)``: rows and cols in [2, 8]; ``p4`` in [0, 1]; ``goal_tile`` a power of two
    >= 8 or None;
    ``invalid_action`` one of ``"noop"`` (board unchanged, reward 0, counted), ``"terminate"``, ``"raise"`` or
    ``"spawn"`` (reward 0, counted, and a tile spawns as after a legal move: the rule of "Beyond 2048");
    ``render_mode`` ``"ansi"`` (text grid) or ``"rgb_array"`` (``uint8 (H, W, 3)``); ``start_p4`` in [0, 1] or
    None (``p4``).

    ## Version History
    * v0: initial version.  ``Solved2048-RxC-v1``: the same game, with the oracle's labels in ``info``.
    * ``Solved2048-RxC-v2``: no oracle unless made with ``oracle=True``; an illegal move ends the game.
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        rows: int = 4,
        cols: int = 4,
        p4: float = 0.1,
        goal_tile: int | None = None,
        invalid_action: str = "noop",
        obs_mode: str = "exponent",
        render_mode: str | None = None,
        start_p4: float | None = None,
    ):
        self.rows, self.cols = check_shape(rows, cols)
        self.p4 = check_p4(p4)
        self.start_p4 = self.p4 if start_p4 is None else check_p4(start_p4, "start_p4")
        self.goal_tile = goal_tile
        self._goal_exponent = check_goal_tile(goal_tile, self.rows, self.cols)
        self.invalid_action = invalid_action
        self._invalid_mode = check_invalid_action(invalid_action)
        self.obs_mode = check_obs_mode(obs_mode)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.render_mode = render_mode
        self.observation_space = observation_space_for(self.rows, self.cols, self.obs_mode)
        self.action_space = spaces.Discrete(4)
        self._channels = max_exponent(self.rows, self.cols) + 1
        self._board = np.zeros((1, self.rows * self.cols), np.uint8)  # exponents: the env's whole game state
        self._lines = line_tables_for(self.rows, self.cols)
        self._key = np.zeros(1, np.uint64)  # generator state of the spawn stream, drawn from np_random when seeded
        self._mask = np.zeros(4, bool)
        self._started = False
        self._over = False
        self._score = 0
        self._moves = 0
        self._illegal = 0

    # -- API ------------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if seed is not None:
            metering.note_seeds((seed,))
        if seed is not None or not self._started:
            self._key[0] = draw_key(self.np_random)
        obs, self._mask = reset_kernel(self._board, self.rows, self.cols, self.start_p4, self._key)
        self._started, self._over = True, False
        self._score = self._moves = self._illegal = 0
        info = {
            "action_mask": self._mask.copy(),
            "score": 0,
            "max_tile": 1 << int(grid_max_exponent(self._board, 0)),
            "age": int(grid_age(self._board, 0)),
            "moves": 0,
            "illegal_moves": 0,
        }
        return self._observe(obs), info

    def step(self, action):
        if not self._started:
            raise RuntimeError("call reset() before step()")
        if self._over:
            raise RuntimeError("the episode is over (terminated); call reset() to start a new game")
        try:
            a = int(action)
        except (TypeError, ValueError):
            raise TypeError(f"action must be an int 0..3 (UP, RIGHT, DOWN, LEFT), got {action!r}") from None
        if not 0 <= a <= 3 or a != action:
            raise ValueError(f"action must be an int 0..3 (UP, RIGHT, DOWN, LEFT), got {action!r}")
        if self._invalid_mode == INVALID_RAISE and not self._mask[a]:
            legal = [ACTION_NAMES[i] for i in range(4) if self._mask[i]]
            raise IllegalActionError(f"{ACTION_NAMES[a]} ({a}) is illegal here; legal moves: {legal}")
        metering.charge(1)
        obs, after, mask, reward, legal, game_over, max_exp, age = step_kernel(
            self._board, self.rows, self.cols, a, self.p4, self._key, self._lines, self._invalid_mode == INVALID_SPAWN
        )
        self._mask = mask
        if legal:
            self._score += reward
            self._moves += 1
        else:
            self._illegal += 1
        terminated = bool(game_over or max_exp >= self._goal_exponent)
        if not legal and self._invalid_mode == INVALID_TERMINATE:
            terminated = True
        self._over = terminated
        info = {
            "action_mask": mask.copy(),
            "score": self._score,
            "max_tile": 1 << max_exp,
            "age": age,
            "moves": self._moves,
            "illegal_moves": self._illegal,
            "afterstate": after,
        }
        return self._observe(obs), float(reward), terminated, False, info

    def action_masks(self) -> np.ndarray:
        """Legal actions of the current board, ``bool[4]`` (sb3-contrib MaskablePPO protocol)."""
        return self._mask.copy()

    @property
    def board(self) -> np.ndarray:
        """Current exponents, ``uint8 (rows, cols)`` (a copy)."""
        return self._board.reshape(self.rows, self.cols).copy()

    def render(self):
        board = self._board.reshape(self.rows, self.cols)
        if self.render_mode == "ansi":
            return render_ansi(board)
        if self.render_mode == "rgb_array":
            return render_rgb(board)
        return None

    def _observe(self, obs: np.ndarray) -> np.ndarray:
        if self.obs_mode == "exponent":
            return obs
        return onehot(obs.reshape(1, -1), self._channels)[0].reshape(self._channels, self.rows, self.cols)
