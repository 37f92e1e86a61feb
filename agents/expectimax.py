"""Depth-limited expectimax over exact chance nodes, with a transposition cache.

Values are in points (the game's merge rewards).  With ``depth = d`` the agent picks the legal move maximising

    Q_1(s, a) = r(s, a) + E(after)                            (the evaluation of the afterstate)
    Q_d(s, a) = r(s, a) + Σ_spawns p · max_a' Q_{d-1}(s'', a')  (0 when s'' has no legal move)

where the spawns are every empty cell with a 2 (probability (1 - p4)/e) or a 4 (p4/e), exactly as in
:func:`env2048.board.spawn_outcomes`.  So depth 1 is a greedy one-ply player on ``reward + E``, and depth d looks
d moves ahead.  ``E`` is either the heuristic below or a trained :class:`~agents.ntuple.NTupleAgent`'s afterstate
value.  Ties go to the first action in the order UP, RIGHT, DOWN, LEFT.

Heuristic (per row and column, summed; ``v`` are tile exponents along the line)::

    E = w_empty · empty cells + w_merge · adjacent equal pairs − w_mono · Σ_lines min(rises, falls)

where ``rises`` (``falls``) sums the increases (decreases) of ``2**v`` between neighbours: a line that is sorted
either way costs nothing.

Cache: chance-node values keyed by ``(afterstate, remaining depth)`` in an open-addressing table of
``cache_size`` entries, valid for one decision (a generation counter invalidates it in O(1)).

Rules: by default the search plays the plain game.  Given the rules array of an endgame pattern
(:mod:`env2048.rules`, ``rules=pattern.rules``), it searches that game instead: only the moves the pattern allows,
a success worth :data:`SUCCESS_VALUE` points on top of the move's reward, a failure (a tile above the cap, or no
allowed move) :data:`FAILURE_VALUE`; both end the line.  So it first makes the target, then avoids failing, then
scores, within its horizon.
"""

from __future__ import annotations

import numba
import numpy as np

from env2048 import board as B
from env2048.rules import FAILURE, ILLEGAL, SUCCESS, move_outcome, plain_rules
from env2048.shape import check_shape, is_packable
from env2048.tables import board_tables

from .base import Agent
from .ntuple import NTupleAgent, evaluate_afterstate
from .ntuple_goal import GoalNTupleAgent

#: Heuristic weights (w_empty, w_merge, w_mono), in points.
DEFAULT_HEURISTIC = (100.0, 50.0, 1.0)
MAX_DEPTH = 6
#: Points the search gives an endgame pattern's success and failure: beyond any score a position can hold.
SUCCESS_VALUE = 1e7
FAILURE_VALUE = -1e7

_HEURISTIC, _NTUPLE = 0, 1


@numba.njit(cache=True)
def heuristic_value(b, rows, cols, w):
    """The heuristic ``E`` of packed board ``b`` with weights ``w = float64[3]`` (empty, merge, monotonicity)."""
    empty = 0
    merges = 0
    mono = 0.0
    for i in range(rows):  # rows, left to right
        rise = 0.0
        fall = 0.0
        prev = np.int64((b >> np.uint64(4 * i * cols)) & np.uint64(15))
        empty += prev == 0
        for j in range(1, cols):
            v = np.int64((b >> np.uint64(4 * (i * cols + j))) & np.uint64(15))
            empty += v == 0
            if v != 0 and v == prev:
                merges += 1
            d = (1 << v if v else 0) - (1 << prev if prev else 0)
            if d > 0:
                rise += d
            else:
                fall -= d
            prev = v
        mono += min(rise, fall)
    for j in range(cols):  # columns, top to bottom
        rise = 0.0
        fall = 0.0
        prev = np.int64((b >> np.uint64(4 * j)) & np.uint64(15))
        for i in range(1, rows):
            v = np.int64((b >> np.uint64(4 * (i * cols + j))) & np.uint64(15))
            if v != 0 and v == prev:
                merges += 1
            d = (1 << v if v else 0) - (1 << prev if prev else 0)
            if d > 0:
                rise += d
            else:
                fall -= d
            prev = v
        mono += min(rise, fall)
    return w[0] * empty + w[1] * merges - w[2] * mono


@numba.njit(cache=True)
def _leaf(after, rows, cols, kind, hw, weights, offsets, rows_cells, rows_tuple, layout):
    if kind == _HEURISTIC:
        return heuristic_value(after, rows, cols, hw)
    return evaluate_afterstate(after, weights, offsets, rows_cells, rows_tuple, layout)


@numba.njit(cache=True)
def _state_value(
    s,
    depth,
    rows,
    cols,
    moves,
    p4,
    kind,
    hw,
    weights,
    offsets,
    rows_cells,
    rows_tuple,
    layout,
    rules,
    values,
    stuck,
    ckeys,
    cdepth,
    cvals,
    cstamp,
    gen,
    q_out,
):
    """``max_a Q_depth(s, a)`` over the moves ``rules`` allow (``stuck`` if none is), caching chance nodes of
    depth >= 1 below this one.

    ``q_out``: float64[4] to receive every legal action's ``Q_depth(s, a)`` (left alone where illegal), or an
    empty array (the recursive calls)."""
    cells = rows * cols
    best = -np.inf
    for a in range(4):
        after, reward, outcome = move_outcome(s, a, rows, cols, moves, rules)
        if outcome == ILLEGAL:
            continue
        paid = values[0] * reward  # the move's reward, weighted: 1 on a game of points, 0 on a game of success
        if outcome == SUCCESS:
            q = paid + values[1]
        elif outcome == FAILURE:
            q = paid + values[2]
        elif depth == 1:
            q = paid + _leaf(after, rows, cols, kind, hw, weights, offsets, rows_cells, rows_tuple, layout)
        else:
            # chance node (after, depth - 1): look it up
            mask = ckeys.shape[0] - 1
            slot = np.int64((after * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(40)) & mask
            found = False
            for probe in range(4):
                k = (slot + probe) & mask
                if cstamp[k] == gen and ckeys[k] == after and cdepth[k] == depth - 1:
                    expected = cvals[k]
                    found = True
                    break
            if not found:
                expected = 0.0
                empty = 0
                for c in range(cells):
                    if ((after >> np.uint64(4 * c)) & np.uint64(15)) == 0:
                        empty += 1
                        shift = np.uint64(4 * c)
                        spawned = 0.0  # (1 - p4) V(a 2 here) + p4 V(a 4 here), summed in this order
                        for tile in range(1, 3):
                            v = _state_value(
                                after | (np.uint64(tile) << shift),
                                depth - 1,
                                rows,
                                cols,
                                moves,
                                p4,
                                kind,
                                hw,
                                weights,
                                offsets,
                                rows_cells,
                                rows_tuple,
                                layout,
                                rules,
                                values,
                                stuck,
                                ckeys,
                                cdepth,
                                cvals,
                                cstamp,
                                gen,
                                q_out[:0],
                            )
                            spawned = (1.0 - p4) * v if tile == 1 else spawned + p4 * v
                        expected += spawned
                expected /= empty  # an afterstate always has an empty cell
                k = slot
                for probe in range(4):  # first stale slot, else overwrite the home slot
                    if cstamp[(slot + probe) & mask] != gen:
                        k = (slot + probe) & mask
                        break
                ckeys[k], cdepth[k], cvals[k], cstamp[k] = after, depth - 1, expected, gen
            q = paid + expected
        if q_out.shape[0]:
            q_out[a] = q
        if q > best:
            best = q
    return best if best > -np.inf else stuck


@numba.njit(cache=True)
def _q_values(
    s,
    depth,
    rows,
    cols,
    moves,
    p4,
    kind,
    hw,
    weights,
    offsets,
    rows_cells,
    rows_tuple,
    layout,
    rules,
    values,
    stuck,
    ckeys,
    cdepth,
    cvals,
    cstamp,
    gen,
):
    """``Q_depth(s, a)`` for the four actions (``-inf`` where not allowed), float64[4]."""
    q = np.full(4, -np.inf)
    _state_value(
        s,
        depth,
        rows,
        cols,
        moves,
        p4,
        kind,
        hw,
        weights,
        offsets,
        rows_cells,
        rows_tuple,
        layout,
        rules,
        values,
        stuck,
        ckeys,
        cdepth,
        cvals,
        cstamp,
        gen,
        q,
    )
    return q


@numba.njit(cache=True)
def _decide_many(
    ids,
    depth,
    rows,
    cols,
    moves,
    p4,
    kind,
    hw,
    weights,
    offsets,
    rows_cells,
    rows_tuple,
    layout,
    rules,
    values,
    stuck,
    ckeys,
    cdepth,
    cvals,
    cstamp,
    gen,
):
    """Best action per board (int64[n]; 0 where no move is legal) and the final cache generation."""
    out = np.zeros(ids.shape[0], np.int64)
    for i in range(ids.shape[0]):
        gen += 1
        q = _q_values(
            ids[i],
            depth,
            rows,
            cols,
            moves,
            p4,
            kind,
            hw,
            weights,
            offsets,
            rows_cells,
            rows_tuple,
            layout,
            rules,
            values,
            stuck,
            ckeys,
            cdepth,
            cvals,
            cstamp,
            gen,
        )
        best = 0
        for a in range(1, 4):
            if q[a] > q[best]:
                best = a
        out[i] = best
    return out, gen


class ExpectimaxAgent(Agent):
    """Depth-limited expectimax (see the module docstring).

    ``evaluator``: ``"heuristic"`` (weights ``heuristic`` = (w_empty, w_merge, w_mono)) or a trained
    :class:`~agents.ntuple.NTupleAgent` of the same board shape.  A
    :class:`~agents.ntuple_goal.GoalNTupleAgent` makes it search the network's game of success: its rules (unless
    ``rules`` says otherwise), values as probabilities (a success 1, a failure or no move left 0, rewards
    ignored).  ``depth``: moves looked ahead, 1 to
    :data:`MAX_DEPTH`.  ``p4``: the spawn probability of a 4 the agent assumes.  ``cache_size``: chance-node cache
    entries (a power of two).  ``rules``: an endgame pattern's rules array (``uint64``, :mod:`env2048.rules`) to
    search that game, or None for the plain game.  Deterministic: the seed is accepted for a uniform interface and
    unused.
    """

    name = "expectimax"
    #: the heuristic and n-tuple values are symmetric; only exact ties could break differently on mirrored boards
    symmetric = True
    deterministic = True

    def __init__(
        self,
        rows: int = 4,
        cols: int = 4,
        depth: int = 2,
        evaluator="heuristic",
        heuristic=DEFAULT_HEURISTIC,
        p4: float = 0.1,
        cache_size: int = 1 << 16,
        seed: int = 0,
        rules=None,
    ):
        if not is_packable(*check_shape(rows, cols)):
            raise ValueError(
                f"ExpectimaxAgent searches packed boards of at most 16 cells, not {rows}x{cols}: "
                "agents.WideExpectimaxAgent plays any board (make_agent('expectimax:D', ...) picks it)"
            )
        if isinstance(depth, bool) or not isinstance(depth, int | np.integer) or not 1 <= depth <= MAX_DEPTH:
            raise ValueError(f"depth must be an int in [1, {MAX_DEPTH}], got {depth!r}")
        if cache_size < 4 or cache_size & (cache_size - 1):
            raise ValueError(f"cache_size must be a power of two >= 4, got {cache_size}")
        self.rows, self.cols, self.depth, self.p4, self.seed = rows, cols, int(depth), float(B.check_p4(p4)), seed
        self.heuristic = np.asarray(heuristic, np.float64)
        if self.heuristic.shape != (3,):
            raise ValueError(f"heuristic must be 3 weights (empty, merge, monotonicity), got {heuristic!r}")
        goal = isinstance(evaluator, GoalNTupleAgent)
        if isinstance(evaluator, NTupleAgent):
            if (evaluator.rows, evaluator.cols) != (rows, cols):
                raise ValueError(f"the n-tuple network is for {evaluator.rows}x{evaluator.cols}, not {rows}x{cols}")
            self.kind, self.network = _NTUPLE, evaluator
        elif evaluator == "heuristic":
            self.kind, self.network = _HEURISTIC, NTupleAgent(rows, cols, tuples=[[0]])  # unused placeholder arrays
        else:
            raise ValueError(f"evaluator must be 'heuristic' or an NTupleAgent, got {evaluator!r}")
        self.name = f"expectimax:{self.depth}" + ("" if self.kind == _HEURISTIC else ":ntuple")
        self._moves = board_tables(rows, cols).moves
        if goal:  # values are probabilities of success: a success is 1, a failure or no move left 0, rewards nothing
            self.rules = evaluator.rules if rules is None else np.asarray(rules, np.uint64)
            self.values, self.stuck = np.array([0.0, 1.0, 0.0]), 0.0
        elif rules is None:
            self.rules, self.stuck = plain_rules(rows * cols, None), 0.0  # no move left: the game is over, no reward
            self.values = np.array([1.0, SUCCESS_VALUE, FAILURE_VALUE])
        else:
            self.rules, self.stuck = np.asarray(rules, np.uint64), FAILURE_VALUE
            self.values = np.array([1.0, SUCCESS_VALUE, FAILURE_VALUE])
        self._ckeys = np.zeros(cache_size, np.uint64)
        self._cdepth = np.zeros(cache_size, np.int64)
        self._cvals = np.zeros(cache_size, np.float64)
        self._cstamp = np.zeros(cache_size, np.int64)
        self._gen = 0

    @property
    def cheap_to_evaluate(self) -> bool:
        return self.depth == 1

    @property
    def uses_heuristic(self) -> bool:
        """Whether the leaves are valued by the fixed heuristic (not by an n-tuple network)."""
        return self.kind == _HEURISTIC

    def _args(self):
        n = self.network
        return (
            self.rows,
            self.cols,
            self._moves,
            self.p4,
            self.kind,
            self.heuristic,
            n.weights,
            n.offsets,
            n.rows_cells,
            n.rows_tuple,
            n.layout,
            self.rules,
            self.values,
            self.stuck,
        )

    def _cache(self):
        return self._ckeys, self._cdepth, self._cvals, self._cstamp

    def q_values(self, board) -> np.ndarray:
        """``Q_depth(board, a)`` for the four actions (``-inf`` where illegal): float64[4]."""
        self._gen += 1
        return _q_values(
            np.uint64(B.pack(np.asarray(board, np.uint8))), self.depth, *self._args(), *self._cache(), self._gen
        )

    def act_batch(self, boards, masks):
        boards = np.asarray(boards)
        ids = np.atleast_1d(np.asarray(B.pack(boards.reshape(-1, self.rows, self.cols).astype(np.uint8)), np.uint64))
        out, self._gen = _decide_many(ids, self.depth, *self._args(), *self._cache(), self._gen)
        masks = np.asarray(masks, bool).reshape(ids.size, 4)
        for i in np.flatnonzero(~masks[np.arange(ids.size), out] & masks.any(axis=1)):
            # an endgame pattern forbids moves the plain rules allow: the best of the allowed ones
            q = self.q_values(boards.reshape(-1, self.rows, self.cols)[i])
            out[i] = int(np.argmax(np.where(masks[i], q, -np.inf)))
        return out
