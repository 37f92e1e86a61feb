"""The Ray backend on a simulated three-node cluster (ray.cluster_utils.Cluster on 127.0.0.1), with workers
killed in the middle of ages: Ray retries their tasks and the table is still bit-identical to the local build's."""

from __future__ import annotations

import os

import pytest
from ray_helpers import SPECS, checksums, local_reference, require_ray, start_cluster
from sockets import SocketWatch

from solver.sharded import build_sharded

ray = require_ray()

from solver.ray_engine import KILL_ENV, RayEngine, ray_session  # noqa: E402


@pytest.fixture
def watched_cluster():
    """A three-node cluster on this machine, and a watch on the sockets of its processes (this one included)
    from before it starts."""
    with SocketWatch() as watch:
        c = start_cluster(3)
        try:
            with ray_session(c.address) as session:
                assert len([n for n in session.nodes() if n["Alive"]]) == 3
                yield c, watch
        finally:
            c.shutdown()


@pytest.mark.parametrize("victim", ["task_spawn:30", "task_state_values:100", "task_lookup:200"])
def test_killed_workers_are_retried_and_the_table_is_identical(tmp_path, monkeypatch, victim):
    """The worker running the chosen call exits abruptly (os._exit) once; workers inherit the plan from the
    environment of the cluster's processes, so it is set before the cluster starts."""
    markers = tmp_path / "markers"
    markers.mkdir()
    name = victim.split(":")[0]
    monkeypatch.setenv(KILL_ENV, f"{victim}:{markers}")
    c = start_cluster(3)
    try:
        with ray_session(c.address):
            build_sharded(RayEngine(), SPECS["2x3"], tmp_path / "t", 3, progress=False, shard_min=0)
    finally:
        c.shutdown()
    skip = int(victim.split(":")[1])
    assert (markers / f"{name}.{skip}").exists(), "the planned call never ran"  # its worker died right there
    assert checksums(tmp_path / "t") == checksums(local_reference(tmp_path, "2x3"))


def test_three_node_cluster_builds_identical_tables_on_the_loopback(watched_cluster, tmp_path):
    """Tables bit-identical to the local build's, and every socket of the cluster's processes (GCS, raylets,
    dashboard, workers, this driver) on a loopback address, from start-up to the end of the builds."""
    _, watch = watched_cluster
    for name, n_shards, shard_min in (("2x3", 3, 0), ("2x4", 4, 10_000)):
        build_sharded(RayEngine(), SPECS[name], tmp_path / name, n_shards, progress=False, shard_min=shard_min)
        assert checksums(tmp_path / name) == checksums(local_reference(tmp_path, name))
    assert os.environ.get(KILL_ENV) is None
    watch.sample()
    names = {name for name, _ in watch.listeners()}
    assert {"gcs_server", "raylet"} <= names, f"the watch saw no Ray listener: {sorted(names)}"
    assert len([1 for name, _ in watch.listeners() if name == "raylet"]) >= 3 * 2, "not every node's raylet"
    assert watch.off_loopback() == []
