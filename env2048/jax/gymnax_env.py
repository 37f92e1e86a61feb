"""The game as a gymnax environment (``gymnax.environments.environment.Environment``, gymnax 1.x), so that
gymnax's wrappers and PureJaxRL-style training code run on it unchanged::

    from env2048.jax.gymnax_env import Game2048Gymnax

    env = Game2048Gymnax(3, 3)
    params = env.default_params
    obs, state = env.reset(key, params)
    obs, state, reward, terminated, truncated, info = env.step(key, state, action, params)

The game and its rewards are :class:`env2048.jax.Env`'s (suite v2's rules); ``info["legal_action_mask"]`` gives
the legal moves.  The observation is the one-hot planes ``float32 (rows, cols, rows*cols + 2)``.  An episode is
truncated after ``params.max_steps_in_episode`` steps (by default :func:`env2048.shape.longest_game`, which no
game reaches).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct
from gymnax.environments import environment, spaces

from ..shape import longest_game
from .env import Env
from .game import legal_action_mask


@struct.dataclass
class Game2048State(environment.EnvState):
    """``board`` int32 (rows, cols) exponents, ``score`` int32, ``terminated`` bool, and gymnax's ``time``."""

    board: jax.Array
    score: jax.Array
    terminated: jax.Array


@struct.dataclass
class Game2048Params(environment.EnvParams):
    max_steps_in_episode: int = 1 << 30


class Game2048Gymnax(environment.Environment):
    """2048 on a ``rows`` x ``cols`` board (``target``, ``p4``, ``start_p4``: as :func:`env2048.jax.make`)."""

    def __init__(self, rows: int, cols: int, target: int | None = None, p4: float = 0.1, start_p4=None):
        super().__init__()
        self.game = Env(rows, cols, target, p4, start_p4=start_p4)

    @property
    def default_params(self) -> Game2048Params:
        return Game2048Params(max_steps_in_episode=longest_game(self.game.rows, self.game.cols))

    @property
    def version(self) -> int:
        """The JAX game's version (:data:`env2048.jax.VERSION`)."""
        return self.game.version

    def step_env(self, key, state: Game2048State, action, params: Game2048Params):
        game = self.game
        stepped = game.step(game._state(state.board, 0.0, state.terminated, state.score, state.time), action, key)
        new = Game2048State(
            time=state.time + 1, board=stepped.board, score=stepped.score, terminated=stepped.terminated
        )
        info = {"legal_action_mask": stepped.legal_action_mask, "score": stepped.score}
        return self.get_obs(new), new, stepped.rewards[0], stepped.terminated, info

    def reset_env(self, key, params: Game2048Params):
        start = self.game.init(key)
        state = Game2048State(time=0, board=start.board, score=start.score, terminated=start.terminated)
        return self.get_obs(state), state

    def get_obs(self, state: Game2048State, params=None, key=None) -> jax.Array:
        return self.game.observe(state.board).astype(jnp.float32)

    def is_terminated(self, state: Game2048State, params: Game2048Params) -> jax.Array:
        return state.terminated | ~legal_action_mask(state.board).any()

    @property
    def name(self) -> str:
        target = "" if self.game.target is None else f"-{self.game.target}"
        return f"Solved2048-{self.game.rows}x{self.game.cols}{target}"

    @property
    def num_actions(self) -> int:
        return 4

    def action_space(self, params=None) -> spaces.Discrete:
        return spaces.Discrete(4)

    def observation_space(self, params=None) -> spaces.Box:
        return spaces.Box(0.0, 1.0, self.game.observation_shape, jnp.float32)

    def state_space(self, params=None) -> spaces.Dict:
        rows, cols = self.game.rows, self.game.cols
        return spaces.Dict(
            {
                "board": spaces.Box(0, self.game.channels - 1, (rows, cols), jnp.int32),
                "score": spaces.Discrete(jnp.iinfo(jnp.int32).max),
                "terminated": spaces.Discrete(2),
                "time": spaces.Discrete(longest_game(rows, cols)),
            }
        )
