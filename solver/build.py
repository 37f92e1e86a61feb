"""``build``: forward pass, backward pass and table writing, resumable through a work directory.

Coding and disk traffic run on one background thread while the numba kernels (which release the GIL) compute:
each finished age is coded and saved to the work directory (for resuming, and for the backward pass) and, in the
backward pass, written to the table.  Forward layers are also kept in memory up to ``HOLD_BYTES`` so that the
backward pass need not decode them again.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numba
import numpy as np

from env2048.compile_progress import compile_progress

from . import precompile
from .backward import run_backward, solve_states
from .derive import derive_states
from .format import TableWriterV1, elias_fano, quantise, ranking
from .format.common import SOLVER_VERSION
from .format.v2 import CodedLayer, TableWriterV2, age_path, decode_boards, encode_boards
from .forward import canonical_starts, run_forward
from .seal import check_unsealed
from .spec import SolveSpec
from .workdir import AgeCount, WorkDir

#: Forward layers kept in memory for the backward pass (beyond this they are decoded from the work dir).
HOLD_BYTES = 1 << 30
#: Format v2: seconds of backward pass between two checkpoints of exact values (see :class:`Checkpoints`).
CHECKPOINT_SECONDS = 10.0
#: Finished ages allowed to wait for the writer thread before the computation pauses for it.
MAX_QUEUED = 16


@dataclass
class BuildReport:
    """What a build did: counts, timings (seconds) and the table's root attributes."""

    out: Path
    attrs: dict
    forward_s: float
    backward_s: float
    write_s: float
    threads: int
    #: seconds the writer thread spent coding and writing ages, overlapped with the passes (a serial step: it
    #: bounds the build once the kernels, which scale with the cores, take less)
    writer_busy_s: float = 0.0

    @property
    def total_s(self) -> float:
        return self.forward_s + self.backward_s + self.write_s


def set_threads(threads: int | None) -> int:
    """Use ``threads`` numba threads in the calling thread (default: the number it uses now,
    ``numba.get_num_threads()``: every core numba sees unless the caller set fewer); returns the number in use."""
    limit = numba.config.NUMBA_NUM_THREADS
    if threads is None:
        threads = numba.get_num_threads()
    if not 1 <= int(threads) <= limit:
        raise ValueError(f"--threads must be between 1 and {limit} (the cores numba sees), got {threads}")
    numba.set_num_threads(int(threads))
    return int(threads)


class HeldLayers:
    """Forward layers kept in memory for the backward pass, within a budget of bytes: ``{age: (states,
    afterstates)}``, sorted canonical ``uint64`` arrays.  A layer that does not fit is not held (it is read from the
    work directory instead)."""

    def __init__(self, budget: int):
        self.budget, self.nbytes = int(budget), 0
        self._layers: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def hold(self, age: int, states: np.ndarray, afterstates: np.ndarray) -> None:
        if self.nbytes + states.nbytes + afterstates.nbytes <= self.budget:
            self._layers[age] = states, afterstates
            self.nbytes += states.nbytes + afterstates.nbytes

    def get(self, age: int) -> tuple[np.ndarray, np.ndarray] | None:
        return self._layers.get(age)

    def release(self, age: int) -> None:
        """Let an age's layer go (its budget is free again)."""
        layer = self._layers.pop(age, None)
        if layer is not None:
            self.nbytes -= layer[0].nbytes + layer[1].nbytes


class BackgroundWriter:
    """One writer thread running jobs in submission order; ``drain`` waits and re-raises the first failure.

    After a job fails the later ones are skipped, so the work directory never records an age after a gap.
    """

    def __init__(self, max_queued: int = MAX_QUEUED, threads: int | None = None):
        # numba keeps its thread count per thread: the writer's parallel coding kernels get the build's --threads
        init = (numba.set_num_threads, (threads,)) if threads else (None, ())
        self._pool = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="solver-writer", initializer=init[0], initargs=init[1]
        )
        self._slots = threading.Semaphore(max_queued)
        self._futures: list[Future] = []
        self._failed = False
        self.busy_s = 0.0

    def _run(self, fn, *args) -> None:
        if self._failed:
            return
        t = time.perf_counter()
        try:
            fn(*args)
        except BaseException:
            self._failed = True
            raise
        finally:
            self.busy_s += time.perf_counter() - t

    def submit(self, fn, *args) -> None:
        self._slots.acquire()
        future = self._pool.submit(self._run, fn, *args)
        future.add_done_callback(lambda _: self._slots.release())
        self._futures.append(future)
        if future.done() and future.exception() is not None:
            self.drain()

    def drain(self) -> None:
        futures, self._futures = self._futures, []
        for future in futures:
            future.result()

    def close(self) -> None:
        self._pool.shutdown(wait=True)


class ForwardLayers:
    """The forward pass's layers for the backward pass: raw arrays held in memory up to ``HOLD_BYTES``, the rest
    decoded from the work directory's coded states and afterstates.  Ages journalled without their states (by a
    release that kept afterstates only) have their states derived from the afterstates of ages - 2 and - 4; for
    those, a few decoded afterstate layers are cached, since consecutive ages share them."""

    def __init__(self, spec: SolveSpec, work: WorkDir, ages: set[int]):
        self.spec, self.work, self.ages = spec, work, ages
        self.held = HeldLayers(HOLD_BYTES)
        self._decoded: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()  # the writer thread reads layers too

    def coded(self, age: int, kind: str = "ids") -> tuple[np.ndarray, np.ndarray, int]:
        """``(upper, lower, low_bits)`` of an age's afterstates (``kind="ids"``, as the table stores them) or
        states (``kind="states"``), as journalled."""
        upper = self.work.load("forward", age, f"{kind}_upper")
        lower = self.work.load("forward", age, f"{kind}_lower")
        universe = ranking.shape_universe(self.spec.rank_shape, age)
        return upper, lower, elias_fano.low_bits_for(self.count(age, kind), universe)

    def count(self, age: int, kind: str) -> int:
        """How many afterstates (``kind="ids"``) or states (``"states"``) an age has, as journalled."""
        count = self.work.forward_count(age)
        return count.afterstates if kind == "ids" else count.states

    def afterstates(self, age: int) -> np.ndarray:
        held = self.held.get(age)
        if held is not None:
            return held[1]
        if age not in self.ages:
            return np.empty(0, np.uint64)
        with self._lock:
            if age not in self._decoded:
                if len(self._decoded) >= 4:
                    self._decoded.pop(max(self._decoded, key=lambda a: abs(a - age)))
                self._decoded[age] = self.decoded(age, "ids")
            return self._decoded[age]

    def decoded(self, age: int, kind: str) -> np.ndarray:
        """An age's afterstates (``kind="ids"``) or states (``"states"``) decoded from the work directory."""
        upper, lower, low_bits = self.coded(age, kind)
        return decode_boards(age, upper, lower, self.count(age, kind), low_bits, self.spec)

    def layer(self, age: int) -> tuple[np.ndarray, np.ndarray]:
        """``(states, afterstates)`` of an age, sorted canonical ``uint64``."""
        held = self.held.get(age)
        if held is not None:
            return held
        if self.work.has("forward", age, "states_upper"):
            return self.decoded(age, "states"), self.decoded(age, "ids")
        after = self.afterstates(age)
        return derive_states(self.spec, age, self.afterstates(age - 2), self.afterstates(age - 4)), after


class Checkpoints:
    """Exact afterstate values in the work directory, for resuming the backward pass bit for bit.

    A resumed pass at age a needs the state values of ages a + 2 and a + 4, and so the exact (not coded) values
    of their afterstates.  Writing them for every age would more than double the work directory's traffic, so
    format v2 keeps them for a pair of consecutive solved ages every ``every_s`` seconds (and for the start
    states' ages, which the table's start values need); a resumed build redoes at most the ages solved since
    the last pair.  ``every_s=None`` keeps every age's (format v1 copies all values from them on resume).
    """

    def __init__(self, work: WorkDir, keep: set[int], every_s: float | None):
        self.work, self.keep, self.every_s = work, keep, every_s
        self.last_time = time.perf_counter()
        self.previous: tuple[int, np.ndarray] | None = None
        self.pair: tuple[int, ...] = ()
        self.stale: tuple[int, ...] = ()

    def add(self, age: int, values: np.ndarray) -> None:
        """Called with each solved age, before the journal records it."""
        if self.every_s is None or age in self.keep:
            self.work.save("backward", age, "exact", values)
        elif self.previous is not None and time.perf_counter() - self.last_time >= self.every_s:
            self.work.save("backward", self.previous[0], "exact", self.previous[1])
            self.work.save("backward", age, "exact", values)
            self.stale = tuple(old for old in self.pair if old not in (age, self.previous[0]))
            self.pair = (age, self.previous[0])
            self.last_time = time.perf_counter()
        self.previous = (age, values)

    def recorded(self) -> None:
        """Called once the journal records the age: the previous pair is no longer needed."""
        for old in self.stale:
            self.work.discard("backward", old, "exact")
        self.stale = ()


def resumable_ages(work: WorkDir, ages: list[int], start_ages: set[int], format_version: int) -> set[int]:
    """The solved ages a resumed backward pass keeps: those from the lowest age at which it can restart exactly
    (the exact values of that age and the next are in the work directory) upwards."""
    done = work.backward_done
    if format_version == 1 or not done:
        return done
    present = set(ages)
    for age in sorted(done):
        needed = [a for a in (age, age + 2) if a in present]
        if all(a in done and work.has("backward", a, "exact") for a in needed):
            return {a for a in done if a >= age}
    return set()


def check_written_age(out: Path, age: int) -> None:
    """An age of a directory table that an interrupted run journalled as solved is kept only in the table's own
    file (the work directory has no second copy of its values): that file must still be there."""
    path = age_path(out, age)
    if not path.exists():
        raise RuntimeError(
            f"the work directory records age {age} as solved, but its table file {path} is missing: the table "
            f"directory was changed since the interrupted run; remove the work directory to build from scratch"
        )


def build(
    spec: SolveSpec,
    out: str | os.PathLike,
    work_dir: str | os.PathLike | None = None,
    threads: int | None = None,
    progress: bool = True,
    keep_work: bool = False,
    format_version: int = 2,
    layout: str = "file",
) -> BuildReport:
    """Solve ``spec`` into the table ``out`` (format v2 by default: one file, or a directory with
    ``layout="directory"``; ``format_version=1`` writes the uncompressed v1 file).

    Finished ages are kept in ``work_dir`` (default ``OUT.work``); running the same build again after an
    interruption resumes from the last finished age.  The work directory is removed after success unless
    ``keep_work``.  With ``progress``, bars show the passes, and the kernels numba compiles on first use
    (:func:`env2048.compile_progress.compile_progress`).  ``threads``: numba threads for the build (default: the
    calling thread's ``numba.get_num_threads()``, every core unless set lower); the caller's count is restored
    after it.
    """
    check_unsealed(f"solving {spec.describe()}")
    precompile.start(spec)  # a cold cache: the backward kernels compile in a second process meanwhile
    before = numba.get_num_threads()
    try:
        with compile_progress(progress):
            return _build(spec, out, work_dir, threads, progress, keep_work, format_version, layout)
    finally:
        numba.set_num_threads(before)


def _build(spec, out, work_dir, threads, progress, keep_work, format_version, layout) -> BuildReport:
    if format_version not in (1, 2):
        raise ValueError(f"table format must be 1 or 2, got {format_version}")
    if format_version == 1 and layout != "file":
        raise ValueError("format 1 has one layout only: a single file")
    threads = set_threads(threads)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = WorkDir(work_dir or out.with_name(out.name + ".work"), spec, SOLVER_VERSION)
    run = LocalBuild(spec, out, work, threads, format_version, layout, progress)
    try:
        t0 = time.perf_counter()
        run.forward_pass()
        t1 = time.perf_counter()
        run.open_table()
        run.copy_solved_ages()
        run.backward_pass()
        t2 = time.perf_counter()
        attrs = run.finish_table()
        t3 = time.perf_counter()
    except BaseException:
        run.abort()
        raise
    run.close()
    if not keep_work:
        shutil.rmtree(work.path)
    return BuildReport(out, attrs, t1 - t0, t2 - t1, t3 - t2, threads, run.writer.busy_s)


class LocalBuild:
    """One build on this machine, step by step: the forward pass (its layers kept coded in the work directory),
    the table opened, the ages an interrupted run solved copied into it, the backward pass (each age written as
    it is solved, by the background writer), the table finished.  ``abort`` removes a partial table."""

    def __init__(self, spec, out: Path, work: WorkDir, threads: int, format_version: int, layout: str, progress):
        self.spec, self.out, self.work, self.progress = spec, out, work, progress
        self.format_version, self.layout = format_version, layout
        self.writer = BackgroundWriter(threads=threads)
        self.layers = ForwardLayers(spec, work, set())
        self.table = None

    # -- forward pass ---------------------------------------------------------------------------------------

    def forward_pass(self) -> None:
        """Enumerate every age's states and afterstates (unless a run before finished it); then the ages' counts
        are known."""
        work, layers = self.work, self.layers
        if not work.forward_complete:
            run_forward(
                self.spec,
                on_age=self._on_forward_age,
                done=work.forward_counts,
                load_afterstates=self._load_afterstates,
                progress=self.progress,
            )
            self.writer.drain()
            work.finish_forward()
        self.counts = work.forward_counts
        self.by_age = {c.age: c for c in self.counts}
        layers.ages = set(self.by_age)

    def _on_forward_age(self, count: AgeCount, states, afterstates) -> None:
        self.layers.held.hold(count.age, states, afterstates)
        self.writer.submit(self._save_forward, count, states, afterstates)

    def _save_forward(self, count: AgeCount, states, afterstates) -> None:
        # the states too: decoding them in the backward pass costs a third of deriving them by spawning
        for kind, boards in (("ids", afterstates), ("states", states)):
            upper, lower, _ = encode_boards(count.age, boards, self.spec)
            self.work.save("forward", count.age, f"{kind}_upper", upper)
            self.work.save("forward", count.age, f"{kind}_lower", lower)
        self.work.record_forward(count)

    def _load_afterstates(self, age: int) -> np.ndarray:
        self.layers.ages.add(age)
        return self.layers.afterstates(age)

    # -- the table ------------------------------------------------------------------------------------------

    def open_table(self) -> None:
        """The table writer of the chosen format, and the start states whose values it records."""
        spec = self.spec
        start_ids, start_probs = canonical_starts(spec)
        self.start_ages = {int(a) for a in spec.ages(start_ids)} if start_ids.size else set()
        if self.format_version == 1:
            self.table = TableWriterV1(self.out, spec, start_ids, start_probs)
        else:
            self.table = TableWriterV2(self.out, spec, start_ids, start_probs, self.layout)
        self.value_code = quantise.value_code_for(spec.objective)

    def write_age(self, age: int, s_values, best, a_values, values_words=None, code=None):
        """Write one solved age into the table; for v2 returns its :class:`CodedLayer` (``values_words`` and
        ``code``: the value codes an interrupted run already made)."""
        v1 = self.format_version == 1
        states, afterstates = self.layers.layer(age) if (v1 or age in self.start_ages) else (None, None)
        if v1:
            layer = {
                "states": states,
                "state_values": s_values,
                "best_actions": best,
                "afterstates": afterstates,
                "afterstate_values": a_values,
            }
            self.table.write_age(self.by_age[age], layer)
            return None
        upper, lower, low_bits = self.layers.coded(age)
        count = self.by_age[age]
        if values_words is None:
            coded = CodedLayer.encode(count, self.spec, upper, lower, low_bits, a_values, self.value_code)
        else:
            coded = CodedLayer.from_codes(
                count,
                self.spec,
                upper,
                lower,
                low_bits,
                values_words,
                self.value_code,
                code["value_bits"],
                code["value_base"],
            )
        self.table.write_age(coded, states, s_values)
        return coded

    def exact_values(self, age: int) -> np.ndarray:
        return self.work.load("backward", age, "exact")

    def state_values_of(self, age: int):
        """State values and best actions of an age solved by an earlier run, from its exact afterstate values
        (kept in the work directory for the ages a resumed pass needs)."""
        states, afterstates = self.layers.layer(age)
        return solve_states(self.spec, states, afterstates, self.exact_values(age))

    # -- resuming -------------------------------------------------------------------------------------------

    def copy_solved_ages(self) -> None:
        """The ages an interrupted run solved: copied into the new table, or their files kept (directory)."""
        work, writer, table, start_ages = self.work, self.writer, self.table, self.start_ages
        self.done = resumable_ages(work, [c.age for c in self.counts], start_ages, self.format_version)
        for age in sorted(self.done):
            code = work.backward_code(age)
            if self.format_version == 1:
                writer.submit(self.write_age, age, *self.state_values_of(age), self.exact_values(age))
            elif "id_bytes" in code:  # a directory table: the age's file is already in place
                check_written_age(self.out, age)
                writer.submit(table.record_written, age, code["id_bytes"], code["value_bytes"])
                if age in start_ages:
                    # start ages are the smallest (a few boards): deriving their states again costs nothing
                    writer.submit(table.starts.take, age, self.layers.layer(age)[0], self.state_values_of(age)[0])
            elif age in start_ages:
                s_values, best = self.state_values_of(age)
                writer.submit(self.write_age, age, s_values, best, None, work.load("backward", age, "values"), code)
            else:
                writer.submit(self.write_age, age, None, None, None, work.load("backward", age, "values"), code)

    # -- backward pass --------------------------------------------------------------------------------------

    def backward_pass(self) -> None:
        """Solve every age not yet solved, from the oldest down; each is written and journalled as it ends."""
        every = None if self.format_version == 1 else CHECKPOINT_SECONDS
        self.checkpoint = Checkpoints(self.work, self.start_ages, every_s=every)
        precompile.wait_for("backward", self.progress)  # on first use: its kernels compile in a second process
        run_backward(
            self.spec,
            [c.age for c in self.counts],
            self.layers.layer,
            lambda age: self.state_values_of(age)[0],
            lambda *result: self.writer.submit(self._save_backward, *result),
            done=self.done,
            progress=self.progress,
        )

    def _save_backward(self, age: int, s_values, best, a_values) -> None:
        coded = self.write_age(age, s_values, best, a_values)
        code = {}
        if coded is not None:
            code = {"value_bits": coded.value_bits, "value_base": coded.value_base}
            if self.layout == "directory":  # the age's file in the table is its record: no second copy
                code.update(id_bytes=int(coded.id_bytes), value_bytes=int(coded.values.nbytes))
            else:
                self.work.save("backward", age, "values", coded.values)
        self.checkpoint.add(age, a_values)
        self.work.record_backward(age, code)
        self.checkpoint.recorded()

    # -- the end --------------------------------------------------------------------------------------------

    def finish_table(self) -> dict:
        """Wait for the writer, write the index and root attributes; the table's attributes."""
        self.writer.drain()
        return self.table.finish(self.counts)

    def abort(self) -> None:
        self.writer.close()
        if self.table is not None:
            self.table.abort()
        self.work.close()

    def close(self) -> None:
        self.writer.close()
        self.work.close()
