"""The Ray backend on a simulated three-node cluster (ray.cluster_utils.Cluster on 127.0.0.1), with workers
killed in the middle of ages: Ray retries their tasks, the tables are still bit-identical to the local build's,
and every socket of the cluster, restarted workers included, stays on the loopback.  One cluster serves all of
it: starting one costs more than a 2x3 build."""

from __future__ import annotations

from golden_tables import checksums_of as checksums
from ray_helpers import SPECS, golden_checksums, require_ray, start_cluster
from sockets import SocketWatch

from solver.sharded import build_sharded

ray = require_ray()

from solver.ray_engine import KILL_ENV, RayEngine, ray_session  # noqa: E402

#: One worker dies in each of the three kinds of task, each at a call in the middle of the 2x3 build.
VICTIMS = {"task_spawn": 30, "task_state_values": 100, "task_lookup": 200}


def test_three_node_cluster_with_killed_workers_builds_identical_tables_on_the_loopback(tmp_path, monkeypatch):
    """The kill plan reaches the workers through the environment of the cluster's processes, so it is set before
    the cluster starts; the planned calls' workers exit abruptly (os._exit), once each.  The socket watch covers
    this process and every process of the cluster from before it starts to the end of the builds."""
    markers = tmp_path / "markers"
    markers.mkdir()
    plan = ",".join(f"{name}:{skip}" for name, skip in VICTIMS.items())
    monkeypatch.setenv(KILL_ENV, f"{plan};{markers}")
    with SocketWatch() as watch:
        c = start_cluster(3)
        try:
            with ray_session(c.address) as session:
                assert len([n for n in session.nodes() if n["Alive"]]) == 3
                for name, n_shards, shard_min in (("2x3", 3, 0), ("2x4", 4, 10_000)):
                    out = tmp_path / name
                    build_sharded(RayEngine(), SPECS[name], out, n_shards, progress=False, shard_min=shard_min)
                    assert checksums(out) == golden_checksums(name), name
                    if name == "2x3":  # each planned call ran, and its worker died right there
                        for victim, skip in VICTIMS.items():
                            assert (markers / f"{victim}.{skip}").exists(), f"{victim}:{skip} never ran"
                watch.sample()
        finally:
            c.shutdown()
    names = {name for name, _ in watch.listeners()}
    assert {"gcs_server", "raylet"} <= names, f"the watch saw no Ray listener: {sorted(names)}"
    assert len([1 for name, _ in watch.listeners() if name == "raylet"]) >= 3 * 2, "not every node's raylet"
    assert watch.off_loopback() == []
