"""n-tuple network agent trained by afterstate TD(0) (Szubert & Jaśkowski 2014), numba kernels throughout.

The value of an afterstate is a sum of table lookups: for every tuple (a list of cells) and every symmetry of the
board, the exponents in the tuple's (mapped) cells form an index into that tuple's weight table, so weights are
shared across symmetries.  Play is greedy on ``reward + V(afterstate)``; learning moves ``V(afterstate)`` toward
``r' + V(afterstate')`` of the next move (0 at the end of the game).

Multi-stage weights (optional): the afterstates are split by age (sum of tiles) into ``stages`` bands of
``2**stage_shift``, the last one open-ended, and every band has its own weights: the value of a tile pattern
early in a game need not be its value late in the game (on 3x3 the game's end is close in age).

Arrays: ``weights float32[stages * stage_size]``, ``stage_size = sum of base**len(tuple)`` (tuple t of stage k
at ``k * stage_size + offsets[t]``); ``rows_cells int64[n_sym * n_tuples, max_len]`` the cells of every
symmetric image of every tuple (-1 padded), ``rows_tuple int64[n_sym * n_tuples]`` the tuple each image indexes;
``layout = (base, stage_shift, stages, stage_size)`` (ints).  Exponents above ``base - 1`` are clipped.

The kernels here read the packed ``uint64`` board (at most 16 cells); beyond 16 cells :class:`NTupleAgent` plays
and learns with the same weights on the exponent-array kernels of :mod:`agents.ntuple_wide`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import numba
import numpy as np

from env2048 import board as B
from env2048 import metering
from env2048.engine import next_uniform
from env2048.grid import exponent_rows
from env2048.kernels import move_packed
from env2048.shape import check_shape, is_packable
from env2048.tables import board_tables, line_tables_for, symmetry_tables

from . import ntuple_wide as W
from .base import Agent

#: Default tuple shapes (cells are row-major indices ``row * cols + col``).
DEFAULT_TUPLES = {
    (4, 4): [[0, 1, 2, 3, 4, 5], [4, 5, 6, 7, 8, 9], [0, 1, 2, 4, 5, 6], [4, 5, 6, 8, 9, 10]],  # Jaśkowski's 4×6
    # 3x3: four 6-tuples and four smaller ones (better than the four alone: 91.4% vs 90.4% of V* after 10 min)
    (3, 3): [
        [0, 1, 2, 3, 4, 5],
        [0, 1, 3, 4, 6, 7],
        [0, 1, 2, 4, 5, 8],
        [1, 3, 4, 5, 7, 0],
        [0, 1, 2],
        [3, 4, 5],
        [0, 1, 3, 4],
        [1, 2, 4, 5, 7, 8],
    ],
    (4, 3): [[0, 1, 2, 3, 4, 5], [3, 4, 5, 6, 7, 8], [0, 1, 3, 4, 6, 7], [0, 1, 2, 3, 4, 6]],
    (2, 4): [[0, 1, 2, 4, 5, 6], [0, 1, 2, 3, 4, 5]],
    (2, 2): [[0, 1, 2, 3]],  # small boards: the whole board is one tuple (a table of every board)
    (2, 3): [[0, 1, 2, 3, 4, 5]],
}
#: Default (stages, stage_shift) per board: 3x3 learns faster in 10 minutes with separate weights for each band of
#: 256 in age, the last from 768 on (`python -m experiments.train.td --board 3x3 --minutes 10`: 94.56% of V* on 2
#: threads vs 94.04% with 2 stages of 512; on one thread 94.14% vs 93.35%).
DEFAULT_STAGES = {(3, 3): (4, 8)}
for _r, _c in list(DEFAULT_TUPLES):  # the transposed shape: the same shapes, cells transposed
    if (_c, _r) not in DEFAULT_TUPLES:
        DEFAULT_TUPLES[_c, _r] = [[(k % _c) * _r + k // _c for k in t] for t in DEFAULT_TUPLES[_r, _c]]

#: Weight-table base beyond 16 cells: exponents 0..17 told apart (tiles to 131072), larger ones clipped to 17.
#: On 4x4 and smaller the packed board caps exponents at 15, so the base is 16 there (or cells + 2 if smaller).
WIDE_BASE = 18


def wall_tuples(rows: int, cols: int) -> list[list[int]]:
    """The four 6-tuples of :data:`DEFAULT_TUPLES` on 4x4 (two 4+2 rows, two 3x2 blocks), placed by coordinates
    in the corner of a larger board (at least 3 x 4 or 4 x 3): with the board's symmetries they lie along every
    wall, where the corner strategy keeps its large tiles."""
    shapes = [
        [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1)],
        [(1, 0), (1, 1), (1, 2), (1, 3), (2, 0), (2, 1)],
        [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)],
        [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)],
    ]
    if rows >= 3 and cols >= 4:
        return [[r * cols + c for r, c in shape] for shape in shapes]
    if rows >= 4 and cols >= 3:
        return [[c * cols + r for r, c in shape] for shape in shapes]
    raise ValueError(f"the wall tuples need a board of at least 3x4 or 4x3, not {rows}x{cols}")


#: Larger tuple sets (cells row-major): on 3x3 four 7-tuples (two full rows plus a third-row cell; the cross plus
#: two corners; an S shape), 19.5 M weights each per stage.
LARGE_TUPLES = {
    (3, 3): [[0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 3, 4, 5, 7], [1, 3, 4, 5, 7, 0, 8], [0, 1, 2, 4, 6, 7, 8]],
}


def tuple_set(name: str, rows: int, cols: int) -> list[list[int]]:
    """Tuples by name: ``default`` (:data:`DEFAULT_TUPLES`), ``large`` (:data:`LARGE_TUPLES`) or a JSON list of
    cell lists."""
    if name == "default":
        if (rows, cols) not in DEFAULT_TUPLES and not is_packable(rows, cols):
            return wall_tuples(rows, cols)
        if (rows, cols) not in DEFAULT_TUPLES:
            raise ValueError(
                f"no default tuple set for {rows}x{cols} (have {sorted(DEFAULT_TUPLES)}); give a JSON list"
            )
        return DEFAULT_TUPLES[rows, cols]
    if name == "large":
        if (rows, cols) not in LARGE_TUPLES:
            raise ValueError(f"no large tuple set for {rows}x{cols} (have {sorted(LARGE_TUPLES)}); give a JSON list")
        return LARGE_TUPLES[rows, cols]
    try:
        tuples = json.loads(name)
    except json.JSONDecodeError:
        raise ValueError(f"--tuples must be default, large or a JSON list of cell lists, got {name!r}") from None
    if not isinstance(tuples, list) or not all(isinstance(t, list) for t in tuples):
        raise ValueError(f"--tuples JSON must be a list of cell lists, got {name!r}")
    return tuples


@numba.njit(cache=True)
def evaluate_afterstate(b, weights, offsets, rows_cells, rows_tuple, layout):
    """V(b) = Σ over symmetric tuple images of the weight at the image's index."""
    total = 0.0
    # Exponents of all cells first (clipped to the weight tables' base), then pure array arithmetic per image.
    # This loop is written out again in _td_update and _update_tc on purpose: moved into an inlined
    # helper that takes the arrays, numba reference-counts them on every call and training ran 4x slower (measured).
    base = layout[0]
    exps = np.empty(16, np.int64)
    age = np.int64(0)
    for c in range(16):
        e = np.int64((b >> np.uint64(4 * c)) & np.uint64(15))
        age += (np.int64(1) << e) if e else 0
        exps[c] = min(e, base - 1)
    at = min(age >> layout[1], layout[2] - 1) * layout[3]  # start of the board's stage
    width = rows_cells.shape[1]
    for r in range(rows_cells.shape[0]):
        idx = np.int64(0)
        for k in range(width):
            c = rows_cells[r, k]
            if c < 0:
                break
            idx = idx * base + exps[c]
        total += weights[at + offsets[rows_tuple[r]] + idx]
    return total


@numba.njit(cache=True)
def _td_update(b, target, alpha, weights, offsets, rows_cells, rows_tuple, layout):
    """``V(b) += alpha * (target - V(b))`` spread over the weights V(b) reads: each of them moves by
    ``alpha * (target - V(b))``, V(b) as :func:`evaluate_afterstate` computes it."""
    base = layout[0]
    exps = np.empty(16, np.int64)
    age = np.int64(0)
    for c in range(16):
        e = np.int64((b >> np.uint64(4 * c)) & np.uint64(15))
        age += (np.int64(1) << e) if e else 0
        exps[c] = min(e, base - 1)
    at = min(age >> layout[1], layout[2] - 1) * layout[3]
    width = rows_cells.shape[1]
    slots = np.empty(rows_cells.shape[0], np.int64)
    value = 0.0
    for r in range(rows_cells.shape[0]):
        idx = np.int64(0)
        for k in range(width):
            c = rows_cells[r, k]
            if c < 0:
                break
            idx = idx * base + exps[c]
        slots[r] = at + offsets[rows_tuple[r]] + idx
        value += weights[slots[r]]
    delta = alpha * (target - value)
    for r in range(rows_cells.shape[0]):
        weights[slots[r]] += delta


@numba.njit(cache=True)
def _update_tc(b, error, alpha, weights, coherence_e, coherence_a, offsets, rows_cells, rows_tuple, layout):
    """Temporal coherence (Jaśkowski): each weight moves by ``alpha * |E|/A * error`` (rate 1 while A = 0), where E
    accumulates the errors it received and A their absolute values."""
    base = layout[0]
    exps = np.empty(16, np.int64)
    age = np.int64(0)
    for c in range(16):
        e = np.int64((b >> np.uint64(4 * c)) & np.uint64(15))
        age += (np.int64(1) << e) if e else 0
        exps[c] = min(e, base - 1)
    at = min(age >> layout[1], layout[2] - 1) * layout[3]  # start of the board's stage
    width = rows_cells.shape[1]
    for r in range(rows_cells.shape[0]):
        idx = np.int64(0)
        for k in range(width):
            c = rows_cells[r, k]
            if c < 0:
                break
            idx = idx * base + exps[c]
        j = at + offsets[rows_tuple[r]] + idx
        rate = abs(coherence_e[j]) / coherence_a[j] if coherence_a[j] > 0 else 1.0
        weights[j] += alpha * rate * error
        coherence_e[j] += error
        coherence_a[j] += abs(error)


@numba.njit(cache=True)
def _best_move(b, rows, cols, moves, weights, offsets, rows_cells, rows_tuple, layout, allowed=15):
    """``(action, reward, afterstate, V(afterstate))`` maximising reward + V(afterstate) over the moves whose bit
    is set in ``allowed`` (bit a for action a; an endgame pattern forbids some moves the plain rules allow);
    action -1 if none of them is legal."""
    best_a = -1
    best_v = -np.inf
    best_r = 0
    best_after = b
    best_value = 0.0
    for a in range(4):
        if not (allowed >> a) & 1:
            continue
        after, reward = move_packed(b, a, rows, cols, moves)
        if after == b:
            continue
        value = evaluate_afterstate(after, weights, offsets, rows_cells, rows_tuple, layout)
        if reward + value > best_v:
            best_a, best_v, best_r, best_after, best_value = a, reward + value, reward, after, value
    return best_a, best_r, best_after, best_value


@numba.njit(cache=True, inline="always")
def _spawn_packed(b, cells, p4, key):
    key, u_cell = next_uniform(key)
    key, u_tile = next_uniform(key)
    empty = 0
    for c in range(cells):
        empty += ((b >> np.uint64(4 * c)) & np.uint64(15)) == 0
    k = min(int(u_cell * empty), empty - 1)
    for c in range(cells):
        if ((b >> np.uint64(4 * c)) & np.uint64(15)) == 0:
            if k == 0:
                tile = np.uint64(2) if u_tile < p4 else np.uint64(1)
                return b | (tile << np.uint64(4 * c)), key
            k -= 1
    return b, key


@numba.njit(cache=True)
def train_episodes(
    n_episodes,
    T,
    p4,
    alpha,
    key,
    weights,
    offsets,
    rows_cells,
    rows_tuple,
    layout,
    learn,
    coherence_e,
    coherence_a,
    trace_boards,
    trace_actions,
    max_moves,
):
    """Play ``n_episodes`` greedy games, learning by afterstate TD(0) if ``learn``; with temporal coherence when
    ``coherence_e`` / ``coherence_a`` (float32, one entry per weight) are non-empty.  Move k of the round (board
    before it, action) goes to ``trace_boards[k]`` (uint64) and ``trace_actions[k]`` (int8) while k is within
    their length (empty: no trace).  No more than ``max_moves`` moves are played: the game under way then stops
    there, and the games not started get ``moves = -1``.

    Returns ``(scores int64[n], moves int64[n], max_exponent int64[n], key)``; ``weights`` is updated in place.
    """
    rows, cols, moves = T.rows, T.cols, T.moves
    cells = rows * cols
    scores = np.zeros(n_episodes, np.int64)
    n_moves = np.zeros(n_episodes, np.int64)
    top = np.zeros(n_episodes, np.int64)
    k = 0
    for ep in range(n_episodes):
        if k >= max_moves:
            n_moves[ep:] = -1
            break
        b = np.uint64(0)
        b, key = _spawn_packed(b, cells, p4, key)
        b, key = _spawn_packed(b, cells, p4, key)
        a, r, after, _ = _best_move(b, rows, cols, moves, weights, offsets, rows_cells, rows_tuple, layout)
        while a >= 0 and k < max_moves:
            if k < trace_boards.shape[0]:
                trace_boards[k] = b
                trace_actions[k] = a
            k += 1
            scores[ep] += r
            n_moves[ep] += 1
            b, key = _spawn_packed(after, cells, p4, key)
            a2, r2, after2, v2 = _best_move(b, rows, cols, moves, weights, offsets, rows_cells, rows_tuple, layout)
            if learn:
                # V(after) is re-read: the previous update may have moved weights it shares.
                target = r2 + v2 if a2 >= 0 else 0.0
                if coherence_e.shape[0]:
                    v = evaluate_afterstate(after, weights, offsets, rows_cells, rows_tuple, layout)
                    _update_tc(
                        after,
                        target - v,
                        alpha,
                        weights,
                        coherence_e,
                        coherence_a,
                        offsets,
                        rows_cells,
                        rows_tuple,
                        layout,
                    )
                else:
                    _td_update(after, target, alpha, weights, offsets, rows_cells, rows_tuple, layout)
            a, r, after = a2, r2, after2
        best = 0
        for c in range(cells):
            best = max(best, int((b >> np.uint64(4 * c)) & np.uint64(15)))
        top[ep] = best
    return scores, n_moves, top, key


@numba.njit(cache=True, parallel=True)
def train_episodes_parallel(
    episodes_per_thread,
    T,
    p4,
    alpha,
    keys,
    weights,
    offsets,
    rows_cells,
    rows_tuple,
    layout,
    learn,
    coherence_e,
    coherence_a,
):
    """:func:`train_episodes` on ``len(keys)`` threads at once, all updating the same ``weights`` without locks
    ("Hogwild": a rare lost update among millions does not matter to TD, and the order of updates is not
    reproducible).  Thread ``t`` plays ``episodes_per_thread[t]`` games from ``keys[t]`` (updated in place).
    Returns ``(scores, moves, max_exponent)`` over all games (thread-major)."""
    n_threads = keys.shape[0]
    starts = np.zeros(n_threads + 1, np.int64)
    for t in range(n_threads):
        starts[t + 1] = starts[t] + episodes_per_thread[t]
    scores = np.zeros(starts[-1], np.int64)
    n_moves = np.zeros(starts[-1], np.int64)
    top = np.zeros(starts[-1], np.int64)
    for t in numba.prange(n_threads):
        s, m, x, key = train_episodes(
            episodes_per_thread[t],
            T,
            p4,
            alpha,
            keys[t],
            weights,
            offsets,
            rows_cells,
            rows_tuple,
            layout,
            learn,
            coherence_e,
            coherence_a,
            np.zeros(0, np.uint64),
            np.zeros(0, np.int8),
            np.iinfo(np.int64).max,
        )
        keys[t] = key
        scores[starts[t] : starts[t + 1]] = s
        n_moves[starts[t] : starts[t + 1]] = m
        top[starts[t] : starts[t + 1]] = x
    return scores, n_moves, top


@numba.njit(cache=True)
def _act_many(ids, allowed, T, weights, offsets, rows_cells, rows_tuple, layout):
    """Greedy actions ``int64[n]`` for packed boards ``ids uint64[n]``, each among its ``allowed int64[n]``
    (bit a set: action a allowed)."""
    out = np.zeros(ids.shape[0], np.int64)
    for i in range(ids.shape[0]):
        a, _, _, _ = _best_move(
            ids[i], T.rows, T.cols, T.moves, weights, offsets, rows_cells, rows_tuple, layout, allowed[i]
        )
        out[i] = max(a, 0)
    return out


#: Moves per game the trace buffers leave room for (a round that plays more raises: see :func:`traced`).
TRACE_MOVES_PER_GAME = 4096


def trace_buffers(episodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Empty ``(boards uint64[m], actions int8[m])`` for the trace of ``episodes`` games (``m = 0``: no trace)."""
    m = int(episodes) * TRACE_MOVES_PER_GAME
    return np.zeros(m, np.uint64), np.zeros(m, np.int8)


def traced(boards: np.ndarray, actions: np.ndarray, moves: int) -> tuple[np.ndarray, np.ndarray]:
    """The first ``moves`` entries of filled trace buffers; an error if the round played more than they hold."""
    if moves > boards.shape[0]:
        raise RuntimeError(
            f"the round played {moves:,} moves, more than the trace holds ({boards.shape[0]:,}: "
            f"{TRACE_MOVES_PER_GAME} a game); trace fewer games a round"
        )
    return boards[:moves].copy(), actions[:moves].copy()


class TrainingDiverged(RuntimeError):
    """An n-tuple network's weights stopped being finite numbers: its learning rate is too large for the board."""


@dataclass
class TrainStats:
    """A round of training: its games, moves, time, mean score (share won for a game of success), the largest
    tiles reached; with ``trace=True`` every move's board before it (``boards uint64[moves]``) and action
    (``actions int8[moves]``), in the order played."""

    episodes: int
    moves: int
    seconds: float
    mean_score: float
    max_exponent_counts: dict
    boards: np.ndarray | None = None
    actions: np.ndarray | None = None

    @property
    def moves_per_second(self) -> float:
        return self.moves / self.seconds if self.seconds else float("nan")


class NTupleAgent(Agent):
    """Greedy (1-ply) player on an n-tuple afterstate value function; ``train`` learns it by TD(0).

    Any board from 2x2 to 8x8: the packed kernels on at most 16 cells, :mod:`agents.ntuple_wide` beyond.

    ``tuples``: lists of cells (row-major indices); default :data:`DEFAULT_TUPLES` (small boards, 3x3, 4x3, 4x4),
    :func:`wall_tuples` beyond 16 cells.  ``base``: exponents told apart in the weight tables (larger ones are
    clipped to ``base - 1``); default 16 (or cells + 2) up to 16 cells, :data:`WIDE_BASE` beyond.
    ``alpha``: learning rate, divided by the number of weights summed per value (``n_sym * n_tuples``), the
    usual normalisation.  ``init``: initial value of a board (optimistic initialisation when > 0), spread over
    the weights.  ``tc``: temporal coherence learning rates (two more float32 arrays the size of the weights).
    ``stages`` / ``stage_shift``: separate weights for each band of ``2**stage_shift`` in age (see the module
    docstring; 1 stage = one set of weights; default :data:`DEFAULT_STAGES`, else 1).
    ``seed`` fixes the training and play randomness.
    """

    name = "ntuple"
    symmetric = True
    deterministic = True
    cheap_to_evaluate = True

    def __init__(
        self,
        rows: int = 4,
        cols: int = 4,
        tuples=None,
        alpha: float = 0.1,
        init: float = 0.0,
        p4: float = 0.1,
        seed: int = 0,
        tc: bool = False,
        stages: int | None = None,
        stage_shift: int | None = None,
        base: int | None = None,
    ):
        rows, cols = check_shape(rows, cols)
        self.rows, self.cols, self.p4 = rows, cols, float(B.check_p4(p4))
        #: True on boards of at most 16 cells (the packed kernels); beyond, the exponent-array kernels of
        #: :mod:`agents.ntuple_wide`.
        self.packed = is_packable(rows, cols)
        if tuples is None:
            tuples = DEFAULT_TUPLES.get((rows, cols)) if self.packed else wall_tuples(rows, cols)
        if not tuples:
            raise ValueError(f"no default tuples for a {rows}x{cols} board: pass tuples=[[cells...], ...]")
        cells = rows * cols
        for t in tuples:
            if not t or len(set(t)) != len(t) or min(t) < 0 or max(t) >= cells:
                raise ValueError(f"tuple {t} must list distinct cells in [0, {cells - 1}]")
        self.tuples = [list(map(int, t)) for t in tuples]
        top_base = 16 if self.packed else 63
        if base is None:
            base = min(16, cells + 2) if self.packed else WIDE_BASE
        if isinstance(base, bool) or not isinstance(base, int | np.integer) or not 2 <= base <= top_base:
            raise ValueError(
                f"base must be an int in [2, {top_base}] on a {rows}x{cols} board (exponents told apart), got {base!r}"
            )
        self.base = int(base)
        default_stages, default_shift = DEFAULT_STAGES.get((rows, cols), (1, 8))
        stages = default_stages if stages is None else stages
        stage_shift = default_shift if stage_shift is None else stage_shift
        if not (isinstance(stages, int | np.integer) and stages >= 1 and 0 <= stage_shift <= 20):
            raise ValueError(f"stages must be >= 1 and stage_shift in [0, 20], got {stages}, {stage_shift}")
        self.stages, self.stage_shift = int(stages), int(stage_shift)
        sizes = [self.base ** len(t) for t in self.tuples]
        if self.stages * sum(sizes) > 2**31:
            raise ValueError(f"{self.stages * sum(sizes):,} weights: too many (use shorter tuples or fewer stages)")
        self.layout = (self.base, self.stage_shift, self.stages, int(sum(sizes)))
        self.offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        dest = np.argsort(symmetry_tables(rows, cols)[0], axis=1)  # dest[s, cell]: where symmetry s sends a cell
        longest = max(len(t) for t in self.tuples)
        images = []
        for s in range(dest.shape[0]):
            for ti, t in enumerate(self.tuples):
                images.append(([int(dest[s, c]) for c in t] + [-1] * (longest - len(t)), ti))
        self.rows_cells = np.array([cells_ for cells_, _ in images], np.int64)
        self.rows_tuple = np.array([ti for _, ti in images], np.int64)
        self.alpha = float(alpha)
        self.weights = np.full(self.stages * sum(sizes), init / len(images), np.float32)
        self.tc = bool(tc)
        n_tc = self.weights.size if self.tc else 0
        self.coherence_e = np.zeros(n_tc, np.float32)
        self.coherence_a = np.zeros(n_tc, np.float32)
        self.key = np.uint64(np.random.default_rng(seed).integers(0, 2**64, dtype=np.uint64))
        self._T = board_tables(rows, cols) if self.packed else None
        self._lines = None if self.packed else line_tables_for(rows, cols)

    def _args(self):
        return self.weights, self.offsets, self.rows_cells, self.rows_tuple, self.layout

    def value(self, afterstate) -> float:
        """V of one afterstate: a packed ``uint64`` id (boards of at most 16 cells) or an exponent array of the
        board's shape (any board)."""
        if np.ndim(afterstate) == 0:
            if not self.packed:
                raise ValueError(f"a {self.rows}x{self.cols} board has no packed id: pass its exponent array")
            return float(evaluate_afterstate(np.uint64(afterstate), *self._args()))
        grid = self._exponent_rows(afterstate)
        if grid.shape[0] != 1:
            raise ValueError(f"value takes one board, got {grid.shape[0]}")
        if self.packed:
            return float(evaluate_afterstate(np.uint64(B.pack(grid.reshape(self.rows, self.cols))), *self._args()))
        return float(W.evaluate_row(grid, 0, *self._args()))

    def _exponent_rows(self, boards) -> np.ndarray:
        """``boards`` (``(rows, cols)`` or ``(n, rows, cols)`` exponents) as ``uint8 (n, cells)``; a clear error
        for another shape or exponents outside 0..62."""
        arr = np.asarray(boards)
        if arr.shape[-2:] != (self.rows, self.cols):
            raise ValueError(f"boards must have shape (n, {self.rows}, {self.cols}), got {arr.shape}")
        return exponent_rows(arr, self.rows * self.cols)

    def train(
        self, episodes: int, learn: bool = True, threads: int = 1, trace: bool = False, max_moves: int | None = None
    ) -> TrainStats:
        """Play ``episodes`` games, learning unless ``learn=False``; returns scores and speed.

        ``threads`` > 1 plays the games on that many threads sharing the weights (see
        :func:`train_episodes_parallel`): faster, but not reproducible from the seed; 1 is exactly reproducible.
        ``trace`` (one thread only) also returns every move's board and action (:class:`TrainStats`).
        ``max_moves`` (one thread only) stops after that many moves, in the middle of a game if need be; the
        games counted are those begun.  While a step meter is installed (:mod:`env2048.metering`: a suite trainer
        trains) the moves are charged to it and ``max_moves`` is capped by what it has left.
        """
        max_moves = metering.moves_left(max_moves)
        if threads < 1 or (trace and threads != 1) or (max_moves is not None and threads != 1):
            raise ValueError(f"threads must be >= 1 (1 with trace or max_moves), got {threads}")
        if trace and not self.packed:
            raise ValueError(f"trace lists packed boards: not available on a {self.rows}x{self.cols} board")
        t = time.perf_counter()
        alpha = self.alpha / self.rows_cells.shape[0]
        boards, actions = trace_buffers(episodes if trace else 0)
        if not self.packed:
            scores, moves, top = self._train_wide(int(episodes), alpha, learn, threads, max_moves)
            episodes = scores.size
        elif threads == 1:
            scores, moves, top, key = train_episodes(
                int(episodes),
                self._T,
                self.p4,
                alpha,
                self.key,
                *self._args(),
                learn,
                self.coherence_e,
                self.coherence_a,
                boards,
                actions,
                np.iinfo(np.int64).max if max_moves is None else int(max_moves),
            )
            self.key = np.uint64(key)  # numba hands a uint64 back as a Python int; keep the generator state unsigned
            begun = moves >= 0
            scores, moves, top, episodes = scores[begun], moves[begun], top[begun], int(begun.sum())
        else:
            per = np.full(threads, episodes // threads, np.int64)
            per[: episodes % threads] += 1
            keys = self._thread_keys(threads)
            scores, moves, top = train_episodes_parallel(
                per, self._T, self.p4, alpha, keys, *self._args(), learn, self.coherence_e, self.coherence_a
            )
            self.key = np.uint64(keys[-1])
        dt = time.perf_counter() - t
        metering.charge(int(moves.sum()), metering.SIMULATED)
        counts = {int(1 << k): int((top >= k).sum()) for k in np.unique(top)}
        stats = TrainStats(int(episodes), int(moves.sum()), dt, float(scores.mean()) if scores.size else 0.0, counts)
        if (moves == 0).any():  # every game has a first move, unless the values are no longer numbers
            self._check_finite()
        if trace:
            stats.boards, stats.actions = traced(boards, actions, stats.moves)
        return stats

    def _check_finite(self) -> None:
        """:class:`TrainingDiverged` if a weight is a NaN or an infinity."""
        if np.isfinite(self.weights).all():
            return
        raise TrainingDiverged(
            f"the n-tuple network diverged at learning rate {self.alpha} on {self.rows}x{self.cols}: its weights are "
            "no longer finite.  Where several symmetric images of a tuple read one weight, an update moves V by "
            "more than the learning rate says: give a smaller one (experiments.train.td: --schedule)"
        )

    def _train_wide(self, episodes: int, alpha: float, learn: bool, threads: int, max_moves: int | None):
        """A round on the exponent-array kernels: ``(scores, moves, max_exponent)`` of the games begun."""
        shape = (self.rows, self.cols, self._lines, self.p4, alpha)
        tc = (learn, self.coherence_e, self.coherence_a)
        if threads == 1:
            limit = np.iinfo(np.int64).max if max_moves is None else int(max_moves)
            scores, moves, top, key = W.train_episodes_wide(episodes, *shape, self.key, *self._args(), *tc, limit)
            self.key = np.uint64(key)
            begun = moves >= 0
            return scores[begun], moves[begun], top[begun]
        per = np.full(threads, episodes // threads, np.int64)
        per[: episodes % threads] += 1
        keys = self._thread_keys(threads)
        scores, moves, top = W.train_episodes_wide_parallel(per, *shape, keys, *self._args(), *tc)
        self.key = np.uint64(keys[-1])
        return scores, moves, top

    def _thread_keys(self, threads: int) -> np.ndarray:
        """Distinct SplitMix64 streams, one per thread (``uint64[threads]``)."""
        return np.array([self.key], np.uint64) + np.arange(1, threads + 1, dtype=np.uint64) * np.uint64(
            0x9E3779B97F4A7C15
        )

    def act_batch(self, boards, masks):
        if not self.packed:
            flat = self._exponent_rows(boards)
            allowed = np.asarray(masks, bool).reshape(flat.shape[0], 4) @ np.array([1, 2, 4, 8], np.int64)
            return W.act_many_wide(flat, allowed, self.rows, self.cols, self._lines, *self._args())
        boards = np.asarray(boards)
        ids = np.atleast_1d(np.asarray(B.pack(boards.reshape(-1, self.rows, self.cols).astype(np.uint8)), np.uint64))
        allowed = np.asarray(masks, bool).reshape(ids.size, 4) @ np.array([1, 2, 4, 8], np.int64)
        return self._choose(ids, allowed)

    def _choose(self, ids: np.ndarray, allowed: np.ndarray) -> np.ndarray:
        """Greedy actions ``int64[n]`` for packed boards ``uint64[n]``, each among its ``allowed`` bits."""
        return _act_many(ids, allowed, self._T, *self._args())

    def save(self, path) -> None:
        """Weights, tuples, settings, the generator state and (with ``tc``) the coherence accumulators, as ``.npz``:
        a loaded agent plays and trains on exactly as this one would."""
        np.savez(
            path,
            weights=self.weights,
            tuples=np.array(self.tuples, dtype=object),
            rows=self.rows,
            cols=self.cols,
            alpha=self.alpha,
            p4=self.p4,
            key=self.key,
            stages=self.stages,
            stage_shift=self.stage_shift,
            base=self.base,
            tc=self.tc,
            coherence_e=self.coherence_e,
            coherence_a=self.coherence_a,
        )

    @classmethod
    def load(cls, path) -> NTupleAgent:
        data = np.load(path, allow_pickle=True)
        agent = cls(
            int(data["rows"]),
            int(data["cols"]),
            [list(t) for t in data["tuples"]],
            alpha=float(data["alpha"]),
            p4=float(data["p4"]),
            stages=int(data.get("stages", 1)),
            stage_shift=int(data.get("stage_shift", 8)),
            tc=bool(data.get("tc", False)),
            base=int(data["base"]) if "base" in data else None,
        )
        if data["weights"].shape != agent.weights.shape:
            raise ValueError(f"{path}: {data['weights'].shape[0]} weights, the tuples need {agent.weights.shape[0]}")
        agent.weights = data["weights"].astype(np.float32)
        if agent.tc and "coherence_e" in data:
            agent.coherence_e = data["coherence_e"].astype(np.float32)
            agent.coherence_a = data["coherence_a"].astype(np.float32)
        agent.key = np.uint64(data["key"])
        return agent
