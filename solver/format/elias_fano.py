"""Format v2's Elias-Fano sets of sorted board ranks.

``n`` sorted distinct ranks below ``u`` (the number of boards of the age) are split into
``L = floor(log2(u / n))`` low bits, bit-packed, and high parts written in unary: bit ``high_i + i`` of the
upper bitvector is set.  Size ``n * (L + 2)`` bits at most; membership and rank queries use a small in-memory
index of every 64th zero of the upper bits (:func:`zero_samples`), built when a layer is first used.
"""

from __future__ import annotations

import numba
import numpy as np

from .. import buffers
from ..bits import get_field, popcount64, trailing_zeros64, words_for
from ..threads import block_kernel, run_parallel

#: every ``ZERO_SAMPLE``-th zero of an Elias-Fano upper bitvector is indexed for select queries
ZERO_SAMPLE = 64


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
    run_parallel(
        _ef_find_block, ranks.shape[0], upper, samples, lower, n, n_bits, low_bits, ranks, out, min_block=1 << 12
    )
    return out


@block_kernel
def _ef_find_block(lo, hi, upper, samples, lower, n, n_bits, low_bits, ranks, out):
    for i in range(lo, hi):
        out[i] = ef_find(upper, samples, lower, n, n_bits, low_bits, ranks[i])
