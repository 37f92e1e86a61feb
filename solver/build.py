"""``build``: forward pass, backward pass and table writing, resumable through a work directory.

Disk traffic runs on one background thread while the numba kernels (which release the GIL) compute: each
finished age is saved to the work directory (for resuming) and, in the backward pass, written to the table.
Forward layers are also kept in memory up to ``HOLD_BYTES`` so that the backward pass need not read them back.
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

from .backward import run_backward, solve_states
from .forward import canonical_starts, run_forward
from .spec import SolveSpec
from .store import SOLVER_VERSION, TableWriter
from .workdir import AgeCount, WorkDir

#: Forward layers kept in memory for the backward pass (beyond this they are read back from the work dir).
HOLD_BYTES = 1 << 30
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

    @property
    def total_s(self) -> float:
        return self.forward_s + self.backward_s + self.write_s


def set_threads(threads: int | None) -> int:
    """Use ``threads`` numba threads (default: all); returns the number in use."""
    limit = numba.config.NUMBA_NUM_THREADS
    if threads is None:
        threads = limit
    if not 1 <= int(threads) <= limit:
        raise ValueError(f"--threads must be between 1 and {limit} (the cores numba sees), got {threads}")
    numba.set_num_threads(int(threads))
    return int(threads)


class BackgroundWriter:
    """One writer thread running jobs in submission order; ``drain`` waits and re-raises the first failure.

    After a job fails the later ones are skipped, so the work directory never records an age after a gap.
    """

    def __init__(self, max_queued: int = MAX_QUEUED):
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="solver-writer")
        self._slots = threading.Semaphore(max_queued)
        self._futures: list[Future] = []
        self._failed = False

    def _run(self, fn, *args) -> None:
        if self._failed:
            return
        try:
            fn(*args)
        except BaseException:
            self._failed = True
            raise

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


def build(
    spec: SolveSpec,
    out: str | os.PathLike,
    work_dir: str | os.PathLike | None = None,
    threads: int | None = None,
    progress: bool = True,
    keep_work: bool = False,
) -> BuildReport:
    """Solve ``spec`` into the table ``out``.

    Finished ages are kept in ``work_dir`` (default ``OUT.work``); running the same build again after an
    interruption resumes from the last finished age.  The work directory is removed after success unless
    ``keep_work``.
    """
    threads = set_threads(threads)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    work = WorkDir(work_dir or out.with_name(out.name + ".work"), spec, SOLVER_VERSION)
    writer = BackgroundWriter()
    held: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    table = None
    try:
        t0 = time.perf_counter()
        if not work.forward_complete:
            held_bytes = 0

            def save_forward(count: AgeCount, states, afterstates) -> None:
                work.save("forward", count.age, "states", states)
                work.save("forward", count.age, "afterstates", afterstates)
                work.record_forward(count)

            def on_age(count: AgeCount, states, afterstates) -> None:
                nonlocal held_bytes
                if held_bytes + states.nbytes + afterstates.nbytes <= HOLD_BYTES:
                    held[count.age] = (states, afterstates)
                    held_bytes += states.nbytes + afterstates.nbytes
                writer.submit(save_forward, count, states, afterstates)

            run_forward(
                spec, on_age=on_age, done=work.forward_counts,
                load_afterstates=lambda age: work.load("forward", age, "afterstates"), progress=progress,
            )  # fmt: skip
            writer.drain()
            work.finish_forward()
        counts = work.forward_counts
        by_age = {c.age: c for c in counts}
        t1 = time.perf_counter()

        def load_layer(age: int):
            if age in held:
                return held[age]
            return work.load("forward", age, "states"), work.load("forward", age, "afterstates")

        start_ids, start_probs = canonical_starts(spec)
        table = TableWriter(out, spec, start_ids, start_probs)

        def write_age(age: int, s_values, best, a_values) -> None:
            states, afterstates = load_layer(age)
            layer = {"states": states, "state_values": s_values, "best_actions": best, "afterstates": afterstates,
                     "afterstate_values": a_values}  # fmt: skip
            table.write_age(by_age[age], layer)

        def state_values_of(age: int):
            """State values and best actions of an age solved by an earlier run (only its afterstate values
            are kept in the work directory; the states' follow exactly from them)."""
            states, afterstates = load_layer(age)
            a_values = work.load("backward", age, "afterstate_values")
            return (*solve_states(spec, states, afterstates, a_values), a_values)

        done = work.backward_done
        for age in sorted(done):  # solved by an interrupted run: copy them into the new table
            writer.submit(write_age, age, *state_values_of(age))

        def save_backward(age: int, s_values, best, a_values) -> None:
            work.save("backward", age, "afterstate_values", a_values)
            work.record_backward(age)
            write_age(age, s_values, best, a_values)

        run_backward(
            spec, [c.age for c in counts], load_layer, lambda age: state_values_of(age)[0],
            lambda *result: writer.submit(save_backward, *result), done=done, progress=progress,
        )  # fmt: skip
        t2 = time.perf_counter()
        writer.drain()
        attrs = table.finish(counts)
        t3 = time.perf_counter()
    except BaseException:
        writer.close()
        if table is not None:
            table.abort()
        work.close()
        raise
    writer.close()
    work.close()
    if not keep_work:
        shutil.rmtree(work.path)
    return BuildReport(out, attrs, t1 - t0, t2 - t1, t3 - t2, threads)
