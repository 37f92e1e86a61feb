"""uint8 exponent-array kernels (all board sizes) against the pure-Python reference."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from env2048.grid import grid_age, grid_max_exponent, legal_bits, move_inplace, spawn_inplace

import naive
from conftest import SHAPES, boards


@given(boards(SHAPES, max_exp=30), st.integers(0, 3))
def test_move_equals_reference(case, action):
    rows, cols, grid = case
    flat = np.array(grid, np.uint8).ravel()
    reward, changed = move_inplace(flat, rows, cols, action)
    ref, ref_reward = naive.move(grid, action)
    assert flat.reshape(rows, cols).tolist() == ref
    assert reward == ref_reward
    assert changed == (ref != grid)


@given(boards(SHAPES, max_exp=30))
def test_legal_bits_equal_reference(case):
    rows, cols, grid = case
    bits = legal_bits(np.array(grid, np.uint8).ravel(), rows, cols)
    assert [(bits >> a) & 1 == 1 for a in range(4)] == naive.legal(grid)


@given(boards(SHAPES, max_exp=30), st.floats(0, 1, exclude_max=True), st.floats(0, 1, exclude_max=True))
def test_spawn_places_one_tile_in_the_chosen_empty_cell(case, u_cell, u_tile):
    rows, cols, grid = case
    flat = np.array(grid, np.uint8).ravel()
    before = flat.copy()
    empties = np.flatnonzero(before == 0)
    where = spawn_inplace(flat, u_cell, u_tile, 0.1)
    if len(empties) == 0:
        assert where == -1 and (flat == before).all()
        return
    assert where == empties[int(u_cell * len(empties))]
    assert flat[where] == (2 if u_tile < 0.1 else 1)
    assert (np.delete(flat, where) == np.delete(before, where)).all()
    assert grid_age(flat) - grid_age(before) == 2 ** int(flat[where])


@given(boards(SHAPES, max_exp=30))
def test_age_and_max(case):
    _, _, grid = case
    flat = np.array(grid, np.uint8).ravel()
    assert grid_age(flat) == naive.age(grid)
    assert grid_max_exponent(flat) == max(max(r) for r in grid)
