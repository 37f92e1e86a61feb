"""Exact learning curves: a training run's policy priced by the oracle at checkpoints, one CSV row each.

The training scripts (``train_td``, ``train_ppo``, ``imitate``) take ``--eval-every`` (``N`` env steps, or
``Ns`` seconds of training) and write ``OUT.curve.csv`` with :data:`COLUMNS`:

``run``               the run's name (the output file's stem)
``checkpoint``        0, 1, 2, ... (0 = before training)
``env_steps``         environment steps (moves) the learner has taken so far
``games``             games finished so far (0 where the learner does not count them)
``labels``            oracle-labelled states used so far (imitation; 0 for reinforcement learning)
``train_seconds``     training time so far, evaluations excluded
``wall_seconds``      wall time since the start, evaluations included
``method``            ``exact`` (the oracle's exact evaluation of the greedy/deterministic policy) or ``regret``
                      (V* minus the mean oracle-priced regret over ``--eval-episodes`` seeded games)
``value``             V^π(start) (exact) or its estimate
``value_ci``          half-width of the 95% confidence interval (0 for ``exact``)
``percent_of_optimal`` 100 · value / V*
``percent_ci``        100 · value_ci / V*
``optimal_value``     V*(start)

The regret games use seeds ``EVAL_SEED``, ``EVAL_SEED + 1``, ...: the same games at every checkpoint and in every
run, so curves differ by the policy only.
"""

from __future__ import annotations

import csv
import time
from dataclasses import dataclass
from pathlib import Path

from oracle.agent import evaluates_exactly

COLUMNS = (
    "run",
    "checkpoint",
    "env_steps",
    "games",
    "labels",
    "train_seconds",
    "wall_seconds",
    "method",
    "value",
    "value_ci",
    "percent_of_optimal",
    "percent_ci",
    "optimal_value",
)
#: First seed of the evaluation games (far from the training seeds of the scripts).
EVAL_SEED = 1_000_000
METHODS = ("auto", "exact", "regret")


@dataclass(frozen=True)
class EvalEvery:
    """When to evaluate: every ``amount`` env steps (``unit="steps"``) or seconds of training (``"seconds"``)."""

    amount: float
    unit: str

    @classmethod
    def parse(cls, text: str) -> EvalEvery:
        """``"500000"`` (env steps) or ``"60s"`` (seconds of training)."""
        text = str(text).strip().lower()
        unit = "seconds" if text.endswith("s") else "steps"
        number = text[:-1] if unit == "seconds" else text
        try:
            amount = float(number)
        except ValueError:
            amount = -1.0
        if amount <= 0:
            raise ValueError(
                f"--eval-every must be a positive number of env steps (500000) or seconds (60s), got {text!r}"
            )
        return cls(amount, unit)

    def position(self, env_steps: int, train_seconds: float) -> float:
        return env_steps if self.unit == "steps" else train_seconds


class LearningCurve:
    """Evaluates a learner at checkpoints and appends a row per checkpoint to ``path`` (flushed at once, so an
    interrupted run keeps its curve).

    ``oracle``: the board's oracle; ``method``: ``auto`` (exact where
    :func:`oracle.agent.evaluates_exactly`, else regret),
    ``exact`` or ``regret``; ``episodes``: regret games per checkpoint.
    """

    def __init__(
        self, path, oracle, every: EvalEvery | None, method: str = "auto", episodes: int = 300, run: str | None = None
    ):
        if method not in METHODS:
            raise ValueError(f"eval method must be one of {METHODS}, got {method!r}")
        if episodes < 2:
            raise ValueError(f"eval episodes must be >= 2 (a confidence interval needs two games), got {episodes}")
        self.path, self.oracle, self.every, self.method, self.episodes = Path(path), oracle, every, method, episodes
        self.run = run or self.path.name.removesuffix(".curve.csv")
        self.start = time.perf_counter()
        self.rows: list[dict] = []
        self.next_at = 0.0
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "w", newline="") as fh:
            csv.DictWriter(fh, fieldnames=COLUMNS).writeheader()

    def due(self, env_steps: int, train_seconds: float) -> bool:
        """True when the schedule has reached its next checkpoint (always False without a schedule)."""
        return self.every is not None and self.every.position(env_steps, train_seconds) >= self.next_at

    def record(self, agent, env_steps: int, train_seconds: float, games: int = 0, labels: int = 0) -> dict:
        """Evaluate ``agent`` now, append the row and move the schedule on; returns the row."""
        value, ci, method = self.evaluate(agent)
        v_star = self.oracle.start_value
        row = {
            "run": self.run,
            "checkpoint": len(self.rows),
            "env_steps": int(env_steps),
            "games": int(games),
            "labels": int(labels),
            "train_seconds": round(float(train_seconds), 3),
            "wall_seconds": round(time.perf_counter() - self.start, 3),
            "method": method,
            "value": value,
            "value_ci": ci,
            "percent_of_optimal": 100 * value / v_star,
            "percent_ci": 100 * ci / v_star,
            "optimal_value": v_star,
        }
        self.rows.append(row)
        with open(self.path, "a", newline="") as fh:
            csv.DictWriter(fh, fieldnames=COLUMNS).writerow(row)
        if self.every is not None:
            position = self.every.position(env_steps, train_seconds)
            while self.next_at <= position:
                self.next_at += self.every.amount
        return row

    def evaluate(self, agent) -> tuple[float, float, str]:
        """``(value, CI half-width, method)`` of ``agent``'s policy from the start."""
        method = self.method
        if method == "auto":
            method = "exact" if evaluates_exactly(agent, self.oracle.rows * self.oracle.cols) else "regret"
        if method == "exact":
            return float(self.oracle.evaluate(agent, progress=False).value), 0.0, "exact"
        report = self.oracle.regret(agent, episodes=self.episodes, seed=EVAL_SEED, progress=False)
        return float(self.oracle.start_value - report.mean_regret), float(report.regret_ci), "regret"


def read_curve(path) -> list[dict]:
    """The rows of a curve CSV, numbers parsed."""
    out = []
    with open(path, newline="") as fh:
        reader = csv.DictReader(fh)
        missing = set(COLUMNS) - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{path} is not a learning-curve CSV: no column(s) {sorted(missing)}")
        for row in reader:
            out.append({k: (v if k in ("run", "method") else float(v)) for k, v in row.items()})
    return out
