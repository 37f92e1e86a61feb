"""``Oracle``: optimal values, Q-values and per-move regret of any board, from a solver table held in memory.

Boards are given as exponent grids (``(rows, cols)`` or a batch ``(n, rows, cols)``, any integer dtype) or as
packed IDs (a Python int / ``np.uint64``, or a ``uint64[n]`` array).  Any board, canonical or not: it is
canonicalised before the lookup and actions refer to the board as given.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from env2048 import board as B
from env2048.shape import ACTION_NAMES, MAX_PACKED_EXPONENT
from env2048.tables import board_tables
from solver.build import build
from solver.kernels import TIE_TOLERANCE, hash_index
from solver.spec import SolveSpec
from solver.store import Table, TableError

from .lookup import AFTERSTATE_MISSING, NOT_IN_TABLE, afterstate_values_batch, q_values_batch

#: Boards whose tables build here in about a minute or less: ``for_board`` builds them on first use.
BUILDABLE = {(2, 2), (2, 3), (3, 2), (2, 4), (4, 2), (3, 3)}
#: What solving the boards that do not build here would cost (from seed 000 and this solver's measured rate).
TOO_BIG = {
    (4, 3): "4x3 has 1.15e12 states and 7.4e11 afterstates: about 31 TB in this table format and, at this "
    "solver's ~4.7 M states per core-second, ~110 core-hours (Kaneko & Yamashita needed 65 h on 16 cores and "
    "1.4 TiB with compressed storage)",
}


def optimal_mask(q: np.ndarray) -> np.ndarray:
    """``bool[..., 4]``: the actions whose Q-value is within ``TIE_TOLERANCE`` (relative) of the best legal one;
    ``q``: ``float64[..., 4]`` with NaN for illegal moves (all False where no move is legal)."""
    legal = ~np.isnan(q)
    top = np.where(legal, q, -np.inf).max(axis=-1, keepdims=True)
    return legal & (q >= top - TIE_TOLERANCE * np.maximum(1.0, np.abs(top)))


class BoardNotInTable(KeyError):
    """The board is not a reachable state (or afterstate) of the table."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def cache_dir() -> Path:
    """Where ``for_board`` keeps tables: ``$SOLVED2048_HOME`` or ``~/.cache/solved2048``."""
    return Path(os.environ.get("SOLVED2048_HOME") or Path.home() / ".cache" / "solved2048")


def table_name(spec: SolveSpec) -> str:
    objective = spec.objective.replace(":", "")
    return f"{spec.board}-{objective}-p4_{spec.p4:g}-{spec.spawn}.h5"


def cached_table(spec: SolveSpec, progress: bool = True) -> Path:
    """Path of ``spec``'s table in :func:`cache_dir`, solving it there first if missing (boards of
    :data:`BUILDABLE` only; others raise ``FileNotFoundError`` saying how to build them elsewhere)."""
    path = cache_dir() / table_name(spec)
    if not path.exists():
        shape = (spec.rows, spec.cols)
        if shape not in BUILDABLE:
            cost = TOO_BIG.get(shape, f"{spec.board} is too large to solve here")
            raise FileNotFoundError(
                f"no table for {spec.describe()} in {cache_dir()}; {cost}. Build it on a big machine with "
                f"`python -m solver build --board {spec.board} --objective {spec.objective} --p4 {spec.p4:g} "
                f"--spawn {spec.spawn} --out FILE` and pass table=FILE"
            )
        if progress:
            tqdm.write(f"solving {spec.describe()} once into {path} ...")
        build(spec, path, progress=progress)
    return path


class Oracle:
    """Exact optimal play of one solved table (see the module docstring for board formats).

    Memory: hash tables of 8 bytes per slot for the states and 16 for the afterstates, at most half full (about
    2.1 GB for 3x3); loading the 3x3 table takes a few seconds.
    """

    def __init__(self, table: Table):
        self.path = table.path
        self.spec = table.spec
        self.rows, self.cols = self.spec.rows, self.spec.cols
        self.attrs = table.attrs
        self._T = board_tables(self.rows, self.cols)
        counts = table.counts()
        state_ids = np.empty(sum(c.states for c in counts), np.uint64)
        after_ids = np.empty(sum(c.afterstates for c in counts), np.uint64)
        after_vals = np.empty(after_ids.size, np.float64)
        s0 = a0 = 0
        for c in counts:
            layer = table.layer(c.age, names=("states", "afterstates", "afterstate_values"))
            state_ids[s0 : s0 + c.states] = layer["states"]
            after_ids[a0 : a0 + c.afterstates] = layer["afterstates"]
            after_vals[a0 : a0 + c.afterstates] = layer["afterstate_values"]
            s0, a0 = s0 + c.states, a0 + c.afterstates
        self.n_states, self.n_afterstates = state_ids.size, after_ids.size
        self._state_index = hash_index(state_ids, np.empty(0))
        del state_ids
        self._after_index = hash_index(after_ids, after_vals)
        ids, probs, values = table.start()
        self.start_ids, self.start_probs, self.start_values = ids, probs, values
        self.start_value = float(table.attrs["start_value"])

    # -- construction -----------------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike, verify: bool = False) -> Oracle:
        """Load a table written by ``python -m solver build``; ``verify`` also checks every dataset's SHA-256."""
        with Table(path) as table:
            if verify:
                bad = table.bad_checksums()
                if bad:
                    raise TableError(f"{path}: checksum mismatch in {', '.join(bad[:5])} (the file is damaged)")
            return cls(table)

    @classmethod
    def for_board(
        cls, board: str = "3x3", objective: str = "score", p4: float = 0.1, spawn: str = "random",
        table: str | os.PathLike | None = None, progress: bool = True,
    ) -> Oracle:  # fmt: skip
        """The oracle of a board: from ``table`` if given, else from the cache directory, building the table there
        on first use for the boards of :data:`BUILDABLE` (with a progress bar)."""
        spec = SolveSpec.parse(board, objective, p4, spawn)
        if table is not None:
            oracle = cls.open(table)
            if oracle.spec != spec:
                raise TableError(f"{table} solves {oracle.spec.describe()}, not {spec.describe()}")
            return oracle
        return cls.open(cached_table(spec, progress))

    # -- input handling ---------------------------------------------------------------------------------------
    def _packed(self, board) -> tuple[np.ndarray, bool]:
        """``(uint64[n] IDs, is_batch)`` from any accepted board format, with clear errors."""
        if isinstance(board, int | np.integer) and not isinstance(board, bool):
            value = int(board)
            if value < 0 or value >= 1 << (4 * self.rows * self.cols):
                raise ValueError(f"packed ID {value:#x} does not fit a {self.rows}x{self.cols} board")
            return np.array([value], np.uint64), False
        arr = np.asarray(board)
        if arr.dtype == np.uint64 and arr.ndim == 1:
            if arr.size and self.rows * self.cols < 16 and (arr >> np.uint64(4 * self.rows * self.cols)).any():
                raise ValueError(f"some packed IDs do not fit a {self.rows}x{self.cols} board")
            return arr, True
        if arr.ndim not in (2, 3) or arr.shape[-2:] != (self.rows, self.cols):
            raise ValueError(
                f"expected a {self.rows}x{self.cols} exponent board (rows, cols), a batch (n, {self.rows}, "
                f"{self.cols}) or packed uint64 IDs; got an array of shape {arr.shape}"
            )
        if not np.issubdtype(arr.dtype, np.integer):
            raise TypeError(f"board exponents must be integers, got dtype {arr.dtype}")
        if arr.size and (arr.min() < 0 or arr.max() > MAX_PACKED_EXPONENT):
            raise ValueError(f"exponents must lie in [0, {MAX_PACKED_EXPONENT}], got [{arr.min()}, {arr.max()}]")
        ids = B.pack(arr.reshape(-1, self.rows, self.cols))
        return np.asarray(ids, np.uint64), arr.ndim == 3

    def _describe(self, board_id) -> str:
        return "\n" + "\n".join(" ".join(f"{(1 << int(v)) if v else 0:>5}" for v in row)
                                for row in B.unpack(np.uint64(board_id), self.rows, self.cols))  # fmt: skip

    def _q(self, ids: np.ndarray) -> np.ndarray:
        q, status = q_values_batch(
            ids, self._T, self._state_index, self._after_index, self.spec.win_exponent, self.spec.objective == "score"
        )
        bad = np.flatnonzero(status)
        if bad.size:
            i = int(bad[0])
            if status[i] == NOT_IN_TABLE:
                raise BoardNotInTable(
                    f"board {int(ids[i]):#x} (batch index {i}) is not a reachable state of the "
                    f"{self.spec.describe()} table:{self._describe(ids[i])}"
                )
            if status[i] == AFTERSTATE_MISSING:
                raise TableError(f"{self.path}: an afterstate of board {int(ids[i]):#x} is missing (damaged table)")
        return q

    # -- queries ----------------------------------------------------------------------------------------------
    def q_values(self, board) -> np.ndarray:
        """``float64[4]`` (or ``[n, 4]``): merge reward + afterstate value per action, NaN for illegal moves."""
        ids, batch = self._packed(board)
        q = self._q(ids)
        return q if batch else q[0]

    def value(self, board):
        """Optimal expected future score V*(s) (0 for a terminal board); ``float`` or ``float64[n]``."""
        ids, batch = self._packed(board)
        q = self._q(ids)
        legal = ~np.isnan(q)
        v = np.where(legal.any(axis=1), np.nanmax(np.where(legal, q, -np.inf), axis=1), 0.0)
        return v if batch else float(v[0])

    def best_actions(self, board) -> np.ndarray:
        """``bool[4]`` (or ``[n, 4]``): the optimal actions (within a relative 1e-12 of the best Q)."""
        ids, batch = self._packed(board)
        best = optimal_mask(self._q(ids))
        return best if batch else best[0]

    def action_regret(self, board, action):
        """max Q − Q(action) >= 0 (expected score given away); an illegal action raises ``ValueError``."""
        ids, batch = self._packed(board)
        q = self._q(ids)
        acts = np.broadcast_to(np.asarray(action, np.int64), ids.shape)
        if acts.size and (acts.min() < 0 or acts.max() > 3):
            raise ValueError(f"actions must be 0..3 (UP, RIGHT, DOWN, LEFT), got {action!r}")
        chosen = q[np.arange(ids.size), acts]
        if np.isnan(chosen).any():
            i = int(np.flatnonzero(np.isnan(chosen))[0])
            legal = [ACTION_NAMES[a] for a in range(4) if not np.isnan(q[i, a])]
            raise ValueError(f"{ACTION_NAMES[acts[i]]} is illegal on board {int(ids[i]):#x}; legal: {legal}")
        regret = np.nanmax(q, axis=1) - chosen
        return regret if batch else float(regret[0])

    def afterstate_value(self, afterstate):
        """Value of an afterstate (board after a move, before the spawn); ``float`` or ``float64[n]``."""
        ids, batch = self._packed(afterstate)
        out = afterstate_values_batch(ids, self._T, self._after_index)
        missing = np.flatnonzero(np.isnan(out))
        if missing.size:
            i = int(missing[0])
            raise BoardNotInTable(f"afterstate {int(ids[i]):#x} is not in the {self.spec.describe()} table:"
                                  f"{self._describe(ids[i])}")  # fmt: skip
        return out if batch else float(out[0])

    def regret(self, agent, episodes: int = 1000, seed: int = 0, blunder: float | None = None, progress: bool = True):
        """Play ``agent`` and price every move: a :class:`~oracle.regret.RegretReport`."""
        from .regret import play_regret

        return play_regret(self, agent, episodes, seed, blunder, progress)

    def evaluate(self, agent, progress: bool = True):
        """Exact V^π(start) and optimality gap by age of ``agent``: an :class:`~oracle.evaluate.Evaluation`."""
        from .evaluate import evaluate_policy

        return evaluate_policy(self, agent, progress)

    def __repr__(self) -> str:
        return (f"Oracle({self.spec.describe()}, {self.n_states:,} states, {self.n_afterstates:,} "
                f"afterstates, V*(start) = {self.start_value:.6f}, table {self.path})")  # fmt: skip
