"""The Ray backend on a simulated three-node cluster (ray.cluster_utils.Cluster on 127.0.0.1), with workers
killed in the middle of ages: Ray retries their tasks, the tables are still bit-identical to the local build's,
and every process of the cluster, restarted workers included, uses loopback addresses only.  One cluster serves
all of it: starting one costs more than a 2x3 build."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from golden_tables import checksums_of as checksums
from ray_cluster_build import BUILDS
from ray_helpers import golden_checksums, require_ray
from sockets import SocketWatch, unrelated_traffic

ray = require_ray()

from solver.ray_engine import KILL_ENV  # noqa: E402

#: One worker dies in each of the three kinds of task, each at a call in the middle of the 2x3 build.
VICTIMS = {"task_spawn": 30, "task_state_values": 100, "task_lookup": 200}


def test_three_node_cluster_with_killed_workers_builds_identical_tables_on_the_loopback(tmp_path):
    """The cluster and its builds run in a child process (tests/ray_cluster_build.py), which the socket watch
    traces with every process below it from before the cluster starts to its shutdown, while an unrelated process
    connects in a loop to 127.0.0.2 (counted as off the loopback).  The kill plan reaches the workers through the
    environment of the cluster's processes; the planned calls' workers exit abruptly (os._exit), once each."""
    markers = tmp_path / "markers"
    markers.mkdir()
    plan = ",".join(f"{name}:{skip}" for name, skip in VICTIMS.items())
    env = {**os.environ, KILL_ENV: f"{plan};{markers}"}
    script = Path(__file__).with_name("ray_cluster_build.py")
    with unrelated_traffic("127.0.0.2", pause=0.05) as other:
        watch = SocketWatch(tmp_path / "trace", treat_as_remote=[other.address])
        args = [sys.executable, str(script), str(tmp_path)]
        with watch.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                              text=True, env=env) as proc:  # fmt: skip
            _, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-5000:]
    for name, _, _ in BUILDS:
        assert checksums(tmp_path / name) == golden_checksums(name), name
    for victim, skip in VICTIMS.items():  # each planned call ran, and its worker died right there
        assert (markers / f"{victim}.{skip}").exists(), f"{victim}:{skip} never ran"
    names = {o.name for o in watch.listeners()}
    assert {"gcs_server", "raylet"} <= names, f"the watch saw no Ray listener: {sorted(names)}"
    # a raylet's child between fork and exec holds its listeners too, under its name
    assert len({o.pid for o in watch.listeners() if o.name == "raylet"}) >= 3, "not every node's raylet"
    assert watch.off_loopback() == []
    other.check_not_blamed(watch)
