"""Starting or joining the Ray cluster a distributed build runs on, and the machines it offers.

A private Ray (no ``--address``) runs every process on this machine's loopback, with no dashboard, usage
statistics or cloud probes.  Ray is an optional dependency (``pip install -e ".[distributed]"``); nothing outside
:mod:`solver.distributed` imports it.
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass

#: Seconds ``--machines N`` waits for N machines to join the cluster.
MACHINE_WAIT_S = 600.0


class RayUnavailable(RuntimeError):
    """Ray is not installed."""


def import_ray():
    try:
        import ray
    except ImportError as exc:
        raise RayUnavailable(
            "the Ray backend needs Ray: install the 'distributed' extra (pip install -e '.[distributed]')"
        ) from exc
    return ray


#: What makes a private Ray stay on this machine's loopback.  ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` tells Ray that
#: no other machine will join: its node address is then 127.0.0.1 and every process listens there (otherwise Ray
#: swaps 127.0.0.1 for the machine's network address and listens on every interface).  Ray reads it once, when
#: ``ray`` is first imported, so it must be in the environment before that.
PRIVATE_RAY_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
#: Ray's dashboard process (started even without the dashboard) asks the cloud metadata service (169.254.169.254,
#: metadata.google.internal) which cloud it runs on, usage statistics or not.  It asks through ``requests``, which
#: honours these variables: with a proxy on a closed loopback port the probes fail at once, without leaving the
#: machine.  They are set only while Ray's processes start, so they reach those processes and nothing else.
NO_CLOUD_PROBES_ENV = {
    **{name: "http://127.0.0.1:1" for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy")},
    **{name: "127.0.0.1,localhost,::1" for name in ("NO_PROXY", "no_proxy")},
}


class RayNotPrivate(RuntimeError):
    """Ray was imported before the environment of a loopback-only Ray could be set."""


#: Ray's raylet starts its worker processes at niceness 15 (``RAY_worker_niceness``), for background tasks.  The
#: solver's workers are the work itself: at 15, any other busy process on the machine takes their cores (a test
#: build of 2x4 on two actors crawled at ~1 s per age beside two busy processes, the actors getting ~3% of a
#: core).  A private Ray starts them at 0 unless the environment says otherwise.
WORKER_NICENESS = "0"


def private_ray_environment() -> None:
    """Prepare this process for a Ray whose processes all run on this machine, on the loopback only, with no
    usage statistics (see :data:`PRIVATE_RAY_ENV`), and workers at the niceness of other processes
    (:data:`WORKER_NICENESS`).  Raises :class:`RayNotPrivate` if Ray was already imported without it: Ray has then
    fixed its node address, and a private Ray would listen on every interface."""
    os.environ.update(PRIVATE_RAY_ENV)
    os.environ.setdefault("RAY_worker_niceness", WORKER_NICENESS)
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None and constants.ENABLE_RAY_CLUSTER:
        raise RayNotPrivate(
            "Ray was imported before solver.distributed.session could keep a private Ray on the loopback "
            "(127.0.0.1): its processes would listen on every network interface. Start the private Ray before "
            "anything imports ray, or set RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 in the environment before starting Python"
        )


@contextmanager
def no_cloud_probes():
    """While Ray's processes start (``ray.init``, ``ray.cluster_utils.Cluster``, ``add_node``): the variables of
    :data:`NO_CLOUD_PROBES_ENV` set, so that those processes never ask the cloud metadata service; this process's
    environment is restored afterwards."""
    saved = {name: os.environ.get(name) for name in NO_CLOUD_PROBES_ENV}
    os.environ.update(NO_CLOUD_PROBES_ENV)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def ray_session(address: str | None = None, num_cpus: int | None = None):
    """Connect to the Ray cluster at ``address``, or start a private one on this machine (``num_cpus``, default
    all cores) and shut it down on exit.  A private Ray has every process on the loopback (127.0.0.1) and no
    dashboard, usage statistics or cloud probes, and is always a new one: another Ray running on this machine, or
    named by ``RAY_ADDRESS``, is never joined.  Starting one after something else imported Ray raises
    :class:`RayNotPrivate`.  An already initialised Ray is used as it is and left running."""
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        yield ray
        return
    if address:
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        ray = import_ray()
        ray.init(address=address, log_to_driver=False)
    else:
        private_ray_environment()
        ray = import_ray()
        with no_cloud_probes():
            # "local": a new Ray of our own, never one found through RAY_ADDRESS, /tmp/ray or a running GCS
            ray.init(
                address="local",
                num_cpus=num_cpus,
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                log_to_driver=False,
            )
    try:
        yield ray
    finally:
        ray.shutdown()


@dataclass(frozen=True)
class Machine:
    """Where one worker of a distributed build runs: a Ray node (``None``: wherever Ray places it, as the tests do
    to run several workers on one node) and the CPUs it takes there (its numba threads)."""

    node_id: str | None
    cpus: int


def cluster_machines(ray, expect: int | None = None, timeout: float = MACHINE_WAIT_S) -> list[Machine]:
    """The machines of the connected cluster: its alive nodes with CPUs, sorted by node ID, each with all of its
    CPUs.  With ``expect``, waits up to ``timeout`` seconds until that many have joined and returns that many."""
    if expect is not None and expect < 1:
        raise ValueError(f"--machines must be at least 1, got {expect}")
    deadline = time.monotonic() + timeout
    while True:
        nodes = sorted(
            (n for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU", 0) >= 1), key=lambda n: n["NodeID"]
        )
        if expect is None or len(nodes) >= expect:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{len(nodes)} machine(s) with CPUs in the Ray cluster after {timeout:.0f} s, "
                f"not the {expect} of --machines"
            )
        time.sleep(1.0)
    if not nodes:
        raise RuntimeError("the Ray cluster has no node with a CPU to run a worker on")
    return [Machine(n["NodeID"], int(n["Resources"]["CPU"])) for n in nodes[: expect or len(nodes)]]


def local_cluster(nodes: int):
    """A ``ray.cluster_utils.Cluster`` of ``nodes`` one-CPU nodes on 127.0.0.1, as several machines on this one
    (no dashboard; its processes started without cloud probes): for tests and benchmarks.  Call
    :func:`private_ray_environment` before Ray is imported; the caller shuts the cluster down."""
    from ray.cluster_utils import Cluster

    node = {"num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False}
    with no_cloud_probes():
        cluster = Cluster(initialize_head=True, head_node_args=node)
        for _ in range(nodes - 1):
            cluster.add_node(**node)
    cluster.wait_for_nodes()
    return cluster
