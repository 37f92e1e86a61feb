"""The backward pass's first design, kept to compare against (experiments.bench.backward's ``baseline``): one
lookup at a time into ``hash_index`` tables with separate key and value arrays, allocated by numba (4 KiB pages)
and built on one thread.  The solver itself uses :mod:`solver.value_index` and :mod:`solver.bellman`, which give
the same values bit for bit (the benchmark checks it on every run).
"""

from __future__ import annotations

import numba
import numpy as np

from env2048.board import _symmetry_images_bytes as _images
from env2048.kernels import canonical_packed, max_exponent_packed, move_packed
from solver.kernels import ADVERSARIAL, OPTIMISTIC, RANDOM, _child_canonical, chunk_bounds

_HASH_MULT = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(cache=True, nogil=True)
def hash_index(ids, values):
    """Open-addressing hash table of a layer's values: ``(keys uint64[size], vals float64[size], shift)``.

    ``size`` is a power of two >= 2n, ``shift`` the hash's shift; empty slots hold key 0 (the empty board, never
    in a layer).  With an empty ``values`` the table holds keys only (``vals`` is empty): a membership test.
    A value sits in the slot of its key, so a lookup costs one or two cache misses where a binary
    search over the sorted IDs plus a load from the value array cost ~18 dependent loads.
    """
    n = ids.shape[0]
    bits = 2
    while (1 << bits) < 2 * n:
        bits += 1
    size = 1 << bits
    keys = np.zeros(size, np.uint64)
    with_values = values.shape[0] > 0
    vals = np.zeros(size if with_values else 0, np.float64)
    mask = np.uint64(size - 1)
    shift = np.uint64(64 - bits)
    for i in range(n):
        slot = (ids[i] * _HASH_MULT) >> shift
        while keys[slot] != 0:
            slot = (slot + np.uint64(1)) & mask
        keys[slot] = ids[i]
        if with_values:
            vals[slot] = values[i]
    return keys, vals, shift


@numba.njit(cache=True, inline="always")
def lookup(keys, shift, key):
    """Slot of ``key`` in a :func:`hash_index` table (its value is ``vals[slot]``), or -1."""
    mask = np.uint64(keys.shape[0] - 1)
    slot = (key * _HASH_MULT) >> shift
    k = keys[slot]
    while k != key and k != 0:
        slot = (slot + np.uint64(1)) & mask
        k = keys[slot]
    return np.int64(slot) if k == key else np.int64(-1)


@numba.njit(cache=True, parallel=True, nogil=True)
def afterstate_values(afterstates, sym_shift, sym_bytes, p4, model, index2, index4, n_chunks):
    """Value of each afterstate from the values of its spawned children.

    ``index2``: :func:`hash_index` of the states of age + 2 and their values (the tile-2 children);
    ``index4``: age + 4.
    A tile whose probability is 0 (a 4 when p4 = 0, a 2 when p4 = 1) is not considered.
    ``model``: RANDOM (expectation), ADVERSARIAL (minimum over cell and tile), OPTIMISTIC / PESSIMISTIC (tile
    drawn with p4, best / worst cell).  Returns ``(values float64[n], missing)``: ``missing`` is -1, or the
    index of an afterstate with a child absent from the next layers (a corrupt or mismatched layer).
    """
    n = afterstates.shape[0]
    cells = sym_shift.shape[1]
    keys2, vals2, shift2 = index2
    keys4, vals4, shift4 = index4
    out = np.empty(n, np.float64)
    missing = np.full(n_chunks, -1, np.int64)
    bounds = chunk_bounds(n, n_chunks)
    with_two = p4 < 1.0
    with_four = p4 > 0.0
    for ch in numba.prange(n_chunks):
        imgs = np.empty(sym_shift.shape[0], np.uint64)
        for i in range(bounds[ch], bounds[ch + 1]):
            a = afterstates[i]
            _images(a, sym_bytes, imgs)
            empty = 0
            sum2 = sum4 = 0.0
            lo2 = lo4 = np.inf
            hi2 = hi4 = -np.inf
            for c in range(cells):
                shift = np.uint64(4 * c)
                if (a >> shift) & np.uint64(15):
                    continue
                empty += 1
                if with_two:
                    child = _child_canonical(imgs, sym_shift, c, np.uint64(1))
                    k = lookup(keys2, shift2, child)
                    if k < 0:
                        missing[ch] = i
                        continue
                    v = vals2[k]
                    sum2 += v
                    lo2 = min(lo2, v)
                    hi2 = max(hi2, v)
                if with_four:
                    child = _child_canonical(imgs, sym_shift, c, np.uint64(2))
                    k = lookup(keys4, shift4, child)
                    if k < 0:
                        missing[ch] = i
                        continue
                    v = vals4[k]
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
    return out, missing.max()


@numba.njit(cache=True, parallel=True, nogil=True)
def state_values(states, T, cells, win_exponent, score_rewards, after_index, n_chunks, tie_rel, tie_abs):
    """Bellman max over moves: ``V(s) = max_a r(s, a) + V(afterstate)``; terminal states 0.

    ``score_rewards``: True for the score objective (r = merge reward), False for ``tile:K`` (r = 0, and a
    move making a tile of exponent >= ``win_exponent`` is worth 1); ``after_index``: :func:`hash_index` of
    the age's afterstates and their values.  Returns ``(values float64[n], best
    uint8[n], missing)``: ``best`` has bit a set for every action within ``tie_rel * max(1, |max|) + tie_abs``
    of the maximum (the solver uses ``TIE_TOLERANCE``, 0), 0 for terminal states; ``missing`` is -1 or the
    index of a state whose afterstate is absent.
    """
    n = states.shape[0]
    rows, cols, moves, sym_lines, sym_bytes = T.rows, T.cols, T.moves, T.sym_lines, T.sym_bytes
    a_keys, a_vals, a_shift = after_index
    values = np.empty(n, np.float64)
    best = np.zeros(n, np.uint8)
    missing = np.full(n_chunks, -1, np.int64)
    bounds = chunk_bounds(n, n_chunks)
    for ch in numba.prange(n_chunks):
        q = np.empty(4, np.float64)
        for i in range(bounds[ch], bounds[ch + 1]):
            s = states[i]
            top = -np.inf
            for a in range(4):
                after, reward = move_packed(s, a, rows, cols, moves)
                if after == s:
                    q[a] = -np.inf
                    continue
                r = float(reward) if score_rewards else 0.0
                if win_exponent <= 15 and max_exponent_packed(after, cells) >= win_exponent:
                    q[a] = r + 1.0
                else:
                    k = lookup(a_keys, a_shift, canonical_packed(after, rows, cols, sym_lines, sym_bytes))
                    if k < 0:
                        missing[ch] = i
                        q[a] = -np.inf
                        continue
                    q[a] = r + a_vals[k]
                top = max(top, q[a])
            if top == -np.inf:
                values[i] = 0.0
                continue
            values[i] = top
            tol = tie_rel * max(1.0, abs(top)) + tie_abs
            bits = 0
            for a in range(4):
                if q[a] >= top - tol:
                    bits |= 1 << a
            best[i] = bits
    return values, best, missing.max()
