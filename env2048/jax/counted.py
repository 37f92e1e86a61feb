"""A batch of JAX games whose steps are counted: what a suite trainer on the ``env-only`` track trains on in JAX.

While a step meter is installed (a suite trainer trains, :mod:`env2048.metering`) the bare JAX game refuses to be
made or traced: a jitted loop over ``jax.vmap(env.step)`` would run uncounted.  :class:`CountedGames` is the way
in.  It steps ``n`` games together, and each call of :meth:`CountedGames.step` charges the meter ``n`` steps, each
:meth:`CountedGames.rollout` of ``T`` steps ``n * T`` (before they run, from the host, by an ordered
``jax.experimental.io_callback``).  The charge is made when the compiled code runs, so a function traced before
the meter was installed still pays.  A :class:`CountedGames` cannot itself be ``vmap``-ed (JAX refuses to batch an
ordered callback): batch with ``n``.

Without a meter the charges cost one callback each and count nothing; the class is then simply an auto-resetting
vector of games, as PureJaxRL-style training wants::

    from env2048 import jax as g2048
    from env2048.jax.counted import CountedGames

    games = CountedGames(g2048.make(3, 3), 64)
    state = games.reset(jax.random.key(0))
    state, reward, done = games.step(state, actions, key)  # actions int32 (64,); ended games start afresh
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
from jax.experimental import io_callback

from .. import metering
from .env import Env, State
from .game import counted as _counted
from .game import not_counted as _not_counted


def _charge_in_order(games: int, steps_each: int, *inputs) -> None:
    """Charge the meter ``games * steps_each`` steps when the compiled code gets here, in program order.

    A slice of every array in ``inputs`` (the call's state, actions, key, carry) goes to the callback as a witness:
    under a ``vmap`` over any of them, JAX would have to batch the callback, and it refuses to batch an ordered
    one, so a batch of batches cannot pass for one batch."""

    def charge(_witness) -> None:
        metering.charge(games * steps_each, metering.ENV_STEP)

    witness = []
    for leaf in jax.tree.leaves(inputs):
        leaf = jnp.asarray(leaf) if not isinstance(leaf, jax.Array) else leaf
        if jax.dtypes.issubdtype(leaf.dtype, jax.dtypes.prng_key):
            leaf = jax.random.key_data(leaf)
        witness.append(jnp.ravel(leaf)[:1])
    io_callback(charge, None, witness, ordered=True)


def make_counted(rows: int, cols: int, n: int, target: int | None = None, pattern=None, p4: float = 0.1, start_p4=None):
    """:class:`CountedGames` of ``n`` games of :func:`env2048.jax.make`'s game, made also while a meter is
    installed (the suite's runs call this)."""
    with _counted():
        return CountedGames(Env(rows, cols, target, p4, pattern, start_p4), n)


class CountedGames:
    """``n`` games of ``env`` stepped together, every step charged to the installed step meter.

    States are :class:`env2048.jax.State` with a leading axis of ``n``.  A game that ends is replaced, in the same
    call, by a new one (its start drawn from the call's key); the step's reward and ``done`` are returned beside
    the new state."""

    def __init__(self, env: Env, n: int):
        if not isinstance(n, int) or n < 1:
            raise ValueError(f"a batch holds n >= 1 games (a Python int), got {n!r}")
        self.env, self.n = env, n

    @property
    def num_envs(self) -> int:
        return self.n

    def reset(self, key: jax.Array) -> State:
        """``n`` new games (not charged: a reset is no step)."""
        with _counted():
            return jax.vmap(self.env.init)(jax.random.split(key, self.n))

    def _step(self, state: State, actions: jax.Array, key: jax.Array) -> tuple[State, jax.Array, jax.Array]:
        """The uncharged step of every game, with the reset of those that ended."""
        step_keys, reset_keys = jnp.split(jax.random.split(key, 2 * self.n), 2)
        stepped = jax.vmap(self.env.step)(state, jnp.asarray(actions, jnp.int32), step_keys)
        fresh = jax.vmap(self.env.init)(reset_keys)
        done = stepped.terminated
        reward = stepped.rewards[:, 0]

        def pick(new, old):
            return jnp.where(done.reshape((-1,) + (1,) * (new.ndim - 1)), new, old)

        return jax.tree.map(pick, fresh, stepped), reward, done

    def step(self, state: State, actions: jax.Array, key: jax.Array) -> tuple[State, jax.Array, jax.Array]:
        """``(state, reward float32 (n,), done bool (n,))``: each game after its action (``int32 (n,)``), charged
        ``n`` steps; a game that ended starts afresh in the returned state."""
        with _counted():
            _charge_in_order(self.n, 1, state, actions, key)
            return self._step(state, actions, key)

    def rollout(
        self,
        state: State,
        key: jax.Array,
        act: Callable[[jax.Array, State, jax.Array], tuple[jax.Array, object]],
        carry,
        steps: int,
    ):
        """``steps`` steps of every game in one ``lax.scan``, charged ``n * steps`` once, before they run.

        ``act(carry, state, key) -> (actions int32 (n,), extra)`` chooses the moves (under a meter it may not
        step the bare game: a lookahead there would be uncounted simulation); ``extra`` (any pytree) is
        kept per step.  Returns ``(state, carry, (before, actions, extra, reward, done))``: the last state, the
        carry unchanged (``act`` sees it, e.g. a network's parameters), and per step (a leading axis of
        ``steps``) the state the moves were chosen on, the moves, ``extra``, the rewards and the ends."""
        with _counted():
            _charge_in_order(self.n, steps, state, key, carry)

            def one(state_key, _):
                state, key = state_key
                key, choose, move = jax.random.split(key, 3)
                with _not_counted():  # the trainer's choice of moves may not step the bare game uncounted
                    actions, extra = act(carry, state, choose)
                after, reward, done = self._step(state, actions, move)
                return (after, key), (state, actions, extra, reward, done)

            (state, _), trace = jax.lax.scan(one, (state, key), None, length=steps)
            return state, carry, trace
