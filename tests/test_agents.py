"""Baseline agents: against slow references, and seeded reproducibility."""

from __future__ import annotations

import numpy as np
from hypothesis import given

from agents import GreedyAgent, RandomAgent

import naive
from conftest import boards

PREFERENCE = (3, 0, 1, 2)


@given(boards([(3, 3), (4, 3), (4, 4), (2, 2)], max_exp=9))
def test_greedy_picks_the_largest_reward_with_fixed_ties(case):
    rows, cols, grid = case
    legal = naive.legal(grid)
    if not any(legal):
        return
    rewards = {a: naive.move(grid, a)[1] for a in range(4) if legal[a]}
    top = max(rewards.values())
    want = next(a for a in PREFERENCE if a in rewards and rewards[a] == top)
    got = GreedyAgent().act(np.array(grid, np.uint8), {"action_mask": np.array(legal)})
    assert got == want


def test_random_agent_is_uniform_over_legal_moves_and_seeded():
    masks = np.array([[True, False, True, True]] * 30000)
    boards_ = np.zeros((30000, 3, 3), np.uint8)
    picks = RandomAgent(seed=1).act_batch(boards_, masks)
    counts = np.bincount(picks, minlength=4)
    assert counts[1] == 0 and all(abs(c / 30000 - 1 / 3) < 0.01 for c in counts[[0, 2, 3]])
    np.testing.assert_array_equal(picks, RandomAgent(seed=1).act_batch(boards_, masks))
    assert not np.array_equal(picks, RandomAgent(seed=2).act_batch(boards_, masks))
    np.testing.assert_allclose(RandomAgent().action_probs(boards_[:1], masks[:1]), [[1 / 3, 0, 1 / 3, 1 / 3]])
