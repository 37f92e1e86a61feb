"""Endgame2048-v0: registered ids, Gymnasium's checker, the pattern's rules in play, and the oracle's success
probabilities in ``info`` against the independent brute force."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from naive_pattern import NaivePattern

import env2048  # noqa: F401  (registers the ids)
from env2048.pattern import Pattern
from solver.build import build
from solver.spec import SolveSpec

CORNER = {"rows": 3, "cols": 3, "grid": [". . .", ". . .", ". . 256"], "target": 16}


@pytest.fixture(scope="module")
def corner_table(tmp_path_factory):
    out = tmp_path_factory.mktemp("endgame") / "corner"
    build(SolveSpec.for_pattern(Pattern.from_dict(CORNER)), out, progress=False, layout="directory")
    return out


def test_ids_are_registered_and_pass_the_checker():
    assert {"Endgame2048-v0", "Endgame2048-L3-v0", "Endgame2048-442-v0", "Endgame2048-t-v0"} <= set(gym.registry)
    env = gym.make("Endgame2048-L3-v0")
    obs, info = env.reset(seed=1)
    assert obs.shape == (4, 4) and obs.dtype == np.uint8
    assert obs[3, 1:].tolist() == [12, 11, 10] and obs[2, 1:].tolist() == [13, 14, 15]  # the fixed chain of T=512
    assert (obs[obs < 10] > 0).sum() == 2  # two spawns
    check_env(gym.make("Endgame2048-v0", pattern=CORNER).unwrapped, skip_render_check=True)


@pytest.mark.slow
def test_play_follows_the_pattern_rules_and_info_carries_exact_success_probabilities(corner_table):
    naive = NaivePattern(CORNER)
    env = gym.make("Endgame2048-v0", pattern=CORNER, oracle_table=str(corner_table))
    outcomes, steps = set(), 0
    for seed in range(12):
        obs, info = env.reset(seed=seed)
        done = False
        rng = np.random.default_rng(seed)
        while not done:
            board = tuple(map(tuple, obs.tolist()))
            q = naive.q_values(board)
            np.testing.assert_array_equal(info["action_mask"], [v is not None for v in q])
            expected = np.array([np.nan if v is None else v for v in q])
            np.testing.assert_allclose(info["success_probability"], expected, atol=2e-9)
            assert info["value"] == pytest.approx(max(v for v in q if v is not None), abs=2e-9)
            allowed = np.flatnonzero(info["action_mask"])
            action = int(allowed[0] if seed % 2 else rng.choice(allowed))  # a poor policy and a random one
            obs, reward, done, truncated, info = env.step(action)
            steps += 1
            assert obs[2, 2] == 8 and not truncated  # the fixed 256 never moves
            if done:
                outcomes.add(info["outcome"])
                assert reward == (1.0 if info["outcome"] == "success" else 0.0)
                assert (info["outcome"] == "success") == (obs == 4).any()
    assert steps > 50 and "success" in outcomes


def test_a_table_of_another_pattern_is_refused(corner_table):
    other = {**CORNER, "grid": [". . .", ". . .", "256 . ."]}
    with pytest.raises(ValueError, match="solves pattern custom"):
        gym.make("Endgame2048-v0", pattern=other, oracle_table=str(corner_table))
    from env2048.endgame import Endgame2048Env

    assert Endgame2048Env(CORNER).oracle is None  # the bare env needs no table


@pytest.mark.slow
def test_regret_and_exact_evaluation_work_on_a_pattern(corner_table):
    """Regret in probability of success, and the exact success probability of a policy, on a pattern table: the
    random policy's against the brute force's, the optimal policy's against the table's start value."""
    from agents.simple import OptimalAgent, RandomAgent
    from oracle.oracle import Oracle

    expected = NaivePattern(CORNER).start_value(random_policy=True)
    with Oracle.open(corner_table) as oracle:
        report = oracle.regret(RandomAgent(seed=0), episodes=30, progress=False)
        assert 0.0 <= report.mean_score <= 1.0 and report.mean_regret > 0 and report.moves > 30
        assert oracle.evaluate(RandomAgent(seed=0), progress=False).value == pytest.approx(expected, abs=1e-8)
        best = oracle.evaluate(OptimalAgent(oracle), progress=False)
        assert best.value == pytest.approx(oracle.start_value, abs=1e-7) and expected < best.value


@pytest.mark.slow
def test_the_benchmark_runs_on_a_pattern(corner_table, tmp_path):
    """Every kind of agent plays the pattern's game (the n-tuple player trained on the plain 3x3 game included:
    it must keep to the allowed moves), and the replay page marks the pattern's fixed cell."""
    from agents.ntuple import NTupleAgent
    from experiments.benchmark import run
    from experiments.replay import replay

    td = NTupleAgent(3, 3, seed=0)
    td.train(200)
    td.save(tmp_path / "td.npz")
    agents = ["random", "greedy", "expectimax:1", "optimal", f"td:{tmp_path / 'td.npz'}"]
    result = run(None, agents, episodes=20, out=tmp_path, table=corner_table, progress=False, pattern=CORNER)
    rows = {r["label"]: r for r in result["agents"]}
    td_row = next(r for r in result["agents"] if r["spec"] == agents[-1])
    assert 0 <= td_row["mean_score"] <= 1 and td_row["mean_regret"] >= 0
    games = replay(None, agents[-1], episodes=1, out=tmp_path / "r.html", table=corner_table)
    assert games[0].fixed_cells == (8,) and games[0].goal_cells == tuple(range(8))
    assert '"fixed_cells":[8]' in (tmp_path / "r.html").read_text()
    assert result["board"] == "custom-16" and result["pattern"]["grid"] == CORNER["grid"]
    assert rows["optimal"]["mean_regret"] == 0 and rows["optimal"]["optimal_move_rate"] == 1.0
    assert rows["random"]["mean_regret"] > 0 and 0 <= rows["random"]["mean_score"] <= 1
    assert rows["optimal"]["exact_value"] == pytest.approx(result["optimal_value"], abs=1e-7)
    assert (tmp_path / "custom-16" / "benchmark.md").exists()
    with pytest.raises(ValueError, match="solves pattern custom"):
        run(
            None,
            ["random"],
            episodes=2,
            out=tmp_path,
            table=corner_table,
            progress=False,
            pattern={**CORNER, "target": 32},
        )


@pytest.mark.parametrize("invalid_action", ["noop", "raise"])
def test_a_start_with_no_allowed_move_ends_at_the_first_step(invalid_action):
    """L3 at 256 has starts where every move would shift a fixed tile or change nothing: the first step ends the
    game as stuck, reward 0, whatever the action (before, it was refused for ever)."""
    env = gym.make("Endgame2048-v0", pattern="L3", target=256, invalid_action=invalid_action).unwrapped
    stuck = [s for s in range(200) if not env.reset(seed=s)[1]["action_mask"].any()]
    assert stuck, "no stuck start among 200 seeds"
    env.reset(seed=stuck[0])
    obs, reward, terminated, truncated, info = env.step(0)
    assert terminated and not truncated and reward == 0.0 and info["outcome"] == "stuck"
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step(1)
