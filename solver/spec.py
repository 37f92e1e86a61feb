"""What a solve computes: board shape, objective, spawn model and p4, validated in one place.

Objectives:

* ``score`` — expected total future merge reward (the game's score), terminal states worth 0;
* ``tile:K`` — probability of ever making the tile ``2**K`` (3 <= K <= 15).  A move that makes it is a win worth
  1; afterstates holding it are absorbing and are neither stored nor expanded, so no stored state holds it.

Spawn models (who places the new tile after a move):

* ``random`` — the game: a uniformly random empty cell, a 2 with probability 1 - p4, a 4 with p4;
* ``adversarial`` — a minimising player picks both the cell and the tile (as in adversarial 2048); the tiles it
  may place are those the game can spawn (a 4 only if p4 > 0, a 2 only if p4 < 1);
* ``optimistic`` / ``pessimistic`` — the tile is drawn with p4 as in the game, then the best / worst empty cell
  for the mover is chosen (Kaneko & Yamashita's variants).
"""

from __future__ import annotations

from dataclasses import dataclass

from env2048.board import check_p4
from env2048.shape import MAX_PACKED_EXPONENT, check_packable, parse_board

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

    @classmethod
    def parse(cls, board: str, objective: str = "score", p4: float = 0.1, spawn: str = "random") -> SolveSpec:
        rows, cols = parse_board(board)
        check_packable(rows, cols)
        p4 = check_p4(p4)
        if spawn not in SPAWN_MODELS:
            raise ValueError(f"unknown spawn model {spawn!r}; choose one of {', '.join(SPAWN_MODELS)}")
        objective = normalise_objective(objective)
        return cls(rows, cols, objective, p4, spawn)

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

    def describe(self) -> str:
        return f"{self.board} {self.objective} (spawn {self.spawn}, p4={self.p4:g})"

    def as_dict(self) -> dict:
        return {"rows": self.rows, "cols": self.cols, "objective": self.objective, "p4": self.p4, "spawn": self.spawn}


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
