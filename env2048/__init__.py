"""2048 game core and Gymnasium environments for any r x c board.

Importing this package registers the environments::

    import gymnasium as gym
    import env2048  # noqa: F401

    env = gym.make("Solved2048-3x3")
    envs = gym.make_vec("Game2048-v0", num_envs=64, rows=4, cols=4)
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from . import board
from .env import Game2048Env, IllegalActionError
from .shape import ACTION_NAMES, DOWN, LEFT, RIGHT, UP, check_shape, parse_board
from .tables import board_tables
from .vector import Game2048VectorEnv

__all__ = [
    "ACTION_NAMES",
    "DOWN",
    "Game2048Env",
    "Game2048VectorEnv",
    "IllegalActionError",
    "LEFT",
    "RIGHT",
    "REGISTERED_IDS",
    "UP",
    "board",
    "board_tables",
    "check_shape",
    "parse_board",
]

_ENTRY = "env2048.env:Game2048Env"
_VECTOR_ENTRY = "env2048.vector:Game2048VectorEnv"

#: id -> default kwargs.  "Solved2048-RxC" boards are the ones this project solves exactly (4x3 = 4 rows x 3
#: columns, as in Kaneko & Yamashita's "Strongly Solving 2048 4x3").
REGISTERED_IDS = {
    "Game2048-v0": {},
    "Solved2048-2x2": {"rows": 2, "cols": 2},
    "Solved2048-3x3": {"rows": 3, "cols": 3},
    "Solved2048-4x3": {"rows": 4, "cols": 3},
}

for _id, _kwargs in REGISTERED_IDS.items():
    if _id not in registry:
        register(id=_id, entry_point=_ENTRY, vector_entry_point=_VECTOR_ENTRY, kwargs=dict(_kwargs))
