"""The n-tuple TD kernels of :mod:`agents.ntuple` on ``uint8`` exponent arrays: boards beyond 16 cells.

:mod:`agents.ntuple` reads cells from the packed ``uint64`` board (at most 16 cells, exponents up to 15).  These
kernels play the same greedy afterstate player and learn by the same TD(0) (and temporal coherence) on rows of a
``uint8 (n, rows*cols)`` array, moved by :func:`env2048.grid.move_inplace`: any board from 2x2 to 8x8, exponents
up to 62.  The weight layout is the one documented in :mod:`agents.ntuple` (``weights``, ``offsets``,
``rows_cells``, ``rows_tuple``, ``layout``); exponents at or above ``base`` are clipped to ``base - 1``.

Spawns draw the same two SplitMix64 uniforms per tile as the packed kernels and place the tile the same way
(:func:`env2048.grid.spawn_inplace`), so on a board both can play, the same seed and weights play the same games
and learn the same weights to the last bit (``tests/test_ntuple_wide.py``).

Scratch rows of a game (``uint8 (SCRATCH_ROWS, cells)``): 0-3 the afterstates of the four moves of the board in
row :data:`BOARD`, :data:`AFTER` the afterstate last played (the one TD updates next).
"""

from __future__ import annotations

import numba
import numpy as np

from env2048.engine import next_uniform
from env2048.grid import move_inplace, spawn_inplace

#: Scratch row of the board to move, and of the afterstate last played.
BOARD, AFTER = 4, 5
SCRATCH_ROWS = 6


@numba.njit(cache=True)
def evaluate_row(b, i, weights, offsets, rows_cells, rows_tuple, layout):
    """V of the afterstate in row ``i`` of ``b`` (``uint8 (n, cells)``): Σ over symmetric tuple images of the
    weight at the image's index, in the stage of the board's age."""
    base = layout[0]
    cells = b.shape[1]
    exps = np.empty(cells, np.int64)
    age = np.int64(0)
    for c in range(cells):
        e = np.int64(b[i, c])
        age += (np.int64(1) << e) if e else 0
        exps[c] = min(e, base - 1)
    at = min(age >> layout[1], layout[2] - 1) * layout[3]
    width = rows_cells.shape[1]
    total = 0.0
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
def _slots_row(b, i, offsets, rows_cells, rows_tuple, layout, slots):
    """Fill ``slots`` (int64[n_images]) with the weight positions the afterstate in row ``i`` reads."""
    base = layout[0]
    cells = b.shape[1]
    exps = np.empty(cells, np.int64)
    age = np.int64(0)
    for c in range(cells):
        e = np.int64(b[i, c])
        age += (np.int64(1) << e) if e else 0
        exps[c] = min(e, base - 1)
    at = min(age >> layout[1], layout[2] - 1) * layout[3]
    width = rows_cells.shape[1]
    for r in range(rows_cells.shape[0]):
        idx = np.int64(0)
        for k in range(width):
            c = rows_cells[r, k]
            if c < 0:
                break
            idx = idx * base + exps[c]
        slots[r] = at + offsets[rows_tuple[r]] + idx


@numba.njit(cache=True)
def td_update_row(b, i, target, alpha, weights, offsets, rows_cells, rows_tuple, layout, slots):
    """``V += alpha * (target - V)`` for the afterstate in row ``i``, as :func:`agents.ntuple._td_update` does it
    (``slots``: int64[n_images] scratch)."""
    _slots_row(b, i, offsets, rows_cells, rows_tuple, layout, slots)
    value = 0.0
    for r in range(slots.shape[0]):
        value += weights[slots[r]]
    delta = alpha * (target - value)
    for r in range(slots.shape[0]):
        weights[slots[r]] += delta


@numba.njit(cache=True)
def tc_update_row(b, i, error, alpha, weights, coherence_e, coherence_a, offsets, rows_cells, rows_tuple, layout,
                  slots):  # fmt: skip
    """Temporal coherence for the afterstate in row ``i``, as :func:`agents.ntuple._update_tc` does it."""
    _slots_row(b, i, offsets, rows_cells, rows_tuple, layout, slots)
    for r in range(slots.shape[0]):
        j = slots[r]
        rate = abs(coherence_e[j]) / coherence_a[j] if coherence_a[j] > 0 else 1.0
        weights[j] += alpha * rate * error
        coherence_e[j] += error
        coherence_a[j] += abs(error)


@numba.njit(cache=True)
def best_move_row(s, rows, cols, lines, weights, offsets, rows_cells, rows_tuple, layout, allowed):
    """The greedy move of the board in scratch row :data:`BOARD` of ``s``: ``(action, reward, V(afterstate))``
    maximising reward + V over the moves whose bit is set in ``allowed``, the afterstate of move a left in row a;
    action -1 if none is legal."""
    cells = rows * cols
    best_a = -1
    best_v = -np.inf
    best_r = 0
    best_value = 0.0
    for a in range(4):
        if not (allowed >> a) & 1:
            continue
        for c in range(cells):
            s[a, c] = s[BOARD, c]
        reward, changed = move_inplace(s, a, rows, cols, a, lines)
        if not changed:
            continue
        value = evaluate_row(s, a, weights, offsets, rows_cells, rows_tuple, layout)
        if reward + value > best_v:
            best_a, best_v, best_r, best_value = a, reward + value, reward, value
    return best_a, best_r, best_value


@numba.njit(cache=True)
def _spawn(s, i, p4, key):
    key, u_cell = next_uniform(key)
    key, u_tile = next_uniform(key)
    spawn_inplace(s, i, u_cell, u_tile, p4)
    return key


@numba.njit(cache=True)
def train_episodes_wide(n_episodes, rows, cols, lines, p4, alpha, key, weights, offsets, rows_cells, rows_tuple,
                        layout, learn, coherence_e, coherence_a, max_moves):  # fmt: skip
    """:func:`agents.ntuple.train_episodes` on exponent arrays (no trace): ``n_episodes`` greedy games, learning
    if ``learn``, at most ``max_moves`` moves (games not begun get ``moves = -1``).

    Returns ``(scores int64[n], moves int64[n], max_exponent int64[n], key)``; ``weights`` updated in place.
    """
    cells = rows * cols
    s = np.zeros((SCRATCH_ROWS, cells), np.uint8)
    slots = np.empty(rows_cells.shape[0], np.int64)
    scores = np.zeros(n_episodes, np.int64)
    n_moves = np.zeros(n_episodes, np.int64)
    top = np.zeros(n_episodes, np.int64)
    k = 0
    for ep in range(n_episodes):
        if k >= max_moves:
            n_moves[ep:] = -1
            break
        s[BOARD, :] = 0
        key = _spawn(s, BOARD, p4, key)
        key = _spawn(s, BOARD, p4, key)
        a, r, _ = best_move_row(s, rows, cols, lines, weights, offsets, rows_cells, rows_tuple, layout, 15)
        while a >= 0 and k < max_moves:
            k += 1
            scores[ep] += r
            n_moves[ep] += 1
            for c in range(cells):
                s[AFTER, c] = s[a, c]
                s[BOARD, c] = s[a, c]
            key = _spawn(s, BOARD, p4, key)
            a2, r2, v2 = best_move_row(s, rows, cols, lines, weights, offsets, rows_cells, rows_tuple, layout, 15)
            if learn:
                target = r2 + v2 if a2 >= 0 else 0.0
                if coherence_e.shape[0]:
                    v = evaluate_row(s, AFTER, weights, offsets, rows_cells, rows_tuple, layout)
                    tc_update_row(s, AFTER, target - v, alpha, weights, coherence_e, coherence_a, offsets,
                                  rows_cells, rows_tuple, layout, slots)  # fmt: skip
                else:
                    td_update_row(s, AFTER, target, alpha, weights, offsets, rows_cells, rows_tuple, layout, slots)
            a, r = a2, r2
        best = 0
        for c in range(cells):
            best = max(best, int(s[BOARD, c]))
        top[ep] = best
    return scores, n_moves, top, key


@numba.njit(cache=True, parallel=True)
def train_episodes_wide_parallel(episodes_per_thread, rows, cols, lines, p4, alpha, keys, weights, offsets,
                                 rows_cells, rows_tuple, layout, learn, coherence_e, coherence_a):  # fmt: skip
    """:func:`train_episodes_wide` on ``len(keys)`` threads sharing ``weights`` without locks, as
    :func:`agents.ntuple.train_episodes_parallel`.  Returns ``(scores, moves, max_exponent)``, thread-major."""
    n_threads = keys.shape[0]
    starts = np.zeros(n_threads + 1, np.int64)
    for t in range(n_threads):
        starts[t + 1] = starts[t] + episodes_per_thread[t]
    scores = np.zeros(starts[-1], np.int64)
    n_moves = np.zeros(starts[-1], np.int64)
    top = np.zeros(starts[-1], np.int64)
    for t in numba.prange(n_threads):
        sc, m, x, key = train_episodes_wide(
            episodes_per_thread[t], rows, cols, lines, p4, alpha, keys[t], weights, offsets, rows_cells,
            rows_tuple, layout, learn, coherence_e, coherence_a, np.iinfo(np.int64).max,
        )  # fmt: skip
        keys[t] = key
        scores[starts[t] : starts[t + 1]] = sc
        n_moves[starts[t] : starts[t + 1]] = m
        top[starts[t] : starts[t + 1]] = x
    return scores, n_moves, top


@numba.njit(cache=True)
def act_many_wide(boards, allowed, rows, cols, lines, weights, offsets, rows_cells, rows_tuple, layout):
    """Greedy actions ``int64[n]`` for ``boards`` (``uint8 (n, cells)``), each among its ``allowed int64[n]``
    bits (0 where none is legal)."""
    n, cells = boards.shape
    s = np.zeros((SCRATCH_ROWS, cells), np.uint8)
    out = np.zeros(n, np.int64)
    for i in range(n):
        for c in range(cells):
            s[BOARD, c] = boards[i, c]
        a, _, _ = best_move_row(s, rows, cols, lines, weights, offsets, rows_cells, rows_tuple, layout, allowed[i])
        out[i] = max(a, 0)
    return out
