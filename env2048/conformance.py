"""What any implementation of the game must reproduce, computed by the project's numba kernels: random
(board, action) pairs with their afterstates, rewards and legality, and whole games played move for move and
spawn for spawn.  Another implementation (the JAX game, :mod:`env2048.jax`, or one in another language) replays
them and must agree bit for bit.

    python -m env2048.conformance --out tests/fixtures/game-conformance.npz   # the file the tests keep

The file is a NumPy ``.npz`` archive (readable without this project), keys per board shape ``RxC``:

=============================  ===================================================================================
``pairs/RxC/boards``           ``uint8 (n, R, C)``: exponents (0 empty, k the tile 2**k)
``pairs/RxC/actions``          ``uint8 (n,)``: UP=0, RIGHT=1, DOWN=2, LEFT=3
``pairs/RxC/after``            ``uint8 (n, R, C)``: the board moved, before any spawn (the board itself if illegal)
``pairs/RxC/reward``           ``int64 (n,)``: the merged tiles' values (0 if illegal)
``pairs/RxC/legal``            ``bool (n,)``: whether the move changed the board
``games/RxC/start``            ``uint8 (g, R, C)``: each game's start (two tiles)
``games/RxC/actions``          ``int8 (g, T)``: the moves, -1 after the game's end
``games/RxC/outcomes``         ``int32 (g, T)``: the spawn after each move, ``2 * cell + k`` (a 2 for k = 0, a 4 for
                               k = 1, cell row-major), -1 where none (an illegal move, or after the end)
``games/RxC/boards``           ``uint8 (g, T, R, C)``: the board after each step
``games/RxC/rewards``          ``int64 (g, T)``: each step's merge reward
``games/RxC/terminated``       ``bool (g, T)``: whether the game had ended after each step
``endgames/NAME-T/...``        the same keys as ``games``, for the endgame ``NAME`` to the tile ``T`` (suite v2's
                               three): its rewards are 1 for a success, 0 otherwise
=============================  ===================================================================================

Games follow suite v2's rules: p4 = 0.1, an illegal move ends the game (2% of the moves are drawn from all four,
so some games end that way), and no goal.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from .grid import legal_bits, move_many
from .shape import check_shape
from .tables import line_tables_for

#: The shapes of the kept fixture: the solved boards, the 4x4 game and a long one.
SHAPES = ((2, 2), (2, 3), (3, 3), (4, 3), (4, 4), (3, 5), (5, 5))
#: The endgames of the kept fixture: suite v2's.
ENDGAMES = (("L3", 256), ("442", 256), ("t", 512))


def random_boards(rng: np.random.Generator, rows: int, cols: int, n: int, top: int = 15) -> np.ndarray:
    """``uint8 (n, rows, cols)`` boards that exercise every rule: about a third of the cells empty, the others
    mostly small exponents (merges are likely) and some up to ``top``."""
    small = rng.integers(1, 4, size=(n, rows, cols))
    large = rng.integers(1, top + 1, size=(n, rows, cols))
    tiles = np.where(rng.random((n, rows, cols)) < 0.7, small, large)
    empty = rng.random((n, 1, 1)) * 0.7 > rng.random((n, rows, cols))  # each board its own share of empty cells
    return np.where(empty, 0, tiles).astype(np.uint8)


def move_cases(rng: np.random.Generator, rows: int, cols: int, n: int, top: int = 15) -> dict[str, np.ndarray]:
    """``n`` random (board, action) pairs and what the numba kernels make of them (keys as in the file)."""
    check_shape(rows, cols)
    boards = random_boards(rng, rows, cols, n, top)
    actions = rng.integers(0, 4, size=n).astype(np.uint8)
    flat = boards.reshape(n, -1)
    after, reward, legal = move_many(flat, actions.astype(np.int64), rows, cols, line_tables_for(rows, cols))
    return {
        "boards": boards,
        "actions": actions,
        "after": after.reshape(boards.shape),
        "reward": reward,
        "legal": legal,
    }


def played_boards(rows: int, cols: int, n: int, games: int = 500, seed: int = 0) -> np.ndarray:
    """``uint8 (n, rows, cols)``: the boards of uniformly random legal play in ``games`` games at once (the native
    vector env from ``seed``, each game restarted when over): reachable boards, repeats included."""
    from .vector import Game2048VectorEnv

    env = Game2048VectorEnv(games, rows, cols)
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    boards = []
    for _ in range(-(-n // games)):
        boards.append(np.asarray(obs, np.uint8).reshape(games, rows, cols).copy())
        obs, *_ = env.step(np.argmax(np.where(env.action_masks(), rng.random((games, 4)), -1.0), axis=1))
    return np.concatenate(boards)[:n]


def played_endgame_boards(pattern, n: int, target: int | None = None, seed: int = 0) -> np.ndarray:
    """``uint8 (n, rows, cols)``: the boards of uniformly random allowed play in an endgame
    (:class:`env2048.endgame.Endgame2048Env` of ``pattern``, anything :func:`env2048.pattern.load_pattern` takes,
    and ``target``), game after game from ``seed``, each board before its move: reachable boards, repeats
    included."""
    from .endgame import Endgame2048Env

    env = Endgame2048Env(pattern, target, invalid_action="terminate")
    rng = np.random.default_rng(seed)
    boards, game = [], 0
    while len(boards) < n:
        obs, info = env.reset(seed=seed + game)
        game, done = game + 1, False
        while not done and len(boards) < n:
            boards.append(np.asarray(obs, np.uint8).copy())
            allowed = np.flatnonzero(info["action_mask"])
            if allowed.size == 0:
                break
            obs, _, terminated, truncated, info = env.step(int(rng.choice(allowed)))
            done = terminated or truncated
    return np.stack(boards).reshape(n, env.rows, env.cols)


def legal_masks(boards: np.ndarray) -> np.ndarray:
    """``bool (n, 4)``: the legal moves of ``uint8 (n, rows, cols)`` boards, by the numba kernel."""
    n, rows, cols = boards.shape
    flat = boards.reshape(n, -1)
    bits = np.array([legal_bits(flat, i, rows, cols) for i in range(n)], np.int64)
    return (bits[:, None] >> np.arange(4)) & 1 == 1


#: The share of moves drawn from all four (possibly illegal, which ends a game) rather than from the legal ones.
ILLEGAL_TRIES = 0.02


def play_games(seed: int, rows: int, cols: int, games: int) -> dict[str, np.ndarray]:
    """``games`` games of :class:`env2048.env.Game2048Env` (suite v2's rules) with random moves (uniform over the
    legal ones, over all four with probability :data:`ILLEGAL_TRIES`), from seeds ``seed`` .. ``seed + games -
    1``, each recorded move for move and spawn for spawn (keys as in the file)."""
    from .env import Game2048Env

    return record_games(Game2048Env(rows, cols, invalid_action="terminate"), seed, games)


def play_endgames(seed: int, pattern: str, target: int, games: int) -> dict[str, np.ndarray]:
    """:func:`play_games` on an endgame, :class:`env2048.endgame.Endgame2048Env` of ``pattern`` and ``target``
    (an illegal move, or one that would shift a fixed tile, ends the game; the reward is 1 for a success)."""
    from .endgame import Endgame2048Env

    return record_games(Endgame2048Env(pattern, target, invalid_action="terminate"), seed, games)


def record_games(env, seed: int, games: int) -> dict[str, np.ndarray]:
    """``games`` games of ``env`` (an env of exponent boards whose ``info`` has ``action_mask`` and, after a
    step, ``afterstate``), played and recorded as :func:`play_games` says."""
    rows, cols = env.rows, env.cols
    rng = np.random.default_rng(seed)
    played = []
    for g in range(games):
        obs, info = env.reset(seed=seed + g)
        start, steps = np.asarray(obs, np.uint8).copy(), []
        done = False
        while not done:
            legal = np.flatnonzero(info["action_mask"])
            action = int(rng.integers(4) if rng.random() < ILLEGAL_TRIES or legal.size == 0 else rng.choice(legal))
            obs, reward, done, _, info = env.step(action)
            board = np.asarray(obs, np.uint8).copy()
            after = np.asarray(info["afterstate"], np.uint8).reshape(rows, cols)
            spawned = np.flatnonzero((board != after).reshape(-1))
            outcome = -1 if spawned.size == 0 else 2 * int(spawned[0]) + int(board.reshape(-1)[spawned[0]]) - 1
            steps.append((action, outcome, board, reward, done))
        played.append((start, steps))
    length = max(len(steps) for _, steps in played)
    out = {
        "start": np.stack([start for start, _ in played]),
        "actions": np.full((games, length), -1, np.int8),
        "outcomes": np.full((games, length), -1, np.int32),
        "boards": np.zeros((games, length, rows, cols), np.uint8),
        "rewards": np.zeros((games, length), np.int64),
        "terminated": np.ones((games, length), bool),
    }
    for g, (_, steps) in enumerate(played):
        out["boards"][g] = steps[-1][2]  # after the end the board stays as it is
        for t, (action, outcome, board, reward, done) in enumerate(steps):
            out["actions"][g, t], out["outcomes"][g, t], out["boards"][g, t] = action, outcome, board
            out["rewards"][g, t], out["terminated"][g, t] = reward, done
    return out


def write_fixture(path, pairs: int = 2000, games: int = 150, seed: int = 0) -> Path:
    """The conformance file: ``pairs`` pairs and ``games`` games per shape of :data:`SHAPES` (see the module
    docstring), from ``seed``."""
    rng = np.random.default_rng(seed)
    arrays = {}
    for rows, cols in SHAPES:
        for key, value in move_cases(rng, rows, cols, pairs).items():
            arrays[f"pairs/{rows}x{cols}/{key}"] = value
        for key, value in play_games(seed, rows, cols, games).items():
            arrays[f"games/{rows}x{cols}/{key}"] = value
    for pattern, target in ENDGAMES:
        for key, value in play_endgames(seed, pattern, target, games).items():
            arrays[f"endgames/{pattern}-{target}/{key}"] = value
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, **arrays)
    return path


def load_fixture(path) -> dict[str, dict[str, dict[str, np.ndarray]]]:
    """``{"pairs": {"RxC": {key: array}}, "games": {...}, "endgames": {"NAME-T": ...}}`` of a conformance file."""
    out: dict[str, dict[str, dict[str, np.ndarray]]] = {"pairs": {}, "games": {}, "endgames": {}}
    with np.load(path) as data:
        for name in data.files:
            kind, shape, key = name.split("/")
            out[kind].setdefault(shape, {})[key] = data[name]
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="the .npz file to write")
    p.add_argument("--pairs", type=int, default=2000, help="(board, action) pairs per shape (default 2000)")
    p.add_argument("--games", type=int, default=150, help="games per shape (default 150)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    path = write_fixture(args.out, args.pairs, args.games, args.seed)
    print(f"wrote {path} ({path.stat().st_size:,} bytes): {len(SHAPES)} shapes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
