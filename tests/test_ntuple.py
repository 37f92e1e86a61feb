"""n-tuple TD agent: features and values against a slow reference, the TD update, seeding, save/load, learning."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from agents.ntuple import NTupleAgent, _td_update
from env2048 import board as B

import naive
from conftest import boards


def reference_slots(agent: NTupleAgent, grid) -> list[int]:
    """Weight positions read for ``grid`` (in the stage of its age), image by image (symmetric images in naive
    order), tuple by tuple."""
    age = sum(2**v for row in grid for v in row if v)
    stage_size = sum(agent.base ** len(t) for t in agent.tuples)
    stage_start = min(age // 2**agent.stage_shift, agent.stages - 1) * stage_size
    slots = []
    for image in naive.symmetries(grid):
        flat = [min(v, agent.base - 1) for row in image for v in row]
        for t, cells in enumerate(agent.tuples):
            index = 0
            for c in cells:
                index = index * agent.base + flat[c]
            slots.append(stage_start + int(agent.offsets[t] + index))
    return slots


def reference_value(agent: NTupleAgent, grid) -> float:
    """Σ over the board's symmetric images and the tuples of the weight at the tuple's exponent pattern."""
    return sum(float(agent.weights[j]) for j in reference_slots(agent, grid))


_AGENTS: dict = {}


def random_agent(rows: int, cols: int) -> NTupleAgent:
    """One agent per shape with random weights (4x4's four 6-tuples hold 67 M weights: build them once)."""
    if (rows, cols) not in _AGENTS:
        agent = NTupleAgent(rows, cols, seed=0)
        agent.weights[:] = np.random.default_rng(rows * 10 + cols).standard_normal(agent.weights.size)
        _AGENTS[rows, cols] = agent
    return _AGENTS[rows, cols]


@pytest.mark.slow
@given(boards([(3, 3), (4, 4), (4, 3)], max_exp=12))
def test_value_matches_reference(case):
    rows, cols, grid = case
    agent = random_agent(rows, cols)
    assert agent.value(B.pack(np.array(grid))) == pytest.approx(reference_value(agent, grid), rel=1e-5, abs=1e-4)


@given(boards([(3, 3), (4, 3)], max_exp=10))
def test_staged_value_matches_reference(case):
    rows, cols, grid = case
    if (rows, cols) not in _STAGED:
        _STAGED[rows, cols] = agent = NTupleAgent(rows, cols, tuples=[[0, 1, 2], [1, 4, 5, 8]], stages=5, stage_shift=5)
        agent.weights[:] = np.random.default_rng(3).standard_normal(agent.weights.size)
    agent = _STAGED[rows, cols]
    assert agent.value(B.pack(np.array(grid))) == pytest.approx(reference_value(agent, grid), rel=1e-5, abs=1e-4)


_STAGED: dict = {}


def test_td_update_on_a_hand_made_case():
    agent = NTupleAgent(3, 3, tuples=[[0, 1]], alpha=1.0)
    grid = [[1, 2, 0], [0, 0, 0], [0, 0, 0]]
    b = B.pack(np.array(grid))
    assert agent.value(b) == 0
    _td_update(b, 0.5, 1.0, *agent._args())  # every weight read moves by 1.0 * (0.5 - 0)
    # Four symmetric images touch the weights of patterns (1,2), (2,1) and the pairs through the other corners;
    # each image adds 0.5 to the weight it reads, so the value rises by 0.5 per image that reads a distinct
    # weight and 1.0 where two images share one.
    assert agent.value(b) == pytest.approx(reference_value(agent, grid))
    assert agent.value(b) >= 0.5 * len(naive.symmetries(grid))


@pytest.mark.slow
def test_seeded_training_is_reproducible_and_learning_helps(tmp_path):
    a, b = NTupleAgent(3, 3, seed=7), NTupleAgent(3, 3, seed=7)
    sa, sb = a.train(300), b.train(300)
    assert sa.mean_score == sb.mean_score and np.array_equal(a.weights, b.weights)
    untrained = NTupleAgent(3, 3, seed=1).train(500, learn=False).mean_score
    agent = NTupleAgent(3, 3, seed=1)
    agent.train(3000)
    assert agent.train(500, learn=False).mean_score > untrained * 1.5
    agent.save(tmp_path / "w.npz")
    back = NTupleAgent.load(tmp_path / "w.npz")
    assert np.array_equal(back.weights, agent.weights) and back.tuples == agent.tuples
    boards_ = np.random.default_rng(0).integers(0, 5, (50, 3, 3))
    masks = np.ones((50, 4), bool)
    assert np.array_equal(back.act_batch(boards_, masks), agent.act_batch(boards_, masks))


def test_play_keeps_to_the_allowed_moves():
    """With some legal moves masked out (an endgame pattern forbids them), the agent plays the best allowed one by
    reward + V(afterstate), computed here with the slow reference; all moves allowed, the best legal one."""
    agent = NTupleAgent(3, 3, seed=3)
    agent.train(300)
    rng = np.random.default_rng(4)
    grids = rng.integers(0, 5, (60, 3, 3))
    masks = rng.random((60, 4)) < 0.6
    for allowed in (masks, np.ones((60, 4), bool)):
        chosen = agent.act_batch(grids, allowed)
        for grid, ok, action in zip(grids.tolist(), allowed, chosen, strict=True):
            values = {}
            for a in range(4):
                after, reward = naive.move(grid, a)
                if ok[a] and after != grid:
                    values[a] = reward + reference_value(agent, after)
            if values:
                assert values[action] == pytest.approx(max(values.values()), rel=1e-5)
            else:
                assert action == 0  # nothing to play: the env ends the game before asking


def test_bad_tuples_are_rejected():
    with pytest.raises(ValueError, match="distinct cells"):
        NTupleAgent(3, 3, tuples=[[0, 0, 1]])
    with pytest.raises(ValueError, match="no default tuples"):
        NTupleAgent(2, 5)


def test_temporal_coherence_update_matches_reference():
    """Per-weight rate |E|/A (1 while A = 0), applied image by image, against a pure-Python replay."""
    from agents.ntuple import _update_tc

    agent = NTupleAgent(3, 3, tuples=[[0, 1, 2], [0, 4]], tc=True)
    grid = [[1, 2, 0], [0, 3, 0], [2, 0, 1]]
    b = B.pack(np.array(grid))
    weights = np.zeros(agent.weights.size)
    e = np.zeros(agent.weights.size)
    a = np.zeros(agent.weights.size)
    for error in (1.0, -0.5, 2.0, -1.0):
        _update_tc(
            b,
            error,
            0.1,
            agent.weights,
            agent.coherence_e,
            agent.coherence_a,
            agent.offsets,
            agent.rows_cells,
            agent.rows_tuple,
            agent.layout,
        )
        for j in reference_slots(agent, grid):
            rate = abs(e[j]) / a[j] if a[j] > 0 else 1.0
            weights[j] += 0.1 * rate * error
            e[j] += error
            a[j] += abs(error)
    np.testing.assert_allclose(agent.weights, weights, atol=1e-6)
    np.testing.assert_allclose(agent.coherence_e, e, atol=1e-6)
    np.testing.assert_allclose(agent.coherence_a, a, atol=1e-6)


@pytest.mark.slow
def test_staged_coherent_agent_round_trips_and_trains_on_identically(tmp_path):
    agent = NTupleAgent(3, 3, stages=4, stage_shift=7, tc=True, alpha=1.0, seed=3)
    agent.train(200)
    agent.save(tmp_path / "s.npz")
    back = NTupleAgent.load(tmp_path / "s.npz")
    assert (back.stages, back.stage_shift, back.tc) == (4, 7, True)
    assert np.array_equal(back.coherence_a, agent.coherence_a)
    assert agent.train(100).mean_score == back.train(100).mean_score
    assert np.array_equal(back.weights, agent.weights)


@given(boards([(3, 3), (4, 3)], max_exp=10))
def test_td_update_matches_reference(case):
    """Every weight V(b) reads (once per image that reads it) moves by alpha * (target - V(b)), V(b) before the
    update (evaluate_afterstate, itself checked against reference_value above); float32 weights, float64 steps,
    bit for bit."""
    rows, cols, grid = case
    b = B.pack(np.array(grid))
    agent = NTupleAgent(rows, cols, tuples=[[0, 1, 2], [0, 4]], stages=3, stage_shift=4)
    agent.weights[:] = np.random.default_rng(1).standard_normal(agent.weights.size)
    expected = agent.weights.copy()
    delta = 0.1 * (7.5 - agent.value(b))
    for j in reference_slots(agent, grid):
        expected[j] = np.float32(np.float64(expected[j]) + delta)
    before = agent.weights.copy()
    _td_update(b, 7.5, 0.1, *agent._args())
    np.testing.assert_array_equal(agent.weights, expected)
    assert not np.array_equal(agent.weights, before)


def test_parallel_training_learns_and_keeps_the_single_thread_path_reproducible():
    """threads=2 plays the asked number of games on shared weights and learns; threads=1 stays bit-for-bit
    reproducible from the seed."""
    a, b = NTupleAgent(2, 3, seed=4), NTupleAgent(2, 3, seed=4)
    assert a.train(300).mean_score == b.train(300).mean_score
    np.testing.assert_array_equal(a.weights, b.weights)
    c = NTupleAgent(2, 3, seed=4)
    before = c.train(500, learn=False).mean_score
    stats = c.train(3000, threads=2)
    assert max(stats.max_exponent_counts.values()) == 3000  # every game counted once
    assert c.train(500, learn=False).mean_score > before
    with pytest.raises(ValueError, match="threads"):
        c.train(10, threads=0)


def test_a_traced_round_learns_the_same_and_lists_every_move():
    """trace=True changes nothing in the learning (same weights, same scores) and lists each move's board and
    action: legal on its board, as many as the round's moves; with several threads it is refused."""
    a, b = NTupleAgent(2, 3, seed=7), NTupleAgent(2, 3, seed=7)
    plain, traced = a.train(40), b.train(40, trace=True)
    np.testing.assert_array_equal(a.weights, b.weights)
    assert plain.mean_score == traced.mean_score and traced.boards.shape == traced.actions.shape == (traced.moves,)
    for board, action in zip(traced.boards[:300], traced.actions[:300], strict=True):
        assert naive.legal(naive.unpack(int(board), 2, 3))[int(action)]
    assert plain.boards is None
    with pytest.raises(ValueError, match="1 with trace"):
        a.train(10, threads=2, trace=True)
