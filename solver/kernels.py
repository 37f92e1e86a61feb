"""Numba kernels of the solver: expansion, spawning and sorted-run merging (the forward pass), and the spawn
helpers the backward pass shares (:mod:`solver.bellman` has its Bellman backups).

Every ID here is a packed canonical ``uint64`` board (see :mod:`env2048.board`); every layer is a sorted array
of unique IDs.  Parallel kernels split their input into contiguous chunks and write only their own chunk's slice
of the outputs, so results never depend on the number of threads; they run as serial ``nogil`` kernels on blocks
of chunks, on :mod:`solver.threads`' pool.
"""

from __future__ import annotations

import numba
import numpy as np

from env2048.kernels import age_packed, all_moves_packed, canonical_packed
from env2048.kernels import symmetry_images_packed as _images
from env2048.rules import ILLEGAL, PLAY, outcome_of

from . import buffers
from .threads import block_kernel, run_parallel

#: spawn model codes, in the order of :data:`solver.spec.SPAWN_MODELS`
RANDOM, ADVERSARIAL, OPTIMISTIC, PESSIMISTIC = 0, 1, 2, 3
from .format.common import TIE_TOLERANCE  # noqa: E402,F401  (re-exported: the kernels' tie rule)


@numba.njit(cache=True)
def chunk_bounds(n, n_chunks):
    """``int64[n_chunks + 1]`` boundaries splitting ``range(n)`` into near-equal contiguous chunks."""
    out = np.empty(n_chunks + 1, np.int64)
    for k in range(n_chunks + 1):
        out[k] = (n * k) // n_chunks
    return out


@numba.njit(cache=True)
def radix_sort(keys, tmp, key_bits):
    """Sort ``keys`` (``uint64``, values below ``2**key_bits``) in place by LSD radix passes of <= 12 bits;
    ``tmp`` is scratch of the same length.  Passes where every key has the same digit are skipped."""
    n = keys.shape[0]
    passes = max(1, (key_bits + 11) // 12)
    digit_bits = (key_bits + passes - 1) // passes
    n_buckets = 1 << digit_bits
    mask = np.uint64(n_buckets - 1)
    counts = np.empty(n_buckets, np.int64)
    src, dst = keys, tmp
    for p in range(passes):
        shift = np.uint64(p * digit_bits)
        counts[:] = 0
        for i in range(n):
            counts[(src[i] >> shift) & mask] += 1
        if counts[(src[0] >> shift) & mask] == n:
            continue
        total = 0
        for d in range(n_buckets):
            c = counts[d]
            counts[d] = total
            total += c
        for i in range(n):
            d = (src[i] >> shift) & mask
            dst[counts[d]] = src[i]
            counts[d] += 1
        src, dst = dst, src
    if src is not keys:
        keys[:] = src


@numba.njit(cache=True)
def _sort_unique_inplace(buf, lo, hi, key_bits):
    """Sort ``buf[lo:hi]`` and compact its unique values to the front; returns their count."""
    if hi <= lo:
        return 0
    seg = buf[lo:hi]
    radix_sort(seg, np.empty_like(seg), key_bits)
    k = 1
    for j in range(1, hi - lo):
        if seg[j] != seg[k - 1]:
            seg[k] = seg[j]
            k += 1
    return k


@numba.njit(cache=True, inline="always")
def _merge_two(a, a_lo, a_n, b, b_lo, b_n, out, o_lo):
    """Merge two sorted unique runs into ``out[o_lo:]`` without duplicates; returns the merged length.

    Branch-free: each step writes the smaller head and advances the run(s) holding it (both on a tie), so the
    core never mispredicts which run comes next (about 1.4x faster on the forward pass's runs)."""
    i = j = k = 0
    while i < a_n and j < b_n:
        x = a[a_lo + i]
        y = b[b_lo + j]
        out[o_lo + k] = min(x, y)
        i += x <= y
        j += y <= x
        k += 1
    while i < a_n:
        out[o_lo + k] = a[a_lo + i]
        i += 1
        k += 1
    while j < b_n:
        out[o_lo + k] = b[b_lo + j]
        j += 1
        k += 1
    return k


#: Elements per partition of :func:`merge_runs` (512 KiB of keys: a partition's merging stays in L2).
MERGE_PART = 1 << 16


@numba.njit(cache=True, inline="always")
def _lower_bound(a, lo, hi, key):
    """First index in ``[lo, hi)`` of sorted ``a`` with ``a[i] >= key`` (``hi`` if none)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True)
def _splitters(buf, starts, counts, n_parts):
    """``n_parts - 1`` non-decreasing keys cutting the union of the runs into near-equal parts: every
    ``(8 n_parts)``-th element of the runs taken together, sorted, then every 8th of those."""
    total = counts.sum()
    n_samples = 8 * n_parts
    samples = np.empty(n_samples, np.uint64)
    r = 0
    seen = 0  # elements in runs before run r
    for k in range(n_samples):
        pos = (k * total) // n_samples
        while pos >= seen + counts[r]:
            seen += counts[r]
            r += 1
        samples[k] = buf[starts[r] + pos - seen]
    radix_sort(samples, np.empty_like(samples), 64)  # (numba's quicksort would be one more compilation)
    return samples[8::8][: n_parts - 1].copy()


def merge_runs(buf, starts, counts, part=MERGE_PART):
    """Union of sorted unique runs ``buf[starts[r] : starts[r] + counts[r]]`` (``uint64``; starts increasing, each
    run within its own slot ``[starts[r], starts[r+1])``): a sorted unique ``uint64`` array.  ``buf`` is
    overwritten.

    Every run is cut at the same splitter keys into about ``total / part`` key ranges; each range's pieces are
    gathered and merged pair by pair on one thread, in cache, and the ranges are concatenated.  Every step is
    parallel, whatever the number of runs, so the merge scales with the cores (merging whole runs pair by pair
    leaves most cores idle in its last levels)."""
    starts = np.asarray(starts, np.int64)
    counts = np.asarray(counts, np.int64)
    n_runs = starts.shape[0]
    total = int(counts.sum())
    if n_runs == 0 or total == 0:
        return np.empty(0, np.uint64)
    n_parts = max(1, min(total // part, (1 << 22) // n_runs))  # cuts[] at most 32 MiB
    splitters = _splitters(buf, starts, counts, n_parts)
    cuts = np.empty((n_runs, n_parts + 1), np.int64)  # run r's piece of part p: [cuts[r, p], cuts[r, p + 1])
    run_parallel(_cut_runs, n_runs, buf, starts, counts, splitters, cuts)
    offsets = np.zeros(n_parts + 1, np.int64)  # part p's pieces, gathered: [offsets[p], offsets[p + 1])
    np.cumsum(np.diff(cuts, axis=1).sum(axis=0), out=offsets[1:])
    gathered = buffers.empty(total, np.uint64)
    run_parallel(_gather_parts, n_parts, buf, cuts, offsets, gathered)
    # merge each part's pieces pair by pair, between ``gathered`` and ``buf`` (free from here on)
    unique = np.empty(n_parts, np.int64)
    in_buf = np.zeros(n_parts, np.bool_)
    run_parallel(_merge_parts, n_parts, gathered, buf, cuts, offsets, unique, in_buf)
    out_offsets = np.zeros(n_parts + 1, np.int64)
    np.cumsum(unique, out=out_offsets[1:])
    out = buffers.empty(out_offsets[-1], np.uint64)
    run_parallel(_concatenate_parts, n_parts, gathered, buf, in_buf, offsets, out_offsets, out)
    return out


@block_kernel
def _cut_runs(lo, hi, buf, starts, counts, splitters, cuts):
    """Runs ``lo .. hi-1``: ``cuts[r]``, where each splitter falls in run ``r``."""
    n_parts = cuts.shape[1] - 1
    for r in range(lo, hi):
        at, end = starts[r], starts[r] + counts[r]
        cuts[r, 0] = at
        for p in range(1, n_parts):
            at = _lower_bound(buf, at, end, splitters[p - 1])
            cuts[r, p] = at
        cuts[r, n_parts] = end


@block_kernel
def _gather_parts(lo, hi, buf, cuts, offsets, gathered):
    """Parts ``lo .. hi-1``: copy each run's piece of part ``p`` to ``gathered[offsets[p]:]``, run after run."""
    for p in range(lo, hi):
        w = offsets[p]
        for r in range(cuts.shape[0]):
            for i in range(cuts[r, p], cuts[r, p + 1]):
                gathered[w] = buf[i]
                w += 1


@numba.njit(cache=True, nogil=True)
def _merge_parts(lo, hi, gathered, scratch, cuts, offsets, unique, in_scratch):
    """Parts ``lo .. hi-1``: merge part ``p``'s pieces pair by pair, between ``gathered`` and ``scratch``, into
    ``unique[p]`` keys at ``offsets[p]`` of ``scratch`` if ``in_scratch[p]``, else of ``gathered``."""
    n_runs = cuts.shape[0]
    st = np.empty(n_runs, np.int64)
    cn = np.empty(n_runs, np.int64)
    for p in range(lo, hi):
        w = offsets[p]
        for r in range(n_runs):
            st[r] = w
            cn[r] = cuts[r, p + 1] - cuts[r, p]
            w += cn[r]
        src, dst = gathered, scratch
        flipped = False
        m = n_runs
        while m > 1:
            half = (m + 1) // 2
            for q in range(half):
                a = 2 * q
                if a + 1 < m:
                    n_out = _merge_two(src, st[a], cn[a], src, st[a + 1], cn[a + 1], dst, st[a])
                else:
                    for k in range(cn[a]):
                        dst[st[a] + k] = src[st[a] + k]
                    n_out = cn[a]
                st[q] = st[a]
                cn[q] = n_out
            src, dst = dst, src
            flipped = not flipped
            m = half
        unique[p] = cn[0]
        in_scratch[p] = flipped


@block_kernel
def _concatenate_parts(lo, hi, gathered, scratch, in_scratch, offsets, out_offsets, out):
    """Parts ``lo .. hi-1``: copy each part's merged keys to ``out[out_offsets[p]:]``."""
    for p in range(lo, hi):
        src = scratch if in_scratch[p] else gathered
        for k in range(out_offsets[p + 1] - out_offsets[p]):
            out[out_offsets[p] + k] = src[offsets[p] + k]


@numba.njit(cache=True, parallel=True, nogil=True)
def expand_states(states, T, cells, rules, n_chunks):
    """States -> their afterstates.

    ``states``: sorted unique canonical ``uint64[n]``; ``T``: the board's :class:`~env2048.tables.BoardTables`;
    ``rules``: the game's rules array (:mod:`env2048.rules`).  Returns ``(buf, starts, counts, n_terminal)``:
    sorted unique runs of canonical afterstates of allowed moves (one run per chunk, ``uint64`` /
    ``int64[n_chunks]`` / ``int64[n_chunks]``; feed them to :func:`merge_runs`) and the number of terminal states
    (no allowed move).  Afterstates of moves that succeed or fail end the game and are left out.

    On numba's parfors (``prange``), with :func:`solver.bellman.state_values_grouped`: as a serial kernel on
    :mod:`solver.threads` it ran 1.3-1.5x slower here (one 4x3 layer, one thread, same inputs), worth more than
    its extra ~5 s of first compilation.
    """
    n = states.shape[0]
    rows, cols, moves, sym_lines, sym_bytes = T.rows, T.cols, T.moves, T.sym_lines, T.sym_bytes
    bounds = chunk_bounds(n, n_chunks)
    buf = np.empty(4 * n, np.uint64)  # numba's allocation: 4 KiB pages (see solver.buffers)
    counts = np.zeros(n_chunks, np.int64)
    terminal = np.zeros(n_chunks, np.int64)
    for ch in numba.prange(n_chunks):
        lo, hi = bounds[ch], bounds[ch + 1]
        w = 4 * lo
        dead = 0
        for i in range(lo, hi):
            s = states[i]
            legal = False
            afters, _ = all_moves_packed(s, rows, cols, moves)
            for a in range(4):
                after = afters[a]
                outcome = outcome_of(s, after, rules)
                if outcome == ILLEGAL:
                    continue
                legal = True
                if outcome != PLAY:
                    continue
                buf[w] = canonical_packed(after, rows, cols, sym_lines, sym_bytes)
                w += 1
            if not legal:
                dead += 1
        counts[ch] = _sort_unique_inplace(buf, 4 * lo, w, 4 * cells)
        terminal[ch] = dead
    return buf, 4 * bounds[:-1], counts, terminal.sum()


@numba.njit(cache=True, inline="always")
def _child_canonical(imgs, sym_shift, cell, tile):
    """Canonical form of ``b | tile << 4*cell`` from the images of ``b`` (see ``BoardTables.sym_shift``)."""
    best = imgs[0] | (tile << sym_shift[0, cell])
    for s in range(1, imgs.shape[0]):
        best = min(best, imgs[s] | (tile << sym_shift[s, cell]))
    return best


def spawn_children(afterstates, T, with_two, with_four, n_chunks):
    """Afterstates -> canonical spawned states: tile 2 children (age + 2) and tile 4 children (age + 4).

    ``afterstates``: canonical ``uint64[n]``; ``T``: the board's :class:`~env2048.tables.BoardTables` (or a
    symmetry subgroup's).  Returns ``(buf2, starts, counts2, buf4, counts4)``: per-chunk sorted
    unique runs for each child age (both share ``starts``).  A tile is spawned only if ``with_two`` /
    ``with_four``.
    """
    n = afterstates.shape[0]
    cells = T.sym_shift.shape[1]
    bounds = chunk_bounds(n, n_chunks)
    buf2 = buffers.empty(cells * n if with_two else 0, np.uint64)
    buf4 = buffers.empty(cells * n if with_four else 0, np.uint64)
    counts2 = np.zeros(n_chunks, np.int64)
    counts4 = np.zeros(n_chunks, np.int64)
    run_parallel(
        _spawn_chunks,
        n_chunks,
        afterstates,
        T.rows,
        T.cols,
        T.sym_lines,
        T.sym_shift,
        T.sym_bytes,
        bool(with_two),
        bool(with_four),
        bounds,
        buf2,
        counts2,
        buf4,
        counts4,
    )
    return buf2, cells * bounds[:-1], counts2, buf4, counts4


@numba.njit(cache=True, nogil=True)
def _spawn_chunks(
    lo_chunk,
    hi_chunk,
    afterstates,
    rows,
    cols,
    sym_lines,
    sym_shift,
    sym_bytes,
    with_two,
    with_four,
    bounds,
    buf2,
    counts2,
    buf4,
    counts4,
):
    """Chunks ``lo_chunk .. hi_chunk-1`` of :func:`spawn_children`."""
    cells = sym_shift.shape[1]
    imgs = np.empty(sym_shift.shape[0], np.uint64)
    for ch in range(lo_chunk, hi_chunk):
        lo, hi = bounds[ch], bounds[ch + 1]
        w2 = w4 = cells * lo
        for i in range(lo, hi):
            a = afterstates[i]
            _images(a, rows, cols, sym_lines, sym_bytes, imgs)
            for c in range(cells):
                shift = np.uint64(4 * c)
                if (a >> shift) & np.uint64(15):
                    continue
                if with_two:
                    buf2[w2] = _child_canonical(imgs, sym_shift, c, np.uint64(1))
                    w2 += 1
                if with_four:
                    buf4[w4] = _child_canonical(imgs, sym_shift, c, np.uint64(2))
                    w4 += 1
        if with_two:
            counts2[ch] = _sort_unique_inplace(buf2, cells * lo, w2, 4 * cells)
        if with_four:
            counts4[ch] = _sort_unique_inplace(buf4, cells * lo, w4, 4 * cells)


@numba.njit(cache=True)
def ages_of(ids, cells):
    """Age (sum of tile values) of each packed board: ``int64[n]``."""
    out = np.empty(ids.shape[0], np.int64)
    for i in range(ids.shape[0]):
        out[i] = age_packed(ids[i], cells)
    return out
