"""Kernels on ``uint8`` exponent arrays: any board from 2x2 to 8x8, any exponent up to 255.

A board here is row ``i`` of a ``uint8[n, rows*cols]`` array (row-major cells; one board is ``b.reshape(1, -1)``
with ``i = 0``).  Kernels index ``b[i, cell]`` instead of taking a row view: inside ``prange`` loops a view
costs an atomic reference-count update on the shared parent array, which both cores then fight over.
These kernels drive the environments; the packed kernels in :mod:`env2048.board` drive the solver.  Both are
checked against the slow reference in ``tests/naive.py``.

No kernel draws random numbers: a spawn takes two uniforms in [0, 1) from the caller.
"""

from __future__ import annotations

import numba
import numpy as np

from .shape import DOWN, LEFT, RIGHT, UP

__all__ = [
    "exponent_rows",
    "line_geometry",
    "move_inplace",
    "move_many",
    "legal_bits",
    "spawn_inplace",
    "grid_age",
    "grid_max_exponent",
]


def exponent_rows(boards, cells: int) -> np.ndarray:
    """``boards`` (any array of exponents whose size is a multiple of ``cells``) as contiguous ``uint8 (n,
    cells)`` rows for the kernels here; a clear error for another size or an exponent outside 0..62 (tiles must
    fit in int64)."""
    arr = np.asarray(boards)
    if arr.size % cells:
        raise ValueError(f"boards of {cells} cells expected, got an array of shape {arr.shape}")
    if arr.size and (arr.min() < 0 or arr.max() > 62):
        raise ValueError(f"board exponents must be in 0..62, got {int(arr.min())}..{int(arr.max())}")
    return np.ascontiguousarray(arr.reshape(-1, cells).astype(np.uint8))


@numba.njit(cache=True, inline="always")
def line_geometry(action, rows, cols):
    """``(n_lines, length, start_step, cell_step)`` for the lines of a move.

    Line l starts (at the wall) at cell ``l*start_step + offset`` and walks away from it by ``cell_step``;
    the offset is folded in by :func:`line_start`.
    """
    if action == LEFT:
        return rows, cols, cols, 1
    if action == RIGHT:
        return rows, cols, cols, -1
    if action == UP:
        return cols, rows, 1, cols
    return cols, rows, 1, -cols


@numba.njit(cache=True, inline="always")
def line_start(action, line, rows, cols):
    if action == LEFT:
        return line * cols
    if action == RIGHT:
        return line * cols + cols - 1
    if action == UP:
        return line
    return (rows - 1) * cols + line


@numba.njit(cache=True, inline="always")
def _slide_line(b, i, start, step, length):
    """Generic slide of one line (any exponents, any length) in place: ``(reward, changed)``."""
    reward = 0
    changed = False
    write = 0
    last = 0
    for k in range(length):
        v = b[i, start + k * step]
        if v == 0:
            continue
        if v == last:
            b[i, start + (write - 1) * step] = v + 1
            reward += 1 << (v + 1)
            last = 0
            changed = True
        else:
            if write != k:
                changed = True
            b[i, start + write * step] = v
            write += 1
            last = v
    for k in range(write, length):
        b[i, start + k * step] = 0
    return reward, changed


@numba.njit(cache=True, inline="always")
def _table_line(b, i, start, step, length, toward0, table_reward):
    """Slide one line by table lookup: ``(reward, changed)``, or reward -1 if the table cannot serve it
    (an exponent above 15, or a merge of two 2**15 tiles)."""
    code = 0
    for k in range(length):
        v = b[i, start + k * step]
        if v > 15:
            return -1, False
        code |= np.int64(v) << (4 * k)
    reward = table_reward[code]
    if reward < 0:
        return -1, False
    new = np.int64(toward0[code])
    if new == code:
        return 0, False
    for k in range(length):
        b[i, start + k * step] = (new >> (4 * k)) & 15
    return reward, True


@numba.njit(cache=True)
def move_inplace(b, i, rows, cols, action, lines):
    """Slide and merge board i toward the wall of ``action``, in place.

    ``lines`` is :func:`env2048.tables.line_tables_for` of the shape: a line of at most 5 cells with exponents
    <= 15 is moved by one lookup in those tables, any other line by the generic slide.  Returns
    ``(reward, changed)``: reward = sum of the values of the merged tiles, ``changed`` False for an illegal
    move (then the board is untouched).  Exponents must stay below 63 (tiles fit in int64).
    """
    n_lines, length, _, step = line_geometry(action, rows, cols)
    if action == LEFT or action == RIGHT:
        toward0, table_reward = lines[0], lines[1]
    else:
        toward0, table_reward = lines[2], lines[3]
    use_table = toward0.shape[0] > 0
    reward = 0
    changed = False
    for line in range(n_lines):
        start = line_start(action, line, rows, cols)
        r = -1
        if use_table:
            r, line_changed = _table_line(b, i, start, step, length, toward0, table_reward)
        if r < 0:
            r, line_changed = _slide_line(b, i, start, step, length)
        reward += r
        changed |= line_changed
    return reward, changed


@numba.njit(cache=True)
def legal_bits(b, i, rows, cols):
    """Bit a set iff action a is legal, from one branch-free pass over adjacent pairs.

    A move toward the wall is legal iff some neighbour pair (near, far) has ``far != 0`` and
    (``near == 0`` or ``near == far``).
    """
    left = right = up = down = False
    for r in range(rows):
        for c in range(cols - 1):
            west = b[i, r * cols + c]
            east = b[i, r * cols + c + 1]
            same = west == east
            left |= (east != 0) & ((west == 0) | same)
            right |= (west != 0) & ((east == 0) | same)
    for r in range(rows - 1):
        for c in range(cols):
            north = b[i, r * cols + c]
            south = b[i, (r + 1) * cols + c]
            same = north == south
            up |= (south != 0) & ((north == 0) | same)
            down |= (north != 0) & ((south == 0) | same)
    return (int(up) << UP) | (int(right) << RIGHT) | (int(down) << DOWN) | (int(left) << LEFT)


@numba.njit(cache=True)
def spawn_inplace(b, i, u_cell, u_tile, p4):
    """Place one tile in a uniformly chosen empty cell, in place.

    The cell is the ``floor(u_cell * e)``-th empty cell in row-major order (e = empty count); the tile is a 4
    (exponent 2) if ``u_tile < p4`` else a 2.  Returns the flat index used, or -1 if the board is full.
    """
    e = 0
    for c in range(b.shape[1]):
        e += b[i, c] == 0
    if e == 0:
        return -1
    k = int(u_cell * e)
    if k >= e:
        k = e - 1
    for c in range(b.shape[1]):
        if b[i, c] == 0:
            if k == 0:
                b[i, c] = 2 if u_tile < p4 else 1
                return c
            k -= 1
    return -1


@numba.njit(cache=True)
def grid_age(b, i):
    """Sum of tile values (int64)."""
    total = 0
    for c in range(b.shape[1]):
        if b[i, c]:
            total += 1 << b[i, c]
    return total


@numba.njit(cache=True)
def grid_max_exponent(b, i):
    best = 0
    for c in range(b.shape[1]):
        if b[i, c] > best:
            best = b[i, c]
    return best


@numba.njit(cache=True)
def move_many(b, actions, rows, cols, lines):
    """Every board of ``b`` (``uint8[n, rows*cols]``) moved by its action (``int64[n]``) into a new array:
    ``(after uint8[n, rows*cols], reward int64[n], changed bool[n])``, each as :func:`move_inplace` gives it."""
    after = b.copy()
    reward = np.zeros(b.shape[0], np.int64)
    changed = np.zeros(b.shape[0], np.bool_)
    for i in range(b.shape[0]):
        reward[i], changed[i] = move_inplace(after, i, rows, cols, actions[i], lines)
    return after, reward, changed
