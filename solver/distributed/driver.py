"""The age loop of a build partitioned by material (:mod:`solver.distributed`), over workers held in this process.

:func:`build_by_material` runs the forward pass age by age (expand on every worker, assign the new keys, exchange
the crossing afterstates, spawn), then the backward pass (value the afterstates, exchange their values, value the
states) and writes each age of the table from the workers' parts.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from .. import codec
from ..build import BuildReport
from ..forward import canonical_starts
from ..shards import merge_shards
from ..spec import SolveSpec
from ..table_v2 import CodedLayer, TableWriterV2, encode_boards
from ..workdir import AgeCount
from .column import ColumnWorker
from .material import Assignment, material_keys

#: The default threshold: columns are the multisets of tiles >= 2**DEFAULT_LOW.
DEFAULT_LOW = 3


class LocalWorkers:
    """The workers of a build in this process; each step runs on every worker in turn and returns their results.
    The Ray group (:class:`solver.distributed.ray_actors.RayWorkers`) has the same steps."""

    def __init__(self, spec: SolveSpec, assignment: Assignment, n_workers: int):
        self.workers = [ColumnWorker(spec, w, assignment.copy()) for w in range(n_workers)]

    def seed(self, starts: list[np.ndarray]) -> list[int | None]:
        return [w.seed(s) for w, s in zip(self.workers, starts, strict=True)]

    def expand(self, age: int) -> list[dict]:
        return [w.expand(age) for w in self.workers]

    def exchange_and_spawn(self, age: int, new_keys: np.ndarray, new_owners: np.ndarray, sources) -> tuple:
        """Each worker sends its crossing afterstates of ``age`` to their owners (``sources[w]``: the workers that
        send to worker w), then spawns its afterstates -> ``(crossing afterstates sent, [spawn result...])``."""
        sent = 0
        for w in self.workers:
            for owner, ids in w.send_crossing(age, new_keys, new_owners).items():
                self.workers[owner].receive_crossing(age, w.index, ids)
                sent += ids.size
        for w in self.workers:
            if set(w.received.get(age, {})) != set(sources[w.index]):
                raise RuntimeError(
                    f"age {age}: worker {w.index} expected crossing afterstates from "
                    f"{sorted(sources[w.index])}, got them from {sorted(w.received.get(age, {}))}"
                )
        return sent, [w.spawn(age) for w in self.workers]

    def settle(self, age: int) -> list[tuple]:
        """Each worker values its afterstates of ``age``, sends the crossing ones' values back, and values its
        states -> per worker ``(afterstates, their values, states, state values)``."""
        for w in self.workers:
            for source, values in w.value_afterstates(age).items():
                self.workers[source].receive_values(age, w.index, values)
        return [w.value_states(age) for w in self.workers]


class MaterialBuild:
    """Drives one build over a group of workers (:class:`LocalWorkers`, or ``make_workers(spec, assignment, n)``
    for another kind); see the module docstring."""

    def __init__(self, spec: SolveSpec, n_workers: int, low: int, progress: bool = True, make_workers=LocalWorkers):
        self.spec, self.progress, self.n_workers = spec, progress, n_workers
        self.assignment = Assignment(n_workers, low)
        self.start_ids, self.start_probs = canonical_starts(spec)
        keys, counts = np.unique(material_keys(self.start_ids, spec.cells, low), return_counts=True)
        self.assignment.assign(dict(zip((int(k) for k in keys), (int(c) for c in counts), strict=True)))
        self.workers = make_workers(spec, self.assignment.copy(), n_workers)
        self.counts: dict[int, AgeCount] = {}
        self.crossing = 0  # crossing afterstates exchanged (IDs forward, values backward)

    def forward(self) -> None:
        owners = self.assignment.owners_of(self.start_ids, self.spec.cells)
        starts = [np.sort(self.start_ids[owners == w]) for w in range(self.n_workers)]
        upcoming = set(self.workers.seed(starts)) - {None}
        bar = tqdm(desc=f"forward {self.spec.board} ({self.n_workers} workers)", unit=" ages",
                   disable=not self.progress)  # fmt: skip
        try:
            while upcoming:
                age = min(upcoming)
                expanded = self.workers.expand(age)
                key_work: dict[int, int] = {}
                for e in expanded:
                    for key, n in e["key_work"].items():
                        key_work[key] = key_work.get(key, 0) + n
                new = self.assignment.assign(key_work)
                sent, spawned = self.workers.exchange_and_spawn(age, *new, self.senders(expanded))
                self.crossing += sent
                upcoming = {s["next_age"] for s in spawned} - {None}
                self.counts[age] = AgeCount(age, sum(e["states"] for e in expanded),
                                            sum(s["afterstates"] for s in spawned),
                                            sum(e["terminal"] for e in expanded))  # fmt: skip
                bar.update()
        finally:
            bar.close()

    def senders(self, expanded: list[dict]) -> list[list[int]]:
        """For each worker, the workers whose expanded afterstates (``expanded[w]["key_work"]``) include some of its
        keys: those that send it crossing afterstates."""
        out: list[set[int]] = [set() for _ in range(self.n_workers)]
        for w, e in enumerate(expanded):
            keys = np.array(sorted(e["key_work"]), np.uint64)
            owners = self.assignment.owners[np.searchsorted(self.assignment.keys, keys)] if keys.size else []
            for owner in set(int(o) for o in owners) - {w}:
                out[owner].add(w)
        return [sorted(s) for s in out]

    def backward(self, table: TableWriterV2) -> None:
        bar = tqdm(total=len(self.counts), desc=f"backward {self.spec.board} ({self.n_workers} workers)",
                   unit=" ages", disable=not self.progress)  # fmt: skip
        value_code = codec.value_code_for(self.spec.objective)
        try:
            for age in sorted(self.counts, reverse=True):
                parts = self.workers.settle(age)
                ids, values = merge_shards([p[0] for p in parts], [p[1] for p in parts])
                states, state_values = merge_shards([p[2] for p in parts], [p[3] for p in parts])
                upper, lower, low_bits = encode_boards(age, ids, self.spec)
                layer = CodedLayer.encode(self.counts[age], self.spec, upper, lower, low_bits, values, value_code)
                table.write_age(layer, states, state_values)
                bar.update()
        finally:
            bar.close()


def build_by_material(
    spec: SolveSpec,
    out: str | os.PathLike,
    n_workers: int = 2,
    low: int = DEFAULT_LOW,
    layout: str = "directory",
    progress: bool = True,
    make_workers=LocalWorkers,
) -> BuildReport:
    """Solve ``spec`` into the v2 table ``out`` with ``n_workers`` workers (in this process by default; see
    :class:`MaterialBuild`), columns keyed by the multiset of tiles >= ``2**low``.  The table is bit for bit the
    local build's."""
    run = MaterialBuild(spec, n_workers, low, progress, make_workers)
    t0 = time.perf_counter()
    run.forward()
    t1 = time.perf_counter()
    table = TableWriterV2(Path(out), spec, run.start_ids, run.start_probs, layout=layout)
    try:
        run.backward(table)
        t2 = time.perf_counter()
        attrs = table.finish([run.counts[a] for a in sorted(run.counts)])
    except BaseException:
        table.abort()
        raise
    return BuildReport(Path(out), attrs, t1 - t0, t2 - t1, time.perf_counter() - t2, n_workers)
