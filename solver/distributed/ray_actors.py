"""The workers of a build partitioned by material as Ray actors: one long-lived actor per machine, each running the
local kernels on all of its machine's cores, and the crossing afterstates (IDs forward, values back) sent from actor
to actor, not through the driver.  The driver holds a handful of references per worker and age.

Ray is an optional dependency (``pip install -e ".[distributed]"``); :mod:`.session` starts or joins the cluster
and lists its machines.
"""

from __future__ import annotations

import functools
import json
import os
import socket
import threading
import time
from pathlib import Path

import numpy as np

from ..spec import SolveSpec
from .column import ColumnWorker
from .material import Assignment, Changes
from .session import Machine, import_ray

#: Seconds an actor waits for its peers' deliveries of one age before it gives up (a peer died).
DELIVERY_TIMEOUT = 3600.0
#: Times Ray restarts a dead actor (a machine lost, a process killed), and times the build starts again from its
#: work directory after losing one.
MAX_RESTARTS = 3
#: Seconds to wait for a restarted actor to come up.
RESTART_TIMEOUT = 300.0
#: Fault injection for the tests: ``STEP:WORKER:AGE[,...];DIR`` in the driver's environment makes worker ``WORKER``'s
#: process exit abruptly (as if killed) in the middle of its step ``STEP`` (``expand`` or ``settle``) of ``AGE``, once:
#: a marker in ``DIR`` (holding the dead process's ID) keeps the restarted actor alive.
KILL_ENV = "SOLVED2048_KILL_WORKER_ONCE"
#: Calls an actor serves at once: its step, and the peers' deliveries that arrive meanwhile (a peer that sends
#: while this actor sends too must not wait for it: that would deadlock).
CONCURRENCY = 8


class Reset(RuntimeError):
    """The actor was reset while a step waited for its peers: that step's build attempt is over."""


def on_its_cores(method):
    """Run an actor's step with the numba threads its machine gives it.  numba keeps the number of threads per
    thread, and Ray runs each call on a thread of its own: without this a step would use every core of the host
    (on a host shared by several actors, each would run as many kernel threads as the host has cores)."""

    @functools.wraps(method)
    def run(self, *args):
        import numba

        numba.set_num_threads(self.threads)
        return method(self, *args)

    return run


class ColumnActor:
    """A :class:`ColumnWorker` in a Ray actor, with handles to its peers (:meth:`connect`).

    Deliveries from peers arrive on other threads of the actor while a step runs or waits.  A step works on the
    worker it started with: after :meth:`reset`, a step of the abandoned attempt still running finishes on the old
    worker (whose files it writes hold what the new attempt writes again), and one still waiting gives up."""

    def __init__(
        self, spec: SolveSpec, index: int, assignment: dict, work: str, threads: int, kill_plan: str | None = None
    ):
        import numba

        cores = numba.config.NUMBA_NUM_THREADS
        self.threads = min(threads or cores, cores)
        self.spec, self.index, self.work, self.kill_plan = spec, index, work, kill_plan
        self.peers: list = []
        self.arrived = threading.Condition()
        self.epoch = 0
        self.worker = ColumnWorker(spec, index, Assignment.from_json(assignment), work)
        where = Path(work) / "actors" / f"w{index:04d}.json"  # where each worker runs, for its operators (and tests)
        where.parent.mkdir(exist_ok=True)
        where.write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "started": time.time()}))

    def reset(self, assignment: dict) -> None:
        """Forget everything held in memory (the build starts again from the work directory)."""
        try:
            self.worker.close()  # its saves under way finish first: the new worker writes the same files
        except Exception:  # noqa: BLE001 - a save of the abandoned attempt failed: the new attempt writes it again
            pass
        with self.arrived:
            self.epoch += 1
            self.worker = ColumnWorker(self.spec, self.index, Assignment.from_json(assignment), self.work)
            self.arrived.notify_all()

    def _maybe_die(self, step: str, age: int) -> None:
        if not self.kill_plan:
            return
        victims, marker_dir = self.kill_plan.split(";", 1)
        victim = f"{step}:{self.index}:{age}"
        if victim not in victims.split(","):
            return
        try:
            marker = os.open(os.path.join(marker_dir, victim.replace(":", "-")), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.write(marker, str(os.getpid()).encode())
        os.close(marker)
        os._exit(1)  # no exception reaches Ray: the process is gone, as if killed

    def _wait_for(self, what: str, age: int, epoch: int, delivered, expected) -> None:
        with self.arrived:
            done = self.arrived.wait_for(
                lambda: self.epoch != epoch or set(expected) <= set(delivered()), timeout=DELIVERY_TIMEOUT
            )
            if self.epoch != epoch:
                raise Reset(f"worker {self.index}, age {age}: reset while waiting for {what}")
            if not done:
                missing = sorted(set(expected) - set(delivered()))
                raise TimeoutError(f"worker {self.index}, age {age}: no {what} from workers {missing}")

    def connect(self, peers: list) -> None:
        self.peers = peers

    @on_its_cores
    def kernel_threads(self) -> int:
        """The numba threads a step of this actor runs its kernels on."""
        import numba

        return numba.get_num_threads()

    @on_its_cores
    def seed(self, starts: np.ndarray):
        return self.worker.seed(starts)

    @on_its_cores
    def resume_forward(self, starts: np.ndarray, finished: list, changes: Changes):
        return self.worker.resume_forward(starts, finished, changes)

    @on_its_cores
    def expand(self, age: int) -> dict:
        out = self.worker.expand(age)
        self._maybe_die("expand", age)
        return out

    def receive_crossing(self, age: int, source: int, ids: np.ndarray) -> None:
        with self.arrived:
            self.worker.receive_crossing(age, source, ids)
            self.arrived.notify_all()

    def receive_handoff(self, age: int, source: int, ids: np.ndarray) -> None:
        with self.arrived:
            self.worker.receive_handoff(age, source, ids)

    @on_its_cores
    def exchange_and_spawn(self, age: int, changes: Changes, sources: list) -> tuple:
        """Take the columns split and the keys assigned or moved in ``age``, send the crossing afterstates of
        ``age`` to their owners' actors, spawn this worker's own afterstates while they travel, wait for those of
        ``sources``, spawn them, and hand the states of age + 2 that other workers own now to their actors
        (delivered before this returns, so before any actor expands age + 2) -> ``(crossing afterstates sent,
        spawn result)``."""
        ray = import_ray()
        worker, epoch = self.worker, self.epoch
        out = worker.send_crossing(age, changes)
        sending = [self.peers[w].receive_crossing.remote(age, self.index, ids) for w, ids in out.items()]
        worker.spawn_own(age)
        self._wait_for("crossing afterstates", age, epoch, lambda: worker.received.get(age, {}), sources)
        spawned = worker.spawn(age)
        ray.get(sending)
        ray.get([self.peers[w].receive_handoff.remote(age, self.index, ids) for w, ids in worker.hand_off(age).items()])
        return sum(int(ids.size) for ids in out.values()), spawned

    def receive_values(self, age: int, owner: int, values: np.ndarray) -> None:
        with self.arrived:
            self.worker.receive_values(age, owner, values)
            self.arrived.notify_all()

    @on_its_cores
    def end_forward(self) -> None:
        """Wait until the worker saved every age it spawned, and stop its writer thread."""
        self.worker.close()

    def begin_backward(self, ages: list) -> None:
        self.worker.begin_backward(ages)

    @on_its_cores
    def settle(self, age: int) -> dict:
        """Value the crossing afterstates of ``age`` and send their values to the actors that sent them, value the
        other afterstates while they travel, wait for the values of those this actor sent, value the states, and
        send the values of the states handed to this actor back to the actors that handed them (delivered before
        this returns, so before age - 2 starts)."""
        ray = import_ray()
        worker, epoch = self.worker, self.epoch
        out = worker.value_crossing(age)
        sending = [self.peers[w].receive_values.remote(age, self.index, v) for w, v in out.items()]
        worker.value_rest(age)
        self._maybe_die("settle", age)
        expected = worker.expected_values(age)
        self._wait_for("crossing values", age, epoch, lambda: worker.values_in.get(age, {}), expected)
        valued = worker.value_states(age)
        ray.get(sending)
        ray.get([self.peers[w].receive_handback.remote(age, self.index, v) for w, v in worker.hand_back(age).items()])
        return valued

    def receive_handback(self, age: int, owner: int, values: np.ndarray) -> None:
        self.worker.receive_handback(age, owner, values)

    @on_its_cores
    def write(self, count, out: str) -> dict:
        return self.worker.write(count, out)

    @on_its_cores
    def start_values(self, age: int) -> tuple:
        return self.worker.start_values(age)


class RayWorkers:
    """One :class:`ColumnActor` per :class:`~.session.Machine`, on that machine's node with its CPUs (numba
    threads).  The same steps as :class:`solver.distributed.driver.LocalWorkers`.  Ray restarts an actor that dies
    (up to ``MAX_RESTARTS`` times); the step that was running fails, and :func:`build_on_actors` resumes the build
    from its work directory."""

    def __init__(self, spec: SolveSpec, assignment: Assignment, machines: list[Machine], work: str):
        ray = self.ray = import_ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        actor = ray.remote(max_concurrency=CONCURRENCY, max_restarts=MAX_RESTARTS, max_task_retries=0)(ColumnActor)
        state, kill_plan = assignment.to_json(), os.environ.get(KILL_ENV)
        self.actors = []
        for w, m in enumerate(machines):
            # soft: an actor whose machine is lost may be restarted on another one with the CPUs free
            where = "SPREAD" if m.node_id is None else NodeAffinitySchedulingStrategy(m.node_id, soft=True)
            options = actor.options(num_cpus=m.cpus, scheduling_strategy=where)
            self.actors.append(options.remote(spec, w, state, work, m.cpus, kill_plan))
        self.machines = machines
        self.connect(time.monotonic() + RESTART_TIMEOUT)

    def connect(self, deadline: float) -> None:
        """Give every actor its peers' handles (again after a restart: a restarted actor starts empty), once every
        actor is up; :class:`TimeoutError` if some are not by ``deadline`` (``time.monotonic()``)."""
        refs = [a.connect.remote(self.actors) for a in self.actors]
        try:
            self._gather(refs, deadline)
        except TimeoutError:
            waiting = [w for w, r in enumerate(refs) if not self.ray.wait([r], timeout=0)[0]]
            free = self.ray.available_resources().get("CPU", 0.0)  # an actor holds its CPUs while it starts
            for a in self.actors:
                self.ray.kill(a)
            raise TimeoutError(
                f"workers {waiting} did not start within {RESTART_TIMEOUT:.0f} s: each asks for its machine's "
                f"CPUs ({', '.join(str(self.machines[w].cpus) for w in waiting)}), and the cluster has {free:g} "
                "CPUs free"
            ) from None

    def reset(self, assignment: Assignment) -> RayWorkers:
        """Every actor forgets what it holds in memory and gets its peers again, once every actor is up (a
        restarted one takes a few seconds); returns the group."""
        from ray.exceptions import ActorUnavailableError

        deadline = time.monotonic() + RESTART_TIMEOUT
        while True:
            try:
                self.connect(deadline)
                break
            except ActorUnavailableError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        self._all("reset", assignment.to_json())
        return self

    def _gather(self, refs: list, deadline: float | None = None) -> list:
        """The results of ``refs``; the first failure is raised as soon as it is known (an actor waiting for a dead
        peer's deliveries would otherwise keep the driver waiting too); :class:`TimeoutError` if some are still
        running at ``deadline`` (``time.monotonic()``; default: no limit)."""
        pending = list(refs)
        while pending:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, pending = self.ray.wait(pending, num_returns=1, timeout=timeout)
            if not ready:
                raise TimeoutError(f"{len(pending)} of {len(refs)} calls still running")
            self.ray.get(ready)
        return self.ray.get(list(refs))

    def _all(self, method: str, *args) -> list:
        return self._gather([getattr(a, method).remote(*args) for a in self.actors])

    def seed(self, starts: list[np.ndarray]) -> list[int | None]:
        return self._gather([a.seed.remote(s) for a, s in zip(self.actors, starts, strict=True)])

    def resume_forward(self, starts: np.ndarray, finished: list[int], changes: Changes) -> list[int | None]:
        return self._all("resume_forward", starts, finished, changes)

    def expand(self, age: int) -> list[dict]:
        return self._all("expand", age)

    def exchange_and_spawn(self, age: int, changes: Changes, sources) -> tuple:
        out = self._gather(
            [a.exchange_and_spawn.remote(age, changes, s) for a, s in zip(self.actors, sources, strict=True)]
        )
        return sum(sent for sent, _ in out), [spawned for _, spawned in out]

    def end_forward(self) -> None:
        self._all("end_forward")

    def begin_backward(self, ages: list[int]) -> None:
        self._all("begin_backward", ages)

    def settle(self, age: int) -> list[dict]:
        return self._all("settle", age)

    def start_write(self, writer: int, count, out: str):
        """Actor ``writer`` writes the table file of ``count.age`` on another of its threads, while the next age
        settles; returns its reference."""
        return self.actors[writer].write.remote(count, out)

    def finish_write(self, ref) -> dict:
        return self._gather([ref])[0]

    def start_values(self, age: int) -> list[tuple]:
        return self._all("start_values", age)

    def close(self) -> None:
        for a in self.actors:
            self.ray.kill(a)


def build_on_actors(spec: SolveSpec, out, machines: list[Machine], **options):
    """:func:`solver.distributed.driver.build_by_material` with one :class:`ColumnActor` per machine of the
    connected Ray cluster (:func:`.session.cluster_machines`); when an actor dies the build starts again from its
    work directory (up to ``MAX_RESTARTS`` times) with the restarted actor.  Returns ``(report, restarts)``."""
    from ray.exceptions import RayActorError

    from .driver import build_by_material

    group: list[RayWorkers] = []

    def workers(spec_, assignment, n, work):
        if not group:
            group.append(RayWorkers(spec_, assignment, machines, work))
            return group[0]
        return group[0].reset(assignment)

    try:
        for restarts in range(MAX_RESTARTS + 1):
            try:
                return build_by_material(spec, out, len(machines), make_workers=workers, **options), restarts
            except RayActorError:
                if restarts == MAX_RESTARTS:
                    raise
    finally:
        if group:
            group[0].close()
