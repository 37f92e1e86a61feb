"""The Ray backend on a simulated three-node cluster (ray.cluster_utils.Cluster on 127.0.0.1), one worker per node,
with workers killed in the middle of ages: Ray restarts their actors, the build resumes from its work directory, the
table is still bit-identical to the local build's (keys moved between workers and columns split included), and every
process of the cluster, restarted actors included, uses loopback addresses only. One cluster serves all of it:
starting one costs more than the build."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from golden_tables import checksums_of as checksums
from ray_cluster_build import BUILD
from ray_helpers import golden_checksums, require_ray
from sockets import SocketWatch, unrelated_traffic

ray = require_ray()

from solver.distributed.ray_actors import KILL_ENV  # noqa: E402

pytestmark = pytest.mark.slow  # the whole module runs in make test, not in the quick lane

#: Workers that die mid-age: worker 2 in the forward pass (after expanding age 60, before sending its crossing
#: afterstates), worker 1 in the backward pass (after sending its crossing values of age 100, before valuing its
#: states).
VICTIMS = ("expand:2:60", "settle:1:100")


def test_three_node_cluster_with_killed_workers_builds_identical_tables_on_the_loopback(tmp_path):
    """The cluster and its build, one worker per node, run in a child process (tests/ray_cluster_build.py), which
    the socket watch traces with every process below it from before the cluster starts to its shutdown, while an
    unrelated process connects in a loop to 127.0.0.2 (counted as off the loopback).  The kill plan reaches the
    actors from the driver's environment; each planned worker's process exits abruptly (os._exit) mid-age, once,
    and the build resumes from its work directory with the restarted actor."""
    markers = tmp_path / "markers"
    markers.mkdir()
    env = {**os.environ, KILL_ENV: f"{','.join(VICTIMS)};{markers}"}
    script = Path(__file__).with_name("ray_cluster_build.py")
    with unrelated_traffic("127.0.0.2", pause=0.05) as other:
        watch = SocketWatch(tmp_path / "trace", treat_as_remote=[other.address])
        args = [sys.executable, str(script), str(tmp_path)]
        with watch.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as proc:
            stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-5000:]
    assert checksums(tmp_path / BUILD) == golden_checksums(BUILD)
    for victim in VICTIMS:  # each planned step ran, and its worker died right there
        assert (markers / victim.replace(":", "-")).exists(), f"{victim} never ran"
    assert "restarts 2" in stdout
    journal = (tmp_path / f"{BUILD}.work" / "journal.jsonl").read_text().splitlines()
    extras = [json.loads(line).get("extra", {}) for line in journal if line]
    moved = sum(len(e.get("moved_keys", [])) for e in extras)
    assert moved > 0 and sum(e.get("handed_off", 0) for e in extras) > 0, "no key moved: the hand-offs went untested"
    assert sum(len(e.get("split_keys", [])) for e in extras) > 0, "no column split: the parts went untested"
    names = {o.name for o in watch.listeners()}
    assert {"gcs_server", "raylet"} <= names, f"the watch saw no Ray listener: {sorted(names)}"
    # a raylet's child between fork and exec holds its listeners too, under its name
    assert len({o.pid for o in watch.listeners() if o.name == "raylet"}) >= 3, "not every node's raylet"
    assert watch.off_loopback() == []
    other.check_not_blamed(watch)
