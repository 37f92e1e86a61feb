"""Run by test_ray_cluster.py as the process its socket watch traces: a three-node ``ray.cluster_utils.Cluster`` on
127.0.0.1 builds the table of the 2x4 game up to 64 (77 ages: the smallest golden table with many columns) with one
worker per node and columns keyed by the tiles >= 8 (many columns, many crossing moves) into the directory
``sys.argv[1]``, then shuts down. The kill plan (``solver.distributed.ray_actors.KILL_ENV``) comes in the
environment; the test checks the table and the plan's marker."""

from __future__ import annotations

import sys
from pathlib import Path

from ray_helpers import SPECS, start_cluster

from solver.distributed.ray_actors import build_on_actors
from solver.distributed.session import cluster_machines, ray_session

#: The table built on the cluster
BUILD = "2x4-64"


def main(out: Path) -> None:
    c = start_cluster(3)
    try:
        with ray_session(c.address) as ray:
            machines = cluster_machines(ray, 3, timeout=60)
            assert len({m.node_id for m in machines}) == 3, machines
            _, restarts = build_on_actors(SPECS[BUILD], out / BUILD, machines, low=3, progress=False, keep_work=True)
            print(f"restarts {restarts}")
    finally:
        c.shutdown()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
