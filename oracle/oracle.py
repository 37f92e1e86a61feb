"""``Oracle``: optimal values, Q-values and per-move regret of any board, from a solver table opened lazily.

Boards are given as exponent grids (``(rows, cols)`` or a batch ``(n, rows, cols)``, any integer dtype) or as
packed IDs (a Python int / ``np.uint64``, or a ``uint64[n]`` array).  Any board, canonical or not: it is
canonicalised before the lookup and actions refer to the board as given.

What "the board is in the table" means: Q*(s, a) = r(s, a) + V*(afterstate), so the oracle answers every board
whose legal moves all lead to stored afterstates (or win, for ``tile:K``); that includes every reachable state,
and also unreachable boards whose afterstates are reachable (their Q-values are exact all the same).  A board
with a legal move whose afterstate is not stored raises :class:`BoardNotInTable`; a board with no legal move is
terminal, worth 0.  Format v2 tables store no states, v1 tables store them but the rule is the same for both.
"""

from __future__ import annotations

import os

import numpy as np

from env2048 import board as B
from env2048.rules import FIXED_MASK, FIXED_VALUES
from env2048.shape import ACTION_NAMES, MAX_PACKED_EXPONENT
from solver import precompile, provision
from solver.format import Table, TableError
from solver.format.common import tie_tolerance
from solver.seal import check_unsealed
from solver.spec import SolveSpec

from .evaluate import evaluate_policy
from .lookup import NOT_IN_TABLE, AgeLayers, optimal_mask, q_values_block
from .priced_games import play_regret

#: Bytes of table layers an oracle keeps open by default (see :class:`Oracle`).
DEFAULT_MEMORY_LIMIT = 4 << 30


class BoardNotInTable(KeyError):
    """The board is not a reachable state (or afterstate) of the table."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def oracle_kernels_missing() -> bool:
    """Whether the oracle's lookup kernels are missing from numba's cache (then a table's first build has a second
    process compile them meanwhile: ``warm_oracle`` of :mod:`solver.provision`)."""
    return not precompile.is_cached(q_values_block)


#: Names that moved to :mod:`solver.provision`, which provisions tables; the oracle only opens them.
_MOVED = {"BUILDABLE", "TOO_BIG", "cache_dir", "table_name", "cached_table"}


def moved_to_provision(module: str, name: str):
    """``solver.provision``'s ``name``, with a DeprecationWarning saying it moved from ``module``; an
    :class:`AttributeError` for a name that did not move (a module's ``__getattr__``)."""
    if name not in _MOVED:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    import warnings

    warnings.warn(f"{module}.{name} moved to solver.provision.{name}", DeprecationWarning, stacklevel=3)
    return getattr(provision, name)


def __getattr__(name: str):
    return moved_to_provision(__name__, name)


def is_url(table) -> bool:
    """Whether ``table`` names a served table (``http://`` or ``https://``) rather than a path."""
    return isinstance(table, str) and table.lower().startswith(("http://", "https://"))


def open_oracle(table, **kwargs) -> Oracle:
    """An :class:`Oracle` of ``table``: an open one as it is, a URL connected (:meth:`Oracle.connect`), a path
    opened (:meth:`Oracle.open`, with ``kwargs``)."""
    if isinstance(table, Oracle):
        return table
    if is_url(table):
        return Oracle.connect(table)
    return Oracle.open(table, **kwargs)


class Oracle:
    """Exact optimal play of one solved table (see the module docstring for board formats).

    Memory: nothing is loaded at open; each age's layer is opened when a board of that age is first asked for
    (format v2: memory-mapped, plus a select index of about 1/32 of its ID code; v1: read into memory) and kept
    while the open layers total at most ``memory_limit`` bytes (least recently used ages are dropped first).
    Values of a v2 table carry its code's error bound (``value_error``); actions whose Q-values differ by less
    than about twice that bound count as tied (``tie_tolerance``, see :func:`solver.format.common.tie_tolerance`).
    """

    def __init__(self, table, memory_limit: int | None = None, verify: bool = False, layers=None):
        check_unsealed(f"an Oracle of {getattr(table, 'path', table)}")
        self.table = table
        self.path = table.path
        self.spec = table.spec
        self.rows, self.cols = self.spec.rows, self.spec.cols
        self.attrs = table.attrs
        self.format_version = int(table.attrs["format_version"])
        self.memory_limit = DEFAULT_MEMORY_LIMIT if memory_limit is None else int(memory_limit)
        self._layers = layers if layers is not None else AgeLayers(table, self.memory_limit, verify=verify)
        self.n_states, self.n_afterstates = int(table.attrs["states"]), int(table.attrs["afterstates"])
        ids, probs, values = table.start()
        self.start_ids, self.start_probs, self.start_values = ids, probs, values
        self.start_value = float(table.attrs["start_value"])
        a = table.attrs
        self.value_error = (
            (0.0, 0.0)
            if self.format_version == 1
            else (float(a["value_error_relative"]), float(a["value_error_absolute"]))
        )
        self.tie_tolerance = tie_tolerance(a)

    @property
    def resident_bytes(self) -> int:
        """Bytes of the layers open now (mapped or read), at most about ``memory_limit``."""
        return self._layers.resident_bytes

    def close(self) -> None:
        """Drop every open layer and close the table."""
        self._layers.clear()
        self.table.close()

    def __enter__(self) -> Oracle:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def optimal_mask(self, q: np.ndarray) -> np.ndarray:
        """``bool[..., 4]``: the optimal actions given Q-values (``float64[..., 4]``, NaN = illegal), ties within
        :attr:`tie_tolerance`."""
        return optimal_mask(q, *self.tie_tolerance)

    # -- construction -----------------------------------------------------------------------------------------
    @classmethod
    def open(cls, path: str | os.PathLike, verify: bool = False, memory_limit: int | None = None) -> Oracle:
        """Open a table written by ``python -m solver build`` (a v1 or v2 file, or a v2 directory); nothing is
        read but the root attributes, the index and the start states.  ``verify`` first checks every dataset's
        SHA-256 (reads the whole table).  ``memory_limit``: bytes of open layers (default
        :data:`DEFAULT_MEMORY_LIMIT`).  A table served over HTTP opens with :meth:`connect`."""
        if is_url(path):
            raise ValueError(
                f"{path} is a URL: Oracle.open reads a table on this machine; a table served by "
                f"`python -m oracle serve` opens with Oracle.connect({str(path)!r})"
            )
        table = Table(path)
        try:
            missing = table.missing_ages()
            if missing:
                raise TableError(
                    f"{path}: ages {missing[:5]} are in the index but missing from the table ({len(missing)} in all)"
                )
            if verify:
                bad = table.bad_checksums()
                if bad:
                    raise TableError(f"{path}: checksum mismatch in {', '.join(bad[:5])} (the file is damaged)")
            return cls(table, memory_limit=memory_limit, verify=verify)
        except BaseException:
            table.close()
            raise

    @classmethod
    def connect(
        cls, url: str, timeout: float = 60.0, retries: int = 3, batch: int = 1 << 18, headers: dict | None = None
    ) -> Oracle:
        """The oracle of a table served by ``python -m oracle serve`` at ``url`` (e.g. ``http://127.0.0.1:8000``):
        the same queries as a local oracle, with bit-identical answers and the same errors.  A query of more
        than ``batch`` boards goes as several requests; a request that fails to connect, or meets a 502, 503 or
        504, is tried again up to ``retries`` times (queries are idempotent); ``timeout`` bounds each request's
        seconds.  ``headers`` go with every request (e.g. ``{"Authorization": "Bearer ..."}`` for a proxy in
        front of the server; ``https://user:password@host`` sends basic authentication).  See
        :mod:`oracle.remote`."""
        from .remote import RemoteLayers, RemoteTable

        check_unsealed(f"Oracle.connect({url!r})")
        table = RemoteTable(url, timeout=timeout, retries=retries, headers=headers)
        try:
            return cls(table, layers=RemoteLayers(table, batch))
        except BaseException:
            table.close()
            raise

    @classmethod
    def for_board(
        cls,
        board: str = "3x3",
        objective: str = "score",
        p4: float = 0.1,
        spawn: str = "random",
        table: str | os.PathLike | None = None,
        progress: bool = True,
    ) -> Oracle:
        """The oracle of a board: from ``table`` if given, else from the cache directory, building the table there
        on first use for the boards of :data:`solver.provision.BUILDABLE` (with a progress bar)."""
        spec = SolveSpec.parse(board, objective, p4, spawn)
        check_unsealed(f"Oracle.for_board({board!r})")
        if table is not None:
            oracle = cls.open(table)
            if oracle.spec != spec:
                raise TableError(f"{table} solves {oracle.spec.describe()}, not {spec.describe()}")
            return oracle
        return cls.open(provision.cached_table(spec, progress, warm_oracle=oracle_kernels_missing()))

    # -- input handling ---------------------------------------------------------------------------------------
    def _packed(self, board) -> tuple[np.ndarray, bool]:
        """``(uint64[n] IDs, is_batch)`` from any accepted board format, with clear errors (a pattern table's
        boards must hold its fixed tiles)."""
        ids, batch = self._packed_any(board)
        pattern = self.spec.pattern
        if pattern is not None and ids.size:
            mask, fixed = np.uint64(pattern.rules[FIXED_MASK]), np.uint64(pattern.rules[FIXED_VALUES])
            wrong = np.flatnonzero((ids & mask) != fixed)
            if wrong.size:
                i = int(wrong[0])
                raise ValueError(
                    f"board {int(ids[i]):#x} (batch index {i}) does not hold the fixed tiles of "
                    f"{pattern.describe()}:{self._describe(ids[i])}\nexpected {pattern.to_dict()['grid']}"
                )
        return ids, batch

    def _packed_any(self, board) -> tuple[np.ndarray, bool]:
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
        return "\n" + "\n".join(
            " ".join(f"{(1 << int(v)) if v else 0:>5}" for v in row)
            for row in B.unpack(np.uint64(board_id), self.rows, self.cols)
        )

    def lookup_q(self, board) -> tuple[np.ndarray, np.ndarray]:
        """``(q float64[n, 4], status int8[n])`` of a batch of boards, without raising for boards not in the
        table: ``status`` is :data:`oracle.lookup.NOT_IN_TABLE` where a legal move's afterstate is not stored
        (its Q-value NaN), else :data:`oracle.lookup.OK` (what the oracle server answers)."""
        ids = self._packed(board)[0]
        return self._layers.q_values(ids)

    def lookup_afterstates(self, afterstate) -> tuple[np.ndarray, np.ndarray]:
        """``(values float64[n], status int8[n])`` of a batch of afterstates, NaN and NOT_IN_TABLE where not
        stored (what the oracle server answers)."""
        ids = self._packed(afterstate)[0]
        values = self._layers.afterstate_values(ids)
        return values, np.isnan(values).astype(np.int8) * np.int8(NOT_IN_TABLE)

    def _q(self, ids: np.ndarray) -> np.ndarray:
        q, status = self._layers.q_values(ids)
        bad = np.flatnonzero(status)
        if bad.size:
            i = int(bad[0])
            raise BoardNotInTable(
                f"board {int(ids[i]):#x} (batch index {i}) is not a reachable state of the {self.spec.describe()} "
                f"table (a legal move leads to an afterstate the table does not hold):{self._describe(ids[i])}"
            )
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
        """``bool[4]`` (or ``[n, 4]``): the optimal actions (within :attr:`tie_tolerance` of the best Q)."""
        ids, batch = self._packed(board)
        best = self.optimal_mask(self._q(ids))
        return best if batch else best[0]

    def action_regret(self, board, action):
        """max Q − Q(action) >= 0 (expected score given away; 0 for an optimal action, ties within
        :attr:`tie_tolerance` included); an illegal action raises ``ValueError``."""
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
        tied = self.optimal_mask(q)[np.arange(ids.size), acts]  # ties within the tolerance are not regret
        regret = np.where(tied, 0.0, np.nanmax(q, axis=1) - chosen)
        return regret if batch else float(regret[0])

    def afterstate_value(self, afterstate):
        """Value of an afterstate (board after a move, before the spawn); ``float`` or ``float64[n]``."""
        ids, batch = self._packed(afterstate)
        out = self._layers.afterstate_values(ids)
        missing = np.flatnonzero(np.isnan(out))
        if missing.size:
            i = int(missing[0])
            raise BoardNotInTable(
                f"afterstate {int(ids[i]):#x} is not in the {self.spec.describe()} table:{self._describe(ids[i])}"
            )
        return out if batch else float(out[0])

    def regret(
        self,
        agent,
        episodes: int = 1000,
        seed: int = 0,
        blunder: float | None = None,
        progress: bool = True,
        keep_actions: bool = False,
    ):
        """Play ``agent`` and price every move: a :class:`~oracle.priced_games.RegretReport`.  ``keep_actions`` keeps
        every game's moves, from which :func:`~oracle.priced_games.reenact` replays a chosen game."""
        return play_regret(self, agent, episodes, seed, blunder, progress, keep_actions)

    def evaluate(self, agent, progress: bool = True, on_layer=None):
        """Exact V^π(start) and optimality gap by age of ``agent``: an :class:`~oracle.evaluate.Evaluation`
        (``on_layer``: see :func:`~oracle.evaluate.evaluate_policy`)."""
        return evaluate_policy(self, agent, progress, on_layer=on_layer)

    def __repr__(self) -> str:
        return (
            f"Oracle({self.spec.describe()}, {self.n_states:,} states, {self.n_afterstates:,} "
            f"afterstates, V*(start) = {self.start_value:.6f}, table {self.path} "
            f"(format v{self.format_version}))"
        )
