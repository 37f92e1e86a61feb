"""The suite's task-list rules (experiments.suite.rules): ceiling, floor per track, family size, on synthetic
measurements and on the committed candidates log."""

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
