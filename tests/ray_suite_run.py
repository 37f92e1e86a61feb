"""Run by test_ray_suite.py as the process its socket watch traces: a two-node ``ray.cluster_utils.Cluster`` on
127.0.0.1 computes a suite run (greedy, two seeds, task 2x4) into ``sys.argv[1]``, then shuts down."""

from __future__ import annotations

import sys
from pathlib import Path

from ray_helpers import start_cluster

from experiments.suite.runner import run_suite


def main(out: Path) -> None:
    cluster = start_cluster(2)
    try:
        run_suite(out, 2, trainer="experiments.suite.trainers:td", tasks="2x4", progress=False, address=cluster.address)
    finally:
        cluster.shutdown()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
