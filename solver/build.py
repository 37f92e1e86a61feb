"""``build``: forward pass, backward pass and table writing, resumable through a work directory."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import numba

from .backward import run_backward
from .forward import canonical_starts, run_forward
from .spec import SolveSpec
from .store import SOLVER_VERSION, write_table
from .workdir import AgeCount, WorkDir


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

    t0 = time.perf_counter()
    if not work.forward_complete:

        def keep_age(count: AgeCount, states, afterstates) -> None:
            work.save("forward", count.age, "states", states)
            work.save("forward", count.age, "afterstates", afterstates)
            work.record_forward(count)

        run_forward(
            spec, on_age=keep_age, done=work.forward_counts,
            load_afterstates=lambda age: work.load("forward", age, "afterstates"), progress=progress,
        )  # fmt: skip
        work.finish_forward()
    counts = work.forward_counts
    t1 = time.perf_counter()

    def load_layer(age: int):
        return work.load("forward", age, "states"), work.load("forward", age, "afterstates")

    def keep_values(age: int, s_values, best, a_values) -> None:
        work.save("backward", age, "state_values", s_values)
        work.save("backward", age, "best_actions", best)
        work.save("backward", age, "afterstate_values", a_values)
        work.record_backward(age)

    run_backward(
        spec, [c.age for c in counts], load_layer, lambda age: work.load("backward", age, "state_values"),
        keep_values, done=work.backward_done, progress=progress,
    )  # fmt: skip
    t2 = time.perf_counter()

    def full_layer(age: int):
        states, afterstates = load_layer(age)
        return {
            "states": states,
            "state_values": work.load("backward", age, "state_values"),
            "best_actions": work.load("backward", age, "best_actions"),
            "afterstates": afterstates,
            "afterstate_values": work.load("backward", age, "afterstate_values"),
        }

    start_ids, start_probs = canonical_starts(spec)
    attrs = write_table(out, spec, counts, full_layer, start_ids, start_probs)
    t3 = time.perf_counter()
    if not keep_work:
        shutil.rmtree(work.path)
    return BuildReport(out, attrs, t1 - t0, t2 - t1, t3 - t2, threads)
