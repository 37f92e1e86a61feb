"""The game in JAX (extra ``jax``): pure, jittable rules for any r x c board, bit for bit those of the numba
kernels, a pgx-style environment and a gymnax one.

    import jax
    from env2048 import jax as g2048

    env = g2048.make(3, 3)                      # suite v2's rules; target=512 for the goal game
    state = jax.jit(env.init)(jax.random.key(0))
    state = jax.jit(env.step)(state, 3, jax.random.key(1))

The chance step on its own, for planners and stochastic MuZero: :func:`afterstate` (:func:`afterstates`: all
four moves at once), :func:`chance_outcomes`, :func:`apply_chance` (:mod:`env2048.jax.game`).
"""

from __future__ import annotations

try:
    import jax  # noqa: F401
except ImportError as exc:  # pragma: no cover - the message is the point
    raise ImportError("env2048.jax needs JAX: pip install 'solved2048[jax]' (or pip install jax)") from exc

from .env import VERSION, Env, State
from .game import (
    MAX_EXPONENT,
    Rules,
    afterstate,
    afterstates,
    allowed_mask,
    apply_chance,
    chance_outcomes,
    legal_action_mask,
    outcome,
    sample_chance,
    spawn,
)

__all__ = [
    "MAX_EXPONENT",
    "Rules",
    "VERSION",
    "allowed_mask",
    "Env",
    "State",
    "afterstate",
    "afterstates",
    "apply_chance",
    "chance_outcomes",
    "legal_action_mask",
    "make",
    "outcome",
    "sample_chance",
    "spawn",
]


def make(rows: int, cols: int, target: int | None = None, pattern=None, p4: float = 0.1, start_p4=None) -> Env:
    """The game on a ``rows`` x ``cols`` board (static ints) with suite v2's rules (:class:`Env`); ``target`` a
    tile (512) for the goal game; ``pattern`` a built-in endgame (``"L3"``, with its ``target``) on its board;
    ``start_p4`` the chance that a start tile is a 4 (default ``p4``; 0: two 2-tiles)."""
    return Env(rows, cols, target, p4, pattern, start_p4)
