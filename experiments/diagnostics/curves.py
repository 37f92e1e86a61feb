"""Plot learning curves (``*.curve.csv`` from the training scripts) on one figure: % of V* against env steps or
training time, with 95% confidence bands where the points are estimates.

    python -m experiments.diagnostics.curves results/td.curve.csv results/ppo.curve.csv --x steps \
        --out docs/curves-3x3.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from .learning_curve import read_curve

X_AXES = {
    "steps": ("env_steps", "environment steps"),
    "time": ("train_seconds", "training time (s)"),
    "labels": ("labels", "oracle-labelled states"),
}


def plot_curves(paths, out, x: str = "steps", labels=None, title: str = "", log_x: bool | None = None):
    """One line per CSV (label: ``labels[i]`` or the run name); returns the figure and saves it to ``out``.  Steps
    and labels are drawn on a log axis (``log_x``), where checkpoints at 0 are left out."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    if x not in X_AXES:
        raise ValueError(f"x must be one of {sorted(X_AXES)}, got {x!r}")
    if labels is not None and len(labels) != len(paths):
        raise ValueError(f"{len(labels)} labels for {len(paths)} curves")
    column, x_label = X_AXES[x]
    log = log_x if log_x is not None else x != "time"
    fig, ax = plt.subplots(figsize=(8, 5))
    for i, path in enumerate(paths):
        rows = read_curve(path)
        if not rows:
            raise ValueError(f"{path} has no checkpoints")
        if log:  # the untrained checkpoint at 0 has no place on a log axis
            rows = [r for r in rows if r[column] > 0]
        xs = np.array([r[column] for r in rows])
        ys = np.array([r["percent_of_optimal"] for r in rows])
        ci = np.array([r["percent_ci"] for r in rows])
        label = labels[i] if labels else rows[0]["run"]
        (line,) = ax.plot(xs, ys, marker="o", ms=3, lw=1.2, label=label)
        if ci.any():
            ax.fill_between(xs, ys - ci, ys + ci, color=line.get_color(), alpha=0.2, lw=0)
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(x_label)
    ax.set_ylabel("% of V* (exact, or oracle-priced regret ± 95% CI)")
    ax.set_ylim(0, 100)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=9)
    ax.set_title(title or "learning curves against the optimum")
    fig.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return fig


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("curves", nargs="+", help="curve CSV files")
    parser.add_argument("--x", choices=sorted(X_AXES), default="steps", help="horizontal axis (default steps)")
    parser.add_argument("--labels", default=None, help="comma-separated legend labels (default: run names)")
    parser.add_argument("--title", default="")
    parser.add_argument("--out", default="curves.png")
    args = parser.parse_args(argv)
    labels = args.labels.split(",") if args.labels else None
    plot_curves(args.curves, args.out, args.x, labels, args.title)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
