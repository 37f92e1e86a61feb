"""Compact codes of format v2: board ranks within an age, Elias-Fano sets of ranks, quantised values.

**Rank within an age.**  The age (sum of tile values) of a layer fixes the sum of its boards' tiles, so a board
is one of far fewer than ``16**cells`` boards.  Canonical boards (the minimum ID over the symmetries) also hold
in their last cell, the most significant nibble, an exponent no larger than in any other corner (every corner is
moved onto the last cell by some symmetry).  A board's *rank* is its position, in increasing packed-ID order,
among all boards of its age with that property (reachable or not): about 3x fewer than all boards of the age, so
about 1.7 bits fewer per coded ID.  ``C[t, k, h]`` counts the ways cells ``0..k-1`` can hold tiles summing to
``h`` half-units (a tile ``2**e`` is ``2**(e-1)`` half-units) when the last cell holds ``t`` (the other corners
among them then hold ``>= t``); walking the cells from the most significant nibble down, the rank adds, at each
cell, the number of completions that put a smaller allowed exponent there.  Sorted canonical IDs of one age have
sorted ranks.

**Elias-Fano.**  ``n`` sorted distinct ranks below ``u`` (the number of boards of the age) are split into
``L = floor(log2(u / n))`` low bits, bit-packed, and high parts written in unary: bit ``high_i + i`` of the
upper bitvector is set.  Size ``n * (L + 2)`` bits at most; membership and rank queries use a small in-memory
index of every 64th zero of the upper bits (:func:`zero_samples`), built when a layer is first used.

**Values.**  ``float`` code (the ``score`` objective): 0 stays 0; any other value keeps its binary exponent
(re-based to the layer's smallest) and ``FLOAT_MANTISSA_BITS`` mantissa bits, rounded to nearest: relative error
<= ``2**-(FLOAT_MANTISSA_BITS + 1)``.  ``fixed`` code (``tile:K`` probabilities in [0, 1]): ``round(v * 2**s)``
minus the layer's smallest code, ``s = FIXED_SCALE_BITS``: absolute error <= ``2**-(s + 1)``.  Codes are
bit-packed at the width the layer needs.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numba
import numpy as np

from env2048.tables import board_tables

from . import buffers
from .bits import get_field, pack_fields, popcount64, trailing_zeros64, unpack_fields, words_for
from .threads import block_kernel, run_parallel

#: mantissa bits of the ``float`` value code: relative error <= 2**-20 = 9.54e-7 (bound: 1e-6)
FLOAT_MANTISSA_BITS = 19
#: scale of the ``fixed`` value code: absolute error <= 2**-30 = 9.31e-10 (bound: 1e-9)
FIXED_SCALE_BITS = 29
FLOAT_CODE, FIXED_CODE = "float", "fixed"
#: every ``ZERO_SAMPLE``-th zero of an Elias-Fano upper bitvector is indexed for select queries
ZERO_SAMPLE = 64


# ----------------------------------------------------------------------------------------------------------
# Ranks of boards within an age
# ----------------------------------------------------------------------------------------------------------


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
    return RankShape(len(coded), _orbit_of_last(sym_perm, coded), tuple(4 * c for c in coded),
                     sum(e << (4 * c) for c, e in fixed.items()))  # fmt: skip


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


# ----------------------------------------------------------------------------------------------------------
# Elias-Fano sets
# ----------------------------------------------------------------------------------------------------------


def low_bits_for(n: int, universe: int) -> int:
    """Elias-Fano's split: ``floor(log2(universe / n))`` (0 when ``n >= universe`` or ``n == 0``)."""
    if n <= 0 or universe <= n:
        return 0
    return (universe // n).bit_length() - 1


def upper_bits_for(n: int, universe: int, low_bits: int) -> int:
    """Length in bits of the upper bitvector: one 1 per element, one 0 per possible high part (a single 0 for an
    empty set)."""
    if n == 0:
        return 1
    return n + (max(universe, 1) - 1 >> low_bits) + 1


#: Elements per block of a parallel Elias-Fano encode: a multiple of 64, so that a block's low bits fill whole words.
ENCODE_ELEMENTS = 1 << 16


def ef_encode(ranks: np.ndarray, universe: int) -> tuple[np.ndarray, np.ndarray, int]:
    """``(upper uint64[...], lower uint64[...], low_bits)`` of sorted distinct ``ranks`` (``uint64[n]``) below
    ``universe``.  In parallel over blocks of ``ENCODE_ELEMENTS`` elements (the build's writer thread codes every
    layer: serial, it would fall behind the kernels on 16 cores)."""
    ranks = np.ascontiguousarray(ranks, np.uint64)
    n = ranks.size
    blocks = max(1, -(-n // ENCODE_ELEMENTS))
    bad = np.full(blocks, n, np.int64)
    run_parallel(_check_sorted_block, blocks, ranks, np.uint64(universe), ENCODE_ELEMENTS, bad)
    first_bad = int(bad.min())
    if first_bad < n:
        raise ValueError(
            f"ranks must be sorted, distinct and below {universe}; element {first_bad} is {int(ranks[first_bad])}"
        )
    L = low_bits_for(n, universe)
    lower = buffers.zeros(words_for(n * L), np.uint64)
    upper = buffers.zeros(words_for(upper_bits_for(n, universe, L)), np.uint64)
    head_word = np.zeros(blocks, np.int64)
    head_bits = np.zeros(blocks, np.uint64)
    run_parallel(_ef_encode_block, blocks, ranks, np.uint64(L), ENCODE_ELEMENTS, lower, upper, head_word, head_bits)
    np.bitwise_or.at(upper, head_word, head_bits)  # a block's first upper word may be shared with the one before
    return upper, lower, L


@block_kernel
def _check_sorted_block(lo, hi, ranks, universe, per_block, bad):
    """``bad[b]``: the first element of block ``b`` (``per_block`` elements) not below ``universe`` or not above
    the element before it."""
    n = ranks.shape[0]
    for b in range(lo, hi):
        for i in range(b * per_block, min((b + 1) * per_block, n)):
            if ranks[i] >= universe or (i and ranks[i] <= ranks[i - 1]):
                bad[b] = i
                break


@block_kernel
def _ef_encode_block(lo, hi, ranks, low_bits, per_block, lower, upper, head_word, head_bits):
    """Block ``b``'s low bits into ``lower`` (whole words of its own) and its upper bits into ``upper``, except
    those in its first upper word, which the block before may share: they go to ``head_bits[b]``, for
    ``head_word[b]``, and are ORed in afterwards."""
    n = ranks.shape[0]
    mask = (np.uint64(1) << low_bits) - np.uint64(1)
    for b in range(lo, hi):
        start, stop = b * per_block, min((b + 1) * per_block, n)
        if start >= stop:
            continue
        first = np.int64(((ranks[start] >> low_bits) + np.uint64(start)) >> np.uint64(6))
        head_word[b] = first
        for i in range(start, stop):
            if low_bits:
                pos = np.uint64(i) * low_bits
                w = pos >> np.uint64(6)
                off = pos & np.uint64(63)
                field = ranks[i] & mask
                lower[w] |= field << off
                if off + low_bits > np.uint64(64):
                    lower[w + np.uint64(1)] |= field >> (np.uint64(64) - off)
            bit = (ranks[i] >> low_bits) + np.uint64(i)
            word = np.int64(bit >> np.uint64(6))
            if word == first:
                head_bits[b] |= np.uint64(1) << (bit & np.uint64(63))
            else:
                upper[word] |= np.uint64(1) << (bit & np.uint64(63))


#: Upper-bitvector words per block of a parallel Elias-Fano decode.
DECODE_WORDS = 1 << 14


def ef_decode(upper, lower, n, low_bits):
    """All ``n`` elements (``uint64[n]``, sorted) of an Elias-Fano set.  In parallel over runs of the upper
    bitvector's words: each run's first element is the number of ones before it, counted in parallel first (a
    serial decode would be the backward pass's one serial step on 16 cores)."""
    out = buffers.empty(n, np.uint64)
    n = int(n)
    words = upper.shape[0]
    runs = max(1, -(-words // DECODE_WORDS))
    edges = np.linspace(0, words, runs + 1).astype(np.int64)
    first = np.zeros(runs + 1, np.int64)
    run_parallel(_count_ones_block, runs, upper, edges, first[1:])
    np.cumsum(first, out=first)
    run_parallel(_ef_decode_block, runs, upper, lower, n, np.uint64(low_bits), edges, first, out)
    return out


@block_kernel
def _count_ones_block(lo, hi, upper, edges, ones):
    for run in range(lo, hi):
        total = 0
        for w in range(edges[run], edges[run + 1]):
            total += np.int64(popcount64(upper[w]))
        ones[run] = total


@block_kernel
def _ef_decode_block(lo, hi, upper, lower, n, low_bits, edges, first, out):
    for run in range(lo, hi):
        i = first[run]
        for w in range(edges[run], edges[run + 1]):
            word = upper[w]
            while word and i < n:
                t = trailing_zeros64(word)
                high = np.uint64(w * 64) + t - np.uint64(i)
                out[i] = (high << low_bits) | get_field(lower, i, low_bits)
                word &= word - np.uint64(1)
                i += 1


@numba.njit(cache=True, nogil=True)
def zero_samples(upper, n_bits):
    """``int64[k]``: the bit position of zero number ``ZERO_SAMPLE * t`` of the upper bitvector (select index)."""
    n_zeros = 0
    n_words = (n_bits + 63) // 64
    for w in range(n_words):
        valid = min(64, n_bits - 64 * w)
        n_zeros += valid - popcount64(upper[w])
    out = np.empty((n_zeros + ZERO_SAMPLE - 1) // ZERO_SAMPLE, np.int64)
    seen = 0
    for w in range(n_words):
        valid = min(64, n_bits - 64 * w)
        zeros = ~upper[w]
        if valid < 64:
            zeros &= (np.uint64(1) << np.uint64(valid)) - np.uint64(1)
        c = popcount64(zeros)
        # samples falling in this word: zero numbers seen .. seen + c - 1 that are multiples of ZERO_SAMPLE
        nxt = (seen + ZERO_SAMPLE - 1) // ZERO_SAMPLE * ZERO_SAMPLE
        while nxt < seen + c:
            z = zeros
            for _ in range(nxt - seen):
                z &= z - np.uint64(1)
            out[nxt // ZERO_SAMPLE] = 64 * w + trailing_zeros64(z)
            nxt += ZERO_SAMPLE
        seen += c
    return out


@numba.njit(cache=True, inline="always")
def _select0(upper, samples, j):
    """Bit position of zero number ``j`` (0-based) of the upper bitvector."""
    p = samples[j // ZERO_SAMPLE]
    need = j % ZERO_SAMPLE
    if need == 0:
        return p
    pos = p + 1
    wi = pos >> 6
    word = ~upper[wi] & (~np.uint64(0) << np.uint64(pos & 63))
    while True:
        c = popcount64(word)
        if c >= need:
            for _ in range(need - 1):
                word &= word - np.uint64(1)
            return wi * 64 + np.int64(trailing_zeros64(word))
        need -= c
        wi += 1
        word = ~upper[wi]


@numba.njit(cache=True, inline="always")
def ef_find(upper, samples, lower, n, n_bits, low_bits, r):
    """Index of rank ``r`` in an Elias-Fano set of ``n`` elements, or -1 if absent."""
    high_bits = r >> np.uint64(low_bits)
    # beyond the largest possible high part: outside the universe (compared unsigned: a rank of 2**63 or more
    # would turn negative as an int64 and index before the select samples)
    if high_bits >= np.uint64(n_bits - n):
        return -1
    high = np.int64(high_bits)
    pos = 0 if high == 0 else _select0(upper, samples, high - 1) + 1
    i = pos - high
    mask = (np.uint64(1) << np.uint64(low_bits)) - np.uint64(1)
    low = r & mask
    while pos < n_bits and (upper[pos >> 6] >> np.uint64(pos & 63)) & np.uint64(1):
        got = get_field(lower, i, low_bits)
        if got == low:
            return i
        if got > low:
            return -1
        pos += 1
        i += 1
    return -1


def ef_find_many(upper, samples, lower, n, n_bits, low_bits, ranks):
    """``int64[m]``: :func:`ef_find` of each rank (``uint64[m]``)."""
    out = np.empty(ranks.shape[0], np.int64)
    run_parallel(_ef_find_block, ranks.shape[0], upper, samples, lower, n, n_bits, low_bits, ranks, out,
                 min_block=1 << 12)  # fmt: skip
    return out


@block_kernel
def _ef_find_block(lo, hi, upper, samples, lower, n, n_bits, low_bits, ranks, out):
    for i in range(lo, hi):
        out[i] = ef_find(upper, samples, lower, n, n_bits, low_bits, ranks[i])


# ----------------------------------------------------------------------------------------------------------
# Values
# ----------------------------------------------------------------------------------------------------------


@numba.njit(cache=True, nogil=True)
def _float_parts(values, m):
    """Rounded ``(exponent int64[n], mantissa uint64[n])`` of non-negative finite normal values (0 -> exponent
    -2**31); returns also the index of the first invalid value or -1."""
    n = values.shape[0]
    exps = np.empty(n, np.int64)
    mants = np.empty(n, np.uint64)
    drop = np.uint64(52 - m)
    half = np.uint64(1) << (drop - np.uint64(1))
    bad = -1
    raw = values.view(np.uint64)
    for i in range(n):
        v = values[i]
        if v == 0.0:
            exps[i] = -(1 << 31)
            mants[i] = 0
            continue
        bits = raw[i]
        e = np.int64((bits >> np.uint64(52)) & np.uint64(0x7FF))
        if not (v > 0.0) or e == 0 or e == 0x7FF:
            if bad < 0:
                bad = i
            exps[i] = 0
            mants[i] = 0
            continue
        q = ((bits & np.uint64((1 << 52) - 1)) + half) >> drop
        if q >> np.uint64(m):
            q = np.uint64(0)
            e += 1
        exps[i] = e - 1023
        mants[i] = q
    return exps, mants, bad


def encode_values(values: np.ndarray, code: str) -> tuple[np.ndarray, int, int]:
    """``(words uint64[...], width, base)``: ``values`` (``float64[n]``) quantised by ``code`` and bit-packed.

    ``base`` is the layer's smallest binary exponent (``float``) or smallest code (``fixed``)."""
    values = np.ascontiguousarray(values, np.float64)
    if code == FLOAT_CODE:
        m = FLOAT_MANTISSA_BITS
        exps, mants, bad = _float_parts(values, m)
        if bad >= 0:
            raise ValueError(f"value {values[bad]!r} (index {bad}) is not a non-negative finite normal number")
        nonzero = values != 0
        base = int(exps[nonzero].min()) if nonzero.any() else 0
        codes = np.where(nonzero, ((exps - base + 1).astype(np.uint64) << np.uint64(m)) | mants, np.uint64(0))
    elif code == FIXED_CODE:
        if values.size and not (np.isfinite(values).all() and values.min() >= 0.0 and values.max() <= 1.0):
            raise ValueError("fixed-point values must be probabilities in [0, 1]")
        raw = np.floor(values * float(1 << FIXED_SCALE_BITS) + 0.5).astype(np.uint64)
        base = int(raw.min()) if raw.size else 0
        codes = raw - np.uint64(base)
    else:
        raise ValueError(f"unknown value code {code!r}; known: {FLOAT_CODE}, {FIXED_CODE}")
    width = int(codes.max()).bit_length() if codes.size else 0
    return pack_fields(codes, width), width, base


@numba.njit(cache=True, inline="always")
def decode_value(c, is_float, base):
    """Value of one code (see :func:`encode_values`)."""
    if is_float:
        if c == 0:
            return 0.0
        m = FLOAT_MANTISSA_BITS
        e = np.int64(c >> np.uint64(m)) - 1 + base
        q = c & np.uint64((1 << m) - 1)
        return math.ldexp(1.0 + float(q) / float(1 << m), e)
    return float(c + np.uint64(base)) / float(1 << FIXED_SCALE_BITS)


@numba.njit(cache=True, nogil=True)
def _decode_all(words, n, width, is_float, base):
    out = np.empty(n, np.float64)
    for i in range(n):
        out[i] = decode_value(get_field(words, i, width), is_float, base)
    return out


def decode_values(words: np.ndarray, n: int, width: int, code: str, base: int) -> np.ndarray:
    """``float64[n]``: the values of :func:`encode_values`'s output."""
    return _decode_all(words, n, width, code == FLOAT_CODE, base)


def value_error_bound(code: str) -> tuple[float, float]:
    """``(relative, absolute)`` error bound of a value code."""
    if code == FLOAT_CODE:
        return 2.0 ** -(FLOAT_MANTISSA_BITS + 1), 0.0
    return 0.0, 2.0 ** -(FIXED_SCALE_BITS + 1)


def value_code_for(objective: str) -> str:
    """``float`` for the score objective (relative bound), ``fixed`` for ``tile:K`` probabilities."""
    return FLOAT_CODE if objective == "score" else FIXED_CODE


__all__ = [
    "FIXED_CODE",
    "FLOAT_CODE",
    "RankShape",
    "compress",
    "expand",
    "pattern_rank_shape",
    "plain_rank_shape",
    "shape_boards",
    "shape_prefix_tables",
    "shape_ranks",
    "shape_universe",
    "board_rank",
    "boards_of_age",
    "boards_of_ranks",
    "decode_value",
    "decode_values",
    "ef_decode",
    "ef_encode",
    "ef_find",
    "ef_find_many",
    "encode_values",
    "rank_tables",
    "prefix_tables",
    "ranks_of",
    "unpack_fields",
    "value_code_for",
    "value_error_bound",
    "words_for",
    "zero_samples",
]
