"""uint8 exponent-array kernels (all board sizes) against the pure-Python reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from env2048.grid import grid_age, grid_max_exponent, legal_bits, move_inplace, move_many, spawn_inplace
from env2048.tables import line_tables_for

import naive
from conftest import SHAPES, boards


@given(boards(SHAPES, max_exp=30), st.integers(0, 3))
def test_move_equals_reference(case, action):
    rows, cols, grid = case
    flat = np.array(grid, np.uint8).reshape(1, -1)
    reward, changed = move_inplace(flat, 0, rows, cols, action, line_tables_for(rows, cols))
    ref, ref_reward = naive.move(grid, action)
    assert flat.reshape(rows, cols).tolist() == ref
    assert reward == ref_reward
    assert changed == (ref != grid)


@pytest.mark.slow
@given(
    st.sampled_from(SHAPES).flatmap(lambda shape: st.lists(boards([shape], max_exp=30), min_size=1, max_size=6)),
    st.data(),
)
def test_a_batch_moves_each_board_as_the_reference_does(cases, data):
    rows, cols, _ = cases[0]
    grids = [grid for _, _, grid in cases]
    actions = np.array(data.draw(st.lists(st.integers(0, 3), min_size=len(grids), max_size=len(grids))), np.int64)
    batch = np.array(grids, np.uint8).reshape(len(grids), -1)
    after, reward, changed = move_many(batch, actions, rows, cols, line_tables_for(rows, cols))
    assert (batch == np.array(grids, np.uint8).reshape(len(grids), -1)).all()  # the input is left as it was
    for i, grid in enumerate(grids):
        ref, ref_reward = naive.move(grid, int(actions[i]))
        assert after[i].reshape(rows, cols).tolist() == ref
        assert reward[i] == ref_reward and changed[i] == (ref != grid)


@given(boards(SHAPES, max_exp=30))
def test_legal_bits_equal_reference(case):
    rows, cols, grid = case
    bits = legal_bits(np.array(grid, np.uint8).reshape(1, -1), 0, rows, cols)
    assert [(bits >> a) & 1 == 1 for a in range(4)] == naive.legal(grid)


@given(boards(SHAPES, max_exp=30), st.floats(0, 1, exclude_max=True), st.floats(0, 1, exclude_max=True))
def test_spawn_places_one_tile_in_the_chosen_empty_cell(case, u_cell, u_tile):
    rows, cols, grid = case
    batch = np.array(grid, np.uint8).reshape(1, -1)
    flat = batch[0]
    before = flat.copy()
    empties = np.flatnonzero(before == 0)
    where = spawn_inplace(batch, 0, u_cell, u_tile, 0.1)
    if len(empties) == 0:
        assert where == -1 and (flat == before).all()
        return
    assert where == empties[int(u_cell * len(empties))]
    assert flat[where] == (2 if u_tile < 0.1 else 1)
    assert (np.delete(flat, where) == np.delete(before, where)).all()
    assert grid_age(batch, 0) - naive.age([before.tolist()]) == 2 ** int(flat[where])


@given(boards(SHAPES, max_exp=30))
def test_age_and_max(case):
    _, _, grid = case
    batch = np.array(grid, np.uint8).reshape(1, -1)
    assert grid_age(batch, 0) == naive.age(grid)
    assert grid_max_exponent(batch, 0) == max(max(r) for r in grid)


def test_kernels_touch_only_their_own_row():
    rng = np.random.default_rng(0)
    b = rng.integers(0, 4, size=(3, 9)).astype(np.uint8)
    before = b.copy()
    move_inplace(b, 1, 3, 3, 3, line_tables_for(3, 3))
    spawn_inplace(b, 1, 0.5, 0.5, 0.1)
    assert (b[0] == before[0]).all() and (b[2] == before[2]).all()


@given(boards(SHAPES, max_exp=17), st.integers(0, 3))
def test_table_path_and_generic_slide_agree(case, action):
    """Lines the tables cannot serve (exponent > 15, 15+15 merges, long lines) fall back to the generic slide."""
    rows, cols, grid = case
    with_tables = np.array(grid, np.uint8).reshape(1, -1)
    generic = with_tables.copy()
    empty = np.zeros(0, np.uint64), np.zeros(0, np.int64)
    got = move_inplace(with_tables, 0, rows, cols, action, line_tables_for(rows, cols))
    ref = move_inplace(generic, 0, rows, cols, action, (*empty, *empty))
    assert got == ref and (with_tables == generic).all()
