"""The registry's audit: what a result must show before it is a reference result (docs/suite.md, "What a trainer may
touch").  ``registry --add`` refuses a result that fails it and ``registry --check`` fails on any entry that does.

A learner's result (track ``env-only`` or ``known-rules``) must come from ``run --trainer`` under the current
suite version: every run counted between 1 and its task's budget of steps on the trainer's declared track, at
least :data:`MIN_SEEDS` seeds on every task, each task on the track's list, the budgets of the result's regime,
and no run whose trainer returned a spec string or a fixed reference agent.  A fixed agent's result (track
``reference``) must be of the current suite version.
"""

from __future__ import annotations

from .budget import REFERENCE_TRACK, TRACKS
from .tasks import REGIMES, SUITES, get_task, suite_tasks

#: Seeds a learner's result needs on every task.
MIN_SEEDS = 5


def reference_policy_types() -> dict[str, str]:
    """``{"module.Class": what}`` of what a trainer may not return: a spec string, or a fixed reference agent
    (an expectimax search on its heuristic is refused when the trainer returns it; its type alone, which a
    learned network played by search shares, does not tell)."""
    from .training import reference_agent_types

    types = {f"{c.__module__}.{c.__qualname__}": f"the reference agent {c.__name__}" for c in reference_agent_types()}
    return {"builtins.str": "a spec string", **types}


def declared_track(trainer: str) -> str | None:
    """The track that trainer ``module:function`` declares, or None if it cannot be loaded here."""
    from .policies import load_trainer
    from .training import track_of

    try:
        return track_of(load_trainer(trainer))
    except ValueError:
        return None


def audit(data: dict, version: int) -> list[str]:
    """What is wrong with a suite.json ``data`` as a reference result of suite ``version``: one line per
    problem, none if it passes."""
    if version not in SUITES:
        raise ValueError(f"suite version {version} does not exist: the versions are {', '.join(map(str, SUITES))}")
    problems = []
    if data.get("suite_version") != version:
        problems.append(f"it is a result of suite v{data.get('suite_version')}, not v{version}")
    track = data.get("track")
    if track not in (*TRACKS, REFERENCE_TRACK):
        problems.append(f"its track {track!r} is none of {', '.join((*TRACKS, REFERENCE_TRACK))}")
    runs = data.get("runs", {})
    cells = [(task, cell) for task, rows in runs.items() for cell in rows]
    stale = sorted({task for task, cell in cells if cell.get("suite_version", version) != version})
    if stale:
        problems.append(f"runs of task(s) {', '.join(stale)} are of another suite version than v{version}")
    if track not in TRACKS:
        return problems
    trainer = data.get("trainer")
    if not trainer:
        return [
            *problems,
            f"it scores the agent {data.get('agent')!r} on the {track} track: its training was not counted by the "
            "runner; the registry takes learners trained by `run --trainer`",
        ]
    declared = declared_track(trainer)
    if declared is None:
        problems.append(f"its trainer {trainer!r} cannot be loaded here, so its declared track cannot be checked")
    elif declared != track:
        problems.append(f"its trainer {trainer!r} declares the {declared} track, not {track}")
    few = {task: len(rows) for task, rows in runs.items() if len(rows) < MIN_SEEDS}
    if data.get("seeds", 0) < MIN_SEEDS or few:
        where = ", ".join(f"{task}: {n}" for task, n in few.items()) or f"{data.get('seeds')} in all"
        problems.append(f"a learner needs at least {MIN_SEEDS} seeds on every task ({where})")
    regime = data.get("regime", "small")
    if regime not in REGIMES:
        problems.append(f"its regime {regime!r} is none of {', '.join(REGIMES)}")
        regime = "small"
    budgets = {t.name: t.budget_steps * REGIMES[regime] for t in suite_tasks(version)}
    off = sorted(t for t in runs if t in budgets and not get_task(t, version).for_track(track))
    if off:
        problems.append(f"task(s) {', '.join(off)} are not on the {track} track's list of suite v{version}")
    refused = reference_policy_types()
    for task, cell in cells:
        where = f"task {task}, seed {cell.get('seed')}"
        counted, budget = cell.get("counted_steps"), cell.get("budget_steps")
        if budgets.get(task) is not None and budget != budgets[task]:
            problems.append(
                f"{where}: its budget_steps {budget} is not the task's budget {budgets[task]:,} in the {regime} regime"
            )
        if not counted:
            problems.append(f"{where}: counted_steps is {counted!r}: the trainer took no counted step")
        elif budget is not None and counted > budget:
            problems.append(f"{where}: counted_steps {counted:,} is above its budget of {budget:,}")
        if cell.get("track", track) != track:
            problems.append(f"{where}: trained on the {cell['track']} track, not {track}")
        if cell.get("policy_type") in refused:
            problems.append(f"{where}: the trainer returned {refused[cell['policy_type']]}, not a policy it learned")
    return problems
