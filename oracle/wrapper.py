"""``OracleWrapper``: the oracle's view of every step in ``info``; and the factories behind ``Solved2048-*`` ids.

``gym.make("Solved2048-3x3", oracle=True)`` (and ``-2x2``, ``-2x3``, ``-2x4``) builds the exact table into the
cache directory on first use (about 20 s and 116 MB for 3x3) and wraps the env; the v2 ids give the plain env
without ``oracle=True``, the v1 ids unless made with ``oracle=False``.  ``"Solved2048-4x3"`` is wrapped only when
given ``oracle_table=PATH`` (its table does not build here).  The registration in ``env2048``
names this factory by string, so ``env2048`` never imports the oracle.
"""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np

from env2048.env import Game2048Env
from solver.format.common import TableError
from solver.provision import BUILDABLE, TOO_BIG
from solver.seal import check_unsealed

from .oracle import Oracle, open_oracle

_ORACLES: dict[tuple, Oracle] = {}


class OracleWrapper(gym.Wrapper):
    """Adds to ``info``: ``q_values`` (float64[4], NaN for illegal moves) and ``optimal_actions`` (bool[4]) of the
    current board, and after a step ``regret``: max Q − Q(action) of the action just taken (for an illegal one, NaN
    where it changes nothing, max Q where it ends the game: ``invalid_action="terminate"``).

    The wrapped env must play the table's game (same shape and p4).  Values are those of the table's objective.
    """

    def __init__(self, env: gym.Env, oracle: Oracle):
        super().__init__(env)
        base = env.unwrapped
        if (base.rows, base.cols) != (oracle.rows, oracle.cols) or float(base.p4) != oracle.spec.p4:
            raise ValueError(
                f"the env plays {base.rows}x{base.cols} with p4={base.p4}, the oracle's table is "
                f"{oracle.spec.describe()}"
            )
        if oracle.spec.spawn != "random":
            raise ValueError(f"the env spawns at random; this table's spawn model is {oracle.spec.spawn!r}")
        self.oracle = oracle
        self._q = np.full(4, np.nan)

    def _annotate(self, info: dict) -> dict:
        self._q = self.oracle.q_values(self.env.unwrapped.board)
        info["q_values"] = self._q.copy()
        info["optimal_actions"] = self.oracle.optimal_mask(self._q)
        return info

    def reset(self, **kwargs):
        obs, info = self.env.reset(**kwargs)
        return obs, self._annotate(info)

    def step(self, action):
        q = self._q
        q_action = q[int(action)]
        if np.isnan(q_action) and getattr(self.env.unwrapped, "invalid_action", None) == "terminate":
            q_action = 0.0  # an illegal move ends the game: nothing more to gain
        regret = float(np.nanmax(q) - q_action) if not np.isnan(q_action) else float("nan")
        obs, reward, terminated, truncated, info = self.env.step(action)
        info = self._annotate(info)
        info["regret"] = regret
        return obs, reward, terminated, truncated, info

    def action_masks(self) -> np.ndarray:
        return self.env.unwrapped.action_masks()


def shared_oracle(board: str, p4: float = 0.1, table=None, objective: str = "score") -> Oracle:
    """One oracle per (board, p4, table, objective) per process (its open layers are shared).  A ``table`` given
    by path, by the URL of an oracle server, or as an open :class:`Oracle` (local or remote), may solve any
    objective (the score, or a capped ``tile:K`` game) of this board's game: same shape, same p4, random
    spawns."""
    if isinstance(table, Oracle):
        return _check_game(table, board, p4, table.path, close=False)
    check_unsealed(f"the shared oracle of {board}")  # one opened before the seal is as sealed as a new one
    key = (board, float(p4), None if table is None else str(table), objective)
    if key not in _ORACLES:
        if table is None:
            _ORACLES[key] = Oracle.for_board(board, objective, p4)
        else:
            opened = open_oracle(table)  # a served table's path is its URL without credentials
            _ORACLES[key] = _check_game(opened, board, p4, opened.path, close=True)
    return _ORACLES[key]


def _check_game(oracle: Oracle, board: str, p4: float, table, close: bool) -> Oracle:
    spec = oracle.spec
    if spec.board != board or spec.p4 != float(p4) or spec.spawn != "random":
        if close:
            oracle.close()
        raise TableError(
            f"{table} solves {spec.describe()}, not the game of this env ({board}, random spawns, p4={float(p4):g})"
        )
    return oracle


_WARNED_NO_TABLE: set[tuple[int, int]] = set()


def make_solved_env(rows: int, cols: int, oracle: bool = True, oracle_table=None, **kwargs) -> gym.Env:
    """Entry point of the ``Solved2048-*`` ids: a :class:`Game2048Env`, wrapped in :class:`OracleWrapper` when
    ``oracle`` and the table exists or builds here (or ``oracle_table`` gives its path, an oracle server's URL or an
    open :class:`Oracle`).  A board whose table does not build here (4x3) without ``oracle_table`` gives the bare
    env, with a warning (once per process) saying how to get the table and what it costs."""
    env = Game2048Env(rows, cols, **kwargs)
    if not oracle:
        return env
    if oracle_table is None and (rows, cols) not in BUILDABLE:
        if (rows, cols) not in _WARNED_NO_TABLE:
            _WARNED_NO_TABLE.add((rows, cols))
            cost = TOO_BIG.get((rows, cols), f"{rows}x{cols} is too large to solve here")
            warnings.warn(
                f"Solved2048-{rows}x{cols} has no optimal-value table here, so this env carries no oracle "
                f"(info has no q_values or regret). {cost}. Build it with `python -m solver build --board "
                f"{rows}x{cols} --backend ray --address HEAD --out DIR` on a cluster (or obtain a built one) and pass "
                f"gym.make('Solved2048-{rows}x{cols}', oracle_table=DIR); oracle=False silences this.",
                UserWarning,
                stacklevel=2,
            )
        return env
    return OracleWrapper(env, shared_oracle(f"{rows}x{cols}", env.p4, oracle_table))


def make_learner_env(rows: int, cols: int, oracle: bool = False, oracle_table=None, **kwargs) -> gym.Env:
    """Entry point of the ``Solved2048-RxC-v2`` ids: the plain :class:`Game2048Env`, with nothing of the optimum
    in ``info``; the oracle's labels (:class:`OracleWrapper`) only when asked, with ``oracle=True`` or an
    ``oracle_table``."""
    return make_solved_env(rows, cols, oracle=oracle or oracle_table is not None, oracle_table=oracle_table, **kwargs)


def make_endgame_env(pattern="L3", target: int | None = None, oracle_table=None, **kwargs):
    """The ``Endgame2048-*`` ids' factory: :class:`env2048.endgame.Endgame2048Env` with the oracle of
    ``oracle_table`` (a table of the same pattern: a path opened here, an oracle server's URL, or an open
    :class:`Oracle`) when one is given."""
    from env2048.endgame import Endgame2048Env

    oracle = open_oracle(oracle_table) if oracle_table is not None else None
    try:
        return Endgame2048Env(pattern, target, oracle=oracle, **kwargs)
    except Exception:
        if oracle is not None and oracle is not oracle_table:
            oracle.close()
        raise
