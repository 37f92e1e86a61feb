"""Value index of a layer: an open-addressing hash table from canonical board ID to value, for the backward pass.

The table is ``uint64[size, 2]``: each 16-byte slot holds a key and its value's bits (a lookup touches one cache
line, where separate key and value arrays cost two misses).  It is allocated by numpy, which asks the kernel for
2 MiB transparent huge pages on large arrays: a random probe then rarely misses the TLB as well as the caches
(on this machine that alone takes a probe from ~416 to ~284 ns, see docs/solver-performance.md).  It is built in
parallel: keys are partitioned by the top bits of their home slot, each partition fills its own range of slots,
and the few keys whose probe sequence would leave their range are inserted afterwards, in order.

``size`` is the smallest power of two with n / size <= ``MAX_LOAD``; ``shift`` makes ``(key * MULT) >> shift`` a
slot; empty slots hold key 0 (the empty board, never in a layer).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from . import buffers
from .kernels import chunk_bounds
from .threads import block_kernel, run_parallel

HASH_MULT = np.uint64(0x9E3779B97F4A7C15)
#: Partitions of a parallel build (each a contiguous range of slots); small tables are built in one.
PARTITIONS = 256
#: Tables of fewer keys are built serially (one partition).
PARALLEL_MIN = 1 << 16


class ValueIndex(NamedTuple):
    """``table uint64[size, 2]`` (key, value bits), ``values float64[size, 2]`` (the same memory; column 1 holds
    the values) and the hash ``shift``."""

    table: np.ndarray
    values: np.ndarray
    shift: np.uint64


#: Largest load factor of a table (linear probing then finds a key within 2.5 slots on average, mostly in the
#: one 64-byte line of four slots its home slot is in).
MAX_LOAD = 0.75


def table_bits(n: int, max_load: float = MAX_LOAD) -> int:
    """log2 of the smallest power-of-two table size at most ``max_load`` full."""
    bits = 2
    while (1 << bits) * max_load < n:
        bits += 1
    return bits


@numba.njit(cache=True, nogil=True)
def _fill_serial(table, as_float, ids, values, shift):
    """Insert every key in order, with wrap-around (small tables)."""
    mask = np.uint64(table.shape[0] - 1)
    for i in range(ids.shape[0]):
        slot = (ids[i] * HASH_MULT) >> shift
        while table[slot, 0] != 0:
            slot = (slot + np.uint64(1)) & mask
        table[slot, 0] = ids[i]
        as_float[slot, 1] = values[i]


def _fill(table, vbits, ids, values, shift, part_bits, n_chunks):
    """Insert ``ids`` (``uint64[n]``) / ``values`` (``float64[n]``) into ``table`` (``uint64[size, 2]``; the values
    go to column 1 of its float view ``vbits``) in ``2**part_bits`` partitions of slots, the input read in
    ``n_chunks`` chunks; returns how many keys did not fit their partition and were inserted afterwards."""
    n = ids.shape[0]
    n_parts = 1 << part_bits
    bounds = chunk_bounds(n, n_chunks)
    # count the keys of each partition in each chunk, then scatter them partition by partition
    counts = np.zeros((n_chunks, n_parts), np.int64)
    run_parallel(_count_parts, n_chunks, ids, bounds, part_bits, counts)
    # chunk ch's keys of partition p go to order[offsets[ch, p]:], partitions in order, chunks in order within
    flat = counts.T.ravel()
    offsets = (np.cumsum(flat) - flat).reshape(n_parts, n_chunks).T.copy()
    starts = np.append(offsets[0], n)
    order_ids = buffers.empty(n, np.uint64)
    order_vals = buffers.empty(n, np.float64)
    run_parallel(_scatter_parts, n_chunks, ids, values, bounds, part_bits, offsets, order_ids, order_vals)
    # each partition fills its own slots; a key that would probe past them waits (``left``)
    left = buffers.zeros(n, np.bool_)
    run_parallel(_fill_parts, n_parts, table, vbits, order_ids, order_vals, starts, shift, left)
    rest = np.flatnonzero(left)
    _fill_serial(table, vbits, order_ids[rest], order_vals[rest], shift)
    return rest.size


@numba.njit(cache=True, inline="always")
def _part_of(key, part_bits):
    return ((key * HASH_MULT) >> np.uint64(64 - part_bits)) if part_bits > 0 else np.uint64(0)


@block_kernel
def _count_parts(lo, hi, ids, bounds, part_bits, counts):
    for ch in range(lo, hi):
        for i in range(bounds[ch], bounds[ch + 1]):
            counts[ch, _part_of(ids[i], part_bits)] += 1


@block_kernel
def _scatter_parts(lo, hi, ids, values, bounds, part_bits, offsets, order_ids, order_vals):
    for ch in range(lo, hi):
        for i in range(bounds[ch], bounds[ch + 1]):
            p = _part_of(ids[i], part_bits)
            order_ids[offsets[ch, p]] = ids[i]
            order_vals[offsets[ch, p]] = values[i]
            offsets[ch, p] += 1


@block_kernel
def _fill_parts(lo, hi, table, vbits, order_ids, order_vals, starts, shift, left):
    part_size = table.shape[0] // (starts.shape[0] - 1)
    for p in range(lo, hi):
        end = (p + 1) * part_size
        for j in range(starts[p], starts[p + 1]):
            key = order_ids[j]
            slot = (key * HASH_MULT) >> shift
            while slot < end and table[slot, 0] != 0:
                slot += np.uint64(1)
            if slot >= end:
                left[j] = True
                continue
            table[slot, 0] = key
            vbits[slot, 1] = order_vals[j]


def build_value_index(
    ids: np.ndarray, values: np.ndarray, parallel_min: int = PARALLEL_MIN, max_load: float = MAX_LOAD
) -> ValueIndex:
    """:class:`ValueIndex` of ``ids`` (``uint64[n]``, unique, no 0) and their ``values`` (``float64[n]``); built
    in partitions from ``parallel_min`` keys on, at most ``max_load`` full."""
    n = ids.shape[0]
    bits = table_bits(n, max_load)
    table = np.zeros((1 << bits, 2), np.uint64)  # numpy's allocation: huge pages for large tables
    as_float = table.view(np.float64)
    values = np.ascontiguousarray(values, np.float64)
    if n < parallel_min:
        _fill_serial(table, as_float, ids, values, np.uint64(64 - bits))
    else:
        part_bits = min(PARTITIONS.bit_length() - 1, bits - 2)
        _fill(table, as_float, ids, values, np.uint64(64 - bits), part_bits, max(1, min(256, n // (1 << 15))))
    return ValueIndex(table, as_float, np.uint64(64 - bits))


_EMPTY = None


def empty_value_index() -> ValueIndex:
    """The index of an empty layer (every lookup misses)."""
    global _EMPTY
    if _EMPTY is None:
        _EMPTY = build_value_index(np.empty(0, np.uint64), np.empty(0, np.float64))
    return _EMPTY


@numba.njit(cache=True, inline="always")
def home_slot(key, shift):
    return (key * HASH_MULT) >> shift


@numba.njit(cache=True, inline="always")
def find(table, shift, key):
    """Slot of ``key`` in a :class:`ValueIndex` table (its value is ``values[slot, 1]``), or -1."""
    mask = np.uint64(table.shape[0] - 1)
    slot = (key * HASH_MULT) >> shift
    k = table[slot, 0]
    while k != key and k != 0:
        slot = (slot + np.uint64(1)) & mask
        k = table[slot, 0]
    return np.int64(slot) if k == key else np.int64(-1)
