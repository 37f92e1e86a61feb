"""WideExpectimaxAgent (any board, exponent arrays) against the packed ExpectimaxAgent where both play, and against
a slow pure-Python expectimax on 5x5 boards with tiles beyond 2**15."""

from __future__ import annotations

import numpy as np
import pytest
from test_expectimax import reference_heuristic, reference_q

from agents.expectimax import DEFAULT_HEURISTIC, ExpectimaxAgent
from agents.wide_expectimax import WideExpectimaxAgent
from env2048 import Game2048Env
from env2048.conformance import played_boards

import naive


@pytest.mark.parametrize(("rows", "cols", "depth"), [(3, 3, 1), (3, 3, 3), (4, 4, 2), (2, 4, 2)])
def test_the_same_q_values_as_the_packed_search_to_the_last_bit(rows, cols, depth):
    wide, packed = WideExpectimaxAgent(rows, cols, depth), ExpectimaxAgent(rows, cols, depth)
    for board in played_boards(rows, cols, 60, games=1, seed=rows * cols + depth):
        assert wide.q_values(board).tolist() == packed.q_values(board).tolist()


def test_5x5_boards_with_large_tiles_match_the_slow_search():
    rng = np.random.default_rng(5)
    wide1, wide2 = WideExpectimaxAgent(5, 5, 1), WideExpectimaxAgent(5, 5, 2)
    boards = [b.reshape(5, 5) for b in played_boards(5, 5, 400, games=1, seed=3)[::100]]
    for _ in range(3):  # tiles a packed board cannot hold (exponents 16..20), and few empty cells
        board = rng.integers(1, 21, (5, 5))
        board[rng.random((5, 5)) < 0.2] = 0
        boards.append(board)
    for board in boards:
        grid = board.tolist()
        for agent in (wide1, wide2):
            want = reference_q(grid, agent.depth, lambda g: reference_heuristic(g, DEFAULT_HEURISTIC))
            assert agent.q_values(board) == pytest.approx(want, rel=1e-12)


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
    with pytest.raises(FileNotFoundError, match="no file"):
        make_agent("expectimax:1:weights.npz", 6, 6)
    with pytest.raises(ValueError, match="WideExpectimaxAgent plays any board"):
        ExpectimaxAgent(5, 5)


def test_n_tuple_leaves_give_the_packed_search_s_q_values_and_play_5x5_through_the_spec(tmp_path):
    """With an n-tuple network at the leaves: on 3x3 the packed search's Q-values to the last bit; on 5x5, depth 1
    is reward + V(afterstate) of the network, and ``expectimax:D:PATH`` plays it."""
    from agents.ntuple import NTupleAgent
    from agents.registry import make_agent

    net = NTupleAgent(3, 3, tuples=[[0, 1, 2], [1, 4, 5, 8]], stages=2, stage_shift=6)
    net.weights[:] = np.random.default_rng(4).standard_normal(net.weights.size)
    wide, packed = WideExpectimaxAgent(3, 3, 2, evaluator=net), ExpectimaxAgent(3, 3, 2, evaluator=net)
    assert not wide.uses_heuristic and wide.name == "expectimax:2:ntuple"
    for board in played_boards(3, 3, 40, games=1, seed=8):
        assert wide.q_values(board).tolist() == packed.q_values(board).tolist()
    net5 = NTupleAgent(5, 5, tuples=[[0, 1, 2, 3], [5, 6, 7, 8]], base=12, seed=1)
    net5.weights[:] = np.random.default_rng(5).standard_normal(net5.weights.size)
    board = np.random.default_rng(6).integers(0, 18, (5, 5))
    q = WideExpectimaxAgent(5, 5, 1, evaluator=net5).q_values(board)
    for a in range(4):
        after, reward = naive.move(board.tolist(), a)
        want = reward + net5.value(np.array(after)) if after != board.tolist() else -np.inf
        assert q[a] == pytest.approx(want, rel=1e-12)
    path = tmp_path / "net5.npz"
    net5.save(path)
    agent = make_agent(f"expectimax:1:{path}", 5, 5)
    assert isinstance(agent, WideExpectimaxAgent) and agent.name == "expectimax:1:td"
    assert agent.q_values(board).tolist() == q.tolist()
    with pytest.raises(ValueError, match="network is for 5x5"):
        WideExpectimaxAgent(6, 6, 1, evaluator=net5)


def test_bad_settings_and_boards_get_clear_errors():
    with pytest.raises(ValueError, match="depth must be an int"):
        WideExpectimaxAgent(5, 5, 0)
    with pytest.raises(ValueError, match="power of two"):
        WideExpectimaxAgent(5, 5, cache_size=100)
    with pytest.raises(ValueError, match="exponents must be in 0..62"):
        WideExpectimaxAgent(5, 5, 1).q_values(np.full((5, 5), 63))
    with pytest.raises(ValueError, match="evaluator must be 'heuristic' or an NTupleAgent"):
        WideExpectimaxAgent(5, 5, 1, evaluator="tuples")
