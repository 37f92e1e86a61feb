"""Slow, obviously-correct pure-Python reference of the 2048 rules (REFERENCE.md), for checking the kernels.

Boards are lists of lists of exponents (0 = empty).  Nothing here imports the project's code.
"""

from __future__ import annotations

UP, RIGHT, DOWN, LEFT = 0, 1, 2, 3


def merge_line(line: list[int]) -> tuple[list[int], int]:
    """Merge a line toward index 0: ``[1, 1, 1, 0] -> [2, 1, 0, 0]``, reward 4."""
    tiles = [v for v in line if v]
    out: list[int] = []
    reward = 0
    i = 0
    while i < len(tiles):
        if i + 1 < len(tiles) and tiles[i] == tiles[i + 1]:
            out.append(tiles[i] + 1)
            reward += 2 ** (tiles[i] + 1)
            i += 2
        else:
            out.append(tiles[i])
            i += 1
    return out + [0] * (len(line) - len(out)), reward


def lines_of(grid: list[list[int]], action: int) -> list[list[tuple[int, int]]]:
    """Cell coordinates of each line, listed from the wall the tiles slide toward."""
    rows, cols = len(grid), len(grid[0])
    if action == LEFT:
        return [[(r, c) for c in range(cols)] for r in range(rows)]
    if action == RIGHT:
        return [[(r, c) for c in reversed(range(cols))] for r in range(rows)]
    if action == UP:
        return [[(r, c) for r in range(rows)] for c in range(cols)]
    if action == DOWN:
        return [[(r, c) for r in reversed(range(rows))] for c in range(cols)]
    raise ValueError(action)


def move(grid: list[list[int]], action: int) -> tuple[list[list[int]], int]:
    """Afterstate and reward of ``action``."""
    out = [row[:] for row in grid]
    total = 0
    for cells in lines_of(grid, action):
        merged, reward = merge_line([grid[r][c] for r, c in cells])
        total += reward
        for (r, c), v in zip(cells, merged, strict=True):
            out[r][c] = v
    return out, total


def legal(grid: list[list[int]]) -> list[bool]:
    return [move(grid, a)[0] != grid for a in range(4)]


def age(grid: list[list[int]]) -> int:
    return sum(2**v for row in grid for v in row if v)


def empty_cells(grid: list[list[int]]) -> list[tuple[int, int]]:
    return [(r, c) for r, row in enumerate(grid) for c, v in enumerate(row) if v == 0]


def spawn_outcomes(grid: list[list[int]], p4: float) -> list[tuple[list[list[int]], float]]:
    """Every board one spawn makes, with its probability (cell uniform, tile 2 w.p. 1-p4, tile 4 w.p. p4)."""
    empties = empty_cells(grid)
    out = []
    for r, c in empties:
        for exponent, p in ((1, 1 - p4), (2, p4)):
            g = [row[:] for row in grid]
            g[r][c] = exponent
            out.append((g, p / len(empties)))
    return out


def turn(grid: list[list[int]], action: int, p4: float, spawn_after_illegal: bool = False):
    """``(outcomes, reward, legal)`` of one turn: the boards it can end on with their probabilities (the move, then
    one spawn), the move's reward and whether it changed the board.  An illegal move spawns nothing, unless
    ``spawn_after_illegal`` (the rule of "Beyond 2048", seed 003: a tile appears at the start of every turn); a
    board with no empty cell stays as it is."""
    after, reward = move(grid, action)
    moved = after != grid
    if not moved and not spawn_after_illegal:
        return [(grid, 1.0)], 0, False
    return spawn_outcomes(after, p4) or [(after, 1.0)], reward, moved


def pack(grid: list[list[int]]) -> int:
    cols = len(grid[0])
    return sum(v << (4 * (r * cols + c)) for r, row in enumerate(grid) for c, v in enumerate(row))


def unpack(board_id: int, rows: int, cols: int) -> list[list[int]]:
    return [[(board_id >> (4 * (r * cols + c))) & 15 for c in range(cols)] for r in range(rows)]


def mirror_lr(g):
    return [row[::-1] for row in g]


def mirror_ud(g):
    return g[::-1]


def transpose(g):
    return [list(col) for col in zip(*g, strict=True)]


def symmetries(grid: list[list[int]]) -> list[list[list[int]]]:
    """Images under the symmetry group: 4 (identity, mirrors, 180°) or 8 for a square board (all of D4)."""
    base = [grid, mirror_lr(grid), mirror_ud(grid), mirror_ud(mirror_lr(grid))]
    if len(grid) == len(grid[0]):
        base += [transpose(g) for g in base]
    return base


def canonical(grid: list[list[int]]) -> int:
    return min(pack(g) for g in symmetries(grid))


def start_distribution(rows: int, cols: int, p4: float) -> dict[int, float]:
    """Packed start boards -> probability (two spawns on the empty board)."""
    empty = [[0] * cols for _ in range(rows)]
    dist: dict[int, float] = {}
    for g1, p1 in spawn_outcomes(empty, p4):
        for g2, p2 in spawn_outcomes(g1, p4):
            key = pack(g2)
            dist[key] = dist.get(key, 0.0) + p1 * p2
    return dist
