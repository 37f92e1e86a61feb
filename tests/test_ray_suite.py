"""``run --address`` and ``tune --address`` on a private two-node Ray cluster on the loopback: a run's cells (at a tenth
of the budget) give the same suite.json as one process (timings and provenance aside; both trained with a
hyperparameter file), a tuning's trials and its baseline finish on the cluster with their log and files, and every
process of the cluster uses loopback addresses only (the socket watch of the Ray tests)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from ray_helpers import require_ray
from ray_suite_run import SCALE
from sockets import SocketWatch, unrelated_traffic

require_ray()

from experiments.suite.runner import run_suite, without_timings  # noqa: E402

pytestmark = pytest.mark.slow  # starts a Ray cluster


def test_a_run_and_a_tuning_spread_over_two_nodes_on_the_loopback(tmp_path):
    spread = tmp_path / "spread"
    (tmp_path / "hyperparams").mkdir()
    (tmp_path / "hyperparams" / "2x3.toml").write_text('schedule = "0:0.2,0.5:0.05"\ninit = 0.5\n')
    script = Path(__file__).with_name("ray_suite_run.py")
    with unrelated_traffic("127.0.0.2", pause=0.05) as other:
        watch = SocketWatch(tmp_path / "trace", treat_as_remote=[other.address])
        args = [sys.executable, str(script), str(tmp_path)]
        with watch.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
            _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-5000:]
    assert {"gcs_server", "raylet"} <= {o.name for o in watch.listeners()}
    assert watch.off_loopback() == []
    other.check_not_blamed(watch)
    hp = tmp_path / "hyperparams"
    td = "experiments.suite.trainers:td"
    local = run_suite(
        tmp_path / "local", 2, trainer=td, tasks="2x3", progress=False, hyperparams=hp, budget_scale=SCALE
    )
    spread_result = json.loads((spread / "suite.json").read_text())
    assert without_timings(spread_result) == without_timings(local)
    digest = hashlib.sha256((hp / "2x3.toml").read_bytes()).hexdigest()
    assert [r["hyperparams"] for r in spread_result["runs"]["2x3"]] == [digest, digest]
    assert [r["counted_steps"] for r in spread_result["runs"]["2x3"]] == [100_000, 100_000]
    rows = [json.loads(line) for line in (tmp_path / "tune" / "trials.jsonl").read_text().splitlines()]
    assert [r["state"] for r in rows] == ["COMPLETE"] * 3 and all(0 < r["value"] < 1 for r in rows)
    assert (tmp_path / "tune" / "2x3.toml").read_text().startswith("# td on task 2x3")
    from experiments.suite import get_task
    from experiments.suite.trainers import td as td_trainer
    from experiments.suite.tuning import TUNING_SEED, trial_score

    own = json.loads((tmp_path / "tune" / "baseline.json").read_text())  # scored on the cluster as one process does
    assert own["value"] == trial_score(td_trainer, get_task("2x3"), 2000, [TUNING_SEED], {}) and own["seconds"] > 0
