"""The training scripts end to end on 2x2 (tiny budgets): files written, summaries from the oracle, agents that load."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents.ntuple import TrainingDiverged
from agents.registry import make_agent
from experiments.train import td as train_td
from oracle import Oracle


def test_train_td_writes_weights_and_an_exact_summary(tmp_path):
    out = tmp_path / "td.npz"
    summary = train_td.train(train_td.Args(board="2x2", minutes=0, games=3000, round=500, out=str(out)))
    assert summary["games"] == 3000 and summary["moves"] > 3000
    saved = json.loads(out.with_suffix(".json").read_text())
    exact = Oracle.for_board("2x2").evaluate(make_agent(f"td:{out}", 2, 2), progress=False)
    assert saved["exact"]["value"] == pytest.approx(exact.value)
    assert saved["schedule"] == [list(x) for x in train_td.parse_schedule(train_td.DEFAULT_SCHEDULE)]
    assert 0 < saved["exact"]["percent_of_optimal"] <= 100 + 1e-9


def test_3x3_trains_on_its_own_schedule_unless_one_is_given(tmp_path):
    base = dict(board="3x3", minutes=0, games=200, round=100, evaluate=False, threads=1)
    summary = train_td.train(train_td.Args(**base, out=str(tmp_path / "a.npz")))
    assert summary["schedule"] == train_td.parse_schedule(train_td.BOARD_SCHEDULES[3, 3])
    summary = train_td.train(train_td.Args(**base, schedule="0:0.3", out=str(tmp_path / "b.npz")))
    assert summary["schedule"] == [(0.0, 0.3)]


def test_a_diverging_network_stops_with_a_clear_error_and_keeps_its_checkpoint(tmp_path):
    """A learning rate far too large makes the weights overflow to infinities and NaNs, where no move has a value:
    training stops with an error that says so and how to fix it, and the checkpoint on disk is not overwritten by
    the broken weights."""
    out = tmp_path / "td.npz"
    base = dict(board="2x2", minutes=0, round=200, evaluate=False, test_games=0, threads=1, out=str(out))
    train_td.train(train_td.Args(**base, games=200))
    before = out.read_bytes()
    with pytest.raises(TrainingDiverged, match=r"(?s)diverged at learning rate 1e\+30 on 2x2.*--schedule.*kept at"):
        train_td.train(train_td.Args(**base, games=2000, schedule="0:1e30"))
    assert out.read_bytes() == before


def test_schedule_parsing():
    assert train_td.parse_schedule("0:0.5,0.5:0.1") == [(0.0, 0.5), (0.5, 0.1)]
    assert train_td.alpha_at([(0.0, 0.5), (0.5, 0.1)], 0.7) == 0.1
    for bad in ("0.5", "0.1:0.5", "0:0.5,0.3:0.1,0.2:0.1", "0:-1"):
        with pytest.raises(ValueError, match="schedule"):
            train_td.parse_schedule(bad)


@pytest.mark.slow
def test_train_ppo_saves_a_model_the_benchmark_can_load(tmp_path):
    pytest.importorskip("sb3_contrib")
    from experiments.train import ppo as train_ppo

    args = train_ppo.Args(
        board="2x2",
        timesteps=512,
        n_envs=2,
        n_steps=128,
        batch_size=64,
        n_epochs=1,
        checkpoint_every=256,
        eval_episodes=20,
        out=str(tmp_path / "ppo"),
    )
    summary = train_ppo.train(args)
    assert (tmp_path / "ppo" / "model.zip").exists() and len(list((tmp_path / "ppo" / "checkpoints").iterdir())) >= 2
    agent = make_agent(f"ppo:{tmp_path / 'ppo' / 'model.zip'}", 2, 2)
    masks = np.array([[True, False, False, True]] * 64)
    actions = agent.act_batch(np.random.default_rng(0).integers(0, 4, (64, 2, 2)), masks)
    assert masks[np.arange(64), actions].all()  # masked: only legal moves
    exact = Oracle.for_board("2x2").evaluate(agent, progress=False)
    assert summary["exact"]["value"] == pytest.approx(exact.value)
    with pytest.raises(
        ValueError,
        match=r"trained on 2x2 boards \(observation space Box\(0, 1, \(6, 2, 2\), uint8\)\); this task is 3x3 "
        r"\(observation space Box\(0, 10, \(3, 3\)",
    ):
        make_agent(f"ppo:{tmp_path / 'ppo' / 'model.zip'}", 3, 3)


@pytest.mark.slow
def test_train_ppo_learning_curve_with_log_rewards_and_exponent_boards(tmp_path):
    pytest.importorskip("sb3_contrib")
    from experiments.diagnostics.learning_curve import read_curve
    from experiments.train import ppo as train_ppo

    args = train_ppo.Args(
        board="2x3",
        timesteps=1024,
        n_envs=4,
        n_steps=64,
        batch_size=64,
        n_epochs=1,
        obs="exponent",
        reward="log",
        eval_episodes=10,
        eval_every="512",
        curve_episodes=20,
        out=str(tmp_path / "ppo"),
    )
    summary = train_ppo.train(args)
    rows = read_curve(tmp_path / "ppo" / "curve.csv")
    assert [r["env_steps"] for r in rows][0] == 0 and rows[-1]["env_steps"] == 1024 and len(rows) >= 3
    assert all(r["method"] == "regret" and r["value_ci"] > 0 for r in rows)
    agent = make_agent(f"ppo:{tmp_path / 'ppo' / 'model.zip'}", 2, 3)
    assert agent.encoding == "exponent" and summary["curve"].endswith("curve.csv")
    with pytest.raises(ValueError, match="--vec native"):
        train_ppo.make_model(train_ppo.Args(board="2x3", vec="dummy", reward="log"))


@pytest.mark.slow
def test_ppo_sweep_stops_on_time_and_tabulates_each_setting(tmp_path):
    pytest.importorskip("sb3_contrib")
    import csv

    from experiments.cli import parse_dataclass
    from experiments.train import sweep_ppo

    args = parse_dataclass(
        sweep_ppo.Args,
        [
            "--board",
            "2x2",
            "--minutes",
            "0.02",
            "--jobs",
            "2",
            "--only",
            "baseline,ent-0",
            "--extra",
            "--n-envs 4 --n-steps 32 --batch-size 64",
            "--eval-episodes",
            "30",
            "--out",
            str(tmp_path),
        ],
    )
    sweep_ppo.run(args)
    with open(tmp_path / "sweep.csv") as f:
        rows = list(csv.DictReader(f))
    assert [r["setting"] for r in rows] == ["baseline", "ent-0"] and list(rows[0]) == list(sweep_ppo.COLUMNS)
    for r in rows:
        summary = json.loads((tmp_path / r["setting"] / "summary.json").read_text())
        regret = summary["regret"]
        assert int(r["steps"]) == summary["steps"] < 1_000_000  # the time budget stopped it, not the steps
        assert summary["train_seconds"] >= 1.2  # trained until its 0.02 minutes were up
        assert float(r["percent_score"]) == pytest.approx(100 * regret["mean_score"] / regret["start_value"], abs=0.01)
        v_pi = regret["start_value"] - regret["mean_regret"]
        assert float(r["percent_regret"]) == pytest.approx(100 * v_pi / regret["start_value"], abs=0.01)
    assert "--ent-coef 0" in rows[1]["flags"]
    with pytest.raises(ValueError, match="unknown settings"):
        sweep_ppo.run(parse_dataclass(sweep_ppo.Args, ["--only", "warp-drive", "--out", str(tmp_path)]))
