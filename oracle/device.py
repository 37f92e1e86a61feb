"""Exact labels on the device (extra ``jax``): a solved table's afterstate values as JAX arrays, and jittable
Q*, V* and regret of batches of boards, equal to the host :class:`oracle.Oracle`'s to float32 rounding.

    from oracle import Oracle
    from oracle.device import DeviceOracle

    with Oracle.open("tables/3x3.h5") as host:
        device = DeviceOracle.from_oracle(host)
    q = device.q_values(boards)                 # float32 (n, 4), NaN for an illegal move
    q, missing = device.lookup_q(boards)        # and bool (n,): a legal move's afterstate is not in the table

The table lives in device arrays, ``keys`` (each stored afterstate's key, sorted), ``values`` (float32) and the
game's ``rules``, which the jitted functions take as arguments (:func:`lookup_q`, :func:`value`, :func:`regret`), so
that a training step that labels its boards compiles once and never embeds the table as a constant.

A key is the afterstate's base-B rank, ``sum(e[c] * B**j)`` over the ranked cells (every cell, or an endgame's
free cells; B the largest exponent stored there, plus one), minimized over the table's symmetries (8 on a square
board, 4 otherwise, an endgame's own group), as the tables store one board per symmetry class.  JAX without x64
keeps no 64-bit integer, so a key is one uint32 when ``B**cells`` fits (the 2x3, 2x4, 3x3 and 3x3-512 tables, and
the 256 endgames' ten free cells), else a pair (high, low) searched lexicographically (t-512); a board beyond the
table (an exponent of B or more) is flagged, never truncated into another board's key.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from env2048 import board as B
from env2048.jax.game import FAILURE, ILLEGAL, SUCCESS, Rules, afterstates, outcome, rules_from_array

#: Each word of a key is a uint32.
WORD = 1 << 32


class KeyLayout(NamedTuple):
    """How a board's key is computed: ``perms`` (the table's symmetry group, ``image[d] = board[perm[d]]``, as
    tuples), ``free`` (the cells the key ranks, row-major: every cell, or an endgame's free cells), ``base`` (the
    radix: the largest exponent stored there, plus one) and ``low`` (how many of the ranked cells go in the low
    word; all of them when one word holds the rank)."""

    perms: tuple[tuple[int, ...], ...]
    free: tuple[int, ...]
    base: int
    low: int

    @property
    def words(self) -> int:
        return 1 if self.low == len(self.free) else 2


def key_layout(perms, free, base: int) -> KeyLayout:
    """The :class:`KeyLayout` of ``base``-ary ranks of the ``free`` cells: one uint32 if ``base**len(free)`` fits,
    else a pair (high, low), and a clear error if a pair would not hold it either."""
    free = tuple(int(c) for c in free)
    low = 0
    while low < len(free) and base ** (low + 1) <= WORD:
        low += 1
    if base ** (len(free) - low) > WORD:
        raise NotImplementedError(
            f"base-{base} keys of {len(free)} cells need more than two 32-bit words (JAX without x64 keeps no "
            "64-bit integer); the device serves tables whose keys fit two"
        )
    return KeyLayout(tuple(tuple(int(c) for c in p) for p in np.asarray(perms)), free, int(base), low)


#: Afterstates whose keys are computed at once when a table is copied (bounds the host's memory).
CHUNK = 1 << 20


def _chunks(ids: np.ndarray):
    ids = np.asarray(ids, np.uint64)
    for lo in range(0, len(ids), CHUNK):
        yield ids[lo : lo + CHUNK]


def _unpacked(ids: np.ndarray, spec) -> np.ndarray:
    return B.unpack(ids, spec.rows, spec.cols).reshape(len(ids), spec.rows, spec.cols)


def host_keys(boards: np.ndarray, layout: KeyLayout) -> np.ndarray:
    """The keys of exponent boards ``uint8 (n, rows, cols)`` (the least rank over the symmetries), on the host:
    ``uint32 (n,)`` for one word, ``uint32 (n, 2)`` (high, low) for two."""
    flat = np.asarray(boards, np.uint64).reshape(len(boards), -1)
    weights = np.array([layout.base**j for j in range(layout.low)], np.uint64)
    high_weights = np.array([layout.base**j for j in range(len(layout.free) - layout.low)], np.uint64)
    best = None
    for perm in layout.perms:
        ranked = flat[:, np.asarray(perm)][:, np.asarray(layout.free, np.int64)]
        key = (ranked[:, layout.low :] @ high_weights) * np.uint64(WORD) + ranked[:, : layout.low] @ weights
        best = key if best is None else np.minimum(best, key)
    if layout.words == 1:
        return best.astype(np.uint32)
    return np.stack([best >> np.uint64(32), best & np.uint64(WORD - 1)], axis=1).astype(np.uint32)


class DeviceOracle:
    """A table's afterstate values on the device (see the module docstring).  ``keys`` uint32 ``(m,)`` or ``(m,
    2)`` sorted, ``values`` float32 ``(m,)``, ``rules`` the game's :class:`env2048.jax.Rules` (legal moves,
    success, failure); ``layout`` the :class:`KeyLayout`, ``score`` (Q = reward + V, else success
    probabilities); ``static``: the settings the module's jittable functions take as keywords."""

    def __init__(self, keys, values, rules: Rules, rows: int, cols: int, layout: KeyLayout, score: bool):
        self.keys, self.values = jnp.asarray(keys, jnp.uint32), jnp.asarray(values, jnp.float32)
        self.rules, self.rows, self.cols, self.layout, self.score = rules, rows, cols, layout, score
        self.static = {"rows": rows, "cols": cols, "layout": layout, "score": score}

    @property
    def base(self) -> int:
        return self.layout.base

    @classmethod
    def from_oracle(cls, oracle) -> DeviceOracle:
        """The device copy of an open host :class:`oracle.Oracle` (a v2 table: a board's game to its score or a
        tile, or an endgame)."""
        spec = oracle.spec
        if not hasattr(oracle.table, "afterstates_of"):
            raise NotImplementedError(
                f"{oracle.path} is a format v{oracle.format_version} table: the device reads v2 tables "
                "(python -m solver convert writes one)"
            )
        cells = spec.rows * spec.cols
        fixed = set(spec.pattern.fixed_cells) if spec.pattern is not None else set()
        free = [c for c in range(cells) if c not in fixed]
        ages = np.asarray(oracle.table.ages).tolist()
        top = 1  # the largest exponent on a ranked cell: a first pass over the ages, one at a time
        for age in ages:
            for part in _chunks(oracle.table.afterstates_of(int(age))[0]):
                top = max(top, int(_unpacked(part, spec).reshape(len(part), -1)[:, free].max(initial=0)))
        layout = key_layout(spec.tables.sym_perm, free, top + 1)
        keys, values = [], []
        for age in ages:
            ids, vals = oracle.table.afterstates_of(int(age))
            keys.extend(host_keys(_unpacked(part, spec), layout) for part in _chunks(ids))
            values.append(np.asarray(vals, np.float32))
        keys, values = np.concatenate(keys), np.concatenate(values)
        order = np.lexsort(keys.T[::-1]) if keys.ndim == 2 else np.argsort(keys, kind="stable")
        rules = rules_from_array(spec.rules, cells)
        score = spec.pattern is None and spec.objective == "score"
        return cls(keys[order], values[order], rules, spec.rows, spec.cols, layout, score)

    def lookup_q(self, boards) -> tuple[jax.Array, jax.Array]:
        """``(q float32 (n, 4), missing bool (n,))`` of exponent boards ``(n, rows, cols)``: NaN for an illegal
        move; ``missing`` where a legal move's afterstate is not in the table (its Q NaN too)."""
        return lookup_q(self.keys, self.values, self.rules, jnp.asarray(boards, jnp.int32), **self.static)

    def q_values(self, boards) -> jax.Array:
        return self.lookup_q(boards)[0]

    def value(self, boards) -> jax.Array:
        """``float32 (n,)``: V*, the best legal move's Q (0 where no move is legal)."""
        return value(self.keys, self.values, self.rules, jnp.asarray(boards, jnp.int32), **self.static)

    def regret(self, boards, actions) -> jax.Array:
        """``float32 (n,)``: max Q* − Q*(action) (NaN for an illegal action)."""
        boards, actions = jnp.asarray(boards, jnp.int32), jnp.asarray(actions)
        return regret(self.keys, self.values, self.rules, boards, actions, **self.static)


def _key(board: jax.Array, layout: KeyLayout) -> tuple[jax.Array, jax.Array]:
    """``(high, low)`` uint32 of one board's key (high 0 for one word): the least rank over the symmetries."""
    flat = board.reshape(-1).astype(jnp.uint32)
    low_weights = jnp.asarray([layout.base**j for j in range(layout.low)], jnp.uint32)
    n_high = len(layout.free) - layout.low
    high_weights = jnp.asarray([layout.base**j for j in range(n_high)], jnp.uint32)
    best_high = best_low = None
    for perm in layout.perms:
        ranked = flat[jnp.asarray(perm)][jnp.asarray(layout.free)]
        low = jnp.sum(ranked[: layout.low] * low_weights)
        high = jnp.sum(ranked[layout.low :] * high_weights) if n_high else jnp.uint32(0)
        if best_high is None:
            best_high, best_low = high, low
        else:
            better = (high < best_high) | ((high == best_high) & (low < best_low))
            best_high, best_low = jnp.where(better, high, best_high), jnp.where(better, low, best_low)
    return best_high, best_low


def _find(keys: jax.Array, high: jax.Array, low: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(index, found)``: where the key sits in ``keys`` (sorted; ``(m,)`` one word, ``(m, 2)`` pairs searched
    lexicographically by bisection)."""
    m = keys.shape[0]
    if keys.ndim == 1:
        at = jnp.clip(jnp.searchsorted(keys, low), 0, m - 1)
        return at, keys[at] == low

    def halve(_, bounds):
        lo, hi = bounds
        mid = (lo + hi) // 2
        less = (keys[mid, 0] < high) | ((keys[mid, 0] == high) & (keys[mid, 1] < low))
        return jnp.where(less, mid + 1, lo), jnp.where(less, hi, mid)

    at, _ = jax.lax.fori_loop(0, max(1, m).bit_length() + 1, halve, (jnp.int32(0), jnp.int32(m)))
    at = jnp.clip(at, 0, m - 1)
    return at, (keys[at, 0] == high) & (keys[at, 1] == low)


def _q_one(keys, values, rules, board, rows, cols, layout, score):
    afters, rewards, _ = afterstates(board)  # (4, rows, cols), every move slid once
    verdicts = jax.vmap(lambda after: outcome(board, after, rules))(afters)
    high, low = jax.vmap(lambda after: _key(jnp.minimum(after, layout.base - 1), layout))(afters)
    at, found = jax.vmap(lambda h, lo: _find(keys, h, lo))(high, low)
    stored = found & (afters.reshape(4, -1)[:, jnp.asarray(layout.free)].max(axis=1) < layout.base)
    r = rewards.astype(jnp.float32) if score else jnp.zeros(4, jnp.float32)
    q = jnp.where(verdicts == SUCCESS, r + 1.0, jnp.where(verdicts == FAILURE, r, r + values[at]))
    play = verdicts != ILLEGAL
    unknown = play & (verdicts != SUCCESS) & (verdicts != FAILURE) & ~stored
    return jnp.where(play & ~unknown, q, jnp.nan), unknown.any()


_STATIC = ("rows", "cols", "layout", "score")


@partial(jax.jit, static_argnames=_STATIC)
def lookup_q(keys, values, rules, boards, *, rows, cols, layout, score):
    """Jittable: ``(q float32 (n, 4), missing bool (n,))`` of ``boards`` int32 (n, rows, cols), given a
    :class:`DeviceOracle`'s ``keys``, ``values`` and ``rules`` (arguments, not constants) and its static
    settings."""
    return jax.vmap(lambda b: _q_one(keys, values, rules, b, rows, cols, layout, score))(boards)


@partial(jax.jit, static_argnames=_STATIC)
def value(keys, values, rules, boards, *, rows, cols, layout, score):
    """Jittable: V* of ``boards`` (float32 (n,); 0 where no move is legal)."""
    q, _ = lookup_q(keys, values, rules, boards, rows=rows, cols=cols, layout=layout, score=score)
    legal = ~jnp.isnan(q)
    return jnp.where(legal.any(axis=1), jnp.max(jnp.where(legal, q, -jnp.inf), axis=1), 0.0)


@partial(jax.jit, static_argnames=_STATIC)
def regret(keys, values, rules, boards, actions, *, rows, cols, layout, score):
    """Jittable: max Q* − Q*(action) of each board's action (float32 (n,); NaN for an illegal action)."""
    q, _ = lookup_q(keys, values, rules, boards, rows=rows, cols=cols, layout=layout, score=score)
    best = jnp.max(jnp.where(jnp.isnan(q), -jnp.inf, q), axis=1)
    return best - jnp.take_along_axis(q, jnp.asarray(actions, jnp.int32)[:, None], axis=1)[:, 0]
