"""Values looked up across a worker's own layers and the pieces its peers send: plain functions on sorted arrays.

A worker values its afterstates from its own states of ages a + 2 and a + 4 with the local build's
:func:`solver.backward.afterstate_values`, answers the crossing afterstates a peer sent it from its sorted afterstates
(:func:`lookup_sorted`), and merges its own afterstates with the received ones into one sorted layer
(:func:`merge_parts`).
"""

from __future__ import annotations

import numba
import numpy as np

from ..forward import merge_unique
from ..kernels import _lower_bound
from ..threads import block_kernel, run_blocks


@numba.njit(cache=True, inline="always")
def _gallop(a, lo, key):
    """The first index ``>= lo`` of the sorted ``a`` with ``a[i] >= key`` (``a.shape[0]`` if none): steps of 1, 2,
    4, ... ahead from ``lo``, then a bisection, so a near key costs a few steps and a far one log steps."""
    n = a.shape[0]
    step = 1
    hi = lo
    while hi < n and a[hi] < key:
        lo = hi + 1
        hi += step
        step *= 2
    return _lower_bound(a, lo, min(hi, n), key)


@numba.njit(cache=True, nogil=True)
def lookup_sorted(ids, values, requests):
    """Values of sorted ``requests`` (``uint64[q]``) in the sorted unique ``ids`` (``uint64[n]``, ``values``
    ``float64[n]`` alongside): ``(float64[q], missing)`` with ``missing`` = -1, or the index of the first request
    not in ``ids``.  One pass, galloping from each match to the next: a short request costs log steps and a long
    one a merge."""
    n = ids.shape[0]
    out = np.empty(requests.shape[0], np.float64)
    lo = 0
    for i in range(requests.shape[0]):
        key = requests[i]
        lo = _gallop(ids, lo, key)
        if lo >= n or ids[lo] != key:
            return out, i
        out[i] = values[lo]
    return out, -1


@block_kernel
def _positions(lo, hi, merged, ids, out):
    """Pieces ``lo .. hi - 1`` of the sorted unique ``ids`` (``uint64[m]``): ``out[i]`` (``int64[m]``) = the index
    of ``ids[i]`` in the sorted unique ``merged`` (``uint64[n]``), or -1 if it is not there.  A binary search for
    the block's first board, then a gallop from each match to the next."""
    n = merged.shape[0]
    if lo >= hi:
        return
    j = _lower_bound(merged, 0, n, ids[lo])
    for i in range(lo, hi):
        j = _gallop(merged, j, ids[i])
        out[i] = j if j < n and merged[j] == ids[i] else -1


@block_kernel
def _place_values(lo, hi, merged, ids, values, out):
    """Pieces ``lo .. hi - 1`` of one sorted piece ``ids`` (``uint64[m]``, every board in the sorted ``merged``,
    ``uint64[n]``): ``out[j] = values[i]`` where ``merged[j] == ids[i]``.  A binary search for the block's first
    board, then a gallop from each match to the next (the same walk as :func:`_positions`, writing values)."""
    n = merged.shape[0]
    if lo >= hi:
        return
    j = _lower_bound(merged, 0, n, ids[lo])
    for i in range(lo, hi):
        j = _gallop(merged, j, ids[i])
        out[j] = values[i]


def positions_in(merged: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """``int64[m]``: where each of the sorted unique ``ids`` (``uint64[m]``) sits in the sorted unique ``merged``
    (``uint64[n]``), -1 for one that is not there; on the solver's threads."""
    out = np.empty(ids.size, np.int64)
    run_blocks([(_positions, ids.size, (merged, ids, out))], min_block=1 << 15)
    return out


def _checked_pieces(id_pieces, value_pieces, who: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    ids = [np.asarray(i, np.uint64) for i in id_pieces]
    values = [np.asarray(v, np.float64) for v in value_pieces]
    if len(ids) != len(values) or any(i.shape != v.shape for i, v in zip(ids, values, strict=False)):
        raise ValueError(f"{who}: every piece of boards needs one value per board")
    return ids, values


def joined_parts(id_pieces, value_pieces) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint pieces of a layer's boards and their values joined in no particular order (``uint64[n]``,
    ``float64[n]``): what a value index is built from, which needs no order (merging them sorted costs a pass that
    finds nothing the hash table would not)."""
    ids, values = _checked_pieces(id_pieces, value_pieces, "joined_parts")
    if len(ids) == 1:
        return ids[0], values[0]
    return np.concatenate(ids), np.concatenate(values)


def merge_parts(id_pieces, value_pieces) -> tuple[np.ndarray, np.ndarray]:
    """A layer's boards (sorted ``uint64[n]``) and their values (``float64[n]``) from disjoint pieces of it, each
    sorted: the boards merged as the forward pass merges its runs, then each piece's values placed at its boards'
    positions, on the solver's threads.  Pieces that share a board are an error (:class:`ValueError`)."""
    ids, values = _checked_pieces(id_pieces, value_pieces, "merge_parts")
    kept = [k for k in range(len(ids)) if ids[k].size]
    if not kept:
        return np.empty(0, np.uint64), np.empty(0, np.float64)
    if len(kept) == 1:
        return ids[kept[0]], values[kept[0]]
    merged = merge_unique([ids[k] for k in kept])
    total = sum(ids[k].size for k in kept)
    if merged.size != total:
        raise ValueError(f"merge_parts: the pieces share {total - merged.size} boards")
    out = np.empty(merged.size, np.float64)
    run_blocks([(_place_values, ids[k].size, (merged, ids[k], values[k], out)) for k in kept], min_block=1 << 15)
    return merged, out
