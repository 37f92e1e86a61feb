"""The game's rules as pure, jittable JAX functions on one board: the move (``afterstate``), the chance step
(``chance_outcomes``, ``apply_chance``) and the legal moves, bit for bit those of the numba kernels
(:mod:`env2048.grid`), as tests/test_jax.py checks.

A board is ``int32 (rows, cols)`` of exponents (0 empty, k the tile 2**k); rows and columns are static (the
shape of the array).  Exponents up to :data:`MAX_EXPONENT` are exact (a merge's reward, 2**(k+1), is an int32).
Batch with ``jax.vmap``.  Actions: UP=0, RIGHT=1, DOWN=2, LEFT=3, as everywhere in the project.

While a suite trainer trains (a step meter is installed, :mod:`env2048.metering`) the moves and spawns refuse to
run, as they are traced: moves inside jitted code cannot be counted yet.

The chance step after a legal move places one tile in a uniformly chosen empty cell: a 2 (exponent 1) with
probability ``1 - p4``, a 4 (exponent 2) with ``p4``.  Its outcomes are numbered ``2 * cell + k`` (cell in
row-major order, k = 0 for a 2, 1 for a 4), ``2 * rows * cols`` in all.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import metering


def refuse_if_metered(what: str) -> None:
    """Refuse the JAX game while a step meter is installed (a suite trainer trains, :mod:`env2048.metering`): its
    moves, inside jitted code, cannot be counted yet."""
    if metering.active() is not None:
        raise metering.UncountedStepError(
            f"{what}: the JAX game's moves cannot be counted against a training run's budget yet; a suite trainer "
            "plays through run.make_env, run.make_vec_env or run.simulator"
        )


#: The largest exponent the JAX game keeps exact: a merge of two 2**29 pays 2**30, an int32.
MAX_EXPONENT = 29
UP, RIGHT, DOWN, LEFT = 0, 1, 2, 3


def _slide_left(line: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(line, reward)`` of one line (``int32[L]``, L static) slid toward index 0, two equal tiles that meet
    merging once: the scan of :func:`env2048.grid._slide_line`, unrolled."""
    length = line.shape[0]
    out = jnp.zeros_like(line)
    write = jnp.int32(0)
    last = jnp.int32(0)
    reward = jnp.int32(0)
    for k in range(length):
        v = line[k]
        merge = (v != 0) & (v == last)
        place = (v != 0) & ~merge
        out = jnp.where(merge, out.at[jnp.maximum(write - 1, 0)].set(v + 1), out)
        out = jnp.where(place, out.at[jnp.minimum(write, length - 1)].set(v), out)
        reward = reward + jnp.where(merge, jnp.left_shift(jnp.int32(1), v + 1), 0)
        last = jnp.where(merge, 0, jnp.where(place, v, last))
        write = write + place.astype(jnp.int32)
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
    rows_out, rows_reward = jax.vmap(_slide_left)(jnp.where(action == RIGHT, board[:, ::-1], board))
    rows_out = jnp.where(action == RIGHT, rows_out[:, ::-1], rows_out)
    cols = jnp.where(action == DOWN, board[::-1, :], board).T
    cols_out, cols_reward = jax.vmap(_slide_left)(cols)
    cols_out = jnp.where(action == DOWN, cols_out.T[::-1, :], cols_out.T)
    vertical = (action == UP) | (action == DOWN)
    after = jnp.where(vertical, cols_out, rows_out)
    reward = jnp.where(vertical, cols_reward.sum(), rows_reward.sum())
    moved = jnp.any(after != board)
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


def chance_outcomes(after: jax.Array, p4: float = 0.1) -> jax.Array:
    """``float32[2 * rows * cols]``: the probability of each spawn on ``after``: outcome ``2 * cell`` (a 2 in
    that cell) has ``(1 - p4) / e`` and ``2 * cell + 1`` (a 4) ``p4 / e`` for each of the e empty cells (the
    float32 nearest to each), every other outcome 0 (all 0 on a full board).  ``p4`` is a Python float."""
    empty = jnp.asarray(after).reshape(-1) == 0
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


def sample_chance(key: jax.Array, after: jax.Array, p4: float = 0.1) -> jax.Array:
    """One chance outcome drawn from :func:`chance_outcomes` (an int32; on a full board, outcome 0)."""
    probs = chance_outcomes(after, p4)
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
