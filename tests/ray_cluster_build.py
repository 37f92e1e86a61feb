"""Run by test_ray_cluster.py as the process its socket watch traces: a three-node ``ray.cluster_utils.Cluster``
on 127.0.0.1 builds the 2x3 table on 3 shards and the 2x4 table on 4 into the directory ``sys.argv[1]``, then
shuts down.  The kill plan (``solver.ray_engine.KILL_ENV``) comes in the environment; the test checks the tables
and the plan's markers."""

from __future__ import annotations

import sys
from pathlib import Path

from ray_helpers import SPECS, start_cluster

from solver.ray_engine import RayEngine, ray_session
from solver.sharded import build_sharded

#: (table, shards, shard_min) built on the cluster
BUILDS = (("2x3", 3, 0), ("2x4", 4, 10_000))


def main(out: Path) -> None:
    c = start_cluster(3)
    try:
        with ray_session(c.address) as session:
            alive = len([n for n in session.nodes() if n["Alive"]])
            assert alive == 3, f"{alive} nodes alive, not 3"
            for name, n_shards, shard_min in BUILDS:
                build_sharded(RayEngine(), SPECS[name], out / name, n_shards, progress=False, shard_min=shard_min)
    finally:
        c.shutdown()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
