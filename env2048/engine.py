"""Step and reset kernels shared by :class:`Game2048Env` and :class:`Game2048VectorEnv`.

Randomness: each environment owns a buffer ``rand: float64[RAND_BUFFER]`` of uniforms drawn from its
``np_random`` generator, and a cursor ``pos``.  A reset uses 4 uniforms (two spawns), a legal move 2, an
illegal move none.  Before every reset or step the caller calls :func:`needs_refill`; when fewer than
``RESERVE`` uniforms are left the whole buffer is redrawn.  Single and vector envs follow this same rule, so
one seed gives the same game in both.
"""

from __future__ import annotations

import numba
import numpy as np

from .grid import grid_age, grid_max_exponent, legal_bits, move_inplace, spawn_inplace

RAND_BUFFER = 256
RESERVE = 4

INVALID_NOOP = 0
INVALID_TERMINATE = 1
INVALID_RAISE = 2
INVALID_MODES = {"noop": INVALID_NOOP, "terminate": INVALID_TERMINATE, "raise": INVALID_RAISE}
NO_GOAL = 255


def needs_refill(pos) -> bool:
    """True (elementwise for arrays) when the buffer has fewer than ``RESERVE`` uniforms left."""
    return pos > RAND_BUFFER - RESERVE


@numba.njit(cache=True, inline="always")
def _reset_one(board, p4, rand, pos):
    board[:] = 0
    spawn_inplace(board, rand[pos], rand[pos + 1], p4)
    spawn_inplace(board, rand[pos + 2], rand[pos + 3], p4)
    return pos + 4


@numba.njit(cache=True, inline="always")
def _step_one(board, after, rows, cols, action, p4, rand, pos):
    """Move, then spawn after a legal move.  ``after`` receives the afterstate.  Returns (reward, legal, pos)."""
    after[:] = board
    reward, legal = move_inplace(after, rows, cols, action)
    if legal:
        board[:] = after
        spawn_inplace(board, rand[pos], rand[pos + 1], p4)
        pos += 2
    return reward, legal, pos


@numba.njit(cache=True)
def reset_kernel(board, rows, cols, p4, rand, pos):
    """Single env reset: returns ``(obs uint8[rows, cols], mask bool[4], pos)``."""
    pos = _reset_one(board, p4, rand, pos)
    bits = legal_bits(board, rows, cols)
    mask = np.empty(4, np.bool_)
    for a in range(4):
        mask[a] = (bits >> a) & 1
    return board.copy().reshape(rows, cols), mask, pos


@numba.njit(cache=True)
def step_kernel(board, rows, cols, action, p4, rand, pos):
    """Single env step.

    ``board``: ``uint8[cells]`` updated in place.  Returns ``(obs uint8[rows, cols], afterstate
    uint8[rows, cols], mask bool[4], reward, legal, game_over, max_exponent, age, pos)``.
    """
    after = np.empty_like(board)
    reward, legal, pos = _step_one(board, after, rows, cols, action, p4, rand, pos)
    bits = legal_bits(board, rows, cols)
    mask = np.empty(4, np.bool_)
    for a in range(4):
        mask[a] = (bits >> a) & 1
    obs = board.copy().reshape(rows, cols)
    return (
        obs,
        after.reshape(rows, cols),
        mask,
        reward,
        legal,
        bits == 0,
        grid_max_exponent(board),
        grid_age(board),
        pos,
    )


@numba.njit(cache=True, parallel=True)
def vector_step_kernel(
    boards, actions, rows, cols, p4, rand, pos, goal_exponent, invalid_mode, needs_reset,
    score, moves, illegal, obs, after, mask, reward, terminated, after_valid, max_exp, age,
):  # fmt: skip
    """Step every env at once (NEXT_STEP autoreset), in place on the state arrays.

    State (updated): ``boards uint8[n, cells]``, ``pos int64[n]``, ``needs_reset bool[n]``, ``score``,
    ``moves``, ``illegal`` (``int64[n]``).  Outputs (overwritten): ``obs uint8[n, cells]``,
    ``after uint8[n, cells]``, ``mask bool[n, 4]``, ``reward float64[n]``, ``terminated bool[n]``,
    ``after_valid bool[n]`` (False where the env was reset this step), ``max_exp int64[n]``, ``age int64[n]``.
    """
    n = boards.shape[0]
    for i in numba.prange(n):
        board = boards[i]
        if needs_reset[i]:
            pos[i] = _reset_one(board, p4, rand[i], pos[i])
            score[i] = 0
            moves[i] = 0
            illegal[i] = 0
            after[i, :] = 0
            after_valid[i] = False
            reward[i] = 0.0
            done = False
        else:
            r, legal, pos[i] = _step_one(board, after[i], rows, cols, actions[i], p4, rand[i], pos[i])
            after_valid[i] = True
            reward[i] = r
            done = False
            if legal:
                score[i] += r
                moves[i] += 1
            else:
                illegal[i] += 1
                if invalid_mode == INVALID_TERMINATE:
                    done = True
        bits = legal_bits(board, rows, cols)
        for a in range(4):
            mask[i, a] = (bits >> a) & 1
        top = grid_max_exponent(board)
        if bits == 0 or top >= goal_exponent:
            done = True
        max_exp[i] = top
        age[i] = grid_age(board)
        terminated[i] = done
        needs_reset[i] = done
        obs[i, :] = board


@numba.njit(cache=True, parallel=True)
def vector_reset_kernel(boards, rows, cols, p4, rand, pos, score, moves, illegal, obs, mask, needs_reset, max_exp, age):
    """Reset every env (in place); fills ``obs`` and ``mask``."""
    n = boards.shape[0]
    for i in numba.prange(n):
        board = boards[i]
        pos[i] = _reset_one(board, p4, rand[i], pos[i])
        score[i] = 0
        moves[i] = 0
        illegal[i] = 0
        needs_reset[i] = False
        bits = legal_bits(board, rows, cols)
        for a in range(4):
            mask[i, a] = (bits >> a) & 1
        max_exp[i] = grid_max_exponent(board)
        age[i] = grid_age(board)
        obs[i, :] = board


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
