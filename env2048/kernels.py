"""The packed-board numba kernels other layers build on (solver, oracle, agents, experiments).

Each takes a packed ``uint64`` board and fields of the shape's :class:`~env2048.tables.BoardTables` (``T.moves``,
``T.sym_lines``, ``T.sym_bytes``; never the tuple itself) and may be called from other ``numba.njit`` code.
They are the kernels behind :mod:`env2048.board`'s validated public functions, tested against the pure-Python
rules there; this module is their public name.

* ``move_packed(b, action, rows, cols, moves) -> (afterstate uint64, reward int64)``; illegal iff
  ``afterstate == b``.
* ``all_moves_packed(b, rows, cols, moves) -> ((up, right, down, left) uint64, their rewards int64)``: the four
  moves at once, each line read once (what the solver's kernels use).
* ``legal_bits_packed(b, rows, cols, moves) -> int``: bit a set iff action a is legal.
* ``canonical_packed(b, rows, cols, sym_lines, sym_bytes) -> uint64``: minimum ID over the symmetry group.
* ``symmetry_images_packed(b, rows, cols, sym_lines, sym_bytes, imgs)``: fills ``imgs`` (``uint64[n_sym]``) with
  the images of ``b`` in the order of ``T.sym_perm`` (a subgroup's tables give the subgroup's images).
* ``age_packed(b, cells) -> int``: sum of tile values.
* ``max_exponent_packed(b, cells) -> int``: largest exponent on the board.
"""

from __future__ import annotations

from .board import _age as age_packed
from .board import _all_moves as all_moves_packed
from .board import _canonical_fast as canonical_packed
from .board import _legal_bits as legal_bits_packed
from .board import _max_exponent as max_exponent_packed
from .board import _move as move_packed
from .board import _symmetry_images as symmetry_images_packed

__all__ = [
    "age_packed",
    "all_moves_packed",
    "canonical_packed",
    "legal_bits_packed",
    "max_exponent_packed",
    "move_packed",
    "symmetry_images_packed",
]
