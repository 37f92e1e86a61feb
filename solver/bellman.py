"""The backward pass's two Bellman backups, with their lookups issued in groups (group prefetching).

Each chunk of the input goes ``GROUP`` boards at a time: first every lookup key of the group is computed (the
canonical spawned children of afterstates, the canonical afterstates of states' moves) and its home slot in the
:class:`~solver.value_index.ValueIndex` prefetched; then the values are read and combined in exactly the order of
the one-at-a-time kernels of :mod:`solver.kernels` (so every result is the same float, bit for bit).  The core
thus has up to ``GROUP x keys`` misses in flight instead of one.
"""

from __future__ import annotations

import numba
import numpy as np

from env2048.kernels import all_moves_packed, canonical_packed
from env2048.rules import ILLEGAL, PLAY, SUCCESS, outcome_of

from . import buffers
from .kernels import ADVERSARIAL, OPTIMISTIC, RANDOM, _child_canonical, _images, chunk_bounds
from .prefetch import prefetch
from .threads import block_kernel, run_parallel
from .value_index import find, home_slot

#: Boards whose lookups are issued together (afterstates: up to 2 x cells keys each; states: up to 4).
GROUP = 8


@numba.njit(cache=True, inline="always")
def best_of(q, tie_rel, tie_abs):
    """The Bellman max of one state's action values ``q`` (``float64[4]``, -inf for moves it cannot make):
    ``(value, best)`` with ``best`` the bit set (``uint8``) of the actions within the tie tolerance of the max;
    ``(0.0, 0)`` for a state with no move."""
    top = max(max(q[0], q[1]), max(q[2], q[3]))
    if top == -np.inf:
        return 0.0, np.uint8(0)
    tol = tie_rel * max(1.0, abs(top)) + tie_abs
    bits = 0
    for a in range(4):
        if q[a] >= top - tol:
            bits |= 1 << a
    return top, np.uint8(bits)


def afterstate_values_grouped(afterstates, T, p4, model, index2, index4, n_chunks, group):
    """Values of ``afterstates`` (canonical ``uint64[n]``) from their spawned children's: ``(values float64[n],
    missing)``, ``missing`` -1 or the index of an afterstate with a child the indexes lack.  ``T``: the board's
    :class:`~env2048.tables.BoardTables` (or a symmetry subgroup's); ``index2`` /
    ``index4``: value indexes ``(table, values, shift)`` (:class:`~solver.value_index.ValueIndex`) of the
    children with a 2 and with a 4; ``p4`` the probability of a 4, ``model`` the spawn model's code
    (:data:`solver.kernels.RANDOM` ...); ``group`` afterstates' lookups are issued at a time."""
    n = afterstates.shape[0]
    out = buffers.empty(n, np.float64)
    missing = np.full(n_chunks, -1, np.int64)
    bounds = chunk_bounds(n, n_chunks)
    cells = T.sym_shift.shape[1]
    scratch = np.empty((n_chunks, T.sym_shift.shape[0] + 2 * group * cells), np.uint64)
    run_parallel(
        _afterstate_values_chunks,
        n_chunks,
        afterstates,
        T.rows,
        T.cols,
        T.sym_lines,
        T.sym_shift,
        T.sym_bytes,
        float(p4),
        model,
        index2,
        index4,
        bounds,
        group,
        out,
        missing,
        scratch,
    )
    return out, int(missing.max())


@block_kernel
def _afterstate_values_chunks(
    lo_chunk,
    hi_chunk,
    afterstates,
    rows,
    cols,
    sym_lines,
    sym_shift,
    sym_bytes,
    p4,
    model,
    index2,
    index4,
    bounds,
    group,
    out,
    missing,
    scratch,
):
    """Chunks ``lo_chunk .. hi_chunk-1`` of :func:`afterstate_values_grouped`; ``scratch[ch]``: chunk ``ch``'s
    symmetry images and the group's child keys (``uint64[n_sym + 2 * group * cells]``)."""
    cells = sym_shift.shape[1]
    n_sym = sym_shift.shape[0]
    table2, vals2, shift2 = index2
    table4, vals4, shift4 = index4
    with_two = p4 < 1.0
    with_four = p4 > 0.0
    for ch in range(lo_chunk, hi_chunk):
        imgs = scratch[ch, :n_sym]
        keys2 = scratch[ch, n_sym : n_sym + group * cells]
        keys4 = scratch[ch, n_sym + group * cells :]
        for g in range(bounds[ch], bounds[ch + 1], group):
            g_end = min(g + group, bounds[ch + 1])
            k = 0
            for i in range(g, g_end):
                a = afterstates[i]
                _images(a, rows, cols, sym_lines, sym_bytes, imgs)
                for c in range(cells):
                    if (a >> np.uint64(4 * c)) & np.uint64(15):
                        continue
                    if with_two:
                        keys2[k] = _child_canonical(imgs, sym_shift, c, np.uint64(1))
                        prefetch(table2, home_slot(keys2[k], shift2))
                    if with_four:
                        keys4[k] = _child_canonical(imgs, sym_shift, c, np.uint64(2))
                        prefetch(table4, home_slot(keys4[k], shift4))
                    k += 1
            k = 0
            for i in range(g, g_end):
                a = afterstates[i]
                empty = 0
                sum2 = sum4 = 0.0
                lo2 = lo4 = np.inf
                hi2 = hi4 = -np.inf
                for c in range(cells):
                    if (a >> np.uint64(4 * c)) & np.uint64(15):
                        continue
                    empty += 1
                    key = k
                    k += 1
                    if with_two:
                        s = find(table2, shift2, keys2[key])
                        if s < 0:
                            missing[ch] = i
                            continue
                        v = vals2[s, 1]
                        sum2 += v
                        lo2 = min(lo2, v)
                        hi2 = max(hi2, v)
                    if with_four:
                        s = find(table4, shift4, keys4[key])
                        if s < 0:
                            missing[ch] = i
                            continue
                        v = vals4[s, 1]
                        sum4 += v
                        lo4 = min(lo4, v)
                        hi4 = max(hi4, v)
                if empty == 0:
                    missing[ch] = i  # an afterstate always has an empty cell; a full one means a corrupt layer
                    out[i] = np.nan
                    continue
                if model == RANDOM:
                    v = 0.0
                    if with_two:
                        v += (1.0 - p4) * sum2
                    if with_four:
                        v += p4 * sum4
                    out[i] = v / empty
                elif model == ADVERSARIAL:
                    out[i] = min(lo2, lo4)
                else:
                    v = 0.0
                    if with_two:
                        v += (1.0 - p4) * (hi2 if model == OPTIMISTIC else lo2)
                    if with_four:
                        v += p4 * (hi4 if model == OPTIMISTIC else lo4)
                    out[i] = v


@numba.njit(cache=True, parallel=True, nogil=True)
def state_values_grouped(states, T, rules, score_rewards, after_index, n_chunks, tie_rel, tie_abs, group):
    """Bellman max of ``states`` (canonical ``uint64[n]`` of one age): ``(values float64[n], best uint8[n],
    missing)``, ``best`` the bit set of the actions within the tie tolerance ``tie_rel``, ``tie_abs`` of the max
    (:func:`best_of`), ``missing`` -1 or the index of a state with an afterstate ``after_index`` lacks.
    ``after_index``: a value index ``(table, values, shift)`` of the age's afterstates; under ``rules``
    (:mod:`env2048.rules`) moves that succeed are worth their reward + 1, moves that fail their reward; ``group``
    states' lookups are issued at a time.

    On numba's parfors (``prange``), as :func:`solver.kernels.expand_states` (the same moves and canonical
    forms): as a serial kernel on :mod:`solver.threads` the backward pass ran 6-13% slower."""
    n = states.shape[0]
    rows, cols, moves, sym_lines, sym_bytes = T.rows, T.cols, T.moves, T.sym_lines, T.sym_bytes
    a_table, a_vals, a_shift = after_index
    values = np.empty(n, np.float64)
    best = np.zeros(n, np.uint8)
    missing = np.full(n_chunks, -1, np.int64)
    bounds = chunk_bounds(n, n_chunks)
    for ch in numba.prange(n_chunks):
        q = np.empty(4, np.float64)
        # per move of each state of the group: 0 illegal, 1 a success, 3 a failure (no lookup), 2 look up keys[]
        kind = np.empty(4 * group, np.uint8)
        keys = np.empty(4 * group, np.uint64)
        rewards = np.empty(4 * group, np.float64)
        for g in range(bounds[ch], bounds[ch + 1], group):
            g_end = min(g + group, bounds[ch + 1])
            for i in range(g, g_end):
                s = states[i]
                afters, gains = all_moves_packed(s, rows, cols, moves)
                for a in range(4):
                    j = 4 * (i - g) + a
                    after = afters[a]
                    reward = gains[a]
                    outcome = outcome_of(s, after, rules)
                    if outcome == ILLEGAL:
                        kind[j] = 0
                        continue
                    rewards[j] = float(reward) if score_rewards else 0.0
                    if outcome != PLAY:
                        kind[j] = 1 if outcome == SUCCESS else 3
                        continue
                    kind[j] = 2
                    keys[j] = canonical_packed(after, rows, cols, sym_lines, sym_bytes)
                    prefetch(a_table, home_slot(keys[j], a_shift))
            for i in range(g, g_end):
                for a in range(4):
                    j = 4 * (i - g) + a
                    if kind[j] == 0:
                        q[a] = -np.inf
                        continue
                    r = rewards[j]
                    if kind[j] == 1:
                        q[a] = r + 1.0
                    elif kind[j] == 3:
                        q[a] = r
                    else:
                        slot = find(a_table, a_shift, keys[j])
                        if slot < 0:
                            missing[ch] = i
                            q[a] = -np.inf
                            continue
                        q[a] = r + a_vals[slot, 1]
                values[i], best[i] = best_of(q, tie_rel, tie_abs)
    return values, best, missing.max()
