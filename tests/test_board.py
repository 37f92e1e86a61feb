"""Packed uint64 kernels against the pure-Python reference, plus rule properties."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from env2048 import board as B
from env2048.kernels import all_moves_packed
from env2048.tables import board_tables, slide_line_code

import naive
from conftest import PACKED_SHAPES, boards


@given(boards(PACKED_SHAPES, max_exp=14), st.integers(0, 3))
def test_packed_move_equals_reference(case, action):
    rows, cols, grid = case
    after, reward = B.move(B.pack(np.array(grid)), action, rows, cols)
    ref_after, ref_reward = naive.move(grid, action)
    assert int(after) == naive.pack(ref_after)
    assert reward == ref_reward


@given(boards(PACKED_SHAPES, max_exp=14))
def test_packed_legal_mask_equals_reference(case):
    rows, cols, grid = case
    assert B.legal_actions(B.pack(np.array(grid)), rows, cols).tolist() == naive.legal(grid)


@pytest.mark.parametrize("rows,cols", [(3, 5), (2, 7), (7, 2), (2, 8), (4, 4)])
def test_specific_shapes_batch_move(rows, cols):
    rng = np.random.default_rng(rows * 10 + cols)
    grids = rng.integers(0, 5, size=(300, rows, cols))
    actions = rng.integers(0, 4, size=300)
    after, reward = B.move(B.pack(grids), actions, rows, cols)
    for g, a, got, r in zip(grids, actions, after, reward, strict=True):
        ref, ref_r = naive.move(g.tolist(), int(a))
        assert int(got) == naive.pack(ref) and r == ref_r


@numba.njit(cache=True)
def _all_moves_of(b, rows, cols, moves):
    afters, rewards = all_moves_packed(b, rows, cols, moves)
    return np.array(afters), np.array(rewards)


@given(boards(PACKED_SHAPES + [(2, 6), (6, 2), (2, 8)], max_exp=14))
def test_all_moves_equal_reference(case):
    """The four moves at once (the solver's kernels) give each action's afterstate and reward of the reference."""
    rows, cols, grid = case
    afters, rewards = _all_moves_of(np.uint64(B.pack(np.array(grid))), rows, cols, board_tables(rows, cols).moves)
    for action in range(4):
        ref_after, ref_reward = naive.move(grid, action)
        assert int(afters[action]) == naive.pack(ref_after)
        assert rewards[action] == ref_reward


def test_pack_unpack_round_trip_and_layout():
    grid = np.array([[1, 2, 3], [4, 5, 6], [7, 8, 15], [0, 0, 9]])
    board_id = B.pack(grid)
    assert int(board_id) == naive.pack(grid.tolist())
    assert int(board_id) >> (4 * (1 * 3 + 2)) & 15 == 6  # cell (1, 2) at shift 4*(row*cols+col)
    np.testing.assert_array_equal(B.unpack(board_id, 4, 3), grid)


@given(boards(PACKED_SHAPES, max_exp=15))
def test_pack_unpack_property(case):
    rows, cols, grid = case
    np.testing.assert_array_equal(B.unpack(B.pack(np.array(grid)), rows, cols), grid)


@given(boards(PACKED_SHAPES, max_exp=14), st.integers(0, 3))
def test_symmetry_equivariance(case, action):
    """Moving then transforming equals transforming then making the mapped move."""
    rows, cols, grid = case
    T = board_tables(rows, cols)
    b = B.pack(np.array(grid))
    images = B.symmetries(b, rows, cols)
    after, reward = B.move(b, action, rows, cols)
    after_images = B.symmetries(after, rows, cols)
    for s in range(len(images)):
        moved, r = B.move(images[s], int(T.sym_action[s, action]), rows, cols)
        assert moved == after_images[s] and r == reward


@given(boards(PACKED_SHAPES, max_exp=15))
def test_symmetries_and_canonical_match_reference(case):
    rows, cols, grid = case
    b = B.pack(np.array(grid))
    assert sorted(int(x) for x in B.symmetries(b, rows, cols)) == sorted(naive.pack(g) for g in naive.symmetries(grid))
    assert int(B.canonical(b, rows, cols)) == naive.canonical(grid)


@given(boards(PACKED_SHAPES, max_exp=14), st.integers(0, 3))
def test_move_keeps_age_and_reward_is_sum_of_created_tiles(case, action):
    rows, cols, grid = case
    b = B.pack(np.array(grid))
    after, reward = B.move(b, action, rows, cols)
    assert B.age(after, rows, cols) == B.age(b, rows, cols) == naive.age(grid)
    # Recover the created tiles from the tile counts alone: c[k+1] = (n[k] + c[k] - m[k]) / 2.
    before = np.bincount(np.array(grid).ravel(), minlength=17)
    now = np.bincount(B.unpack(after, rows, cols).ravel(), minlength=17)
    created = np.zeros(18, np.int64)
    for k in range(1, 17):
        twice = before[k] + created[k] - now[k]
        assert twice % 2 == 0 and twice >= 0
        created[k + 1] = twice // 2
    assert reward == sum(int(created[k]) << k for k in range(18))


@given(boards(PACKED_SHAPES, max_exp=14), st.sampled_from([0.0, 0.1, 0.5, 1.0]))
def test_spawn_outcomes_match_reference(case, p4):
    rows, cols, grid = case
    got_boards, got_probs = B.spawn_outcomes(B.pack(np.array(grid)), rows, cols, p4)
    ref = naive.spawn_outcomes(grid, p4)
    got = sorted(zip(got_boards.tolist(), got_probs.tolist(), strict=True))
    want = sorted((naive.pack(g), p) for g, p in ref)
    assert [b for b, _ in got] == [b for b, _ in want]
    np.testing.assert_allclose([p for _, p in got], [p for _, p in want], rtol=1e-12)
    base_age = naive.age(grid)
    assert {B.age(x, rows, cols) - base_age for x in got_boards} <= {2, 4}
    if len(ref):
        assert got_probs.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("rows,cols", [(2, 2), (3, 3), (4, 3), (2, 7)])
def test_start_states_match_reference(rows, cols):
    got_boards, got_probs = B.start_states(rows, cols, p4=0.1)
    ref = naive.start_distribution(rows, cols, 0.1)
    assert got_boards.tolist() == sorted(ref)
    np.testing.assert_allclose(got_probs, [ref[k] for k in sorted(ref)], rtol=1e-12)
    for b in got_boards:
        assert (B.unpack(b, rows, cols) > 0).sum() == 2  # two start tiles
    canon_boards, canon_probs = B.start_states(rows, cols, p4=0.1, canonical_only=True)
    assert canon_probs.sum() == pytest.approx(1.0)
    assert set(canon_boards.tolist()) == {naive.canonical(naive.unpack(k, rows, cols)) for k in ref}


def test_overflow_of_packed_form_raises():
    grid = np.zeros((4, 4), int)
    grid[0, :2] = 15
    with pytest.raises(OverflowError, match="2\\*\\*16"):
        B.move(B.pack(grid), 3, 4, 4)
    assert slide_line_code(0xFF, 2)[1] == -1


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: B.pack(np.zeros((5, 4), int)), "at most 16 cells"),
        (lambda: B.pack(np.full((3, 3), 16)), "exponents must lie in"),
        (lambda: B.pack(np.zeros((3, 3), float)), "must be integers"),
        (lambda: B.unpack(np.uint64(1) << np.uint64(40), 3, 3), "beyond the 9 cells"),
        (lambda: B.move(np.uint64(0), 4, 3, 3), "0..3"),
        (lambda: B.spawn_outcomes(np.uint64(0), 3, 3, p4=1.5), "p4"),
        (lambda: B.legal_actions(np.uint64(0), 1, 3), "rows=1 is out of range"),
        (lambda: B.legal_actions(np.uint64(0), 3, 9), "cols=9 is out of range"),
    ],
)
def test_bad_input_errors(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_symmetry_group_sizes_and_action_maps():
    assert board_tables(3, 3).sym_perm.shape == (8, 9)
    assert board_tables(4, 3).sym_perm.shape == (4, 12)
    # Mirror left-right swaps LEFT and RIGHT and keeps UP and DOWN.
    assert board_tables(4, 3).sym_action[1].tolist() == [0, 3, 2, 1]
