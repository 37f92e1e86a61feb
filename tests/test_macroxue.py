"""macroxue/2048-ai's published success probabilities (analysis/README.md), reproduced to the 6 decimals published:
its 8-cell Snake Chain and Perimeter Defense Formation tables, as pattern files with its success rule (two
tiles of T/2 side by side at the target), its tile cap (no free tile above T/2) and failure first
(docs/patterns/, docs/endgame.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from env2048.pattern import load_pattern
from env2048.shape import ACTION_NAMES
from oracle.oracle import Oracle
from solver.build import build
from solver.spec import SolveSpec

PATTERNS = Path(__file__).resolve().parent.parent / "docs" / "patterns"

#: (pattern file, the position's free cells as printed there (0 = empty), its best move, its probability).
#: Snake: free cells rows 2-3 left to right; PDF: (0,3), (1,3), (2,2), (2,3), then row 3.
PUBLISHED = [
    ("snake8-64", [2, 2, 2, 4, 0, 0, 2, 2], "RIGHT", 0.976849),
    ("snake8-128", [2, 2, 2, 4, 0, 0, 2, 2], "RIGHT", 0.782384),
    ("snake8-256", [2, 2, 2, 4, 0, 0, 2, 2], "RIGHT", 0.124619),
    ("pdf8-64", [0, 0, 4, 2, 2, 2, 2, 2], "UP", 0.990791),
    ("pdf8-128", [0, 0, 4, 2, 2, 2, 2, 2], "UP", 0.811834),
    ("pdf8-256", [0, 0, 4, 2, 2, 2, 2, 2], "UP", 0.172561),
]


def position(pattern, free_tiles: list[int]) -> np.ndarray:
    """The pattern's board with ``free_tiles`` (tile values) on its free cells in macroxue's order."""
    grid = np.zeros(pattern.cells, np.int64)
    for cell, e in pattern.fixed:
        grid[cell] = e
    free = list(pattern.free_cells)  # row-major: the snake's order
    if pattern.name.startswith("pdf8"):
        free = [3, 7, 10, 11, 12, 13, 14, 15]
    for cell, tile in zip(free, free_tiles, strict=True):
        grid[cell] = int(tile).bit_length() - 1 if tile else 0
    return grid.reshape(pattern.rows, pattern.cols)


@pytest.mark.slow
@pytest.mark.parametrize(("name", "free_tiles", "move", "published"), PUBLISHED)
def test_macroxue_published_probabilities(tmp_path, name, free_tiles, move, published):
    pattern = load_pattern(PATTERNS / f"{name}.json")
    build(SolveSpec.for_pattern(pattern), tmp_path / name, progress=False, layout="directory")
    with Oracle.open(tmp_path / name) as oracle:
        board = position(pattern, free_tiles)
        assert round(oracle.value(board), 6) == published
        assert ACTION_NAMES[int(np.nanargmax(oracle.q_values(board)))] == move
