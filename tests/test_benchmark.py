"""The benchmark CLI end to end on 2x2: files, JSON schema, numbers against the oracle, agent specs and errors."""

from __future__ import annotations

import csv
import json

import pytest

from agents import GreedyAgent, NTupleAgent, RandomAgent
from agents.registry import make_agent
from experiments import benchmark
from oracle import Oracle


def greedy_factory(rows: int, cols: int, seed: int):
    """A custom agent for the ``module:factory`` spec."""
    return GreedyAgent(seed=seed)


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    network = NTupleAgent(2, 2, tuples=[[0, 1], [0, 2]], seed=0)
    network.train(300)
    network.save(out / "net.npz")
    net = out / "net.npz"
    agents = f"random,greedy,optimal,expectimax:2,td:{net},expectimax:1:{net},test_benchmark:greedy_factory"
    benchmark.main(
        ["--board", "2x2", "--agents", agents, "--episodes", "200", "--seed", "3", "--out", str(out), "--quiet"]
    )
    return out / "2x2", json.loads((out / "2x2" / "benchmark.json").read_text())


@pytest.mark.slow
def test_files_and_schema(result):
    folder, data = result
    assert data["protocol_version"] == benchmark.PROTOCOL_VERSION
    assert (data["board"], data["episodes"], data["seed"], data["objective"]) == ("2x2", 200, 3, "score")
    labels = [
        "random",
        "greedy",
        "optimal",
        "expectimax-2",
        "td-net",
        "expectimax-1-net",
        "test_benchmark-greedy_factory",
    ]
    assert [r["label"] for r in data["agents"]] == labels
    for row in data["agents"]:
        assert set(benchmark.COLUMNS) | {"by_age"} == set(row)
        ages = row["by_age"]["ages"]
        assert ages == sorted(ages) and len(row["by_age"]["visits_per_game"]) == len(ages)
        assert sum(row["by_age"]["visits_per_game"]) * 200 == pytest.approx(row["moves"])
    with open(folder / "benchmark.csv") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["label"] for r in rows] == labels and list(rows[0]) == list(benchmark.COLUMNS)
    table = (folder / "benchmark.md").read_text()
    assert all(f"| {label} |" in table for label in labels)
    for name in ["gap-by-age.png"] + [f"agent-{label}.png" for label in labels]:
        assert (folder / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_numbers_agree_with_the_oracle(result):
    _, data = result
    oracle = Oracle.for_board("2x2")
    assert data["optimal_value"] == oracle.start_value
    rows = {r["label"]: r for r in data["agents"]}
    assert rows["optimal"]["mean_regret"] == 0 and rows["optimal"]["optimal_move_rate"] == 1
    assert rows["optimal"]["exact_value"] == pytest.approx(oracle.start_value, abs=1e-9)
    assert rows["random"]["exact_value"] == pytest.approx(oracle.evaluate(RandomAgent(), progress=False).value)
    assert rows["greedy"]["exact_value"] == rows["test_benchmark-greedy_factory"]["exact_value"]
    for r in data["agents"]:  # every exact value within the Monte-Carlo estimate's reach
        assert r["exact_value"] is not None  # a 2x2 board is always evaluated exactly
        assert abs(oracle.start_value - r["mean_regret"] - r["exact_value"]) <= 4 * r["regret_ci"] + 1e-9
        assert r["percent_of_optimal"] == pytest.approx(100 * r["mean_score"] / oracle.start_value)


def test_bad_specs_are_rejected(tmp_path):
    with pytest.raises(ValueError, match="unknown agent 'minimax'"):
        make_agent("minimax", 2, 2)
    with pytest.raises(ValueError, match="expectimax:D"):
        make_agent("expectimax:deep", 2, 2)
    with pytest.raises(FileNotFoundError, match="no file"):
        make_agent(f"td:{tmp_path}/missing.npz", 2, 2)
    with pytest.raises(ValueError, match="cannot import"):
        make_agent("no_such_module:factory", 2, 2)
    with pytest.raises(ValueError, match="needs the board's oracle"):
        make_agent("optimal", 2, 2)
    with pytest.raises(ValueError, match="same label"):
        benchmark.run("2x2", ["random", "random"], out=tmp_path, progress=False)
    net = NTupleAgent(3, 3, seed=0)
    net.save(tmp_path / "w3.npz")
    with pytest.raises(ValueError, match="3x3, not 2x2"):
        make_agent(f"td:{tmp_path}/w3.npz", 2, 2)
