"""Format v2's board ranks within an age.

The age (sum of tile values) of a layer fixes the sum of its boards' tiles, so a board
is one of far fewer than ``16**cells`` boards.  Canonical boards (the minimum ID over the symmetries) also hold
in their last cell, the most significant nibble, an exponent no larger than in any other corner (every corner is
moved onto the last cell by some symmetry).  A board's *rank* is its position, in increasing packed-ID order,
among all boards of its age with that property (reachable or not): about 3x fewer than all boards of the age, so
about 1.7 bits fewer per coded ID.  ``C[t, k, h]`` counts the ways cells ``0..k-1`` can hold tiles summing to
``h`` half-units (a tile ``2**e`` is ``2**(e-1)`` half-units) when the last cell holds ``t`` (the other corners
among them then hold ``>= t``); walking the cells from the most significant nibble down, the rank adds, at each
cell, the number of completions that put a smaller allowed exponent there.  Sorted canonical IDs of one age have
sorted ranks.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numba
import numpy as np

from env2048.tables import board_tables

from .. import buffers
from ..threads import block_kernel, run_parallel


def corner_orbit(rows: int, cols: int) -> int:
    """Bit mask of the cells that a symmetry moves onto the last cell (the most significant nibble), the last
    cell excluded: the corners, for every board shape here.  A canonical board's last cell holds an exponent no
    larger than any of them (else a symmetric image would have a smaller ID)."""
    return _orbit_of_last(board_tables(rows, cols).sym_perm, list(range(rows * cols)))


def _orbit_of_last(sym_perm: np.ndarray, coded: list[int]) -> int:
    """Bit mask, over the positions of ``coded`` (the cells whose nibbles are coded, in increasing order), of the
    coded cells the symmetries ``sym_perm`` move onto the last coded cell, that cell excluded."""
    last = coded[-1]
    sources = set(sym_perm[:, last].tolist()) - {last}
    return sum(1 << k for k, c in enumerate(coded) if c in sources)


class RankShape(NamedTuple):
    """What ranks depend on: the ``cells`` coded nibbles of an ID (bit shifts ``shifts``, increasing), ``fixed``
    the bits of the rest (an endgame pattern's fixed tiles: the same in every board), ``orbit`` the coded cells
    (by position) that a symmetry moves onto the last coded one.  The plain board codes every cell."""

    cells: int
    orbit: int
    shifts: tuple[int, ...]
    fixed: int

    @property
    def identity(self) -> bool:
        """Whether IDs are coded as they are (no fixed cells)."""
        return self.fixed == 0 and self.shifts == tuple(range(0, 4 * self.cells, 4))

    @property
    def shift_array(self) -> np.ndarray:
        return np.array(self.shifts, np.uint64)


def plain_rank_shape(rows: int, cols: int) -> RankShape:
    """Every cell of a ``rows x cols`` board coded, with the board's symmetry group."""
    cells = rows * cols
    return RankShape(cells, corner_orbit(rows, cols), tuple(range(0, 4 * cells, 4)), 0)


def pattern_rank_shape(rows: int, cols: int, fixed: dict[int, int], sym_perm: np.ndarray) -> RankShape:
    """The free cells of a pattern coded (its ``fixed`` cell -> exponent left out), with its symmetry subgroup
    ``sym_perm``: boards with the same fixed tiles compare as their free cells do, so canonical boards keep the
    property ranks rely on, among the free cells."""
    coded = [c for c in range(rows * cols) if c not in fixed]
    return RankShape(
        len(coded),
        _orbit_of_last(sym_perm, coded),
        tuple(4 * c for c in coded),
        sum(e << (4 * c) for c, e in fixed.items()),
    )


@numba.njit(cache=True, inline="always")
def compress(b, shifts):
    """The coded nibbles of ``b`` (at bit ``shifts[k]``) packed as nibble k."""
    out = np.uint64(0)
    for k in range(shifts.shape[0]):
        out |= ((b >> shifts[k]) & np.uint64(15)) << np.uint64(4 * k)
    return out


@numba.njit(cache=True, inline="always")
def expand(c, shifts, fixed):
    """Inverse of :func:`compress`: nibble k of ``c`` back at bit ``shifts[k]``, with the ``fixed`` bits."""
    out = np.uint64(fixed)
    for k in range(shifts.shape[0]):
        out |= ((c >> np.uint64(4 * k)) & np.uint64(15)) << shifts[k]
    return out


@numba.njit(cache=True)
def _compress_all(ids, shifts):
    out = np.empty_like(ids)
    for i in range(ids.shape[0]):
        out[i] = compress(ids[i], shifts)
    return out


@numba.njit(cache=True)
def _expand_all(codes, shifts, fixed):
    out = np.empty_like(codes)
    for i in range(codes.shape[0]):
        out[i] = expand(codes[i], shifts, fixed)
    return out


def shape_universe(shape: RankShape, age: int) -> int:
    """Number of boards of ``shape`` whose coded cells sum to ``age`` and whose last coded cell holds no more than
    its orbit: the universe of that age's ranks."""
    C, _ = _rank_tables(shape.cells, shape.orbit, _half_width(age))
    return int(_universe(C, age // 2, shape.cells))


def shape_ranks(shape: RankShape, ids: np.ndarray, age: int) -> np.ndarray:
    """``uint64[n]`` ranks of canonical boards ``ids`` (``uint64[n]``) of one age."""
    P = _prefix_tables_cached(shape.cells, shape.orbit, _half_width(age))
    coded = ids if shape.identity else _compress_all(ids, shape.shift_array)
    return ranks_of(coded, age // 2, P, shape.cells)


def shape_boards(shape: RankShape, ranks: np.ndarray, age: int) -> np.ndarray:
    """Inverse of :func:`shape_ranks`: the boards (``uint64[n]``) of one age with these ranks."""
    P = _prefix_tables_cached(shape.cells, shape.orbit, _half_width(age))
    boards = boards_of_ranks(ranks, age // 2, P, shape.cells)
    return boards if shape.identity else _expand_all(boards, shape.shift_array, np.uint64(shape.fixed))


def shape_prefix_tables(shape: RankShape, max_age: int) -> np.ndarray:
    """:func:`prefix_tables` of ``shape``."""
    return _prefix_tables_cached(shape.cells, shape.orbit, _half_width(max_age))


@numba.njit(cache=True, inline="always")
def _half(e):
    return 0 if e == 0 else 1 << (e - 1)


@numba.njit(cache=True, inline="always")
def _allowed(k, e, t, orbit):
    """Whether cell ``k`` may hold exponent ``e`` when the last cell holds ``t``."""
    return e >= t or not (orbit >> np.uint64(k)) & np.uint64(1)


@numba.njit(cache=True, nogil=True)
def _count_tables(cells, max_half, orbit):
    """``C[t, k, h]``: ways cells ``0..k-1`` hold tiles summing to ``h`` half-units, the orbit's cells holding
    exponents ``>= t``."""
    C = np.zeros((16, cells, max_half + 1), np.uint64)
    for t in range(16):
        C[t, 0, 0] = 1
        for k in range(cells - 1):
            for h in range(max_half + 1):
                total = np.uint64(0)
                for e in range(16):
                    if _half(e) > h:
                        break
                    if _allowed(k, e, t, orbit):
                        total += C[t, k, h - _half(e)]
                C[t, k + 1, h] = total
    return C


@numba.njit(cache=True, nogil=True)
def _prefix_tables(C, orbit):
    """``P[t, k, h, e]``: ranks skipped by putting exponent ``e`` in cell ``k`` (``k`` < last) with ``h`` half-units
    left for cells ``0..k``, i.e. the sum of ``C[t, k, h - half(e')]`` over allowed ``e' < e``; and
    ``P[t, last, h, 0]``: boards of ``h`` half-units whose last cell holds less than ``t``.  Both grow with ``e``
    (``t``), which unranking uses, and the 16 entries of a cell sit in two cache lines."""
    n_t, cells, width = C.shape
    last = cells - 1
    P = np.zeros((n_t, cells, width, 16), np.uint64)
    for t in range(n_t):
        for k in range(last):
            for h in range(width):
                acc = np.uint64(0)
                for e in range(16):
                    P[t, k, h, e] = acc
                    if _half(e) <= h and _allowed(k, e, t, orbit):
                        acc += C[t, k, h - _half(e)]
        for h in range(width):
            acc = np.uint64(0)
            for t2 in range(t):
                if _half(t2) <= h:
                    acc += C[t2, last, h - _half(t2)]
            P[t, last, h, 0] = acc
    return P


def rank_tables(rows: int, cols: int, max_age: int) -> tuple[np.ndarray, np.uint64]:
    """``(C uint64[16, cells, H+1], orbit uint64)`` for ages up to ``max_age`` (``H`` rounded up to a power of two,
    at least 1024, so that one table serves a whole build): see the module docstring.  Unranking reads them."""
    return _rank_tables(rows * cols, corner_orbit(rows, cols), _half_width(max_age))


def prefix_tables(rows: int, cols: int, max_age: int) -> np.ndarray:
    """``P uint64[16, cells, H+1, 16]`` (see :func:`_prefix_tables`): ranking reads one entry per cell, unranking
    one cell's 16.  4x3 up to its largest age: 201 MB."""
    return _prefix_tables_cached(rows * cols, corner_orbit(rows, cols), _half_width(max_age))


def _half_width(max_age: int) -> int:
    if max_age < 0 or max_age % 2:
        raise ValueError(f"an age is even and >= 0, got {max_age}")
    return 1 << max(10, int(max_age // 2).bit_length())


@functools.lru_cache(maxsize=4)
def _rank_tables(cells: int, orbit: int, half: int) -> tuple[np.ndarray, np.uint64]:
    orbit = np.uint64(orbit)
    C = _count_tables(int(cells), half, orbit)
    C.setflags(write=False)
    return C, orbit


@functools.lru_cache(maxsize=2)
def _prefix_tables_cached(cells: int, orbit: int, half: int) -> np.ndarray:
    C, orbit = _rank_tables(cells, orbit, half)
    P = _prefix_tables(C, orbit)
    P.setflags(write=False)
    return P


@numba.njit(cache=True)
def _universe(C, half_age, cells):
    total = np.uint64(0)
    for t in range(16):
        if _half(t) <= half_age:
            total += C[t, cells - 1, half_age - _half(t)]
    return total


def boards_of_age(rows: int, cols: int, age: int) -> int:
    """Number of ``rows x cols`` boards (exponents 0..15) of tile sum ``age`` whose last cell holds no more than
    the other corners: the universe of that age's ranks (every canonical board of the age is one of them)."""
    return shape_universe(plain_rank_shape(rows, cols), age)


@numba.njit(cache=True, inline="always")
def board_rank(b, half_age, P, cells):
    """Rank of packed canonical board ``b`` among the boards of its age (``half_age`` = age / 2) whose last cell
    is no larger than the other corners, in packed-ID order; ``P`` from :func:`prefix_tables`."""
    last = cells - 1
    t = np.int64((b >> np.uint64(4 * last)) & np.uint64(15))
    r = P[t, last, half_age, 0]
    rem = half_age - _half(t)
    for k in range(last - 1, -1, -1):
        e = np.int64((b >> np.uint64(4 * k)) & np.uint64(15))
        r += P[t, k, rem, e]
        rem -= _half(e)
    return r


def ranks_of(ids, half_age, P, cells):
    """``uint64[n]`` ranks of canonical packed boards ``ids`` (``uint64[n]``) all of age ``2 * half_age``; ``P``
    from :func:`prefix_tables`.  In parallel (:mod:`solver.threads`): on 16 cores the build's writer thread,
    which codes every layer, would otherwise be its slowest step."""
    out = buffers.empty(ids.shape[0], np.uint64)
    run_parallel(_ranks_block, ids.shape[0], ids, half_age, P, cells, out, min_block=1 << 16)
    return out


@block_kernel
def _ranks_block(lo, hi, ids, half_age, P, cells, out):
    for i in range(lo, hi):
        out[i] = board_rank(ids[i], half_age, P, cells)


def boards_of_ranks(ranks, half_age, P, cells):
    """``uint64[n]`` packed boards of age ``2 * half_age`` with the given ranks (``uint64[n]``); ``P`` from
    :func:`prefix_tables`.  Sorted ranks decode fastest (:func:`_unrank_sorted_block`)."""
    out = buffers.empty(ranks.shape[0], np.uint64)
    run_parallel(_unrank_sorted_block, ranks.shape[0], ranks, half_age, P, cells, out, min_block=1 << 12)
    return out


@numba.njit(cache=True, nogil=True)
def _unrank_sorted_block(lo, hi, ranks, half_age, P, cells, out):
    """The boards of ``ranks[lo:hi]`` (the inverse of :func:`board_rank`), redoing only the cells that differ
    from the previous board.

    Cell by cell from the last, a cell's exponent is the largest ``e`` whose prefix ``P[t, k, rem, e]`` is at most
    the rank left (the prefixes grow with ``e``, flat over exponents that cannot be there).  Fixing the cells
    from the last down to ``k`` leaves a contiguous range of ranks, ``[base[k], end[k])``; a rank that falls in
    the previous board's range at level ``k`` shares those cells, so only cells ``k - 1 .. 0`` are chosen again.
    In a sorted layer consecutive boards share most of their cells.  Any order is correct."""
    last = cells - 1
    base = np.zeros(cells, np.uint64)
    end = np.zeros(cells, np.uint64)  # all 0: nothing is shared before the first board
    rem_after = np.zeros(cells, np.int64)
    t = 0
    b = np.uint64(0)
    for i in range(lo, hi):
        r = ranks[i]
        k = 0
        while k < cells and not (base[k] <= r < end[k]):
            k += 1
        if k == cells:  # a new last cell
            t = 0
            while t < 15 and P[t + 1, last, half_age, 0] <= r:
                t += 1
            base[last] = P[t, last, half_age, 0]
            end[last] = P[t + 1, last, half_age, 0] if t < 15 else np.uint64(0xFFFFFFFFFFFFFFFF)
            rem_after[last] = half_age - _half(t)
            b = np.uint64(t) << np.uint64(4 * last)
            k = last
        b &= ~((np.uint64(1) << np.uint64(4 * k)) - np.uint64(1))
        for j in range(k - 1, -1, -1):
            rem = rem_after[j + 1]
            row = P[t, j, rem]
            left = r - base[j + 1]
            e = 0
            while e < 15 and row[e + 1] <= left:
                e += 1
            base[j] = base[j + 1] + row[e]
            end[j] = base[j + 1] + row[e + 1] if e < 15 else end[j + 1]
            rem_after[j] = rem - _half(e)
            b |= np.uint64(e) << np.uint64(4 * j)
        out[i] = b
