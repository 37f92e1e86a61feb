"""An independent slow solver: plain memoised recursion over the full game (no ages, no canonical forms).

Built only on the reference rules of ``naive.py``; it shares no code with the project's solver.  Boards are
tuples of row tuples of exponents.  Feasible for 2x2 and 2x3 (about 10**5 boards).
"""

from __future__ import annotations

import functools
import sys

import naive


class NaiveSolver:
    def __init__(self, rows: int, cols: int, objective: str = "score", p4: float = 0.1, spawn: str = "random"):
        self.rows, self.cols, self.p4, self.spawn = rows, cols, p4, spawn
        self.target = None if objective == "score" else int(objective.split(":")[1])
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
        self.state_value = functools.cache(self._state_value)
        self.afterstate_value = functools.cache(self._afterstate_value)
        self.reachable = functools.cache(self._reachable)

    def tiles(self) -> list[tuple[int, float]]:
        return [(e, p) for e, p in ((1, 1 - self.p4), (2, self.p4)) if p > 0]

    def wins(self, grid) -> bool:
        return self.target is not None and max(max(row) for row in grid) >= self.target

    def q_values(self, board) -> list[float | None]:
        """Reward + afterstate value per action, None for an illegal move."""
        grid = [list(row) for row in board]
        out = []
        for action in range(4):
            after, reward = naive.move(grid, action)
            if after == grid:
                out.append(None)
                continue
            r = reward if self.target is None else 0.0
            value = 1.0 if self.wins(after) else self.afterstate_value(tuple(map(tuple, after)))
            out.append(r + value)
        return out

    def _state_value(self, board) -> float:
        legal = [q for q in self.q_values(board) if q is not None]
        return max(legal) if legal else 0.0

    def _afterstate_value(self, board) -> float:
        grid = [list(row) for row in board]
        empties = naive.empty_cells(grid)
        by_tile = {}
        for exponent, _ in self.tiles():
            values = []
            for r, c in empties:
                child = [row[:] for row in grid]
                child[r][c] = exponent
                values.append(self.state_value(tuple(map(tuple, child))))
            by_tile[exponent] = values
        probs = dict(self.tiles())
        if self.spawn == "random":
            return sum(probs[e] * sum(v) for e, v in by_tile.items()) / len(empties)
        if self.spawn == "adversarial":
            return min(min(v) for v in by_tile.values())
        pick = max if self.spawn == "optimistic" else min
        return sum(probs[e] * pick(v) for e, v in by_tile.items())

    def start_value(self) -> float:
        dist = naive.start_distribution(self.rows, self.cols, self.p4)
        return sum(
            p * self.state_value(tuple(map(tuple, naive.unpack(k, self.rows, self.cols))))
            for k, p in dist.items()
            if p > 0
        )

    def _reachable(self) -> tuple[set[int], set[int], int]:
        """``(canonical states, canonical afterstates, terminal count)`` reachable from the start, by search
        over raw boards; win afterstates are not expanded.  The spawn model does not change what is reachable,
        so games that differ only in it share one search."""
        return _reachable(self.rows, self.cols, self.target, self.p4)


@functools.cache
def _reachable(rows: int, cols: int, target: int | None, p4: float) -> tuple[set[int], set[int], int]:
    dist = naive.start_distribution(rows, cols, p4)
    tiles = [e for e, p in ((1, 1 - p4), (2, p4)) if p > 0]
    todo = [naive.unpack(k, rows, cols) for k, p in dist.items() if p > 0]
    seen = {naive.pack(g) for g in todo}
    states, afterstates, terminal = set(), set(), set()
    while todo:
        grid = todo.pop()
        key = naive.canonical(grid)
        states.add(key)
        moved = False
        for action in range(4):
            after, _ = naive.move(grid, action)
            if after == grid:
                continue
            moved = True
            if target is not None and max(max(row) for row in after) >= target:
                continue
            afterstates.add(naive.canonical(after))
            for exponent in tiles:
                for r, c in naive.empty_cells(after):
                    child = [row[:] for row in after]
                    child[r][c] = exponent
                    packed = naive.pack(child)
                    if packed not in seen:
                        seen.add(packed)
                        todo.append(child)
        if not moved:
            terminal.add(key)
    return states, afterstates, len(terminal)


def shared_solver(rows: int, cols: int, objective: str = "score", p4: float = 0.1, spawn: str = "random"):
    """One solver per game for the whole test session: its memoised values are exact and never change, so the
    tests that check against the same game (in any module) pay for its recursion once."""
    return _solver(rows, cols, objective, float(p4), spawn)


@functools.cache
def _solver(rows: int, cols: int, objective: str, p4: float, spawn: str) -> NaiveSolver:
    return NaiveSolver(rows, cols, objective, p4, spawn)
