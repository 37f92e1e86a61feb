"""The rules a task list of the suite must pass (docs/suite.md, "Suite v3: the rules"), checked on measurements:
the candidates' log (:mod:`experiments.suite.candidates`) or a registry's entries.

- **Ceiling**: no non-optimal agent's mean score on a task above :data:`CEILING` (0.95 of V*): a task solved
  near the optimum leaves no room to tell agents apart.
- **Floor per track**: in every (track, family, regime), each task has at least one learner of that track whose
  95% interval lies inside :data:`FLOOR_BAND` ([0.05, 0.95]): a task where every learner of a track scores about
  0 (or about 1) separates nothing on that track.
- **Size**: at least :data:`MIN_TASKS_PER_FAMILY` tasks in each family.

An interval is that of the mean over the seeds, each Monte-Carlo score redrawn from its own error
(:mod:`experiments.suite.bootstrap`).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

CEILING = 0.95
FLOOR_BAND = (0.05, 0.95)
MIN_TASKS_PER_FAMILY = 3
#: The learners of the candidates command, by track: the agents the floor rule asks for.
CANDIDATE_LEARNERS = {
    "td": "known-rules",
    "jax_ppo": "env-only",
    "jax_ppo_unmasked": "env-only",
    "maskable_ppo": "env-only",
    "dqn": "env-only",
}


@dataclass(frozen=True)
class Measured:
    """One agent on one task: its mean normalized score over seeds and the 95% interval of that mean; ``track``
    (``reference`` for a fixed agent), ``learner`` (whether it trains on the task), ``family`` (``score`` or
    ``success``) and ``regime`` (``small`` or ``large``)."""

    agent: str
    task: str
    track: str
    learner: bool
    family: str
    regime: str
    mean: float
    low: float
    high: float
    seeds: int

    @property
    def inside_band(self) -> bool:
        return FLOOR_BAND[0] <= self.low and self.high <= FLOOR_BAND[1]


def ceiling_breaches(measured: list[Measured]) -> list[Measured]:
    """The measurements of non-optimal agents whose mean is above :data:`CEILING`."""
    return [m for m in measured if m.agent != "optimal" and m.mean > CEILING]


def floor(
    measured: list[Measured], lists: dict[str, set[str]] | None = None
) -> dict[tuple[str, str, str], dict[str, list[str]]]:
    """``{(track, family, regime): {task: [learners whose interval lies inside the band]}}``, for every track that
    has a learner measured in that family and regime, every task of the family measured there (of the track's
    list, where ``lists`` gives each track's tasks)."""
    tasks = defaultdict(set)
    for m in measured:
        tasks[m.family, m.regime].add(m.task)
    out: dict[tuple[str, str, str], dict[str, list[str]]] = {}
    for m in measured:
        if m.learner:
            mine = sorted(t for t in tasks[m.family, m.regime] if lists is None or t in lists[m.track])
            group = out.setdefault((m.track, m.family, m.regime), {t: [] for t in mine})
            if m.inside_band:
                group.setdefault(m.task, []).append(m.agent)
    return out


def floor_failures(measured: list[Measured], lists: dict[str, set[str]] | None = None) -> list[tuple[str, ...]]:
    """``(track, family, regime, task)`` where no learner of the track has its interval inside the band (``lists``:
    as for :func:`floor`)."""
    return [(*group, task) for group, tasks in floor(measured, lists).items() for task, ok in tasks.items() if not ok]


def small_families(tasks: dict[str, str]) -> dict[str, int]:
    """The families of ``{task: family}`` with fewer than :data:`MIN_TASKS_PER_FAMILY` tasks, and their counts."""
    counts: dict[str, int] = defaultdict(int)
    for family in tasks.values():
        counts[family] += 1
    return {f: n for f, n in counts.items() if n < MIN_TASKS_PER_FAMILY}


def from_candidates(rows: list[dict], regime: str = "small") -> list[Measured]:
    """The measurements of a candidates log (``candidates.jsonl`` rows): every agent on every candidate, its seeds
    pooled (td and the env-only learners are learners of their tracks, the other agents fixed references)."""
    from .candidates import candidate, seed_interval

    runs: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for r in rows:
        if r["step"].startswith("agent:"):
            runs[r["task"], r["step"].removeprefix("agent:")].append(r)
    out = []
    for (task, agent), cells in runs.items():
        family = candidate(task).kind
        mean, low, high = seed_interval(cells, family)
        track = CANDIDATE_LEARNERS.get(agent, "reference")
        out.append(Measured(agent, task, track, agent in CANDIDATE_LEARNERS, family, regime, mean, low, high,
                            len(cells)))  # fmt: skip
    return out


def from_registry(entries: dict[str, dict]) -> list[Measured]:
    """The measurements of a registry's entries (``{name: suite.json}``): each entry on each of its tasks, its runs
    pooled (an entry on a learner's track is a learner of that track, in its regime; a fixed agent a reference)."""
    from .aggregate import regime_of_result, task_families, track_of_result
    from .budget import TRACKS
    from .candidates import seed_interval

    out = []
    for name, data in entries.items():
        track, families = track_of_result(data), task_families(data)
        learner = track in TRACKS
        for task in data["tasks"]:
            runs = data["runs"][task]
            mean, low, high = seed_interval(runs, families[task])
            regime = regime_of_result(data) if learner else "any"
            out.append(Measured(name, task, track, learner, families[task], regime, mean, low, high, len(runs)))
    return out


def track_lists(version: int) -> dict[str, set[str]]:
    """``{track: its tasks}`` of suite ``version`` for :func:`floor` (every task for every track where the tracks
    share one list)."""
    from .budget import TRACKS
    from .tasks import tasks_named

    return {track: {t.name for t in tasks_named(None, version, track)} for track in TRACKS}


def report(measured: list[Measured]) -> str:
    """The rules' verdict on ``measured`` as Markdown lines: the ceiling's breaches, and per (track, family,
    regime) each task with the learners that clear the floor."""
    lines = [f"Ceiling (no non-optimal agent above {CEILING}):"]
    breaches = ceiling_breaches(measured)
    lines += [f"- `{m.task}`: {m.agent} {m.mean:.3f}" for m in breaches] or ["- no breach"]
    lines += ["", f"Floor per track (a learner's 95% interval inside [{FLOOR_BAND[0]}, {FLOOR_BAND[1]}]):"]
    for (track, family, regime), tasks in floor(measured).items():
        cleared = [f"`{t}` ({', '.join(ok)})" for t, ok in tasks.items() if ok]
        missed = [f"`{t}`" for t, ok in tasks.items() if not ok]
        lines.append(
            f"- {track}, {family}, {regime}: cleared on {', '.join(cleared) or 'no task'}; "
            f"not on {', '.join(missed) or 'none'}"
        )
    return "\n".join(lines) + "\n"
