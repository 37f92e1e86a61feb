"""The reference registry of suite results, and the tables generated from it.

``docs/reference/suite-v1/NAME.json`` holds one reference run's ``suite.json`` (score matrix, every run's result,
provenance).  The README's headline and the reference tables of docs/suite.md are generated from these files
only, between ``<!-- suite-v1:begin -->`` and ``<!-- suite-v1:end -->``, with the aggregate plots:

    python -m experiments.suite registry --add runs/greedy --name greedy   # a results directory into the registry
    python -m experiments.suite registry                                   # regenerate the tables and plots
    python -m experiments.suite registry --check                           # fail if they are out of date
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from .aggregate import (
    FAMILIES,
    METRICS,
    aggregates_by_family,
    plot_aggregates,
    plot_profiles,
    task_families,
    track_of_result,
)
from .tasks import SUITE_V1, SUITE_VERSION

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ROOT / "docs" / "reference" / f"suite-v{SUITE_VERSION}"
BEGIN, END = f"<!-- suite-v{SUITE_VERSION}:begin -->", f"<!-- suite-v{SUITE_VERSION}:end -->"
#: The files whose marked block is generated, and the plots.
README, PAGE = ROOT / "README.md", ROOT / "docs" / "suite.md"
PLOTS = {"aggregates": ROOT / "docs" / "suite-aggregates.png", "profiles": ROOT / "docs" / "suite-profiles.png"}


def add(results_dir, name: str, registry: Path = REGISTRY) -> Path:
    """Copy a finished results directory's suite.json into the registry as ``NAME.json``; it must cover every
    task of the suite's version."""
    source = Path(results_dir) / "suite.json"
    if not source.exists():
        raise FileNotFoundError(f"{results_dir}: no suite.json (the run has not finished)")
    data = json.loads(source.read_text())
    if data.get("budget_scale", 1.0) != 1.0:
        raise ValueError(f"{source}: trained at {data['budget_scale']}x the budgets; the registry holds the suite's")
    if data.get("suite_version") != SUITE_VERSION or data.get("tasks") != [t.name for t in SUITE_V1]:
        raise ValueError(
            f"{source}: a reference run covers every task of suite v{SUITE_VERSION}, got "
            f"v{data.get('suite_version')} {data.get('tasks')}"
        )
    registry.mkdir(parents=True, exist_ok=True)
    target = registry / f"{name}.json"
    shutil.copyfile(source, target)
    return target


def load(registry: Path = REGISTRY) -> dict[str, dict]:
    """``{name: suite.json}`` of the registry, ordered by mean normalized score (lowest first)."""
    entries = {p.stem: json.loads(p.read_text()) for p in sorted(registry.glob("*.json"))}
    if not entries:
        raise FileNotFoundError(f"no reference results in {registry}")
    return dict(sorted(entries.items(), key=lambda kv: float(np.mean(kv[1]["normalized"]))))


def _iqm(row: dict) -> str:
    return f"{row['IQM']['point']:.3f} [{row['IQM']['ci'][0]:.3f}, {row['IQM']['ci'][1]:.3f}]"


def registry_aggregates(entries: dict[str, dict], reps: int = 2000) -> dict:
    """Each entry's aggregates per family of tasks and overall (:func:`aggregates_by_family`): an agent's
    aggregates are its own runs' (no statistic here crosses two agents), so one table shows every track."""
    matrices = {n: np.asarray(d["normalized"], float) for n, d in entries.items()}
    families = task_families(next(iter(entries.values())))
    return aggregates_by_family(matrices, families, [t.name for t in SUITE_V1], reps)


def tables(entries: dict[str, dict], reps: int = 2000, full: bool = True, aggregates: dict | None = None) -> str:
    """The generated Markdown: per task mean normalized score over runs (method marked) with each entry's track,
    then each agent's aggregates (over its own runs, so agents of different tracks are never pooled): with
    ``full`` every metric per family of tasks and overall, else (the README's headline) the IQM per family and
    overall in one table.  ``aggregates``: :func:`registry_aggregates` of ``entries``, if already computed."""
    names = [t.name for t in SUITE_V1]
    tracks = {name: track_of_result(data) for name, data in entries.items()}
    lines = [
        "| agent | track | runs | time | " + " | ".join(f"`{n}`" for n in names) + " |",
        "|---|---|---:|---:|" + "---:|" * len(names),
    ]
    for name, data in entries.items():
        matrix = np.asarray(data["normalized"], float)
        cells = []
        for j, task in enumerate(names):
            mark = "" if data["method"][task] == "exact" else "†"
            cells.append(f"{_fmt(matrix[:, j].mean())}{mark}")
        runs = f"{name} | {tracks[name]} | {matrix.shape[0]} | {_duration(run_seconds(data))}"
        lines.append(f"| {runs} | " + " | ".join(cells) + " |")
    families = task_families(next(iter(entries.values())))
    if aggregates is None:
        aggregates = registry_aggregates(entries, reps)
    if not full:
        parts = [p for p in FAMILIES if p in aggregates] + ["overall"]
        titles = [FAMILIES.get(p, "all tasks") for p in parts]
        lines += ["", "| IQM [95% CI] | track | " + " | ".join(titles) + " |", "|---|---|" + "---:|" * len(parts)]
        for name in entries:
            lines.append(f"| {name} | {tracks[name]} | " + " | ".join(_iqm(aggregates[p][name]) for p in parts) + " |")
    else:
        for part, table in aggregates.items():
            title = "all tasks" if part == "overall" else FAMILIES[part]
            members = [t for t in names if part == "overall" or families[t] == part]
            lines += ["", f"*{title}* ({', '.join(members)}):", ""]
            lines += ["| agent | track | " + " | ".join(METRICS) + " |", "|---|---|" + "---:|" * len(METRICS)]
            for name, row in table.items():
                cells = [f"{row[m]['point']:.3f} [{row[m]['ci'][0]:.3f}, {row[m]['ci'][1]:.3f}]" for m in METRICS]
                lines.append(f"| {name} | {tracks[name]} | " + " | ".join(cells) + " |")
    commits = sorted({_short(d["provenance"]["commit"]) for d in entries.values()})
    lines += [
        "",
        f"Scores V^π / V* (1 = optimal play); † Monte Carlo (1,000 games, Wilson 95% CI in the run files), "
        "the others exact; time: training and scoring, summed over the runs (tables built beforehand). "
        "Aggregates over runs × tasks with rliable's stratified bootstrap, 95% CIs, per family of tasks and "
        "overall, each over one agent's runs. "
        f"Generated by `python -m experiments.suite registry` from docs/reference/suite-v{SUITE_VERSION}/ "
        f"(commits {', '.join(commits)}).",
    ]
    return "\n".join(lines)


def run_seconds(data: dict) -> float:
    """Seconds of training and scoring of a suite.json's runs, summed."""
    return sum(r.get("train_seconds", 0.0) + r.get("seconds", 0.0) for runs in data["runs"].values() for r in runs)


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 600 else f"{seconds:.0f} s"


def _short(commit) -> str:
    """``"2b811d8"`` or ``"2b811d8+dirty"`` from a full commit (None outside git: ``"unknown"``)."""
    if not commit:
        return "unknown"
    sha, _, dirty = str(commit).partition("+")
    return sha[:7] + (f"+{dirty}" if dirty else "")


def _fmt(x: float) -> str:
    return f"{x:.4f}" if x >= 1e-3 or x == 0 else f"{x:.1e}"


def _replace_block(text: str, block: str, path: Path) -> str:
    if BEGIN not in text or END not in text:
        raise ValueError(f"{path} has no {BEGIN} ... {END} block to generate")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n{block}\n{END}{tail}"


def render(check: bool = False, registry: Path = REGISTRY, files=(README, PAGE), reps: int = 2000) -> list[Path]:
    """Regenerate the marked blocks of ``files`` (and the plots, unless ``check``) from the registry.  Returns the
    files whose block was out of date (with ``check`` nothing is written)."""
    entries = load(registry)
    aggregates = registry_aggregates(entries, reps)  # one bootstrap for both blocks and the plot
    blocks = {full: tables(entries, reps, full, aggregates) for full in (True, False)}
    stale = []
    for path in files:
        text = path.read_text()
        new = _replace_block(text, blocks[path != README], path)
        if new != text:
            stale.append(path)
            if not check:
                path.write_text(new)
    if not check:
        matrices = {n: np.asarray(d["normalized"], float) for n, d in entries.items()}
        plot_aggregates({"groups": {"all": {"aggregates": aggregates}}}, PLOTS["aggregates"])
        plot_profiles(matrices, PLOTS["profiles"], reps)
    return stale
