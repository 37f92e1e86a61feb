"""States' moves computed once and kept, apart from the Bellman max.

The local backward pass moves each state and looks its afterstates up in one kernel.  Where the afterstates'
values are not at hand yet (a worker that must first ask for them), :func:`state_moves` computes every move once:
the afterstates to ask for are its sorted unique keys (:func:`afterstates_of`), and :func:`state_values_from_moves`
finishes from the stored keys and rewards without moving a board again.  ``experiments.bench.backward`` counts
the backward pass's lookups with it.

Moves of ``n`` states: ``keys uint64[n, 4]`` (the canonical afterstate of move ``a``; ``NO_KEY`` = 0 where the
move is not allowed or ends the game) and ``rewards uint32[n, 4]`` (the move's merge score, 0 under a tile
objective; ``WIN_FLAG`` set where the move succeeds, ``FAIL_FLAG`` where it fails).
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from env2048.kernels import all_moves_packed, canonical_packed
from env2048.rules import FAILURE, ILLEGAL, SUCCESS, outcome_of

from . import buffers
from .bellman import GROUP, best_of
from .forward import n_chunks_for
from .kernels import TIE_TOLERANCE, _sort_unique_inplace, chunk_bounds, merge_runs
from .prefetch import prefetch
from .spec import SolveSpec
from .threads import block_kernel, run_parallel
from .value_index import ValueIndex, find, home_slot

NO_KEY = np.uint64(0)  # the empty board: never an afterstate
WIN_FLAG = np.uint32(1 << 31)  # merge scores stay far below 2**30
FAIL_FLAG = np.uint32(1 << 30)


class Moves(NamedTuple):
    """The moves of a shard's states: ``keys uint64[n, 4]``, ``rewards uint32[n, 4]`` (see the module)."""

    keys: np.ndarray
    rewards: np.ndarray


def _state_moves(states, T, rules, score_rewards, n_chunks):
    """``(keys uint64[n, 4], rewards uint32[n, 4])`` of ``states`` (see :class:`Moves`), on the threads."""
    n = states.shape[0]
    keys = buffers.zeros(n, np.uint64, width=4)  # numba's allocation, as the parfors kernel had (solver.buffers)
    rewards = buffers.zeros(n, np.uint32, width=4)
    run_parallel(
        _state_moves_chunks, n_chunks, states, T, rules, score_rewards, chunk_bounds(n, n_chunks), keys, rewards
    )
    return keys, rewards


@block_kernel
def _state_moves_chunks(lo, hi, states, T, rules, score_rewards, bounds, keys, rewards):
    rows, cols, moves, sym_lines, sym_bytes = T.rows, T.cols, T.moves, T.sym_lines, T.sym_bytes
    for i in range(bounds[lo], bounds[hi]):
        s = states[i]
        afters, gains = all_moves_packed(s, rows, cols, moves)
        for a in range(4):
            after = afters[a]
            outcome = outcome_of(s, after, rules)
            if outcome == ILLEGAL:
                continue
            if score_rewards:
                rewards[i, a] = np.uint32(gains[a])
            if outcome == SUCCESS:
                rewards[i, a] |= WIN_FLAG
                continue
            if outcome == FAILURE:
                rewards[i, a] |= FAIL_FLAG
                continue
            keys[i, a] = canonical_packed(after, rows, cols, sym_lines, sym_bytes)


def _sorted_runs(keys, key_bits, n_chunks):
    """The non-zero ``keys`` (``uint64[n, 4]``) as sorted unique runs, one per chunk of rows (for merge_runs):
    ``(buf uint64[4n], starts int64[n_chunks], counts int64[n_chunks])``."""
    n = keys.shape[0]
    bounds = chunk_bounds(n, n_chunks)
    buf = buffers.empty(4 * n, np.uint64)
    counts = np.zeros(n_chunks, np.int64)
    run_parallel(_sorted_runs_chunks, n_chunks, keys, key_bits, bounds, buf, counts)
    return buf, 4 * bounds[:-1], counts


@numba.njit(cache=True, nogil=True)
def _sorted_runs_chunks(lo, hi, keys, key_bits, bounds, buf, counts):
    for ch in range(lo, hi):
        w = 4 * bounds[ch]
        for i in range(bounds[ch], bounds[ch + 1]):
            for a in range(4):
                if keys[i, a] != NO_KEY:
                    buf[w] = keys[i, a]
                    w += 1
        counts[ch] = _sort_unique_inplace(buf, 4 * bounds[ch], w, key_bits)


def _values_from_moves(keys, rewards, after_index, n_chunks, tie_rel, tie_abs, group):
    n = keys.shape[0]
    values = buffers.empty(n, np.float64)
    best = buffers.zeros(n, np.uint8)
    missing = np.full(n_chunks, -1, np.int64)
    run_parallel(
        _values_from_moves_chunks,
        n_chunks,
        keys,
        rewards,
        after_index,
        chunk_bounds(n, n_chunks),
        float(tie_rel),
        float(tie_abs),
        group,
        values,
        best,
        missing,
        np.empty((n_chunks, 4)),
    )
    return values, best, int(missing.max())


@block_kernel
def _values_from_moves_chunks(
    lo, hi, keys, rewards, after_index, bounds, tie_rel, tie_abs, group, values, best, missing, q_of_chunk
):
    a_table, a_vals, a_shift = after_index
    for ch in range(lo, hi):
        q = q_of_chunk[ch]
        for g in range(bounds[ch], bounds[ch + 1], group):
            g_end = min(g + group, bounds[ch + 1])
            for i in range(g, g_end):
                for a in range(4):
                    if keys[i, a] != NO_KEY:
                        prefetch(a_table, home_slot(keys[i, a], a_shift))
            for i in range(g, g_end):
                for a in range(4):
                    r = rewards[i, a]
                    if r & WIN_FLAG:
                        q[a] = float(r ^ WIN_FLAG) + 1.0
                    elif r & FAIL_FLAG:
                        q[a] = float(r ^ FAIL_FLAG)
                    elif keys[i, a] == NO_KEY:
                        q[a] = -np.inf
                    else:
                        slot = find(a_table, a_shift, keys[i, a])
                        if slot < 0:
                            missing[ch] = i
                            q[a] = -np.inf
                        else:
                            q[a] = float(r) + a_vals[slot, 1]
                values[i], best[i] = best_of(q, tie_rel, tie_abs)


def state_moves(spec: SolveSpec, states: np.ndarray) -> Moves:
    """Every move of ``states`` (sorted unique canonical ``uint64[n]``) of game ``spec``."""
    return Moves(*_state_moves(states, spec.tables, spec.rules, spec.objective == "score", n_chunks_for(states.size)))


def afterstates_of(moves: Moves, cells: int) -> np.ndarray:
    """The sorted unique canonical afterstates the ``moves`` reach (wins left out): ``uint64[m]``."""
    return merge_runs(*_sorted_runs(moves.keys, 4 * cells, n_chunks_for(moves.keys.shape[0])))


def state_values_from_moves(
    moves: Moves, after_index: ValueIndex, tie: tuple[float, float] = (TIE_TOLERANCE, 0.0)
) -> tuple[np.ndarray, np.ndarray, int]:
    """``(values float64[n], best_actions uint8[n], missing)`` of the states whose ``moves`` these are, from a
    :class:`~solver.value_index.ValueIndex` of their afterstates' values; ``missing`` is -1 or the index of a
    state whose afterstate the index lacks.  The same floats, bit for bit, as
    :func:`solver.bellman.state_values_grouped` on the states."""
    return _values_from_moves(
        moves.keys, moves.rewards, after_index, n_chunks_for(moves.keys.shape[0]), float(tie[0]), float(tie[1]), GROUP
    )
