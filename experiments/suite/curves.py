"""``python -m experiments.suite curves DIR ...``: sample-efficiency curves of learning algorithms over seeds, from
runs made with ``run --trainer ... --curve K`` (experiments.suite.monitor), aggregated with rliable.

For each results directory: the IQM over runs x tasks of the normalized score at each checkpoint (a fraction of
each task's budget, so that tasks of different budgets line up; each directory may have its own checkpoints, one
``--curve K`` for all its runs), with its stratified-bootstrap 95% band; for each
run, the environment steps it took to reach 50%, 90% and 95% of V* (the first checkpoint at or above; None if
it never did), and its training regret (the oracle's price of every move it made while learning).  Writes
``curves.json``, ``curves.md`` and ``curves.png``.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .aggregate import _rliable, load_matrix

#: Shares of V* whose first crossing is reported.
THRESHOLDS = (0.5, 0.9, 0.95)


def load_curves(path) -> tuple[str, dict]:
    """``(name, {"tasks", "fractions", "scores" (runs, tasks, points), "runs": [[run file, ...] per task]})`` of a
    results directory whose runs recorded curves; a clear error otherwise."""
    name, data = load_matrix(path)
    runs = [data["runs"][t] for t in data["tasks"]]
    missing = [f"{r['task']} seed {r['seed']}" for task_runs in runs for r in task_runs if "curve" not in r]
    if missing:
        raise ValueError(f"{path}: runs without a curve ({', '.join(missing[:3])}): run --trainer ... --curve K")
    fractions = {tuple(p["fraction"] for p in r["curve"]) for task_runs in runs for r in task_runs}
    if len(fractions) != 1:
        raise ValueError(f"{path}: the runs' checkpoints differ ({sorted(fractions)}): use one --curve K")
    scores = np.array([[[p["normalized"] for p in r["curve"]] for r in task_runs] for task_runs in runs])
    return name, {
        "tasks": data["tasks"],
        "fractions": list(fractions.pop()),
        "scores": scores.transpose(1, 0, 2),
        "runs": runs,
    }


def iqm_curve(scores: np.ndarray) -> np.ndarray:
    """IQM over runs x tasks at each checkpoint of a ``(runs, tasks, points)`` array: ``float64[points]``."""
    _, metrics = _rliable()
    return np.array([metrics.aggregate_iqm(scores[..., k]) for k in range(scores.shape[-1])])


def curve_estimates(curves: dict[str, np.ndarray], reps: int = 2000, seed: int = 0):
    """``(points, cis)``: per algorithm the IQM curve and its stratified-bootstrap 95% band (``[2, points]``)."""
    rly, _ = _rliable()
    np.random.seed(seed)  # noqa: NPY002  (rliable's bootstrap draws from numpy's global generator)
    return rly.get_interval_estimates(curves, iqm_curve, reps=reps)


def steps_to_reach(curve: list[dict], thresholds=THRESHOLDS) -> dict[str, int | None]:
    """The steps of the first checkpoint whose normalized score is at least each threshold (None: never)."""
    return {f"{t:g}": next((p["steps"] for p in curve if p["normalized"] >= t), None) for t in thresholds}


def curves(dirs, out, reps: int = 2000) -> dict:
    """Aggregate the curves of the results directories ``dirs`` (the same tasks; checkpoints each its own) into
    ``out``."""
    loaded = dict(load_curves(d) for d in dirs)
    if len(loaded) != len(dirs):
        raise ValueError("two results directories hold the same trainer: give distinct ones")
    if len({tuple(c["tasks"]) for c in loaded.values()}) != 1:
        raise ValueError("the directories cover different tasks: curves compare like with like")
    first = next(iter(loaded.values()))
    points, cis = curve_estimates({n: c["scores"] for n, c in loaded.items()}, reps)
    result = {"tasks": first["tasks"], "reps": reps, "algorithms": {}}
    for name, c in loaded.items():
        per_run = [
            {
                "task": r["task"],
                "seed": r["seed"],
                "steps_to_reach": steps_to_reach(r["curve"]),
                "training_regret": r["training_regret"],
                "training_moves": r["training_moves_priced"],
                "final": r["normalized"],
            }
            for task_runs in c["runs"]
            for r in task_runs
        ]
        result["algorithms"][name] = {
            "fractions": c["fractions"],
            "iqm": points[name].tolist(),
            "ci": np.asarray(cis[name]).tolist(),
            "runs": per_run,
        }
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "curves.json").write_text(json.dumps(result, indent=1) + "\n")
    (out / "curves.md").write_text(markdown(result))
    plot(result, out / "curves.png")
    return result


def markdown(result: dict) -> str:
    """The IQM curves with their bands (one column per checkpoint of any algorithm; a dash where an algorithm has
    none), then each run's steps to the thresholds and its training regret."""
    fractions = sorted({f for a in result["algorithms"].values() for f in a["fractions"]})
    lines = [
        "| algorithm | " + " | ".join(f"{f:.2f} of budget" for f in fractions) + " |",
        "|---|" + "---:|" * len(fractions),
    ]
    for name, a in result["algorithms"].items():
        at = {
            f: f"{p:.3f} [{lo:.3f}, {hi:.3f}]" for f, p, lo, hi in zip(a["fractions"], a["iqm"], *a["ci"], strict=True)
        }
        lines.append(f"| {name} | " + " | ".join(at.get(f, "—") for f in fractions) + " |")
    reach = " | ".join(f"steps to {t:g}" for t in THRESHOLDS)
    lines += [
        "",
        f"| algorithm | task | seed | {reach} | training regret | per move | final |",
        "|---|---|---:|" + "---:|" * (len(THRESHOLDS) + 3),
    ]
    for name, a in result["algorithms"].items():
        for r in a["runs"]:
            reach = " | ".join("never" if s is None else f"{s:,}" for s in r["steps_to_reach"].values())
            per_move = r["training_regret"] / max(r["training_moves"], 1)
            lines.append(
                f"| {name} | {r['task']} | {r['seed']} | {reach} | {r['training_regret']:.4g} | "
                f"{per_move:.4g} | {r['final']:.4f} |"
            )
    return "\n".join(lines) + "\n"


def plot(result: dict, path) -> None:
    """IQM of V^pi / V* against the fraction of the budget, with the 95% bands (rliable's plot)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from rliable import plot_utils

    fig, ax = plt.subplots(figsize=(6.5, 4))
    for k, (name, a) in enumerate(result["algorithms"].items()):  # one call each: their checkpoints may differ
        plot_utils.plot_sample_efficiency_curve(
            np.array(a["fractions"]),
            {name: np.array(a["iqm"])},
            {name: np.array(a["ci"])},
            algorithms=[name],
            ax=ax,
            colors={name: f"C{k}"},
            xlabel="fraction of the task's budget (env steps)",
            ylabel="IQM of V^π / V*",
        )
    ax.legend(fontsize=8)
    ax.set_title(f"Sample efficiency on {', '.join(result['tasks'])}", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
