"""WideExpectimaxAgent (any board, exponent arrays) against the packed ExpectimaxAgent where both play, and against
a slow pure-Python expectimax on 5x5 boards with tiles beyond 2**15."""

from __future__ import annotations

import numpy as np
import pytest

from agents.expectimax import DEFAULT_HEURISTIC, ExpectimaxAgent
from agents.wide_expectimax import WideExpectimaxAgent
from env2048 import Game2048Env

import naive


def played_boards(rows: int, cols: int, n: int, seed: int) -> list[np.ndarray]:
    """Boards met in games of random legal moves."""
    env, rng, out = Game2048Env(rows, cols), np.random.default_rng(seed), []
    obs, info = env.reset(seed=seed)
    while len(out) < n:
        out.append(obs.copy())
        obs, _, terminated, _, info = env.step(int(rng.choice(np.flatnonzero(info["action_mask"]))))
        if terminated:
            obs, info = env.reset()
    return out


def slow_heuristic(grid, w) -> float:
    lines = [list(row) for row in grid] + [list(col) for col in zip(*grid, strict=True)]
    empty = sum(v == 0 for row in grid for v in row)
    merges = sum(1 for line in lines for x, y in zip(line, line[1:], strict=False) if x and x == y)
    mono = 0.0
    for line in lines:
        steps = [(2**y if y else 0) - (2**x if x else 0) for x, y in zip(line, line[1:], strict=False)]
        mono += min(sum(d for d in steps if d > 0), -sum(d for d in steps if d < 0))
    return w[0] * empty + w[1] * merges - w[2] * mono


def slow_q(grid, depth, p4=0.1, w=DEFAULT_HEURISTIC) -> list[float]:
    """Q_depth of the four moves (-inf where illegal), by the definition in agents.expectimax."""
    q = []
    for a in range(4):
        after, reward = naive.move(grid, a)
        if after == grid:
            q.append(-np.inf)
        elif depth == 1:
            q.append(reward + slow_heuristic(after, w))
        else:
            spawns = naive.spawn_outcomes(after, p4)
            values = [max([x for x in slow_q(g, depth - 1, p4, w) if x > -np.inf], default=0.0) for g, _ in spawns]
            q.append(reward + sum(p * v for (_, p), v in zip(spawns, values, strict=True)))
    return q


@pytest.mark.parametrize(("rows", "cols", "depth"), [(3, 3, 1), (3, 3, 3), (4, 4, 2), (2, 4, 2)])
def test_the_same_q_values_as_the_packed_search_to_the_last_bit(rows, cols, depth):
    wide, packed = WideExpectimaxAgent(rows, cols, depth), ExpectimaxAgent(rows, cols, depth)
    for board in played_boards(rows, cols, 60, seed=rows * cols + depth):
        assert wide.q_values(board).tolist() == packed.q_values(board).tolist()


def test_5x5_boards_with_large_tiles_match_the_slow_search():
    rng = np.random.default_rng(5)
    wide1, wide2 = WideExpectimaxAgent(5, 5, 1), WideExpectimaxAgent(5, 5, 2)
    boards = [b.reshape(5, 5) for b in played_boards(5, 5, 400, seed=3)[::100]]
    for _ in range(3):  # tiles a packed board cannot hold (exponents 16..20), and few empty cells
        board = rng.integers(1, 21, (5, 5))
        board[rng.random((5, 5)) < 0.2] = 0
        boards.append(board)
    for board in boards:
        grid = board.tolist()
        assert wide1.q_values(board) == pytest.approx(slow_q(grid, 1), rel=1e-12)
        assert wide2.q_values(board) == pytest.approx(slow_q(grid, 2), rel=1e-12)


def test_make_agent_plays_a_5x5_game_to_the_end_with_the_first_best_moves():
    from agents.registry import make_agent

    env, agent = Game2048Env(5, 5), make_agent("expectimax:1", 5, 5)
    assert isinstance(agent, WideExpectimaxAgent) and agent.name == "expectimax:1"
    obs, info = env.reset(seed=0)
    terminated, step = False, 0
    while not terminated:
        action = int(agent.act_batch(obs[None], info["action_mask"][None])[0])
        if step % 50 == 0:
            assert action == int(np.argmax(agent.q_values(obs)))
        assert info["action_mask"][action]
        obs, _, terminated, _, info = env.step(action)
        step += 1
    assert info["max_tile"] >= 512 and info["moves"] > 300
    with pytest.raises(ValueError, match="heuristic only"):
        make_agent("expectimax:1:weights.npz", 6, 6)
    with pytest.raises(ValueError, match="WideExpectimaxAgent plays any board"):
        ExpectimaxAgent(5, 5)


def test_bad_settings_and_boards_get_clear_errors():
    with pytest.raises(ValueError, match="depth must be an int"):
        WideExpectimaxAgent(5, 5, 0)
    with pytest.raises(ValueError, match="power of two"):
        WideExpectimaxAgent(5, 5, cache_size=100)
    with pytest.raises(ValueError, match="exponents must be in 0..62"):
        WideExpectimaxAgent(5, 5, 1).q_values(np.full((5, 5), 63))
