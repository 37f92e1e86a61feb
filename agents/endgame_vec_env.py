"""Stable-Baselines3's ``VecEnv`` of endgames (:class:`env2048.endgame.Endgame2048Env`) stepped together (extra
``rl``).

SB3's ``DummyVecEnv`` steps Python envs one by one; this adapter plays every env's move in one numba kernel and
draws only the random numbers in Python, from one generator per env, in the single env's order.  So env ``i``
of ``Endgame2048SB3VecEnv(n, pattern, target)`` after ``seed(s)`` plays exactly the games that
``Endgame2048Env(pattern, target)`` plays after ``reset(seed=s + i)``, then ``reset()`` again and again, under
the same actions: the same boards, rewards, ends and masks as SB3's ``DummyVecEnv`` of those envs (with one-hot
observations, the planes of :class:`experiments.suite.envs.OneHotBoard`), several times faster.

    vec = Endgame2048SB3VecEnv(32, "L3", 256, invalid_action="terminate")
    model = MaskablePPO("MlpPolicy", vec, ...)

Semantics are SB3's: a finished game is reset in the same step; the returned observation is the new game's and
``infos[i]["terminal_observation"]`` the final board's; ``infos[i]["episode"]`` gives the finished game's reward
(``r``: 1 if won), moves (``l``) and wall time (``t``).  Rewards are the endgame's own: 1 for the move that
succeeds, 0 otherwise.
"""

from __future__ import annotations

import time

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding

from agents.vec_env import SharedSettingsVecEnv, finished_game_info
from env2048 import board as B
from env2048 import metering
from env2048.endgame import Endgame2048Env, play_many, spawn_many
from env2048.engine import onehot
from env2048.env import check_obs_mode, observation_space_for
from env2048.rules import FAILURE, ILLEGAL, PLAY, SUCCESS, legal_masks
from env2048.shape import ACTION_NAMES


class Endgame2048SB3VecEnv(SharedSettingsVecEnv):
    """``num_envs`` games of one endgame pattern as one SB3 ``VecEnv``.

    ``pattern``, ``target``, ``p4`` and ``invalid_action`` as in :class:`~env2048.endgame.Endgame2048Env` (and
    checked by it); ``obs_mode`` ``"onehot"`` (``uint8 (rows*cols + 2, rows, cols)`` per env: plane k is 1 where
    the exponent is k) or ``"exponent"`` (``uint8 (rows, cols)``).
    """

    def __init__(
        self,
        num_envs: int,
        pattern="L3",
        target: int | None = None,
        p4: float | None = None,
        invalid_action: str = "noop",
        obs_mode: str = "onehot",
    ):
        if isinstance(num_envs, bool) or not isinstance(num_envs, int | np.integer) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        self.obs_mode = check_obs_mode(obs_mode)
        # one env of the pattern checks the arguments and holds the rules, starts and free cells the games share
        self.template = Endgame2048Env(pattern, target, p4=p4, invalid_action=invalid_action)
        self.pattern = self.template.pattern
        self.rows, self.cols = self.pattern.rows, self.pattern.cols
        self.p4, self.invalid_action = self.template.p4, invalid_action
        self.render_mode = None
        self._moves_table, self._rules = self.template._tables.moves, self.template._rules
        self._free = self.template._free
        self._starts, self._start_probs = self.template._starts, self.template._start_probs
        if self.obs_mode == "onehot":
            space = observation_space_for(self.rows, self.cols, "onehot")
        else:
            space = self.template.observation_space
        self._channels = space.shape[0]
        super().__init__(num_envs, space, spaces.Discrete(4))
        n = self.num_envs
        self._generators: list[np.random.Generator | None] = [None] * n
        self._boards = np.zeros(n, np.uint64)
        self._mask = np.zeros((n, 4), bool)
        self._moves = np.zeros(n, np.int64)
        self._started = np.zeros(n)
        self._actions: np.ndarray | None = None

    # -- the VecEnv protocol ----------------------------------------------------------------------------------
    def reset(self) -> np.ndarray:
        metering.note_seeds(self._seeds)
        for i, seed in enumerate(self._seeds):
            if seed is not None or self._generators[i] is None:
                self._generators[i] = seeding.np_random(None if seed is None else int(seed))[0]
        self._reset_seeds()
        self._start_games(np.ones(self.num_envs, bool))
        self.reset_infos = [{} for _ in range(self.num_envs)]
        return self._observe()

    def step_async(self, actions: np.ndarray) -> None:
        acts = np.asarray(actions).reshape(-1)
        if acts.shape != (self.num_envs,) or not np.issubdtype(acts.dtype, np.integer):
            raise ValueError(f"actions must be {self.num_envs} ints in 0..3, got {acts.dtype} {acts.shape}")
        if acts.min() < 0 or acts.max() > 3:
            raise ValueError("actions must be 0..3 (UP, RIGHT, DOWN, LEFT)")
        self._actions = acts.astype(np.int64)

    def step_wait(self):
        if self._actions is None:
            raise RuntimeError("step_wait() without step_async()")
        actions, self._actions = self._actions, None
        metering.charge(self.num_envs)
        after, outcome, empty = play_many(
            self._boards, actions, self.rows, self.cols, self._moves_table, self._rules, self._free
        )
        stuck = ~self._mask.any(axis=1)  # a start with no allowed move: any action ends it (the rules value it 0)
        illegal = (outcome == ILLEGAL) & ~stuck
        if self.invalid_action == "raise" and illegal.any():
            i = int(np.flatnonzero(illegal)[0])
            allowed = [ACTION_NAMES[a] for a in range(4) if self._mask[i, a]]
            raise ValueError(
                f"env {i}: {ACTION_NAMES[actions[i]]} ({actions[i]}) is not allowed here; allowed moves: {allowed}"
            )
        moved = outcome != ILLEGAL
        picks = np.full(self.num_envs, -1, np.int64)
        exponents = np.zeros(self.num_envs, np.int64)
        for i in np.flatnonzero(outcome == PLAY):  # the single env's draws, in its order
            g = self._generators[i]
            picks[i] = g.integers(int(empty[i]))
            exponents[i] = 2 if g.random() < self.p4 else 1
        self._boards = spawn_many(np.where(moved, after, self._boards), picks, exponents, self._free)
        self._mask = legal_masks(self._boards, self.rows, self.cols, self._moves_table, self._rules)
        self._moves += moved
        rewards = (outcome == SUCCESS).astype(np.float32)
        done = stuck | (outcome == SUCCESS) | (outcome == FAILURE) | ((outcome == PLAY) & ~self._mask.any(axis=1))
        if self.invalid_action == "terminate":
            done |= illegal
        obs = self._observe()
        infos: list[dict] = [{} for _ in range(self.num_envs)]
        if done.any():
            now = time.perf_counter()
            for i in np.flatnonzero(done):
                infos[i] = finished_game_info(obs[i], rewards[i], self._moves[i], now - self._started[i], False)
            self._start_games(done)
            obs = self._observe()
        return obs, rewards, done, infos

    def action_masks(self) -> np.ndarray:
        """``bool[n, 4]``: the moves the pattern allows on every env's current board."""
        return self._mask.copy()

    def close(self) -> None:
        pass

    # -- internals ------------------------------------------------------------------------------------------
    def _start_games(self, which: np.ndarray) -> None:
        for i in np.flatnonzero(which):
            self._boards[i] = self._starts[self._generators[i].choice(self._starts.size, p=self._start_probs)]
        self._mask[which] = legal_masks(self._boards[which], self.rows, self.cols, self._moves_table, self._rules)
        self._moves[which] = 0
        self._started[which] = time.perf_counter()

    def _observe(self) -> np.ndarray:
        exponents = B.unpack(self._boards, self.rows, self.cols)
        if self.obs_mode == "exponent":
            return exponents
        planes = onehot(exponents.reshape(self.num_envs, -1), self._channels)
        return planes.reshape(self.num_envs, self._channels, self.rows, self.cols)
