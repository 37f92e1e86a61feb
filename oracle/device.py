"""Exact labels on the device (extra ``jax``): a solved table's afterstate values as JAX arrays, and jittable
Q*, V* and regret of batches of boards, equal to the host :class:`oracle.Oracle`'s to float32 rounding.

    from oracle import Oracle
    from oracle.device import DeviceOracle

    with Oracle.open("tables/3x3.h5") as host:
        device = DeviceOracle.from_oracle(host)
    q = device.q_values(boards)                 # float32 (n, 4), NaN for an illegal move
    q, missing = device.lookup_q(boards)        # and bool (n,): a legal move's afterstate is not in the table

The table lives in two device arrays, ``keys`` (each stored afterstate's key, sorted) and ``values`` (float32),
which the jitted functions take as arguments (:func:`q_values`, :func:`value`, :func:`regret`), so that a training
step that labels its boards compiles once and never embeds the table as a constant.

A key is the afterstate's base-B rank, ``sum(e[c] * B**c)`` over the cells (B the largest exponent stored, plus
one), minimized over the board's symmetries (8 if square, 4 otherwise), as the tables store one board per
symmetry class.  It is a uint32 when B**cells < 2**32 (the 2x3, 2x4, 3x3 and 3x3-512 tables): JAX without x64
keeps no 64-bit integer, so a board whose key would not fit is refused rather than truncated.  Endgame tables
are not served here yet.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from env2048 import board as B
from env2048.jax.game import afterstate
from env2048.tables import symmetry_tables

#: Keys are uint32.
KEY_LIMIT = 1 << 32


def _rank_weights(rows: int, cols: int, base: int) -> np.ndarray:
    """``int64[cells]``: ``base**c`` for each cell; a clear error if the ranks would not fit a uint32."""
    if base ** (rows * cols) > KEY_LIMIT:
        raise NotImplementedError(
            f"a {rows}x{cols} table with exponents up to {base - 1}: base-{base} keys of {rows * cols} cells do not "
            "fit 32 bits, and JAX without x64 keeps no 64-bit integer (pairs of words are not implemented yet)"
        )
    return base ** np.arange(rows * cols, dtype=np.int64)


def host_keys(boards: np.ndarray, rows: int, cols: int, base: int) -> np.ndarray:
    """``uint32[n]``: the keys of exponent boards ``uint8 (n, rows, cols)`` (the minimum rank over the
    symmetries), computed on the host."""
    flat = np.asarray(boards, np.int64).reshape(len(boards), -1)
    perms, _ = symmetry_tables(rows, cols)
    weights = _rank_weights(rows, cols, base)
    ranks = np.stack([flat[:, perm] @ weights for perm in perms])
    return ranks.min(axis=0).astype(np.uint32)


class DeviceOracle:
    """A table's afterstate values on the device (see the module docstring).  ``keys`` uint32[m] sorted,
    ``values`` float32[m]; ``rows``, ``cols``, ``base`` (keys' radix), ``score`` (Q = reward + V, else success
    probabilities: a move that makes ``goal_exponent`` is worth 1); ``static``: those settings as the keywords of
    the module's jittable functions."""

    def __init__(self, keys, values, rows: int, cols: int, base: int, score: bool, goal_exponent: int | None):
        self.keys, self.values = jnp.asarray(keys, jnp.uint32), jnp.asarray(values, jnp.float32)
        self.rows, self.cols, self.base, self.score = rows, cols, base, score
        self.goal_exponent = goal_exponent
        self.static = {"rows": rows, "cols": cols, "base": base, "score": score, "goal": goal_exponent or 0}

    @classmethod
    def from_oracle(cls, oracle) -> DeviceOracle:
        """The device copy of an open host :class:`oracle.Oracle` of a plain board (score or ``tile:K``)."""
        spec = oracle.spec
        if spec.pattern is not None:
            raise NotImplementedError(f"{spec.describe()}: endgame tables are not served on the device yet")
        if spec.objective != "score" and not spec.objective.startswith("tile:"):
            raise NotImplementedError(f"{spec.describe()}: objective {spec.objective!r} is not served on the device")
        if not hasattr(oracle.table, "afterstates_of"):
            raise NotImplementedError(
                f"{oracle.path} is a format v{oracle.format_version} table: the device reads v2 tables "
                "(python -m solver convert writes one)"
            )
        ids, values = [], []
        for age in np.asarray(oracle.table.ages).tolist():
            a, v = oracle.table.afterstates_of(int(age))
            ids.append(np.asarray(a, np.uint64))
            values.append(np.asarray(v, np.float64))
        ids, values = np.concatenate(ids), np.concatenate(values)
        boards = B.unpack(ids, spec.rows, spec.cols).reshape(len(ids), spec.rows, spec.cols)
        base = int(boards.max()) + 1 if len(ids) else 2
        keys = host_keys(boards, spec.rows, spec.cols, base)
        order = np.argsort(keys, kind="stable")
        goal = int(spec.objective.split(":")[1]) if spec.objective.startswith("tile:") else None
        return cls(keys[order], values[order].astype(np.float32), spec.rows, spec.cols, base, goal is None, goal)

    def lookup_q(self, boards) -> tuple[jax.Array, jax.Array]:
        """``(q float32 (n, 4), missing bool (n,))`` of exponent boards ``(n, rows, cols)``: NaN for an illegal
        move; ``missing`` where a legal move's afterstate is not in the table (its Q NaN too)."""
        return lookup_q(self.keys, self.values, jnp.asarray(boards, jnp.int32), **self.static)

    def q_values(self, boards) -> jax.Array:
        return self.lookup_q(boards)[0]

    def value(self, boards) -> jax.Array:
        """``float32 (n,)``: V*, the best legal move's Q (0 where no move is legal)."""
        return value(self.keys, self.values, jnp.asarray(boards, jnp.int32), **self.static)

    def regret(self, boards, actions) -> jax.Array:
        """``float32 (n,)``: max Q* − Q*(action) (NaN for an illegal action)."""
        return regret(self.keys, self.values, jnp.asarray(boards, jnp.int32), jnp.asarray(actions), **self.static)


def _key(board: jax.Array, rows: int, cols: int, base: int) -> jax.Array:
    """The device key of one board (uint32): the minimum base-``base`` rank over its symmetries."""
    perms, _ = symmetry_tables(rows, cols)
    weights = jnp.asarray(_rank_weights(rows, cols, base).astype(np.uint32))
    flat = board.reshape(-1).astype(jnp.uint32)
    return jnp.min(jnp.stack([jnp.sum(flat[jnp.asarray(perm)] * weights) for perm in perms]))


def _q_one(keys, values, board, rows, cols, base, score, goal):
    def action_q(action):
        after, reward, moved = afterstate(board, action)
        key = _key(jnp.minimum(after, base - 1), rows, cols, base)
        at = jnp.clip(jnp.searchsorted(keys, key), 0, keys.shape[0] - 1)
        stored = (keys[at] == key) & (after.max() < base)
        v = jnp.where(stored, values[at], jnp.nan)
        made = (goal > 0) & (after.max() >= goal)
        r = reward.astype(jnp.float32) if score else jnp.float32(0.0)
        q = jnp.where(made, r + 1.0, r + v)
        return jnp.where(moved, q, jnp.nan), moved & ~made & ~stored

    q, missing = jax.vmap(action_q)(jnp.arange(4))
    return q, missing.any()


_STATIC = ("rows", "cols", "base", "score", "goal")


@partial(jax.jit, static_argnames=_STATIC)
def lookup_q(keys, values, boards, *, rows, cols, base, score, goal):
    """Jittable: ``(q float32 (n, 4), missing bool (n,))`` of ``boards`` int32 (n, rows, cols), given a
    :class:`DeviceOracle`'s ``keys`` and ``values`` (arguments, not constants) and its static settings."""
    return jax.vmap(lambda b: _q_one(keys, values, b, rows, cols, base, score, goal))(boards)


@partial(jax.jit, static_argnames=_STATIC)
def value(keys, values, boards, *, rows, cols, base, score, goal):
    """Jittable: V* of ``boards`` (float32 (n,); 0 where no move is legal)."""
    q, _ = lookup_q(keys, values, boards, rows=rows, cols=cols, base=base, score=score, goal=goal)
    legal = ~jnp.isnan(q)
    return jnp.where(legal.any(axis=1), jnp.max(jnp.where(legal, q, -jnp.inf), axis=1), 0.0)


@partial(jax.jit, static_argnames=_STATIC)
def regret(keys, values, boards, actions, *, rows, cols, base, score, goal):
    """Jittable: max Q* − Q*(action) of each board's action (float32 (n,); NaN for an illegal action)."""
    q, _ = lookup_q(keys, values, boards, rows=rows, cols=cols, base=base, score=score, goal=goal)
    best = jnp.max(jnp.where(jnp.isnan(q), -jnp.inf, q), axis=1)
    return best - jnp.take_along_axis(q, jnp.asarray(actions, jnp.int32)[:, None], axis=1)[:, 0]
