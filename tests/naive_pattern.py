"""An independent slow solver of endgame patterns: memoised recursion over raw boards (no ages, no symmetries),
with the rules written out from their definition (docs/endgame.md) on ``naive.py``'s moves.  It reads a
pattern's JSON form itself and shares no code with ``env2048.pattern`` / ``env2048.rules`` or the solver."""

from __future__ import annotations

import functools
import sys

import naive


class NaivePattern:
    def __init__(self, data: dict, p4: float = 0.1):
        self.rows, self.cols, self.p4 = data["rows"], data["cols"], p4
        self.fixed: dict[tuple[int, int], int] = {}
        targets = []
        for r, line in enumerate(data["grid"]):
            for c, token in enumerate(line.split()):
                if token == "t":
                    targets.append((r, c))
                elif token != ".":
                    self.fixed[(r, c)] = int(token).bit_length() - 1
        self.free = [(r, c) for r in range(self.rows) for c in range(self.cols) if (r, c) not in self.fixed]
        self.T = int(data["target"]).bit_length() - 1
        self.cap = int(data.get("cap", data["target"])).bit_length() - 1
        if "success" in data:  # alternatives of [row, col, tile] that must all hold
            self.alternatives = [[((r, c), int(t).bit_length() - 1) for r, c, t in alt] for alt in data["success"]]
        else:
            self.alternatives = [[(cell, self.T)] for cell in (targets or self.free)]
        self.success_first = data.get("precedence", "success") == "success"
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
        self.state_value = functools.cache(self._state_value)
        self.afterstate_value = functools.cache(lambda board: self.spawn_average(board, self.state_value))
        self.random_state_value = functools.cache(self._random_state_value)
        self.random_afterstate_value = functools.cache(lambda board: self.spawn_average(board, self.random_state_value))

    def outcome(self, grid, after) -> str:
        """'illegal', 'play', 'success' or 'failure' of the move from ``grid`` to ``after``."""
        if after == grid or any(after[r][c] != e for (r, c), e in self.fixed.items()):
            return "illegal"
        won = any(all(after[r][c] == e for (r, c), e in alt) for alt in self.alternatives)
        lost = any(after[r][c] > self.cap for r, c in self.free)
        if won and (self.success_first or not lost):
            return "success"
        return "failure" if lost else "play"

    def move_values(self, board, afterstate_value) -> list[float | None]:
        """Each action's value: None where the move is not allowed, 1 / 0 where it succeeds / fails, else
        ``afterstate_value`` of the board it leaves."""
        grid = [list(row) for row in board]
        out = []
        for action in range(4):
            after, _ = naive.move(grid, action)
            kind = self.outcome(grid, after)
            if kind == "illegal":
                out.append(None)
            elif kind in ("success", "failure"):
                out.append(float(kind == "success"))
            else:
                out.append(afterstate_value(tuple(map(tuple, after))))
        return out

    def q_values(self, board) -> list[float | None]:
        """Probability of success after each action under optimal play, None where the move is not allowed."""
        return self.move_values(board, self.afterstate_value)

    def _state_value(self, board) -> float:
        allowed = [q for q in self.q_values(board) if q is not None]
        return max(allowed) if allowed else 0.0

    def _random_state_value(self, board) -> float:
        """Probability of success of the uniformly random allowed move, from here on."""
        allowed = [q for q in self.move_values(board, self.random_afterstate_value) if q is not None]
        return sum(allowed) / len(allowed) if allowed else 0.0

    def spawn_average(self, board, state_value) -> float:
        """The spawn's expectation of ``state_value`` after the move that left ``board``."""
        empties = [(r, c) for r, c in self.free if board[r][c] == 0]
        total = 0.0
        for r, c in empties:
            for exponent, p in ((1, 1 - self.p4), (2, self.p4)):
                if p == 0:
                    continue
                child = [list(row) for row in board]
                child[r][c] = exponent
                total += p * state_value(tuple(map(tuple, child)))
        return total / len(empties)

    def fixed_grid(self) -> list[list[int]]:
        grid = [[0] * self.cols for _ in range(self.rows)]
        for (r, c), e in self.fixed.items():
            grid[r][c] = e
        return grid

    def starts(self) -> dict[tuple, float]:
        """The start distribution: two spawns on the free cells of the fixed tiles' board."""
        out: dict[tuple, float] = {}
        base = self.fixed_grid()
        spawns = [(e, p) for e, p in ((1, 1 - self.p4), (2, self.p4)) if p > 0]
        for r1, c1 in self.free:
            for e1, p1 in spawns:
                for r2, c2 in self.free:
                    if (r2, c2) == (r1, c1):
                        continue
                    for e2, p2 in spawns:
                        g = [row[:] for row in base]
                        g[r1][c1], g[r2][c2] = e1, e2
                        key = tuple(map(tuple, g))
                        out[key] = out.get(key, 0.0) + p1 / len(self.free) * p2 / (len(self.free) - 1)
        return out

    def start_value(self, random_policy: bool = False) -> float:
        """Probability of success from the start, under optimal play or the uniformly random allowed move."""
        value = self.random_state_value if random_policy else self.state_value
        return sum(p * value(board) for board, p in self.starts().items())

    def reachable_states(self) -> set[tuple]:
        """Every state reachable from the start (raw boards), games that ended not expanded."""
        todo = list(self.starts())
        seen = set(todo)
        while todo:
            board = todo.pop()
            grid = [list(row) for row in board]
            for action in range(4):
                after, _ = naive.move(grid, action)
                if self.outcome(grid, after) != "play":
                    continue
                for r, c in self.free:
                    if after[r][c]:
                        continue
                    for exponent in (1, 2):
                        child = [row[:] for row in after]
                        child[r][c] = exponent
                        key = tuple(map(tuple, child))
                        if key not in seen:
                            seen.add(key)
                            todo.append(key)
        return seen
