"""Numba kernels of the oracle: batched Q-values of packed boards against an in-memory table.

The table in memory is two open-addressing hash tables (:func:`solver.kernels.hash_index`): the canonical
states (keys only, for the membership test) and the canonical afterstates with their values.  A lookup is one
or two cache misses, and the four afterstate lookups of a board are independent, so they overlap.
"""

from __future__ import annotations

import numba
import numpy as np

from env2048.board import _canonical_fast, _max_exponent, _move
from solver.kernels import lookup

#: ``status`` codes of :func:`q_values_batch`
OK, NOT_IN_TABLE, AFTERSTATE_MISSING = 0, 1, 2


@numba.njit(cache=True, parallel=True, nogil=True)
def q_values_batch(boards, T, state_index, after_index, win_exponent, score):
    """Q-values of packed states: ``q float64[n, 4]`` (NaN for illegal moves) and ``status int8[n]``.

    ``state_index`` / ``after_index``: hash tables of the states (keys only) and of the afterstates with their
    values.  ``status`` is OK, NOT_IN_TABLE (the canonical board is not a reachable state of the table) or
    AFTERSTATE_MISSING (a legal move's afterstate is absent: a damaged table).  ``score``: rewards count (the
    score objective); otherwise a move making a tile of exponent >= ``win_exponent`` is worth 1.
    """
    n = boards.shape[0]
    rows, cols, moves, sym_lines, sym_bytes = T.rows, T.cols, T.moves, T.sym_lines, T.sym_bytes
    s_keys, _, s_shift = state_index
    a_keys, a_vals, a_shift = after_index
    cells = rows * cols
    q = np.full((n, 4), np.nan)
    status = np.zeros(n, np.int8)
    for i in numba.prange(n):
        b = boards[i]
        if lookup(s_keys, s_shift, _canonical_fast(b, rows, cols, sym_lines, sym_bytes)) < 0:
            status[i] = NOT_IN_TABLE
            continue
        for a in range(4):
            after, reward = _move(b, a, rows, cols, moves)
            if after == b:
                continue
            r = float(reward) if score else 0.0
            if win_exponent <= 15 and _max_exponent(after, cells) >= win_exponent:
                q[i, a] = r + 1.0
                continue
            k = lookup(a_keys, a_shift, _canonical_fast(after, rows, cols, sym_lines, sym_bytes))
            if k < 0:
                status[i] = AFTERSTATE_MISSING
                continue
            q[i, a] = r + a_vals[k]
    return q, status


@numba.njit(cache=True, parallel=True, nogil=True)
def afterstate_values_batch(afters, T, after_index):
    """Values of packed afterstates: ``float64[n]``, NaN where the afterstate is not in the table."""
    n = afters.shape[0]
    rows, cols, sym_lines, sym_bytes = T.rows, T.cols, T.sym_lines, T.sym_bytes
    a_keys, a_vals, a_shift = after_index
    out = np.full(n, np.nan)
    for i in numba.prange(n):
        k = lookup(a_keys, a_shift, _canonical_fast(afters[i], rows, cols, sym_lines, sym_bytes))
        if k >= 0:
            out[i] = a_vals[k]
    return out
