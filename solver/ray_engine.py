"""Ray as the engine of a sharded build (:mod:`solver.sharded`): each shard's step is a Ray task, outputs travel
between tasks through Ray's object store, and Ray retries a task whose worker died.

Ray is an optional dependency (``pip install -e ".[distributed]"``); nothing else in the package imports it.
"""

from __future__ import annotations

import os
import sys
from contextlib import contextmanager

#: Fault injection for the tests: ``NAME:SKIP[,NAME:SKIP ...];DIR`` makes the worker running the ``SKIP``-th (from 0)
#: call of each task function ``NAME`` exit abruptly, once; ``DIR`` holds the markers that count calls across workers.
KILL_ENV = "SOLVED2048_KILL_TASK_ONCE"
#: Attempts Ray makes after a task's worker dies (application errors are not retried: they would fail again).
MAX_RETRIES = 3


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


def _maybe_die(name: str) -> None:
    plan = os.environ.get(KILL_ENV)
    if not plan:
        return
    victims, marker_dir = plan.split(";", 1)
    skip = dict(v.split(":") for v in victims.split(",")).get(name)
    if skip is None:
        return
    for i in range(int(skip) + 1):
        try:
            fd = os.open(os.path.join(marker_dir, f"{name}.{i}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            continue
        os.close(fd)
        if i == int(skip):
            os._exit(1)  # the worker process dies as if killed: no exception reaches Ray
        return


def _call(fn, threads: int, *args):
    """Runs one task function in a worker: ``threads`` numba threads (0: all of the node's cores), one output
    unpacked from its tuple."""
    import numba

    threads = threads or numba.config.NUMBA_NUM_THREADS
    if numba.get_num_threads() != threads:
        numba.set_num_threads(threads)
    _maybe_die(fn.__name__)
    out = fn(*args)
    return out[0] if len(out) == 1 else out


class RayEngine:
    """Submits task functions to the Ray cluster this process is connected to (see :func:`ray_session`)."""

    def __init__(self, threads_per_task: int = 1):
        self.ray = import_ray()
        if not self.ray.is_initialized():
            raise RuntimeError("Ray is not initialised: use solver.ray_engine.ray_session() or ray.init() first")
        self.threads = int(threads_per_task)
        self._remote = self.ray.remote(num_cpus=self.threads, max_retries=MAX_RETRIES, retry_exceptions=False)(_call)

    def submit(self, fn, *args, num_returns: int = 1, whole: bool = False) -> list:
        """Run ``fn(*args)`` as a Ray task with ``num_returns`` outputs (object references).  ``whole``: a step of
        an age held by one shard, which the driver waits on alone: it runs here, in the driver, on all cores (a
        task would add Ray's per-task latency to every small age), and its outputs are arrays."""
        if whole:
            import numba

            numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
            return list(fn(*[self.get(a) for a in args]))
        refs = self._remote.options(num_returns=num_returns, name=fn.__name__).remote(fn, self.threads, *args)
        return list(refs) if num_returns > 1 else [refs]

    def get(self, refs):
        """Values of object references (lists of them too); anything else is returned as it is."""
        if isinstance(refs, list):
            return [self.get(r) for r in refs]
        return self.ray.get(refs) if isinstance(refs, self.ray.ObjectRef) else refs

    def ready(self, ref) -> bool:
        return not isinstance(ref, self.ray.ObjectRef) or bool(self.ray.wait([ref], timeout=0)[0])

    def cpus(self) -> int:
        return max(1, int(self.ray.cluster_resources().get("CPU", 1)) // self.threads)


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


def private_ray_environment() -> None:
    """Prepare this process for a Ray whose processes all run on this machine, on the loopback only, with no
    usage statistics (see :data:`PRIVATE_RAY_ENV`).  Raises :class:`RayNotPrivate` if Ray was already imported
    without it: Ray has then fixed its node address, and a private Ray would listen on every interface."""
    os.environ.update(PRIVATE_RAY_ENV)
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None and constants.ENABLE_RAY_CLUSTER:
        raise RayNotPrivate(
            "Ray was imported before solver.ray_engine could keep a private Ray on the loopback (127.0.0.1): its "
            "processes would listen on every network interface. Start the private Ray before anything imports "
            "ray, or set RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 in the environment before starting Python"
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
            ray.init(address="local", num_cpus=num_cpus, include_dashboard=False, _node_ip_address="127.0.0.1",
                     log_to_driver=False)  # fmt: skip
    try:
        yield ray
    finally:
        ray.shutdown()
