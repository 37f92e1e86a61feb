"""The suite (experiments.suite, docs/suite.md): v2's rules on its task set, the frozen tasks' pins, versioned env
ids, a whole run on a small task (files, provenance, resume, determinism), v1 results kept apart, the aggregates
against hand computations, and the bad inputs.  Only the small tables are built here (2x3 and 2x4 in seconds,
3x3-512 in ~8 s; the 3x3 score table is the session's); the others are checked by `python -m experiments.suite
tables --verify`."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from stand_ins import FirstLegalMove, learner_runs

import env2048  # noqa: F401
from experiments.suite import SUITE_V1, SUITE_V2, SUITE_V3, SUITE_VERSION, TaskError, get_task, suite_tasks
from experiments.suite.__main__ import main as suite_main
from experiments.suite.runner import SuiteRunError, _check_directory, run_suite, without_timings
from experiments.suite.scoring import wilson_interval
from experiments.suite.tasks import (
    KANEKO_YAMASHITA_4X3,
    ensure_table,
    matches_pinned_value,
    table_digest,
    task_lists,
    tasks_named,
)
from oracle import Oracle


@pytest.mark.parametrize("version, tasks", [(1, SUITE_V1), (2, SUITE_V2)])
def test_each_task_set_is_frozen_with_versioned_ids_budgets_and_pins(version, tasks):
    assert len(tasks) >= 7 and len({t.name for t in tasks}) == len(tasks)
    for t in tasks:
        assert t.version == version and t.env_id.endswith(f"-v{version}") and t.env_id in gym.registry, t.env_id
        assert t.budget_steps > 0 and 0 < t.optimal_value and len(t.table_digest) == 64
        assert get_task(t.name, version) is t
    assert {t.kind for t in tasks} == {"score", "success"}


def test_the_v2_task_set_keeps_its_rules():
    """docs/suite.md's rules for the v2 set: two families of at least three tasks each, endgames of different
    patterns and not one target throughout, and the saturated 4x3-128 gone."""
    families = {kind: [t for t in SUITE_V2 if t.kind == kind] for kind in ("score", "success")}
    assert all(len(members) >= 3 for members in families.values())
    endgames = [t for t in SUITE_V2 if t.pattern is not None]
    assert len({t.pattern for t in endgames}) == len(endgames) >= 3
    assert len({t.target for t in endgames}) >= 2
    assert "4x3-128" not in {t.name for t in SUITE_V2}


def test_the_v3_task_set_has_a_list_per_track_and_the_whole_4x3_game():
    """Suite v3: every task on v2's rules (v2's ids, or new ids of the same rules), each track's list of at least
    three tasks per family, the success tasks split between the tracks, every table pinned but the 4x3 game's,
    whose V* is Kaneko & Yamashita's published optimum from two 2-tiles."""
    lists = task_lists(3)
    assert set(lists) == {"env-only", "known-rules"}
    for track, tasks in lists.items():
        for kind in ("score", "success"):
            assert len([t for t in tasks if t.kind == kind]) >= 3, (track, kind)
    success = {track: {t.name for t in tasks if t.kind == "success"} for track, tasks in lists.items()}
    assert not success["env-only"] & success["known-rules"]
    for t in SUITE_V3:
        assert (
            t.version == 3 and t.env_id.endswith("-v2") and t.env_id in gym.registry and t.invalid_action == "terminate"
        )
        assert get_task(t.name, 3) is t and t.budget_steps > 0
        assert (len(t.table_digest) == 64) == t.has_table, t.name
    whole = get_task("4x3", 3)
    assert not whole.has_table and whole.optimal_value == KANEKO_YAMASHITA_4X3 and whole.env_kwargs == {"start_p4": 0.0}
    board, _ = gym.make(whole.env_id).reset(seed=0)
    assert sorted(board.ravel().tolist()) == [0] * 10 + [1, 1]  # two 2-tiles
    with pytest.raises(TaskError, match="not on the known-rules track's list"):
        tasks_named("L3-128", 3, track="known-rules")
    assert [t.name for t in tasks_named(None, 3, track="reference")] == [t.name for t in SUITE_V3]


def test_the_learner_s_env_of_every_v2_task_holds_no_oracle():
    """As made by its id and as a trainer gets it: no Q-values, optimal moves or regret in ``info``."""
    from experiments.suite.budget import StepBudget
    from experiments.suite.training import TrainingRun

    oracle_keys = {"q_values", "optimal_actions", "regret"}
    for t in SUITE_V2 + SUITE_V3:
        for env in (gym.make(t.env_id), TrainingRun(t, StepBudget(10, "env-only")).make_env()):
            _, info = env.reset(seed=0)
            assert not oracle_keys & set(info), t.name
            _, _, _, _, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
            assert not oracle_keys & set(info), t.name
            assert env.unwrapped.invalid_action == "terminate"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["2x3", "2x4", "3x3", "3x3-512"])
def test_small_tasks_tables_match_their_pins(name):
    """V* and the digest of the task's table as pinned in SUITE_V2 (the 3x3 score table is the session's cached
    file: a table's dataset checksums do not depend on its layout)."""
    task = get_task(name)
    path = Oracle.for_board("3x3", progress=False).path if name == "3x3" else ensure_table(task, progress=False)
    assert table_digest(path) == task.table_digest
    with Oracle.open(path) as oracle:
        assert matches_pinned_value(oracle.start_value, task.optimal_value), (oracle.start_value, task.optimal_value)
    if name != "3x3":  # the task's own oracle: the same table, checked against its pin
        with task.oracle(progress=False) as oracle:
            assert oracle.path == path and matches_pinned_value(oracle.start_value, task.optimal_value)


@pytest.mark.slow
def test_versioned_ids_and_the_unversioned_aliases():
    """An id without its version means the latest one, and a user sees no notice for it (a fresh process with
    every warning an error)."""
    code = "import gymnasium as gym, env2048\nprint(gym.make('Solved2048-2x4', oracle=False).spec.id)"
    run = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.split() == ["Solved2048-2x4-v2"], run.stderr[-2000:]
    assert gym.make("Solved2048-2x3-v1", oracle=False).reset(seed=0)[0].shape == (2, 3)
    env = gym.make("Solved2048-3x3-512-v2", oracle=True)
    obs, info = env.reset(seed=3)
    assert info["q_values"].shape == (4,) and np.nanmax(info["q_values"]) <= 1.0
    rewards, done = [], False
    while not done:
        obs, reward, terminated, truncated, info = env.step(int(np.nanargmax(info["q_values"])))
        rewards.append(reward)
        done = terminated or truncated
    made = info["max_tile"] >= 512
    assert rewards[-1] == float(made) and sum(rewards) == float(made)


def test_wilson_interval_against_hand_computation():
    z2 = 1.959963984540054**2
    assert wilson_interval(0, 10) == (0.0, pytest.approx(z2 / (10 + z2)))
    low, high = wilson_interval(5, 10)
    assert low == pytest.approx(0.5 - math.sqrt(z2 * 0.25 / 10 + z2 * z2 / 400) / (1 + z2 / 10))
    assert high == pytest.approx(1 - low)


def test_a_trainer_that_returns_a_spec_or_a_reference_agent_is_refused(tmp_path):
    """A trainer must return what it learned: ``"optimal"`` (scored 1.0 after no step, had it been accepted), any
    spec string, or a fixed reference agent is refused with a message that says what to return; the same agents
    still run as ``--agent``; an expectimax agent searching over a learned network is accepted."""
    from agents import GreedyAgent, OptimalAgent, RandomAgent
    from agents.expectimax import ExpectimaxAgent
    from agents.ntuple import NTupleAgent

    def returning(value):
        def train(run, budget_steps, seed):
            return value(run) if callable(value) else value

        return train

    opened = Oracle.open(ensure_table(get_task("2x3"), progress=False))  # before the training: its tables are sealed
    cases = [
        "optimal",
        "expectimax:2",
        lambda run: OptimalAgent(opened),
        lambda run: GreedyAgent(),
        lambda run: RandomAgent(),
        lambda run: ExpectimaxAgent(2, 3, depth=2),
    ]
    refused = "NotLearned: the trainer returned the (spec string|fixed reference agent) "
    for i, case in enumerate(cases):
        with pytest.raises(SuiteRunError, match=refused):
            run_suite(tmp_path / f"r{i}", 1, trainer=returning(case), tasks="2x3", progress=False)
        assert not (tmp_path / f"r{i}" / "runs" / "2x3" / "seed-0.json").exists()
    opened.close()
    learned = ExpectimaxAgent(2, 3, depth=1, evaluator=NTupleAgent(2, 3, seed=0))
    kept = run_suite(tmp_path / "learned", 1, trainer=returning(learned), tasks="2x3", progress=False)
    assert 0 < kept["normalized"][0][0] < 1
    optimal = run_suite(tmp_path / "agent", 1, agent="optimal", tasks="2x3", progress=False)
    assert optimal["normalized"][0][0] == pytest.approx(1.0, abs=1e-6)


@settings(max_examples=200)
@given(
    st.integers(1, 7),
    st.integers(1, 9),
    st.lists(st.sampled_from([0.0, 1e-30, 0.1, 0.3, 1 / 3, 0.5, 0.75, 1.0, 2.0]), min_size=63, max_size=63),
    st.integers(0, 2**32 - 1),
)
def test_the_suites_iqm_is_rliables_float_for_float(runs, tasks, values, seed):
    """The IQM the suite computes without scipy's wrapper equals rliable's ``aggregate_iqm`` exactly: drawn scores
    with ties and tiny values, and random ones."""
    from rliable import metrics

    from experiments.suite.aggregate import iqm

    drawn = np.array(values[: runs * tasks]).reshape(runs, tasks)
    noise = np.random.default_rng(seed).random((runs, tasks))
    for scores in (drawn, noise, drawn * noise):
        assert iqm(scores) == metrics.aggregate_iqm(scores)
    assert math.isnan(iqm(np.array([[0.5, np.nan]]))) and math.isnan(metrics.aggregate_iqm(np.array([[0.5, np.nan]])))


def test_aggregates_against_hand_computation():
    from experiments.suite.aggregate import point_estimates, probability_of_improvement

    scores = np.array([[0.0, 0.1], [0.2, 0.3], [0.4, 0.9], [1.0, 1.0]])  # 4 runs x 2 tasks
    iqm, mean, median, gap = point_estimates(scores)
    assert iqm == pytest.approx((0.2 + 0.3 + 0.4 + 0.9) / 4)  # the middle half of the 8 sorted scores
    assert mean == pytest.approx(3.9 / 8)
    assert median == pytest.approx((0.4 + 0.575) / 2)  # median over tasks of the per-task means
    assert gap == pytest.approx(1 - 3.9 / 8)
    other = np.array([[0.1, 0.0], [0.1, 0.0], [0.5, 0.95], [0.5, 0.95]])
    # P(X > Y) per task over all 16 pairs of runs (ties would count 1/2): task 0 8/16, task 1 10/16
    point, (low, high) = probability_of_improvement(scores, other, reps=200)
    assert point == pytest.approx((8 / 16 + 10 / 16) / 2) and low <= point <= high


@pytest.mark.slow
def test_a_run_writes_the_matrix_resumes_and_repeats(tmp_path, capsys):
    out = tmp_path / "greedy"
    assert suite_main(["run", "--agent", "greedy", "--seeds", "2", "--tasks", "2x4", "--out", str(out), "--quiet"]) == 0
    data = json.loads((out / "suite.json").read_text())
    assert data["tasks"] == ["2x4"] and data["seeds"] == 2 and np.shape(data["normalized"]) == (2, 1)
    cell = data["runs"]["2x4"][0]
    assert cell["method"] == "exact" and cell["normalized"] == pytest.approx(
        cell["value"] / get_task("2x4").optimal_value
    )
    assert 0 < cell["normalized"] < 1
    # a fixed agent's exact value is every seed's: seed 1 repeats seed 0's, marked, rather than computing it again
    second = data["runs"]["2x4"][1]
    assert second["same_as_seed"] == 0 and second["seed"] == 1 and second["normalized"] == cell["normalized"]
    assert "same_as_seed" not in cell and second["seconds"] == 0.0
    prov = data["provenance"]
    assert (
        prov["suite_version"] == SUITE_VERSION
        and prov["packages"]["numpy"]
        and prov["command"][:3] == ["python", "-m", "experiments.suite"]
    )
    assert data["tables"]["2x4"] == get_task("2x4").table_digest
    # resume: a lost run is redone, the others are kept as they are
    kept = (out / "runs" / "2x4" / "seed-0.json").read_text()
    (out / "runs" / "2x4" / "seed-1.json").unlink()
    run_suite(out, 2, agent="greedy", tasks="2x4", progress=False)
    assert (out / "runs" / "2x4" / "seed-0.json").read_text() == kept
    again = run_suite(tmp_path / "again", 2, agent="greedy", tasks="2x4", progress=False)
    assert without_timings(again) == without_timings(json.loads((out / "suite.json").read_text()))


def test_a_v1_results_directory_is_refused_by_a_v2_run_and_opens_in_compare_as_v1(tmp_path):
    """The v1 registry's greedy run as a results directory: a v2 run refuses to add to it (before building or
    scoring anything), and compare reads it as the v1 result it is, with v1's tasks and families."""
    from pathlib import Path

    from experiments.suite.aggregate import compare

    v1 = tmp_path / "greedy-v1"
    v1.mkdir()
    registry = Path(__file__).resolve().parents[1] / "docs" / "reference" / "suite-v1"
    (v1 / "suite.json").write_text((registry / "greedy.json").read_text())
    meta = {"suite_version": 1, "agent": "greedy", "trainer": None, "track": "reference"}
    (v1 / "run.json").write_text(json.dumps(meta))
    with pytest.raises(SuiteRunError, match=f"holds results of suite v1, not v{SUITE_VERSION}"):
        run_suite(v1, 1, agent="greedy", tasks="2x4", progress=False)
    assert not (v1 / "runs").exists()
    result = compare([v1], tmp_path / "compare", reps=50)
    assert result["suite_version"] == 1 and result["tasks"] == [t.name for t in SUITE_V1]
    assert result["family"]["4x3-128"] == "success"
    assert (tmp_path / "compare" / "compare.md").read_text().startswith("Suite v1, 7 tasks")


@pytest.mark.slow
def test_bad_input_gets_clear_errors_and_loses_nothing(tmp_path, capsys):
    with pytest.raises(TaskError, match="unknown task 'nope'.*2x4"):
        get_task("nope")
    with pytest.raises(TaskError, match="suite version 7 does not exist"):
        get_task("2x4", version=7)
    with pytest.raises(ValueError, match="--seeds must be a whole number >= 1"):
        run_suite(tmp_path / "z", 0, agent="greedy", tasks="2x4", progress=False)
    assert (
        suite_main(["run", "--agent", "greedy", "--seeds", "1", "--tasks", "nope", "--out", str(tmp_path / "x")]) == 2
    )
    assert "unknown task 'nope'" in capsys.readouterr().err

    def always_up(obs, info):  # a callable declares nothing: its exact score is undefined
        return 0

    out = tmp_path / "up"
    with pytest.raises(SuiteRunError, match=r"(?s)task 2x4, seed 0: ValueError: .*deterministic = True.*resumes"):
        run_suite(out, 1, agent=always_up, tasks="2x4", progress=False)

    def wrong_shape(boards, masks):
        return np.zeros((len(boards), 2), np.int64)

    class Shapeless:
        deterministic = True
        act_batch = staticmethod(wrong_shape)

    with pytest.raises(SuiteRunError, match="task 2x4, seed 0: ValueError: .*one action in 0..3"):
        run_suite(tmp_path / "shape", 1, agent=Shapeless(), tasks="2x4", progress=False)

    calls = []

    def flaky(task, budget_steps, seed):
        calls.append(seed)
        if seed == 1:
            raise RuntimeError("diverged")
        return FirstLegalMove()

    out = tmp_path / "trainer"
    with pytest.raises(SuiteRunError, match="task 2x4, seed 1: RuntimeError: diverged"):
        run_suite(out, 2, trainer=flaky, tasks="2x4", progress=False)
    assert (out / "runs" / "2x4" / "seed-0.json").exists() and calls == [0, 1]
    run_json = json.loads((out / "run.json").read_text())
    (out / "run.json").write_text(json.dumps({**run_json, "suite_version": 0}))
    with pytest.raises(SuiteRunError, match=f"suite v0, not v{SUITE_VERSION}"):
        run_suite(out, 2, trainer=flaky, tasks="2x4", progress=False)
    (out / "run.json").write_text(json.dumps(run_json))
    with pytest.raises(SuiteRunError, match="holds the runs of 'flaky', not 'greedy'"):
        run_suite(out, 2, agent="greedy", tasks="2x4", progress=False)


@pytest.mark.slow
def test_the_readme_and_the_suite_page_are_generated_from_the_registry(tmp_path):
    """The committed tables are what the registry gives (regenerate with `python -m experiments.suite
    registry`), and only whole runs of the suite's version enter it."""
    from experiments.suite import registry

    assert registry.render(check=True) == []
    partial = tmp_path / "partial"
    run_suite(partial, 1, agent="greedy", tasks="2x4", progress=False)
    with pytest.raises(ValueError, match=f"covers its track's tasks of suite v{SUITE_VERSION}"):
        registry.add(partial, "greedy", registry=tmp_path / "registry")


def _registry_entry(tasks, scores, trainer="experiments.suite.trainers:dqn_shaped"):
    """A suite.json of five runs scoring ``scores[j]`` times 1, 0.5, 1, 0.5 and 0.75 on ``tasks[j]`` (a mean of
    0.75 ``scores[j]``)."""
    return {
        "suite_version": SUITE_VERSION,
        "tasks": tasks,
        "trainer": trainer,
        "track": "env-only",
        "seeds": 5,
        "normalized": [[x * f for x in scores] for f in (1, 0.5, 1, 0.5, 0.75)],
        "method": dict.fromkeys(tasks, "exact"),
        "family": {t: get_task(t).kind for t in tasks},
        "runs": learner_runs(tasks, seconds=1.0),
        "provenance": {"commit": "0123456789abcdef"},
    }


def test_a_registry_entry_of_one_family_is_aggregated_in_that_family_only(tmp_path):
    """A learner's variant run on one family's tasks (a shaped reward on the success tasks) enters the registry:
    its row shows a dash on the other tasks, it is in its family's aggregates and ranking and not in the others'
    or the overall ones; a run of some other set of tasks is refused, naming the families."""
    from experiments.suite import registry
    from experiments.suite.aggregate import aggregate_table

    everything = [t.name for t in suite_tasks() if t.for_track("env-only")]
    success = [t.name for t in suite_tasks() if t.for_track("env-only") and t.kind == "success"]
    for name, tasks, scores in [
        ("whole", everything, [0.2 + 0.05 * j for j in range(len(everything))]),
        ("variant", success, [0.9 - 0.1 * j for j in range(len(success))]),
        ("odd", ["2x3", "L3-128"], [0.5, 0.5]),
        ("other-track", ["L3-256"], [0.5]),
    ]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "suite.json").write_text(json.dumps(_registry_entry(tasks, scores)))
    for odd in ("odd", "other-track"):
        with pytest.raises(
            ValueError, match="on the env-only track covers its track's tasks .* or L3-128,442-128,t-128"
        ):
            registry.add(tmp_path / odd, odd, registry=tmp_path / "reg")
    registry.add(tmp_path / "whole", "whole", registry=tmp_path / "reg")
    registry.add(tmp_path / "variant", "variant", registry=tmp_path / "reg")
    entries = registry.load(tmp_path / "reg")
    aggregates = registry.registry_aggregates(entries, reps=20)
    assert set(aggregates) == {f"env-only/{part}" for part in ("overall", "score", "success")}
    assert set(aggregates["env-only/overall"]) == set(aggregates["env-only/score"]) == {"whole"}
    assert set(aggregates["env-only/success"]) == {"whole", "variant"}
    alone = aggregate_table({"variant": np.asarray(entries["variant"]["normalized"])}, reps=20)["variant"]
    # each agent's aggregates, CIs included, are its own: the same beside other entries as alone
    beside = aggregates["env-only/success"]["variant"]
    assert beside.keys() == alone.keys()
    for metric, row in alone.items():
        if metric == "runs":
            assert beside[metric] == row
            continue
        assert beside[metric]["point"] == pytest.approx(row["point"]) and beside[metric]["ci"] == pytest.approx(
            row["ci"]
        )
    table = registry.tables(entries, reps=20, full=True, aggregates=aggregates)
    row = next(line for line in table.splitlines() if line.startswith("| variant | env-only | 5 |"))
    means = [f"{(0.9 - 0.1 * j) * 0.75:.4f}" for j in range(len(success))]
    assert row.split(" | ")[3:6] == ["—", "15 s", "—"]  # no training time recorded, 15 runs x 1 s of scoring
    # the score games, then the env-only track's success tasks, then the known-rules track's
    assert row.split(" | ")[6:] == ["—"] * 4 + means + ["—"] * 3 + ["— |"]
    assert "Not in the registry yet: random, greedy, expectimax-2, optimal, td," in table  # what a full one holds
    headline = registry.tables(entries, reps=20, full=False, aggregates=aggregates)
    ranking_lines = [line for line in headline.splitlines() if line.startswith("- ")]
    # a family with one agent of the track has no ranking: only the success family's, with both
    assert len(ranking_lines) == 1 and ranking_lines[0].startswith("- env-only, goal games and endgames: variant")
    assert "whole" in ranking_lines[0]


@pytest.mark.slow
def test_the_td_trainer_keeps_to_its_budget_and_plays_each_tasks_own_game():
    from agents.ntuple_goal import GoalNTupleAgent
    from experiments.suite.trainers import ROUND, td

    assert isinstance(td(get_task("L3-256"), 1000, seed=0), GoalNTupleAgent)
    agent = td(get_task("2x4"), 3000, seed=0)
    assert agent.train_steps == 3000  # the kernel stops at the budget's last move
    again = td(get_task("2x4"), 3000, seed=0)
    assert np.array_equal(again.weights, agent.weights)  # one thread: the same moves from the same seed
    assert ROUND * 200 > 3000  # the budget ends inside the first round: a round is cut, not finished


@pytest.mark.slow
def test_the_ppo_trainer_has_a_file_per_task_and_trains_on_the_tasks_game():
    """Every task has a complete hyperparameter file; a missing one is named; one rollout of MaskablePPO on an
    endgame (one-hot observations of the whole board, masks from the pattern's rules) gives a model that the
    suite plays, legal moves only."""
    pytest.importorskip("sb3_contrib")
    from agents.registry import make_policy
    from experiments.suite.envs import make_task_vec_env
    from experiments.suite.trainers import PPO_KEYS, load_hyperparams, maskable_ppo

    for t in SUITE_V1 + SUITE_V2:
        assert set(load_hyperparams("maskable_ppo", t.name, PPO_KEYS)) == set(PPO_KEYS)
    with pytest.raises(FileNotFoundError, match="no hyperparameters for maskable_ppo on task 'nope'"):
        load_hyperparams("maskable_ppo", "nope")
    with pytest.raises(ValueError, match="use reward 'goal'"):
        make_task_vec_env("L3-256", 2, 0, "score")
    model = maskable_ppo(get_task("L3-256"), 4096, seed=0)
    assert model.train_steps == 4096 and model.observation_space.shape == (18, 4, 4)
    vec = make_task_vec_env("L3-256", 8, 3, "goal")
    boards = np.stack([np.argmax(o, axis=0) for o in vec.reset()]).astype(np.uint8)  # one-hot planes -> exponents
    masks = np.stack(vec.env_method("action_masks"))
    actions = make_policy(model, 4, 4, 0, None).act_batch(boards, masks)
    assert all(masks[i, a] for i, a in enumerate(actions) if masks[i].any())  # a few starts allow no move


def _curve_run(task, seed, scores, steps):
    curve = [
        {"fraction": k / len(scores), "steps": s, "value": v, "normalized": v, "method": "exact"}
        for k, (v, s) in enumerate(zip(scores, steps, strict=True))
    ]
    return {
        "task": task,
        "seed": seed,
        "normalized": scores[-1],
        "curve": curve,
        "training_regret": 10.0 * seed,
        "training_moves_priced": 100,
    }


def test_the_dqn_space_bounds_the_reuse_of_a_step_as_ppo_s_epochs_do():
    """Every point of DQN's search space, with any DQN file's envs, spends 0.5 to 16 sample gradients per
    environment step (gradient steps x batch / (envs x vector steps between updates)), beside MaskablePPO's 3 to 10
    epochs: comparable compute for the trials' equal steps (the bound the space's header states)."""
    from itertools import product

    from experiments.suite.trainers import load_hyperparams
    from experiments.suite.tuning import load_search_space

    dqn, ppo = load_search_space("dqn"), load_search_space("maskable_ppo")
    envs = {load_hyperparams("dqn", t.name)["n_envs"] for t in SUITE_V2}
    dims = (dqn["gradient_steps"]["choices"], dqn["batch_size"]["choices"], dqn["train_freq"]["choices"], envs)
    ratios = [g * b / (n * f) for g, b, f, n in product(*dims)]
    assert (min(ratios), max(ratios)) == (0.5, 16.0)
    assert (min(ppo["n_epochs"]["choices"]), max(ppo["n_epochs"]["choices"])) == (3, 10)


def test_curves_aggregate_against_hand_computation(tmp_path):
    """IQM per checkpoint over runs x tasks (4 runs, 1 task: the mean of the middle two), the first crossing of
    each threshold, and a directory without curves refused."""
    from experiments.suite.curves import curves, steps_to_reach

    finals = [[0.1, 0.5], [0.2, 0.6], [0.3, 0.7], [0.9, 0.96]]
    runs = [_curve_run("2x4", s, sc, [0, 500]) for s, sc in enumerate(finals)]

    def write(name="a", trainer="mine", runs=runs):
        (tmp_path / name).mkdir(exist_ok=True)
        matrix = [[r["normalized"]] for r in runs]
        data = {"trainer": trainer, "tasks": ["2x4"], "runs": {"2x4": runs}, "normalized": matrix}
        (tmp_path / name / "suite.json").write_text(json.dumps(data))

    write()
    result = curves([tmp_path / "a"], tmp_path / "out", reps=50)
    mine = result["algorithms"]["mine"]
    assert mine["iqm"] == pytest.approx([(0.2 + 0.3) / 2, (0.6 + 0.7) / 2])
    assert all(lo <= p <= hi for p, lo, hi in zip(mine["iqm"], *mine["ci"], strict=True))
    assert steps_to_reach(runs[3]["curve"]) == {"0.5": 0, "0.9": 0, "0.95": 500}
    assert steps_to_reach(runs[0]["curve"]) == {"0.5": 500, "0.9": None, "0.95": None}
    assert (tmp_path / "out" / "curves.png").stat().st_size > 0
    assert "steps to 0.95" in (tmp_path / "out" / "curves.md").read_text()
    # another algorithm with its own checkpoints (0, 1/3, 2/3, 1) lines up on the fraction of the budget
    other = [_curve_run("2x4", s, [0.0, 0.1 * s, 0.2 * s, 0.3 * s], [0, 1, 2, 3]) for s in range(4)]
    write("b", "other", other)
    both = curves([tmp_path / "a", tmp_path / "b"], tmp_path / "out2", reps=50)["algorithms"]
    assert both["mine"]["iqm"] == pytest.approx(mine["iqm"]) and both["other"]["fractions"] == [0, 0.25, 0.5, 0.75]
    assert both["other"]["iqm"] == pytest.approx([0.0, 0.15, 0.3, 0.45])
    table = (tmp_path / "out2" / "curves.md").read_text()
    assert "0.25 of budget" in table and "| mine | 0.250" in table and " — |" in table
    del runs[0]["curve"]
    write()
    with pytest.raises(ValueError, match="without a curve"):
        curves([tmp_path / "a"], tmp_path / "out", reps=50)


@pytest.mark.slow
def test_a_run_with_curves_records_checkpoints_and_prices_every_training_move(tmp_path):
    """--curve 2 on 2x4 with the TD trainer: the start and the middle checkpoints, then the final score; every
    training move priced (that tracing leaves the learning as it is: test_ntuple)."""
    run_suite(tmp_path / "td", 1, trainer="experiments.suite.trainers:td", tasks="2x4", progress=False, curve=2)
    cell = json.loads((tmp_path / "td" / "runs" / "2x4" / "seed-0.json").read_text())
    assert [p["fraction"] for p in cell["curve"]] == [0.0, 0.5, 1.0] and cell["curve"][0]["steps"] == 0
    assert cell["curve"][-1]["normalized"] == cell["normalized"] and cell["curve"][1]["steps"] >= 500_000
    assert cell["training_moves_priced"] == cell["train_steps"] and cell["training_regret"] > 0
    with pytest.raises(SuiteRunError, match="--curve 2, not 0"):
        run_suite(tmp_path / "td", 1, trainer="experiments.suite.trainers:td", tasks="2x4", progress=False)
    with pytest.raises(ValueError, match="hands checkpoints to run.checkpoint"):
        run_suite(tmp_path / "x", 1, agent="greedy", tasks="2x4", progress=False, curve=2)


@pytest.mark.slow
def test_the_ppo_trainer_hands_checkpoints_and_its_moves():
    """One rollout of MaskablePPO on 2x4 in a run that takes a curve: the start's checkpoint handed (its scoring,
    an exact evaluation of the network, is the TD test's), the rollout's 4,096 moves priced from its one-hot
    observations."""
    pytest.importorskip("sb3_contrib")
    from experiments.suite.budget import StepBudget
    from experiments.suite.monitor import TrainingMonitor
    from experiments.suite.trainers import maskable_ppo
    from experiments.suite.training import TrainingRun

    class Checkpoints(TrainingMonitor):
        def record(self, steps, policy, avoid_seeds=()):
            self.curve.append({"steps": steps, "policy": policy})

    task = get_task("2x4")
    with Oracle.open(ensure_table(task, progress=False)) as oracle:
        monitor = Checkpoints(task, oracle, 2, seed=0)
        run = TrainingRun(task, StepBudget(4096, "env-only"), progress=False, monitor=monitor)
        model = maskable_ppo(run, 4096, seed=0)
        assert monitor.curve == [{"steps": 0, "policy": model}]
        assert monitor.moves_priced == model.train_steps == run.budget.used == 4096 and monitor.regret > 0


@pytest.mark.slow
def test_processes_can_share_a_run_by_seeds(tmp_path, capsys):
    """--only-seeds runs its seeds and writes no suite.json until every seed is there; the full command then runs
    only what is missing.  `status` says at each point which cells are finished and estimates the others' core
    time from the finished cells of the same task."""
    from experiments.suite.__main__ import main
    from experiments.suite.run_status import cell_seconds, run_status

    assert run_suite(tmp_path, 2, agent="greedy", tasks="2x4", progress=False, only_seeds=[1]) is None
    assert [p.name for p in (tmp_path / "runs" / "2x4").iterdir()] == ["seed-1.json"]
    assert not (tmp_path / "suite.json").exists()
    first = json.loads((tmp_path / "runs" / "2x4" / "seed-1.json").read_text())
    status = run_status(tmp_path, 2, "2x3,2x4")
    assert (status.label, status.track, status.cells, status.cells_done) == ("greedy", "reference", 4, 1)
    on_2x3, on_2x4 = status.tasks
    assert (on_2x3.done, on_2x3.missing, on_2x3.seconds_left, on_2x3.mean_score) == ((), (0, 1), None, None)
    assert (on_2x4.done, on_2x4.missing, on_2x4.mean_score) == ((1,), (0,), first["normalized"])
    assert on_2x4.seconds_left == cell_seconds(first) > 0 and not status.suite_json_complete
    before = (tmp_path / "runs" / "2x4" / "seed-1.json").stat().st_mtime_ns
    result = run_suite(tmp_path, 2, agent="greedy", tasks="2x4", progress=False)
    assert result["seeds"] == 2 and (tmp_path / "runs" / "2x4" / "seed-1.json").stat().st_mtime_ns == before
    assert run_status(tmp_path, 2, "2x4").suite_json_complete
    assert not run_status(tmp_path, 2, "2x3,2x4").suite_json_complete  # suite.json holds the asked task alone
    assert main(["status", str(tmp_path), "--seeds", "2", "--tasks", "2x4,2x3"]) == 0
    printed = capsys.readouterr().out
    assert f"greedy, suite v{SUITE_VERSION}, reference track: 2 of 4 cells finished" in printed
    assert "| 2x4 | 2/2 | - |" in printed and "| 2x3 | 0/2 | 0,1 | — | ? | ? |" in printed
    assert "no finished cell yet to estimate 2x3 from" in printed
    assert main(["status", str(tmp_path / "runs")]) == 2
    assert "holds no run of the suite (no run.json)" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--only-seeds must name some of the seeds 0..1"):
        run_suite(tmp_path, 2, agent="greedy", tasks="2x4", progress=False, only_seeds=[2])


def test_run_json_names_the_hyperparameter_file_of_every_task_run_into_the_directory(tmp_path):
    """Tasks run into one directory one at a time leave run.json naming every task's hyperparameter file; a file
    that differs from the one a task was run with is refused and run.json stays as it was."""

    def what(**digests):
        return {
            "suite_version": SUITE_VERSION,
            "agent": None,
            "trainer": "m:f",
            "track": "env-only",
            "hyperparams": digests,
        }

    _check_directory(tmp_path, what(**{"2x4": "a" * 64}))
    _check_directory(tmp_path, what(**{"2x3": "b" * 64}))
    _check_directory(tmp_path, what(**{"2x4": "a" * 64, "2x3": "b" * 64}))
    merged = json.loads((tmp_path / "run.json").read_text())
    assert merged["hyperparams"] == {"2x4": "a" * 64, "2x3": "b" * 64}
    with pytest.raises(SuiteRunError, match="other hyperparameter files .*2x4 cccccccccccc"):
        _check_directory(tmp_path, what(**{"2x4": "c" * 64}))
    assert json.loads((tmp_path / "run.json").read_text()) == merged


def test_tables_builds_verifies_and_records_its_cost(tmp_path, capsys, monkeypatch):
    """`tables --verify --record`: each table checked against its pins, the task without a table named and
    skipped, the cost written; a table that is not as pinned fails the command."""
    from experiments.suite import tasks as task_defs
    from experiments.suite.entry_cost import directory_bytes
    from experiments.suite.tasks import table_path

    record = tmp_path / "tables.json"
    argv = ["tables", "--tasks", "2x3,4x3", "--verify", "--record", str(record), "--quiet"]
    assert suite_main(argv) == 0
    out = capsys.readouterr().out
    assert "4x3: no table (V* = 50724.26 published" in out and "2x3: " in out and "as pinned" in out
    data = json.loads(record.read_text())
    row = data["tasks"]["2x3"]
    assert set(data["tasks"]) == {"2x3"} and row["as_pinned"] and row["digest"] == get_task("2x3").table_digest
    assert data["bytes"] == row["bytes"] == directory_bytes(table_path(get_task("2x3"))) > 0
    assert data["peak_bytes"] > 0 and data["cpus"] >= 1 and "commit" in data["provenance"]
    doctored = tuple(
        dataclasses.replace(t, table_digest="0" * 64) if t.name == "2x3" else t for t in task_defs.SUITES[3]
    )
    monkeypatch.setitem(task_defs.SUITES, 3, doctored)
    assert suite_main(["tables", "--tasks", "2x3", "--verify", "--quiet"]) == 1
    assert "NOT AS PINNED" in capsys.readouterr().out
