"""Solver kernels against slow pure-Python references."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from env2048 import board as B
from env2048.board import _symmetry_images_bytes
from env2048.rules import plain_rules
from env2048.tables import board_tables
from solver.forward import n_chunks_for
from solver.kernels import (
    MERGE_PART,
    _child_canonical,
    _images,
    expand_states,
    merge_runs,
    radix_sort,
    spawn_children,
)
from solver.threads import block_kernel, run_blocks, run_parallel

import naive
from conftest import PACKED_SHAPES, boards, numba_threads


@given(st.lists(st.integers(0, 2**48 - 1), max_size=300), st.sampled_from([12, 36, 48, 64]))
def test_radix_sort_sorts(values, key_bits):
    keys = np.array([v % (1 << key_bits) if key_bits < 64 else v for v in values], np.uint64)
    expected = sorted(int(k) for k in keys)
    if keys.size:
        radix_sort(keys, np.empty_like(keys), key_bits)
    assert [int(k) for k in keys] == expected


@given(
    st.lists(st.tuples(st.lists(st.integers(1, 500), max_size=40), st.integers(0, 3)), min_size=1, max_size=9),
    st.sampled_from([1, 3, 16, MERGE_PART]),
)
def test_merge_runs_is_sorted_union(runs, part):
    """Runs with slack after them (as the kernels leave), merged in partitions of ``part`` elements."""
    sets = [sorted(set(r)) for r, _ in runs]
    buf = np.array([v for r, (_, slack) in zip(sets, runs, strict=True) for v in r + [999] * slack] + [0], np.uint64)
    counts = np.array([len(r) for r in sets], np.int64)
    slots = counts + np.array([slack for _, slack in runs], np.int64)
    starts = np.concatenate([[0], np.cumsum(slots)[:-1]]).astype(np.int64)
    got = merge_runs(buf, starts, counts, part)
    assert [int(x) for x in got] == sorted(set().union(*sets))


def _grid(board_id, rows, cols):
    return naive.unpack(int(board_id), rows, cols)


@pytest.mark.slow
@given(st.lists(boards(PACKED_SHAPES, max_exp=9), min_size=1, max_size=30))
def test_expand_states_matches_reference(cases):
    rows, cols, _ = cases[0]
    grids = [g for r, c, g in cases if (r, c) == (rows, cols)]
    states = np.unique(np.array([naive.canonical(g) for g in grids], np.uint64))
    T = board_tables(rows, cols)
    rules = plain_rules(rows * cols, None)
    buf, starts, counts, terminal = expand_states(states, T, rows * cols, rules, n_chunks_for(states.size))
    got = merge_runs(buf, starts, counts)
    expected, dead = set(), 0
    for s in states:
        grid = _grid(s, rows, cols)
        afters = [naive.move(grid, a)[0] for a in range(4)]
        legal = [a for a in afters if a != grid]
        dead += not legal
        expected |= {naive.canonical(a) for a in legal}
    assert [int(x) for x in got] == sorted(expected) and terminal == dead


@given(st.lists(boards(PACKED_SHAPES, max_exp=9), min_size=1, max_size=20), st.booleans(), st.booleans())
def test_spawn_children_matches_reference(cases, with_two, with_four):
    rows, cols, _ = cases[0]
    grids = [g for r, c, g in cases if (r, c) == (rows, cols)]
    afters = np.unique(np.array([naive.canonical(g) for g in grids], np.uint64))
    T = board_tables(rows, cols)
    buf2, starts, c2, buf4, c4 = spawn_children(afters, T, with_two, with_four, 3)
    twos, fours = set(), set()
    for a in afters:
        for child, _ in naive.spawn_outcomes(_grid(a, rows, cols), 0.5):
            tile = max(
                child[r][c] for r in range(rows) for c in range(cols) if child[r][c] != _grid(a, rows, cols)[r][c]
            )
            (twos if tile == 1 else fours).add(naive.canonical(child))
    if with_two:
        assert [int(x) for x in merge_runs(buf2, starts, c2)] == sorted(twos)
    if with_four:
        assert [int(x) for x in merge_runs(buf4, starts, c4)] == sorted(fours)


@given(boards(PACKED_SHAPES, max_exp=9), st.integers(0, 15), st.sampled_from([1, 2]))
def test_child_canonical_equals_canonical_of_child(case, cell, tile):
    rows, cols, grid = case
    cell %= rows * cols
    grid[cell // cols][cell % cols] = 0
    b = B.pack(np.array(grid))
    T = board_tables(rows, cols)
    imgs = np.empty(T.sym_shift.shape[0], np.uint64)
    _images(b, rows, cols, T.sym_lines, T.sym_bytes, imgs)
    by_bytes = np.empty_like(imgs)
    _symmetry_images_bytes(b, T.sym_bytes, by_bytes)
    assert imgs.tolist() == by_bytes.tolist()  # row lookups and byte lookups: the same images, in sym_perm's order
    child = b | (np.uint64(tile) << np.uint64(4 * cell))
    assert _child_canonical(imgs, T.sym_shift, cell, np.uint64(tile)) == B.canonical(child, rows, cols)


def test_run_parallel_does_every_item_once_and_reraises():
    with numba_threads(2):
        hits = np.zeros(37, np.int64)

        def count(lo, hi, out):
            out[lo:hi] += 1

        run_parallel(count, hits.size, hits)
        assert hits.tolist() == [1] * 37

        def last_block_fails(lo, hi):
            if hi == 10:
                raise ValueError("the last block")

        with pytest.raises(ValueError, match="the last block"):
            run_parallel(last_block_fails, 10)


@block_kernel
def _count_block(lo, hi, sel, out):
    for j in range(lo, hi):
        out[sel[j]] += 1


@pytest.mark.parametrize("sizes, min_block", [([0, 1, 5, 300, 2, 1000], 1), ([7, 3], 256), ([4000], 16)])
def test_run_blocks_does_every_item_of_every_job_once(sizes, min_block):
    with numba_threads(2):
        hits = np.zeros(sum(sizes), np.int64)
        offsets = np.cumsum([0] + sizes)
        jobs = [(_count_block, n, (np.arange(offsets[k], offsets[k] + n), hits)) for k, n in enumerate(sizes)]
        run_blocks(jobs, min_block)
        assert hits.tolist() == [1] * hits.size

        def last_block_fails(lo, hi):
            if hi == 10:
                raise ValueError("the last block")

        with pytest.raises(ValueError, match="the last block"):
            run_blocks([(_count_block, 5, (np.arange(5), np.zeros(5, np.int64))), (last_block_fails, 10, ())])


def test_a_kernels_first_call_compiles_on_a_pool_thread():
    """The first call of a numba kernel (its compilation) runs on a pool thread, whose Python stack is shallow
    (solver.threads._run_here: CPython 3.11's frame-chunk thrash); later calls run in the calling thread."""
    import threading

    from numba.core import event

    @numba.njit(nogil=True)  # not cached: it compiles on every run of the test
    def fill(lo, hi, out):
        for i in range(lo, hi):
            out[i] = i

    threads = []

    class Listener(event.Listener):
        def on_start(self, ev):
            if ev.data["dispatcher"] is fill:
                threads.append(threading.current_thread().name)

        def on_end(self, ev):
            pass

    out = np.zeros(3, np.int64)
    with event.install_listener("numba:compile", Listener()):
        run_parallel(fill, 3, out, min_block=10)
    assert out.tolist() == [0, 1, 2]
    assert len(threads) == 1 and threads[0].startswith("solver-kernel"), threads
