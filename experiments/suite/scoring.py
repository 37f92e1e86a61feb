"""A policy's score on a suite task: exact V^pi by the oracle where the task says so, otherwise a Monte-Carlo
estimate with its 95% CI (Wilson's interval for a success rate); normalized by the exact optimum V* (on a task
without a table, by its published V*, the games played in the task's env).

A Monte-Carlo score's games start from a secret drawn when the scoring begins, after the training: game i is
played from ``reset(seed=S + i)`` with S drawn from [2^62, 2^63) so that no game's seed is one that the training
envs were reset with.  S is recorded in the result (``evaluation_seed``), and ``score_policy(...,
evaluation_seed=S)`` plays the same games again."""

from __future__ import annotations

import bisect
import math
import secrets
import time

import numpy as np
from tqdm.auto import tqdm

from oracle import Oracle
from oracle.agent import evaluates_exactly as exactly
from oracle.priced_games import mean_ci

from .tasks import Task

Z95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson's score interval for a success probability from ``successes`` of ``n`` trials: unlike the normal
    interval it is not empty at 0 or n successes."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def evaluates_exactly(task: Task, agent) -> bool:
    """Whether ``agent`` (a policy of :mod:`oracle.agent`) is scored exactly on ``task``: where the task allows it
    (``task.exact``) and :func:`oracle.agent.evaluates_exactly` says so; a ``ValueError`` says what to declare
    when a policy would be scored exactly but declares neither ``deterministic`` nor ``action_probs``."""
    rows, cols = task.shape
    return exactly(agent, rows * cols, table_allows=task.exact)


#: Where Monte-Carlo evaluation seeds are drawn: [EVALUATION_SEEDS, 2 * EVALUATION_SEEDS).
EVALUATION_SEEDS = 1 << 62


def draw_evaluation_seed(episodes: int, avoid=()) -> int:
    """A secret first seed S for ``episodes`` evaluation games (seeds S .. S + episodes - 1), drawn from the
    operating system's randomness in [2^62, 2^63 - episodes), none of the games' seeds in ``avoid`` (the training
    envs' seeds)."""
    avoid = sorted(int(a) for a in avoid)
    while True:
        first = EVALUATION_SEEDS + secrets.randbelow(EVALUATION_SEEDS - episodes)
        at = bisect.bisect_left(avoid, first)  # the smallest avoided seed >= first
        if at == len(avoid) or avoid[at] >= first + episodes:
            return first


def play_outcomes(task: Task, agent, episodes: int, first_seed: int, progress: bool = False) -> np.ndarray:
    """``float64 (episodes,)``: the outcomes (final score, or 1.0 for a success) of ``agent``'s games in the
    task's env (no oracle), game i from ``reset(seed=first_seed + i)``."""
    from oracle.agent import single_decider
    from oracle.priced_games import play_game

    from .envs import make_task_env

    env = make_task_env(task, oracle=False)
    decide = single_decider(agent)
    games = tqdm(range(episodes), desc=f"{task.name} games", unit=" games", disable=not progress)
    return np.array([play_game(env, decide, first_seed + i)[0] for i in games], np.float64)


def score_policy(
    task: Task,
    oracle: Oracle | None,
    agent,
    progress: bool = False,
    evaluation_seed: int | None = None,
    avoid_seeds=(),
) -> dict:
    """Score ``agent`` (anything ``oracle.agent`` accepts) on ``task``: a dict with ``value`` (V^pi: expected
    score, or probability of success), ``normalized`` (V^pi / V*), ``method`` (``"exact"`` or
    ``"monte-carlo"``, see :func:`evaluates_exactly`), for Monte Carlo ``episodes``, ``ci_low`` and ``ci_high``
    (95%, raw and normalized), ``evaluation_seed`` and ``seconds``.  Monte-Carlo episode i is played from seed
    ``evaluation_seed + i``, drawn by :func:`draw_evaluation_seed` (avoiding ``avoid_seeds``, the seeds of the
    training envs) unless given.  A task without a table takes ``oracle=None``: its games are played in its env
    and normalized by its published V*."""
    if task.has_table == (oracle is None):
        raise ValueError(
            f"{task.name}: "
            + ("give the task's oracle" if task.has_table else "a task without a table takes oracle=None")
        )
    optimum = oracle.start_value if oracle is not None else task.optimal_value
    start = time.perf_counter()
    if oracle is None:
        n = task.mc_episodes
        first = draw_evaluation_seed(n, avoid_seeds) if evaluation_seed is None else int(evaluation_seed)
        outcomes = play_outcomes(task, agent, n, first, progress)
        out = {"method": "monte-carlo", "episodes": n, "evaluation_seed": first} | _interval(task, outcomes)
    elif evaluates_exactly(task, agent):
        ev = oracle.evaluate(agent, progress=progress)
        out = {"method": "exact", "value": float(ev.value), "states": int(ev.states)}
    else:
        n = task.mc_episodes
        first = draw_evaluation_seed(n, avoid_seeds) if evaluation_seed is None else int(evaluation_seed)
        report = oracle.regret(agent, episodes=n, seed=first, progress=progress)
        if task.kind == "success":
            low, high = wilson_interval(round(report.mean_score * n), n)
        else:
            low, high = report.mean_score - report.score_ci, report.mean_score + report.score_ci
        out = {
            "method": "monte-carlo",
            "value": float(report.mean_score),
            "episodes": n,
            "ci_low": float(low),
            "ci_high": float(high),
            "mean_regret": float(report.mean_regret),
            "evaluation_seed": first,
        }
    out["optimal_value"] = float(optimum)
    out["normalized"] = out["value"] / optimum
    if "ci_low" in out:
        out["normalized_ci"] = [out["ci_low"] / optimum, out["ci_high"] / optimum]
    out["seconds"] = time.perf_counter() - start
    if not np.isfinite(out["value"]):
        raise ValueError(f"{task.name}: the policy's value is {out['value']}")
    return out


def _interval(task: Task, outcomes: np.ndarray) -> dict:
    """``{"value", "ci_low", "ci_high"}`` of Monte-Carlo outcomes: the mean, with Wilson's interval for a success
    rate, for a mean score the normal one of :func:`oracle.priced_games.mean_ci`, as the tabled tasks' regret
    games report it."""
    mean, half = mean_ci(outcomes)
    if task.kind == "success":
        low, high = wilson_interval(int(outcomes.sum()), outcomes.size)
    else:
        low, high = mean - half, mean + half
    return {"value": mean, "ci_low": float(low), "ci_high": float(high)}
