"""The solver's work cut into shards: each age's states and afterstates are split among ``n`` shards by a hash of
the canonical ID, and every step below works on one shard and hands its output to the owner shards.

These are plain functions on numpy arrays; :mod:`solver.ray_backend` runs them as Ray tasks (and the tests run
them in one process).  Per age ``a``:

forward
    :func:`expand_shard`  state pieces of shard s (from ages a-2 and a-4) -> its states -> afterstate pieces, one
                          per owner shard;
    :func:`spawn_shard`   afterstate pieces of shard t -> its afterstates -> spawned child pieces of ages a+2
                          and a+4, one per owner shard.
backward (the states of ages a+2 and a+4 already solved)
    :func:`children_requests`       afterstates of shard s -> their spawned children (states of ages a+2 and
                                    a+4), one piece per owner shard;
    :func:`lookup_shard`            state shard t of age a+2 (or a+4) answers every shard's requests;
    :func:`afterstate_values_from`  shard s: its afterstates' values (the spawn model's aggregate);
    :func:`move_requests`           states of shard t -> their moves (kept) and the afterstates these lead
                                    to, by owner;
    :func:`lookup_shard`            afterstate shard s of age a answers them;
    :func:`state_values_from`       shard t: its states' values (Bellman max over the kept moves).

Every state and afterstate value is computed once, by the same kernel and the same arithmetic as in the
one-process build, so the values, and the table, do not depend on the number of shards.
"""

from __future__ import annotations

import numba
import numpy as np

from .backward import CorruptLayer, solve_states
from .bellman import GROUP, afterstate_values_grouped
from .forward import expand, merge_unique, n_chunks_for, spawn
from .moves import Moves, afterstates_of, state_moves, state_values_from_moves
from .spec import SolveSpec
from .value_index import ValueIndex, build_value_index

_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


@numba.njit(cache=True, inline="always")
def _mix(x):
    """The splitmix64 finaliser: a bijection of ``uint64`` whose low bits depend on every input bit."""
    x = (x ^ (x >> np.uint64(30))) * _M1
    x = (x ^ (x >> np.uint64(27))) * _M2
    return x ^ (x >> np.uint64(31))


@numba.njit(cache=True, nogil=True)
def owners_of(ids, n_shards):
    """Owner shard of each board ID: ``int64[n]`` in ``[0, n_shards)``."""
    out = np.empty(ids.shape[0], np.int64)
    n = np.uint64(n_shards)
    for i in range(ids.shape[0]):
        out[i] = np.int64(_mix(ids[i]) % n)
    return out


@numba.njit(cache=True, nogil=True)
def group_by_owner(ids, n_shards):
    """Stable counting sort of ``ids`` by owner: ``(grouped uint64[n], starts int64[n_shards + 1])``; the IDs
    of shard k are ``grouped[starts[k]:starts[k + 1]]``, in their input order."""
    own = owners_of(ids, n_shards)
    starts = np.zeros(n_shards + 1, np.int64)
    for k in own:
        starts[k + 1] += 1
    for k in range(n_shards):
        starts[k + 1] += starts[k]
    fill = starts[:-1].copy()
    grouped = np.empty_like(ids)
    for i in range(ids.shape[0]):
        grouped[fill[own[i]]] = ids[i]
        fill[own[i]] += 1
    return grouped, starts


def split(ids: np.ndarray, n_shards: int) -> list[np.ndarray]:
    """``ids`` (``uint64``) cut into one piece per owner shard; sorted input gives sorted pieces."""
    grouped, starts = group_by_owner(ids, n_shards)
    return [grouped[starts[k] : starts[k + 1]] for k in range(n_shards)]


# -- forward --------------------------------------------------------------------------------------------------
def expand_shard(spec: SolveSpec, n_shards: int, pieces) -> tuple[np.ndarray, int, list[np.ndarray]]:
    """One shard's states of an age from the pieces sent to it -> ``(states, terminal count, afterstate pieces
    for the age's n_shards owners)``."""
    states = merge_unique(list(pieces))
    afterstates, terminal = expand(states, spec)
    return states, int(terminal), split(afterstates, n_shards)


def spawn_shard(spec: SolveSpec, shards_next: tuple[int, int], pieces):
    """One shard's afterstates of an age from the pieces sent to it (sorted unique ``uint64``), and their spawned
    children cut by owner among the ``shards_next = (shards of age + 2, of age + 4)``:
    ``(afterstates, two-tile pieces, four-tile pieces)``."""
    afterstates = merge_unique(list(pieces))
    twos, fours = spawn(afterstates, spec)
    return afterstates, split(twos, shards_next[0]), split(fours, shards_next[1])


# -- backward -------------------------------------------------------------------------------------------------
def children_requests(spec: SolveSpec, shards_next: tuple[int, int], afterstates: np.ndarray):
    """The state values an afterstate shard needs: its afterstates' spawned children, cut by owner among the
    state shards of ages + 2 and + 4: ``(pieces for age + 2, pieces for age + 4)`` (sorted ``uint64``)."""
    twos, fours = spawn(afterstates, spec)
    return split(twos, shards_next[0]), split(fours, shards_next[1])


def move_requests(spec: SolveSpec, n_shards: int, states: np.ndarray) -> tuple[list[np.ndarray], Moves]:
    """The afterstate values a state shard needs: the canonical afterstates of its states' moves (winning moves
    need none), cut by owner among the age's ``n_shards`` afterstate shards; and the moves themselves, kept for
    :func:`state_values_from` so that no board is moved twice."""
    moves = state_moves(spec, states)
    return split(afterstates_of(moves, spec.cells), n_shards), moves


@numba.njit(cache=True, nogil=True)
def lookup_sorted(ids, values, requests):
    """Values of sorted ``requests`` in the sorted unique ``ids`` (``values`` alongside): ``(float64[q], missing)``
    with ``missing`` = -1, or the index of the first request not in ``ids``.  One pass: from the last match it
    gallops ahead (steps 1, 2, 4, ...) then bisects, so a short request costs log steps and a long one a merge."""
    n = ids.shape[0]
    out = np.empty(requests.shape[0], np.float64)
    lo = 0
    for i in range(requests.shape[0]):
        key = requests[i]
        step = 1
        hi = lo
        while hi < n and ids[hi] < key:
            lo = hi + 1
            hi += step
            step *= 2
        hi = min(hi, n)
        while lo < hi:  # first index in [lo, hi) with ids >= key
            mid = (lo + hi) // 2
            if ids[mid] < key:
                lo = mid + 1
            else:
                hi = mid
        if lo >= n or ids[lo] != key:
            return out, i
        out[i] = values[lo]
    return out, -1


def lookup_shard(ids: np.ndarray, values: np.ndarray, requests) -> list[np.ndarray]:
    """Values (``float64``) of the requested boards (each request a sorted ``uint64`` array) from one shard's
    sorted boards ``ids`` and their ``values``."""
    answers = []
    for req in requests:
        found, missing = lookup_sorted(ids, values, req)
        if missing >= 0:
            raise CorruptLayer(f"board {int(req[missing]):#x} was requested from a shard that does not hold it")
        answers.append(found)
    return answers


def _joined(requested, answers) -> tuple[np.ndarray, np.ndarray]:
    """The requests of one shard to every owner and the owners' answers, each as one array."""
    ids = np.concatenate(list(requested)) if len(requested) else np.empty(0, np.uint64)
    vals = np.concatenate(list(answers)) if len(answers) else np.empty(0, np.float64)
    return ids, vals


def afterstate_values_from(spec: SolveSpec, afterstates: np.ndarray, requests2, answers2, requests4, answers4):
    """Values (``float64[n]``) of one shard's afterstates; ``answers*[k]`` are the values of the children
    ``requests*[k]`` (ages + 2 and + 4) from their owner shard k."""
    index2 = build_value_index(*_joined(requests2, answers2))
    index4 = build_value_index(*_joined(requests4, answers4))
    return values_from_children(spec, afterstates, index2, index4)


def state_values_from(moves: Moves, requests, answers) -> np.ndarray:
    """Values (``float64[n]``) of one shard's states from their ``moves`` (:func:`move_requests`) and the values
    of the afterstates they move to."""
    values, _, missing = state_values_from_moves(moves, build_value_index(*_joined(requests, answers)))
    if missing >= 0:
        raise CorruptLayer(f"state {missing} of the shard has an afterstate its answers do not hold")
    return values


def solve_whole(spec: SolveSpec, afterstates, states, next2: tuple, next4: tuple) -> tuple[np.ndarray, np.ndarray]:
    """An age held by one shard: ``(afterstate values, state values)`` from the whole state layers ``next* =
    (states, state values)`` of ages + 2 and + 4, as the one-process build computes them."""
    values = values_from_children(spec, afterstates, build_value_index(*next2), build_value_index(*next4))
    return values, solve_states(spec, states, afterstates, values)[0]


def values_from_children(
    spec: SolveSpec, afterstates: np.ndarray, index2: ValueIndex, index4: ValueIndex
) -> np.ndarray:
    """Afterstate values (``float64[n]``) from value indexes of their children's values (ages + 2, + 4)."""
    T = spec.tables
    values, missing = afterstate_values_grouped(
        afterstates, T, spec.p4, spec.spawn_code, index2, index4,
        n_chunks_for(afterstates.size), GROUP,
    )  # fmt: skip
    if missing >= 0:
        raise CorruptLayer(f"afterstate {int(afterstates[missing]):#x} has a child missing from the next layers")
    return values


def merge_shards(id_pieces, value_pieces) -> tuple[np.ndarray, np.ndarray]:
    """A layer's boards (sorted ``uint64[n]``) and their values (``float64[n]``) from its shards'."""
    if len(id_pieces) == 1:
        return id_pieces[0], value_pieces[0]
    ids = np.concatenate(list(id_pieces))
    values = np.concatenate(list(value_pieces))
    order = np.argsort(ids, kind="stable")
    return ids[order], values[order]
