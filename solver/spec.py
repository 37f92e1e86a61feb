"""What a solve computes: board shape, objective, spawn model and p4, validated in one place.

Objectives:

* ``score`` — expected total future merge reward (the game's score), terminal states worth 0;
* ``tile:K`` — probability of ever making the tile ``2**K`` (3 <= K <= 15).  A move that makes it is a win worth
  1; afterstates holding it are absorbing and are neither stored nor expanded, so no stored state holds it.

An endgame *pattern* (:mod:`env2048.pattern`: fixed tiles, target cells) replaces ``tile:K``'s rules by its own
(probability of success, ``K`` its target); ``tile:K`` is the pattern with no fixed cell and every cell a target,
and both reach the kernels as one rules array (:mod:`env2048.rules`).

Spawn models (who places the new tile after a move):

* ``random`` — the game: a uniformly random empty cell, a 2 with probability 1 - p4, a 4 with p4;
* ``adversarial`` — a minimising player picks both the cell and the tile (as in adversarial 2048); the tiles it
  may place are those the game can spawn (a 4 only if p4 > 0, a 2 only if p4 < 1);
* ``optimistic`` / ``pessimistic`` — the tile is drawn with p4 as in the game, then the best / worst empty cell
  for the mover is chosen (Kaneko & Yamashita's variants).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from env2048 import board as B
from env2048.board import check_p4
from env2048.pattern import Pattern
from env2048.rules import plain_rules
from env2048.shape import MAX_PACKED_EXPONENT, check_packable, parse_board
from env2048.tables import BoardTables, board_tables

SPAWN_MODELS = ("random", "adversarial", "optimistic", "pessimistic")
#: ``win_exponent`` of the score objective: no packed board can hold the tile 2**16, so nothing ever wins.
NO_WIN = MAX_PACKED_EXPONENT + 1
MIN_TARGET_EXPONENT = 3


@dataclass(frozen=True)
class SolveSpec:
    """A validated solve description (build it with :meth:`parse`)."""

    rows: int
    cols: int
    objective: str = "score"
    p4: float = 0.1
    spawn: str = "random"
    pattern: Pattern | None = None

    @classmethod
    def parse(cls, board: str, objective: str = "score", p4: float = 0.1, spawn: str = "random") -> SolveSpec:
        rows, cols = parse_board(board)
        check_packable(rows, cols)
        p4 = check_p4(p4)
        if spawn not in SPAWN_MODELS:
            raise ValueError(f"unknown spawn model {spawn!r}; choose one of {', '.join(SPAWN_MODELS)}")
        objective = normalise_objective(objective)
        return cls(rows, cols, objective, p4, spawn)

    @classmethod
    def for_pattern(cls, pattern: Pattern, p4: float | None = None, spawn: str = "random") -> SolveSpec:
        """The solve of an endgame pattern: probability of success (objective ``tile:K``, K its target), ``p4``
        from the argument, else the pattern's, else 0.1."""
        if spawn not in SPAWN_MODELS:
            raise ValueError(f"unknown spawn model {spawn!r}; choose one of {', '.join(SPAWN_MODELS)}")
        p4 = check_p4(p4 if p4 is not None else pattern.p4 if pattern.p4 is not None else 0.1)
        return cls(pattern.rows, pattern.cols, f"tile:{pattern.target}", p4, spawn, pattern)

    @property
    def board(self) -> str:
        return f"{self.rows}x{self.cols}"

    @property
    def cells(self) -> int:
        return self.rows * self.cols

    @property
    def target_exponent(self) -> int | None:
        """K for ``tile:K``, None for ``score``."""
        return None if self.objective == "score" else int(self.objective.split(":")[1])

    @property
    def win_exponent(self) -> int:
        """Exponent whose appearance wins (``NO_WIN`` for the score objective)."""
        k = self.target_exponent
        return NO_WIN if k is None else k

    @property
    def spawn_code(self) -> int:
        return SPAWN_MODELS.index(self.spawn)

    @property
    def spawns_two(self) -> bool:
        """Whether a 2 can spawn (p4 < 1)."""
        return self.p4 < 1.0

    @property
    def spawns_four(self) -> bool:
        """Whether a 4 can spawn (p4 > 0)."""
        return self.p4 > 0.0

    @property
    def rules(self) -> np.ndarray:
        """The rules array the kernels play by (:mod:`env2048.rules`): the pattern's, or the plain game's."""
        return self.pattern.rules if self.pattern is not None else _plain_rules(self.cells, self.target_exponent)

    @property
    def tables(self) -> BoardTables:
        """The board's lookup tables, with the pattern's symmetry group if there is a pattern."""
        return self.pattern.tables if self.pattern is not None else board_tables(self.rows, self.cols)

    @property
    def rank_shape(self):
        """What format v2's board ranks code (:class:`solver.format.ranking.RankShape`): every cell, or a pattern's free
        cells."""
        from .format.ranking import pattern_rank_shape, plain_rank_shape

        if self.pattern is None:
            return plain_rank_shape(self.rows, self.cols)
        return pattern_rank_shape(self.rows, self.cols, self.pattern.fixed_cells, self.tables.sym_perm)

    @property
    def age_offset(self) -> int:
        """Tile sum of the fixed cells (0 without a pattern): a board's age is its tile sum minus this."""
        return self.pattern.age_offset if self.pattern is not None else 0

    @property
    def empty_board(self) -> np.uint64:
        """The board before the two start spawns: the fixed tiles (the empty board without a pattern)."""
        return self.pattern.fixed_board if self.pattern is not None else np.uint64(0)

    def ages(self, ids):
        """Age of each packed board (``int64``, the sum of its free tiles), like ``ids``."""
        return B.age(ids, self.rows, self.cols) - self.age_offset

    def start_states(self, canonical_only: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """``(ids uint64[m], probs float64[m])``: the start distribution (two spawns on the empty board, or on the
        pattern's fixed tiles), canonical under the game's symmetries if ``canonical_only``."""
        return B.start_states(self.rows, self.cols, self.p4, canonical_only, self.empty_board, self.tables.sym_perm)

    def describe(self) -> str:
        if self.pattern is not None:
            return f"{self.pattern.describe()} (spawn {self.spawn}, p4={self.p4:g})"
        return f"{self.board} {self.objective} (spawn {self.spawn}, p4={self.p4:g})"

    def as_dict(self) -> dict:
        out = {"rows": self.rows, "cols": self.cols, "objective": self.objective, "p4": self.p4, "spawn": self.spawn}
        if self.pattern is not None:
            out["pattern"] = self.pattern.to_dict()
        return out


@functools.cache
def _plain_rules(cells: int, target_exponent: int | None) -> np.ndarray:
    return plain_rules(cells, target_exponent)


def normalise_objective(objective: str) -> str:
    """``"score"`` or ``"tile:K"`` with 3 <= K <= 15; anything else raises ``ValueError``."""
    text = str(objective).strip().lower()
    if text == "score":
        return text
    if text.startswith("tile:"):
        k = text[5:]
        if k.isdigit() and MIN_TARGET_EXPONENT <= int(k) <= MAX_PACKED_EXPONENT:
            return f"tile:{int(k)}"
        hint = ""
        if k.isdigit() and int(k) > MAX_PACKED_EXPONENT and int(k) & (int(k) - 1) == 0:
            hint = f" (K is the exponent: tile {int(k)} is tile:{int(k).bit_length() - 1})"
        raise ValueError(
            f"objective {objective!r}: K must be an exponent in [{MIN_TARGET_EXPONENT}, {MAX_PACKED_EXPONENT}]{hint}"
        )
    raise ValueError(f"objective must be 'score' or 'tile:K' (K = exponent of the target tile), got {objective!r}")
