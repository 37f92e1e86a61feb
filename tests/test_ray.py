"""The Ray backend on a private one-node Ray (127.0.0.1, 2 CPUs): tables bit-identical to the local build's (its
golden checksums) for several shard counts, a build driven from the command line, and a clear error for a table
file."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from golden_tables import checksums_of as checksums
from ray_helpers import SPECS, golden_checksums, require_ray
from sockets import SocketWatch, unrelated_traffic

from solver.sharded import build_sharded

require_ray()

from solver.ray_engine import RayEngine, ray_session  # noqa: E402


@pytest.fixture(scope="module")
def ray_local():
    with ray_session(num_cpus=2) as ray:
        yield ray


#: (table, shards, shard_min): shard_min=0 cuts every age from the fourth on; 2x4's largest ages have 12,807
#: afterstates and 3x3-to-256's 31,844, so the others cut about 60 and 80 of their largest ages.
CASES = [("2x3", 2, 0), ("2x3", 3, 0), ("2x4", 3, 10_000), ("3x3-256", 2, 20_000)]


@pytest.mark.parametrize(("name", "n_shards", "shard_min"), CASES)
def test_ray_tables_are_identical_to_the_local_build(ray_local, tmp_path, name, n_shards, shard_min):
    out = tmp_path / name
    report = build_sharded(RayEngine(), SPECS[name], out, n_shards, progress=False, shard_min=shard_min)
    assert checksums(out) == golden_checksums(name)
    assert report.threads == n_shards


def test_every_shard_runs_as_a_ray_task(ray_local, tmp_path):
    """With shard_min=0 every age from the fourth on is cut, so its steps must have gone through Ray."""
    engine = RayEngine()
    calls = []
    submit = engine.submit

    def counting(fn, *args, **kwargs):
        calls.append((fn.__name__, kwargs.get("whole", False)))
        return submit(fn, *args, **kwargs)

    engine.submit = counting
    build_sharded(engine, SPECS["2x3"], tmp_path / "t", 2, progress=False, shard_min=0)
    on_ray = [name for name, whole in calls if not whole]
    assert {
        "task_expand",
        "task_spawn",
        "task_children_requests",
        "task_move_requests",
        "task_lookup",
        "task_afterstate_values",
        "task_state_values",
        "task_write",
    } <= set(on_ray)
    assert len(on_ray) > 10 * len([1 for _, whole in calls if whole])


def test_cli_builds_on_a_private_ray_on_the_loopback(tmp_path):
    """The CLI's private Ray builds the same table, and every process it starts (GCS, raylet, agents, workers),
    traced and sampled from start to shutdown, uses loopback addresses only, while an unrelated process connects
    in a loop to 127.0.0.2, which the watch counts as off the loopback: those connections are not blamed."""
    out = tmp_path / "cli"
    args = [sys.executable, "-m", "solver", "build", "--board", "2x3", "--backend", "ray", "--shards", "2",
            "--shard-min", "0", "--threads", "2", "--quiet", "--out", str(out)]  # fmt: skip
    # a RAY_ADDRESS in the environment (or another Ray on the machine) must not be joined: the Ray is private
    env = {**os.environ, "RAY_ADDRESS": "127.0.0.1:9"}
    with unrelated_traffic("127.0.0.2", pause=0.05) as other:
        watch = SocketWatch(tmp_path / "trace", treat_as_remote=[other.address])
        with watch.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                              text=True, env=env) as proc:  # fmt: skip
            stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert "on 2 shards" in stdout
    assert checksums(out) == golden_checksums("2x3")
    names = {o.name for o in watch.listeners()}
    assert {"gcs_server", "raylet"} <= names, f"the watch saw no Ray listener in {watch.samples} samples: {names}"
    assert {c.name for c in watch.calls} >= {"gcs_server", "raylet"}, "the trace saw no call of Ray's processes"
    assert watch.off_loopback() == []
    other.check_not_blamed(watch)


def test_cli_refuses_a_table_file_on_ray(tmp_path):
    args = ["--board", "2x2", "--backend", "ray", "--layout", "file", "--out", str(tmp_path / "t.h5")]
    run = subprocess.run([sys.executable, "-m", "solver", "build", *args], capture_output=True, text=True)
    assert run.returncode == 2
    assert "--layout directory" in run.stderr
    run = subprocess.run([sys.executable, "-m", "solver", "build", "--board", "2x2", "--shards", "2",
                          "--out", str(tmp_path / "t.h5")], capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 2
    assert "--backend ray" in run.stderr


def test_a_pattern_builds_on_ray_like_the_local_build(ray_local, tmp_path):
    """An endgame pattern (docs/endgame.md) on Ray: the spec with its pattern travels to the tasks, and the
    table is the local build's, bit for bit."""
    from env2048.pattern import Pattern
    from solver.build import build
    from solver.spec import SolveSpec

    pattern = Pattern.from_dict({"rows": 3, "cols": 3, "grid": [". . .", ". . .", ". . 256"], "target": 16})
    spec = SolveSpec.for_pattern(pattern)
    build(spec, tmp_path / "local", progress=False, layout="directory")
    build_sharded(RayEngine(), spec, tmp_path / "ray", 2, progress=False, shard_min=0)
    assert checksums(tmp_path / "ray") == checksums(tmp_path / "local")


def test_material_actor_killed_mid_build_is_replaced_and_the_build_resumes(ray_local, tmp_path):
    """The build partitioned by material (solver.distributed) on two Ray actors that send each other their
    crossing afterstates and values.  Worker 1's process is killed (SIGKILL) once the backward pass has journalled
    40 ages: Ray restarts the actor, the build starts again from the work directory, and the table is the golden
    one."""
    import json
    import signal
    import threading
    import time

    from solver.distributed.ray_actors import build_on_actors

    work, killed = tmp_path / "t.work", []

    def kill_when_due():
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not killed:
            journal = work / "journal.jsonl"
            if journal.exists() and journal.read_text().count('"backward"') >= 40:
                pid = json.loads((work / "actors" / "w0001.json").read_text())["pid"]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.05)

    killer = threading.Thread(target=kill_when_due, daemon=True)
    killer.start()
    report, restarts = build_on_actors(SPECS["2x3"], tmp_path / "t", 2, work_dir=work, progress=False,
                                       keep_work=True)  # fmt: skip
    killer.join()
    assert killed and restarts == 1
    assert json.loads((work / "actors" / "w0001.json").read_text())["pid"] != killed[0]  # the replacement
    assert checksums(tmp_path / "t") == golden_checksums("2x3")
