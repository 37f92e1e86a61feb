"""Step and reset kernels shared by :class:`Game2048Env` and :class:`Game2048VectorEnv`.

Randomness: each environment owns a 64-bit generator state ``key`` drawn from its ``np_random`` when it is
seeded.  Kernels advance it with SplitMix64 (:func:`next_uniform`) to get the uniforms a spawn needs (one for
the cell, one for the tile), so the random numbers are made inside the parallel kernel with no Python
round trip.  A reset draws 4 uniforms, a legal move 2, an illegal move none (2 with ``invalid_action="spawn"``,
where it spawns a tile too).  Single and vector envs share these kernels, so one seed gives the same game in
both.
"""

from __future__ import annotations

import types

import numba
import numpy as np

from .grid import grid_age, grid_max_exponent, legal_bits, move_inplace, spawn_inplace

INVALID_NOOP = 0
INVALID_TERMINATE = 1
INVALID_RAISE = 2
#: The rule of "Beyond 2048" (seed 003): a move that changes nothing still ends the turn, and a tile spawns.
INVALID_SPAWN = 3
INVALID_MODES = {"noop": INVALID_NOOP, "terminate": INVALID_TERMINATE, "raise": INVALID_RAISE, "spawn": INVALID_SPAWN}
NO_GOAL = 255

_GOLDEN_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_TO_UNIT = 1.0 / 9007199254740992.0  # 2**-53


def draw_key(generator: np.random.Generator) -> np.uint64:
    """A fresh generator state for one env, drawn from its ``np_random``."""
    return np.uint64(generator.integers(0, 2**64, dtype=np.uint64))


@numba.njit(cache=True, inline="always")
def next_uniform(key):
    """SplitMix64 step: ``(new_key, u)`` with ``u`` uniform in [0, 1) on a 2**-53 grid."""
    key = np.uint64(key) + _GOLDEN_GAMMA
    z = key
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    z = z ^ (z >> np.uint64(31))
    return key, float(z >> np.uint64(11)) * _TO_UNIT


@numba.njit(cache=True, inline="always")
def _spawn(b, i, p4, key):
    key, u_cell = next_uniform(key)
    key, u_tile = next_uniform(key)
    spawn_inplace(b, i, u_cell, u_tile, p4)
    return key


@numba.njit(cache=True, inline="always")
def _reset_one(b, i, start_p4, key):
    """Empty board i, then place the two start tiles, each a 4 with probability ``start_p4``."""
    for c in range(b.shape[1]):
        b[i, c] = 0
    key = _spawn(b, i, start_p4, key)
    return _spawn(b, i, start_p4, key)


@numba.njit(cache=True, inline="always")
def _step_one(b, after, i, rows, cols, action, p4, key, lines, spawn_illegal):
    """Move board i, then spawn after a legal move (after an illegal one too with ``spawn_illegal``: the board
    unchanged, a tile in one of its empty cells); ``after[i]`` receives the afterstate.

    Returns ``(reward, legal, key)``.
    """
    for c in range(b.shape[1]):
        after[i, c] = b[i, c]
    reward, legal = move_inplace(after, i, rows, cols, action, lines)
    if legal:
        for c in range(b.shape[1]):
            b[i, c] = after[i, c]
        key = _spawn(b, i, p4, key)
    elif spawn_illegal:
        key = _spawn(b, i, p4, key)
    return reward, legal, key


@numba.njit(cache=True, inline="always")
def _write_mask(mask, i, bits):
    for a in range(4):
        mask[i, a] = (bits >> a) & 1


@numba.njit(cache=True)
def reset_kernel(board, rows, cols, start_p4, key):
    """Single env reset: two start tiles, each a 4 with probability ``start_p4``.

    ``board``: ``uint8[1, cells]`` and ``key``: ``uint64[1]``, updated in place.
    Returns ``(obs uint8[rows, cols], mask bool[4])``.
    """
    key[0] = _reset_one(board, 0, start_p4, key[0])
    mask = np.empty((1, 4), np.bool_)
    _write_mask(mask, 0, legal_bits(board, 0, rows, cols))
    return board.copy().reshape(rows, cols), mask[0]


@numba.njit(cache=True)
def step_kernel(board, rows, cols, action, p4, key, lines, spawn_illegal):
    """Single env step.

    ``board``: ``uint8[1, cells]`` and ``key``: ``uint64[1]``, updated in place; ``lines``: the shape's
    :func:`env2048.tables.line_tables_for`; ``spawn_illegal``: an illegal move spawns a tile
    (``invalid_action="spawn"``).  Returns ``(obs
    uint8[rows, cols], afterstate uint8[rows, cols], mask bool[4], reward, legal, game_over, max_exponent,
    age)``.
    """
    after = np.empty_like(board)
    reward, legal, key[0] = _step_one(board, after, 0, rows, cols, action, p4, key[0], lines, spawn_illegal)
    bits = legal_bits(board, 0, rows, cols)
    mask = np.empty((1, 4), np.bool_)
    _write_mask(mask, 0, bits)
    obs = board.copy().reshape(rows, cols)
    top = grid_max_exponent(board, 0)
    return obs, after.reshape(rows, cols), mask[0], reward, legal, bits == 0, top, grid_age(board, 0)


def _vector_step(
    boards,
    actions,
    rows,
    cols,
    p4,
    start_p4,
    keys,
    goal_exponent,
    invalid_mode,
    needs_reset,
    score,
    moves,
    illegal,
    obs,
    after,
    mask,
    reward,
    terminated,
    after_valid,
    max_exp,
    age,
    lines,
):
    """Step every env at once (NEXT_STEP autoreset), in place on the state arrays: a spawn is a 4 with probability
    ``p4``, a start tile (of an env reset here) with ``start_p4``.

    State (updated): ``boards uint8[n, cells]``, ``keys uint64[n]``, ``needs_reset bool[n]``, ``score``,
    ``moves``, ``illegal`` (``int64[n]``).  Outputs (overwritten): ``obs uint8[n, cells]``,
    ``after uint8[n, cells]``, ``mask bool[n, 4]``, ``reward float64[n]``, ``terminated bool[n]``,
    ``after_valid bool[n]`` (False where the env was reset this step), ``max_exp int64[n]``, ``age int64[n]``.
    ``lines``: :func:`env2048.tables.line_tables_for` of the shape.
    """
    n = boards.shape[0]
    cells = boards.shape[1]
    spawn_illegal = invalid_mode == INVALID_SPAWN
    for i in numba.prange(n):
        done = False
        if needs_reset[i]:
            keys[i] = _reset_one(boards, i, start_p4, keys[i])
            score[i] = 0
            moves[i] = 0
            illegal[i] = 0
            for c in range(cells):
                after[i, c] = 0
            after_valid[i] = False
            reward[i] = 0.0
        else:
            r, legal, keys[i] = _step_one(boards, after, i, rows, cols, actions[i], p4, keys[i], lines, spawn_illegal)
            after_valid[i] = True
            reward[i] = r
            if legal:
                score[i] += r
                moves[i] += 1
            else:
                illegal[i] += 1
                if invalid_mode == INVALID_TERMINATE:
                    done = True
        bits = legal_bits(boards, i, rows, cols)
        _write_mask(mask, i, bits)
        top = 0
        total = 0
        for c in range(cells):
            v = boards[i, c]
            obs[i, c] = v
            if v > top:
                top = v
            if v:
                total += 1 << v
        if bits == 0 or top >= goal_exponent:
            done = True
        max_exp[i] = top
        age[i] = total
        terminated[i] = done
        needs_reset[i] = done


def _vector_reset(boards, rows, cols, start_p4, keys, score, moves, illegal, obs, mask, needs_reset, max_exp, age,
                  which):  # fmt: skip
    """Reset the envs where ``which`` (``bool[n]``) is set, in place (start tiles 4 with probability
    ``start_p4``); fills their ``obs``, ``mask``, ``max_exp`` and ``age`` (the other envs' rows of those outputs
    are left as they are)."""
    n = boards.shape[0]
    for i in numba.prange(n):
        if not which[i]:
            continue
        keys[i] = _reset_one(boards, i, start_p4, keys[i])
        score[i] = 0
        moves[i] = 0
        illegal[i] = 0
        needs_reset[i] = False
        _write_mask(mask, i, legal_bits(boards, i, rows, cols))
        max_exp[i] = grid_max_exponent(boards, i)
        age[i] = grid_age(boards, i)
        for c in range(boards.shape[1]):
            obs[i, c] = boards[i, c]


def _compile(fn, parallel: bool):
    """Compile ``fn`` under its own name: numba's on-disk cache is keyed by qualname, and a serial and a
    parallel build of one function would otherwise overwrite each other's cache entries."""
    suffix = "_parallel" if parallel else "_serial"
    clone = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__ + suffix, fn.__defaults__, fn.__closure__)
    clone.__qualname__ = fn.__qualname__ + suffix
    clone.__doc__ = fn.__doc__
    return numba.njit(cache=True, parallel=parallel)(clone)


# Thread start-up costs more than the work for a few envs: small batches use the serial compilation.
PARALLEL_MIN_ENVS = 256
vector_step_parallel = _compile(_vector_step, parallel=True)
vector_step_serial = _compile(_vector_step, parallel=False)
vector_reset_parallel = _compile(_vector_reset, parallel=True)
vector_reset_serial = _compile(_vector_reset, parallel=False)


@numba.njit(cache=True)
def onehot(boards, channels):
    """One-hot planes: ``uint8[..., cells]`` exponents -> ``uint8[n, channels, cells]`` (1 where exponent = k)."""
    flat = boards.reshape(-1, boards.shape[-1])
    out = np.zeros((flat.shape[0], channels, flat.shape[1]), np.uint8)
    for i in range(flat.shape[0]):
        for c in range(flat.shape[1]):
            out[i, flat[i, c], c] = 1
    return out


@numba.njit(cache=True)
def sample_legal_actions(mask, uniforms):
    """One uniformly random legal action per row: ``mask bool[n, 4]``, ``uniforms float64[n]`` in [0, 1).

    Rows without a legal action get 0.  Returns ``int64[n]``.
    """
    n = mask.shape[0]
    out = np.zeros(n, np.int64)
    for i in range(n):
        count = 0
        for a in range(4):
            count += mask[i, a]
        if count == 0:
            continue
        k = min(int(uniforms[i] * count), count - 1)
        for a in range(4):
            if mask[i, a]:
                if k == 0:
                    out[i] = a
                    break
                k -= 1
    return out
