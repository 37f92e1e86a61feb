"""The backward pass's value index (solver.value_index), grouped Bellman kernels (solver.bellman) and moves kept
apart from the Bellman max (solver.moves) against slow pure-Python references: every result equal, float for float,
for any group size and partitioned build."""

from __future__ import annotations

import math

import numba
import numpy as np
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from env2048.rules import plain_rules
from env2048.tables import board_tables
from solver import value_index as VI
from solver.bellman import afterstate_values_grouped, state_values_grouped
from solver.kernels import ADVERSARIAL, OPTIMISTIC, PESSIMISTIC, RANDOM
from solver.moves import Moves, _state_moves, afterstates_of, state_values_from_moves
from solver.value_index import build_value_index, find

import naive
from conftest import PACKED_SHAPES, boards


@numba.njit(cache=True)
def find_all(table, shift, keys):
    out = np.empty(keys.shape[0], np.int64)
    for i in range(keys.shape[0]):
        out[i] = find(table, shift, keys[i])
    return out


def check_index(ids: np.ndarray, values: np.ndarray, absent: np.ndarray, parallel_min: int = VI.PARALLEL_MIN) -> None:
    index = build_value_index(ids, values, parallel_min)
    slots = find_all(index.table, index.shift, ids)
    assert (slots >= 0).all()
    assert np.array_equal(index.values[slots, 1], values)
    assert (find_all(index.table, index.shift, absent) < 0).all()
    assert np.count_nonzero(index.table[:, 0]) == ids.size


@given(
    st.lists(st.integers(1, 2**48), max_size=300, unique=True),
    st.lists(st.integers(1, 2**48), max_size=30),
    st.booleans(),
)
def test_value_index_holds_exactly_the_members(members, probes, partitioned):
    """``partitioned``: the parallel build even on a few keys (tiny partitions, so many keys go to the serial
    rest: the path large tables take at partition ends)."""
    ids = np.array(sorted(members), np.uint64)
    absent = np.array([p for p in probes if p not in set(members)], np.uint64)
    check_index(ids, np.arange(ids.size, dtype=np.float64) * 0.25 - 7.0, absent, 0 if partitioned else 1 << 16)


def test_large_value_index_built_in_parallel():
    rng = np.random.default_rng(5)
    ids = np.unique(rng.integers(1, 2**44, 400_000, dtype=np.uint64))
    absent = np.setdiff1d(rng.integers(1, 2**44, 5_000, dtype=np.uint64), ids)
    check_index(ids, rng.standard_normal(ids.size), absent)


def _spawned_value(grid, p4, model, values):
    """The spawn model's aggregate of the children's values, in the kernel's order (cell by cell)."""
    sum2 = sum4 = 0.0
    v2s, v4s = [], []
    empties = naive.empty_cells(grid)
    for r, c in empties:
        for tile, acc in ((1, v2s), (2, v4s)):
            if (tile == 1 and p4 == 1.0) or (tile == 2 and p4 == 0.0):
                continue
            child = [row[:] for row in grid]
            child[r][c] = tile
            acc.append(values[naive.canonical(child)])
    for v in v2s:
        sum2 += v
    for v in v4s:
        sum4 += v
    if model == RANDOM:
        v = 0.0
        if p4 < 1.0:
            v += (1.0 - p4) * sum2
        if p4 > 0.0:
            v += p4 * sum4
        return v / len(empties)
    if model == ADVERSARIAL:
        return min(v2s + v4s)
    pick = max if model == OPTIMISTIC else min
    v = 0.0
    if p4 < 1.0:
        v += (1.0 - p4) * pick(v2s)
    if p4 > 0.0:
        v += p4 * pick(v4s)
    return v


def _index_of(values: dict) -> VI.ValueIndex:
    ids = np.array(sorted(values), np.uint64)
    return build_value_index(ids, np.array([values[int(i)] for i in ids], np.float64))


@given(
    st.lists(boards(PACKED_SHAPES, max_exp=6, fill=0.4), min_size=1, max_size=25),
    st.sampled_from([0.0, 0.1, 1.0]),
    st.sampled_from([RANDOM, ADVERSARIAL, OPTIMISTIC, PESSIMISTIC]),
    st.sampled_from([1, 3, 16]),
    st.integers(0, 2**32 - 1),
)
@example(  # [[1,2,0],[0,0,0],[1,0,0]] is a 2-spawn child of the first and a 4-spawn child of the second
    [(3, 3, [[1, 2, 0], [0, 0, 0], [0, 0, 0]]), (3, 3, [[1, 0, 0], [0, 0, 0], [1, 0, 0]])], 0.0, RANDOM, 1, 0
)
def test_afterstate_values_grouped_matches_reference(cases, p4, model, group, seed):
    rows, cols, _ = cases[0]
    grids = [g for r, c, g in cases if (r, c) == (rows, cols) and naive.empty_cells(g)]
    if not grids:
        return
    afters = np.unique(np.array([naive.canonical(g) for g in grids], np.uint64))
    rng = np.random.default_rng(seed)
    # one value per board: a board can be a 2-spawn child of one afterstate and a 4-spawn child of another
    values, children = {}, {2: {}, 4: {}}
    for a in afters:
        grid = naive.unpack(int(a), rows, cols)
        for r, c in naive.empty_cells(grid):
            for tile, age_step in ((1, 2), (2, 4)):
                child = [row[:] for row in grid]
                child[r][c] = tile
                key = naive.canonical(child)
                children[age_step][key] = values.setdefault(key, float(rng.standard_normal() * 100))
    T = board_tables(rows, cols)
    got, missing = afterstate_values_grouped(
        afters, T, p4, model, _index_of(children[2]), _index_of(children[4]), 2, group
    )
    assert missing == -1
    expected = [_spawned_value(naive.unpack(int(a), rows, cols), p4, model, values) for a in afters]
    assert got.tolist() == expected


@pytest.mark.slow
@given(
    st.lists(boards(PACKED_SHAPES, max_exp=6, fill=0.3), min_size=1, max_size=25),
    st.booleans(),
    st.sampled_from([16, 5]),
    st.sampled_from([1, 3, 16]),
    st.integers(0, 2**32 - 1),
)
def test_state_values_grouped_matches_reference(cases, score, win_exponent, group, seed):
    rows, cols, _ = cases[0]
    grids = [g for r, c, g in cases if (r, c) == (rows, cols)]
    states = np.unique(np.array([naive.canonical(g) for g in grids], np.uint64))
    rng = np.random.default_rng(seed)
    after_values: dict[int, float] = {}
    expected_values, expected_best = [], []
    for s in states:
        grid = naive.unpack(int(s), rows, cols)
        q = []
        for a in range(4):
            after, reward = naive.move(grid, a)
            if after == grid:
                q.append(-math.inf)
                continue
            r = float(reward) if score else 0.0
            if win_exponent <= 15 and max(max(row) for row in after) >= win_exponent:
                q.append(r + 1.0)
                continue
            key = naive.canonical(after)
            q.append(r + after_values.setdefault(key, float(rng.integers(0, 8)) / 4))  # ties happen
        top = max(q)
        if top == -math.inf:
            expected_values.append(0.0)
            expected_best.append(0)
            continue
        tol = 1e-12 * max(1.0, abs(top))
        expected_values.append(top)
        expected_best.append(sum(1 << a for a in range(4) if q[a] >= top - tol))
    T = board_tables(rows, cols)
    index = _index_of(after_values) if after_values else build_value_index(np.empty(0, np.uint64), np.empty(0))
    rules = plain_rules(rows * cols, win_exponent if win_exponent <= 15 else None)
    values, best, missing = state_values_grouped(states, T, rules, score, index, 2, 1e-12, 0.0, group)
    assert missing == -1
    assert values.tolist() == expected_values and best.tolist() == expected_best
    # in two steps: moves computed once, their afterstates requested, the max from the moves
    moves = Moves(*_state_moves(states, T, rules, score, 2))
    assert afterstates_of(moves, rows * cols).tolist() == sorted(after_values)
    values, best, missing = state_values_from_moves(moves, index, (1e-12, 0.0))
    assert missing == -1
    assert values.tolist() == expected_values and best.tolist() == expected_best


def test_grouped_kernels_report_a_missing_child():
    T = board_tables(2, 3)
    after = np.array([naive.canonical([[1, 0, 0], [0, 0, 0]])], np.uint64)
    empty = build_value_index(np.empty(0, np.uint64), np.empty(0))
    _, missing = afterstate_values_grouped(after, T, 0.1, RANDOM, empty, empty, 1, 4)
    assert missing == 0
    state = np.array([naive.canonical([[1, 0, 1], [0, 0, 0]])], np.uint64)
    rules = plain_rules(6, None)
    _, _, missing = state_values_grouped(state, T, rules, True, empty, 1, 1e-12, 0.0, 4)
    assert missing == 0
    _, _, missing = state_values_from_moves(Moves(*_state_moves(state, T, rules, True, 1)), empty)
    assert missing == 0
