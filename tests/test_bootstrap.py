"""The suite's bootstrap (experiments.suite.bootstrap): Monte-Carlo error inside the intervals, checked against the
sampling distributions it stands for, rliable's intervals and probability of improvement on exact scores, and
the rankings built on it."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from experiments.suite.bootstrap import (
    ScoreCells,
    improvement,
    intervals,
    probability_of_improvement,
    statistics,
)

REGISTRY = Path(__file__).resolve().parents[1] / "docs" / "reference" / "suite-v2"


def success_cell(rate: float, games: int, optimum: float = 1.0) -> ScoreCells:
    """One run of one success task, its rate estimated from ``games`` games."""
    return ScoreCells(np.array([[rate / optimum]]), np.array([[games]]), np.array([optimum]), np.zeros((1, 1)))


def test_a_single_monte_carlo_success_rate_gets_the_binomial_interval():
    """An agent scored once, 300 successes in 1,000 games on a task of V* = 0.75: the interval of its mean is
    that of the binomial proportion (normal approximation: ±1.96 sqrt(p(1-p)/n)), normalized by V*; none in
    1,000 games, Jeffreys' interval."""
    cells = success_cell(0.3, 1000, optimum=0.75)
    low, high = intervals(cells, reps=8000)[:, 1]  # the mean's interval
    half = 1.96 * math.sqrt(0.3 * 0.7 / 1000) / 0.75
    assert low == pytest.approx(0.4 - half, abs=0.004) and high == pytest.approx(0.4 + half, abs=0.004)
    exact = ScoreCells.exact([[0.4]])
    from scipy.stats import beta

    none = intervals(success_cell(0.0, 1000), reps=8000)[:, 1]  # 0 of 1,000: Jeffreys' interval, not a point
    assert none[0] == 0.0  # the interval holds the estimate
    assert none[1] == pytest.approx(beta.ppf(0.975, 0.5, 1000.5), rel=0.05)
    point = intervals(exact, reps=100)  # no sampling error: IQM, mean, median and gap are points
    assert np.all(point[:, :3] == 0.4) and np.all(point[:, 3] == pytest.approx(0.6))


def test_a_single_monte_carlo_mean_score_gets_its_normal_interval():
    cells = ScoreCells(np.array([[0.5]]), np.zeros((1, 1), np.int64), np.array([1000.0]), np.array([[0.02]]))
    low, high = intervals(cells, reps=8000)[:, 1]
    assert low == pytest.approx(0.5 - 1.96 * 0.02, abs=0.003) and high == pytest.approx(0.5 + 1.96 * 0.02, abs=0.003)


def test_exact_scores_get_rliables_intervals():
    """Without Monte-Carlo cells the bootstrap is rliable's stratified bootstrap: its intervals agree with
    rliable's within the error of 4,000 replicates."""
    from rliable import library as rly

    from experiments.suite.aggregate import point_estimates

    scores = np.random.default_rng(3).beta(2, 3, size=(5, 4))
    np.random.seed(0)  # noqa: NPY002  (rliable draws from numpy's global generator)
    _, theirs = rly.get_interval_estimates({"a": scores}, point_estimates, reps=4000)
    ours = intervals(ScoreCells.exact(scores), reps=4000)
    np.testing.assert_allclose(ours, theirs["a"], atol=0.02)
    assert np.all(ours[0] < ours[1] + 1e-12)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_the_probability_of_improvement_is_rliables(m, n, tasks, seed):
    """The point estimate is rliable's P(X > Y) (Mann-Whitney U / mn per task, averaged), ties included."""
    from rliable import metrics

    rng = np.random.default_rng(seed)
    x = rng.integers(0, 4, size=(m, tasks)) / 4  # coarse values: many ties
    y = rng.integers(0, 4, size=(n, tasks)) / 4
    ours = improvement(x[None], y[None])[0]
    assert ours == pytest.approx(metrics.probability_of_improvement(x, y), abs=1e-12)
    point, (low, high) = probability_of_improvement(ScoreCells.exact(x), ScoreCells.exact(y), reps=200)
    assert point == pytest.approx(ours) and 0 <= low <= high <= 1


def test_monte_carlo_error_widens_the_probability_of_improvement():
    """Two agents scored once, 0.50 and 0.52 from 1,000 games each: exact, one is better for sure (P = 1, a
    point); with their sampling error the interval spans 1/2.  Far apart (0.50 and 0.70) it stays at 1."""
    near = probability_of_improvement(success_cell(0.52, 1000), success_cell(0.50, 1000), reps=2000)
    assert near[0] == 1.0 and near[1][0] < 0.5 < near[1][1]
    exact = probability_of_improvement(ScoreCells.exact([[0.52]]), ScoreCells.exact([[0.50]]), reps=200)
    assert exact == (1.0, (1.0, 1.0))
    far = probability_of_improvement(success_cell(0.70, 1000), success_cell(0.50, 1000), reps=2000)
    assert far[1][0] == 1.0
    # a Monte-Carlo 0 against an exact 0 ties (P = 1/2); every redraw of the rate is above 0, a win: the interval
    # still holds the observed point
    tie = probability_of_improvement(success_cell(0.0, 1000), ScoreCells.exact([[0.0]]), reps=500)
    assert tie[0] == 0.5 and tie[1][0] <= 0.5 <= tie[1][1] == 1.0


def test_statistics_are_rliables_on_each_replicate():
    from experiments.suite.aggregate import point_estimates

    x = np.random.default_rng(0).random((3, 6, 4))
    ours = statistics(x)
    for i in range(3):
        np.testing.assert_allclose(ours[i], point_estimates(x[i]), rtol=1e-12)


def test_cells_of_a_registry_entry_follow_each_runs_method():
    """expectimax-2 of the v2 registry: exact on 2x3 and 2x4, Monte Carlo elsewhere: the games of each success
    rate, the standard error of the 3x3 mean score from its recorded interval."""
    data = json.loads((REGISTRY / "expectimax-2.json").read_text())
    cells = ScoreCells.of_result(data)
    tasks = data["tasks"]
    assert cells.shape == (1, len(tasks))
    for j, task in enumerate(tasks):
        run = data["runs"][task][0]
        if run["method"] == "exact":
            assert cells.episodes[0, j] == 0 and cells.std_error[0, j] == 0
        elif data["family"][task] == "success":
            assert cells.episodes[0, j] == run["episodes"] == 1000 and cells.std_error[0, j] == 0
            assert cells.optimum[j] == run["optimal_value"]
            assert cells.normalized[0, j] * cells.optimum[j] == pytest.approx(run["value"])
        else:
            low, high = run["normalized_ci"]
            assert cells.std_error[0, j] == pytest.approx((high - low) / 3.92) and cells.episodes[0, j] == 0
    some = cells.take([tasks.index("3x3"), tasks.index("t-512")])
    assert some.shape == (1, 2) and some.monte_carlo and not cells.take([0, 1]).monte_carlo
    data["runs"]["3x3"][0]["normalized"] = 0.1
    with pytest.raises(ValueError, match="3x3, run 0: its record's score is not the matrix's"):
        ScoreCells.of_result(data)


def test_the_ranking_uses_the_probability_of_improvement_and_leaves_the_floor_unranked():
    from experiments.suite.aggregate import aggregate_table
    from experiments.suite.registry import ranking

    rng = np.random.default_rng(0)
    cells = {
        "high": ScoreCells.exact(0.60 + 0.01 * rng.random((5, 3))),
        "twin": ScoreCells.exact(0.60 + 0.01 * rng.random((5, 3))),
        "low": ScoreCells.exact(0.20 + 0.01 * rng.random((5, 3))),
        "zero": ScoreCells.exact(np.full((5, 3), 1e-6)),
        "nil": ScoreCells.exact(np.full((5, 3), 1e-9)),
    }
    table = aggregate_table(cells, reps=200)
    text = ranking(table, cells, list(cells), reps=200)
    first, second = sorted(["high", "twin"], key=lambda n: -table[n]["IQM"]["point"])
    assert text.startswith(f"{first} 0.60") and f") {second} 0.60" in text
    assert "> (P 1.00 [1.00, 1.00]) low 0.20" in text
    assert text.endswith("; below 1e-3, not ranked: zero, nil")
    # the IQM orders, the probability of improvement judges: where they disagree, `<`
    table["low"]["IQM"]["point"] = 0.9
    assert ranking(table, cells, ["high", "low"], reps=200).startswith("low 0.900 < (P 0.00 [0.00, 0.00]) high")
