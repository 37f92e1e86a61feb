"""Line lookup tables and symmetry tables for the packed ``uint64`` board of one shape.

A *line code* packs one row or column, position 0 (the wall the tiles slide toward) in the low nibble:
``code = sum(exp[k] << 4*k)``.  A move on a board is one table lookup per line.

``BoardTables`` holds, for a shape ``rows x cols``:

* ``moves``: ``uint64[6, n]`` with ``n = 16**max(line lengths that have tables)``, indexed by line code:

  - rows ``UP``, ``DOWN`` (0, 2): column code -> the new column *spread* over the board (nibble i at shift
    ``4*cols*i``), so that ``board |= moves[UP, code] << 4*j`` writes column j;
  - rows ``RIGHT``, ``LEFT`` (1, 3): row code -> new row code;
  - row ``COL_REWARD`` (4) / ``ROW_REWARD`` (5): merge reward of a column / row (the same in both directions),
    or ``OVERFLOW_REWARD`` (2**63) for a line whose move would create 2**16, which the packed form cannot hold;
  - row ``COL_GATHER`` (6), when both line lengths have tables: row code -> its cells laid out for column codes
    (cell k at nibble ``rows*k``), so that ``t = OR of moves[COL_GATHER, row i] << 4*i`` holds column j's code at
    bits ``4*rows*j``: a board's columns in ``rows`` lookups instead of ``rows*cols`` nibble extractions.

  One array rather than six: numba's inlined kernels pay reference-counting for every array they are handed,
  which cost 20x the work of a move when the six tables travelled separately.
* ``sym_perm``: ``int64[n_sym, cells]``, for symmetry s the source cell of each destination cell;
* ``sym_action``: ``int64[n_sym, 4]``, action a on a board is action ``sym_action[s, a]`` on its image;
* ``sym_lines``: ``uint64[2, 16**cols]`` (``[2, 0]`` when rows exceed ``MAX_TABLE_LINE`` cells): row 0 maps a row
  code to the reversed row (left-right mirror), row 1 (square boards only, else zeros) lays a row code out as a
  column (nibble k at shift ``4*cols*k``: the transpose); with shifts for the up-down mirror they give every symmetry in
  ``3*rows`` lookups;
* ``sym_shift``: ``uint64[n_sym, cells]``, bit shift of the image of cell c under symmetry s (so the image of
  ``b | tile << 4c`` is ``image(b) | tile << sym_shift[s, c]``: the children of a spawn share one set of images);
* ``sym_bytes``: ``uint64[n_sym, n_bytes, 256]``, the image under symmetry s of byte k of an ID (cells 2k and
  2k+1) with every other cell empty, so that an image is the OR of ``n_bytes = ceil(cells/2)`` lookups.

Tables exist for lines of at most ``MAX_TABLE_LINE`` cells (16**5 entries); longer lines (the 2x6 .. 2x8
boards and their transposes) are moved nibble by nibble with the same ``slide_line_code`` kernel that builds
the tables, so there is one definition of a line move.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import numba
import numpy as np

from .shape import check_packable

MAX_TABLE_LINE = 5
#: Reward marker for a line whose move would create tile 2**16 (not representable in 4 bits).
OVERFLOW = -1
_EMPTY_U64 = np.zeros(0, np.uint64)
_EMPTY_I64 = np.zeros(0, np.int64)


@numba.njit(cache=True)
def slide_line_code(code: int, length: int) -> tuple[int, int]:
    """Slide and merge one packed line toward position 0.

    ``[0 1 0 1] -> [2 0 0 0]`` (exponents, position 0 first), reward 4.
    Returns ``(new_code, reward)``; reward is ``OVERFLOW`` if an exponent-15 pair would merge.
    """
    out = 0
    reward = 0
    write = 0
    last = 0
    for k in range(length):
        v = (code >> (4 * k)) & 15
        if v == 0:
            continue
        if v == last:
            if v == 15:
                return code, OVERFLOW
            out += 1 << (4 * (write - 1))
            reward += 1 << (v + 1)
            last = 0
        else:
            out |= v << (4 * write)
            write += 1
            last = v
    return out, reward


@numba.njit(cache=True)
def reverse_line_code(code: int, length: int) -> int:
    """Reverse the order of the nibbles of a line code: ``[a b c] -> [c b a]``."""
    out = 0
    for k in range(length):
        out |= ((code >> (4 * k)) & 15) << (4 * (length - 1 - k))
    return out


@numba.njit(cache=True)
def spread_line_code(code: int, length: int, stride_cells: int) -> int:
    """Place nibble k of a line code at shift ``4*stride_cells*k`` (a column laid on the board)."""
    out = 0
    for k in range(length):
        out |= ((code >> (4 * k)) & 15) << (4 * stride_cells * k)
    return out


@numba.njit(cache=True)
def _build_line_tables(length: int, stride_cells: int):
    n = 1 << (4 * length)
    toward0 = np.empty(n, np.uint64)
    toward_end = np.empty(n, np.uint64)
    reward = np.empty(n, np.int64)
    for code in range(n):
        new0, r = slide_line_code(code, length)
        rev = reverse_line_code(code, length)
        new_rev, r_rev = slide_line_code(rev, length)
        if r == OVERFLOW or r_rev == OVERFLOW:
            toward0[code] = code
            toward_end[code] = code
            reward[code] = OVERFLOW
            continue
        toward0[code] = spread_line_code(new0, length, stride_cells)
        toward_end[code] = spread_line_code(reverse_line_code(new_rev, length), length, stride_cells)
        reward[code] = r
    return toward0, toward_end, reward


@functools.cache
def line_table(length: int) -> tuple[np.ndarray, np.ndarray]:
    """``(toward0: uint64[16**length], reward: int64[16**length])`` for one line length, or two empty arrays
    when the line is longer than ``MAX_TABLE_LINE``.

    ``toward0[code]`` is the line after sliding toward position 0 (codes written wall first); ``reward`` is
    the merge reward or ``OVERFLOW``.  The exponent-array kernels of :mod:`env2048.grid` use these.
    """
    if length > MAX_TABLE_LINE:
        return _EMPTY_U64, _EMPTY_I64
    toward0, _, reward = _build_line_tables(length, 1)
    toward0.setflags(write=False)
    reward.setflags(write=False)
    return toward0, reward


def line_tables_for(rows: int, cols: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(row_toward0, row_reward, col_toward0, col_reward)`` for the exponent-array kernels of a shape."""
    return (*line_table(cols), *line_table(rows))


def _symmetry_maps(rows: int, cols: int) -> list:
    """The board's symmetry group as maps (r, c) -> (r', c') over unbounded integer coordinates."""
    maps = [
        lambda r, c: (r, c),  # identity
        lambda r, c: (r, cols - 1 - c),  # mirror left-right
        lambda r, c: (rows - 1 - r, c),  # mirror up-down
        lambda r, c: (rows - 1 - r, cols - 1 - c),  # rotate 180
    ]
    if rows == cols:
        n = rows
        maps += [
            lambda r, c: (c, r),  # transpose
            lambda r, c: (n - 1 - c, n - 1 - r),  # anti-transpose
            lambda r, c: (c, n - 1 - r),  # rotate 90 clockwise
            lambda r, c: (n - 1 - c, r),  # rotate 90 counter-clockwise
        ]
    return maps


_DIRECTIONS = ((-1, 0), (0, 1), (1, 0), (0, -1))  # UP, RIGHT, DOWN, LEFT as (drow, dcol)


def symmetry_tables(rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """``(sym_perm, sym_action)`` for the board's symmetry group (8 if square, else 4).

    ``image[dest] = board[sym_perm[s, dest]]`` (flat cell indices, row-major) and action ``a`` on ``board``
    corresponds to action ``sym_action[s, a]`` on ``image``.
    """
    maps = _symmetry_maps(rows, cols)
    cells = rows * cols
    perm = np.empty((len(maps), cells), np.int64)
    act = np.empty((len(maps), 4), np.int64)
    for s, f in enumerate(maps):
        for r in range(rows):
            for c in range(cols):
                r2, c2 = f(r, c)
                perm[s, r2 * cols + c2] = r * cols + c
        for a, (dr, dc) in enumerate(_DIRECTIONS):
            r0, c0 = f(0, 0)
            r1, c1 = f(dr, dc)
            act[s, a] = _DIRECTIONS.index((r1 - r0, c1 - c0))
    return perm, act


def symmetry_byte_tables(sym_perm: np.ndarray) -> np.ndarray:
    """``uint64[n_sym, ceil(cells/2), 256]``: image under each symmetry of each byte of an ID (see module doc)."""
    n_sym, cells = sym_perm.shape
    n_bytes = (cells + 1) // 2
    dest_of = np.argsort(sym_perm, axis=1)  # dest_of[s, src] = destination cell of source cell src
    values = np.arange(256, dtype=np.uint64)
    out = np.zeros((n_sym, n_bytes, 256), np.uint64)
    for s in range(n_sym):
        for k in range(n_bytes):
            for half in range(2):
                src = 2 * k + half
                if src >= cells:
                    continue
                nibble = (values >> np.uint64(4 * half)) & np.uint64(15)
                out[s, k] |= nibble << np.uint64(4 * dest_of[s, src])
    return out


#: rows of ``BoardTables.moves`` holding rewards
COL_REWARD, ROW_REWARD = 4, 5
#: row of ``BoardTables.moves`` that lays a row code out for column codes (see the module)
COL_GATHER = 6
#: reward entry of a line whose move would overflow the packed form
OVERFLOW_REWARD = np.uint64(1 << 63)


class BoardTables(NamedTuple):
    """Everything the packed kernels need for one shape (hand kernels its fields, not the tuple itself)."""

    rows: int
    cols: int
    moves: np.ndarray
    sym_perm: np.ndarray
    sym_action: np.ndarray
    sym_lines: np.ndarray
    sym_shift: np.ndarray
    sym_bytes: np.ndarray


@functools.cache
def board_tables(rows: int, cols: int) -> BoardTables:
    """Build (once per process and shape) the lookup tables of a packable ``rows x cols`` board."""
    check_packable(rows, cols)
    width = max(16**n for n in (rows, cols) if n <= MAX_TABLE_LINE)
    moves = np.zeros((7, width), np.uint64)
    if cols <= MAX_TABLE_LINE:
        left, right, reward = _build_line_tables(cols, 1)
        moves[3, : left.size], moves[1, : right.size] = left, right
        moves[ROW_REWARD, : reward.size] = np.where(reward == OVERFLOW, OVERFLOW_REWARD, reward.astype(np.uint64))
    if rows <= MAX_TABLE_LINE:
        up, down, reward = _build_line_tables(rows, cols)
        moves[0, : up.size], moves[2, : down.size] = up, down
        moves[COL_REWARD, : reward.size] = np.where(reward == OVERFLOW, OVERFLOW_REWARD, reward.astype(np.uint64))
    if rows <= MAX_TABLE_LINE and cols <= MAX_TABLE_LINE:
        codes = np.arange(16**cols, dtype=np.uint64)
        for k in range(cols):
            moves[COL_GATHER, : codes.size] |= ((codes >> np.uint64(4 * k)) & np.uint64(15)) << np.uint64(4 * rows * k)
    perm, act = symmetry_tables(rows, cols)
    sym_bytes = symmetry_byte_tables(perm)
    sym_lines = np.zeros((2, 16**cols if cols <= MAX_TABLE_LINE else 0), np.uint64)
    codes = np.arange(sym_lines.shape[1], dtype=np.uint64)
    for k in range(cols):
        nibble = (codes >> np.uint64(4 * k)) & np.uint64(15)
        sym_lines[0] |= nibble << np.uint64(4 * (cols - 1 - k))
        if rows == cols:  # the transpose exists only for square boards
            sym_lines[1] |= nibble << np.uint64(4 * cols * k)
    sym_shift = (4 * np.argsort(perm, axis=1)).astype(np.uint64)
    for arr in (moves, perm, act, sym_lines, sym_shift, sym_bytes):
        arr.setflags(write=False)
    return BoardTables(rows, cols, moves, perm, act, sym_lines, sym_shift, sym_bytes)


@functools.cache
def subgroup_tables(rows: int, cols: int, symmetries: tuple[int, ...]) -> BoardTables:
    """The tables of :func:`board_tables` restricted to a subgroup of the board's symmetries (indices into its
    tables, starting with 0, the identity): what a board with fixed cells (:mod:`env2048.pattern`) keeps.  The
    whole group gives :func:`board_tables` itself; a proper subgroup gets no ``sym_lines`` (``[2, 0]``), so that
    the canonical form is the minimum over the subgroup's images, from ``sym_bytes``."""
    full = board_tables(rows, cols)
    if tuple(symmetries) == tuple(range(full.sym_perm.shape[0])):
        return full
    if not symmetries or symmetries[0] != 0:
        raise ValueError(f"a symmetry subgroup starts with the identity (0), got {symmetries}")
    keep = np.array(symmetries, np.int64)
    parts = [np.ascontiguousarray(a[keep]) for a in (full.sym_perm, full.sym_action, full.sym_shift, full.sym_bytes)]
    sym_lines = np.zeros((2, 0), np.uint64)
    for arr in (*parts, sym_lines):
        arr.setflags(write=False)
    perm, act, shift, sym_bytes = parts
    return BoardTables(rows, cols, full.moves, perm, act, sym_lines, shift, sym_bytes)
