"""Kernels on ``uint8`` exponent arrays: any board from 2x2 to 8x8, any exponent up to 255.

A board here is a flat ``uint8[rows*cols]`` array in row-major order (a ``(rows, cols)`` array's ``ravel()``).
These kernels drive the environments; the packed kernels in :mod:`env2048.board` drive the solver.  Both are
checked against the slow reference in ``tests/naive.py``.

No kernel draws random numbers: a spawn takes two uniforms in [0, 1) from the caller.
"""

from __future__ import annotations

import numba

from .shape import DOWN, LEFT, RIGHT, UP

__all__ = ["line_geometry", "move_inplace", "legal_bits", "spawn_inplace", "grid_age", "grid_max_exponent"]


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


@numba.njit(cache=True)
def move_inplace(flat, rows, cols, action):
    """Slide and merge toward the wall of ``action``, in place.

    Returns ``(reward, changed)``: reward = sum of the values of the merged tiles, ``changed`` False for an
    illegal move (then ``flat`` is untouched).  Exponents must stay below 63 (tiles fit in int64).
    """
    n_lines, length, _, step = line_geometry(action, rows, cols)
    reward = 0
    changed = False
    for line in range(n_lines):
        start = line_start(action, line, rows, cols)
        write = 0
        last = 0
        for k in range(length):
            v = flat[start + k * step]
            if v == 0:
                continue
            if v == last:
                flat[start + (write - 1) * step] = v + 1
                reward += 1 << (v + 1)
                last = 0
                changed = True
            else:
                if write != k:
                    changed = True
                flat[start + write * step] = v
                write += 1
                last = v
        for k in range(write, length):
            flat[start + k * step] = 0
    return reward, changed


@numba.njit(cache=True)
def legal_bits(flat, rows, cols):
    """Bit a set iff action a is legal: one pass over adjacent pairs.

    A move toward the wall is legal iff some neighbour pair (near, far) has ``far != 0`` and
    (``near == 0`` or ``near == far``).
    """
    bits = 0
    for r in range(rows):
        for c in range(cols - 1):
            a = flat[r * cols + c]
            b = flat[r * cols + c + 1]
            if b != 0 and (a == 0 or a == b):
                bits |= 1 << LEFT
            if a != 0 and (b == 0 or a == b):
                bits |= 1 << RIGHT
        if bits & ((1 << LEFT) | (1 << RIGHT)) == (1 << LEFT) | (1 << RIGHT):
            break
    for r in range(rows - 1):
        for c in range(cols):
            a = flat[r * cols + c]
            b = flat[(r + 1) * cols + c]
            if b != 0 and (a == 0 or a == b):
                bits |= 1 << UP
            if a != 0 and (b == 0 or a == b):
                bits |= 1 << DOWN
        if bits & ((1 << UP) | (1 << DOWN)) == (1 << UP) | (1 << DOWN):
            break
    return bits


@numba.njit(cache=True)
def spawn_inplace(flat, u_cell, u_tile, p4):
    """Place one tile in a uniformly chosen empty cell, in place.

    The cell is the ``floor(u_cell * e)``-th empty cell in row-major order (e = empty count); the tile is a 4
    (exponent 2) if ``u_tile < p4`` else a 2.  Returns the flat index used, or -1 if the board is full.
    """
    e = 0
    for i in range(flat.shape[0]):
        if flat[i] == 0:
            e += 1
    if e == 0:
        return -1
    k = int(u_cell * e)
    if k >= e:
        k = e - 1
    for i in range(flat.shape[0]):
        if flat[i] == 0:
            if k == 0:
                flat[i] = 2 if u_tile < p4 else 1
                return i
            k -= 1
    return -1


@numba.njit(cache=True)
def grid_age(flat):
    """Sum of tile values (int64)."""
    total = 0
    for i in range(flat.shape[0]):
        if flat[i]:
            total += 1 << flat[i]
    return total


@numba.njit(cache=True)
def grid_max_exponent(flat):
    best = 0
    for i in range(flat.shape[0]):
        if flat[i] > best:
            best = flat[i]
    return best
