"""The suite's tuning protocol (experiments.suite.tuning): Optuna trials of a trainer on a task, each trained for the
same counted steps on tuning seeds and scored as the suite scores; resumable; the chosen file a trainer can use."""

from __future__ import annotations

import json
import shutil

import pytest
from stand_ins import learner_runs

from experiments.suite.tuning import SEARCH_SPACES, TUNING_SEED, load_search_space, trial_score, tune

pytestmark = pytest.mark.slow  # trains and scores a DQN per trial

TRAINER = "experiments.suite.trainers:dqn"


def test_a_tuning_runs_writes_its_log_and_file_and_resumes(tmp_path):
    import optuna

    from experiments.suite.trainers import DQN_KEYS, load_hyperparams

    out = tmp_path / "tune"
    first = tune(TRAINER, "2x3", trials=2, steps=2000, out=out, progress=False, family=True, baseline=True)
    rows = [json.loads(line) for line in (out / "trials.jsonl").read_text().splitlines()]
    assert [r["state"] for r in rows] == ["COMPLETE", "COMPLETE"] and all(0 < r["value"] < 1 for r in rows)
    from experiments.suite.provenance import git_commit

    assert [r["commit"] for r in rows] == [git_commit()] * 2
    assert first["best"]["value"] == max(r["value"] for r in rows)
    # the log alone (no study.db) resumes the tuning as the study would: the same third trial
    kept, log_only = tmp_path / "kept", tmp_path / "log-only"
    shutil.copytree(out, kept)
    shutil.copytree(out, log_only)
    (log_only / "study.db").unlink()
    for directory in (kept, log_only):
        tune(TRAINER, "2x3", trials=3, steps=2000, out=directory, progress=False, family=True, baseline=True)
    replayed = [json.loads(line) for line in (log_only / "trials.jsonl").read_text().splitlines()]
    from experiments.suite.runner import without_timings

    in_study = [json.loads(line) for line in (kept / "trials.jsonl").read_text().splitlines()]
    assert without_timings(replayed) == without_timings(in_study)
    assert replayed[:2] == rows and replayed[2]["state"] == "COMPLETE" and replayed[2]["params"] != rows[1]["params"]
    # an interruption leaves a trial running: the resumed tuning marks it failed and finishes the trials asked for
    study = optuna.load_study(study_name="tune", storage=f"sqlite:///{out / 'study.db'}")
    study.ask()
    result = tune(TRAINER, "2x3", trials=3, steps=2000, out=out, progress=False, family=True, baseline=True)
    rows = [json.loads(line) for line in (out / "trials.jsonl").read_text().splitlines()]
    assert [r["state"] for r in rows] == ["COMPLETE", "COMPLETE", "FAIL", "COMPLETE"]
    # replayed, a log with a failed trial is the study's log again, and the tuning's choice the same
    shutil.copytree(out, tmp_path / "replayed")
    (tmp_path / "replayed" / "study.db").unlink()
    again = tune(TRAINER, "2x3", trials=3, steps=2000, out=tmp_path / "replayed", progress=False, family=True)
    assert (tmp_path / "replayed" / "trials.jsonl").read_text() == (out / "trials.jsonl").read_text()
    assert again["best"] == result["best"]
    # a log written while its last trial ran: replayed, that trial was cut short (failed), the next one drawn anew
    (log_only / "study.db").unlink()
    cut = [*replayed[:2], {**replayed[2], "state": "RUNNING", "value": None}]
    (log_only / "trials.jsonl").write_text("".join(json.dumps(r) + "\n" for r in cut))
    tune(TRAINER, "2x3", trials=3, steps=2000, out=log_only, progress=False, family=True, baseline=True)
    resumed = [json.loads(line) for line in (log_only / "trials.jsonl").read_text().splitlines()]
    assert [r["state"] for r in resumed] == ["COMPLETE", "COMPLETE", "FAIL", "COMPLETE"]
    assert resumed[2]["params"] == replayed[2]["params"] and without_timings(resumed[3]) == without_timings(rows[3])
    assert result["baseline"] == first["baseline"]  # scored once, kept in baseline.json
    space = load_search_space("dqn")
    assert set(rows[3]["params"]) == set(space)
    assert rows[3]["params"] not in [r["params"] for r in rows[:3]]  # the resumed sampler draws new values
    # the chosen file: the task's file with the best trial's values, every key set
    import tomllib

    chosen = (out / "2x3.toml").read_text()
    assert (
        f"trial {result['best']['number']}, the best of 3 complete trials" in chosen
        and "2,000 steps on 1 tuning seed" in chosen
    )

    values = tomllib.loads(chosen)
    assert set(values) == set(DQN_KEYS) == set(load_hyperparams("dqn", "2x3"))
    assert all(values[k] == v for k, v in result["best"]["params"].items())
    assert (out / "search-space.toml").read_text() == (SEARCH_SPACES / "dqn.toml").read_text()
    # --family: every score game gets its own file with the chosen values, its other settings its own
    assert sorted(result["files"]) == sorted(str(out / f"{t}.toml") for t in ("2x3", "2x4", "3x3", "4x3"))
    for task in ("2x4", "3x3", "4x3"):
        text = (out / f"{task}.toml").read_text()
        assert f"dqn on task {task}: chosen by `python -m experiments.suite tune` on task 2x3 for its family" in text
        other = tomllib.loads(text)
        own = load_hyperparams("dqn", task)
        assert other == {**own, **result["best"]["params"]} and set(other) == set(own)
    with pytest.raises(ValueError, match="holds a tuning with other steps"):
        tune(TRAINER, "2x3", trials=3, steps=4000, out=out, progress=False, family=True)
    with pytest.raises(ValueError, match="holds a tuning with other applies_to"):
        tune(TRAINER, "2x3", trials=3, steps=2000, out=out, progress=False)
    # the objective is the score of a policy trained on the tuning seed, not on an evaluation seed: it repeats
    from experiments.suite import get_task
    from experiments.suite.trainers import dqn

    best = result["best"]
    assert trial_score(dqn, get_task("2x3"), 2000, [TUNING_SEED], best["params"]) == best["value"]
    # --baseline: the task's own file under the same protocol, apart from the study's trials
    own = first["baseline"]
    assert own["value"] == trial_score(dqn, get_task("2x3"), 2000, [TUNING_SEED], {}) and own["seconds"] > 0
    assert own == json.loads((out / "baseline.json").read_text()) and own["commit"] == git_commit()
    # run --hyperparams trains with the chosen file: the score of that file's settings, its digest in the run file
    from experiments.suite.runner import SuiteRunError, run_suite
    from experiments.suite.tuning import file_digest

    runs = tmp_path / "runs"
    suite = run_suite(runs, 1, trainer=TRAINER, tasks="2x3", budget_scale=0.002, progress=False, hyperparams=out)
    cell = suite["runs"]["2x3"][0]
    assert cell["hyperparams"] == file_digest(out / "2x3.toml") and cell["counted_steps"] <= 2000
    assert cell["normalized"] == trial_score(dqn, get_task("2x3"), 2000, [0], values)
    with pytest.raises(SuiteRunError, match="trained with other hyperparameter files"):
        run_suite(runs, 1, trainer=TRAINER, tasks="2x3", budget_scale=0.002, progress=False)
    with pytest.raises(FileNotFoundError, match="no file for task"):
        run_suite(tmp_path / "r2", 1, trainer=TRAINER, tasks="2x3,L3-128", progress=False, hyperparams=out)
    with pytest.raises(ValueError, match="task 2x3 has a file in two directories"):
        run_suite(tmp_path / "r3", 1, trainer=TRAINER, tasks="2x3", progress=False, hyperparams=f"{out},{out}")


def test_td_is_tuned_under_the_same_protocol(tmp_path):
    """TD's schedule and start value come from its search space; its chosen file is complete, and the trainer
    trains from it as from the task's own file."""
    import tomllib

    from experiments.suite import SUITE_V1, SUITE_V2, SUITE_V3, get_task
    from experiments.suite.trainers import TD_KEYS, load_hyperparams, td

    for t in SUITE_V1 + SUITE_V2 + tuple(t for t in SUITE_V3 if t.for_track("known-rules")):
        assert set(load_hyperparams("td", t.name, TD_KEYS)) == set(TD_KEYS)
    result = tune("experiments.suite.trainers:td", "2x3", trials=2, steps=2000, out=tmp_path / "td", progress=False)
    chosen = tomllib.loads((tmp_path / "td" / "2x3.toml").read_text())
    assert set(chosen) == set(TD_KEYS) and chosen["schedule"] == result["best"]["params"]["schedule"]
    assert trial_score(td, get_task("2x3"), 2000, [TUNING_SEED], chosen) == result["best"]["value"]


def test_the_registry_keeps_a_learner_s_tunings_and_states_their_cost(tmp_path):
    """A registry entry of a tuned learner keeps each tuning's log, space and chosen file beside it, and its
    table states the tuning's environment steps (complete trials x steps x seeds) and time."""
    from experiments.suite import SUITE_VERSION, registry, suite_tasks
    from experiments.suite.tuning import file_digest

    out = tmp_path / "tune"
    tune(TRAINER, "2x3", trials=2, steps=1000, out=out, progress=False, family=True, baseline=True)
    tasks = [t for t in suite_tasks() if t.for_track("env-only")]
    names = [t.name for t in tasks]
    score_games = [t.name for t in tasks if t.kind == "score"]
    results = tmp_path / "results"
    results.mkdir()
    suite = {
        "suite_version": SUITE_VERSION,
        "tasks": names,
        "trainer": TRAINER,
        "track": "env-only",
        "seeds": 5,
        "normalized": [[0.5] * len(names)] * 5,
        "method": dict.fromkeys(names, "exact"),
        "family": {t.name: t.kind for t in tasks},
        "runs": learner_runs(names, seconds=1.0, train_seconds=2.0),
        "provenance": {"commit": "0123456789abcdef"},
    }
    (results / "suite.json").write_text(json.dumps({**suite, "trainer": "experiments.suite.trainers:maskable_ppo"}))
    with pytest.raises(ValueError, match="tuned 'experiments.suite.trainers:dqn', not the run's trainer 'exp"):
        registry.add(results, "ppo", registry=tmp_path / "reg", tuning=[out])
    (results / "suite.json").write_text(json.dumps(suite))
    with pytest.raises(ValueError, match="the runs of task 2x3 did not train with .*: run them with --hyperparams"):
        registry.add(results, "dqn", registry=tmp_path / "reg", tuning=[out])
    for task in score_games:
        for run in suite["runs"][task]:
            run["hyperparams"] = file_digest(out / f"{task}.toml")
    (results / "suite.json").write_text(json.dumps(suite))
    with pytest.raises(ValueError, match="two tunings chose files for task"):
        registry.add(results, "dqn", registry=tmp_path / "reg", tuning=[out, out])
    entry = json.loads(registry.add(results, "dqn", registry=tmp_path / "reg", tuning=[out]).read_text())
    rows = [json.loads(line) for line in (out / "trials.jsonl").read_text().splitlines()]
    summary = entry["tuning"]["2x3"]
    assert summary["trials"] == 2 and summary["env_steps"] == 2 * 1000 * 1 and summary["tasks"] == score_games
    assert summary["seconds"] == pytest.approx(sum(r["seconds"] for r in rows))
    best = max(rows, key=lambda r: r["value"])
    assert summary["best_trial"] == best["number"] and summary["best_value"] == best["value"]
    own = json.loads((out / "baseline.json").read_text())
    assert (summary["baseline"], summary["baseline_seconds"]) == (own["value"], own["seconds"])
    kept = tmp_path / "reg" / "tuning" / "dqn" / "2x3"
    files = ["2x3.toml", "2x4.toml", "3x3.toml", "4x3.toml", "baseline.json", "search-space.toml", "trials.jsonl"]
    files += ["tune.json"]
    assert sorted(p.name for p in kept.iterdir()) == files
    table = registry.tables(registry.load(tmp_path / "reg"), reps=20)
    assert "| dqn | env-only | 5 | 70 s | 35 s | 0.002 M steps, " in table  # 35 runs x 2 s, 35 runs x 1 s
    # the shaped learner trains with the unshaped one's tuned files, so the registry takes that tuning for it
    (results / "suite.json").write_text(json.dumps({**suite, "trainer": "experiments.suite.trainers:dqn_shaped"}))
    shaped = json.loads(registry.add(results, "dqn-shaped", registry=tmp_path / "reg", tuning=[out]).read_text())
    assert shaped["tuning"]["2x3"]["trainer"] == TRAINER
    # the tunings' table: one row for the tuning both entries train with, its objective beside the own files'
    rows = registry.tuning_table(registry.load(tmp_path / "reg"))
    assert len(rows) == 4 and rows[3].startswith("| dqn | dqn") and "dqn-shaped" in rows[3]
    assert rows[3].endswith(
        f"| 2x3 (2x3, 2x4, 3x3, 4x3) | 2 × 0.001 M × 1 | {summary['seconds']:.0f} s | {best['number']} | "
        f"{registry._fmt(best['value'])} | {registry._fmt(own['value'])} |"
    )
    # the registry's compute in all: both entries' runs, their one shared tuning once
    hours = f"{summary['seconds'] / 3600:.1f}"
    expected = f"In all, {2 * 70 / 3600:.1f} h of training, {2 * 35 / 3600:.1f} h of scoring and {hours} h of tuning"
    assert registry.cost_line(registry.load(tmp_path / "reg")).startswith(expected)
