"""Oracle: lookups against the table and an independent solver, regret, the env wrapper, clear errors."""

from __future__ import annotations

import json

import gymnasium as gym
import h5py
import numpy as np
import pytest

import env2048  # noqa: F401
from env2048 import board as B
from oracle import BoardNotInTable, Oracle, RegretReport
from oracle.wrapper import OracleWrapper
from solver.build import build
from solver.spec import SolveSpec
from solver.store import Table, TableError

import naive
from naive_solver import NaiveSolver


@pytest.fixture(scope="module")
def table_2x3(tmp_path_factory):
    path = tmp_path_factory.mktemp("oracle") / "2x3.h5"
    build(SolveSpec.parse("2x3"), path, progress=False)
    return path


@pytest.fixture(scope="module")
def oracle_2x3(table_2x3):
    return Oracle.open(table_2x3)


@pytest.fixture(scope="module")
def reachable_2x3(table_2x3):
    """Every stored state with its value, and the raw (non-canonical) images of a sample of them."""
    with Table(table_2x3) as t:
        layers = [t.layer(c.age) for c in t.counts()]
    ids = np.concatenate([layer["states"] for layer in layers])
    values = np.concatenate([layer["state_values"] for layer in layers])
    return ids, values


def test_values_equal_the_stored_state_values(oracle_2x3, reachable_2x3):
    ids, values = reachable_2x3
    np.testing.assert_array_equal(oracle_2x3.value(ids), values)


def test_q_values_match_the_independent_solver_on_raw_boards(oracle_2x3, reachable_2x3):
    ref = NaiveSolver(2, 3)
    rng = np.random.default_rng(0)
    for sid in rng.choice(reachable_2x3[0], 150):
        for image in naive.symmetries(naive.unpack(int(sid), 2, 3)):
            q = oracle_2x3.q_values(np.array(image))
            want = [np.nan if x is None else x for x in ref.q_values(tuple(map(tuple, image)))]
            np.testing.assert_allclose(q, want, atol=1e-9, equal_nan=True)


def test_q_values_agree_with_stepping(oracle_2x3, reachable_2x3):
    """Q(s, a) = reward of the move + value of its afterstate, with the move made by the game core."""
    for sid in np.random.default_rng(1).choice(reachable_2x3[0], 200):
        q = oracle_2x3.q_values(sid)
        for a in range(4):
            after, reward = B.move(sid, a, 2, 3)
            if after == sid:
                assert np.isnan(q[a])
            else:
                assert q[a] == pytest.approx(reward + oracle_2x3.afterstate_value(after), abs=1e-9)


def test_regret_and_best_actions_are_consistent(oracle_2x3, reachable_2x3):
    ids = reachable_2x3[0][:500]
    q = oracle_2x3.q_values(ids)
    best = oracle_2x3.best_actions(ids)
    for i, sid in enumerate(ids):
        for a in np.flatnonzero(~np.isnan(q[i])):
            r = oracle_2x3.action_regret(sid, int(a))
            assert r >= 0 and (r == 0) == bool(best[i, a])
        for a in np.flatnonzero(np.isnan(q[i])):
            with pytest.raises(ValueError, match="illegal"):
                oracle_2x3.action_regret(sid, int(a))
    grids = B.unpack(ids, 2, 3)
    np.testing.assert_array_equal(oracle_2x3.q_values(grids), q)  # exponent boards = packed IDs


@pytest.mark.parametrize(
    ("board", "error", "message"),
    [
        (np.array([[5, 5, 5], [5, 5, 5]]), BoardNotInTable, "not a reachable state"),
        (np.zeros((3, 3), int), ValueError, "expected a 2x3 exponent board"),
        (np.array([[16, 0, 0], [0, 0, 0]]), ValueError, r"exponents must lie in \[0, 15\]"),
        (np.array([[1.0, 0, 0], [0, 1, 0]]), TypeError, "integers"),
        (1 << 40, ValueError, "does not fit"),
    ],
)
def test_bad_boards_raise_clear_errors(oracle_2x3, board, error, message):
    with pytest.raises(error, match=message):
        oracle_2x3.q_values(board)


def test_bad_tables_raise_clear_errors(table_2x3, tmp_path):
    cut = tmp_path / "cut.h5"
    cut.write_bytes(table_2x3.read_bytes()[:5000])
    with pytest.raises(TableError, match="truncated"):
        Oracle.open(cut)
    with pytest.raises(TableError, match="solves 2x3"):
        Oracle.for_board("2x2", table=table_2x3)
    damaged = tmp_path / "damaged.h5"
    damaged.write_bytes(table_2x3.read_bytes())
    with h5py.File(damaged, "r+") as f:
        name = sorted(f["ages"])[5]
        f[f"ages/{name}/afterstate_values"][0] += 1
    with pytest.raises(TableError, match="checksum mismatch"):
        Oracle.open(damaged, verify=True)
    with pytest.raises(FileNotFoundError, match="python -m solver build --board 4x3"):
        Oracle.for_board("4x3")


class OptimalAgent:
    def __init__(self, oracle):
        self.oracle = oracle

    def act(self, observation, info):
        return int(np.flatnonzero(self.oracle.best_actions(observation))[0])


def test_optimal_agent_has_zero_regret_and_scores_v_star(oracle_2x3):
    report = oracle_2x3.regret(OptimalAgent(oracle_2x3), episodes=400, seed=0, progress=False)
    assert report.mean_regret == 0 and report.optimal_move_rate == 1.0
    assert np.all(report.mean_regret_by_age == 0)
    assert abs(report.mean_score - report.start_value) <= report.score_ci


def test_random_agent_regret_estimates_the_score_gap(oracle_2x3):
    rng = np.random.default_rng(0)

    def random_agent(observation, info):
        return int(rng.choice(np.flatnonzero(info["action_mask"])))

    report = oracle_2x3.regret(random_agent, episodes=600, seed=1, progress=False)
    gap = report.start_value - report.mean_score
    assert abs(report.mean_regret - gap) <= 1.5 * np.hypot(report.regret_ci, report.score_ci)
    assert 0 < report.optimal_move_rate < 1 and report.visits.sum() == report.moves


def test_report_serialises_and_plots(oracle_2x3, tmp_path):
    report = oracle_2x3.regret(lambda obs, info: int(np.flatnonzero(info["action_mask"])[0]), episodes=20,
                               progress=False)  # fmt: skip
    assert isinstance(report, RegretReport)
    data = json.loads(report.to_json(tmp_path / "r.json"))
    assert data["episodes"] == 20 and len(data["ages"]) == len(data["visits"]) == len(data["mean_regret_by_age"])
    report.plot(tmp_path / "gap.png")
    assert (tmp_path / "gap.png").stat().st_size > 1000


def test_solved_env_carries_the_oracle():
    env = gym.make("Solved2048-2x2")
    assert isinstance(env.unwrapped, env2048.Game2048Env)
    obs, info = env.reset(seed=3)
    for _ in range(100):
        q = info["q_values"]
        np.testing.assert_array_equal(~np.isnan(q), info["action_mask"])
        best = int(np.flatnonzero(info["optimal_actions"])[0])
        worst = int(np.nanargmin(q))
        action = best if np.random.default_rng(len(str(q))).random() < 0.5 else worst
        obs, reward, terminated, truncated, info = env.step(action)
        assert info["regret"] == pytest.approx(np.nanmax(q) - q[action])
        if terminated:
            break
    assert not isinstance(gym.make("Solved2048-2x2", oracle=False).env.env, OracleWrapper)
    with pytest.raises(ValueError, match="p4"):
        OracleWrapper(env2048.Game2048Env(2, 2, p4=0.2), Oracle.for_board("2x2"))


# -- exact evaluation ------------------------------------------------------------------------------------------


def test_evaluate_optimal_equals_v_star(oracle_2x3):
    from agents import OptimalAgent

    exact = oracle_2x3.evaluate(OptimalAgent(oracle_2x3), progress=False)
    assert exact.value == pytest.approx(oracle_2x3.start_value, abs=1e-9)
    assert abs(exact.gap) < 1e-9 and exact.consistency < 1e-9


def test_evaluate_matches_monte_carlo(oracle_2x3):
    """A fixed simple policy (first legal of LEFT, UP, RIGHT, DOWN), exact vs played; and the random policy
    evaluated on raw or canonical boards gives the same exact value."""
    from agents import GreedyAgent, RandomAgent

    greedy = GreedyAgent()
    exact = oracle_2x3.evaluate(greedy, progress=False)
    played = oracle_2x3.regret(greedy, episodes=1500, seed=5, progress=False)
    assert abs(played.mean_score - exact.value) <= played.score_ci
    assert abs(played.mean_regret - exact.gap) <= max(played.regret_ci, 1e-9)
    assert exact.consistency < 1e-9
    values = {s: oracle_2x3.evaluate(type("R", (RandomAgent,), {"symmetric": s})(), progress=False).value
              for s in (False, True)}  # fmt: skip
    assert values[False] == pytest.approx(values[True], abs=1e-9)


def test_evaluate_rejects_illegal_actions(oracle_2x3):
    with pytest.raises(ValueError, match="illegal"):
        oracle_2x3.evaluate(lambda obs, info: 0, progress=False)


@pytest.mark.slow
def test_3x3_oracle_from_cache_and_exact_optimal_value():
    from agents import OptimalAgent

    oracle = Oracle.for_board("3x3", progress=False)
    assert oracle.n_states == 48_713_519 and oracle.n_afterstates == 31_431_374
    start = np.array([[1, 0, 0], [0, 0, 0], [0, 0, 1]])
    assert oracle.value(start) == pytest.approx(np.nanmax(oracle.q_values(start)))
    assert oracle.evaluate(OptimalAgent(oracle), progress=False).value == pytest.approx(oracle.start_value, abs=1e-9)
