"""Endgame patterns: a board with fixed large tiles, on which the remaining cells play to make a target tile.

A pattern is a board shape (at most 16 cells) plus

* fixed cells, each holding a given tile larger than any tile the free cells may hold;
* a target tile ``T`` (a power of two >= 8);
* target cells among the free cells (all of them if none is named).

Its rules (see :mod:`env2048.rules`): a move is allowed iff it changes the board and leaves every fixed tile in
its cell; spawns go to empty free cells; a move *succeeds* (value 1, the game ends) when it leaves a ``T`` on a
target cell, and *fails* (value 0, the game ends) when it leaves a free tile larger than ``T`` (success first if
both); a board with no allowed move is worth 0.  The start is the fixed tiles plus two spawns.  A pattern's *age*
is the sum of its free tiles.

Two options reproduce other solvers' rules: ``success``, a list of alternatives, each a list of
``[row, col, tile]`` that must all hold after the move (instead of ``T`` on a target cell), and ``cap``, the
largest tile allowed on a free cell (``T`` by default), with ``precedence`` saying whether success or failure
wins when one move does both.

Pattern files are JSON::

    {"rows": 4, "cols": 4, "target": 512,
     "grid": [". . . .",
              ". . . .",
              ". 8192 4096 2048",
              ". 16384 32768 1024"]}

``.`` is a free cell, ``t`` a free target cell, a number a fixed tile.  ``p4`` is optional.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .rules import make_rules
from .tables import BoardTables, board_tables, subgroup_tables

MAX_EXPONENT = 15
MIN_TARGET = 8
PRECEDENCES = ("success", "failure")


class PatternError(ValueError):
    """A pattern that breaks a rule of :mod:`env2048.pattern`; the message names what is wrong."""


@dataclass(frozen=True)
class Pattern:
    """A validated endgame pattern (build it with :func:`load_pattern`, :func:`builtin_pattern` or
    :meth:`from_dict`).  Cells are flat indices ``row * cols + col``; tiles are exponents."""

    rows: int
    cols: int
    fixed: tuple[tuple[int, int], ...]  # (cell, exponent), sorted by cell
    target: int  # exponent of T
    conditions: tuple[tuple[tuple[int, int], ...], ...]  # success alternatives: ((cell, exponent), ...)
    cap: int  # largest exponent a free cell may hold
    success_first: bool = True
    p4: float | None = None
    name: str = "custom"
    source: dict = field(default=None, compare=False, hash=False, repr=False)

    # ------------------------------------------------------------------ construction

    @classmethod
    def from_dict(cls, data: dict, name: str = "custom") -> Pattern:
        """A pattern from the JSON form (see the module); raises :class:`PatternError` naming what is wrong."""
        if not isinstance(data, dict):
            kind = type(data).__name__
            raise PatternError(f"a pattern is a JSON object with rows, cols, grid and target, got {kind}")
        unknown = set(data) - {"rows", "cols", "grid", "target", "p4", "success", "cap", "precedence", "name"}
        if unknown:
            raise PatternError(
                f"unknown pattern keys {sorted(unknown)}; allowed: rows, cols, grid, target, p4, "
                "success, cap, precedence, name"
            )
        for key in ("rows", "cols", "grid", "target"):
            if key not in data:
                raise PatternError(f"the pattern has no {key!r}")
        rows, cols = _positive_int(data["rows"], "rows"), _positive_int(data["cols"], "cols")
        if rows * cols > 16:
            raise PatternError(f"a {rows}x{cols} board has {rows * cols} cells; patterns have at most 16")
        target = _tile_exponent(data["target"], "target")
        if target < 3 or target > MAX_EXPONENT - 1:
            raise PatternError(f"the target must be a power of two from {MIN_TARGET} to 16384, got {data['target']}")
        fixed, targets = _parse_grid(data["grid"], rows, cols)
        free = [c for c in range(rows * cols) if c not in fixed]
        if not free:
            raise PatternError("the pattern has no free cell: every cell is fixed")
        cap = _tile_exponent(data["cap"], "cap") if "cap" in data else target
        if "success" in data:
            if targets:
                raise PatternError("give either target cells ('t' in the grid) or 'success', not both")
            conditions = _parse_success(data["success"], rows, cols, fixed)
        else:
            conditions = tuple(((c, target),) for c in (targets or free))
        for cell, e in sorted(fixed.items()):
            if e <= cap:
                raise PatternError(
                    f"fixed tile {1 << e} at row {cell // cols}, col {cell % cols} is not larger than "
                    f"{1 << cap}, the largest tile the free cells may hold: fixed tiles must never merge"
                )
        precedence = data.get("precedence", "success")
        if precedence not in PRECEDENCES:
            raise PatternError(f"precedence must be one of {', '.join(PRECEDENCES)}, got {precedence!r}")
        p4 = data.get("p4")
        if p4 is not None:
            from .board import check_p4

            p4 = check_p4(p4)
        return cls(
            rows,
            cols,
            tuple(sorted(fixed.items())),
            target,
            conditions,
            cap,
            precedence == "success",
            p4,
            str(data.get("name", name)),
            data,
        )

    # ------------------------------------------------------------------ derived

    @property
    def cells(self) -> int:
        return self.rows * self.cols

    @property
    def target_tile(self) -> int:
        return 1 << self.target

    @property
    def fixed_cells(self) -> dict[int, int]:
        return dict(self.fixed)

    @property
    def free_cells(self) -> tuple[int, ...]:
        fixed = self.fixed_cells
        return tuple(c for c in range(self.cells) if c not in fixed)

    @property
    def fixed_board(self) -> np.uint64:
        """The packed board holding the fixed tiles only."""
        return np.uint64(sum(e << (4 * c) for c, e in self.fixed))

    @property
    def age_offset(self) -> int:
        """Sum of the fixed tiles: a board's age is its tile sum minus this."""
        return sum(1 << e for _, e in self.fixed)

    @property
    def rules(self) -> np.ndarray:
        """The rules array (:mod:`env2048.rules`)."""
        return _rules(self)

    @property
    def symmetries(self) -> tuple[int, ...]:
        """Indices (into the board's symmetry tables) of the symmetries that map the pattern onto itself: fixed
        tiles onto equal fixed tiles, success conditions onto success conditions.  Always starts with 0."""
        return _symmetries(self)

    @property
    def tables(self) -> BoardTables:
        """The board's lookup tables with the pattern's symmetry group (all of the board's if it keeps them)."""
        return subgroup_tables(self.rows, self.cols, self.symmetries)

    def to_dict(self) -> dict:
        """The JSON form (round-trips through :meth:`from_dict`)."""
        fixed = self.fixed_cells
        single = all(len(c) == 1 and c[0][1] == self.target for c in self.conditions)
        targets = {c[0][0] for c in self.conditions} if single else set()
        all_free = targets == set(self.free_cells)
        grid = []
        for r in range(self.rows):
            tokens = []
            for c in range(self.cols):
                cell = r * self.cols + c
                if cell in fixed:
                    tokens.append(str(1 << fixed[cell]))
                else:
                    tokens.append("t" if cell in targets and not all_free else ".")
            grid.append(" ".join(tokens))
        out = {"name": self.name, "rows": self.rows, "cols": self.cols, "grid": grid, "target": self.target_tile}
        if not single:
            out["success"] = [
                [[cell // self.cols, cell % self.cols, 1 << e] for cell, e in alt] for alt in self.conditions
            ]
        if self.cap != self.target:
            out["cap"] = 1 << self.cap
        if not self.success_first:
            out["precedence"] = "failure"
        if self.p4 is not None:
            out["p4"] = self.p4
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def describe(self) -> str:
        free = len(self.free_cells)
        return f"pattern {self.name} ({self.rows}x{self.cols}, {free} free cells, target {self.target_tile})"


# ---------------------------------------------------------------------- parsing helpers


def _positive_int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PatternError(f"{what} must be a positive integer, got {value!r}")
    return value


def _tile_exponent(value, what: str) -> int:
    """Exponent of a tile value (a power of two >= 2, at most 32768)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 2 or value & (value - 1):
        raise PatternError(f"{what} must be a tile, a power of two >= 2, got {value!r}")
    e = value.bit_length() - 1
    if e > MAX_EXPONENT:
        raise PatternError(f"{what} {value} is larger than 32768, the largest tile a packed board holds")
    return e


def _parse_grid(grid, rows: int, cols: int) -> tuple[dict[int, int], list[int]]:
    """``(fixed cell -> exponent, target cells)`` of the grid's rows of tokens."""
    if isinstance(grid, str) or not isinstance(grid, list | tuple) or len(grid) != rows:
        got = len(grid) if isinstance(grid, list | tuple) else type(grid).__name__
        raise PatternError(f"grid must be a list of {rows} strings (one per row), got {got}")
    fixed: dict[int, int] = {}
    targets: list[int] = []
    for r, line in enumerate(grid):
        tokens = str(line).split()
        if len(tokens) != cols:
            raise PatternError(f"grid row {r} {line!r} has {len(tokens)} cells; the board has {cols} columns")
        for c, token in enumerate(tokens):
            cell = r * cols + c
            if token == ".":
                continue
            if token == "t":
                targets.append(cell)
                continue
            if not token.isdigit():
                raise PatternError(f"grid row {r}, col {c}: {token!r} is not '.', 't' or a tile value")
            fixed[cell] = _tile_exponent(int(token), f"fixed tile at row {r}, col {c}")
    return fixed, targets


def _parse_success(success, rows: int, cols: int, fixed: dict[int, int]) -> tuple:
    if not isinstance(success, list) or not success:
        raise PatternError("success must be a non-empty list of alternatives, each a list of [row, col, tile]")
    alternatives = []
    for alt in success:
        if not isinstance(alt, list) or not alt:
            raise PatternError(f"success alternative {alt!r} must be a non-empty list of [row, col, tile]")
        cond = {}
        for item in alt:
            if not isinstance(item, list) or len(item) != 3:
                raise PatternError(f"success item {item!r} must be [row, col, tile]")
            r, c, tile = item
            if not (isinstance(r, int) and isinstance(c, int) and 0 <= r < rows and 0 <= c < cols):
                raise PatternError(f"success item {item!r}: row and col must lie on the {rows}x{cols} board")
            cell = r * cols + c
            if cell in fixed:
                raise PatternError(f"success item {item!r}: row {r}, col {c} is a fixed cell")
            cond[cell] = _tile_exponent(tile, f"success tile at row {r}, col {c}")
        alternatives.append(tuple(sorted(cond.items())))
    return tuple(alternatives)


# ---------------------------------------------------------------------- cached derivations


@functools.cache
def _rules(p: Pattern) -> np.ndarray:
    return make_rules(p.cells, p.fixed_cells, p.cap, [dict(alt) for alt in p.conditions], p.success_first)


@functools.cache
def _symmetries(p: Pattern) -> tuple[int, ...]:
    perm = board_tables(p.rows, p.cols).sym_perm
    fixed = p.fixed_cells
    conditions = {frozenset(alt) for alt in p.conditions}
    keep = []
    for s in range(perm.shape[0]):
        dest = np.argsort(perm[s])  # dest[src]: where symmetry s moves cell src
        if any(fixed.get(int(dest[c])) != e for c, e in fixed.items()):
            continue
        if {frozenset((int(dest[c]), e) for c, e in alt) for alt in conditions} != conditions:
            continue
        keep.append(s)
    return tuple(keep)


# ---------------------------------------------------------------------- the community's patterns

#: Built-in patterns on the 4x4 board, from the 2048 community's endgame tables (game-difficulty/
#: 2048EndgameTablebase, whose names, fixed cells and target cells they keep; see docs/endgame.md).  A digit marks
#: a fixed cell; fixed tiles get the chain 2T, 4T, ... in the order of their digit (1 = 2T), capped at 32768: their
#: values never change play (they never merge), the chain only makes the boards look like the real endgame.
BUILTIN_LAYOUTS = {
    # free cells per row 4, 4, 1, 1: the outer L (top row and left column) plus three cells
    "L3": (". . . .", ". . . .", ". 4 5 6", ". 3 2 1"),
    # free cells per row 4, 4, 2: the next tile is made on the cell next to the fixed ones
    "442": (". . . .", ". . . .", ". t 1 2", "6 5 4 3"),
    # 2, 4, 2, 2 free cells per column: a T of free cells with target cells at its joints
    "t": (". . . .", ". . t t", "5 t 1 2", "6 t 4 3"),
    # 12 free cells.  LL (4, 4, 2, 2 per row): the outer and the inner L around a 2x2 block
    "LL": (". . . .", ". . t t", ". t 1 2", ". t 4 3"),
    # 4431: four fixed tiles, the next one made beside them
    "4431": (". . . .", ". . . .", ". . t 1", ". 4 3 2"),
    # 444: one fixed row
    "444": (". . . .", ". . . .", ". t t .", "4 3 2 1"),
}


def builtin_names() -> tuple[str, ...]:
    return tuple(BUILTIN_LAYOUTS)


def builtin_pattern(name: str, target: int, p4: float | None = None) -> Pattern:
    """The built-in pattern ``name`` (see :data:`BUILTIN_LAYOUTS`) for target tile ``target``."""
    if name not in BUILTIN_LAYOUTS:
        raise PatternError(f"unknown pattern {name!r}; built-in patterns: {', '.join(BUILTIN_LAYOUTS)}, or a JSON file")
    t = _tile_exponent(target, "target")
    grid = []
    for line in BUILTIN_LAYOUTS[name]:
        tokens = [tok if tok in (".", "t") else str(1 << min(MAX_EXPONENT, t + int(tok))) for tok in line.split()]
        grid.append(" ".join(tokens))
    data = {"name": name, "rows": 4, "cols": 4, "grid": grid, "target": int(target)}
    if p4 is not None:
        data["p4"] = p4
    return Pattern.from_dict(data)


def load_pattern(spec: str | Path | dict | Pattern, target: int | None = None, p4: float | None = None) -> Pattern:
    """A pattern from a built-in name (with ``target``), a JSON file path, or its dict form.  ``target`` given with
    a file or dict overrides the file's ``target``."""
    if isinstance(spec, Pattern):
        return spec
    if isinstance(spec, dict):
        data = dict(spec)
    elif str(spec) in BUILTIN_LAYOUTS:
        if target is None:
            raise PatternError(f"pattern {spec} needs a target tile (e.g. --target 512)")
        return builtin_pattern(str(spec), target, p4)
    else:
        path = Path(spec)
        if not path.exists():
            raise PatternError(f"{spec!r} is neither a built-in pattern ({', '.join(BUILTIN_LAYOUTS)}) nor a file")
        try:
            data = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise PatternError(f"pattern file {path}: not valid JSON ({e})") from None
        data.setdefault("name", path.stem)
    if target is not None:
        data["target"] = int(target)
    if p4 is not None:
        data["p4"] = p4
    return Pattern.from_dict(data)
