"""Where a results directory of ``run`` stands: which cells (task × seed) are finished, what they cost, and an
estimate of what the missing ones will cost, for runs that take hours and may be split between processes
(``run --only-seeds``) or interrupted (a rerun resumes at the first missing cell).

``python -m experiments.suite status DIR [--seeds N] [--tasks LIST]``."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .budget import REFERENCE_TRACK
from .runner import SuiteRunError, _cell, check_seeds
from .tasks import tasks_named


@dataclass(frozen=True)
class TaskStatus:
    """One task of a run: its finished seeds, the core seconds each took (training and scoring), its missing
    seeds, and its cells' mean score so far (None before the first)."""

    task: str
    done: tuple[int, ...]
    cell_seconds: tuple[float, ...]
    missing: tuple[int, ...]
    mean_score: float | None

    @property
    def seconds_per_cell(self) -> float | None:
        """The finished cells' mean core seconds; None before the first."""
        return sum(self.cell_seconds) / len(self.cell_seconds) if self.cell_seconds else None

    @property
    def seconds_left(self) -> float | None:
        """The missing cells' estimated core seconds: the finished cells' mean for each; None when none is
        finished yet (nothing to estimate from), 0.0 when none is missing."""
        if not self.missing:
            return 0.0
        per_cell = self.seconds_per_cell
        return None if per_cell is None else len(self.missing) * per_cell


@dataclass(frozen=True)
class RunStatus:
    """A results directory's state: what ran (``label``, track, regime, suite version), each task's
    :class:`TaskStatus`, and whether ``suite.json`` holds every asked task and seed."""

    out: Path
    label: str
    suite_version: int
    track: str
    regime: str | None
    seeds: int
    tasks: tuple[TaskStatus, ...]
    suite_json_complete: bool

    @property
    def cells(self) -> int:
        return self.seeds * len(self.tasks)

    @property
    def cells_done(self) -> int:
        return sum(len(t.done) for t in self.tasks)

    @property
    def seconds_spent(self) -> float:
        return sum(sum(t.cell_seconds) for t in self.tasks)


def cell_seconds(cell: dict) -> float:
    """The core seconds a finished cell took: its training (``train_seconds``, absent for a fixed agent) and its
    scoring (``seconds``)."""
    return float(cell.get("train_seconds", 0.0)) + float(cell.get("seconds", 0.0))


def run_status(out, seeds: int = 5, tasks: str | None = None) -> RunStatus:
    """The state of ``out``, a directory ``run`` writes, for seeds 0 .. ``seeds`` - 1 on ``tasks`` (comma-separated;
    default the track's list of the run's suite version, as ``run`` takes it)."""
    out = Path(out)
    meta_path = out / "run.json"
    if not meta_path.exists():
        raise FileNotFoundError(
            f"{out} holds no run of the suite (no run.json): give a directory that `run --out` wrote"
        )
    check_seeds(seeds)
    meta = json.loads(meta_path.read_text())
    version = meta.get("suite_version")
    if not isinstance(version, int):
        raise SuiteRunError(f"{meta_path} names no suite version: it was not written by `run`")
    track = meta.get("track", REFERENCE_TRACK)
    rows = []
    for task in tasks_named(tasks, version, track=track):
        done, spent, scores = [], [], []
        for seed in range(seeds):
            path = _cell(out, task, seed)
            if path.exists():
                cell = json.loads(path.read_text())
                done.append(seed)
                spent.append(cell_seconds(cell))
                scores.append(float(cell["normalized"]))
        missing = tuple(s for s in range(seeds) if s not in done)
        mean = sum(scores) / len(scores) if scores else None
        rows.append(TaskStatus(task.name, tuple(done), tuple(spent), missing, mean))
    return RunStatus(
        out=out,
        label=meta.get("trainer") or meta.get("agent") or "?",
        suite_version=version,
        track=track,
        regime=meta.get("regime"),
        seeds=seeds,
        tasks=tuple(rows),
        suite_json_complete=_suite_json_covers(out / "suite.json", [r.task for r in rows], seeds),
    )


def _suite_json_covers(path: Path, tasks: list[str], seeds: int) -> bool:
    """Whether ``path`` exists and holds ``seeds`` runs of every one of ``tasks`` (a run started with ``--tasks``
    writes a suite.json of those tasks alone)."""
    if not path.exists():
        return False
    data = json.loads(path.read_text())
    return set(tasks) <= set(data.get("tasks", [])) and data.get("seeds", 0) >= seeds


def _minutes(seconds: float | None) -> str:
    return "?" if seconds is None else f"{seconds / 60:.1f}"


def _seed_list(seeds: tuple[int, ...]) -> str:
    return ",".join(map(str, seeds)) if seeds else "-"


def format_status(status: RunStatus) -> str:
    """A table of ``status``, a task a line, and a summary: cells finished, core time spent and the estimate of
    what is left (a lower bound while some task has no finished cell to estimate from)."""
    regime = f", {status.regime} regime" if status.regime else ""
    lines = [
        f"{status.out}: {status.label}, suite v{status.suite_version}, {status.track} track{regime}: "
        f"{status.cells_done} of {status.cells} cells finished",
        "",
        "| task | finished | missing seeds | mean score | core min per cell | core min left |",
        "|---|---:|---|---:|---:|---:|",
    ]
    for t in status.tasks:
        score = "—" if t.mean_score is None else f"{t.mean_score:.4f}"
        lines.append(
            f"| {t.task} | {len(t.done)}/{status.seeds} | {_seed_list(t.missing)} | {score} | "
            f"{_minutes(t.seconds_per_cell)} | {_minutes(t.seconds_left)} |"
        )
    left = [t.seconds_left for t in status.tasks]
    known = sum(s for s in left if s is not None)
    unknown = [t.task for t in status.tasks if t.seconds_left is None]
    estimate = f"{known / 3600:.1f} core-hours left"
    if unknown:
        estimate = f"at least {estimate} (no finished cell yet to estimate {', '.join(unknown)} from)"
    written = "holds every cell" if status.suite_json_complete else "is not complete yet (the last run writes it)"
    lines += ["", f"{status.seconds_spent / 3600:.1f} core-hours spent, {estimate}; suite.json {written}"]
    return "\n".join(lines)
