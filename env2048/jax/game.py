"""The game's rules as pure, jittable JAX functions on one board: the move (``afterstate``), the chance step
(``chance_outcomes``, ``apply_chance``) and the legal moves, bit for bit those of the numba kernels
(:mod:`env2048.grid`), as tests/test_jax.py checks.

A board is ``int32 (rows, cols)`` of exponents (0 empty, k the tile 2**k); rows and columns are static (the
shape of the array).  Exponents up to :data:`MAX_EXPONENT` are exact (a merge's reward, 2**(k+1), is an int32).
Batch with ``jax.vmap``.  Actions: UP=0, RIGHT=1, DOWN=2, LEFT=3, as everywhere in the project.

While a suite trainer trains (a step meter is installed, :mod:`env2048.metering`) the moves and spawns refuse to
be traced, except inside :class:`env2048.jax.counted.CountedGames`, which charges the meter for every step.

The chance step after a legal move places one tile in a uniformly chosen empty cell: a 2 (exponent 1) with
probability ``1 - p4``, a 4 (exponent 2) with ``p4``.  Its outcomes are numbered ``2 * cell + k`` (cell in
row-major order, k = 0 for a 2, 1 for a 4), ``2 * rows * cols`` in all.
"""

from __future__ import annotations

import contextlib
import threading
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from .. import metering

_permission = threading.local()


def counting() -> bool:
    """Whether the game is being made or traced inside :class:`env2048.jax.counted.CountedGames`, which charges
    the installed meter for every step it runs."""
    return getattr(_permission, "depth", 0) > 0


@contextlib.contextmanager
def counted():
    """Let the game be made and traced while a meter is installed, for the ``with`` block: only
    :mod:`env2048.jax.counted` uses it, around the steps it charges."""
    _permission.depth = getattr(_permission, "depth", 0) + 1
    try:
        yield
    finally:
        _permission.depth -= 1


@contextlib.contextmanager
def not_counted():
    """Withdraw :func:`counted`'s permission for the ``with`` block: a trainer's own code traced inside a counted
    rollout (its choice of moves) may not step the bare game there."""
    before = getattr(_permission, "depth", 0)
    _permission.depth = 0
    try:
        yield
    finally:
        _permission.depth = before


def refuse_if_metered(what: str) -> None:
    """Refuse the bare game while a step meter is installed (a suite trainer trains, :mod:`env2048.metering`):
    its moves, inside jitted code, would go uncounted.  :class:`env2048.jax.counted.CountedGames` (a run's
    ``make_jax_games``) is the counted way in."""
    if metering.active() is not None and not counting():
        raise metering.UncountedStepError(
            f"{what}: the bare JAX game's moves cannot be counted against a training run's budget; a suite "
            "trainer plays the JAX game through run.make_jax_games (env2048.jax.counted.CountedGames), or through "
            "run.make_env, run.make_vec_env or run.simulator"
        )


#: The largest exponent the JAX game keeps exact: a merge of two 2**29 pays 2**30, an int32.
MAX_EXPONENT = 29
UP, RIGHT, DOWN, LEFT = 0, 1, 2, 3


def _compact(values: jax.Array, keep: jax.Array) -> jax.Array:
    """Each row's kept entries moved toward index 0, in order, zeros after (``int32 (R, L)``): a one-hot
    placement by their rank among the kept, with no scatter (small, and quick to compile)."""
    length = values.shape[1]
    rank = jnp.cumsum(keep, axis=1) - 1
    place = keep[:, :, None] & (rank[:, :, None] == jnp.arange(length)[None, None, :])
    return jnp.sum(jnp.where(place, values[:, :, None], 0), axis=1)


def _slide_rows(rows: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(rows, reward int32 (R,))``: each row of ``int32 (R, L)`` slid toward index 0, two equal tiles that meet
    merging once, those nearest the wall first (the rule of :func:`env2048.grid._slide_line`)."""
    tiles = _compact(rows, rows != 0)
    none = jnp.zeros(rows.shape[0], jnp.bool_)
    merges, before = [], none
    for i in range(rows.shape[1] - 1):  # greedy from the wall: a tile merged into cannot merge again
        before = (tiles[:, i] != 0) & (tiles[:, i] == tiles[:, i + 1]) & ~before
        merges.append(before)
    merged = jnp.stack([*merges, none], axis=1)
    absorbed = jnp.concatenate([none[:, None], merged[:, :-1]], axis=1)  # the partner of a merge, now gone
    out = _compact(tiles + merged, (tiles != 0) & ~absorbed)
    reward = jnp.sum(jnp.where(merged, jnp.left_shift(jnp.int32(1), tiles + 1), 0), axis=1)
    return out, reward


def afterstate(board: jax.Array, action) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(after int32 (rows, cols), reward int32, moved bool)``: the board slid toward the wall of ``action``
    with its merges, before any tile spawns; the reward is the sum of the merged tiles' values; ``moved`` False
    for an illegal move (then ``after`` equals ``board``).  Rows slide for LEFT and RIGHT, columns for UP and
    DOWN: both are computed (on a non-square board their shapes differ, so no branch could return either) and the
    one ``action`` asks for is kept."""
    refuse_if_metered("env2048.jax.afterstate")
    board = jnp.asarray(board, jnp.int32)
    action = jnp.asarray(action, jnp.int32)
    rows_out, rows_reward = _slide_rows(jnp.where(action == RIGHT, board[:, ::-1], board))
    rows_out = jnp.where(action == RIGHT, rows_out[:, ::-1], rows_out)
    cols = jnp.where(action == DOWN, board[::-1, :], board).T
    cols_out, cols_reward = _slide_rows(cols)
    cols_out = jnp.where(action == DOWN, cols_out.T[::-1, :], cols_out.T)
    vertical = (action == UP) | (action == DOWN)
    after = jnp.where(vertical, cols_out, rows_out)
    reward = jnp.where(vertical, cols_reward.sum(), rows_reward.sum())
    moved = jnp.any(after != board)
    return after, jnp.where(moved, reward, 0), moved


def afterstates(board: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """All four moves at once, in action order (UP, RIGHT, DOWN, LEFT): ``(after int32 (4, rows, cols), reward
    int32 (4,), moved bool (4,))``, each what :func:`afterstate` gives for that action.  Each direction is slid
    once (``afterstate`` slides rows and columns both, and keeps one), so a planner or a labeller that needs
    every move does half the work."""
    refuse_if_metered("env2048.jax.afterstates")
    board = jnp.asarray(board, jnp.int32)
    rows, cols = board.shape
    row_out, row_reward = _slide_rows(jnp.concatenate([board, board[:, ::-1]]))  # LEFT's rows, then RIGHT's
    col_out, col_reward = _slide_rows(jnp.concatenate([board.T, board[::-1, :].T]))  # UP's columns, then DOWN's
    after = jnp.stack([col_out[:cols].T, row_out[rows:, ::-1], col_out[cols:].T[::-1, :], row_out[:rows]])
    reward = jnp.stack(
        [col_reward[:cols].sum(), row_reward[rows:].sum(), col_reward[cols:].sum(), row_reward[:rows].sum()]
    )
    moved = jnp.any(after != board[None], axis=(1, 2))
    return after, jnp.where(moved, reward, 0), moved


def legal_action_mask(board: jax.Array) -> jax.Array:
    """``bool[4]``: the moves that change ``board``, as :func:`env2048.grid.legal_bits` finds them (a move is
    legal iff a neighbour pair toward its wall has a tile behind an empty cell or an equal tile)."""
    board = jnp.asarray(board, jnp.int32)
    west, east = board[:, :-1], board[:, 1:]
    north, south = board[:-1, :], board[1:, :]
    left = jnp.any((east != 0) & ((west == 0) | (west == east)))
    right = jnp.any((west != 0) & ((east == 0) | (west == east)))
    up = jnp.any((south != 0) & ((north == 0) | (north == south)))
    down = jnp.any((north != 0) & ((south == 0) | (north == south)))
    return jnp.stack([up, right, down, left])


def chance_outcomes(after: jax.Array, p4: float = 0.1, free=None) -> jax.Array:
    """``float32[2 * rows * cols]``: the probability of each spawn on ``after``: outcome ``2 * cell`` (a 2 in
    that cell) has ``(1 - p4) / e`` and ``2 * cell + 1`` (a 4) ``p4 / e`` for each of the e empty cells (the
    float32 nearest to each), every other outcome 0 (all 0 on a full board).  ``p4`` is a Python float; ``free``
    (bool (rows, cols) or (cells,)): the cells a tile may spawn in (an endgame's free cells; default all)."""
    empty = jnp.asarray(after).reshape(-1) == 0
    if free is not None:  # an endgame's fixed cells never receive a tile
        empty = empty & jnp.asarray(free).reshape(-1)
    cells = empty.shape[0]
    # each probability the float32 nearest to the exact ratio (dividing in float32 would round twice)
    per_count = np.array([[0.0, 0.0]] + [[(1.0 - p4) / e, p4 / e] for e in range(1, cells + 1)], np.float32)
    two, four = jnp.asarray(per_count)[empty.sum()].T
    return jnp.stack([jnp.where(empty, two, 0.0), jnp.where(empty, four, 0.0)], axis=1).reshape(-1)


def apply_chance(after: jax.Array, outcome) -> jax.Array:
    """The board after chance outcome ``outcome`` (``2 * cell + k``: a 2 for k = 0, a 4 for k = 1) on ``after``;
    the outcome's cell must be empty (:func:`chance_outcomes` gives it probability 0 otherwise)."""
    refuse_if_metered("env2048.jax.apply_chance")
    after = jnp.asarray(after, jnp.int32)
    outcome = jnp.asarray(outcome, jnp.int32)
    flat = after.reshape(-1).at[outcome // 2].set(outcome % 2 + 1)
    return flat.reshape(after.shape)


def sample_chance(key: jax.Array, after: jax.Array, p4: float = 0.1, free=None) -> jax.Array:
    """One chance outcome drawn from :func:`chance_outcomes` (an int32; on a full board, outcome 0)."""
    probs = chance_outcomes(after, p4, free)
    return jax.random.choice(key, probs.shape[0], p=jnp.where(probs.sum() > 0, probs, 1.0)).astype(jnp.int32)


def spawn(key: jax.Array, after: jax.Array, p4: float = 0.1) -> jax.Array:
    """``after`` with one tile spawned by the chance step (unchanged if it is full)."""
    full = jnp.all(jnp.asarray(after) != 0)
    return jnp.where(full, after, apply_chance(after, sample_chance(key, after, p4)))


def start_board(key: jax.Array, rows: int, cols: int, p4: float = 0.1) -> jax.Array:
    """A game's start: two tiles spawned one after the other on the empty board, as every env of the project
    starts."""
    first, second = jax.random.split(key)
    empty = jnp.zeros((rows, cols), jnp.int32)
    return spawn(second, spawn(first, empty, p4), p4)


#: Outcomes of a move under a rules array (as :mod:`env2048.rules` numbers them).
ILLEGAL, PLAY, SUCCESS, FAILURE = 0, 1, 2, 3


class Rules(NamedTuple):
    """A rules array of :mod:`env2048.rules` cell by cell, for a board of ``cells`` cells (row-major): ``fixed``
    bool (cells,) and ``fixed_values`` int32 (cells,), the fixed tiles; ``free`` bool (cells,), where tiles may
    spawn; ``cap`` int32, the largest exponent a free cell may hold (a move past it fails; 15 or more: never);
    ``success_first`` bool; ``at_least`` bool (cells,) and ``at_least_exponent`` int32 (success when one of those
    cells holds that exponent or more); ``conditions`` bool (k, cells) and ``condition_values`` int32 (k, cells)
    (success when all of one condition's cells hold its values)."""

    fixed: jax.Array
    fixed_values: jax.Array
    free: jax.Array
    cap: jax.Array
    success_first: jax.Array
    at_least: jax.Array
    at_least_exponent: jax.Array
    conditions: jax.Array
    condition_values: jax.Array


def rules_from_array(rules: np.ndarray, cells: int) -> Rules:
    """:class:`Rules` of a packed rules array (``uint64[8 + 2k]``, :func:`env2048.rules.make_rules`) of a board
    of ``cells`` <= 16 cells, decoded on the host."""
    from ..rules import AT_LEAST, AT_LEAST_MASK, CAP, FIXED_MASK, FIXED_VALUES, FREE_MASK, HEADER, N_CONDITIONS
    from ..rules import SUCCESS_FIRST as FIRST

    rules = [int(x) for x in rules]

    def nibbles(word: int) -> np.ndarray:
        return np.array([(word >> (4 * c)) & 15 for c in range(cells)], np.int32)

    k = rules[N_CONDITIONS]
    pairs = [(rules[HEADER + 2 * j], rules[HEADER + 2 * j + 1]) for j in range(k)]
    return Rules(
        fixed=jnp.asarray(nibbles(rules[FIXED_MASK]) == 15),
        fixed_values=jnp.asarray(nibbles(rules[FIXED_VALUES])),
        free=jnp.asarray(nibbles(rules[FREE_MASK]) == 15),
        cap=jnp.int32(rules[CAP]),
        success_first=jnp.asarray(bool(rules[FIRST])),
        at_least=jnp.asarray(nibbles(rules[AT_LEAST_MASK]) == 15),
        at_least_exponent=jnp.int32(rules[AT_LEAST]),
        conditions=jnp.asarray(np.array([nibbles(m) == 15 for m, _ in pairs], bool).reshape(k, cells)),
        condition_values=jnp.asarray(np.array([nibbles(v) for _, v in pairs], np.int32).reshape(k, cells)),
    )


def outcome(board: jax.Array, after: jax.Array, rules: Rules) -> jax.Array:
    """``int32``: :data:`ILLEGAL` (the move changed nothing or moved a fixed tile), :data:`PLAY`,
    :data:`SUCCESS` or :data:`FAILURE` for a move that took ``board`` to ``after``, as
    :func:`env2048.rules.outcome_of` judges it."""
    flat, before = after.reshape(-1), board.reshape(-1)
    changed = jnp.any(flat != before)
    kept = jnp.all(jnp.where(rules.fixed, flat == rules.fixed_values, True))
    won = jnp.any(rules.at_least & (flat >= rules.at_least_exponent))
    met = jnp.all(jnp.where(rules.conditions, flat[None, :] == rules.condition_values, True), axis=1)
    won = won | jnp.any(met & jnp.any(rules.conditions, axis=1))
    lost = (rules.cap < 15) & jnp.any(rules.free & (flat > rules.cap))
    judged = jnp.where(won & (rules.success_first | ~lost), SUCCESS, jnp.where(lost, FAILURE, PLAY))
    return jnp.where(changed & kept, judged, ILLEGAL).astype(jnp.int32)


def allowed_mask(board: jax.Array, rules: Rules) -> jax.Array:
    """``bool[4]``: the moves ``rules`` allow on ``board`` (they change it and keep every fixed tile)."""
    return jax.vmap(lambda a: outcome(board, afterstate(board, a)[0], rules) != ILLEGAL)(jnp.arange(4))
