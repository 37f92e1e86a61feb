"""The n-tuple TD agent of games won or lost (agents.ntuple_goal): its episodes against a slow reference played
on naive.py's moves and naive_pattern's rules, seeding, learning, and its errors."""

from __future__ import annotations

import numpy as np
import pytest
from naive_pattern import NaivePattern

from agents.ntuple import _td_update
from agents.ntuple_goal import GoalNTupleAgent
from env2048.engine import next_uniform
from env2048.pattern import Pattern
from solver.spec import SolveSpec

import naive

CORNER = {"rows": 3, "cols": 3, "grid": [". . .", ". . .", ". . 256"], "target": 16}


def corner_agent(seed: int = 0) -> GoalNTupleAgent:
    spec = SolveSpec.for_pattern(Pattern.from_dict(CORNER))
    return GoalNTupleAgent(spec, tuples=[[0, 1, 2], [3, 4, 5], [0, 3, 6, 4]], seed=seed)


def reference_spawn(grid, key, p4):
    """The kernels' spawn from the same SplitMix64 stream: an empty cell (row-major) by the first uniform, a 4
    when the second is below ``p4``."""
    key, u_cell = next_uniform(np.uint64(key))
    key, u_tile = next_uniform(np.uint64(key))
    empties = naive.empty_cells(grid)
    r, c = empties[min(int(u_cell * len(empties)), len(empties) - 1)]
    grid = [row[:] for row in grid]
    grid[r][c] = 2 if u_tile < p4 else 1
    return grid, key


def reference_best(agent, rules: NaivePattern, grid):
    """(action, kind, afterstate grid, worth) of the first move of highest worth (1 success, 0 failure, else the
    agent's V), action -1 when no move is allowed."""
    worths = rules.move_values(grid, lambda after: agent.value(naive.pack([list(r) for r in after])))
    best = -1
    for a, w in enumerate(worths):
        if w is not None and (best < 0 or w > worths[best]):
            best = a
    if best < 0:
        return -1, "stuck", grid, 0.0
    after, _ = naive.move(grid, best)
    return best, rules.outcome(grid, after), after, worths[best]


def reference_episode(agent, rules: NaivePattern, key, alpha, played: list):
    """One learning game as the module docstring of agents.ntuple_goal describes it: ``(won, moves, key)``;
    the agent's weights are updated by ``_td_update`` (checked against its own reference in test_ntuple) and
    every move's (board, action) is appended to ``played``."""
    grid, key = reference_spawn(rules.fixed_grid(), key, agent.p4)
    grid, key = reference_spawn(grid, key, agent.p4)
    a, kind, after, _ = reference_best(agent, rules, grid)
    moves = 0
    while a >= 0:
        played.append((naive.pack(grid), a))
        moves += 1
        if kind != "play":
            return kind == "success", moves, key
        grid, key = reference_spawn(after, key, agent.p4)
        a2, kind2, after2, worth2 = reference_best(agent, rules, grid)
        _td_update(np.uint64(naive.pack(after)), worth2 if a2 >= 0 else 0.0, alpha, *agent._args())
        a, kind, after = a2, kind2, after2
    return False, moves, key


def test_learning_games_match_the_reference_move_for_move():
    """30 games with learning, from perturbed optimistic weights: the same wins, moves (the trace: every board and
    action), weights (bit for bit) and generator state as the reference; both outcomes occur."""
    fast, slow = corner_agent(), corner_agent()
    noise = np.random.default_rng(3).uniform(-0.02, 0.02, fast.weights.size).astype(np.float32)
    fast.weights += noise
    slow.weights += noise
    rules = NaivePattern(CORNER)
    alpha = fast.alpha / fast.rows_cells.shape[0]
    won, moves, key, played = [], 0, int(slow.key), []
    for _ in range(30):
        w, m, key = reference_episode(slow, rules, key, alpha, played)
        won.append(w)
        moves += m
    stats = fast.train(30, trace=True)
    assert stats.max_exponent_counts["won"] == sum(won) and stats.moves == moves
    assert stats.boards.tolist() == [b for b, _ in played] and stats.actions.tolist() == [a for _, a in played]
    assert 0 < sum(won) < 30
    np.testing.assert_array_equal(fast.weights, slow.weights)
    assert int(fast.key) == int(np.uint64(key))


def test_play_takes_the_best_allowed_move_by_the_rules():
    """act_batch against the reference's choice, with some allowed moves masked out."""
    agent = corner_agent()
    agent.weights[:] = np.random.default_rng(5).standard_normal(agent.weights.size)
    rules = NaivePattern(CORNER)
    rng = np.random.default_rng(6)
    for _ in range(200):
        grid = rules.fixed_grid()
        for r, c in rules.free:
            grid[r][c] = int(rng.choice([0, 0, 1, 2, 3, 4]))
        allowed = [w is not None for w in rules.move_values(grid, lambda after: 0.0)]
        if not any(allowed):
            continue
        mask = np.array(allowed) & (rng.random(4) < 0.7)
        if not mask.any():
            mask = np.array(allowed)
        worths = rules.move_values(grid, lambda after: agent.value(naive.pack([list(r) for r in after])))
        best = max((w, -a) for a, w in enumerate(worths) if mask[a])
        assert agent.act_batch(np.array(grid, np.uint8)[None], mask[None])[0] == -best[1]


def test_training_is_reproducible_and_raises_the_success_rate():
    a, b = corner_agent(seed=2), corner_agent(seed=2)
    assert a.train(200).mean_score == b.train(200).mean_score
    np.testing.assert_array_equal(a.weights, b.weights)
    c = corner_agent(seed=2)
    before = c.train(2000, learn=False).mean_score
    c.train(5000)
    after = c.train(2000, learn=False).mean_score
    assert after > before + 0.05, (before, after)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="played for its score"):
        GoalNTupleAgent(SolveSpec.parse("3x3", "score"))
    with pytest.raises(ValueError, match="one thread"):
        corner_agent().train(10, threads=2)
