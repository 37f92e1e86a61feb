"""Expectimax agent: the heuristic and Q-values against a brute-force pure-Python expectimax, and its errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from naive_pattern import NaivePattern
from test_ntuple import reference_value

from agents.expectimax import DEFAULT_HEURISTIC, FAILURE_VALUE, SUCCESS_VALUE, ExpectimaxAgent
from agents.ntuple import NTupleAgent
from env2048.pattern import Pattern

import naive
from conftest import boards


def reference_heuristic(grid, w) -> float:
    """Empty cells, adjacent equal pairs and per-line min(rises, falls) of tile values, summed over rows and columns."""
    lines = [list(row) for row in grid] + [list(col) for col in zip(*grid, strict=True)]
    empty = sum(v == 0 for row in grid for v in row)
    merges = sum(1 for line in lines for x, y in zip(line, line[1:], strict=False) if x and x == y)
    mono = 0.0
    for line in lines:
        values = [2**v if v else 0 for v in line]
        steps = [y - x for x, y in zip(values, values[1:], strict=False)]
        mono += min(sum(d for d in steps if d > 0), -sum(d for d in steps if d < 0))
    return w[0] * empty + w[1] * merges - w[2] * mono


def reference_q(grid, depth, leaf, p4=0.1) -> list[float]:
    """Q_depth(grid, a) by plain recursion over every spawn (no cache); -inf for illegal moves."""
    q = []
    for a in range(4):
        after, reward = naive.move(grid, a)
        if after == grid:
            q.append(-np.inf)
        elif depth == 1:
            q.append(reward + leaf(after))
        else:
            expected = 0.0
            for child, p in naive.spawn_outcomes(after, p4):
                best = max(reference_q(child, depth - 1, leaf, p4))
                expected += p * (best if best > -np.inf else 0.0)
            q.append(reward + expected)
    return q


def reference_q_pattern(
    pattern: NaivePattern, grid, depth, leaf, p4=0.1, paid=1.0, success=SUCCESS_VALUE, failure=FAILURE_VALUE
) -> list[float]:
    """Q_depth(grid, a) in an endgame pattern's game: only allowed moves (-inf otherwise), a success worth
    ``success``, a failure or no allowed move ``failure``, on top of the move's reward times ``paid``."""
    q = []
    for a in range(4):
        after, reward = naive.move(grid, a)
        kind = pattern.outcome(grid, after)
        if kind == "illegal":
            q.append(-np.inf)
        elif kind in ("success", "failure"):
            q.append(paid * reward + (success if kind == "success" else failure))
        elif depth == 1:
            q.append(paid * reward + leaf(after))
        else:
            expected = 0.0
            for child, p in naive.spawn_outcomes(after, p4):
                best = max(reference_q_pattern(pattern, child, depth - 1, leaf, p4, paid, success, failure))
                expected += p * (best if best > -np.inf else failure)
            q.append(paid * reward + expected)
    return q


CORNER_T = {"rows": 3, "cols": 3, "grid": [". . t", ". . .", ". . 64"], "target": 16}
CORNER_T_NAIVE = NaivePattern(CORNER_T)


@settings(max_examples=40)
@given(st.lists(st.sampled_from([0, 0, 1, 2, 3, 4]), min_size=8, max_size=8))
def test_search_under_a_patterns_rules_matches_brute_force(free):
    """With a pattern's rules the search keeps the fixed 64 in its corner and ends lines at success (16 on the
    top-right cell) and failure (a 32 anywhere, or no allowed move); depths 1 and 2 against the brute force."""
    grid = [free[0:3], free[3:6], free[6:8] + [6]]
    pattern = CORNER_T_NAIVE
    leaf = lambda g: reference_heuristic(g, (3.0, 5.0, 0.25))  # noqa: E731
    rules = Pattern.from_dict(CORNER_T).rules
    for depth in (1, 2):
        agent = ExpectimaxAgent(3, 3, depth=depth, heuristic=(3.0, 5.0, 0.25), cache_size=64, rules=rules)
        np.testing.assert_allclose(
            agent.q_values(np.array(grid, np.uint8)), reference_q_pattern(pattern, grid, depth, leaf), rtol=1e-9
        )


@pytest.fixture(scope="module")
def random_goal_network():
    """A success network of the corner pattern with random values in [0, 1) spread over its tuples."""
    from agents.ntuple_goal import GoalNTupleAgent
    from solver.spec import SolveSpec

    network = GoalNTupleAgent(SolveSpec.for_pattern(Pattern.from_dict(CORNER_T)), seed=0)
    network.weights[:] = np.random.default_rng(7).random(network.weights.size) / network.rows_cells.shape[0] / 8
    return network


@settings(max_examples=30)
@given(st.lists(st.sampled_from([0, 0, 1, 2, 3, 4]), min_size=8, max_size=8))
def test_search_on_a_success_network_plays_for_the_probability_of_success(random_goal_network, free):
    """On a GoalNTupleAgent the search plays the network's game of success: its rules, a success worth 1, a
    failure or no allowed move 0, the leaves the network's values, the merge rewards ignored (brute force)."""
    grid = [free[0:3], free[3:6], free[6:8] + [6]]
    network = random_goal_network
    leaf = lambda g: reference_value(network, g)  # noqa: E731
    for depth in (1, 2):
        agent = ExpectimaxAgent(3, 3, depth=depth, evaluator=network, cache_size=64)
        want = reference_q_pattern(CORNER_T_NAIVE, grid, depth, leaf, paid=0.0, success=1.0, failure=0.0)
        np.testing.assert_allclose(agent.q_values(np.array(grid, np.uint8)), want, rtol=1e-9, atol=1e-12)


@given(boards([(2, 2), (3, 3), (4, 4), (4, 3), (2, 3)], max_exp=11))
def test_heuristic_depth_one_matches_brute_force(case):
    rows, cols, grid = case
    agent = ExpectimaxAgent(rows, cols, depth=1)
    want = reference_q(grid, 1, lambda g: reference_heuristic(g, DEFAULT_HEURISTIC))
    np.testing.assert_allclose(agent.q_values(np.array(grid, np.uint8)), want, rtol=1e-12)


@settings(max_examples=40)
@given(boards([(2, 2), (2, 3), (3, 3)], max_exp=8, fill=0.5))
def test_heuristic_depth_two_and_three_match_brute_force(case):
    rows, cols, grid = case
    leaf = lambda g: reference_heuristic(g, (3.0, 5.0, 0.25))  # noqa: E731
    for depth in (2, 3) if rows * cols <= 6 else (2,):
        agent = ExpectimaxAgent(rows, cols, depth=depth, heuristic=(3.0, 5.0, 0.25), cache_size=64)
        np.testing.assert_allclose(
            agent.q_values(np.array(grid, np.uint8)), reference_q(grid, depth, leaf), rtol=1e-9, atol=1e-12
        )


@pytest.fixture(scope="module")
def random_network():
    """A 3x3 n-tuple network with random weights (35 M of them: made once, not once per example)."""
    network = NTupleAgent(3, 3, seed=0)
    network.weights[:] = np.random.default_rng(5).standard_normal(network.weights.size)
    return network


@settings(max_examples=30)
@given(case=boards([(3, 3)], max_exp=9, fill=0.5))
def test_ntuple_evaluator_matches_brute_force(random_network, case):
    _, _, grid = case
    network = random_network
    agent = ExpectimaxAgent(3, 3, depth=2, evaluator=network)
    want = reference_q(grid, 2, lambda g: reference_value(network, g))
    np.testing.assert_allclose(agent.q_values(np.array(grid, np.uint8)), want, rtol=1e-6, atol=1e-6)


def test_a_tiny_cache_gives_the_same_decisions():
    rng = np.random.default_rng(0)
    grids = rng.integers(0, 6, size=(200, 3, 3)).astype(np.uint8)
    masks = np.ones((200, 4), bool)
    big = ExpectimaxAgent(3, 3, depth=3).act_batch(grids, masks)
    small = ExpectimaxAgent(3, 3, depth=3, cache_size=4).act_batch(grids, masks)
    np.testing.assert_array_equal(big, small)


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="depth"):
        ExpectimaxAgent(3, 3, depth=0)
    with pytest.raises(ValueError, match="power of two"):
        ExpectimaxAgent(3, 3, cache_size=1000)
    with pytest.raises(ValueError, match="evaluator"):
        ExpectimaxAgent(3, 3, evaluator="minimax")
    with pytest.raises(ValueError, match="4x4"):
        ExpectimaxAgent(3, 3, evaluator=NTupleAgent(4, 4, tuples=[[0, 1]]))
