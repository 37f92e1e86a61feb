"""The age loop of a build partitioned by material (:mod:`solver.distributed`).

:func:`build_by_material` runs the forward pass age by age (expand on every worker, assign the new keys, exchange
the crossing afterstates, spawn), then the backward pass (value the afterstates, exchange the crossing values,
value the states; one worker per age writes its table file).  Each finished age is journalled in the work
directory (:class:`solver.workdir.WorkDir`) with the keys it assigned, so that a stopped build resumes from the
last journalled age with the same owners.  The workers are a group: :class:`LocalWorkers` in this process, or
:class:`solver.distributed.ray_actors.RayWorkers`, with the same steps.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from ..build import HOLD_BYTES, BuildReport
from ..format.common import SOLVER_VERSION
from ..format.v2 import TableWriterV2
from ..forward import canonical_starts
from ..spec import SolveSpec
from ..workdir import AgeCount, WorkDir, journal_entries, load_array
from .column import ColumnWorker, part_file
from .lookups import merge_parts
from .material import Assignment, Changes, key_counts, with_states_ahead

#: The default threshold: columns are the multisets of tiles >= 2**DEFAULT_LOW.
DEFAULT_LOW = 3


#: The default tolerance of the rebalancing: keys move while an age's busiest worker holds more than 1.05 times an
#: even share of its work (:func:`with_states_ahead`, :meth:`Assignment.rebalance`).
DEFAULT_TOLERANCE = 0.05
#: The default splitting threshold: a column whose work in an age (:func:`with_states_ahead`) exceeds this many
#: even shares of the age cannot be balanced whole, and is split across a group of workers (:meth:`Assignment.split`).
DEFAULT_SPLIT = 1 + DEFAULT_TOLERANCE
EMPTY_CHANGES = np.empty(0, np.uint64), np.empty(0, np.int64)


def final_owners(keys, owners) -> tuple[np.ndarray, np.ndarray]:
    """``(keys uint64[k], owners int64[k])``, each key once with the last of its owners in ``owners``."""
    last = dict(zip((int(k) for k in keys), (int(o) for o in owners), strict=True))
    return np.array(list(last), np.uint64), np.array(list(last.values()), np.int64)


def summed(counts) -> dict[int, int]:
    """The sum of several ``{key: count}``."""
    out: dict[int, int] = {}
    for part in counts:
        for key, n in part.items():
            out[key] = out.get(key, 0) + n
    return out


def seconds(results: list[dict], started: float) -> dict[str, list[float] | float]:
    """What the journal keeps of an age's seconds: each worker's in its steps (``busy_s``), before the exchange
    (``first_s``) and in the steps that may run while it travels (``under_s``, with the afterstates they spawned
    or valued, ``under_items``), from the workers' ``results``, and the driver's wall time since ``started``
    (``time.perf_counter()``: the steps, the exchanges and the waits)."""
    return {
        **{name: [round(r[name], 3) for r in results] for name in ("busy_s", "first_s", "under_s")},
        "under_items": [int(r["under_items"]) for r in results],
        "wall_s": round(time.perf_counter() - started, 3),
    }


class LocalWorkers:
    """The workers of a build in this process; each step runs on every worker in turn.  They share one machine's
    memory for the layers held for the backward pass (the local build's ``HOLD_BYTES``)."""

    def __init__(self, spec: SolveSpec, assignment: Assignment, n_workers: int, work):
        hold = HOLD_BYTES // n_workers
        self.workers = [ColumnWorker(spec, w, assignment.copy(), work, hold) for w in range(n_workers)]

    def seed(self, starts: list[np.ndarray]) -> list[int | None]:
        return [w.seed(s) for w, s in zip(self.workers, starts, strict=True)]

    def resume_forward(self, starts: np.ndarray, finished: list[int], changes: Changes) -> list[int | None]:
        return [w.resume_forward(starts, finished, changes) for w in self.workers]

    def expand(self, age: int) -> list[dict]:
        return [w.expand(age) for w in self.workers]

    def exchange_and_spawn(self, age: int, changes: Changes, sources) -> tuple:
        """Each worker takes the columns split and the keys assigned or moved in ``age`` (``changes``), sends its
        crossing afterstates of ``age`` to their owners (``sources[w]``: the workers that send to worker w), spawns
        its afterstates and hands the children of age + 2 that other workers own now to them -> ``(crossing
        afterstates sent, [spawn result...])``."""
        sent = 0
        for w in self.workers:
            for owner, ids in w.send_crossing(age, changes).items():
                self.workers[owner].receive_crossing(age, w.index, ids)
                sent += ids.size
        for w in self.workers:
            if set(w.received.get(age, {})) != set(sources[w.index]):
                raise RuntimeError(
                    f"age {age}: worker {w.index} expected crossing afterstates from "
                    f"{sorted(sources[w.index])}, got them from {sorted(w.received.get(age, {}))}"
                )
        for w in self.workers:
            w.spawn_own(age)
        spawned = [w.spawn(age) for w in self.workers]
        for w in self.workers:
            for owner, ids in w.hand_off(age).items():
                self.workers[owner].receive_handoff(age, w.index, ids)
        return sent, spawned

    def end_forward(self) -> None:
        """Wait until every worker saved every age it spawned, and stop their writer threads (the backward pass
        saves nothing on them)."""
        for w in self.workers:
            w.close()

    def begin_backward(self, ages: list[int]) -> None:
        for w in self.workers:
            w.begin_backward(ages)

    def settle(self, age: int) -> list[dict]:
        """Each worker values the crossing afterstates of ``age`` and sends their values back, values its other
        afterstates and its states, and sends the values of the states handed to it back to the workers that
        handed them."""
        for w in self.workers:
            for source, values in w.value_crossing(age).items():
                self.workers[source].receive_values(age, w.index, values)
        for w in self.workers:
            w.value_rest(age)
        valued = [w.value_states(age) for w in self.workers]
        for w in self.workers:
            for source, values in w.hand_back(age).items():
                self.workers[source].receive_handback(age, w.index, values)
        return valued

    def start_write(self, writer: int, count: AgeCount, out: str):
        """Worker ``writer`` writes the table file of ``count.age``; here at once: the handle is the result."""
        return self.workers[writer].write(count, out)

    def finish_write(self, handle) -> dict:
        """What :meth:`start_write` wrote: ``{"id_bytes", "value_bytes"}``."""
        return handle

    def start_values(self, age: int) -> list[tuple[np.ndarray, np.ndarray]]:
        return [w.start_values(age) for w in self.workers]


class MaterialBuild:
    """Drives one build; see the module docstring.  ``make_workers(spec, assignment, n_workers, work)`` makes the
    group of workers."""

    def __init__(
        self,
        spec: SolveSpec,
        n_workers: int,
        low: int,
        work: WorkDir,
        progress: bool = True,
        make_workers=LocalWorkers,
        tolerance: float | None = DEFAULT_TOLERANCE,
        split: float | None = DEFAULT_SPLIT,
    ):
        self.spec, self.progress, self.n_workers, self.work = spec, progress, n_workers, work
        self.tolerance, self.split = tolerance, split
        self.assignment = Assignment(n_workers, low)
        self.start_ids, self.start_probs = canonical_starts(spec)
        self.start_ages = sorted({int(a) for a in spec.ages(self.start_ids)})
        self.assignment.assign(key_counts(self.start_ids, spec.cells, low))
        self.workers = make_workers(spec, self.assignment.copy(), n_workers, str(work.path.resolve()))
        self.counts: dict[int, AgeCount] = {c.age: c for c in work.forward_counts}
        #: the last age's afterstates by key, for :func:`with_states_ahead` (none after a resume: the first age then
        #: weighs its keys by their afterstates alone, every ratio being 1)
        self.earlier: dict[int, dict[int, int]] = {}

    def _restore_assignment(self) -> Changes:
        """The columns the journalled ages split, and the keys they assigned or moved, each with its last owner,
        applied to the assignment."""
        keys, owners, split_keys, split_parts = [], [], [], []
        for age in sorted(self.counts):
            extra = self.work.forward_extra(age)
            keys += [int(k) for k in extra.get("keys", [])] + [int(k) for k in extra.get("moved_keys", [])]
            owners += [int(o) for o in extra.get("owners", [])] + [int(o) for o in extra.get("moved_to", [])]
            split_keys += [int(k) for k in extra.get("split_keys", [])]
            split_parts += [int(p) for p in extra.get("split_parts", [])]
        changes = Changes(*final_owners(keys, owners), split_keys, split_parts)
        changes.apply_to(self.assignment)
        return changes

    def forward(self) -> None:
        if self.counts:
            finished = sorted(self.counts)
            upcoming = set(self.workers.resume_forward(self.start_ids, finished, self._restore_assignment()))
        else:
            owners = self.assignment.owners_of(self.start_ids, self.spec.cells)
            upcoming = set(self.workers.seed([np.sort(self.start_ids[owners == w]) for w in range(self.n_workers)]))
        upcoming -= {None}
        bar = tqdm(
            desc=f"forward {self.spec.board} ({self.n_workers} workers)",
            unit=" ages",
            initial=len(self.counts),
            disable=not self.progress,
        )
        waiting = None  # (count, extra) of the age spawned last: journalled once its files are saved
        try:
            while upcoming:
                age = min(upcoming)
                started = time.perf_counter()
                expanded = self.workers.expand(age)  # returns once every worker saved the ages spawned so far
                if waiting is not None:
                    self.work.record_forward(waiting[0], extra=waiting[1])
                    bar.update()
                afterstates_by_key = summed(e["key_work"] for e in expanded)
                states_by_key = summed(e["key_states"] for e in expanded)
                key_work = with_states_ahead(afterstates_by_key, states_by_key, self.earlier.pop(age - 2, {}))
                self.earlier = {age: afterstates_by_key}
                split_keys, split_parts = EMPTY_CHANGES
                if self.split is not None:
                    split_keys, split_parts, key_work = self.assignment.split(key_work, self.split)
                new_keys, new_owners = self.assignment.assign(key_work)
                moved_keys, moved_to = EMPTY_CHANGES
                if self.tolerance is not None:
                    moved_keys, moved_to = self.assignment.rebalance(key_work, self.tolerance)
                changes = Changes(
                    *final_owners([*new_keys, *moved_keys], [*new_owners, *moved_to]), split_keys, split_parts
                )
                sent, spawned = self.workers.exchange_and_spawn(age, changes, self.senders(expanded))
                upcoming = {s["next_age"] for s in spawned} - {None}
                count = AgeCount(
                    age,
                    sum(e["states"] for e in expanded),
                    sum(s["afterstates"] for s in spawned),
                    sum(e["terminal"] for e in expanded),
                )
                assigned = {
                    "keys": [str(int(k)) for k in new_keys],
                    "owners": [int(o) for o in new_owners],
                    "moved_keys": [str(int(k)) for k in moved_keys],
                    "moved_to": [int(o) for o in moved_to],
                    "split_keys": [str(int(k)) for k in split_keys],
                    "split_parts": [int(p) for p in split_parts],
                }
                handed = sum(s["handed_off"] for s in spawned)
                boards = {
                    "states_w": [e["states"] for e in expanded],
                    "afterstates_w": [s["afterstates"] for s in spawned],
                }
                extra = {**assigned, "crossing": sent, "handed_off": handed, **boards, **seconds(spawned, started)}
                waiting = count, extra
                self.counts[age] = count
            self.workers.end_forward()
            if waiting is not None:
                self.work.record_forward(waiting[0], extra=waiting[1])
                bar.update()
        finally:
            bar.close()
        self.work.finish_forward()

    def senders(self, expanded: list[dict]) -> list[list[int]]:
        """For each worker, the workers whose expanded afterstates (``expanded[w]["key_work"]``) include some of its
        keys or of its parts of their columns: those that send it crossing afterstates (maybe none)."""
        out: list[set[int]] = [set() for _ in range(self.n_workers)]
        for w, e in enumerate(expanded):
            for owner in self.assignment.owners_reached(list(e["key_work"])) - {w}:
                out[owner].add(w)
        return [sorted(s) for s in out]

    def backward(self, table: TableWriterV2) -> None:
        done = self.work.backward_done
        for age in sorted(done):
            code = self.work.backward_code(age)
            table.record_written(age, code["id_bytes"], code["value_bytes"])
        for age in self.start_ages:
            if age in done:
                self.take_start_values(table, age)
        todo = [a for a in sorted(self.counts, reverse=True) if a not in done]
        self.workers.begin_backward(sorted(self.counts))
        desc = f"backward {self.spec.board} ({self.n_workers} workers)"
        bar = tqdm(
            total=len(self.counts),
            initial=len(self.counts) - len(todo),
            unit=" ages",
            desc=desc,
            disable=not self.progress,
        )
        writing = None  # (age, handle, seconds): the age whose table file is being written while the next settles
        try:
            for age in todo:
                started = time.perf_counter()
                busy = seconds(self.workers.settle(age), started)
                if writing is not None:
                    self.finish_age(table, *writing)
                    bar.update()
                handle = self.workers.start_write(
                    (age // 2) % self.n_workers, self.counts[age], str(table.out.resolve())
                )
                writing = age, handle, busy
            if writing is not None:
                self.finish_age(table, *writing)
                bar.update()
        finally:
            bar.close()
        for leftover in [*self.work.path.glob("forward/*.handoff_*"), *self.work.path.glob("backward/*.handback*")]:
            leftover.unlink()  # the first ages' hand-offs, and the empty ones after the last age

    def finish_age(self, table: TableWriterV2, age: int, handle, busy: dict) -> None:
        """Once the table file of ``age`` is written (``handle`` from ``start_write``): its start values, the
        journal, and the work files no lower age reads.  Called after the next age settled, so that a writer
        codes one age while every worker values the next (as the local build's writer thread does)."""
        started = time.perf_counter()
        code = self.workers.finish_write(handle)
        code = {**code, **busy, "write_wait_s": round(time.perf_counter() - started, 3)}
        if age in self.start_ages:
            self.take_start_values(table, age)
        table.record_written(age, code["id_bytes"], code["value_bytes"])
        self.work.record_backward(age, code)
        self.discard_finished(age)

    def take_start_values(self, table: TableWriterV2, age: int) -> None:
        parts = self.workers.start_values(age)
        states, values = merge_parts([p[0] for p in parts], [p[1] for p in parts])
        table.starts.take(age, states, values)

    def discard_finished(self, age: int) -> None:
        """Once ``age`` is journalled, no lower age reads its afterstates, crossing afterstates and their values,
        nor the states of ``age + 4``, the states handed off in that age and their values (start ages keep
        theirs: their values are taken again on resume)."""
        coded = ("upper", "lower", "code")
        doomed = [("forward", age, name) for name in ("sent", "sent_counts", "received", "received_counts")]
        doomed += [("forward", age, f"afterstates_{part}") for part in coded] + [("backward", age, "values")]
        late = age + 4
        if late in self.counts:
            doomed += [("forward", late, f"handoff_{way}{n}") for way in ("sent", "received") for n in ("", "_counts")]
        if late in self.counts and late not in self.start_ages:
            doomed += [("forward", late, f"states_{part}") for part in coded] + [("backward", late, "state_values")]
        for stage, a, name in doomed:
            for w in range(self.n_workers):
                if name == "handoff_sent_counts":  # the values handed back go with the states handed off
                    counts = part_file(self.work.path, stage, a, w, name)
                    for owner in np.flatnonzero(load_array(counts)) if counts.exists() else ():
                        part_file(self.work.path, "backward", a, w, f"handback{owner:04d}").unlink(missing_ok=True)
                part_file(self.work.path, stage, a, w, name).unlink(missing_ok=True)


def run_directory_build(run, spec: SolveSpec, out: Path, work: WorkDir, keep_work: bool, workers: int) -> BuildReport:
    """A resumable build into the v2 table directory ``out`` by ``run`` (a :class:`MaterialBuild`): the forward
    pass unless the work directory holds it, then the backward pass; the work directory is closed, and removed
    after success unless ``keep_work``."""
    table = None
    try:
        t0 = time.perf_counter()
        if not work.forward_complete:
            run.forward()
        t1 = time.perf_counter()
        table = TableWriterV2(out, spec, run.start_ids, run.start_probs, layout="directory")
        run.backward(table)
        t2 = time.perf_counter()
        attrs = table.finish(work.forward_counts)
    except BaseException:
        if table is not None:
            table.abort()
        work.close()
        raise
    work.close()
    if not keep_work:
        shutil.rmtree(work.path)
    return BuildReport(out, attrs, t1 - t0, t2 - t1, time.perf_counter() - t2, workers)


def build_by_material(
    spec: SolveSpec,
    out: str | os.PathLike,
    n_workers: int = 2,
    low: int = DEFAULT_LOW,
    work_dir: str | os.PathLike | None = None,
    progress: bool = True,
    keep_work: bool = False,
    make_workers=LocalWorkers,
    tolerance: float | None = DEFAULT_TOLERANCE,
    split: float | None = DEFAULT_SPLIT,
) -> BuildReport:
    """Solve ``spec`` into the v2 table directory ``out`` with ``n_workers`` workers (in this process by default;
    see :class:`MaterialBuild`), columns keyed by the multiset of tiles >= ``2**low``, keys moved between workers
    to even out each age's work within ``tolerance`` (None: a key never moves), and a column whose work in an age
    exceeds ``split`` times an even share split across several workers (None: never).  The table is bit for bit
    the local build's.  Resumable: run it again with the same workers and threshold after an interruption."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} exists and is not a directory: a distributed build writes a table directory")
    work = WorkDir(
        work_dir or out.with_name(out.name + ".work"),
        spec,
        SOLVER_VERSION,
        layout={"backend": "material", "workers": int(n_workers), "low": int(low)},
    )
    try:
        run = MaterialBuild(spec, n_workers, low, work, progress, make_workers, tolerance, split)
    except BaseException:
        work.close()
        raise
    return run_directory_build(run, spec, out, work, keep_work, n_workers)


def exchanged_boards(work_dir) -> dict[str, int]:
    """What a build's work directory journalled over its forward ages: ``{"crossing": afterstates sent to other
    workers, "handed_off": states handed to other workers (their keys moved, or their column's part is another's),
    "moved_keys": keys moved, "split_keys": columns split}`` (each crossing afterstate and each state handed off
    travels once as an ID and once as a value)."""
    extras = [entry.get("extra", {}) for entry in journal_entries(work_dir)]
    total = {name: sum(e.get(name, 0) for e in extras) for name in ("crossing", "handed_off")}
    counted = {name: sum(len(e.get(name, [])) for e in extras) for name in ("moved_keys", "split_keys")}
    return {**total, **counted}
