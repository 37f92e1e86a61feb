"""The reference registries of suite results, one per suite version, and the tables generated from them.

``docs/reference/suite-vN/NAME.json`` holds one reference run's ``suite.json`` of suite version N (score matrix,
every run's result, provenance).  The README's headline and the reference tables of docs/suite.md are generated
from these files only, between ``<!-- suite-vN:begin -->`` and ``<!-- suite-vN:end -->`` (each version's block
where a file has one), with the aggregate plots of the newest version that has a registry:

    python -m experiments.suite registry --add runs/greedy --name greedy   # a results directory into the registry
    python -m experiments.suite registry                                   # regenerate the tables and plots
    python -m experiments.suite registry --check                           # fail if they are out of date
    python -m experiments.suite registry --check --dir COPY                # audit a copy of a registry

Every entry passes the audit of :mod:`experiments.suite.audit` (``--add`` refuses one that does not; ``--check``
fails on it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

from .aggregate import (
    FAMILIES,
    METRICS,
    SCORE_FLOOR,
    aggregate_table,
    estimate_text,
    plot_aggregates,
    plot_profiles,
    probability_of_improvement,
    regime_of_result,
    score_text,
    track_of_result,
)
from .audit import audit
from .bootstrap import ScoreCells
from .budget import REFERENCE_TRACK
from .tasks import SUITE_VERSION, SUITES, suite_tasks, task_lists
from .tuning import BASELINE, LOG, read_log

ROOT = Path(__file__).resolve().parents[2]


def registry_dir(version: int = SUITE_VERSION) -> Path:
    """``docs/reference/suite-vN``: the registry of suite version N."""
    return ROOT / "docs" / "reference" / f"suite-v{version}"


REGISTRY = registry_dir()


def markers(version: int) -> tuple[str, str]:
    """The lines that enclose a generated block of suite version ``version``."""
    return f"<!-- suite-v{version}:begin -->", f"<!-- suite-v{version}:end -->"


#: The files whose marked block is generated, and the plots.
README, PAGE = ROOT / "README.md", ROOT / "docs" / "suite.md"
PLOTS = {"aggregates": ROOT / "docs" / "suite-aggregates.png", "profiles": ROOT / "docs" / "suite-profiles.png"}


#: The files of a tuning directory (``python -m experiments.suite tune``) the registry keeps.
TUNING_FILES = ("tune.json", "search-space.toml", LOG)


def tuning_summary(tuning_dir) -> dict:
    """What a tuning directory cost and chose: ``{"task", "tasks", "trainer", "trials", "steps", "seeds",
    "env_steps", "seconds", "best_trial", "best_value"}``, and ``"baseline"`` (the task's own file scored under the
    trial protocol) and ``"baseline_seconds"`` where ``tune --baseline`` scored it (``tasks``: those it chose files
    for, the tuned task's family with ``tune --family``; ``env_steps`` = complete trials x steps x seeds; failed
    trials not counted; ``seconds``: the trials' time)."""
    tuning_dir = Path(tuning_dir)
    if not (tuning_dir / "tune.json").exists():
        raise FileNotFoundError(f"{tuning_dir}: no tune.json (not a directory of `python -m experiments.suite tune`)")
    meta = json.loads((tuning_dir / "tune.json").read_text())
    rows = read_log(tuning_dir / LOG)
    complete = [r for r in rows if r["state"] == "COMPLETE"]
    if not complete or not (tuning_dir / f"{meta['task']}.toml").exists():
        raise ValueError(f"{tuning_dir}: the tuning has not finished (no complete trial, or no {meta['task']}.toml)")
    best = max(complete, key=lambda r: r["value"])
    summary = {
        "task": meta["task"],
        "tasks": meta.get("applies_to", [meta["task"]]),
        "trainer": meta["trainer"],
        "trials": len(complete),
        "steps": meta["steps"],
        "seeds": meta["seeds"],
        "env_steps": len(complete) * meta["steps"] * meta["seeds"],
        "seconds": sum(r.get("seconds") or 0.0 for r in rows),
        "best_trial": best["number"],
        "best_value": best["value"],
    }
    if (tuning_dir / BASELINE).exists():
        own = json.loads((tuning_dir / BASELINE).read_text())
        summary["baseline"], summary["baseline_seconds"] = own["value"], own["seconds"]
    return summary


def _check_trained_with(data: dict, tuning_dir, tasks: list[str]) -> None:
    """Every run of ``tasks`` in a suite.json trained with the tuning's chosen file (``run --hyperparams``)."""
    from .tuning import file_digest

    for task in tasks:
        digest = file_digest(Path(tuning_dir) / f"{task}.toml")
        if any(run.get("hyperparams") != digest for run in data["runs"][task]):
            raise ValueError(
                f"the runs of task {task} did not train with {tuning_dir}/{task}.toml: "
                f"run them with --hyperparams {tuning_dir}"
            )


def _same_algorithm(tuned_trainer: str, run_trainer: str | None) -> bool:
    """Whether a run's trainer trains with the files of the tuned trainer's algorithm: the same trainer, or one
    that shares them (``td_expectimax`` plays ``td``'s network, ``maskable_ppo_shaped`` trains with
    ``maskable_ppo``'s files)."""
    if tuned_trainer == run_trainer:
        return True
    if run_trainer is None:
        return False
    from .policies import load_trainer
    from .tuning import algorithm_of

    return algorithm_of(load_trainer(tuned_trainer)) == algorithm_of(load_trainer(run_trainer))


def add(results_dir, name: str, registry: Path | None = None, tuning=()) -> Path:
    """Copy a finished results directory's suite.json into the registry of its suite version as ``NAME.json``
    (``registry``: another directory); it must cover every task of the current suite version, or every task of
    one family (a learner's variant for that family alone, such as a shaped reward on the success tasks).
    ``tuning``: the tuning directories that chose the learner's hyperparameter files (no task chosen twice), of
    the run's trainer or of the algorithm whose files it trains with, whose runs trained with their files
    (``run --hyperparams``): their log, search space and chosen files are kept in ``REGISTRY/tuning/NAME/TASK/``
    (TASK the tuned one), and the entry records each one's cost (:func:`tuning_summary`)."""
    source = Path(results_dir) / "suite.json"
    if not source.exists():
        raise FileNotFoundError(f"{results_dir}: no suite.json (the run has not finished)")
    data = json.loads(source.read_text())
    if data.get("budget_scale", 1.0) != 1.0:
        raise ValueError(
            f"{source}: trained at {data['budget_scale']}x the regime's budgets; the registry holds the suite's"
        )
    track = track_of_result(data)
    if data.get("suite_version") != SUITE_VERSION or data.get("tasks") not in _coverable(SUITE_VERSION, track):
        allowed = " or ".join(",".join(t) for t in _coverable(SUITE_VERSION, track))
        raise ValueError(
            f"{source}: a reference run on the {track} track covers its track's tasks of suite v{SUITE_VERSION}, or "
            f"one family's of them, in the suite's order ({allowed}); got v{data.get('suite_version')} "
            f"{data.get('tasks')}"
        )
    problems = audit(data, SUITE_VERSION)
    if problems:
        raise ValueError(f"{source} fails the registry's audit:\n" + "\n".join(f"- {p}" for p in problems))
    registry = registry_dir() if registry is None else registry
    summaries = {}
    for tuning_dir in tuning:
        summary = tuning_summary(tuning_dir)
        if not _same_algorithm(summary["trainer"], data.get("trainer")):
            trainer = data.get("trainer")
            raise ValueError(
                f"{tuning_dir} tuned {summary['trainer']!r}, not the run's trainer {trainer!r} "
                "or the algorithm whose files it trains with"
            )
        covered = {t for other in summaries.values() for t in other["tasks"]} & set(summary["tasks"])
        if covered:
            raise ValueError(f"two tunings chose files for task(s) {', '.join(sorted(covered))}: one per task")
        _check_trained_with(data, tuning_dir, summary["tasks"])
        summaries[summary["task"]] = summary
    registry.mkdir(parents=True, exist_ok=True)
    for tuning_dir, summary in zip(tuning, summaries.values(), strict=True):
        kept = registry / "tuning" / name / summary["task"]
        kept.mkdir(parents=True, exist_ok=True)
        for file in (*TUNING_FILES, *(f"{t}.toml" for t in summary["tasks"])):
            shutil.copyfile(Path(tuning_dir) / file, kept / file)
        if "baseline" in summary:
            shutil.copyfile(Path(tuning_dir) / BASELINE, kept / BASELINE)
    if summaries:
        data["tuning"] = summaries
    target = registry / f"{name}.json"
    target.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return target


def audit_registry(registry: Path = REGISTRY, version: int | None = None) -> dict[str, list[str]]:
    """``{entry: problems}`` of every entry of a registry directory that fails the audit
    (:func:`experiments.suite.audit.audit`) as a result of suite ``version`` (default: the directory's
    ``suite-vN`` name, else the current version); empty when all pass."""
    registry = Path(registry)
    if version is None:
        name = registry.resolve().name
        version = int(name[len("suite-v") :]) if name.startswith("suite-v") and name[7:].isdigit() else SUITE_VERSION
    entries = {p.stem: json.loads(p.read_text()) for p in sorted(registry.glob("*.json"))}
    if not entries:
        raise FileNotFoundError(f"no reference results in {registry}")
    found = {name: audit(data, version) for name, data in entries.items()}
    return {name: problems for name, problems in found.items() if problems}


def load(registry: Path = REGISTRY) -> dict[str, dict]:
    """``{name: suite.json}`` of the registry, ordered by mean normalized score (lowest first)."""
    entries = {p.stem: json.loads(p.read_text()) for p in sorted(registry.glob("*.json"))}
    if not entries:
        raise FileNotFoundError(f"no reference results in {registry}")
    return dict(sorted(entries.items(), key=lambda kv: float(np.mean(kv[1]["normalized"]))))


def _lists(version: int) -> dict[str, dict[str, list[str]]]:
    """``{list: {"overall": its tasks, family: its tasks, ...}}`` of suite ``version``: one list ``""`` of every
    task where every track has the same (v1, v2), else each track's (v3); tasks in the suite's order."""
    out = {}
    for track, tasks in task_lists(version).items():
        parts = {"overall": [t.name for t in tasks]}
        for family in FAMILIES:
            if any(t.kind == family for t in tasks):
                parts[family] = [t.name for t in tasks if t.kind == family]
        out[track] = parts
    return out


def _key(task_list: str, part: str) -> str:
    """The name of one part of one task list among :func:`registry_aggregates`' tables: ``part`` alone where the
    suite has one list, else ``TRACK/part``."""
    return f"{task_list}/{part}" if task_list else part


def _coverable(version: int, track: str = REFERENCE_TRACK) -> list[list[str]]:
    """The task lists a registry entry of suite ``version`` on ``track`` may cover: its track's list (every task
    for the reference track, or every task with a table, for an agent that needs one) or one family's part of it."""
    lists = _lists(version)
    mine = [parts for lst, parts in lists.items() if not lst or track in (lst, REFERENCE_TRACK)]
    every = [t.name for t in suite_tasks(version)]
    out = [tasks for parts in mine for tasks in parts.values()]
    if track == REFERENCE_TRACK:
        out += [every, [t.name for t in suite_tasks(version) if t.has_table]]
    return out


def _version(entries: dict[str, dict]) -> int:
    return int(next(iter(entries.values()))["suite_version"])


def registry_aggregates(entries: dict[str, dict], reps: int = 2000) -> dict:
    """``{key: table}`` (tables of :func:`aggregate_table`, keys of :func:`_key`), each over the entries that
    cover its tasks (an entry of one family is in that family's table only, a learner in its track's list's only): an
    agent's aggregates are its own runs' (no statistic here crosses two agents), so one table shows every track."""
    out = {}
    for lst, parts in _lists(_version(entries)).items():
        members = {n: d for n, d in entries.items() if not lst or track_of_result(d) in (lst, REFERENCE_TRACK)}
        for part, tasks in parts.items():
            matrices = {n: ScoreCells.of_result(d, tasks) for n, d in members.items() if set(tasks) <= set(d["tasks"])}
            if matrices:
                out[_key(lst, part)] = aggregate_table(matrices, reps)
    return out


#: The entries a complete registry holds, per suite version that names them (``make reference`` runs them): the
#: fixed agents, every learner in the small regime, and JAX PPO, TD and TD + expectimax in the large one.
EXPECTED = {
    3: (
        "random", "greedy", "expectimax-2", "optimal", "td", "td-expectimax", "jax-ppo", "jax-ppo-unmasked",
        "maskable-ppo", "dqn", "td-large", "td-expectimax-large", "jax-ppo-large",
    ),
}  # fmt: skip


def missing_entries(entries: dict[str, dict], version: int) -> list[str]:
    """The entries :data:`EXPECTED` of suite ``version`` that the registry does not hold yet."""
    return [name for name in EXPECTED.get(version, ()) if name not in entries]


def tables(entries: dict[str, dict], reps: int = 2000, full: bool = True, aggregates: dict | None = None) -> str:
    """The generated Markdown.  With ``full`` (docs/suite.md): per task mean normalized score over runs (method
    marked) with each entry's track and compute, then each agent's aggregates (over its own runs, so agents of
    different tracks are never pooled), every metric per family of tasks and overall; else (the README's
    headline) the IQM and the mean per family and overall in one table, and the rankings within each track and
    regime.  Where the tracks have task lists of their own (v3), each list has its tables, with the reference
    agents and its track's learners.  ``aggregates``: :func:`registry_aggregates` of ``entries``, if already
    computed."""
    version = _version(entries)
    names = [t.name for t in suite_tasks(version)]
    tracks = {name: track_label(data, entries) for name, data in entries.items()}
    lines = [] if not full else per_task_table(entries, names, tracks) + tuning_table(entries)
    if aggregates is None:
        aggregates = registry_aggregates(entries, reps)
    lists = _lists(version)
    if len(lists) > 1 and not full:
        lines += [RANKING_NOTE]
    for lst, parts in lists.items():
        keys = {part: _key(lst, part) for part in parts if _key(lst, part) in aggregates}
        if lst:
            lines += ["", f"**The {lst} track's tasks** ({', '.join(parts['overall'])}):"]
            lines += [""] if not full else []
        if not full:
            lines += headline_lines(entries, aggregates, parts, keys, tracks, reps, note=len(lists) == 1)
            continue
        for part, key in keys.items():
            title = "all tasks" if part == "overall" else FAMILIES[part]
            lines += ["", f"*{title}* ({', '.join(parts[part])}):", ""]
            lines += ["| agent | track | " + " | ".join(METRICS) + " |", "|---|---|" + "---:|" * len(METRICS)]
            for name, row in aggregates[key].items():
                cells = [estimate_text(row[m]) for m in METRICS]
                lines.append(f"| {name} | {tracks[name]} | " + " | ".join(cells) + " |")
    missing = missing_entries(entries, version)
    if missing:
        lines += ["", f"Not in the registry yet: {', '.join(missing)}."]
    commits = sorted({_short(d["provenance"]["commit"]) for d in entries.values()})
    monte_carlo = "† Monte Carlo (1,000 games, Wilson 95% CI in the run files), the others exact; "
    lines += [
        "",
        SCORES_NOTE
        + (monte_carlo + COMPUTE_NOTE + " " + cost_line(entries) if full else HEADLINE_NOTE)
        + "Aggregates over runs × tasks, per family of tasks and overall, each over one agent's runs, with 95% "
        "intervals of a stratified bootstrap over runs that redraws each Monte-Carlo score from its own "
        "sampling error (so an agent scored once by Monte Carlo has an interval too); below 1e-3 a score prints "
        "as `< 1e-3`. "
        f"Generated by `python -m experiments.suite registry` from docs/reference/suite-v{version}/ "
        f"(commits {', '.join(commits)}).",
    ]
    return "\n".join(lines)


def headline_lines(entries, aggregates, parts, keys, tracks, reps, note: bool = True) -> list[str]:
    """The headline of one task list: the IQM and the mean of each entry that covers some of its parts, per family
    and overall, then (after :data:`RANKING_NOTE`, with ``note``) the rankings within each track (and regime) of
    its entries."""
    order = [p for p in FAMILIES if p in keys] + ["overall"]
    titles = [FAMILIES.get(p, "all tasks") for p in order]
    header = " | ".join(f"{t}: {m}" for t in titles for m in ("IQM", "mean"))
    lines = [f"| agent | track | {header} |", "|---|---|" + "---:|" * (2 * len(order))]
    members = [n for n in entries if any(n in aggregates.get(keys.get(p, ""), {}) for p in order)]
    for name in members:
        cells = [
            estimate_text(aggregates[keys[p]][name][m]) if p in keys and name in aggregates[keys[p]] else "—"
            for p in order
            for m in ("IQM", "mean")
        ]
        lines.append(f"| {name} | {tracks[name]} | " + " | ".join(cells) + " |")
    rankings = []
    labels = [tracks[n] for n in members]
    for track in sorted(set(labels), key=labels.index):
        group = [n for n in members if tracks[n] == track and entries[n].get("agent") != "optimal"]
        for p, t in zip(order, titles, strict=True):
            ranked = [n for n in group if p in keys and n in aggregates[keys[p]]]
            if len(ranked) > 1:
                cells = {n: ScoreCells.of_result(entries[n], parts[p]) for n in ranked}
                rankings.append(f"- {track}, {t}: {ranking(aggregates[keys[p]], cells, ranked, reps)}")
    if note:
        return lines + ["", RANKING_NOTE, ""] + rankings
    return lines + ([""] + rankings if rankings else [])


def track_label(data: dict, entries: dict[str, dict]) -> str:
    """An entry's track, and a learner's budget regime where the registry's learners have more than one."""
    learners = [d for d in entries.values() if track_of_result(d) != REFERENCE_TRACK]
    regimes = {regime_of_result(d) for d in learners}
    track = track_of_result(data)
    return f"{track}, {regime_of_result(data)}" if len(regimes) > 1 and track != REFERENCE_TRACK else track


#: What the headline's rankings mean.
RANKING_NOTE = (
    "Ranked within each track (and budget regime), never across: by IQM, best first; between two neighbours, "
    "the probability that the first improves on the second (rliable's P(X > Y) over the family's tasks, 95% "
    "interval), `>` where its interval lies above 1/2, `<` where it lies below (the second improves on the first "
    "though its IQM is lower), `≈` where it holds 1/2; agents whose IQM is below 1e-3 are not ranked against each "
    "other."
)


#: How both blocks' notes begin.
SCORES_NOTE = "Scores V^π / V* (1 = optimal play); "
#: The rest of the headline's first sentence: where its details are.
HEADLINE_NOTE = (
    "each task's scores and each entry's training, scoring and tuning time in "
    "[Reference results](docs/suite.md#reference-results). "
)
#: What the compute columns of the per-task table mean.
COMPUTE_NOTE = (
    "training, scoring: seconds summed over the runs (one core each; the tables built beforehand); tuning: the "
    "environment steps and time of the tunings that chose the learner's settings (`tune`); objective: the best "
    "trial's mean normalized score on the tuned task at the trials' steps, own files: the task's own file's under "
    "the same protocol (`tune --baseline`)."
)


def per_task_table(entries: dict[str, dict], names: list[str], tracks: dict[str, str]) -> list[str]:
    """The lines of the per-task table: each entry's track, runs, compute and mean normalized score per task."""
    lines = [
        "| agent | track | runs | training | scoring | tuning | " + " | ".join(f"`{n}`" for n in names) + " |",
        "|---|---|---:|---:|---:|---:|" + "---:|" * len(names),
    ]
    for name, data in entries.items():
        matrix = np.asarray(data["normalized"], float)
        cells = []
        for task in names:
            if task not in data["tasks"]:
                cells.append("—")
                continue
            mark = "" if data["method"][task] == "exact" else "†"
            cells.append(f"{_fmt(matrix[:, data['tasks'].index(task)].mean())}{mark}")
        train, score = run_seconds(data)
        compute = f"{_duration(train) if train else '—'} | {_duration(score)} | {_tuning(data)}"
        lines.append(f"| {name} | {tracks[name]} | {matrix.shape[0]} | {compute} | " + " | ".join(cells) + " |")
    return lines


def tuning_table(entries: dict[str, dict]) -> list[str]:
    """The lines of a table of the registry's tunings (none: no lines): per tuning, the entries that train with
    its files, the task tuned and the tasks its choice serves, its trials, steps and time, the best trial and its
    objective, and the task's own files scored under the same protocol (``tune --baseline``) where that was done."""
    tunings: dict[tuple[str, str], tuple[dict, list[str]]] = {}
    for name, data in entries.items():
        for t in data.get("tuning", {}).values():
            tunings.setdefault((t["trainer"], t["task"]), (t, []))[1].append(name)
    if not tunings:
        return []
    lines = [
        "",
        "| tuning | for | tuned on (chosen for) | trials × steps × seeds | time | best trial | objective | own files |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for (trainer, task), (t, names) in tunings.items():
        algorithm = trainer.rpartition(":")[2]
        best = _fmt(t["best_value"]) if "best_value" in t else "—"
        own = _fmt(t["baseline"]) if "baseline" in t else "—"
        lines.append(
            f"| {algorithm} | {', '.join(names)} | {task} ({', '.join(t['tasks'])}) | "
            f"{t['trials']} × {t['steps'] / 1e6:.3g} M × {t['seeds']} | {_duration(t['seconds'])} | "
            f"{t['best_trial']} | {best} | {own} |"
        )
    return lines


def cost_line(entries: dict[str, dict]) -> str:
    """One sentence of the whole registry's compute: training, scoring and tuning hours summed over entries (a
    tuning two entries share, as a learner's and its shaped variant's, counted once)."""
    seconds = [run_seconds(d) for d in entries.values()]
    train, score = sum(s[0] for s in seconds), sum(s[1] for s in seconds)
    tunings = {(t["trainer"], t["task"]): t["seconds"] for d in entries.values() for t in d.get("tuning", {}).values()}
    tuning = sum(tunings.values())
    return (
        f"In all, {train / 3600:.1f} h of training, {score / 3600:.1f} h of scoring and {tuning / 3600:.1f} h of "
        "tuning (core-hours). "
    )


def ranking(table: dict, cells: dict[str, ScoreCells], names: list[str], reps: int = 2000) -> str:
    """``names`` ordered by the IQM of ``table`` (one family's :func:`aggregate_table`), best first, each with its
    IQM; between two neighbours the first's probability of improvement over the second (from their ``cells``,
    with its 95% interval, in brackets), and ``>`` where that interval lies above 1/2, ``<`` where it lies below
    (the IQM and the probability of improvement disagree), ``≈`` where it holds 1/2.  Agents whose IQM is below
    :data:`SCORE_FLOOR` close the list, unranked."""
    order = sorted(names, key=lambda n: -table[n]["IQM"]["point"])
    ranked = [n for n in order if table[n]["IQM"]["point"] >= SCORE_FLOOR]
    text = ""
    for i, name in enumerate(ranked):
        if i:
            point, (low, high) = probability_of_improvement(cells[ranked[i - 1]], cells[name], reps)
            sign = ">" if low > 0.5 else "<" if high < 0.5 else "≈"
            text += f" {sign} (P {point:.2f} [{low:.2f}, {high:.2f}]) "
        text += f"{name} {score_text(table[name]['IQM']['point'])}"
    floor = [n for n in order if n not in ranked]
    if floor:
        text += ("; " if text else "") + f"below 1e-3, not ranked: {', '.join(floor)}"
    return text


def _tuning(data: dict) -> str:
    """The tuning compute of an entry: environment steps and time over its tunings, or a dash."""
    tunings = data.get("tuning", {}).values()
    if not tunings:
        return "—"
    steps = sum(t["env_steps"] for t in tunings)
    return f"{steps / 1e6:.3g} M steps, {_duration(sum(t['seconds'] for t in tunings))}"


def run_seconds(data: dict) -> tuple[float, float]:
    """``(training, scoring)`` seconds of a suite.json's runs, each summed over the runs."""
    runs = [r for rows in data["runs"].values() for r in rows]
    return sum(r.get("train_seconds", 0.0) for r in runs), sum(r.get("seconds", 0.0) for r in runs)


def _duration(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 600 else f"{seconds:.0f} s"


def _short(commit) -> str:
    """``"2b811d8"`` or ``"2b811d8+dirty"`` from a full commit (None outside git: ``"unknown"``)."""
    if not commit:
        return "unknown"
    sha, _, dirty = str(commit).partition("+")
    return sha[:7] + (f"+{dirty}" if dirty else "")


def _fmt(x: float) -> str:
    """A score of the per-task and tuning tables: four decimals, or ``< 1e-3``."""
    return score_text(x, 4)


def replace_between(text: str, begin: str, end: str, block: str) -> str:
    """``text`` with what lies between the marker lines ``begin`` and ``end`` (both in it) replaced by ``block``."""
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{block}\n{end}{tail}"


#: The first suite version whose registry was written under the audit (v1's entries predate tracks).
AUDITED_FROM = 2


def audited_versions() -> list[int]:
    """The suite versions whose registries ``registry --check`` audits: those with results, from
    :data:`AUDITED_FROM` on."""
    return [v for v in versions_with_registry() if v >= AUDITED_FROM]


def versions_with_registry() -> list[int]:
    """The suite versions whose registry holds results, oldest first."""
    return [v for v in SUITES if any(registry_dir(v).glob("*.json"))]


def render(check: bool = False, files=(README, PAGE), reps: int = 2000) -> list[Path]:
    """Regenerate every version's marked blocks in ``files`` from its registry (a file holds the blocks it has
    markers for; each version's block must be somewhere), and the plots of the newest version whose registry is
    complete (:data:`EXPECTED`; unless ``check``).  Returns the files whose blocks were out of date (with ``check``
    nothing is written)."""
    from .task_table import replace_block

    texts = {path: path.read_text() for path in files}
    new = {path: replace_block(text, SUITE_VERSION) for path, text in texts.items()}
    plotted = None  # (entries, aggregates) of the newest version whose registry is complete
    for version in versions_with_registry():
        entries = load(registry_dir(version))
        aggregates = registry_aggregates(entries, reps)  # one bootstrap for both blocks and the plot
        if not missing_entries(entries, version):
            plotted = entries, aggregates
        blocks = {full: tables(entries, reps, full, aggregates) for full in (True, False)}
        begin, end = markers(version)
        holders = [p for p in files if begin in new[p] and end in new[p]]
        if not holders:
            raise ValueError(f"no file of {[str(p) for p in files]} has a {begin} ... {end} block to generate")
        for path in holders:
            new[path] = replace_between(new[path], begin, end, blocks[path != README])
    stale = [p for p in files if new[p] != texts[p]]
    if not check:
        for path in stale:
            path.write_text(new[path])
        if plotted is not None:
            overall, matrices = plot_data(*plotted)
            plot_aggregates({"groups": {"all": {"aggregates": {"overall": overall}}}}, PLOTS["aggregates"])
            plot_profiles(matrices, PLOTS["profiles"], reps)
    return stale


def plot_data(entries: dict[str, dict], aggregates: dict) -> tuple[dict, dict]:
    """``(overall, matrices)`` for the plots: each entry's overall aggregates and its score matrix over its task
    list (runs x tasks), named by the entry, and by the entry and the track's list where the tracks have lists of
    their own (a reference agent then appears once per list)."""
    lists = _lists(_version(entries))
    overall, matrices = {}, {}
    for lst, parts in lists.items():
        table = aggregates.get(_key(lst, "overall"), {})
        for name, row in table.items():
            label = f"{name} ({lst} tasks)" if len(lists) > 1 else name
            overall[label] = row
            data = entries[name]
            columns = [data["tasks"].index(t) for t in parts["overall"]]
            matrices[label] = np.asarray(data["normalized"], float)[:, columns]
    return overall, matrices
