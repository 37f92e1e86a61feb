"""The table of a suite version's tasks in docs/suite.md, generated from the tasks' definitions and the record of
their tables' build (``tables --record``, kept as ``docs/reference/suite-vN/entry-cost/tables.json``), between
``<!-- vN-tasks:begin -->`` and ``<!-- vN-tasks:end -->``; ``python -m experiments.suite registry`` regenerates
it and ``registry --check`` fails where it is out of date."""

from __future__ import annotations

import json
from pathlib import Path

from .tasks import Task, suite_tasks


def record_path(version: int) -> Path:
    from .registry import registry_dir

    return registry_dir(version) / "entry-cost" / "tables.json"


def markers(version: int) -> tuple[str, str]:
    return f"<!-- v{version}-tasks:begin -->", f"<!-- v{version}-tasks:end -->"


def game(task: Task) -> str:
    """What the task plays, in words: ``3×3 board, score``, ``4×4 endgame t, make a 128``, ..."""
    goal = "score" if task.kind == "score" else f"make a {task.target or 1 << task.spec().target_exponent}"
    if task.pattern is not None:
        return f"4×4 endgame {task.pattern}, {goal}"
    rows, cols = task.board.split("x")
    start = " from two 2-tiles" if task.start_p4 == 0 else ""
    whole = "the whole " if not task.has_table else ""
    return f"{whole}{rows}×{cols} {'game' if whole else 'board'}{start}, {goal}"


def _optimum(task: Task) -> str:
    if not task.has_table:
        return f"{task.optimal_value:,.2f} (published)"
    return f"{task.optimal_value:.4f}" if task.kind == "score" else f"{task.optimal_value:.6f}"


def _build(task: Task, record: dict | None) -> str:
    if not task.has_table:
        return "no table"
    row = (record or {}).get("tasks", {}).get(task.name)
    if row is None:
        return "not recorded"
    size = row["bytes"]
    return f"{row['seconds']:.0f} s, " + (f"{size / 1e9:.2f} GB" if size >= 1e9 else f"{size / 1e6:.0f} MB")


def task_table(version: int) -> str:
    """The Markdown rows of suite ``version``'s tasks (the header is the page's), and a last line of the tables'
    total build time, disk and peak memory where their build is recorded."""
    path = record_path(version)
    record = json.loads(path.read_text()) if path.exists() else None
    lines = []
    for t in suite_tasks(version):
        tracks = ", ".join(t.tracks) if t.tracks else "both"
        method = "exact*" if t.exact else f"Monte Carlo, {t.mc_episodes:,} games"
        lines.append(
            f"| `{t.name}` | `{t.env_id}` | {game(t)} | {t.kind} | {tracks} | {_optimum(t)} | "
            f"{t.budget_steps:,} | {method} | {_build(t, record)} |"
        )
    if record is not None:
        lines += [
            "",
            f"In all: {record['seconds'] / 60:.1f} min, {record['bytes'] / 1e9:.2f} GB of disk, peak resident memory "
            f"{record['peak_bytes'] / 1e9:.2f} GB ({record['cpus']} cores).",
        ]
    return "\n".join(lines)


def replace_block(text: str, version: int) -> str:
    """``text`` with its block of suite ``version``'s task table regenerated (unchanged without the markers)."""
    from .registry import replace_between

    begin, end = markers(version)
    if begin not in text or end not in text:
        return text
    return replace_between(text, begin, end, task_table(version))
