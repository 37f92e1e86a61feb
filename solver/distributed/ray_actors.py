"""The workers of a build partitioned by material as Ray actors: one long-lived actor per machine, each running the
local kernels on all of its machine's cores, and the crossing afterstates (IDs forward, values back) sent from actor
to actor, not through the driver.  The driver holds a handful of references per worker and age.

Ray is an optional dependency (``pip install -e ".[distributed]"``); :mod:`solver.ray_engine` starts or joins the
cluster.
"""

from __future__ import annotations

import threading

import numpy as np

from ..ray_engine import import_ray
from ..spec import SolveSpec
from .column import ColumnWorker
from .material import Assignment

#: Seconds an actor waits for its peers' deliveries of one age before it gives up (a peer died).
DELIVERY_TIMEOUT = 3600.0
#: Calls an actor serves at once: its step, and the peers' deliveries that arrive meanwhile (a peer that sends
#: while this actor sends too must not wait for it: that would deadlock).
CONCURRENCY = 8


class ColumnActor:
    """A :class:`ColumnWorker` in a Ray actor, with handles to its peers (:meth:`connect`)."""

    def __init__(self, spec: SolveSpec, index: int, assignment: dict, work: str, threads: int):
        import numba

        numba.set_num_threads(threads or numba.config.NUMBA_NUM_THREADS)
        self.worker = ColumnWorker(spec, index, Assignment.from_json(assignment), work)
        self.peers: list = []
        self.arrived = threading.Condition()  # deliveries come in on other threads of the actor

    def _wait_for(self, what: str, age: int, delivered, expected) -> None:
        with self.arrived:
            if not self.arrived.wait_for(lambda: set(expected) <= set(delivered()), timeout=DELIVERY_TIMEOUT):
                missing = sorted(set(expected) - set(delivered()))
                raise TimeoutError(f"worker {self.worker.index}, age {age}: no {what} from workers {missing}")

    def connect(self, peers: list) -> None:
        self.peers = peers

    def seed(self, starts: np.ndarray):
        return self.worker.seed(starts)

    def resume_forward(self, starts: np.ndarray, finished: list, keys: np.ndarray, owners: np.ndarray):
        return self.worker.resume_forward(starts, finished, keys, owners)

    def expand(self, age: int) -> dict:
        return self.worker.expand(age)

    def push_crossing(self, age: int, new_keys: np.ndarray, new_owners: np.ndarray) -> int:
        """Send this actor's crossing afterstates of ``age`` to their owners' actors; returns once delivered."""
        out = self.worker.send_crossing(age, new_keys, new_owners)
        import_ray().get([self.peers[w].receive_crossing.remote(age, self.worker.index, ids) for w, ids in out.items()])
        return sum(int(ids.size) for ids in out.values())

    def receive_crossing(self, age: int, source: int, ids: np.ndarray) -> None:
        with self.arrived:
            self.worker.receive_crossing(age, source, ids)
            self.arrived.notify_all()

    def exchange_and_spawn(self, age: int, new_keys: np.ndarray, new_owners: np.ndarray, sources: list) -> tuple:
        """Send the crossing afterstates of ``age``, wait for those of ``sources``, spawn -> ``(sent, spawned)``."""
        sent = self.push_crossing(age, new_keys, new_owners)
        self._wait_for("crossing afterstates", age, lambda: self.worker.received.get(age, {}), sources)
        return sent, self.worker.spawn(age)

    def receive_values(self, age: int, owner: int, values: np.ndarray) -> None:
        with self.arrived:
            self.worker.receive_values(age, owner, values)
            self.arrived.notify_all()

    def begin_backward(self, ages: list) -> None:
        self.worker.begin_backward(ages)

    def settle(self, age: int) -> dict:
        """Value the afterstates of ``age``, send the crossing ones' values to the actors that sent them, wait for
        the values of those this actor sent, value the states."""
        out = self.worker.value_afterstates(age)
        import_ray().get([self.peers[w].receive_values.remote(age, self.worker.index, v) for w, v in out.items()])
        expected = self.worker.expected_values(age)
        self._wait_for("crossing values", age, lambda: self.worker.values_in.get(age, {}), expected)
        return self.worker.value_states(age)

    def write(self, count, out: str) -> dict:
        return self.worker.write(count, out)

    def start_values(self, age: int) -> tuple:
        return self.worker.start_values(age)


class RayWorkers:
    """``n_workers`` :class:`ColumnActor` s, spread one per node of the cluster as long as there are nodes (each
    asks for ``cpus_per_worker`` CPUs and runs that many numba threads).  The same steps as
    :class:`solver.distributed.driver.LocalWorkers`."""

    def __init__(self, spec: SolveSpec, assignment: Assignment, n_workers: int, work: str, cpus_per_worker: int = 1):
        ray = self.ray = import_ray()
        actor = ray.remote(num_cpus=cpus_per_worker, max_concurrency=CONCURRENCY)(ColumnActor)
        state = assignment.to_json()
        self.actors = [actor.options(scheduling_strategy="SPREAD").remote(spec, w, state, work, cpus_per_worker)
                       for w in range(n_workers)]  # fmt: skip
        ray.get([a.connect.remote(self.actors) for a in self.actors])

    def _all(self, method: str, *args) -> list:
        return self.ray.get([getattr(a, method).remote(*args) for a in self.actors])

    def seed(self, starts: list[np.ndarray]) -> list[int | None]:
        return self.ray.get([a.seed.remote(s) for a, s in zip(self.actors, starts, strict=True)])

    def resume_forward(self, starts: np.ndarray, finished: list[int], keys, owners) -> list[int | None]:
        return self._all("resume_forward", starts, finished, keys, owners)

    def expand(self, age: int) -> list[dict]:
        return self._all("expand", age)

    def exchange_and_spawn(self, age: int, new_keys: np.ndarray, new_owners: np.ndarray, sources) -> tuple:
        out = self.ray.get([a.exchange_and_spawn.remote(age, new_keys, new_owners, s)
                            for a, s in zip(self.actors, sources, strict=True)])  # fmt: skip
        return sum(sent for sent, _ in out), [spawned for _, spawned in out]

    def begin_backward(self, ages: list[int]) -> None:
        self._all("begin_backward", ages)

    def settle(self, age: int) -> list[dict]:
        return self._all("settle", age)

    def write(self, writer: int, count, out: str) -> dict:
        return self.ray.get(self.actors[writer].write.remote(count, out))

    def start_values(self, age: int) -> list[tuple]:
        return self._all("start_values", age)

    def close(self) -> None:
        for a in self.actors:
            self.ray.kill(a)
