"""Run by test_ray_suite.py as the process its socket watch traces: a two-node ``ray.cluster_utils.Cluster`` on
127.0.0.1 computes a suite run (TD, two seeds, task 2x3 at a tenth of its budget, with the file in
``sys.argv[1]/hyperparams``) into ``sys.argv[1]/spread`` and a three-trial tuning of TD on 2x3 into
``sys.argv[1]/tune``, its own file's baseline a Ray task too (this process may not score it), then shuts down."""

from __future__ import annotations

import sys
from pathlib import Path

from ray_helpers import start_cluster

from experiments.suite import tuning
from experiments.suite.runner import run_suite
from experiments.suite.tuning import tune

#: The share of the task's budget each cell trains for (the test runs the cells again in one process).
SCALE = 0.1


def _not_in_the_driver(*args, **kwargs):
    raise AssertionError("tune --address scored the baseline in the driving process, not on the cluster")


def main(out: Path) -> None:
    tuning.score_baseline = _not_in_the_driver
    cluster = start_cluster(2)
    try:
        td = "experiments.suite.trainers:td"
        hp = out / "hyperparams"
        run_suite(
            out / "spread",
            2,
            trainer=td,
            tasks="2x3",
            progress=False,
            address=cluster.address,
            hyperparams=hp,
            budget_scale=SCALE,
        )
        tune(td, "2x3", trials=3, steps=2000, out=out / "tune", progress=False, address=cluster.address, baseline=True)
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
