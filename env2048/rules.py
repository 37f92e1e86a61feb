"""What ends a game and what a move may not do, as one small array the kernels share.

Every game the solver, the oracle and the envs play is described by a *rules array*, ``uint64[8 + 2k]``:

* ``FIXED_MASK`` / ``FIXED_VALUES``: nibble mask of the fixed cells and the tiles they hold.  A move is allowed iff
  it changes the board and leaves ``after & FIXED_MASK == FIXED_VALUES`` (fixed tiles never move or merge);
* ``FREE_MASK``: nibble mask of the other (free) cells;
* ``CAP``: the largest exponent a free cell may hold; a move that leaves a larger one there *fails* (value 0,
  the game ends);
* ``SUCCESS_FIRST``: 1 if a move that both succeeds and fails counts as a success, 0 if as a failure;
* ``AT_LEAST_MASK`` / ``AT_LEAST``: a move *succeeds* (value 1, the game ends) if a cell of the mask holds an
  exponent ``>= AT_LEAST``;
* ``N_CONDITIONS`` = k, then k pairs ``(mask, value)``: a move also succeeds if ``after & mask == value`` for at
  least one pair.  Each pair asks for given tiles on given cells.

The plain game's objectives are the special case with no fixed cell: ``tile:K`` succeeds when any cell holds
``2**K`` or more (``AT_LEAST``; no cap: a larger tile needs two ``2**K`` first), and ``score`` neither succeeds
nor fails.  Endgame patterns (:mod:`env2048.pattern`) ask for ``T`` exactly on their target cells, with the cap
``T``: from a pattern's start the two readings agree, since no tile above ``T`` exists before a ``T`` does.  One
array, one :func:`judge`, so the plain game and the patterns can never disagree about a rule.
"""

from __future__ import annotations

import numba
import numpy as np

from .kernels import move_packed

FIXED_MASK, FIXED_VALUES, FREE_MASK, CAP, SUCCESS_FIRST, AT_LEAST_MASK, AT_LEAST, N_CONDITIONS = range(8)
HEADER = 8
#: Outcome of one move (:func:`move_outcome`).
ILLEGAL, PLAY, SUCCESS, FAILURE = 0, 1, 2, 3
#: No exponent exceeds it: the cap of an objective without failures.
NO_CAP = 15

_LANES = np.uint64(0x0F0F0F0F0F0F0F0F)
_ONES = np.uint64(0x0101010101010101)
_CARRIES = np.uint64(0x1010101010101010)
_NO_CAP = np.uint64(NO_CAP)
_ZERO = np.uint64(0)
_ONE = np.uint64(1)


def make_rules(
    cells: int,
    fixed: dict[int, int],
    cap: int,
    conditions: list[dict[int, int]],
    success_first: bool = True,
    at_least: tuple[list[int], int] | None = None,
) -> np.ndarray:
    """The rules array (read-only ``uint64[8 + 2k]``) of a board of ``cells`` cells: ``fixed`` maps cell -> exponent,
    ``conditions`` are the success conditions (each maps cell -> exponent; all of one must hold), ``cap`` the
    largest exponent allowed on a free cell, ``at_least = (cells, e)`` a success when any of those cells holds an
    exponent ``>= e``."""
    all_cells = (1 << (4 * cells)) - 1 if cells < 16 else (1 << 64) - 1
    fixed_mask = sum(15 << (4 * c) for c in fixed)
    at_cells, at_exponent = at_least if at_least is not None else ([], 1)
    rules = [
        fixed_mask,
        sum(e << (4 * c) for c, e in fixed.items()),
        all_cells & ~fixed_mask,
        cap,
        int(success_first),
        sum(15 << (4 * c) for c in at_cells),
        at_exponent,
        len(conditions),
    ]
    for cond in conditions:
        rules += [sum(15 << (4 * c) for c in cond), sum(e << (4 * c) for c, e in cond.items())]
    out = np.array(rules, np.uint64)
    out.setflags(write=False)
    return out


def plain_rules(cells: int, target_exponent: int | None) -> np.ndarray:
    """Rules of the plain game: ``tile:K`` (``target_exponent`` K: success when any cell holds ``2**K`` or more) or
    ``score`` (None: no success, no failure)."""
    if target_exponent is None:
        return make_rules(cells, {}, NO_CAP, [])
    return make_rules(cells, {}, NO_CAP, [], at_least=(list(range(cells)), int(target_exponent)))


@numba.njit(cache=True, inline="always")
def exceeds_cap(after, free_mask, cap):
    """Whether a free cell of ``after`` holds an exponent above ``cap``: nibbles compared in byte lanes (even and
    odd cells apart), ``v + 15 - cap`` carrying into bit 4 iff ``v > cap``."""
    x = after & free_mask
    add = (np.uint64(15) - cap) * _ONES
    lo = (x & _LANES) + add
    hi = ((x >> np.uint64(4)) & _LANES) + add
    return ((lo | hi) & _CARRIES) != _ZERO


@numba.njit(cache=True, inline="always")
def judge(after, rules):
    """``PLAY``, ``SUCCESS`` or ``FAILURE``: how an allowed move that leaves ``after`` ends (see the module)."""
    won = rules[AT_LEAST_MASK] != _ZERO and exceeds_cap(after, rules[AT_LEAST_MASK], rules[AT_LEAST] - _ONE)
    for k in range(np.int64(rules[N_CONDITIONS])):
        if won:
            break
        j = HEADER + 2 * k
        if (after & rules[j]) == rules[j + 1]:
            won = True
            break
    lost = rules[CAP] < _NO_CAP and exceeds_cap(after, rules[FREE_MASK], rules[CAP])
    if won and (rules[SUCCESS_FIRST] != _ZERO or not lost):
        return SUCCESS
    if lost:
        return FAILURE
    return PLAY


@numba.njit(cache=True, inline="always")
def move_outcome(b, action, rows, cols, moves, rules):
    """``(afterstate, reward, outcome)`` of ``action`` on packed board ``b``: ``outcome`` is ``ILLEGAL`` (the move
    changes nothing or moves a fixed tile), ``PLAY``, ``SUCCESS`` or ``FAILURE``."""
    after, reward = move_packed(b, action, rows, cols, moves)
    return after, reward, outcome_of(b, after, rules)


@numba.njit(cache=True, inline="always")
def outcome_of(b, after, rules):
    """The ``outcome`` of :func:`move_outcome` for a move that took ``b`` to ``after`` (e.g. one of
    :func:`env2048.kernels.all_moves_packed`'s)."""
    if after == b or (after & rules[FIXED_MASK]) != rules[FIXED_VALUES]:
        return ILLEGAL
    return judge(after, rules)


@numba.njit(cache=True)
def legal_bits_rules(b, rows, cols, moves, rules):
    """Bit a set iff action a is allowed on ``b`` under ``rules``."""
    bits = 0
    for a in range(4):
        _, _, outcome = move_outcome(b, a, rows, cols, moves, rules)
        if outcome != ILLEGAL:
            bits |= 1 << a
    return bits


@numba.njit(cache=True)
def _legal_masks(ids, rows, cols, moves, rules):
    out = np.zeros((ids.shape[0], 4), np.bool_)
    for i in range(ids.shape[0]):
        bits = legal_bits_rules(ids[i], rows, cols, moves, rules)
        for a in range(4):
            out[i, a] = (bits >> a) & 1
    return out


def legal_masks(ids: np.ndarray, rows: int, cols: int, moves: np.ndarray, rules: np.ndarray) -> np.ndarray:
    """``bool[n, 4]``: the moves ``rules`` allow on each packed board of ``ids`` (``uint64[n]``); ``moves`` is
    ``T.moves`` of the board's tables."""
    return _legal_masks(np.ascontiguousarray(ids, np.uint64).reshape(-1), rows, cols, moves, rules)


def reference_outcome(before: int, after: int, rules) -> int:
    """:func:`move_outcome`'s verdict in plain Python, cell by cell (the slow reference tests and
    ``solver verify`` check the kernels against): ``ILLEGAL``, ``PLAY``, ``SUCCESS`` or ``FAILURE``."""
    before, after = int(before), int(after)
    rules = [int(x) for x in rules]

    def cells_of(mask):
        return [c for c in range(16) if (mask >> (4 * c)) & 15]

    def nibble(b, c):
        return (b >> (4 * c)) & 15

    if after == before:
        return ILLEGAL
    if any(nibble(after, c) != nibble(rules[FIXED_VALUES], c) for c in cells_of(rules[FIXED_MASK])):
        return ILLEGAL
    won = any(nibble(after, c) >= rules[AT_LEAST] for c in cells_of(rules[AT_LEAST_MASK]))
    for k in range(rules[N_CONDITIONS]):
        mask, value = rules[HEADER + 2 * k], rules[HEADER + 2 * k + 1]
        won = won or all(nibble(after, c) == nibble(value, c) for c in cells_of(mask))
    lost = any(nibble(after, c) > rules[CAP] for c in cells_of(rules[FREE_MASK]))
    if won and (rules[SUCCESS_FIRST] or not lost):
        return SUCCESS
    return FAILURE if lost else PLAY
