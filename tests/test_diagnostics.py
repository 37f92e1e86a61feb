"""Learning diagnostics: supervised fitting to the optimal values (kernel against a pure-Python reference, the
fit on a 2x3 table), the optimal policy's afterstate visits, exact learning curves, and imitation (behaviour
cloning, DAgger) of the oracle's moves."""

from __future__ import annotations

import csv

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents.fit import _nlms_step, fit_values, predict_values, weighted_mse
from agents.imitation import (
    PolicyNetAgent,
    _pair_pass,
    action_from_frame,
    canonical_frame,
    collect_states,
    fit_ntuple_actions,
    fit_policy_net,
    masks_to_frame,
)
from agents.ntuple import NTupleAgent
from agents.registry import make_agent
from agents.simple import OptimalAgent
from env2048 import board as B
from env2048.tables import board_tables
from experiments.cli import parse_dataclass
from experiments.diagnostics import capacity, curves
from experiments.diagnostics.learning_curve import COLUMNS, EvalEvery, LearningCurve, read_curve
from experiments.train import imitate
from experiments.train import td as train_td
from oracle import Oracle


@pytest.fixture(scope="module")
def oracle_2x3():
    return Oracle.for_board("2x3", progress=False)


def reference_slots(agent: NTupleAgent, board_id: int) -> list[int]:
    """The weight index each symmetric tuple image reads, computed from the definition."""
    grid = B.unpack(np.uint64(board_id), agent.rows, agent.cols).ravel().astype(int)
    base, shift, stages, size = agent.layout
    age = sum(1 << int(e) for e in grid if e)
    stage = min(age >> shift, stages - 1)
    out = []
    for cells, t in zip(agent.rows_cells, agent.rows_tuple, strict=True):
        idx = 0
        for c in cells:
            if c < 0:
                break
            idx = idx * base + min(int(grid[c]), base - 1)
        out.append(stage * size + int(agent.offsets[t]) + idx)
    return out


@settings(max_examples=40)
@given(st.integers(0, 2**36 - 1), st.floats(-50, 50), st.floats(0.05, 1.0), st.integers(0, 3))
def test_nlms_step_matches_the_reference(raw, target, alpha, seed):
    """One step: V moves by alpha * (target - V), the error split by the squared multiplicities of the slots."""
    agent = NTupleAgent(3, 3, tuples=[[0, 1, 2], [0, 4, 8], [1, 4]], stages=2, stage_shift=5, seed=seed)
    agent.weights[:] = np.random.default_rng(seed).normal(size=agent.weights.size).astype(np.float32)
    grid = [(raw >> (4 * c)) & 7 for c in range(9)]  # exponents 0..7
    b = int(B.pack(np.array(grid, np.uint8).reshape(3, 3)))
    slots = reference_slots(agent, b)
    value = float(sum(agent.weights[s] for s in slots))
    norm = sum(slots.count(s) for s in slots)
    expected = agent.weights.astype(np.float64).copy()
    for s in slots:
        expected[s] += alpha * (target - value) / norm
    before = _nlms_step(np.uint64(b), target, alpha, *agent._args(), np.empty(len(slots), np.int64))
    assert before == pytest.approx(value, rel=1e-5, abs=1e-5)
    np.testing.assert_allclose(agent.weights, expected, rtol=1e-5, atol=1e-5)
    after = float(sum(agent.weights[s] for s in slots))
    assert after == pytest.approx(value + alpha * (target - value), rel=1e-4, abs=1e-4)


@pytest.mark.slow
def test_fit_to_the_optimal_values_plays_optimally_on_2x3(oracle_2x3):
    ids, targets = capacity.table_afterstates(oracle_2x3)
    assert ids.size == oracle_2x3.n_afterstates
    agent = NTupleAgent(2, 3, seed=0)
    before = weighted_mse(agent, ids, targets)
    records = fit_values(agent, ids, targets, epochs=3, alpha=1.0, decay=1.0, progress=False)
    after = weighted_mse(agent, ids, targets)
    assert after < 1e-6 * before and records[0].train_mse > records[-1].train_mse
    np.testing.assert_allclose(predict_values(agent, ids), targets, rtol=1e-5, atol=1e-3)
    exact = oracle_2x3.evaluate(agent, progress=False)
    assert exact.gap == pytest.approx(0.0, abs=1e-6 * oracle_2x3.start_value)
    assert exact.value == pytest.approx(oracle_2x3.start_value, rel=1e-6)


def test_a_smaller_step_still_reduces_the_loss(oracle_2x3):
    ids, targets = capacity.table_afterstates(oracle_2x3)
    agent = NTupleAgent(2, 3, tuples=[[0, 1, 2], [0, 1, 3, 4]], seed=0)
    losses = [weighted_mse(agent, ids, targets)]
    for e in range(3):
        fit_values(agent, ids, targets, epochs=1, alpha=0.3, decay=1.0, seed=e, progress=False)
        losses.append(weighted_mse(agent, ids, targets))
    assert losses[-1] < losses[1] < losses[0]
    with pytest.raises(ValueError, match="alpha and decay"):
        fit_values(agent, ids, targets, alpha=1.5)


def test_optimal_visits(oracle_2x3):
    """The afterstate masses of the optimal policy sum to its expected number of moves; each value is the
    table's afterstate value."""
    ids, values, mass = capacity.optimal_visits(oracle_2x3, every_move=False, progress=False)
    assert np.all(np.diff(ids.astype(np.float64)) > 0) and (mass > 0).all()
    exact = oracle_2x3.evaluate(capacity.OptimalAgent(oracle_2x3), progress=False)
    assert mass.sum() == pytest.approx(exact.visits.sum(), rel=1e-9)
    every, every_values, every_mass = capacity.optimal_visits(oracle_2x3, every_move=True, progress=False)
    assert set(ids.tolist()) < set(every.tolist())  # the alternatives' afterstates come in too
    assert every_mass.sum() > mass.sum()
    table_ids, table_values = capacity.table_afterstates(oracle_2x3)
    order = np.argsort(table_ids)
    pos = np.searchsorted(table_ids[order], ids)
    np.testing.assert_array_equal(table_ids[order][pos], ids)
    np.testing.assert_allclose(table_values[order][pos], values, rtol=1e-9, atol=1e-9)
    pos = np.searchsorted(table_ids[order], every)
    np.testing.assert_allclose(table_values[order][pos], every_values, rtol=1e-9, atol=1e-9)
    agent = NTupleAgent(2, 3, seed=0)
    before = weighted_mse(agent, ids, values, mass)
    fit_values(agent, ids, values, epochs=10, alpha=1.0, decay=1.0, sample_weights=mass, progress=False)
    assert weighted_mse(agent, ids, values, mass) < 0.01 * before  # draws by mass: the rarest may be missed


def reference_value(agent: NTupleAgent, board_id: int) -> float:
    return float(sum(float(agent.weights[s]) for s in reference_slots(agent, board_id)))


def reference_nlms(agent: NTupleAgent, weights: np.ndarray, board_id: int, target: float, alpha: float) -> None:
    slots = reference_slots(agent, board_id)
    value = float(sum(weights[s] for s in slots))
    norm = sum(slots.count(s) for s in slots)
    for s in slots:
        weights[s] += alpha * (target - value) / norm


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**36 - 1), st.integers(1, 15), st.integers(0, 3), st.floats(0.1, 1.0), st.floats(0, 20))
def test_pair_pass_matches_the_reference(raw, optimal_bits, seed, alpha, margin):
    """One ranking step on a (board, worse move) pair: the optimal move valued most by the network is pushed up
    and the worse move down, each by alpha times half the violation of the margin."""
    agent = NTupleAgent(3, 3, tuples=[[0, 1, 2], [0, 4, 8], [1, 4]], stages=2, stage_shift=5, seed=seed)
    agent.weights[:] = np.random.default_rng(seed).normal(scale=5, size=agent.weights.size).astype(np.float32)
    b = int(B.pack(np.array([(raw >> (4 * c)) & 7 for c in range(9)], np.uint8).reshape(3, 3)))
    legal = B.legal_actions(np.uint64(b), 3, 3)
    optimal = np.array([bool(optimal_bits >> a & 1) for a in range(4)]) & legal
    worse = [a for a in range(4) if legal[a] and not optimal[a]]
    if not optimal.any() or not worse:
        return
    moves = {a: B.move(np.array([b], np.uint64), a, 3, 3) for a in range(4) if legal[a]}
    after = {a: int(m[0][0]) for a, m in moves.items()}
    reward = {a: float(m[1][0]) for a, m in moves.items()}
    q = {a: reward[a] + reference_value(agent, after[a]) for a in after}
    best = max((a for a in range(4) if optimal[a]), key=lambda a: q[a])  # first on ties, as the kernel
    violation = margin + q[worse[0]] - q[best]
    expected = agent.weights.astype(np.float64).copy()
    if violation > 0:
        reference_nlms(agent, expected, after[best], q[best] - reward[best] + violation / 2, alpha)
        reference_nlms(agent, expected, after[worse[0]], q[worse[0]] - reward[worse[0]] - violation / 2, alpha)
    loss = _pair_pass(
        np.array([b], np.uint64),
        optimal[None],
        np.array([worse[0]], np.int64),
        np.zeros(1, np.int64),
        alpha,
        margin,
        board_tables(3, 3),
        *agent._args(),
    )
    assert loss == pytest.approx(max(violation, 0.0), rel=1e-4, abs=1e-4)
    np.testing.assert_allclose(agent.weights, expected, rtol=1e-4, atol=1e-4)


def test_ranking_pairs_carry_visit_times_regret(oracle_2x3):
    """One pair per legal non-optimal move; over the moves a policy makes, the pairs' weights sum to V* − V^π
    (the performance-difference identity the decision-aware fit relies on)."""
    agent = NTupleAgent(2, 3, seed=1)
    agent.weights[:] = np.random.default_rng(1).normal(scale=50, size=agent.weights.size).astype(np.float32)
    exact, pairs = capacity.regret_pairs(oracle_2x3, agent, progress=False)
    q = oracle_2x3.q_values(pairs.ids)
    optimal = oracle_2x3.optimal_mask(q)
    np.testing.assert_array_equal(pairs.optimal, optimal)
    rows = np.arange(len(pairs))
    assert (~np.isnan(q[rows, pairs.worse])).all() and not optimal[rows, pairs.worse].any()
    boards = np.unique(pairs.ids)
    per_board = np.bincount(np.searchsorted(boards, pairs.ids), minlength=boards.size)
    expected = ~np.isnan(oracle_2x3.q_values(boards)) & ~oracle_2x3.optimal_mask(oracle_2x3.q_values(boards))
    np.testing.assert_array_equal(per_board, expected.sum(axis=1))
    chosen = agent.act_batch(B.unpack(pairs.ids, 2, 3), B.legal_actions(pairs.ids, 2, 3))
    mistakes = chosen == pairs.worse.astype(np.int64)
    assert mistakes.any()
    # moves within the tie tolerance of the best are no pairs but give away up to that tolerance per move
    rel_tol, abs_tol = oracle_2x3.tie_tolerance
    tied_bound = exact.visits.sum() * (rel_tol * oracle_2x3.start_value + abs_tol)
    assert abs(pairs.weight[mistakes].sum() - exact.gap) <= tied_bound < 1e-3 * exact.gap


def test_decision_aware_fit_improves_the_greedy_policy(oracle_2x3, tmp_path):
    start = NTupleAgent(2, 3, seed=0)
    start.weights[:] = np.random.default_rng(0).normal(scale=50, size=start.weights.size).astype(np.float32)
    start.save(tmp_path / "start.npz")
    args = parse_dataclass(
        capacity.Args,
        [
            "--board",
            "2x3",
            "--weighting",
            "regret",
            "--init",
            str(tmp_path / "start.npz"),
            "--rounds",
            "4",
            "--epochs",
            "2",
            "--samples",
            "100000",
            "--out",
            str(tmp_path / "r.npz"),
        ],
    )
    summary = capacity.run(args, progress=False)
    shares = [r["percent_of_optimal"] for r in summary["rounds"]]
    assert shares[0] == pytest.approx(oracle_2x3.evaluate(start, progress=False).percent_of_optimal)
    assert summary["percent_of_optimal"] == max(shares) > shares[0] + 20
    kept = oracle_2x3.evaluate(NTupleAgent.load(tmp_path / "r.npz"), progress=False)
    assert kept.percent_of_optimal == pytest.approx(summary["percent_of_optimal"])
    with pytest.raises(ValueError, match="--init is for"):
        capacity.run(parse_dataclass(capacity.Args, ["--board", "2x3", "--init", str(tmp_path / "start.npz")]))


def test_capacity_cli_writes_the_network_and_summary(tmp_path):
    args = parse_dataclass(
        capacity.Args,
        ["--board", "2x3", "--epochs", "2", "--alpha", "1", "--decay", "1", "--out", str(tmp_path / "c.npz")],
    )
    summary = capacity.run(args, progress=False)
    assert summary["percent_of_optimal"] == pytest.approx(100.0, abs=1e-4)
    assert (tmp_path / "c.npz").exists() and (tmp_path / "c.json").exists()
    assert NTupleAgent.load(tmp_path / "c.npz").weights.size == summary["n_weights"]
    with pytest.raises(ValueError, match="weighting"):
        capacity.run(parse_dataclass(capacity.Args, ["--board", "2x3", "--weighting", "often"]), progress=False)


def test_eval_every_parsing():
    assert EvalEvery.parse("60s") == EvalEvery(60.0, "seconds")
    assert EvalEvery.parse("500000") == EvalEvery(500000.0, "steps")
    for bad in ("", "0", "-5s", "often"):
        with pytest.raises(ValueError, match="eval-every"):
            EvalEvery.parse(bad)


@pytest.mark.slow
def test_train_td_writes_an_exact_learning_curve(tmp_path):
    out = tmp_path / "td.npz"
    summary = train_td.train(
        parse_dataclass(
            train_td.Args,
            [
                "--board",
                "2x3",
                "--games",
                "3000",
                "--round",
                "500",
                "--minutes",
                "0",
                "--eval-every",
                "2000",
                "--out",
                str(out),
            ],
        )
    )
    path = tmp_path / "td.curve.csv"
    with open(path, newline="") as fh:
        assert tuple(csv.DictReader(fh).fieldnames) == COLUMNS
    rows = read_curve(path)
    assert rows[0]["checkpoint"] == 0 and rows[0]["env_steps"] == 0
    steps = [r["env_steps"] for r in rows]
    assert steps == sorted(steps) and len(rows) >= 3 and rows[-1]["games"] == 3000
    assert {r["method"] for r in rows} == {"exact"}
    assert rows[-1]["percent_of_optimal"] == pytest.approx(summary["exact"]["percent_of_optimal"])
    agent = NTupleAgent.load(out)
    assert rows[-1]["value"] == pytest.approx(Oracle.for_board("2x3").evaluate(agent, progress=False).value)
    curves.main([str(path), str(path), "--labels", "a,b", "--out", str(tmp_path / "c.png")])
    assert (tmp_path / "c.png").stat().st_size > 0


def test_regret_checkpoints_have_a_confidence_interval(oracle_2x3, tmp_path):
    curve = LearningCurve(tmp_path / "r.curve.csv", oracle_2x3, EvalEvery(10, "steps"), method="regret", episodes=40)
    agent = NTupleAgent(2, 3, seed=0)
    row = curve.record(agent, env_steps=0, train_seconds=0.0)
    report = oracle_2x3.regret(agent, episodes=40, seed=1_000_000, progress=False)
    assert row["method"] == "regret" and row["value_ci"] > 0
    assert row["value"] == pytest.approx(oracle_2x3.start_value - report.mean_regret)
    assert not curve.due(5, 0.0) and curve.due(10, 0.0)
    with pytest.raises(ValueError, match="eval method"):
        LearningCurve(tmp_path / "x.csv", oracle_2x3, None, method="guess")


# -- imitation --------------------------------------------------------------------------------------------------
@settings(max_examples=30)
@given(st.lists(st.integers(0, 4), min_size=9, max_size=9), st.integers(0, 3))
def test_canonical_frame_maps_boards_and_moves(cells, action):
    ids = np.array([B.pack(np.array(cells, np.uint8).reshape(3, 3))], np.uint64)
    canon, which = canonical_frame(ids, 3, 3)
    assert canon[0] == B.canonical(ids, 3, 3)[0]
    np.testing.assert_array_equal(masks_to_frame(B.legal_actions(ids, 3, 3), which, 3, 3), B.legal_actions(canon, 3, 3))
    framed = masks_to_frame(np.eye(4, dtype=bool)[[action]], which, 3, 3).argmax(axis=1)
    after, reward = B.move(ids, action, 3, 3)
    after_c, reward_c = B.move(canon, framed, 3, 3)
    assert B.canonical(after, 3, 3)[0] == B.canonical(after_c, 3, 3)[0] and reward[0] == reward_c[0]
    assert action_from_frame(framed, which, 3, 3)[0] == action


@pytest.mark.slow
def test_labels_are_the_oracles_best_moves(oracle_2x3):
    """Boards met by the learner's own play (DAgger) carry the oracle's legal and optimal moves."""
    learner = NTupleAgent(2, 3, seed=0)
    data, steps = collect_states(oracle_2x3, learner, 600, seed=3, expert_fraction=0.3, expert=OptimalAgent(oracle_2x3))
    assert len(data) == 600 and steps >= 600
    for b, legal, optimal in zip(data.ids[:200], data.legal[:200], data.optimal[:200], strict=True):
        np.testing.assert_array_equal(legal, B.legal_actions(b, 2, 3))
        np.testing.assert_array_equal(optimal, oracle_2x3.best_actions(b))


def test_ranking_fit_makes_the_ntuple_network_choose_optimal_moves(oracle_2x3):
    data, _ = collect_states(oracle_2x3, OptimalAgent(oracle_2x3), 8000, seed=0)
    agent = NTupleAgent(2, 3, seed=0)
    losses = fit_ntuple_actions(agent, data, epochs=5, alpha=1.0, margin=1.0)
    assert losses[-1] < 0.05 * losses[0]
    chosen = agent.act_batch(B.unpack(data.ids, 2, 3), data.legal)
    assert data.optimal[np.arange(len(data)), chosen].mean() > 0.99


def test_policy_net_fit_save_load_and_spec(oracle_2x3, tmp_path):
    data, _ = collect_states(oracle_2x3, OptimalAgent(oracle_2x3), 3000, seed=1)
    agent = PolicyNetAgent(2, 3, kind="cnn", hidden=32, seed=0)
    losses = fit_policy_net(agent, data, epochs=4, lr=3e-3)
    assert losses[-1] < losses[0]
    boards = B.unpack(data.ids, 2, 3)
    chosen = agent.act_batch(boards, data.legal)
    assert data.legal[np.arange(len(data)), chosen].all()
    assert data.optimal[np.arange(len(data)), chosen].mean() > 0.6
    agent.save(tmp_path / "p.pt")
    again = make_agent(f"policy:{tmp_path / 'p.pt'}", 2, 3)
    np.testing.assert_array_equal(again.act_batch(boards, data.legal), chosen)
    with pytest.raises(ValueError, match="plays 2x3"):
        make_agent(f"policy:{tmp_path / 'p.pt'}", 3, 3)


def test_imitate_cli_curve_counts_labels(tmp_path):
    args = parse_dataclass(
        imitate.Args,
        [
            "--board",
            "2x3",
            "--learner",
            "ntuple",
            "--method",
            "dagger",
            "--labels",
            "900",
            "--rounds",
            "3",
            "--out",
            str(tmp_path / "d"),
        ],
    )
    summary = imitate.run(args, progress=False)
    rows = read_curve(tmp_path / "d.curve.csv")
    assert [r["labels"] for r in rows] == [300, 600, 900]
    assert [r["checkpoint"] for r in rows] == [0, 1, 2]
    assert summary["final_percent_of_optimal"] == rows[-1]["percent_of_optimal"] > 0
    assert NTupleAgent.load(tmp_path / "d.npz").rows == 2
    with pytest.raises(ValueError, match="--learner"):
        imitate.run(parse_dataclass(imitate.Args, ["--learner", "svm"]), progress=False)
