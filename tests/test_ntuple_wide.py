"""n-tuple TD beyond 16 cells (agents.ntuple_wide): the same games and weights as the packed kernels where both
play, and on 5x5 / 6x6 boards with tiles beyond 2**15 the values, moves and TD steps of a slow reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from test_ntuple import reference_slots, reference_value

from agents import ntuple_wide as W
from agents.ntuple import NTupleAgent, wall_tuples
from env2048 import Game2048Env
from env2048.tables import line_tables_for

import naive
from conftest import boards

#: Small weight tables (base 8: exponents 8 and above clipped to 7) keep the 5x5 and 6x6 networks at a few MB.
SMALL_BASE = 8


def wide_round(agent: NTupleAgent, episodes: int, learn: bool = True):
    """One single-thread round of the exponent-array kernels on ``agent``'s weights (any board, packed or not),
    as ``agent.train`` runs the packed ones: ``(scores, moves, max_exponent)``."""
    scores, moves, top, key = W.train_episodes_wide(
        episodes, agent.rows, agent.cols, line_tables_for(agent.rows, agent.cols), agent.p4,
        agent.alpha / agent.rows_cells.shape[0], agent.key, *agent._args(), learn, agent.coherence_e,
        agent.coherence_a, np.iinfo(np.int64).max,
    )  # fmt: skip
    agent.key = np.uint64(key)
    return scores, moves, top


@pytest.mark.parametrize(
    ("rows", "cols", "options"),
    [(3, 3, {}), (2, 4, {"tc": True}), (4, 3, {"tuples": [[0, 1, 2], [1, 4, 5, 8]], "stages": 3, "stage_shift": 6})],
)
def test_the_wide_kernels_play_and_learn_as_the_packed_ones_to_the_last_bit(rows, cols, options):
    """Same seed, same weights: the same games (scores, lengths, largest tiles) and the same learned weights."""
    packed = NTupleAgent(rows, cols, seed=11, alpha=0.3, **options)
    wide = NTupleAgent(rows, cols, seed=11, alpha=0.3, **options)
    stats = packed.train(60)
    scores, moves, top = wide_round(wide, 60)
    assert stats.mean_score == scores.mean() and stats.moves == moves.sum()
    assert stats.max_exponent_counts == {int(1 << k): int((top >= k).sum()) for k in np.unique(top)}
    np.testing.assert_array_equal(packed.weights, wide.weights)
    np.testing.assert_array_equal(packed.coherence_a, wide.coherence_a)
    assert packed.key == wide.key and np.abs(packed.weights).sum() > 0


_WIDE: dict = {}


def random_wide_agent(rows: int, cols: int) -> NTupleAgent:
    """A 5x5 or 6x6 network with random weights and two stages (one per shape, built once)."""
    if (rows, cols) not in _WIDE:
        agent = NTupleAgent(rows, cols, base=SMALL_BASE, stages=2, stage_shift=14)
        agent.weights[:] = np.random.default_rng(rows).standard_normal(agent.weights.size)
        _WIDE[rows, cols] = agent
    return _WIDE[rows, cols]


@settings(max_examples=60)
@given(boards([(5, 5), (6, 6)], max_exp=20))
def test_values_and_greedy_moves_match_the_reference_on_5x5_and_6x6(case):
    """V of a board and the move maximising reward + V(afterstate) (slow reference: tests/naive.py's moves and
    the weights read image by image), on boards with tiles to 2**20."""
    rows, cols, grid = case
    agent = random_wide_agent(rows, cols)
    board = np.array(grid)
    assert agent.value(board) == pytest.approx(reference_value(agent, grid), rel=1e-6, abs=1e-6)
    worth = {}
    for a, ok in enumerate(naive.legal(grid)):
        if ok:
            after, reward = naive.move(grid, a)
            worth[a] = reward + reference_value(agent, after)
    action = int(agent.act_batch(board[None], np.ones((1, 4), bool))[0])
    assert action == (max(worth, key=worth.get) if worth else 0)


def test_a_td_step_on_a_6x6_board_moves_the_weights_the_reference_reads():
    agent = random_wide_agent(6, 6)
    grid = [[0, 17, 3, 3, 1, 0], [16, 2, 0, 5, 9, 12], [0] * 6, [1, 1, 1, 2, 0, 0], [0] * 6, [20, 0, 0, 0, 0, 4]]
    row = np.array(grid, np.uint8).reshape(1, -1)
    expected = agent.weights.copy()
    delta = 0.1 * (3.25 - reference_value(agent, grid))
    for j in reference_slots(agent, grid):
        expected[j] = np.float32(np.float64(expected[j]) + delta)
    W.td_update_row(row, 0, 3.25, 0.1, *agent._args(), np.empty(agent.rows_cells.shape[0], np.int64))
    np.testing.assert_array_equal(agent.weights, expected)


def test_a_5x5_network_trains_saves_and_plays_through_the_agent_spec(tmp_path):
    """Training on a 5x5 board learns (a greedy player's score rises), on two threads too; the saved network
    plays as ``td:PATH`` in the env, legal moves only, and loads with its base."""
    from agents.registry import make_agent

    agent = NTupleAgent(5, 5, base=SMALL_BASE, alpha=0.5, seed=2)
    assert agent.tuples == wall_tuples(5, 5) and agent.layout[0] == SMALL_BASE
    before = agent.train(20, learn=False).mean_score
    agent.train(200)
    stats = agent.train(100, threads=2)
    assert stats.episodes == 100 and agent.train(20, learn=False).mean_score > before
    limited = agent.train(50, max_moves=500)
    assert limited.moves == 500
    path = tmp_path / "td5.npz"
    agent.save(path)
    player = make_agent(f"td:{path}", 5, 5)
    assert player.base == SMALL_BASE and not player.packed
    np.testing.assert_array_equal(player.weights, agent.weights)
    env = Game2048Env(5, 5)
    obs, info = env.reset(seed=1)
    for _ in range(200):
        action = int(player.act_batch(obs[None], info["action_mask"][None])[0])
        assert info["action_mask"][action]
        obs, _, terminated, _, info = env.step(action)
        if terminated:
            break
    with pytest.raises(ValueError, match="6x6"):
        make_agent(f"td:{path}", 6, 6)


def test_bad_settings_get_clear_errors():
    with pytest.raises(ValueError, match=r"base must be an int in \[2, 16\]"):
        NTupleAgent(4, 4, base=18)
    with pytest.raises(ValueError, match=r"base must be an int in \[2, 63\]"):
        NTupleAgent(6, 6, tuples=[[0, 1]], base=64)
    agent = NTupleAgent(5, 5, tuples=[[0, 1, 2]], base=4)
    with pytest.raises(ValueError, match="no packed id"):
        agent.value(12345)
    with pytest.raises(ValueError, match=r"shape \(n, 5, 5\)"):
        agent.act_batch(np.zeros((1, 4, 4)), np.ones((1, 4), bool))
    with pytest.raises(ValueError, match="trace"):
        agent.train(1, trace=True)
    with pytest.raises(ValueError, match="3x4 or 4x3"):
        wall_tuples(2, 2)
