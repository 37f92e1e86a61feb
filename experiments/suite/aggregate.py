"""Aggregates across tasks and runs the way RL papers report them (rliable, Agarwal et al., 2021): IQM, mean,
median and optimality gap, performance profiles and probability of improvement, with stratified-bootstrap 95%
intervals that also carry each Monte-Carlo score's sampling error (:mod:`experiments.suite.bootstrap`).  Scores are
normalized by the exact optimum, so the optimality gap (1 - score, clipped at 0) is exact.

    python -m experiments.suite compare DIR_A DIR_B ... --out DIR
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np

from . import bootstrap
from .budget import REFERENCE_TRACK

#: The aggregate metrics, in the order of their columns.
METRICS = ("IQM", "mean", "median", "optimality gap")


@functools.cache  # a registry render asks ~88,000 times (once per bootstrap sample)
def _rliable():
    try:
        from rliable import library as rly
        from rliable import metrics
    except ImportError as e:
        raise ImportError("the suite's aggregates need rliable: pip install -e '.[suite]'") from e
    return rly, metrics


def iqm(scores: np.ndarray) -> float:
    """rliable's ``aggregate_iqm`` (``scipy.stats.trim_mean(scores, 0.25, axis=None)``: the mean of the middle
    half of all the scores), computed as scipy computes it, partition and mean, so that it is the same float; NaN
    if a score is NaN.  Without scipy's argument-handling wrapper, which costs ~0.3 ms a call: a README render
    bootstraps ~88,000 score matrices (tests/test_suite.py checks it against rliable's)."""
    a = np.asarray(scores).ravel()
    if a.size == 0 or np.isnan(a).any():
        return np.nan
    low = int(0.25 * a.size)
    high = a.size - low
    return np.mean(np.partition(a, (low, high - 1))[low:high])


def point_estimates(scores: np.ndarray) -> np.ndarray:
    """IQM, mean, median and optimality gap (gamma = 1, the optimum) of a ``(runs, tasks)`` score matrix."""
    _, metrics = _rliable()
    return np.array(
        [
            iqm(scores),
            metrics.aggregate_mean(scores),
            metrics.aggregate_median(scores),
            metrics.aggregate_optimality_gap(scores, 1.0),
        ]
    )


def probability_of_improvement(x, y, reps: int = 2000, seed: int = 0):
    """P(X > Y) over tasks, with its 95% bootstrap interval: ``(point, (low, high))``.  ``x``, ``y``: ``(runs,
    tasks)`` score matrices, or :class:`~experiments.suite.bootstrap.ScoreCells` whose Monte-Carlo error the
    interval then carries."""
    return bootstrap.probability_of_improvement(_cells(x), _cells(y), reps, seed)


def _cells(scores) -> bootstrap.ScoreCells:
    return scores if isinstance(scores, bootstrap.ScoreCells) else bootstrap.ScoreCells.exact(scores)


def aggregate_table(matrices: dict, reps: int = 2000) -> dict:
    """``{name: {metric: {"point", "ci": [low, high]}, "runs": n}}`` of each agent's scores (a ``(runs, tasks)``
    matrix, or :class:`~experiments.suite.bootstrap.ScoreCells` with their Monte-Carlo error): the points are
    rliable's, the 95% intervals from :mod:`experiments.suite.bootstrap`, each agent bootstrapped on its own from
    the same seed, so that its intervals do not move when another agent is added."""
    table = {}
    for name, scores in matrices.items():
        cells = _cells(scores)
        points, cis = point_estimates(cells.normalized), bootstrap.intervals(cells, reps)
        table[name] = {
            m: {"point": float(points[i]), "ci": [float(cis[0][i]), float(cis[1][i])]} for i, m in enumerate(METRICS)
        } | {"runs": int(cells.shape[0])}
    return table


def load_matrix(path) -> tuple[str, dict]:
    """``(name, suite.json)`` of a results directory (or a suite.json file), named by its agent or trainer; or,
    given as ``"NAME=PATH"`` (a path that is not itself a file or directory), named NAME: two runs of one trainer
    (tuned and untuned settings, say) need names of their own."""
    name = None
    if isinstance(path, str) and "=" in path and not Path(path).exists():
        name, path = path.split("=", 1)
        if not name:
            raise ValueError(f"{name}={path}: give a name before '=' (NAME=DIR)")
    path = Path(path)
    file = path / "suite.json" if path.is_dir() else path
    if not file.exists():
        raise FileNotFoundError(f"{path}: no suite.json (run `python -m experiments.suite run ... --out {path}`)")
    data = json.loads(file.read_text())
    return name or data.get("agent") or data.get("trainer") or file.parent.name, data


#: The families of tasks, by what a task scores (docs/suite.md): aggregates are reported per family and overall.
FAMILIES = {"score": "score games", "success": "goal games and endgames"}


def task_families(data: dict) -> dict[str, str]:
    """``{task: family}`` of a suite.json (its ``family`` map, or the tasks' kinds for results written before)."""
    if "family" in data:
        return dict(data["family"])
    from .tasks import get_task

    return {name: get_task(name, int(data.get("suite_version", 1))).kind for name in data["tasks"]}


def track_of_result(data: dict) -> str:
    """The track of a suite.json: its ``track``; for results written before tracks were recorded, the track
    its trainer declares (``env-only`` if it cannot be loaded here), or ``reference`` for an agent."""
    if data.get("track"):
        return data["track"]
    if not data.get("trainer"):
        return REFERENCE_TRACK
    from .policies import load_trainer
    from .training import track_of

    try:
        return track_of(load_trainer(data["trainer"]))
    except ValueError:
        return "env-only"


def aggregates_by_family(matrices: dict[str, np.ndarray], families: dict[str, str], tasks: list[str], reps: int):
    """``{"overall": table, family: table, ...}`` (tables of :func:`aggregate_table`) over the tasks' columns."""
    out = {"overall": aggregate_table(matrices, reps)}
    for family in FAMILIES:
        columns = [j for j, t in enumerate(tasks) if families[t] == family]
        if columns:
            out[family] = aggregate_table({n: _cells(m).take(columns) for n, m in matrices.items()}, reps)
    return out


def grouped_aggregates(matrices, tracks, families, tasks, reps: int = 2000, pool_tracks: bool = False) -> dict:
    """``{group: {"agents", "aggregates", "probability_of_improvement"}}``: one group per learning track, the
    ``reference`` agents in every group (one ``"pooled"`` group with ``pool_tracks``, or when there is at most one
    learning track); ``aggregates`` as :func:`aggregates_by_family`."""
    learned = sorted({t for t in tracks.values() if t != REFERENCE_TRACK})
    if pool_tracks or len(learned) <= 1:
        groups = {"pooled": list(matrices)}
    else:
        groups = {track: [n for n in matrices if tracks[n] in (track, REFERENCE_TRACK)] for track in learned}
    by_group = {}
    for group, names in groups.items():
        improvement = {}
        for a in names:
            for b in names:
                if a != b:
                    point, ci = probability_of_improvement(matrices[a], matrices[b], reps)
                    improvement[f"{a} > {b}"] = {"point": point, "ci": list(ci)}
        by_group[group] = {
            "agents": names,
            "aggregates": aggregates_by_family({n: matrices[n] for n in names}, families, tasks, reps),
            "probability_of_improvement": improvement,
        }
    return by_group


def compare(dirs, out, reps: int = 2000, pool_tracks: bool = False) -> dict:
    """Aggregate the results directories ``dirs`` (same suite version and tasks) into ``out``: ``compare.md``,
    ``compare.json``, ``aggregates.png`` and ``profiles.png``.  Returns the table as a dict.

    Results are grouped by track (``reference`` agents join every group): aggregates per family of tasks and
    overall, and probabilities of improvement, are computed within a group; ``pool_tracks`` makes one group of
    all."""
    loaded = [load_matrix(d) for d in dirs]
    versions = {data.get("suite_version") for _, data in loaded}
    if len(versions) != 1:
        raise ValueError(f"the results come from different suite versions {sorted(versions)}: compare one version")
    tasks = {tuple(data["tasks"]) for _, data in loaded}
    if len(tasks) != 1:
        raise ValueError(f"the results cover different tasks: {sorted(tasks)}")
    task_names = list(tasks.pop())
    matrices = {name: bootstrap.ScoreCells.of_result(data) for name, data in loaded}
    if len(matrices) != len(loaded):
        raise ValueError(
            "two results directories hold the same agent: compare distinct ones, or name each one (NAME=DIR)"
        )
    tracks = {name: track_of_result(data) for name, data in loaded}
    families = task_families(loaded[0][1])
    by_group = grouped_aggregates(matrices, tracks, families, task_names, reps, pool_tracks)
    learned = {t for t in tracks.values() if t != REFERENCE_TRACK}
    result = {
        "suite_version": versions.pop(),
        "tasks": task_names,
        "family": families,
        "tracks": tracks,
        "pooled_tracks": len(learned) > 1 and "pooled" in by_group,
        "groups": by_group,
        "reps": reps,
    }
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "compare.md").write_text(markdown(result))
    plot_aggregates(result, out / "aggregates.png")
    plot_profiles({n: m.normalized for n, m in matrices.items()}, out / "profiles.png", reps)
    return result


#: Normalized scores below this print as ``< 1e-3`` and are not ranked against each other: at that level the
#: suite tells no learner's play apart.
SCORE_FLOOR = 1e-3


def score_text(x: float, digits: int = 3) -> str:
    """A normalized score for a table: ``digits`` decimals, or ``< 1e-3``."""
    return "< 1e-3" if x < SCORE_FLOOR else f"{x:.{digits}f}"


def estimate_text(row: dict, probability: bool = False) -> str:
    """``"0.446 [0.438, 0.453]"`` of ``{"point", "ci"}``: scores through :func:`score_text`, a probability of
    improvement (``probability``) in plain decimals."""
    text = (lambda x: f"{x:.3f}") if probability else score_text
    return f"{text(row['point'])} [{text(row['ci'][0])}, {text(row['ci'][1])}]"


def regime_of_result(data: dict) -> str:
    """The budget regime of a suite.json: its ``regime``, ``small`` for results written before regimes (their
    budgets are the small regime's)."""
    return data.get("regime", "small")


def _table_lines(table: dict) -> list[str]:
    lines = ["| agent | runs | " + " | ".join(METRICS) + " |", "|---|---:|" + "---:|" * len(METRICS)]
    for name, row in table.items():
        cells = [estimate_text(row[m]) for m in METRICS]
        lines.append(f"| {name} | {row['runs']} | " + " | ".join(cells) + " |")
    return lines


def markdown(result: dict) -> str:
    tasks = result["tasks"]
    lines = [
        f"Suite v{result['suite_version']}, {len(tasks)} tasks ({', '.join(tasks)}); scores are V^pi / V*; 95% "
        "stratified-bootstrap CIs carrying each Monte-Carlo score's error.  Tracks: "
        + ", ".join(f"{name} ({track})" for name, track in result["tracks"].items())
        + (" (pooled on request)" if result["pooled_tracks"] else "")
        + ".",
    ]
    for group, block in result["groups"].items():
        heading = "all results" if group == "pooled" else f"track {group} (with the reference agents)"
        for part, table in block["aggregates"].items():
            members = [t for t in tasks if part == "overall" or result["family"][t] == part]
            title = "overall" if part == "overall" else FAMILIES[part]
            lines += ["", f"**{heading}: {title}** ({', '.join(members)})", "", *_table_lines(table)]
        if block["probability_of_improvement"]:
            lines += ["", "| probability of improvement | P(X > Y) [95% CI] |", "|---|---:|"]
            for pair, v in block["probability_of_improvement"].items():
                lines.append(f"| {pair} | {estimate_text(v, probability=True)} |")
    return "\n".join(lines) + "\n"


def plot_aggregates(result: dict, path) -> None:
    """One panel per metric: each agent's overall point estimate with its CI (within its track's group)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    aggregates = {}
    for block in result["groups"].values():
        aggregates.update(block["aggregates"]["overall"])
    names = list(aggregates)
    fig, axes = plt.subplots(1, len(METRICS), figsize=(3.2 * len(METRICS), 1.6 + 0.45 * len(names)), sharey=True)
    for ax, m in zip(axes, METRICS, strict=True):
        for y, name in enumerate(names):
            row = aggregates[name][m]
            ax.plot(row["ci"], [y, y], lw=6, alpha=0.5, solid_capstyle="butt", color=f"C{y}")
            ax.plot([row["point"]], [y], "k|", ms=12)
        ax.set_title(m)
        ax.set_xlim(-0.02, 1.02)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(names)), names)
    fig.supxlabel("normalized score V^pi / V* (gap: 1 - score)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plot_profiles(matrices: dict[str, np.ndarray], path, reps: int = 2000) -> None:
    """Performance profiles (fraction of runs above each normalized score) with stratified-bootstrap bands."""
    rly, _ = _rliable()
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    taus = np.linspace(0.0, 1.0, 101)
    np.random.seed(0)  # noqa: NPY002
    profiles, cis = rly.create_performance_profile(matrices, taus, reps=reps)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name in matrices:
        ax.plot(taus, profiles[name], label=name)
        ax.fill_between(taus, cis[name][0], cis[name][1], alpha=0.2)
    ax.set_xlabel("normalized score τ (V^pi / V*)")
    ax.set_ylabel("fraction of runs with score > τ")
    ax.set_ylim(0, 1.02)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
