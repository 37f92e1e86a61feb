"""Board shapes: validation and the facts every other module derives from (rows, cols).

Conventions used throughout the project:

* a board is ``rows`` x ``cols`` cells, 2 <= rows, cols <= 8 (non-square allowed);
* a cell holds the tile exponent ``k`` (tile value ``2**k``; 0 = empty);
* actions are UP=0, RIGHT=1, DOWN=2, LEFT=3.
"""

from __future__ import annotations

MIN_SIDE = 2
MAX_SIDE = 8

#: Largest board (in cells) that has the packed ``uint64`` form (4 bits per cell).
MAX_PACKED_CELLS = 16
#: Largest exponent a packed cell can hold (tile 2**15 = 32768).
MAX_PACKED_EXPONENT = 15

UP, RIGHT, DOWN, LEFT = 0, 1, 2, 3
ACTION_NAMES = ("UP", "RIGHT", "DOWN", "LEFT")


def check_shape(rows: int, cols: int) -> tuple[int, int]:
    """Validate a board shape and return it as plain ints.

    Raises ``ValueError`` naming the bad side and the allowed range.
    """
    out = []
    for name, side in (("rows", rows), ("cols", cols)):
        if isinstance(side, bool) or not isinstance(side, int | _np_integer()):
            raise TypeError(f"{name} must be an int in [{MIN_SIDE}, {MAX_SIDE}], got {side!r}")
        if not MIN_SIDE <= int(side) <= MAX_SIDE:
            raise ValueError(f"{name}={side} is out of range: boards have {MIN_SIDE} to {MAX_SIDE} rows and columns")
        out.append(int(side))
    return out[0], out[1]


def parse_board(spec: str) -> tuple[int, int]:
    """Parse ``"RxC"`` (rows x cols, e.g. ``"4x3"``) into a validated ``(rows, cols)``."""
    parts = str(spec).lower().replace("×", "x").split("x")
    if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
        raise ValueError(f"board must be written RxC (rows x columns, e.g. '3x3' or '4x3'), got {spec!r}")
    return check_shape(int(parts[0]), int(parts[1]))


def max_exponent(rows: int, cols: int) -> int:
    """Largest tile exponent reachable on a rows x cols board: ``rows*cols + 1``.

    With n cells the biggest possible chain is 2**(n+1), 2**n, ..., 4, 4 just before the final merges.
    """
    return rows * cols + 1


def longest_game(rows: int, cols: int, largest_tile_exponent: int | None = None) -> int:
    """An upper bound on the legal moves of any game on a rows x cols board: every legal move spawns a 2 or a 4,
    so the tiles' sum grows by at least 2 a move, and it never exceeds every cell holding the largest tile
    (``2**largest_tile_exponent``, by default ``2**max_exponent``).  3x3: 4,608; 4x4: 1,048,576."""
    top = max_exponent(rows, cols) if largest_tile_exponent is None else largest_tile_exponent
    return rows * cols * (1 << top) // 2


def is_packable(rows: int, cols: int) -> bool:
    """True when the board has the packed ``uint64`` form (at most 16 cells)."""
    return rows * cols <= MAX_PACKED_CELLS


def check_packable(rows: int, cols: int) -> None:
    """Raise ``ValueError`` unless rows x cols has the packed form."""
    check_shape(rows, cols)
    if not is_packable(rows, cols):
        raise ValueError(
            f"a {rows}x{cols} board has {rows * cols} cells; the packed uint64 form holds at most "
            f"{MAX_PACKED_CELLS} cells (use the uint8 exponent-array kernels for larger boards)"
        )


def _np_integer():
    import numpy as np

    return np.integer
