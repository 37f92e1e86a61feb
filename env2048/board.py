"""Packed ``uint64`` boards: the single source of truth for the solver, the oracle and the agents.

A board of at most 16 cells with exponents <= 15 is one ``np.uint64``: 4 bits per cell, cell (row, col) at
shift ``4*(row*cols + col)``.  The kernels (``numba.njit``, names starting with ``_`` or documented as kernels)
take the fields of a ``BoardTables`` tuple ``T`` built by :func:`env2048.tables.board_tables` (``T.moves``,
``T.sym_lines``: arrays, never the whole tuple, which numba's inlined code would reference-count per array);
the public functions below validate their input and wrap the kernels.

Example (3x3, exponents)::

    [[1 0 1]          LEFT          [[2 0 0]
     [0 0 0]     ------------->      [0 0 0]      reward 4
     [0 2 2]]                        [3 0 0]]     reward 8   -> total 12
"""

from __future__ import annotations

import numba
import numpy as np

from .shape import DOWN, LEFT, MAX_PACKED_EXPONENT, RIGHT, UP, check_packable
from .tables import (
    COL_GATHER,
    COL_REWARD,
    MAX_TABLE_LINE,
    OVERFLOW,
    OVERFLOW_REWARD,
    ROW_REWARD,
    BoardTables,
    board_tables,
    reverse_line_code,
    slide_line_code,
    spread_line_code,
)

__all__ = [
    "pack",
    "unpack",
    "move",
    "legal_actions",
    "age",
    "max_exponent_of",
    "count_empty",
    "is_terminal",
    "canonical",
    "symmetries",
    "spawn_outcomes",
    "start_states",
]


# ----------------------------------------------------------------------------------------------------------
# Kernels
# ----------------------------------------------------------------------------------------------------------


@numba.njit(cache=True, inline="always")
def _nibble(b: np.uint64, cell: int) -> int:
    return int((b >> np.uint64(4 * cell)) & np.uint64(15))


@numba.njit(cache=True)
def _overflow():
    raise OverflowError("this move would create tile 2**16, which the packed uint64 board cannot hold")


@numba.njit(cache=True)
def _row_move_generic(b, rows, cols, toward_left):
    """Rows longer than ``MAX_TABLE_LINE`` cells: slide each row code nibble by nibble."""
    rmask = np.uint64((1 << (4 * cols)) - 1)
    out = np.uint64(0)
    reward = 0
    for i in range(rows):
        shift = np.uint64(4 * cols * i)
        code = int((b >> shift) & rmask)
        if toward_left:
            new_code, r = slide_line_code(code, cols)
        else:
            new_code, r = slide_line_code(reverse_line_code(code, cols), cols)
            new_code = reverse_line_code(new_code, cols)
        if r == OVERFLOW:
            _overflow()
        out |= np.uint64(new_code) << shift
        reward += r
    return out, reward


@numba.njit(cache=True)
def _col_move_generic(b, rows, cols, toward_up):
    """Columns longer than ``MAX_TABLE_LINE`` cells: slide each column code nibble by nibble."""
    out = np.uint64(0)
    reward = 0
    for j in range(cols):
        code = 0
        for i in range(rows):
            code |= _nibble(b, i * cols + j) << (4 * i)
        if toward_up:
            new_code, r = slide_line_code(code, rows)
        else:
            new_code, r = slide_line_code(reverse_line_code(code, rows), rows)
            new_code = reverse_line_code(new_code, rows)
        if r == OVERFLOW:
            _overflow()
        out |= np.uint64(spread_line_code(new_code, rows, cols)) << np.uint64(4 * j)
        reward += r
    return out, reward


@numba.njit(cache=True, inline="always")
def _move(b, action, rows, cols, moves):
    """Kernel: ``(afterstate, reward)`` of ``action`` on packed board ``b``; illegal iff ``afterstate == b``.

    ``moves`` is ``T.moves`` of the shape's :class:`~env2048.tables.BoardTables`: one lookup per line.  Lines
    longer than ``MAX_TABLE_LINE`` take the generic slide.  Raises ``OverflowError`` if the move would make
    tile 2**16.
    """
    out = np.uint64(0)
    reward = np.uint64(0)
    if action == RIGHT or action == LEFT:
        if cols > MAX_TABLE_LINE:
            out, r = _row_move_generic(b, rows, cols, action == LEFT)
            reward = np.uint64(r)
        else:
            rmask = np.uint64((1 << (4 * cols)) - 1)
            for i in range(rows):
                shift = np.uint64(4 * cols * i)
                code = (b >> shift) & rmask
                out |= moves[action, code] << shift
                reward += moves[ROW_REWARD, code]
    elif rows > MAX_TABLE_LINE:
        out, r = _col_move_generic(b, rows, cols, action == UP)
        reward = np.uint64(r)
    elif cols > MAX_TABLE_LINE:
        for j in range(cols):
            code = np.uint64(0)
            for i in range(rows):
                code |= ((b >> np.uint64(4 * (i * cols + j))) & np.uint64(15)) << np.uint64(4 * i)
            out |= moves[action, code] << np.uint64(4 * j)
            reward += moves[COL_REWARD, code]
    else:
        columns = _column_codes(b, rows, cols, moves)
        cmask = np.uint64((1 << (4 * rows)) - 1)
        for j in range(cols):
            code = (columns >> np.uint64(4 * rows * j)) & cmask
            out |= moves[action, code] << np.uint64(4 * j)
            reward += moves[COL_REWARD, code]
    if reward >= OVERFLOW_REWARD:
        _overflow()
    return out, np.int64(reward)


@numba.njit(cache=True, inline="always")
def _column_codes(b, rows, cols, moves):
    """The column codes of ``b``, column j's at bits ``4*rows*j`` (``T.moves[COL_GATHER]``: one lookup a row;
    both line lengths must have tables)."""
    rmask = np.uint64((1 << (4 * cols)) - 1)
    columns = np.uint64(0)
    for i in range(rows):
        columns |= moves[COL_GATHER, (b >> np.uint64(4 * cols * i)) & rmask] << np.uint64(4 * i)
    return columns


@numba.njit(cache=True, inline="always")
def _all_moves(b, rows, cols, moves):
    """Kernel: the afterstates and rewards of all four actions on ``b``, ``((up, right, down, left), (rewards
    int64 in the same order))``: each row and column code is read once and serves both of its directions.
    Illegal actions leave ``b`` unchanged, as in :func:`_move`."""
    if rows > MAX_TABLE_LINE or cols > MAX_TABLE_LINE:
        # one inlined copy of the move in a loop, not four: each copy costs compilation time in every kernel
        up = right = down = left = b
        r_up = r_right = r_down = r_left = np.int64(0)
        for action in range(4):
            after, r = _move(b, action, rows, cols, moves)
            if action == UP:
                up, r_up = after, r
            elif action == RIGHT:
                right, r_right = after, r
            elif action == DOWN:
                down, r_down = after, r
            else:
                left, r_left = after, r
        return (up, right, down, left), (r_up, r_right, r_down, r_left)
    rmask = np.uint64((1 << (4 * cols)) - 1)
    left = right = row_reward = np.uint64(0)
    for i in range(rows):
        shift = np.uint64(4 * cols * i)
        code = (b >> shift) & rmask
        left |= moves[LEFT, code] << shift
        right |= moves[RIGHT, code] << shift
        row_reward += moves[ROW_REWARD, code]
    columns = _column_codes(b, rows, cols, moves)
    cmask = np.uint64((1 << (4 * rows)) - 1)
    up = down = col_reward = np.uint64(0)
    for j in range(cols):
        code = (columns >> np.uint64(4 * rows * j)) & cmask
        up |= moves[UP, code] << np.uint64(4 * j)
        down |= moves[DOWN, code] << np.uint64(4 * j)
        col_reward += moves[COL_REWARD, code]
    if row_reward >= OVERFLOW_REWARD or col_reward >= OVERFLOW_REWARD:
        _overflow()
    r_row = np.int64(row_reward)
    r_col = np.int64(col_reward)
    return (up, right, down, left), (r_col, r_row, r_col, r_row)


@numba.njit(cache=True)
def _legal_bits(b, rows, cols, moves):
    """Kernel: bit a set iff action a is legal on ``b``."""
    bits = 0
    for a in range(4):
        after, _ = _move(b, a, rows, cols, moves)
        if after != b:
            bits |= 1 << a
    return bits


@numba.njit(cache=True)
def _age(b, cells):
    """Kernel: sum of tile values."""
    total = 0
    for c in range(cells):
        v = _nibble(b, c)
        if v:
            total += 1 << v
    return total


@numba.njit(cache=True, inline="always")
def _max_exponent(b, cells):
    best = 0
    for c in range(cells):
        v = _nibble(b, c)
        if v > best:
            best = v
    return best


@numba.njit(cache=True)
def _count_empty(b, cells):
    n = 0
    for c in range(cells):
        if _nibble(b, c) == 0:
            n += 1
    return n


@numba.njit(cache=True)
def _transform(b, perm_row):
    """Kernel: image of ``b`` under one symmetry (``perm_row = sym_perm[s]``)."""
    out = np.uint64(0)
    for dest in range(perm_row.shape[0]):
        out |= np.uint64(_nibble(b, perm_row[dest])) << np.uint64(4 * dest)
    return out


@numba.njit(cache=True)
def _canonical(b, sym_perm):
    """Kernel: minimum packed ID over the symmetry group."""
    best = b
    for s in range(1, sym_perm.shape[0]):
        t = _transform(b, sym_perm[s])
        if t < best:
            best = t
    return best


@numba.njit(cache=True, inline="always")
def _transpose(b, n, sym_lines):
    """The transpose of a square board of side ``n``: ``T.sym_lines[1]`` lays each row out as a column."""
    rmask = np.uint64((1 << (4 * n)) - 1)
    out = np.uint64(0)
    for i in range(n):
        out |= sym_lines[1, (b >> np.uint64(4 * n * i)) & rmask] << np.uint64(4 * i)
    return out


@numba.njit(cache=True, inline="always")
def _klein_images(b, rows, cols, sym_lines):
    """``(b, left-right, up-down, 180-degree)`` images of ``b``, in one pass over the rows: each row is read and
    mirrored (``sym_lines[0]``) once and placed in all three images."""
    width = np.uint64(4 * cols)
    rmask = np.uint64((1 << (4 * cols)) - 1)
    lr = np.uint64(0)
    ud = np.uint64(0)
    turned = np.uint64(0)
    for i in range(rows):
        here = np.uint64(i) * width
        there = np.uint64(rows - 1 - i) * width
        row = (b >> here) & rmask
        mirrored = sym_lines[0, row]
        lr |= mirrored << here
        ud |= row << there
        turned |= mirrored << there
    return b, lr, ud, turned


@numba.njit(cache=True, inline="always")
def _min_klein(b, rows, cols, sym_lines, best):
    """min(best, b, its left-right, up-down and 180-degree images)."""
    b, lr, ud, turned = _klein_images(b, rows, cols, sym_lines)
    return min(min(best, b), min(lr, min(ud, turned)))


@numba.njit(cache=True, inline="always")
def _symmetry_images_lines(b, rows, cols, sym_lines, imgs):
    """Fill ``imgs`` (``uint64[n_sym]``) with the images of ``b`` in the order of ``T.sym_perm``
    (:func:`~env2048.tables.symmetry_tables`: identity, left-right, up-down, 180 degrees; then for a square
    board the transpose, the anti-transpose, 90 degrees clockwise and counter-clockwise, which are the
    transpose's identity, 180-degree, left-right and up-down images)."""
    imgs[0], imgs[1], imgs[2], imgs[3] = _klein_images(b, rows, cols, sym_lines)
    if rows == cols:
        t, t_lr, t_ud, t_turned = _klein_images(_transpose(b, rows, sym_lines), rows, cols, sym_lines)
        imgs[4], imgs[5], imgs[6], imgs[7] = t, t_turned, t_lr, t_ud


@numba.njit(cache=True, inline="always")
def _symmetry_images(b, rows, cols, sym_lines, sym_bytes, imgs):
    """Fill ``imgs[s]`` with the image of ``b`` under every symmetry s of the tables: by row lookups when they
    hold the whole group (``sym_lines`` present), else by byte lookups (:func:`_symmetry_images_bytes`)."""
    if sym_lines.shape[1] == 0:
        _symmetry_images_bytes(b, sym_bytes, imgs)
    else:
        _symmetry_images_lines(b, rows, cols, sym_lines, imgs)


@numba.njit(cache=True, inline="always")
def _symmetry_images_bytes(b, sym_bytes, imgs):
    """Fill ``imgs[s]`` with the image of ``b`` under every symmetry s (byte-table lookups)."""
    for s in range(sym_bytes.shape[0]):
        t = np.uint64(0)
        for k in range(sym_bytes.shape[1]):
            t |= sym_bytes[s, k, (b >> np.uint64(8 * k)) & np.uint64(255)]
        imgs[s] = t


@numba.njit(cache=True, inline="always")
def _canonical_fast(b, rows, cols, sym_lines, sym_bytes):
    """Kernel: the same as :func:`_canonical`, fast (the solver's hot path).

    Mirrors by row lookups in ``T.sym_lines`` and shifts: the 4 images {id, left-right, up-down, 180}, and for
    a square board the same 4 of the transpose.  Rows too long for line tables use ``T.sym_bytes``.  Copies
    with ``rows`` and ``cols`` as constants (which LLVM unrolls) were faster still, but every copy is compiled
    again wherever a kernel inlines this: see docs/solver-performance.md, "Compute in the kernels".
    """
    if sym_lines.shape[1] == 0:
        best = b
        for s in range(1, sym_bytes.shape[0]):
            t = np.uint64(0)
            for k in range(sym_bytes.shape[1]):
                t |= sym_bytes[s, k, (b >> np.uint64(8 * k)) & np.uint64(255)]
            best = min(best, t)
        return best
    best = _min_klein(b, rows, cols, sym_lines, b)
    if rows == cols:
        best = _min_klein(_transpose(b, rows, sym_lines), rows, cols, sym_lines, best)
    return best


@numba.njit(cache=True)
def _canonical_many(boards, rows, cols, sym_lines, sym_bytes):
    out = np.empty_like(boards)
    for i in range(boards.shape[0]):
        out[i] = _canonical_fast(boards[i], rows, cols, sym_lines, sym_bytes)
    return out


@numba.njit(cache=True)
def _move_many(boards, actions, T):
    n = boards.shape[0]
    after = np.empty(n, np.uint64)
    reward = np.empty(n, np.int64)
    for i in range(n):
        after[i], reward[i] = _move(boards[i], actions[i], T.rows, T.cols, T.moves)
    return after, reward


@numba.njit(cache=True)
def _legal_many(boards, T):
    n = boards.shape[0]
    out = np.zeros((n, 4), np.bool_)
    for i in range(n):
        bits = _legal_bits(boards[i], T.rows, T.cols, T.moves)
        for a in range(4):
            out[i, a] = (bits >> a) & 1
    return out


@numba.njit(cache=True)
def _spawn_outcomes(after, cells, p4):
    """Kernel: every board one spawn can make from ``after``, with its probability.

    Returns ``boards: uint64[2*e]`` and ``probs: float64[2*e]`` (e = empty cells), ordered by cell then
    tile (2 before 4).  Empty arrays if the board is full.
    """
    e = _count_empty(after, cells)
    boards = np.empty(2 * e, np.uint64)
    probs = np.empty(2 * e, np.float64)
    if e == 0:
        return boards, probs
    k = 0
    for c in range(cells):
        if _nibble(after, c) == 0:
            shift = np.uint64(4 * c)
            boards[k] = after | (np.uint64(1) << shift)
            probs[k] = (1.0 - p4) / e
            boards[k + 1] = after | (np.uint64(2) << shift)
            probs[k + 1] = p4 / e
            k += 2
    return boards, probs


# ----------------------------------------------------------------------------------------------------------
# Public API (validating wrappers)
# ----------------------------------------------------------------------------------------------------------


def _tables(rows: int, cols: int) -> BoardTables:
    check_packable(rows, cols)
    return board_tables(int(rows), int(cols))


def pack(grid) -> np.uint64 | np.ndarray:
    """Pack exponent grids into IDs.

    ``grid``: integer array ``(rows, cols)`` or ``(n, rows, cols)``, exponents in [0, 15].
    Returns ``np.uint64`` or ``uint64[n]``.
    """
    g = np.asarray(grid)
    if g.ndim not in (2, 3):
        raise ValueError(f"pack expects a board (rows, cols) or a batch (n, rows, cols), got shape {g.shape}")
    rows, cols = g.shape[-2:]
    check_packable(rows, cols)
    if not np.issubdtype(g.dtype, np.integer):
        raise TypeError(f"board exponents must be integers, got dtype {g.dtype}")
    if g.size and (g.min() < 0 or g.max() > MAX_PACKED_EXPONENT):
        raise ValueError(
            f"exponents must lie in [0, {MAX_PACKED_EXPONENT}] for the packed form, got range [{g.min()}, {g.max()}]"
        )
    flat = g.reshape(-1, rows * cols).astype(np.uint64)
    shifts = (np.arange(rows * cols, dtype=np.uint64) * np.uint64(4))[None, :]
    ids = np.bitwise_or.reduce(flat << shifts, axis=1)
    return ids if g.ndim == 3 else np.uint64(ids[0])


def unpack(ids, rows: int, cols: int) -> np.ndarray:
    """Unpack IDs into exponent grids: ``uint8 (rows, cols)`` for a scalar, ``uint8 (n, rows, cols)`` for a batch."""
    check_packable(rows, cols)
    arr = np.asarray(ids, dtype=np.uint64)
    flat = arr.reshape(-1)
    shifts = (np.arange(rows * cols, dtype=np.uint64) * np.uint64(4))[None, :]
    cells = ((flat[:, None] >> shifts) & np.uint64(15)).astype(np.uint8)
    if rows * cols < 16:
        high = flat >> np.uint64(4 * rows * cols)
        if np.any(high):
            raise ValueError(f"ID has bits set beyond the {rows * cols} cells of a {rows}x{cols} board")
    out = cells.reshape(-1, rows, cols)
    return out[0] if arr.ndim == 0 else out


def move(board, action, rows: int, cols: int):
    """Apply ``action`` (0..3) to packed board(s).

    Scalar: returns ``(afterstate: np.uint64, reward: int)``; the move is illegal iff ``afterstate == board``.
    Batch (``uint64[n]`` with ``actions: int[n]`` or one int): returns ``(uint64[n], int64[n])``.
    """
    T = _tables(rows, cols)
    arr = np.asarray(board, dtype=np.uint64)
    acts = np.broadcast_to(np.asarray(action, dtype=np.int64), arr.shape)
    if acts.size and (acts.min() < 0 or acts.max() > 3):
        raise ValueError(f"actions must be 0..3 (UP, RIGHT, DOWN, LEFT), got {action!r}")
    if arr.ndim == 0:
        after, reward = _move(np.uint64(arr), int(acts), T.rows, T.cols, T.moves)
        return np.uint64(after), int(reward)
    return _move_many(arr.reshape(-1), np.ascontiguousarray(acts.reshape(-1)), T)


def legal_actions(board, rows: int, cols: int) -> np.ndarray:
    """Legal-move mask: ``bool[4]`` for one board, ``bool[n, 4]`` for ``uint64[n]``."""
    T = _tables(rows, cols)
    arr = np.asarray(board, dtype=np.uint64)
    out = _legal_many(arr.reshape(-1), T)
    return out[0] if arr.ndim == 0 else out


def is_terminal(board, rows: int, cols: int):
    """True where no move is legal."""
    return ~legal_actions(board, rows, cols).any(axis=-1)


def age(board, rows: int, cols: int):
    """Sum of tile values (int for one board, ``int64[n]`` for a batch)."""
    check_packable(rows, cols)
    arr = np.asarray(board, dtype=np.uint64)
    grids = unpack(arr.reshape(-1), rows, cols).reshape(arr.size, -1).astype(np.int64)
    out = np.where(grids > 0, np.left_shift(1, grids), 0).sum(axis=1)
    return int(out[0]) if arr.ndim == 0 else out


def max_exponent_of(board, rows: int, cols: int):
    """Largest exponent on the board(s)."""
    g = unpack(board, rows, cols)
    return int(g.max()) if g.ndim == 2 else g.reshape(g.shape[0], -1).max(axis=1)


def count_empty(board, rows: int, cols: int):
    """Number of empty cells."""
    g = unpack(board, rows, cols)
    return int((g == 0).sum()) if g.ndim == 2 else (g.reshape(g.shape[0], -1) == 0).sum(axis=1)


def symmetries(board, rows: int, cols: int) -> np.ndarray:
    """All images of one packed board under the symmetry group: ``uint64[n_sym]`` (index 0 = identity)."""
    T = _tables(rows, cols)
    b = np.uint64(board)
    return np.array([_transform(b, T.sym_perm[s]) for s in range(T.sym_perm.shape[0])], dtype=np.uint64)


def canonical(board, rows: int, cols: int):
    """Canonical form: minimum packed ID over the board's symmetries (8 if square, 4 otherwise)."""
    T = _tables(rows, cols)
    arr = np.asarray(board, dtype=np.uint64)
    out = _canonical_many(arr.reshape(-1), rows, cols, T.sym_lines, T.sym_bytes)
    return np.uint64(out[0]) if arr.ndim == 0 else out


def spawn_outcomes(afterstate, rows: int, cols: int, p4: float = 0.1) -> tuple[np.ndarray, np.ndarray]:
    """The chance node: every board one spawn makes from ``afterstate`` and its probability.

    Returns ``(boards: uint64[2e], probs: float64[2e])`` with e the number of empty cells; a tile 2 (exponent
    1) with probability ``1-p4`` and a 4 with ``p4``, in a uniformly chosen empty cell.
    """
    check_p4(p4)
    check_packable(rows, cols)
    return _spawn_outcomes(np.uint64(afterstate), rows * cols, float(p4))


def start_states(rows: int, cols: int, p4: float = 0.1, canonical_only: bool = False, board=0, sym_perm=None):
    """Distribution of the start position: two spawns on the empty board (or on ``board``'s empty cells: an
    endgame pattern's fixed tiles).

    Returns ``(boards: uint64[m], probs: float64[m])`` sorted by ID, probabilities summing to 1.  With
    ``canonical_only`` boards are replaced by their canonical form (the minimum over the board's symmetries, or
    over ``sym_perm``'s rows: a pattern's subgroup) and probabilities merged.
    """
    check_p4(p4)
    perm = _tables(rows, cols).sym_perm if sym_perm is None else sym_perm
    cells = rows * cols
    acc: dict[int, float] = {}
    first_boards, first_probs = _spawn_outcomes(np.uint64(board), cells, float(p4))
    for b1, p1 in zip(first_boards, first_probs, strict=True):
        second_boards, second_probs = _spawn_outcomes(b1, cells, float(p4))
        for b2, p2 in zip(second_boards, second_probs, strict=True):
            key = int(_canonical(b2, perm)) if canonical_only else int(b2)
            acc[key] = acc.get(key, 0.0) + float(p1 * p2)
    keys = sorted(acc)
    return np.array(keys, dtype=np.uint64), np.array([acc[k] for k in keys], dtype=np.float64)


def check_p4(p4, name: str = "p4") -> float:
    """Validate the probability of a 4-tile spawn (``name``: the argument's name, for the error)."""
    try:
        value = float(p4)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a probability in [0, 1], got {p4!r}") from None
    if not 0.0 <= value <= 1.0 or value != value:
        raise ValueError(f"{name} must be a probability in [0, 1], got {p4!r}")
    return value
