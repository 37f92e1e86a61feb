"""Values looked up across a worker's own layers and the pieces its peers send: plain functions on sorted arrays.

A worker values its afterstates from its own states of ages a + 2 and a + 4 with the local build's
:func:`solver.backward.afterstate_values`, answers the crossing afterstates a peer sent it from its sorted afterstates
(:func:`lookup_sorted`), and merges its own afterstates with the received ones into one sorted layer
(:func:`merge_parts`).
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True, nogil=True)
def lookup_sorted(ids, values, requests):
    """Values of sorted ``requests`` (``uint64[q]``) in the sorted unique ``ids`` (``uint64[n]``, ``values``
    ``float64[n]`` alongside): ``(float64[q], missing)`` with ``missing`` = -1, or the index of the first request
    not in ``ids``.  One pass: from the last match it gallops ahead (steps 1, 2, 4, ...) then bisects, so a short
    request costs log steps and a long one a merge."""
    n = ids.shape[0]
    out = np.empty(requests.shape[0], np.float64)
    lo = 0
    for i in range(requests.shape[0]):
        key = requests[i]
        step = 1
        hi = lo
        while hi < n and ids[hi] < key:
            lo = hi + 1
            hi += step
            step *= 2
        hi = min(hi, n)
        while lo < hi:  # first index in [lo, hi) with ids >= key
            mid = (lo + hi) // 2
            if ids[mid] < key:
                lo = mid + 1
            else:
                hi = mid
        if lo >= n or ids[lo] != key:
            return out, i
        out[i] = values[lo]
    return out, -1


def merge_parts(id_pieces, value_pieces) -> tuple[np.ndarray, np.ndarray]:
    """A layer's boards (sorted ``uint64[n]``) and their values (``float64[n]``) from disjoint pieces of it, each
    sorted.  The smaller pieces are sorted together and inserted into the largest: O(n + m log m) for m boards
    outside the largest piece, where sorting them all would cost O(n log n)."""
    ids = [np.asarray(i, np.uint64) for i in id_pieces]
    values = [np.asarray(v, np.float64) for v in value_pieces]
    if not ids:
        return np.empty(0, np.uint64), np.empty(0, np.float64)
    big = max(range(len(ids)), key=lambda i: ids[i].size)
    rest = [i for i in range(len(ids)) if i != big and ids[i].size]
    if not rest:
        return ids[big], values[big]
    rest_ids = np.concatenate([ids[i] for i in rest])
    rest_values = np.concatenate([values[i] for i in rest])
    order = np.argsort(rest_ids, kind="stable")
    at = np.searchsorted(ids[big], rest_ids[order])
    return np.insert(ids[big], at, rest_ids[order]), np.insert(values[big], at, rest_values[order])
