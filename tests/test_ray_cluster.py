"""The Ray backend on a simulated three-node cluster (ray.cluster_utils.Cluster on 127.0.0.1), with workers
killed in the middle of ages: Ray retries their tasks and the table is still bit-identical to the local build's."""

from __future__ import annotations

import os

import pytest
from ray_helpers import SPECS, checksums, local_reference, require_ray

from solver.sharded import build_sharded

ray = require_ray()

from ray.cluster_utils import Cluster  # noqa: E402

from solver.ray_engine import KILL_ENV, RayEngine, ray_session  # noqa: E402

NODE = {"num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False}


@pytest.fixture
def cluster():
    c = Cluster(initialize_head=True, head_node_args=NODE)
    for _ in range(2):
        c.add_node(**NODE)
    c.wait_for_nodes()
    try:
        with ray_session(c.address) as session:
            assert len([n for n in session.nodes() if n["Alive"]]) == 3
            yield c
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
    c = Cluster(initialize_head=True, head_node_args=NODE)
    for _ in range(2):
        c.add_node(**NODE)
    c.wait_for_nodes()
    try:
        with ray_session(c.address):
            build_sharded(RayEngine(), SPECS["2x3"], tmp_path / "t", 3, progress=False, shard_min=0)
    finally:
        c.shutdown()
    skip = int(victim.split(":")[1])
    assert (markers / f"{name}.{skip}").exists(), "the planned call never ran"  # its worker died right there
    assert checksums(tmp_path / "t") == checksums(local_reference(tmp_path, "2x3"))


def test_three_node_cluster_builds_identical_tables(cluster, tmp_path):
    for name, n_shards, shard_min in (("2x3", 3, 0), ("2x4", 4, 10_000)):
        build_sharded(RayEngine(), SPECS[name], tmp_path / name, n_shards, progress=False, shard_min=shard_min)
        assert checksums(tmp_path / name) == checksums(local_reference(tmp_path, name))
    assert os.environ.get(KILL_ENV) is None
