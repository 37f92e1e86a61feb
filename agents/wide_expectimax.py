"""Expectimax on boards of any size (2x2 to 8x8): the search of :mod:`agents.expectimax` on exponent arrays.

:class:`~agents.expectimax.ExpectimaxAgent` searches packed ``uint64`` boards, which hold at most 16 cells with
exponents up to 15.  :class:`WideExpectimaxAgent` plays the same search, ``Q_d`` as defined there, with the same
heuristic leaf ``E``, on ``uint8`` exponent arrays (:mod:`env2048.grid`): any board from 2x2 to 8x8, exponents up
to 62.  On a board both hold it gives the same Q-values to the last bit (``tests/test_wide_expectimax.py``),
summing in the same order.  Its leaves are valued by the heuristic or by an n-tuple network of the board
(:class:`~agents.ntuple.NTupleAgent`, read by :func:`agents.ntuple_wide.evaluate_row`).  It plays the plain game
only (no endgame rules, no success networks).

Cache: chance-node values keyed by ``(afterstate, remaining depth)``, each entry holding the whole afterstate, so
a lookup is exact (the slot comes from a hash of the cells); valid for one decision, as in the packed search.
"""

from __future__ import annotations

import numba
import numpy as np

from env2048.board import check_p4
from env2048.grid import exponent_rows, move_inplace
from env2048.shape import check_shape
from env2048.tables import line_tables_for

from .base import Agent
from .expectimax import DEFAULT_HEURISTIC, MAX_DEPTH
from .ntuple import NTupleAgent
from .ntuple_goal import GoalNTupleAgent
from .ntuple_wide import evaluate_row

#: Leaf values: the heuristic, or an n-tuple network's V(afterstate).
_HEURISTIC, _NTUPLE = 0, 1

#: Scratch rows per search level: the afterstate, and the board after a spawn.
_ROWS_PER_LEVEL = 2


@numba.njit(cache=True, inline="always")
def _line_terms(b, i, start, step, length):
    """``(empty cells, adjacent equal pairs, min(rises, falls))`` of one line of row ``i`` of ``b``: the cells
    ``start, start + step, ...`` (``length`` of them)."""
    empty = 0
    merges = 0
    rise = 0.0
    fall = 0.0
    prev = np.int64(b[i, start])
    empty += prev == 0
    for k in range(1, length):
        v = np.int64(b[i, start + k * step])
        empty += v == 0
        if v != 0 and v == prev:
            merges += 1
        d = (2.0**v if v else 0.0) - (2.0**prev if prev else 0.0)
        if d > 0:
            rise += d
        else:
            fall -= d
        prev = v
    return empty, merges, min(rise, fall)


@numba.njit(cache=True)
def grid_heuristic(b, i, rows, cols, w):
    """The heuristic ``E`` of :func:`agents.expectimax.heuristic_value` on row ``i`` of ``b`` (``uint8 (n,
    cells)`` exponents), the terms summed in the same order: the rows, left to right, then the columns, top to
    bottom (each cell's emptiness counted once, along its row)."""
    empty = 0
    merges = 0
    mono = 0.0
    for r in range(rows):
        e, m, line_mono = _line_terms(b, i, r * cols, 1, cols)
        empty += e
        merges += m
        mono += line_mono
    for c in range(cols):
        _, m, line_mono = _line_terms(b, i, c, cols, rows)
        merges += m
        mono += line_mono
    return w[0] * empty + w[1] * merges - w[2] * mono


@numba.njit(cache=True, inline="always")
def _hash(b, i):
    """A 64-bit FNV-1a hash of row ``i``'s cells."""
    h = np.uint64(0xCBF29CE484222325)
    for c in range(b.shape[1]):
        h = (h ^ np.uint64(b[i, c])) * np.uint64(0x100000001B3)
    return h


@numba.njit(cache=True)
def _same(cache_boards, k, b, i):
    for c in range(b.shape[1]):
        if cache_boards[k, c] != b[i, c]:
            return False
    return True


@numba.njit(cache=True)
def _value(scratch, level, depth, rows, cols, lines, p4, hw, net, cboards, cdepth, cvals, cstamp, gen, q_out, fill):
    """``max_a Q_depth`` of the board in row ``2 * level - 1`` of ``scratch`` (level 1: the root, in row 1), 0 if
    no move is legal; with ``fill``, writes each legal move's Q to ``q_out`` (float64[4]).  (The recursive calls
    pass the same ``q_out`` with ``fill`` False: one signature, as numba's cache of a recursive kernel needs.)  Rows
    ``2 * level`` and ``2 * level + 1`` are this level's afterstate and the board after a spawn (the next level's
    source).  ``net``: ``(kind, weights, offsets, rows_cells, rows_tuple, layout)``, the leaf evaluator (the
    network's arrays are placeholders when ``kind`` is the heuristic)."""
    cells = rows * cols
    not_filling = level < 0  # False, typed as a plain bool (a literal False would compile a second signature)
    source = 2 * level - 1
    after = 2 * level
    child = after + 1
    best = -np.inf
    for a in range(4):
        for c in range(cells):
            scratch[after, c] = scratch[source, c]
        reward, changed = move_inplace(scratch, after, rows, cols, a, lines)
        if not changed:
            continue
        if depth == 1:
            if net[0] == _HEURISTIC:
                q = reward + grid_heuristic(scratch, after, rows, cols, hw)
            else:
                q = reward + evaluate_row(scratch, after, net[1], net[2], net[3], net[4], net[5])
        else:
            mask = cdepth.shape[0] - 1
            slot = np.int64(_hash(scratch, after) >> np.uint64(40)) & mask
            found = False
            expected = 0.0
            for probe in range(4):
                k = (slot + probe) & mask
                if cstamp[k] == gen and cdepth[k] == depth - 1 and _same(cboards, k, scratch, after):
                    expected = cvals[k]
                    found = True
                    break
            if not found:
                empty = 0
                for c in range(cells):
                    if scratch[after, c] == 0:
                        empty += 1
                        spawned = 0.0  # (1 - p4) V(a 2 here) + p4 V(a 4 here), summed in this order
                        for tile in range(1, 3):
                            for d in range(cells):
                                scratch[child, d] = scratch[after, d]
                            scratch[child, c] = tile
                            v = _value(
                                scratch, level + 1, depth - 1, rows, cols, lines, p4, hw, net, cboards, cdepth,
                                cvals, cstamp, gen, q_out, not_filling,
                            )  # fmt: skip
                            spawned = (1.0 - p4) * v if tile == 1 else spawned + p4 * v
                        expected += spawned
                expected /= empty  # an afterstate always has an empty cell
                k = slot
                for probe in range(4):  # first stale slot, else overwrite the home slot
                    if cstamp[(slot + probe) & mask] != gen:
                        k = (slot + probe) & mask
                        break
                for c in range(cells):
                    cboards[k, c] = scratch[after, c]
                cdepth[k], cvals[k], cstamp[k] = depth - 1, expected, gen
            q = reward + expected
        if fill:
            q_out[a] = q
        if q > best:
            best = q
    return best if best > -np.inf else 0.0


@numba.njit(cache=True)
def _decide_many(boards, depth, rows, cols, lines, p4, hw, net, cboards, cdepth, cvals, cstamp, gen, want_q):
    """Best action per board of ``boards`` (``uint8 (n, cells)``; int64[n], 0 where no move is legal), their Q
    (float64 (n, 4), ``-inf`` where illegal; filled if ``want_q``) and the last cache generation."""
    n, cells = boards.shape
    scratch = np.zeros((1 + _ROWS_PER_LEVEL * (depth + 1), cells), np.uint8)
    out = np.zeros(n, np.int64)
    qs = np.full((n if want_q else 0, 4), -np.inf)
    q = np.empty(4)
    filling = n >= 0  # True, typed as a plain bool, as the recursive calls' False is
    for i in range(n):
        gen += 1
        for c in range(cells):
            scratch[1, c] = boards[i, c]  # level 1's source row; level 1 writes rows 2 and 3
        q[:] = -np.inf
        _value(
            scratch, np.int64(1), depth, rows, cols, lines, p4, hw, net, cboards, cdepth, cvals, cstamp, gen, q, filling
        )
        best = 0
        for a in range(1, 4):
            if q[a] > q[best]:
                best = a
        out[i] = best
        if want_q:
            qs[i] = q
    return out, qs, gen


class WideExpectimaxAgent(Agent):
    """Depth-limited expectimax for any board from 2x2 to 8x8 (see the module docstring).

    ``depth``: moves looked ahead, 1 to :data:`~agents.expectimax.MAX_DEPTH`; ``evaluator``: ``"heuristic"`` or an
    :class:`~agents.ntuple.NTupleAgent` of the board, whose V(afterstate) values the leaves; ``heuristic``: the
    weights (w_empty, w_merge, w_mono); ``p4``: the spawn probability of a 4 the agent assumes; ``cache_size``:
    chance-node cache entries (a power of two; each holds a board).  Deterministic: the seed is accepted for a
    uniform interface.
    """

    name = "expectimax"
    symmetric = True
    deterministic = True

    def __init__(
        self,
        rows: int = 5,
        cols: int = 5,
        depth: int = 2,
        heuristic=DEFAULT_HEURISTIC,
        p4: float = 0.1,
        cache_size: int = 1 << 16,
        seed: int = 0,
        evaluator="heuristic",
    ):
        self.rows, self.cols = check_shape(rows, cols)
        if isinstance(evaluator, GoalNTupleAgent):
            raise ValueError("a success network values probabilities: WideExpectimaxAgent plays the score game only")
        if isinstance(evaluator, NTupleAgent):
            if (evaluator.rows, evaluator.cols) != (rows, cols):
                raise ValueError(f"the n-tuple network is for {evaluator.rows}x{evaluator.cols}, not {rows}x{cols}")
            kind, network = _NTUPLE, evaluator
        elif isinstance(evaluator, str) and evaluator == "heuristic":
            kind, network = _HEURISTIC, NTupleAgent(rows, cols, tuples=[[0]])  # placeholder arrays, never read
        else:
            raise ValueError(f"evaluator must be 'heuristic' or an NTupleAgent, got {evaluator!r}")
        self._net = (kind, *network._args())
        if isinstance(depth, bool) or not isinstance(depth, int | np.integer) or not 1 <= depth <= MAX_DEPTH:
            raise ValueError(f"depth must be an int in [1, {MAX_DEPTH}], got {depth!r}")
        if cache_size < 4 or cache_size & (cache_size - 1):
            raise ValueError(f"cache_size must be a power of two >= 4, got {cache_size}")
        self.heuristic = np.asarray(heuristic, np.float64)
        if self.heuristic.shape != (3,):
            raise ValueError(f"heuristic must be 3 weights (empty, merge, monotonicity), got {heuristic!r}")
        self.depth, self.p4, self.seed = int(depth), float(check_p4(p4)), seed
        self.name = f"expectimax:{self.depth}" + ("" if kind == _HEURISTIC else ":ntuple")
        self._lines = line_tables_for(self.rows, self.cols)
        cells = self.rows * self.cols
        self._cache = (
            np.zeros((cache_size, cells), np.uint8),
            np.zeros(cache_size, np.int64),
            np.zeros(cache_size, np.float64),
            np.zeros(cache_size, np.int64),
        )
        self._gen = 0

    @property
    def cheap_to_evaluate(self) -> bool:
        return self.depth == 1

    @property
    def uses_heuristic(self) -> bool:
        """Whether the leaves are valued by the fixed heuristic (not by an n-tuple network)."""
        return self._net[0] == _HEURISTIC

    def _search(self, boards, want_q: bool):
        out, qs, self._gen = _decide_many(
            exponent_rows(boards, self.rows * self.cols), self.depth, self.rows, self.cols, self._lines, self.p4,
            self.heuristic, self._net, *self._cache, self._gen, want_q,
        )  # fmt: skip
        return out, qs

    def q_values(self, board) -> np.ndarray:
        """``Q_depth(board, a)`` for the four actions (``-inf`` where illegal): float64[4]."""
        return self._search(board, True)[1][0]

    def act_batch(self, boards, masks):
        return self._search(boards, False)[0]
