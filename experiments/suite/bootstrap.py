"""Bootstrap intervals of the suite's aggregates that carry each Monte-Carlo score's own sampling error.

rliable's stratified bootstrap resamples the runs of each task: an agent scored once (a fixed agent) gets an
interval of zero width, and the error of a score estimated from 1,000 games never reaches an aggregate.  Here a
bootstrap replicate first resamples the runs of each task, as rliable does, then redraws every Monte-Carlo cell it
picked from that cell's own sampling distribution:

- a success rate of k successes in n games from Beta(k + 1/2, n - k + 1/2), the distribution behind Jeffreys'
  interval: close to the bootstrap over its n games (Binomial(n, k/n) / n) where k is neither 0 nor n, and unlike
  it not a point where it is (0 of 1,000 games leaves the rate up to about 0.0025, not exactly 0);
- a mean score as Normal(mean, se), se the standard error recorded with it: the bootstrap over its games in the
  large-n limit (the games themselves are not stored).

Exact cells stay as they are.  Over several runs the second stage adds Monte-Carlo noise on top of the spread
between runs, which already holds some of it: the intervals are conservative.  Intervals are percentile intervals
(rliable's method).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: The normal quantile of a 95% interval, as recorded Monte-Carlo intervals were made with.
Z95 = 1.96


@dataclass(frozen=True)
class ScoreCells:
    """One agent's normalized scores on some tasks, and the sampling error of each Monte-Carlo score.

    ``normalized``: ``float64 (runs, tasks)``, V^π / V*; ``episodes``: ``int64 (runs, tasks)``, the games of a
    Monte-Carlo success rate (0 for other cells); ``optimum``: ``float64 (tasks,)``, V* of such a task (a
    normalized success rate times V* is the rate itself; 1 where unused); ``std_error``: ``float64 (runs,
    tasks)``, the standard error of a Monte-Carlo mean score, normalized (0 for other cells)."""

    normalized: np.ndarray
    episodes: np.ndarray
    optimum: np.ndarray
    std_error: np.ndarray

    @classmethod
    def exact(cls, normalized) -> ScoreCells:
        """Scores with no sampling error (exact values)."""
        normalized = np.asarray(normalized, float)
        if normalized.ndim != 2 or 0 in normalized.shape:
            raise ValueError(f"scores must be a (runs, tasks) matrix with at least one of each, got {normalized.shape}")
        zeros = np.zeros(normalized.shape)
        return cls(normalized, zeros.astype(np.int64), np.ones(normalized.shape[1]), zeros)

    @classmethod
    def of_result(cls, data: dict, tasks=None) -> ScoreCells:
        """The cells of a ``suite.json`` on ``tasks`` (default: all it covers): on a task its ``method`` map marks
        Monte Carlo (absent: exact), each run's record gives its method, and for Monte Carlo its games (success
        rates) or its interval (mean scores)."""
        tasks = list(data["tasks"] if tasks is None else tasks)
        matrix = np.asarray(data["normalized"], float)
        columns = [data["tasks"].index(t) for t in tasks]
        cells = cls.exact(matrix[:, columns])
        success = {t: kind == "success" for t, kind in _families(data).items()}
        methods = data.get("method", {})
        for j, task in enumerate(tasks):
            if methods.get(task, "exact") == "exact":  # the method of the task's first run (the runner's map)
                continue
            runs = data["runs"][task]
            if len(runs) != matrix.shape[0]:
                raise ValueError(f"{task}: {len(runs)} run records for {matrix.shape[0]} rows of scores")
            for i, run in enumerate(runs):
                if run["normalized"] != cells.normalized[i, j]:
                    raise ValueError(f"{task}, run {i}: its record's score is not the matrix's")
                if run["method"] != "monte-carlo":
                    continue
                if success[task]:
                    cells.episodes[i, j] = run["episodes"]
                    cells.optimum[j] = run["optimal_value"]
                else:
                    low, high = run["normalized_ci"]
                    cells.std_error[i, j] = (high - low) / (2 * Z95)
        return cells

    @property
    def shape(self) -> tuple[int, int]:
        return self.normalized.shape

    @property
    def monte_carlo(self) -> bool:
        """Whether any cell carries sampling error."""
        return bool(self.episodes.any() or self.std_error.any())

    def take(self, columns) -> ScoreCells:
        """The cells of some tasks (column indices)."""
        columns = list(columns)
        return ScoreCells(
            self.normalized[:, columns], self.episodes[:, columns], self.optimum[columns], self.std_error[:, columns]
        )

    def replicates(self, rng: np.random.Generator, reps: int) -> np.ndarray:
        """``float64 (reps, runs, tasks)``: bootstrap replicates, runs resampled within each task, then each picked
        Monte-Carlo cell redrawn from its sampling distribution."""
        runs, tasks = self.shape
        picks = rng.integers(0, runs, size=(reps, runs, tasks))
        columns = np.broadcast_to(np.arange(tasks), picks.shape)
        out = self.normalized[picks, columns]
        games = self.episodes[picks, columns]
        rate = games > 0
        if rate.any():
            optimum = self.optimum[columns[rate]]
            n = games[rate]
            k = np.clip(np.rint(out[rate] * optimum * n), 0, n)
            out[rate] = rng.beta(k + 0.5, n - k + 0.5) / optimum
        if self.std_error.any():
            out += rng.standard_normal(out.shape) * self.std_error[picks, columns]
        return out


def _families(data: dict) -> dict[str, str]:
    from .aggregate import task_families

    return task_families(data)


def iqm(x: np.ndarray) -> np.ndarray:
    """``float64 (reps,)``: the interquartile mean of each replicate of ``x`` ``(reps, runs, tasks)`` (the mean of
    the middle half of its runs × tasks scores, as rliable's ``aggregate_iqm``)."""
    flat = x.reshape(len(x), -1)
    low = int(0.25 * flat.shape[1])
    high = flat.shape[1] - low
    return np.partition(flat, (low, high - 1), axis=1)[:, low:high].mean(axis=1)


def statistics(x: np.ndarray) -> np.ndarray:
    """``float64 (reps, 4)``: IQM, mean, median (over tasks, of each task's mean over runs) and optimality gap
    (mean of 1 - min(score, 1)) of each replicate of ``x`` ``(reps, runs, tasks)``, as rliable defines them."""
    return np.stack(
        [
            iqm(x),
            x.mean(axis=(1, 2)),
            np.median(x.mean(axis=1), axis=1),
            (1.0 - np.minimum(x, 1.0)).mean(axis=(1, 2)),
        ],
        axis=1,
    )


def percentile_interval(samples: np.ndarray) -> np.ndarray:
    """``float64 (2, ...)``: the 2.5th and 97.5th percentiles of ``samples`` along its first axis."""
    return np.percentile(samples, [2.5, 97.5], axis=0)


def intervals(cells: ScoreCells, reps: int = 2000, seed: int = 0) -> np.ndarray:
    """``float64 (2, 4)``: 95% intervals (lower and upper rows) of the :func:`statistics` over ``reps``
    replicates of ``cells``, each widened to hold the statistic of the observed scores where the replicates leave
    it out (a rate of 0 in n games: every draw is above 0)."""
    cis = percentile_interval(statistics(cells.replicates(np.random.default_rng(seed), reps)))
    points = statistics(cells.normalized[None])[0]
    return np.stack([np.minimum(cis[0], points), np.maximum(cis[1], points)])


def improvement(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """``float64 (reps,)``: the probability of improvement of each replicate pair, ``x`` ``(reps, m, tasks)`` over
    ``y`` ``(reps, n, tasks)``: per task, the share of the m × n pairs of runs where x's score is higher (a tie
    counts half: the Mann-Whitney U over m n), averaged over tasks, as rliable's
    ``probability_of_improvement``."""
    a, b = x[:, :, None, :], y[:, None, :, :]
    per_task = (a > b).mean(axis=(1, 2)) + 0.5 * (a == b).mean(axis=(1, 2))
    return per_task.mean(axis=1)


def probability_of_improvement(
    x: ScoreCells, y: ScoreCells, reps: int = 2000, seed: int = 0
) -> tuple[float, tuple[float, float]]:
    """P(X > Y) over the tasks of two agents' cells (same tasks), with its 95% interval: ``(point, (low,
    high))``, each agent's replicates drawn as :meth:`ScoreCells.replicates` draws them, the interval widened to
    hold the point where the replicates leave it out (a Monte-Carlo rate of 0 redrawn above an exact 0 makes
    every replicate's comparison a win where the observed one is a tie)."""
    if x.shape[1] != y.shape[1]:
        raise ValueError(f"the two agents' scores cover {x.shape[1]} and {y.shape[1]} tasks: give the same tasks")
    point = float(improvement(x.normalized[None], y.normalized[None])[0])
    rng = np.random.default_rng(seed)
    samples = improvement(x.replicates(rng, reps), y.replicates(rng, reps))
    low, high = percentile_interval(samples)
    return point, (float(min(low, point)), float(max(high, point)))
