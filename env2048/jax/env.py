"""The game as a pgx-style environment: ``env.init(key)`` and ``env.step(state, action, key)``, pure and jittable,
the state a pytree without a PRNG key (the caller passes one to each call).  Batch with ``jax.vmap``."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ..board import check_p4
from ..shape import check_shape, max_exponent
from .game import (
    FAILURE,
    ILLEGAL,
    MAX_EXPONENT,
    PLAY,
    SUCCESS,
    afterstate,
    allowed_mask,
    apply_chance,
    legal_action_mask,
    refuse_if_metered,
    rules_from_array,
    sample_chance,
    start_board,
)
from .game import (
    outcome as judge,
)

#: The JAX game's version: bumped on any change of what init and step do.
VERSION = 1


class State(NamedTuple):
    """One game.  ``board`` int32 (rows, cols) exponents; ``observation`` bool (rows, cols, rows*cols + 2)
    one-hot planes of the exponents, channels last; ``rewards`` float32 (1,) of the last step; ``terminated``,
    ``truncated`` bool (truncated is always False: the game has no time limit); ``legal_action_mask`` bool (4,);
    ``score`` int32, the merge score so far; ``step_count`` int32, the steps taken (an illegal one included)."""

    board: jax.Array
    observation: jax.Array
    rewards: jax.Array
    terminated: jax.Array
    truncated: jax.Array
    legal_action_mask: jax.Array
    score: jax.Array
    step_count: jax.Array


class Env:
    """2048 on a ``rows`` x ``cols`` board with suite v2's rules: the two-tile start, an illegal move ends the game
    with reward 0, and with a ``target`` tile (``2**k``, e.g. 512) the game ends when it is made, rewarded 1 then
    and 0 otherwise (the suite's goal tasks); without one each step's reward is the merge score it made.  ``p4``:
    the chance that a spawned tile is a 4; ``start_p4`` (default ``p4``) that a start tile is (0: two 2-tiles).
    With a ``pattern`` (a built-in endgame's name, with its ``target``) the
    endgame of :class:`env2048.endgame.Endgame2048Env`: its starts, its fixed tiles (a move that would shift one
    is not allowed: it ends the game), spawns on its free cells, reward 1 for a success, and a failure when a free
    cell passes its cap.  Make one with :func:`env2048.jax.make`."""

    num_actions = 4

    def __init__(self, rows: int, cols: int, target: int | None = None, p4: float = 0.1, pattern=None, start_p4=None):
        refuse_if_metered("env2048.jax.make")
        check_shape(rows, cols)
        self.pattern = None
        if pattern is not None:
            if start_p4 is not None:
                raise ValueError("an endgame draws its starts from its pattern: start_p4 is for the board games")
            self._init_pattern(rows, cols, target, pattern, p4)
            return
        if target is not None and (target < 4 or target & (target - 1) or target.bit_length() - 1 > MAX_EXPONENT):
            raise ValueError(
                f"target must be a tile 2**k with 2 <= k <= {MAX_EXPONENT} (4, 8, ..., 512, ...), got {target!r}"
            )
        self.rows, self.cols, self.target, self.p4 = int(rows), int(cols), target, check_p4(p4)
        self.start_p4 = self.p4 if start_p4 is None else check_p4(start_p4, "start_p4")
        self._goal = MAX_EXPONENT + 1 if target is None else target.bit_length() - 1
        self.channels = max_exponent(rows, cols) + 1

    def _init_pattern(self, rows: int, cols: int, target: int | None, pattern, p4: float) -> None:
        """An endgame: the pattern's fixed tiles, its start distribution, success and failure (its rules array
        decoded cell by cell), spawns on its free cells only."""
        from .. import board as B
        from ..pattern import load_pattern

        p = load_pattern(pattern, target)
        if (p.rows, p.cols) != (rows, cols):
            raise ValueError(f"pattern {p.describe()} is played on {p.rows}x{p.cols}, not {rows}x{cols}")
        self.pattern, self.rows, self.cols, self.target = p, rows, cols, p.target
        self.p4 = float(p.p4) if p.p4 is not None else float(p4)
        self.rules = rules_from_array(p.rules, rows * cols)
        starts, probs = B.start_states(rows, cols, self.p4, board=p.fixed_board)
        keep = probs > 0
        boards = B.unpack(starts[keep], rows, cols).reshape(-1, rows, cols)
        self._starts = jnp.asarray(boards, jnp.int32)
        self._start_probs = jnp.asarray(probs[keep] / probs[keep].sum(), jnp.float32)
        self._goal = MAX_EXPONENT + 1
        self.channels = max_exponent(rows, cols) + 1

    @property
    def version(self) -> int:
        """:data:`VERSION`: bumped whenever ``init`` or ``step`` changes behaviour."""
        return VERSION

    @property
    def observation_shape(self) -> tuple[int, int, int]:
        return self.rows, self.cols, self.channels

    def observe(self, board: jax.Array) -> jax.Array:
        """``bool (rows, cols, channels)``: the one-hot planes of ``board``."""
        return jax.nn.one_hot(board, self.channels, dtype=jnp.bool_)

    def _state(self, board, reward, terminated, score, steps, mask=None) -> State:
        return State(
            board=board,
            observation=self.observe(board),
            rewards=jnp.reshape(jnp.asarray(reward, jnp.float32), (1,)),
            terminated=jnp.asarray(terminated, jnp.bool_),
            truncated=jnp.asarray(False),
            legal_action_mask=self.legal_moves(board) if mask is None else mask,
            score=jnp.asarray(score, jnp.int32),
            step_count=jnp.asarray(steps, jnp.int32),
        )

    def legal_moves(self, board: jax.Array) -> jax.Array:
        """``bool[4]``: the moves allowed on ``board`` (for an endgame, those that keep its fixed tiles)."""
        return legal_action_mask(board) if self.pattern is None else allowed_mask(board, self.rules)

    def state_of(self, board: jax.Array) -> State:
        """The state of a game standing at ``board`` (int32 (rows, cols) exponents), no step taken yet: ended
        only if no move is allowed there (for replays and planners)."""
        board = jnp.asarray(board, jnp.int32)
        mask = self.legal_moves(board)
        return self._state(board, 0.0, ~mask.any(), 0, 0, mask)

    def init(self, key: jax.Array) -> State:
        """A new game from ``key``: two tiles spawned on the empty board (an endgame: a start drawn from its
        start distribution)."""
        if self.pattern is None:
            return self.state_of(start_board(key, self.rows, self.cols, self.start_p4))
        pick = jax.random.choice(key, self._start_probs.shape[0], p=self._start_probs)
        return self.state_of(self._starts[pick])

    def step(self, state: State, action, key: jax.Array) -> State:
        """The game after ``action`` (0..3) and, if the move was legal, a spawn drawn from ``key``.  A finished
        game stays as it is, with reward 0."""
        move = afterstate(state.board, action)
        free = None if self.pattern is None else self.rules.free
        return self._advance(state, move, sample_chance(key, move[0], self.p4, free))

    def step_chance(self, state: State, action, outcome) -> State:
        """:meth:`step` with the spawn given: chance outcome ``outcome`` (``2 * cell + k``, see
        :mod:`env2048.jax.game`; ignored after an illegal move), for replays and planners."""
        return self._advance(state, afterstate(state.board, action), outcome)

    def _advance(self, state: State, move, outcome) -> State:
        """The step of :meth:`step` and :meth:`step_chance`, from the move's ``(after, merged, moved)``."""
        after, merged, moved = move
        if self.pattern is None:
            full = jnp.all(after != 0)
            board = jnp.where(moved & ~full, apply_chance(after, outcome), after)
            made = board.max() >= self._goal
            ended = ~moved | made
            reward = made.astype(jnp.float32) if self.target is not None else merged.astype(jnp.float32)
        else:  # an endgame: its rules judge the move; a success or a failure ends the game without a spawn
            verdict = judge(state.board, after, self.rules)
            allowed = verdict != ILLEGAL
            spawned = apply_chance(after, outcome)
            board = jnp.where(verdict == PLAY, spawned, jnp.where(allowed, after, state.board))
            ended = ~allowed | (verdict == SUCCESS) | (verdict == FAILURE)
            reward = (verdict == SUCCESS).astype(jnp.float32)
        mask = self.legal_moves(board)
        new = self._state(board, reward, ended | ~mask.any(), state.score + merged, state.step_count + 1, mask)
        stay = state._replace(rewards=jnp.zeros_like(state.rewards))
        return jax.tree.map(lambda old, now: jnp.where(state.terminated, old, now), stay, new)
