"""The suite's task-list rules (experiments.suite.rules): ceiling, floor per track, family size and cost of entry,
on synthetic measurements, on the committed candidates log and on suite v3's registry."""

from __future__ import annotations

import json
from pathlib import Path

from experiments.suite import rules
from experiments.suite.rules import Measured

LOG = Path(__file__).resolve().parents[1] / "docs" / "reference" / "candidates" / "candidates.jsonl"


def measured(agent, task, mean, low=None, high=None, track="env-only", learner=True, family="success"):
    low = mean if low is None else low
    high = mean if high is None else high
    return Measured(agent, task, track, learner, family, "small", mean, low, high, 5)


def test_the_ceiling_flags_non_optimal_agents_above_it():
    ms = [measured("td", "a", 0.96), measured("optimal", "a", 1.0), measured("ppo", "b", 0.95)]
    assert [(m.agent, m.task) for m in rules.ceiling_breaches(ms)] == [("td", "a")]


def test_the_floor_asks_each_track_for_a_learner_inside_the_band_on_every_task():
    ms = [
        measured("ppo", "a", 0.30, 0.20, 0.40),
        measured("ppo", "b", 0.06, 0.04, 0.08),  # its interval leaves the band: not cleared
        measured("dqn", "b", 0.10, 0.07, 0.13),  # another learner of the track clears it
        measured("ppo", "c", 1e-6),
        measured("td", "c", 0.70, track="known-rules"),
        measured("expectimax", "a", 0.5, track="reference", learner=False),
        measured("ppo", "s", 0.4, family="score"),
    ]
    got = rules.floor(ms)
    assert got["env-only", "success", "small"] == {"a": ["ppo"], "b": ["dqn"], "c": []}
    assert got["known-rules", "success", "small"] == {"a": [], "b": [], "c": ["td"]}
    assert ("reference", "success", "small") not in got  # fixed agents are not asked to clear it
    assert got["env-only", "score", "small"] == {"s": ["ppo"]}
    assert rules.floor_failures(ms) == [
        ("env-only", "success", "small", "c"),
        ("known-rules", "success", "small", "a"),
        ("known-rules", "success", "small", "b"),
    ]
    assert rules.small_families({"a": "success", "b": "success", "c": "success", "s": "score"}) == {"score": 1}


def test_the_rules_read_the_candidates_log():
    """Every measurement of the log enters, each agent's seeds pooled into one interval; what the rules say is
    what the log's own numbers say."""
    rows = [json.loads(line) for line in LOG.read_text().splitlines()]
    ms = rules.from_candidates(rows)
    scored = [r for r in rows if r["step"].startswith("agent:")]
    assert len(ms) == len({(r["task"], r["step"]) for r in scored})
    by = {(m.task, m.agent): m for m in ms}
    for r in scored:
        m = by[r["task"], r["step"].removeprefix("agent:")]
        if m.seeds == 1:
            assert m.mean == r["normalized"] and m.low <= m.mean <= m.high
            assert (m.low == m.high) == (r["method"] == "exact")
    above = {(r["task"], r["step"]) for r in scored if r["normalized"] > rules.CEILING}
    assert {(m.task, f"agent:{m.agent}") for m in rules.ceiling_breaches(ms)} == above
    text = rules.report(ms)
    assert text.startswith("Ceiling") and "known-rules, success, small: cleared on" in text


# --- the rules on suite v3's registry (docs/reference/suite-v3/), as its entries stand ---------------------------

V3 = 3


def v3_entries() -> dict[str, dict]:
    from experiments.suite.registry import load, registry_dir

    entries = load(registry_dir(V3))
    assert entries, "suite v3's registry holds no result"
    return entries


def test_no_non_optimal_entry_of_the_v3_registry_is_above_the_ceiling():
    measured = rules.from_registry(v3_entries())
    assert any(m.agent != "optimal" for m in measured)
    assert rules.ceiling_breaches(measured) == []


def test_every_v3_task_gives_each_registered_track_a_learner_inside_the_band():
    """Per (track, family, regime) with a learner in the registry, every task of the track's list in that family
    has a learner of the track whose interval lies inside [0.05, 0.95]."""
    from experiments.suite.tasks import suite_tasks

    measured = rules.from_registry(v3_entries())
    lists = rules.track_lists(V3)
    groups = rules.floor(measured, lists)
    assert groups, "no learner in suite v3's registry"
    for (track, family, _regime), tasks in groups.items():
        assert set(tasks) == {t.name for t in suite_tasks(V3) if t.for_track(track) and t.kind == family}
    assert rules.floor_failures(measured, lists) == []


def test_each_v3_track_has_at_least_three_tasks_per_family():
    from experiments.suite.tasks import suite_tasks

    for track, names in rules.track_lists(V3).items():
        families = {t.name: t.kind for t in suite_tasks(V3) if t.name in names}
        assert set(families.values()) == {"score", "success"} and rules.small_families(families) == {}, track


def test_the_v3_tables_were_built_within_the_cost_of_entry():
    """The record of `tables --verify --record` on a fresh clone: every table of v3 built there (none found
    already), each as pinned, within 15 minutes and 5 GB of disk."""
    from experiments.suite.entry_cost import MAX_BYTES, MAX_SECONDS
    from experiments.suite.task_table import record_path
    from experiments.suite.tasks import suite_tasks

    record = json.loads(record_path(V3).read_text())
    tabled = {t.name for t in suite_tasks(V3) if t.has_table}
    assert set(record["tasks"]) == tabled
    assert all(row["built"] and row["as_pinned"] for row in record["tasks"].values())
    assert record["seconds"] <= MAX_SECONDS and record["bytes"] <= MAX_BYTES
    assert record["bytes"] == sum(row["bytes"] for row in record["tasks"].values())


def test_the_fixed_agents_of_the_v3_registry_play_each_monte_carlo_cell_from_five_secret_starts():
    """A fixed agent's Monte-Carlo cells are five runs from five evaluation seeds; its exact cells one value."""
    fixed = {n: d for n, d in v3_entries().items() if d["track"] == "reference"}
    assert fixed
    for name, data in fixed.items():
        assert data["seeds"] == 5, name
        for task, runs in data["runs"].items():
            if runs[0]["method"] == "exact":
                assert len({r["normalized"] for r in runs}) == 1, (name, task)
            else:
                assert len({r["evaluation_seed"] for r in runs}) == 5, (name, task)
