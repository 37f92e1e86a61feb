"""The distributed build (solver.distributed) on Ray actors in a private one-node Ray (127.0.0.1, 2 CPUs):
tables bit-identical to the local build's (its golden checksums) with several workers, every step run in the
actors, a worker killed mid-age and replaced, a build driven from the command line, and clear errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from golden_tables import checksums_of as checksums
from ray_helpers import SPECS, golden_checksums, require_ray
from sockets import SocketWatch, unrelated_traffic

require_ray()

from solver.distributed.driver import exchanged_boards  # noqa: E402
from solver.distributed.ray_actors import KILL_ENV, build_on_actors  # noqa: E402
from solver.distributed.session import Machine, ray_session  # noqa: E402

pytestmark = pytest.mark.slow  # the whole module runs in make test, not in the quick lane


@pytest.fixture(scope="module")
def ray_local():
    with ray_session(num_cpus=2) as ray:
        yield ray


def workers(n: int) -> list[Machine]:
    """``n`` workers of one CPU each, on this one-node Ray."""
    return [Machine(None, 1)] * n


#: (table, workers, threshold exponent): T = 8 gives the most columns and crossing moves.  Two workers of one
#: CPU fill this two-CPU Ray.  The 2x4 table is test_ray_cluster.py's, built there by three workers on three
#: nodes, with keys moved, columns split and workers killed.
CASES = [("2x3", 2, 3), ("2x4-64", 2, 4)]


@pytest.mark.parametrize(("name", "n_workers", "low"), CASES)
def test_ray_tables_are_identical_to_the_local_build(ray_local, tmp_path, name, n_workers, low):
    out = tmp_path / name
    report, restarts = build_on_actors(SPECS[name], out, workers(n_workers), low=low, progress=False, keep_work=True)
    assert checksums(out) == golden_checksums(name)
    assert report.threads == n_workers and restarts == 0
    # every worker ran in its own actor process, and the workers exchanged crossing afterstates
    work = out.parent / f"{name}.work"
    pids = {json.loads(f.read_text())["pid"] for f in (work / "actors").glob("w*.json")}
    assert len(pids) == n_workers and os.getpid() not in pids
    assert exchanged_boards(work)["crossing"] > 100


def test_workers_the_cluster_cannot_place_are_a_clear_error(ray_local, tmp_path, monkeypatch):
    """Three workers of one CPU on a two-CPU Ray: one never starts, and the build says so instead of waiting for
    ever, with the workers not started and the CPUs the cluster has free.  Which workers have started, and whether
    Ray has yet leased the CPUs of those it placed, is the machine's load to decide; what holds whatever the load
    is that the workers not started ask for more CPUs than are free."""
    import solver.distributed.ray_actors as ray_actors

    monkeypatch.setattr(ray_actors, "RESTART_TIMEOUT", 5.0)
    with pytest.raises(TimeoutError, match=r"workers \[[\d, ]+\] did not start within 5 s") as error:
        build_on_actors(SPECS["2x3"], tmp_path / "t", workers(3), progress=False)
    said = re.search(
        r"workers \[([\d, ]+)\] .* CPUs \(([\d, ]+)\), and the cluster has ([\d.]+) CPUs free", str(error.value)
    )
    assert said, str(error.value)
    waiting, asked = said.group(1).split(", "), [int(c) for c in said.group(2).split(", ")]
    assert 1 <= len(waiting) == len(asked) <= 3 and float(said.group(3)) < sum(asked)


def test_an_actor_killed_mid_age_is_replaced_and_the_build_resumes(ray_local, tmp_path, monkeypatch):
    """Worker 1's process exits abruptly in the middle of the backward pass's age 100 (its crossing values sent,
    its states not valued yet): Ray restarts the actor, the build starts again from the work directory, and the
    table is the golden one."""
    markers = tmp_path / "markers"
    markers.mkdir()
    monkeypatch.setenv(KILL_ENV, f"settle:1:100;{markers}")
    work = tmp_path / "t.work"
    report, restarts = build_on_actors(
        SPECS["2x3"], tmp_path / "t", workers(2), work_dir=work, progress=False, keep_work=True
    )
    assert (markers / "settle-1-100").exists() and restarts == 1
    dead = int((markers / "settle-1-100").read_text())
    assert json.loads((work / "actors" / "w0001.json").read_text())["pid"] != dead  # the replacement wrote it
    assert checksums(tmp_path / "t") == golden_checksums("2x3")


def test_cli_builds_on_a_private_ray_on_the_loopback(tmp_path):
    """The CLI's private Ray builds the same table, and every process it starts (GCS, raylet, agents, workers),
    traced and sampled from start to shutdown, uses loopback addresses only, while an unrelated process connects
    in a loop to 127.0.0.2, which the watch counts as off the loopback: those connections are not blamed."""
    out = tmp_path / "cli"
    args = [
        sys.executable,
        "-m",
        "solver",
        "build",
        "--board",
        "2x3",
        "--backend",
        "ray",
        "--threads",
        "2",
        "--material-tile",
        "16",
        "--quiet",
        "--out",
        str(out),
    ]
    # a RAY_ADDRESS in the environment (or another Ray on the machine) must not be joined: the Ray is private
    env = {**os.environ, "RAY_ADDRESS": "127.0.0.1:9"}
    with unrelated_traffic("127.0.0.2", pause=0.05) as other:
        watch = SocketWatch(tmp_path / "trace", treat_as_remote=[other.address])
        with watch.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env) as proc:
            stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert "on 1 machine ->" in stdout
    assert checksums(out) == golden_checksums("2x3")
    names = {o.name for o in watch.listeners()}
    assert {"gcs_server", "raylet"} <= names, f"the watch saw no Ray listener in {watch.samples} samples: {names}"
    assert {c.name for c in watch.calls} >= {"gcs_server", "raylet"}, "the trace saw no call of Ray's processes"
    assert watch.off_loopback() == []
    other.check_not_blamed(watch)


def test_cli_refuses_a_table_file_and_bad_options_on_ray(tmp_path):
    args = ["--board", "2x2", "--backend", "ray", "--layout", "file", "--out", str(tmp_path / "t.h5")]
    run = subprocess.run([sys.executable, "-m", "solver", "build", *args], capture_output=True, text=True)
    assert run.returncode == 2
    assert "--layout directory" in run.stderr
    wrongs = [
        (["--machines", "2"], "--backend ray"),
        (["--backend", "ray", "--machines", "2"], "needs --address"),
        (["--backend", "ray", "--material-tile", "12"], "power of two"),
        (["--backend", "ray", "--rebalance", "lots"], "--rebalance must be a tolerance >= 0"),
        (["--rebalance", "0.1"], "--backend ray"),
        (["--backend", "ray", "--split", "0"], "--split must be a number of even shares > 0"),
        (["--split", "off"], "--backend ray"),
    ]
    for wrong, message in wrongs:
        run = subprocess.run(
            [sys.executable, "-m", "solver", "build", "--board", "2x2", *wrong, "--out", str(tmp_path / "t")],
            capture_output=True,
            text=True,
        )
        assert run.returncode == 2, wrong
        assert message in run.stderr, run.stderr


def test_a_pattern_builds_on_ray_like_the_local_build(ray_local, tmp_path):
    """An endgame pattern (docs/endgame.md) on Ray: the spec with its pattern travels to the actors, and the
    table is the local build's, bit for bit."""
    from env2048.pattern import Pattern
    from solver.build import build
    from solver.spec import SolveSpec

    pattern = Pattern.from_dict({"rows": 3, "cols": 3, "grid": [". . .", ". . .", ". . 256"], "target": 16})
    spec = SolveSpec.for_pattern(pattern)
    build(spec, tmp_path / "local", progress=False, layout="directory")
    build_on_actors(spec, tmp_path / "ray", workers(2), progress=False)
    assert checksums(tmp_path / "ray") == checksums(tmp_path / "local")


def test_an_actor_runs_its_kernels_on_its_machines_cores_only(ray_local, tmp_path):
    """numba keeps its thread count per thread and Ray calls an actor's steps on threads of its own: each step
    must still run on the machine's CPUs (one here), not on every core of the host."""
    import numba

    from solver.distributed.material import Assignment
    from solver.distributed.ray_actors import ColumnActor

    actor = ray_local.remote(num_cpus=1, max_concurrency=4)(ColumnActor)
    one = actor.remote(SPECS["2x3"], 0, Assignment(1, 3).to_json(), str(tmp_path), 1)
    assert ray_local.get([one.kernel_threads.remote() for _ in range(8)]) == [1] * 8
    ray_local.kill(one)
    if numba.config.NUMBA_NUM_THREADS >= 2:
        both = ray_local.remote(num_cpus=2, max_concurrency=4)(ColumnActor).remote(
            SPECS["2x3"], 0, Assignment(1, 3).to_json(), str(tmp_path), 2
        )
        assert ray_local.get(both.kernel_threads.remote()) == 2
        ray_local.kill(both)
