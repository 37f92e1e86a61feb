"""2048 game core and Gymnasium environments for any r x c board.

Importing this package registers the environments::

    import gymnasium as gym
    import env2048  # noqa: F401

    env = gym.make("Solved2048-3x3")  # the latest version: Solved2048-3x3-v1
    envs = gym.make_vec("Game2048-v0", num_envs=64, rows=4, cols=4)
"""

from __future__ import annotations

# First: numba's cache locator for the project's kernels, before any of them is decorated.
from . import kernel_cache  # noqa: F401  # isort: skip

import warnings

from gymnasium.envs.registration import register, registry

from . import board
from .env import Game2048Env, IllegalActionError
from .pattern import Pattern, builtin_names, load_pattern
from .shape import ACTION_NAMES, DOWN, LEFT, RIGHT, UP, check_shape, longest_game, parse_board
from .tables import board_tables
from .vector import Game2048VectorEnv

__all__ = [
    "ACTION_NAMES",
    "DOWN",
    "ENDGAME_IDS",
    "Game2048Env",
    "Game2048VectorEnv",
    "IllegalActionError",
    "LEFT",
    "OPTIMAL_SCORE",
    "OPTIMAL_SCORE_4X3_TWO_TWOS",
    "Pattern",
    "RIGHT",
    "REGISTERED_IDS",
    "SUITE_IDS",
    "UP",
    "board",
    "board_tables",
    "builtin_names",
    "check_shape",
    "load_pattern",
    "parse_board",
]

_ENTRY = "env2048.env:Game2048Env"
_VECTOR_ENTRY = "env2048.vector:Game2048VectorEnv"

#: The boards this project solves exactly (4x3 = 4 rows x 3 columns, as in Kaneko & Yamashita's "Strongly Solving
#: 2048 4x3").
SOLVED_BOARDS = ((2, 2), (2, 3), (2, 4), (3, 3), (4, 3))

#: id -> default kwargs.  Gymnasium resolves an id without its version ("Solved2048-3x3") to the latest version;
#: the notice it gives for that is silenced for these ids below.
#:
#: * ``Solved2048-RxC-v2``: the plain game (the oracle's labels only with ``oracle=True``), and an illegal move ends
#:   it (``invalid_action="terminate"``): a learner's env holds no answer, and no episode runs for ever.
#: * ``Solved2048-RxC-v1`` (the oracle in ``info`` by default) and ``Game2048-v0``: an illegal move changes
#:   nothing; they truncate at ``max_episode_steps`` (:func:`env2048.shape.longest_game`).
REGISTERED_IDS = {
    "Game2048-v0": {},
    **{f"Solved2048-{r}x{c}-v1": {"rows": r, "cols": c} for r, c in SOLVED_BOARDS},
    **{f"Solved2048-{r}x{c}-v2": {"rows": r, "cols": c, "invalid_action": "terminate"} for r, c in SOLVED_BOARDS},
}

#: Optimal expected score from the standard random start (p4 = 0.1), as computed by ``python -m solver build``.
#: 4x3's is not known: its table has not been built here.
OPTIMAL_SCORE = {"Solved2048-2x2": 66.9641494571, "Solved2048-3x3": 5468.48679741}
#: Kaneko & Yamashita's published optimum of 4x3 ("about 50724.26"): the expected score from the start with two
#: 2-tiles, not from the standard random start.
OPTIMAL_SCORE_4X3_TWO_TWOS = 50724.26

# The Solved2048 ids are made by the oracle's factories (named by string: env2048 never imports the oracle): v1's
# wraps the env in OracleWrapper when the exact table exists or builds here (oracle=False for the bare env), v2's
# only when made with oracle=True.
_SOLVED_ENTRY = {"v1": "oracle.wrapper:make_solved_env", "v2": "oracle.wrapper:make_learner_env"}


def _time_limit(kwargs: dict) -> int | None:
    """``max_episode_steps`` of a board id: none where an illegal move ends the game, else the bound on a game's
    legal moves of its board (4x4 for ``Game2048-v0``)."""
    if kwargs.get("invalid_action") == "terminate":
        return None
    return longest_game(kwargs.get("rows", 4), kwargs.get("cols", 4))


for _id, _kwargs in REGISTERED_IDS.items():
    if _id not in registry:
        entry = _SOLVED_ENTRY[_id.rsplit("-", 1)[1]] if _id.startswith("Solved2048") else _ENTRY
        register(
            id=_id,
            entry_point=entry,
            vector_entry_point=_VECTOR_ENTRY,
            kwargs=dict(_kwargs),
            max_episode_steps=_time_limit(_kwargs),
        )

#: The tasks of the Solved2048 suite (experiments.suite, docs/suite.md) that no id above names: goal games and 4x4
#: endgames, each with its table built on first use, and the whole 4x3 game from two 2-tiles (no table: its optimum
#: is published).  id -> (the task's name, its suite version).  The v2 ids give
#: the plain game (the oracle's labels only with ``oracle=True``), and an illegal move ends it; v1's carry the
#: oracle by default and truncate at a time limit.
SUITE_IDS = {
    "Solved2048-3x3-512-v1": ("3x3-512", 1),
    "Solved2048-4x3-128-v1": ("4x3-128", 1),
    **{f"Endgame2048-{name}-256-v1": (f"{name}-256", 1) for name in ("L3", "442", "t")},
    "Solved2048-3x3-512-v2": ("3x3-512", 2),
    "Solved2048-4x3-256-v2": ("4x3-256", 2),
    **{f"Endgame2048-{task}-v2": (task, 2) for task in ("L3-256", "442-256", "t-512")},
    # suite v3's new games, under v2's rules; its other tasks are v2's games, with v2's ids
    "Solved2048-4x3-twos-v2": ("4x3", 3),
    **{f"Endgame2048-{task}-v2": (task, 3) for task in ("L3-128", "442-128", "t-128")},
}


def _endgame_time_limit(pattern: str, target: int) -> int:
    """Free cells x target: twice the most allowed moves an endgame can have (each spawns into a free cell, and
    no free tile outgrows the target)."""
    return len(load_pattern(pattern, target).free_cells) * target


#: The v1 ids' time limits: the bound on a game's legal moves (board tasks), or the endgame's.  The v2 ids need
#: none: an illegal move ends the game, and legal moves are finitely many (each adds a tile to a bounded sum).
SUITE_TIME_LIMITS = {
    "3x3-512": longest_game(3, 3),
    "4x3-128": longest_game(4, 3, largest_tile_exponent=7),
    **{f"{name}-256": _endgame_time_limit(name, 256) for name in ("L3", "442", "t")},
}
for _id, (_task, _version) in SUITE_IDS.items():
    if _id not in registry:
        register(
            id=_id,
            entry_point="experiments.suite.envs:make_task_env",
            kwargs={"task": _task, "version": _version},
            max_episode_steps=SUITE_TIME_LIMITS[_task] if _version == 1 else None,
        )

warnings.filterwarnings("ignore", message=r".*Using the latest versioned environment `(Solved|Endgame)2048-")

#: Endgame patterns (docs/endgame.md): "Endgame2048-v0" takes ``pattern`` (a built-in name, a JSON file or a
#: Pattern), ``target`` and optionally ``oracle_table``; the named ids fix a built-in pattern and default to T = 512.
ENDGAME_IDS = {
    "Endgame2048-v0": {},
    **{f"Endgame2048-{name}-v0": {"pattern": name, "target": 512} for name in builtin_names()},
}
for _id, _kwargs in ENDGAME_IDS.items():
    if _id not in registry:
        # Endgame2048-v0's limit is its default game's, L3 at 512: give max_episode_steps to gym.make with a
        # larger target
        _limit = _endgame_time_limit(_kwargs.get("pattern", "L3"), _kwargs.get("target", 512))
        register(id=_id, entry_point="oracle.wrapper:make_endgame_env", kwargs=dict(_kwargs), max_episode_steps=_limit)
