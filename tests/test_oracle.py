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
from oracle.agent import as_policy, evaluates_exactly
from oracle.wrapper import OracleWrapper
from solver.build import build
from solver.format import Table, TableError
from solver.spec import SolveSpec

import naive
from conftest import numba_threads
from naive_solver import shared_solver


@pytest.fixture(scope="module")
def table_2x3_v1(tmp_path_factory):
    path = tmp_path_factory.mktemp("oracle") / "2x3-v1.h5"
    build(SolveSpec.parse("2x3"), path, progress=False, format_version=1)
    return path


def value_tol(oracle) -> dict:
    """``assert_allclose`` tolerances of an oracle's values against exact ones."""
    rel, absolute = oracle.value_error
    return {"rtol": rel + 1e-12, "atol": absolute + 1e-9}


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


@pytest.mark.slow
def test_values_equal_the_stored_state_values(oracle_2x3, reachable_2x3):
    """Every reachable state at once, its lookups spread over two threads (a test worker's default is one)."""
    ids, values = reachable_2x3
    with numba_threads(2):
        np.testing.assert_array_equal(oracle_2x3.value(ids), values)


@pytest.mark.slow
def test_q_values_match_the_independent_solver_on_raw_boards(oracle_2x3, reachable_2x3):
    ref = shared_solver(2, 3)
    rng = np.random.default_rng(0)
    for sid in rng.choice(reachable_2x3[0], 150):
        for image in naive.symmetries(naive.unpack(int(sid), 2, 3)):
            q = oracle_2x3.q_values(np.array(image))
            want = [np.nan if x is None else x for x in ref.q_values(tuple(map(tuple, image)))]
            np.testing.assert_allclose(q, want, equal_nan=True, **value_tol(oracle_2x3))


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


@pytest.mark.slow
def test_bad_tables_raise_clear_errors(table_2x3, table_2x3_v1, tmp_path):
    cut = tmp_path / "cut.h5"
    cut.write_bytes(table_2x3.read_bytes()[:5000])
    with pytest.raises(TableError, match="truncated"):
        Oracle.open(cut)
    with pytest.raises(TableError, match="solves 2x3"):
        Oracle.for_board("2x2", table=table_2x3)
    for table, dataset in ((table_2x3_v1, "afterstate_values"), (table_2x3, "values")):
        damaged = tmp_path / "damaged.h5"
        damaged.write_bytes(table.read_bytes())
        with h5py.File(damaged, "r+") as f:
            name = sorted(f["ages"])[5]
            f[f"ages/{name}/{dataset}"][0] += 1
        with pytest.raises(TableError, match=f"checksum mismatch in ages/{name}/{dataset}"):
            Oracle.open(damaged, verify=True)
    with pytest.raises(FileNotFoundError, match="python -m solver build --board 4x3"):
        Oracle.for_board("4x3")


def largest_dataset(path):
    """``(name, byte offset, byte size)`` of the largest dataset of an HDF5 file."""
    found = []
    with h5py.File(path, "r") as f:
        f.visititems(
            lambda name, obj: (
                found.append((obj.nbytes, name, obj.id.get_offset())) if isinstance(obj, h5py.Dataset) else None
            )
        )
    size, name, offset = max(found)
    return name, offset, size


@pytest.mark.slow
def test_damaged_v2_tables_name_what_is_wrong(table_2x3, tmp_path):
    """A flipped byte (with verify), a truncated dataset, a missing age: each a TableError naming the culprit."""
    data = bytearray(table_2x3.read_bytes())
    name, offset, size = largest_dataset(table_2x3)
    flipped = tmp_path / "flipped.h5"
    data[offset + size // 2] ^= 0x10
    flipped.write_bytes(bytes(data))
    with pytest.raises(TableError, match=f"checksum mismatch in {name}"):
        Oracle.open(flipped, verify=True)
    from solver.verify import verify_table

    assert verify_table(flipped, samples=0, progress=False).bad_checksums == [name]

    # cut inside the dataset that ends last: HDF5 itself sees the file is short
    with h5py.File(table_2x3, "r") as f:
        ends = []
        f.visititems(
            lambda n, o: ends.append(o.id.get_offset() + o.nbytes) if isinstance(o, h5py.Dataset) and o.nbytes else None
        )
    cut = tmp_path / "cut.h5"
    cut.write_bytes(table_2x3.read_bytes()[: max(ends) - 8])
    with pytest.raises(TableError, match="cut.h5 is not a readable HDF5 table.*truncated"):
        Oracle.open(cut)
    # a directory table with one age file cut: opening works, using that age names the file
    directory = tmp_path / "dir"
    build(SolveSpec.parse("2x3"), directory, layout="directory", progress=False)
    victim = sorted((directory / "ages").glob("*.h5"))[20]
    victim.write_bytes(victim.read_bytes()[:-64])
    oracle = Oracle.open(directory)
    with pytest.raises(TableError, match=f"{victim.name} is not a readable HDF5 file"):
        oracle._layers.layer(int(victim.stem))

    missing = tmp_path / "missing.h5"
    missing.write_bytes(table_2x3.read_bytes())
    with h5py.File(missing, "r+") as f:
        gone = sorted(f["ages"])[7]
        del f[f"ages/{gone}"]
    with pytest.raises(TableError, match=f"ages \\[{int(gone)}\\] are in the index but missing"):
        Oracle.open(missing)


def test_v1_and_v2_oracles_agree_on_every_2x3_board(table_2x3, table_2x3_v1, reachable_2x3):
    """Same Q-values within the v2 bound; v2's optimal actions contain v1's, and equal them wherever v1's best
    and second-best Q-values differ by more than 4.5 times the bound (see ``solver.format.common.tie_tolerance``)."""
    ids = reachable_2x3[0]
    v1, v2 = Oracle.open(table_2x3_v1), Oracle.open(table_2x3)
    q1, q2 = v1.q_values(ids), v2.q_values(ids)
    np.testing.assert_array_equal(np.isnan(q1), np.isnan(q2))
    rel, absolute = v2.value_error
    assert rel == 2.0**-20 and absolute == 0.0
    legal = ~np.isnan(q1)
    assert np.all(np.abs(q1 - q2)[legal] <= rel * np.abs(q1)[legal])
    m1, m2 = v1.optimal_mask(q1), v2.optimal_mask(q2)
    assert np.all(m2 | ~m1)  # every exact optimal action is optimal in v2
    top = np.where(legal, q1, -np.inf).max(axis=1, keepdims=True)
    second_gap = np.where(legal & ~m1, top - q1, np.inf).min(axis=1)
    clear = second_gap > 4.5 * rel * np.maximum(1.0, top[:, 0])
    np.testing.assert_array_equal(m1[clear], m2[clear])
    assert clear.mean() > 0.99
    np.testing.assert_allclose(v1.value(ids), v2.value(ids), rtol=rel)


@pytest.mark.slow
def test_directory_layout_and_memory_limit(table_2x3, tmp_path, reachable_2x3):
    """A directory table answers exactly as the one-file table, and a tiny memory limit changes nothing but
    how many layers stay open."""
    directory = tmp_path / "2x3-dir"
    build(SolveSpec.parse("2x3"), directory, layout="directory", progress=False)
    assert (directory / "table.h5").exists() and len(list((directory / "ages").glob("*.h5"))) > 100
    ids = reachable_2x3[0]
    want = Oracle.open(table_2x3).q_values(ids)
    small = Oracle.open(directory, memory_limit=2000)
    np.testing.assert_array_equal(small.q_values(ids), want)
    assert small._layers.opened > len(small._layers._open)  # layers were dropped and opened again
    assert small.resident_bytes <= 2000 + max(layer.nbytes for layer, _ in small._layers._open.values())


class OptimalAgent:
    def __init__(self, oracle):
        self.oracle = oracle

    def act(self, observation, info):
        return int(np.flatnonzero(self.oracle.best_actions(observation))[0])


@pytest.mark.slow
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
    report = oracle_2x3.regret(
        lambda obs, info: int(np.flatnonzero(info["action_mask"])[0]), episodes=20, progress=False
    )
    assert isinstance(report, RegretReport)
    data = json.loads(report.to_json(tmp_path / "r.json"))
    assert data["episodes"] == 20 and len(data["ages"]) == len(data["visits"]) == len(data["mean_regret_by_age"])
    report.plot(tmp_path / "gap.png")
    assert (tmp_path / "gap.png").stat().st_size > 1000


def test_solved_env_carries_the_oracle():
    env = gym.make("Solved2048-2x2-v1")
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
    assert not isinstance(gym.make("Solved2048-2x2-v1", oracle=False).env.env, OracleWrapper)
    with pytest.raises(ValueError, match="p4"):
        OracleWrapper(env2048.Game2048Env(2, 2, p4=0.2), Oracle.for_board("2x2"))


# -- exact evaluation ------------------------------------------------------------------------------------------


def test_evaluate_optimal_equals_v_star(oracle_2x3):
    from agents import OptimalAgent

    exact = oracle_2x3.evaluate(OptimalAgent(oracle_2x3), progress=False)
    # v2: the oracle's optimal actions include near ties within its error bound, which may lose a little
    slack = 4.5 * oracle_2x3.value_error[0] * oracle_2x3.start_value + 1e-9
    assert exact.value == pytest.approx(oracle_2x3.start_value, abs=slack)
    assert abs(exact.gap) < slack and exact.consistency < slack
    # the shortcut (its moves from the Q-values evaluate looks up anyway) decides as the agent's own act_batch
    optimal = OptimalAgent(oracle_2x3)

    class ActBatchOnly:
        symmetric = True
        deterministic = True

        def act_batch(self, boards, masks):
            return optimal.act_batch(boards, masks)

    played = oracle_2x3.evaluate(ActBatchOnly(), progress=False)
    assert (played.value, played.gap) == (exact.value, exact.gap)


@pytest.mark.slow
def test_evaluate_matches_monte_carlo(oracle_2x3):
    """A fixed simple policy (first legal of LEFT, UP, RIGHT, DOWN), exact vs played; and the random policy
    evaluated on raw or canonical boards gives the same exact value."""
    from agents import GreedyAgent, RandomAgent

    greedy = GreedyAgent()
    exact = oracle_2x3.evaluate(greedy, progress=False)
    played = oracle_2x3.regret(greedy, episodes=1500, seed=5, progress=False)
    assert abs(played.mean_score - exact.value) <= played.score_ci
    assert abs(played.mean_regret - exact.gap) <= max(played.regret_ci, 1e-9)
    assert exact.consistency < 2 * oracle_2x3.value_error[0] * oracle_2x3.start_value + 1e-9
    values = {
        s: oracle_2x3.evaluate(type("R", (RandomAgent,), {"symmetric": s})(), progress=False).value
        for s in (False, True)
    }
    assert values[False] == pytest.approx(values[True], abs=1e-9)


def test_a_policy_that_declares_nothing_is_refused_with_what_to_add(oracle_2x3):
    always_up = lambda obs, info: 0  # noqa: E731
    with pytest.raises(ValueError, match=r"<lambda> cannot be evaluated exactly: set `deterministic = True`"):
        oracle_2x3.evaluate(always_up, progress=False)
    with pytest.raises(ValueError, match="cannot be scored exactly.*action_probs"):
        evaluates_exactly(as_policy(always_up), 6)
    assert not evaluates_exactly(as_policy(always_up), 6, table_allows=False)
    assert not evaluates_exactly(as_policy(always_up), 9)  # not cheap on a larger board: Monte Carlo
    assert evaluates_exactly(as_policy(always_up, deterministic=True), 6)


def _naive_policy_value(rows: int, cols: int, p4: float, probs) -> float:
    """V^pi(start) by recursion over the pure-Python rules (tests/naive.py): ``probs(grid) -> 4 floats``; an
    illegal move ends the game with no reward."""
    from functools import cache

    @cache
    def value(board_id: int) -> float:
        grid = naive.unpack(board_id, rows, cols)
        legal = naive.legal(grid)
        total = 0.0
        for a, p in enumerate(probs(grid)):
            if p == 0 or not legal[a]:
                continue
            after, reward = naive.move(grid, a)
            total += p * (reward + sum(q * value(naive.pack(g)) for g, q in naive.spawn_outcomes(after, p4)))
        return total

    return sum(p * value(b) for b, p in naive.start_distribution(rows, cols, p4).items())


class HalfUpHalfUniform:
    """UP with probability 1/2 whether legal or not (an illegal UP ends the game), else a uniform legal move."""

    name = "half-up"

    def action_probs(self, boards, masks):
        masks = np.asarray(masks, bool)
        uniform = masks / np.maximum(masks.sum(axis=1, keepdims=True), 1)
        return 0.5 * uniform + 0.5 * np.eye(4)[np.zeros(len(masks), int)]

    def act_batch(self, boards, masks):
        raise AssertionError("exact evaluation uses action_probs")


def test_a_stochastic_policy_is_scored_exactly_by_its_probabilities():
    """On 2x2, V^pi of a stochastic policy that puts half its mass on UP, legal or not, equals a recursion over
    the pure-Python rules, and the per-move regrets (an illegal move's is max Q*) add up to V* - V^pi."""
    oracle = Oracle.for_board("2x2", progress=False)
    ev = oracle.evaluate(HalfUpHalfUniform(), progress=False)

    def probs(grid):
        legal = np.array(naive.legal(grid), float)
        return 0.5 * legal / max(legal.sum(), 1) + 0.5 * np.eye(4)[0]

    expected = _naive_policy_value(2, 2, 0.1, probs)
    assert ev.value == pytest.approx(expected, rel=1e-12)
    assert 0 < ev.value < oracle.start_value
    assert ev.consistency < 2 * oracle.value_error[0] * oracle.start_value + 1e-9  # V* - gap = V^pi, to rounding


def test_an_illegal_move_ends_the_game_in_exact_and_played_scoring(oracle_2x3):
    """Always-UP on 2x3: the exact pass and the played games agree (an illegal UP ends the game, its regret is
    max Q*), and the played games' regrets add up to V* minus their scores."""
    always_up = as_policy(lambda obs, info: 0, deterministic=True)
    ev = oracle_2x3.evaluate(always_up, progress=False)
    report = oracle_2x3.regret(always_up, episodes=400, seed=3, progress=False)
    assert abs(report.mean_score - ev.value) <= report.score_ci
    assert ev.consistency < 2 * oracle_2x3.value_error[0] * oracle_2x3.start_value + 1e-9
    assert report.moves < 400 * 20  # every game ends: UP becomes illegal within a few moves


@pytest.mark.slow
def test_3x3_oracle_from_cache_and_exact_optimal_value():
    from agents import OptimalAgent

    oracle = Oracle.for_board("3x3", progress=False)
    assert oracle.n_states == 48_713_519 and oracle.n_afterstates == 31_431_374
    start = np.array([[1, 0, 0], [0, 0, 0], [0, 0, 1]])
    assert oracle.value(start) == pytest.approx(np.nanmax(oracle.q_values(start)))
    slack = 4.5 * oracle.value_error[0] * oracle.start_value + 1e-9
    assert oracle.evaluate(OptimalAgent(oracle), progress=False).value == pytest.approx(oracle.start_value, abs=slack)


@pytest.mark.slow
def test_v1_and_v2_oracles_agree_on_2x4_samples(tmp_path):
    """The 2x4 game solved into both formats: Q-values of about 140,000 sampled states within the v2 bound, optimal
    action sets related as on 2x3 (v2's contain v1's; equal unless the exact gap is within 4.5 bounds)."""
    spec = SolveSpec.parse("2x4")
    build(spec, tmp_path / "v1.h5", progress=False, format_version=1)
    v1, v2 = Oracle.open(tmp_path / "v1.h5"), Oracle.for_board("2x4", progress=False)
    rng = np.random.default_rng(7)
    with Table(tmp_path / "v1.h5") as t:
        ages = t.ages[rng.integers(0, t.ages.size, 400)]
        layers = (t.layer(a, names=("states",))["states"] for a in np.unique(ages))
        ids = np.concatenate([rng.choice(s, min(500, s.size)) for s in layers if s.size])
    assert ids.size > 100_000
    q1, q2 = v1.q_values(ids), v2.q_values(ids)
    legal = ~np.isnan(q1)
    np.testing.assert_array_equal(legal, ~np.isnan(q2))
    rel = v2.value_error[0]
    assert np.all(np.abs(q1 - q2)[legal] <= rel * np.abs(q1)[legal])
    m1, m2 = v1.optimal_mask(q1), v2.optimal_mask(q2)
    assert np.all(m2 | ~m1)
    top = np.where(legal, q1, -np.inf).max(axis=1, keepdims=True)
    clear = np.where(legal & ~m1, top - q1, np.inf).min(axis=1) > 4.5 * rel * np.maximum(1.0, top[:, 0])
    np.testing.assert_array_equal(m1[clear], m2[clear])
    assert clear.mean() > 0.95  # measured: 98.7% of these samples are clear of near ties


def test_4x3_directory_table_serves_the_gym_env_and_the_oracle_lazily(tmp_path):
    """Solved2048-4x3 with oracle_table=DIR (a capped 4x3 game, P(16), small enough to build here): the env's
    Q-values are the oracle's, and the oracle keeps only about memory_limit bytes of layers open."""
    table = tmp_path / "4x3-16"
    build(SolveSpec.parse("4x3", "tile:4"), table, layout="directory", progress=False)
    oracle = Oracle.open(table, memory_limit=20_000)
    assert oracle.resident_bytes == 0
    env = gym.make("Solved2048-4x3", oracle_table=table)
    obs, info = env.reset(seed=5)
    steps = 0
    while True:
        board = env.unwrapped.board
        np.testing.assert_array_equal(info["q_values"], oracle.q_values(board))
        legal = np.flatnonzero(~np.isnan(info["q_values"]))
        assert legal.size and 0.0 <= np.nanmax(info["q_values"]) <= 1.0  # probabilities of making 16
        obs, reward, terminated, truncated, info = env.step(int(legal[steps % legal.size]))
        steps += 1
        if terminated or truncated:
            break
    assert steps > 5
    largest = max(layer.nbytes for layer, _ in oracle._layers._open.values())
    assert 0 < oracle.resident_bytes <= 20_000 + largest
    with pytest.raises(TableError, match=r"solves 4x3 tile:4.*not the game of this env \(3x3"):
        gym.make("Solved2048-3x3", oracle_table=table)


@pytest.mark.slow
def test_processes_asking_for_one_missing_table_build_it_once(tmp_path):
    """Parallel runs (e.g. ``experiments.train.sweep_ppo``) that all open a table not yet in the cache must not share
    one half-built work directory: each gets the same complete table."""
    import os
    import subprocess
    import sys

    code = "from oracle import Oracle; print(repr(Oracle.for_board('2x3', progress=False).start_value))"
    env = {**os.environ, "SOLVED2048_HOME": str(tmp_path)}
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(3)
    ]
    results = [run.communicate(timeout=300) for run in runs]
    assert [run.returncode for run in runs] == [0, 0, 0], [err[-2000:] for _, err in results]
    values = {out.strip() for out, _ in results}
    assert values == {repr(Oracle.for_board("2x3", progress=False).start_value)}
    assert not list(tmp_path.glob("*.work"))  # the one build finished and cleaned up


def test_regret_is_one_function_and_its_games_a_module_of_their_own():
    """``oracle.regret(agent)`` is the function; the module that plays and prices games is ``oracle.priced_games``
    (a module named like the function would be shadowed by it)."""
    import importlib

    import oracle

    module = importlib.import_module("oracle.priced_games")
    assert callable(oracle.regret) and not isinstance(oracle.regret, type(module))
    assert module.RegretReport is oracle.RegretReport and module.reenact is oracle.reenact


def test_tables_are_provisioned_by_the_solver_and_the_old_names_still_answer():
    """The cache, what builds here and building once live in ``solver.provision``; the oracle's old names give the
    same objects with a deprecation warning."""
    import oracle
    import oracle.oracle as oracle_module
    from solver import provision

    with pytest.warns(DeprecationWarning, match="moved to solver.provision.cached_table"):
        assert oracle_module.cached_table is provision.cached_table
    with pytest.warns(DeprecationWarning, match="moved to solver.provision.BUILDABLE"):
        assert oracle.BUILDABLE is provision.BUILDABLE
    with pytest.raises(AttributeError):
        oracle_module.no_such_name  # noqa: B018


def test_oracle_for_is_a_deprecated_alias_of_for_board():
    import oracle as package

    with pytest.warns(DeprecationWarning, match=r"use Oracle.for_board\(board\)"):
        old = package.oracle_for("2x2")
    assert old.start_value == Oracle.for_board("2x2", progress=False).start_value


def test_the_sb3_adapter_s_old_path_still_works_with_a_warning():
    import oracle.agent
    import oracle.sb3_policy

    with pytest.warns(DeprecationWarning, match="oracle.sb3_policy.SB3Policy moved to oracle.agent.SB3Policy"):
        assert oracle.sb3_policy.SB3Policy is oracle.agent.SB3Policy


def test_the_optimal_move_rate_counts_the_moves_that_matter(oracle_2x3):
    """The rate is the share of optimal moves among contested ones (some legal move is not optimal), recomputed
    here from the same games' per-move records; random play's raw share of optimal moves is higher."""
    from agents import RandomAgent
    from oracle import record_episodes

    seeds = range(40)
    report = oracle_2x3.regret(RandomAgent(seed=2), episodes=40, seed=0, progress=False)
    episodes = record_episodes(RandomAgent(seed=2), seeds, oracle=oracle_2x3)
    contested = optimal = moves = raw = 0
    for ep in episodes:
        for legal, best, action in zip(ep.legal, ep.optimal, ep.actions, strict=True):
            moves += 1
            raw += best[action]
            if (legal & ~best).any():
                contested += 1
                optimal += best[action]
    assert report.moves == moves and report.contested_moves == contested == report.contested_by_age.sum()
    assert 0 < contested < moves and report.optimal_move_rate == pytest.approx(optimal / contested)
    assert report.optimal_move_rate < raw / moves  # the moves that cannot go wrong no longer count
