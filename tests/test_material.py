"""The material partition's measurement (experiments.scale.material): keys and crossing moves against naive.py,
and the invariants the partition rests on (symmetries and spawns keep the key; a move only merges it)."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given

from experiments.scale.material import crossing_moves, material_keys
from solver.spec import SolveSpec

import naive
from conftest import boards


def naive_key(grid, low: int) -> Counter:
    return Counter(v for row in grid for v in row if v >= low)


def key(grid, low: int) -> int:
    rows, cols = len(grid), len(grid[0])
    return int(material_keys(np.array([naive.pack(grid)], np.uint64), rows * cols, low)[0])


@given(boards([(3, 3), (4, 3), (2, 4)], max_exp=11))
def test_keys_and_crossing_moves_match_the_reference(case):
    """The key is the multiset of tiles >= 2**low: the same for every symmetric image and for the board without
    its smaller tiles; a move crosses exactly when it changes the multiset, and it can change it only by merging
    tiles >= 2**(low - 1)."""
    rows, cols, grid = case
    spec = SolveSpec.parse(f"{rows}x{cols}", "score")
    lows = np.array([3, 4, 6], np.int64)
    got = crossing_moves(np.array([naive.pack(grid)], np.uint64), spec.tables, spec.rules, lows)
    for i, low in enumerate(lows):
        assert key([[v if v >= low else 0 for v in row] for row in grid], low) == key(grid, low)
        assert {key(image, low) for image in naive.symmetries(grid)} == {key(grid, low)}
        legal = crossing = 0
        for a in range(4):
            after, _ = naive.move(grid, a)
            if after == grid:
                continue
            legal += 1
            crossing += naive_key(after, low) != naive_key(grid, low)
            assert (key(after, low) != key(grid, low)) == (naive_key(after, low) != naive_key(grid, low))
            assert all(e >= low - 1 for e in naive_key(grid, low - 1) - naive_key(after, low - 1))
        assert (got[0], got[1][i], int((got[3] > i).sum())) == (legal, crossing, crossing)


def test_spawns_keep_the_key():
    grid = [[3, 0, 5], [0, 6, 1], [0, 0, 7]]
    assert {key(child, 3) for child, _ in naive.spawn_outcomes(grid, 0.1)} == {key(grid, 3)}
