"""The red team: each way a trainer could game the suite, tried the way the next person would try it, through the
command line (``python -m experiments.suite run --trainer red_team:NAME --tasks 2x3 --seeds 1``, run in this
process so that the trainers' observations can be read back) on the 2x3 table; each is refused with the rule it
breaks, or scored with no gain.  Honest trainers of both tracks still pass.  The trainers are in red_team.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import red_team
from stand_ins import FirstLegalMove

import env2048  # noqa: F401
from agents.registry import make_policy
from experiments.suite.__main__ import main as suite_main
from experiments.suite.registry import audit_registry, registry_dir
from experiments.suite.runner import compute_cell, run_suite
from experiments.suite.scoring import EVALUATION_SEEDS
from experiments.suite.tasks import checked_table, get_task
from oracle import Oracle

SEALED = "the oracle is not available while a trainer trains"
#: The registry of a finished suite version, whose TD entry the audit's tests doctor.
V2_REGISTRY = registry_dir(2)


def run_cli(tmp_path, trainer: str, *extra: str) -> int:
    """``run --trainer red_team:TRAINER --tasks 2x3 --seeds 1`` into ``tmp_path/out``; the exit code."""
    out = str(tmp_path / "out")
    return suite_main(
        ["run", "--quiet", "--trainer", f"red_team:{trainer}", "--tasks", "2x3", "--seeds", "1", "--out", out, *extra]
    )


def cell(tmp_path) -> dict:
    return json.loads((tmp_path / "out" / "runs" / "2x3" / "seed-0.json").read_text())


@pytest.mark.parametrize(
    ("trainer", "said"),
    [
        ("returns_optimal", "the trainer returned the spec string 'optimal': a trainer returns the policy it learned"),
        ("returns_greedy", "the trainer returned the fixed reference agent GreedyAgent"),
    ],
)
def test_a_trainer_that_returns_a_reference_agent_is_refused(tmp_path, capsys, trainer, said):
    assert run_cli(tmp_path, trainer) != 0
    assert said in capsys.readouterr().err
    assert not (tmp_path / "out" / "runs" / "2x3" / "seed-0.json").exists()


@pytest.mark.parametrize("trainer", ["asks_the_run_for_its_oracle", "asks_the_run_for_its_task"])
def test_the_run_shows_the_game_not_the_task_behind_it(tmp_path, capsys, trainer):
    assert run_cli(tmp_path, trainer) != 0
    err = capsys.readouterr().err
    assert "a training run has no attribute" in err and "V*, the table and the evaluation are the runner's" in err


@pytest.mark.parametrize(
    ("trainer", "what"),
    [
        ("opens_the_table_by_board", "Oracle.for_board('2x3') was refused"),
        ("opens_the_cached_table", "the cached table of 2x3 score"),
        ("opens_the_suites_table", "the table of suite task 2x3 was refused"),
        ("opens_the_table_file", "opening the table"),
        ("makes_a_v1_env_with_its_oracle", "was refused (makes_a_v1_env_with_its_oracle is training)"),
    ],
)
def test_no_table_opens_while_a_trainer_trains(tmp_path, capsys, trainer, what):
    """Each way to a table refused, though this process already holds the 2x3 game's shared oracle (an env of
    the v1 id made before the run) and the suite's table is open in the runner."""
    gym.make("Solved2048-2x3-v1").close()
    assert run_cli(tmp_path, trainer) != 0
    err = capsys.readouterr().err
    assert SEALED in err and what in err and "TablesSealed" in err


def test_a_policy_cannot_open_the_oracle_while_it_is_scored(tmp_path, capsys):
    assert run_cli(tmp_path, "returns_a_policy_that_opens_the_oracle") != 0
    err = capsys.readouterr().err
    assert SEALED in err and "(the policy returns_a_policy_that_opens_the_oracle returned is being scored)" in err


def test_envs_a_trainer_makes_itself_count_against_its_budget(tmp_path, capsys):
    """gym.make("Game2048-v0"), the task's own id and the native vector env, stepped by the trainer: the step
    past the budget of 1,000 (--budget-scale 0.001) is refused."""
    assert run_cli(tmp_path, "plays_uncounted_envs", "--budget-scale", "0.001") != 0
    err = capsys.readouterr().err
    assert "BudgetExceeded: the env-only budget of 1,000 environment steps is spent" in err
    assert 990 <= red_team.SEEN["plays_uncounted_envs"] <= 1000


@pytest.mark.slow
def test_every_env2048_env_a_trainer_steps_is_counted_exactly(tmp_path):
    """Each kind of env stepped a known number of times by a trainer: the run's count is their sum."""
    pytest.importorskip("stable_baselines3")
    from agents.endgame_vec_env import Endgame2048SB3VecEnv
    from agents.vec_env import Game2048SB3VecEnv
    from env2048 import Game2048VectorEnv
    from env2048.endgame import Endgame2048Env

    def many_envs(run, budget_steps, seed):
        games = [gym.make("Game2048-v0", rows=2, cols=3), gym.make("Solved2048-2x3-v2"), Endgame2048Env("L3", 256)]
        for env in games:
            env.reset(seed=seed)
            for _ in range(7):
                _, _, done, _, _ = env.step(int(np.argmax(env.unwrapped.action_masks())))
                if done:
                    env.reset()
        native = Game2048VectorEnv(4, 2, 3)
        native.reset(seed=seed)
        for _ in range(5):
            native.step(np.argmax(native.action_masks(), axis=1))
        for vec in (Game2048SB3VecEnv(3, 2, 3), Endgame2048SB3VecEnv(2, "L3", 256)):
            vec.reset()
            for _ in range(5):
                vec.step(np.argmax(vec.action_masks(), axis=1))
        return FirstLegalMove()

    result = run_suite(tmp_path / "out", 1, trainer=many_envs, tasks="2x3", progress=False)
    assert result["runs"]["2x3"][0]["counted_steps"] == 3 * 7 + 4 * 5 + 3 * 5 + 2 * 5


def test_a_child_process_of_a_trainer_cannot_step_the_game(tmp_path, capsys):
    assert run_cli(tmp_path, "steps_in_a_child_process") != 0
    assert "its steps cannot be counted against the run's budget" in capsys.readouterr().err


@pytest.mark.parametrize(("trainer", "what"), [("plays_the_jax_game", "make"), ("jits_the_jax_moves", "afterstate")])
def test_the_jax_game_refuses_to_play_uncounted(tmp_path, capsys, trainer, what):
    pytest.importorskip("jax")
    assert run_cli(tmp_path, trainer) != 0
    err = capsys.readouterr().err
    assert f"env2048.jax.{what}: the bare JAX game's moves cannot be counted against a training run's budget" in err
    assert "run.make_jax_games" in err


@pytest.mark.slow
def test_a_policy_cannot_step_the_bare_game_inside_a_counted_rollout(tmp_path, capsys):
    pytest.importorskip("jax")
    assert run_cli(tmp_path, "looks_ahead_inside_its_rollout") != 0
    assert "the bare JAX game's moves cannot be counted" in capsys.readouterr().err


def test_the_counted_jax_games_cannot_be_vmapped_into_uncounted_batches(tmp_path, capsys):
    pytest.importorskip("jax")
    assert run_cli(tmp_path, "vmaps_the_counted_games") != 0
    assert "Cannot `vmap` ordered IO callback" in capsys.readouterr().err


def test_an_env_only_trainer_cannot_simulate_the_game(tmp_path, capsys):
    assert run_cli(tmp_path, "env_only_plays_by_the_rules") != 0
    assert "an env-only trainer cannot simulate the game" in capsys.readouterr().err


def test_checkpoints_are_scored_by_the_runner_and_nothing_comes_back(tmp_path, capsys):
    """--curve 2 at 200 steps: the trainer hands a checkpoint at every step and gets None each time, no monitor,
    and a run without the oracle, V* or the task; the run file has the curve.  A trainer that does not declare
    checkpoints is refused a curve."""
    assert run_cli(tmp_path, "reads_its_checkpoints", "--budget-scale", "0.0002", "--curve", "2") == 0
    seen = red_team.SEEN["reads_its_checkpoints"]
    assert seen["monitor"] is None and len(seen["returned"]) == 200 and set(seen["returned"]) == {None}
    assert not {"oracle", "task", "optimal_value", "table_digest", "monitor"} & set(seen["attributes"])
    curve = cell(tmp_path)["curve"]
    assert [p["fraction"] for p in curve] == [0.0, 0.5, 1.0] and [p["steps"] for p in curve[:2]] == [0, 100]
    assert run_cli(tmp_path / "x", "honest_env_only", "--curve", "2") != 0
    assert "--curve needs a trainer that hands checkpoints to run.checkpoint" in capsys.readouterr().err


def test_training_on_the_old_evaluation_seeds_gains_nothing(tmp_path):
    """A trainer that plays the games Monte-Carlo evaluation used to play: 2x3 is scored exactly, from every
    start, so no seed enters its score."""
    assert run_cli(tmp_path, "trains_on_the_evaluation_seeds", "--budget-scale", "0.001") == 0
    scored = cell(tmp_path)
    assert scored["method"] == "exact" and "evaluation_seed" not in scored and scored["training_seeds"] == 100


def test_monte_carlo_evaluation_starts_are_secret_and_avoid_the_training_seeds(monkeypatch):
    """2x3 scored by Monte Carlo (as the tasks that are not exact are): the first seed is drawn after training,
    from [2^62, 2^63), differs from scoring to scoring, and is drawn again when its games' seeds would meet one
    the training envs were reset with."""
    import secrets

    task = replace(get_task("2x3"), exact=False, mc_episodes=20, budget_steps=100)
    trap = EVALUATION_SEEDS + 1_000

    def resets_on(seeds):
        def train(run, budget_steps, seed):
            env = run.make_env()
            for s in seeds:
                env.reset(seed=s)
                env.step(int(env.unwrapped.action_masks().argmax()))
            return FirstLegalMove()

        return train

    with Oracle.open(checked_table(task, progress=False)[0]) as oracle:
        drawn = [compute_cell(task, 0, None, resets_on(range(5)), oracle)["evaluation_seed"] for _ in range(2)]
        assert drawn[0] != drawn[1] and all(EVALUATION_SEEDS <= s < 2 * EVALUATION_SEEDS for s in drawn)
        draws = iter([1_000 - 5, 1_000 - 19, 123_456])  # the first two meet the trap's seed, the third does not
        monkeypatch.setattr(secrets, "randbelow", lambda n: next(draws))
        scored = compute_cell(task, 0, None, resets_on([trap]), oracle)
        assert scored["evaluation_seed"] == EVALUATION_SEEDS + 123_456 and scored["method"] == "monte-carlo"
        player = make_policy(FirstLegalMove(), 2, 3)
        again = oracle.regret(player, episodes=20, seed=scored["evaluation_seed"], progress=False)
        assert float(again.mean_score) == scored["value"]


@pytest.mark.parametrize("track", ["env-only", "known-rules"])
def test_honest_trainers_of_both_tracks_pass(tmp_path, track):
    trainer = "honest_env_only" if track == "env-only" else "honest_known_rules"
    assert run_cli(tmp_path, trainer, "--budget-scale", "0.01") == 0
    scored = cell(tmp_path)
    assert scored["track"] == track and scored["counted_steps"] == 10_000 and 0 < scored["normalized"] < 1


@pytest.mark.slow
def test_the_command_line_runs_the_sealed_runner_in_a_process_of_its_own(tmp_path):
    """``python -m experiments.suite run`` itself, as a user types it: a refusal, then an honest run."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    command = [sys.executable, "-m", "experiments.suite", "run", "--quiet", "--tasks", "2x3", "--seeds", "1"]
    refused = subprocess.run(
        [*command, "--trainer", "red_team:opens_the_table_by_board", "--out", str(tmp_path / "a")],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert refused.returncode != 0 and SEALED in refused.stderr
    honest = subprocess.run(
        [*command, "--trainer", "red_team:honest_env_only", "--budget-scale", "0.001", "--out", str(tmp_path / "b")],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert honest.returncode == 0, honest.stderr
    assert json.loads((tmp_path / "b" / "runs" / "2x3" / "seed-0.json").read_text())["counted_steps"] == 1_000


def doctored(tmp_path: Path, how: str) -> Path:
    """A copy of the registry's TD entry, doctored ``how``."""
    where = tmp_path / how / "suite-v2"
    where.mkdir(parents=True)
    data = json.loads((V2_REGISTRY / "td.json").read_text())
    if how == "no-steps":
        data["runs"]["2x3"][0]["counted_steps"] = 0
    elif how == "four-seeds":
        data["seeds"], data["normalized"] = 4, data["normalized"][:4]
        data["runs"] = {task: rows[:4] for task, rows in data["runs"].items()}
    elif how == "spec":
        data["runs"]["3x3"][1]["policy_type"] = "builtins.str"
    elif how == "over-budget":
        data["runs"]["2x4"][2]["counted_steps"] = data["runs"]["2x4"][2]["budget_steps"] + 1
    elif how == "other-track":
        data["track"] = "env-only"
        for rows in data["runs"].values():
            for run in rows:
                run["track"] = "env-only"
    elif how == "v1":
        data["suite_version"] = 1
    (where / "td.json").write_text(json.dumps(data))
    return where


def as_current_version(data: dict) -> dict:
    """A v2 known-rules result relabelled as one of the current suite version: its runs of the tasks the known-rules
    track keeps, and those of 3x3 (the same budget) standing in for every task it lacks."""
    from experiments.suite.tasks import SUITE_VERSION, tasks_named

    tasks = tasks_named(None, track="known-rules")
    stand_in = {"budget_steps": None, "counted_steps": None}  # the task's budget, all of it counted
    runs = {
        t.name: data["runs"].get(t.name)
        or [{**run, **dict.fromkeys(stand_in, t.budget_steps)} for run in data["runs"]["3x3"]]
        for t in tasks
    }
    assert all(rows[0]["budget_steps"] == t.budget_steps for t, rows in zip(tasks, runs.values(), strict=True))
    for rows in runs.values():
        for run in rows:
            run["suite_version"] = SUITE_VERSION
    columns = [data["tasks"].index(t.name if t.name in data["runs"] else "3x3") for t in tasks]
    normalized = [[row[j] for j in columns] for row in data["normalized"]]
    names = [t.name for t in tasks]
    return {**data, "suite_version": SUITE_VERSION, "tasks": names, "runs": runs, "normalized": normalized,
            "method": dict.fromkeys(names, "exact"), "family": {t.name: t.kind for t in tasks}}  # fmt: skip


@pytest.mark.parametrize(
    ("how", "said"),
    [
        ("no-steps", "task 2x3, seed 0: counted_steps is 0: the trainer took no counted step"),
        ("four-seeds", "a learner needs at least 5 seeds on every task (2x3: 4,"),
        ("spec", "task 3x3, seed 1: the trainer returned a spec string, not a policy it learned"),
        ("over-budget", "task 2x4, seed 2: counted_steps 1,000,001 is above its budget of 1,000,000"),
        ("other-track", "its trainer 'experiments.suite.trainers:td' declares the known-rules track, not env-only"),
        ("v1", "it is a result of suite v1, not v2"),
    ],
)
def test_the_registry_audit_refuses_doctored_entries(tmp_path, capsys, how, said):
    where = doctored(tmp_path, how)
    assert suite_main(["registry", "--check", "--dir", str(where)]) == 1
    assert said in capsys.readouterr().out


def test_the_registry_as_it_stands_passes_its_audit_and_add_refuses_a_doctored_result(tmp_path):
    from experiments.suite.registry import add

    assert audit_registry(V2_REGISTRY) == {}
    results = tmp_path / "results"
    results.mkdir()
    data = as_current_version(json.loads((doctored(tmp_path, "no-steps") / "td.json").read_text()))
    (results / "suite.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match="fails the registry's audit:\n- task 2x3, seed 0: counted_steps is 0"):
        add(results, "td-doctored", registry=tmp_path / "registry")
    assert not (tmp_path / "registry").exists()
