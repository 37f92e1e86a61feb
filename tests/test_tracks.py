"""Tracks and counted budgets: a learner's steps are counted by the suite's envs and simulator, not taken on the
trainer's word; a step past the budget is refused, and the seeds finished before are kept."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from stand_ins import FirstLegalMove

from agents.registry import make_policy
from experiments.suite import SUITE_V2, SUITE_V3, get_task
from experiments.suite.budget import BudgetExceeded, StepBudget
from experiments.suite.runner import SuiteRunError, run_suite, train_on_task
from experiments.suite.training import TrainingRun
from oracle import Oracle

import naive


def test_a_budget_counts_and_refuses_the_first_step_past_it():
    budget = StepBudget(5, "env-only")
    budget.charge(3)
    budget.charge(2)
    assert budget.remaining == 0 and budget.used == 5
    with pytest.raises(BudgetExceeded, match="the env-only budget of 5 environment steps is spent"):
        budget.charge(1)
    assert budget.used == 5
    with pytest.raises(ValueError, match="unknown track 'both'"):
        StepBudget(5, "both")


def test_an_env_only_learner_s_env_steps_are_counted_and_carry_no_oracle():
    run = TrainingRun(get_task("2x4"), StepBudget(40, "env-only"))
    env = run.make_env()
    obs, info = env.reset(seed=0)
    steps = 0
    while steps < 40:
        obs, reward, terminated, truncated, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
        steps += 1
        assert not {"q_values", "optimal_actions", "regret"} & set(info)
        if terminated or truncated:
            obs, info = env.reset()
    assert run.budget.used == 40
    with pytest.raises(BudgetExceeded):
        env.step(0)
    with pytest.raises(ValueError, match="an env-only trainer has no simulator"):
        run.simulator()


def test_a_known_rules_learner_s_simulated_moves_are_counted_and_follow_the_rules():
    """The simulator's moves are the rules' (tests/naive.py), the spawn lands on an empty cell of the
    afterstate, and every board stepped is one move of the budget."""
    run = TrainingRun(get_task("2x4"), StepBudget(1000, "known-rules"))
    sim = run.simulator()
    rng = np.random.default_rng(1)
    boards = rng.integers(0, 4, size=(200, 2, 4)).astype(np.uint8)
    actions = rng.integers(0, 4, size=200)
    nxt, rewards, legal = sim.step(boards, actions, seed=0)
    assert run.budget.used == 200
    for b, a, n, r, ok in zip(boards, actions, nxt, rewards, legal, strict=True):
        after, reward = naive.move(b.tolist(), int(a))
        assert ok == (after != b.tolist())
        if not ok:
            assert r == 0 and (n == b).all()
            continue
        diff = np.argwhere(np.array(after) != n)
        assert r == reward and len(diff) == 1 and after[diff[0][0]][diff[0][1]] == 0 and n[tuple(diff[0])] in (1, 2)
    with pytest.raises(BudgetExceeded, match="known-rules budget of 1,000 simulated moves"):
        sim.step(np.zeros((801, 2, 4), np.uint8), np.zeros(801, np.int64))  # 200 used: 801 more would pass it
    assert run.budget.used == 200


def test_td_s_moves_are_counted_by_its_kernel_to_the_budget():
    from experiments.suite.trainers import td

    facts_of = {}
    for budget in (0, 1, 777):
        task = dataclasses.replace(get_task("2x4"), budget_steps=budget)
        policy, facts = train_on_task(td, task, seed=0)
        facts_of[budget] = facts
        assert facts["track"] == "known-rules" and facts["counted_steps"] == budget == policy.train_steps
    goal = dataclasses.replace(get_task("L3-256"), budget_steps=500)
    assert train_on_task(td, goal, seed=0)[1]["counted_steps"] == 500


@pytest.mark.slow
def test_a_trainer_that_steps_past_its_budget_is_stopped_and_its_finished_seeds_are_kept(tmp_path, monkeypatch):
    from experiments.suite import runner

    small = dataclasses.replace(get_task("2x4"), budget_steps=64)
    monkeypatch.setattr(runner, "tasks_named", lambda names, track=None: [small])

    def greedy_env_learner(run, budget_steps, seed):
        env = run.make_env()
        obs, info = env.reset(seed=seed)
        for _ in range(budget_steps + seed):  # seed 1 takes one step too many
            obs, reward, terminated, truncated, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
            if terminated or truncated:
                obs, info = env.reset()
        return FirstLegalMove()

    out = tmp_path / "over"
    with pytest.raises(SuiteRunError, match=r"task 2x4, seed 1: BudgetExceeded: the env-only budget of 64 "):
        run_suite(out, 2, trainer=greedy_env_learner, tasks="2x4", progress=False)
    kept = json.loads((out / "runs" / "2x4" / "seed-0.json").read_text())
    assert kept["counted_steps"] == 64 and kept["track"] == "env-only" and kept["budget_steps"] == 64
    assert not (out / "runs" / "2x4" / "seed-1.json").exists()
    assert json.loads((out / "run.json").read_text())["track"] == "env-only"
    with pytest.raises(SuiteRunError, match="holds runs on the env-only track, not known-rules"):
        greedy_env_learner.track = "known-rules"
        run_suite(out, 2, trainer=greedy_env_learner, tasks="2x4", progress=False)


def _results(path, name, track, normalized, trainer=True):
    path.mkdir(parents=True)
    data = {
        "suite_version": 1,
        "tasks": ["2x4", "3x3", "L3-256"],
        "normalized": normalized,
        "track": track,
        "family": {"2x4": "score", "3x3": "score", "L3-256": "success"},
        "agent": None if trainer else name,
        "trainer": name if trainer else None,
    }
    (path / "suite.json").write_text(json.dumps(data))
    return path


@pytest.mark.slow
def test_compare_keeps_tracks_apart_and_scores_each_family(tmp_path):
    """Two learners of different tracks are aggregated in their own groups, each beside the reference agents,
    with no probability of improvement across tracks unless pooling is asked for; each family's aggregate uses
    its own tasks' columns only (the mean checked by hand)."""
    from experiments.suite.aggregate import compare

    a = _results(tmp_path / "a", "ppo", "env-only", [[0.2, 0.3, 0.0], [0.25, 0.35, 0.1]])
    b = _results(tmp_path / "b", "td", "known-rules", [[0.5, 0.6, 0.8], [0.55, 0.6, 0.9]])
    ref = _results(tmp_path / "r", "greedy", "reference", [[0.1, 0.07, 0.0]], trainer=False)
    result = compare([a, b, ref], tmp_path / "out", reps=200)
    assert set(result["groups"]) == {"env-only", "known-rules"} and not result["pooled_tracks"]
    assert result["groups"]["env-only"]["agents"] == ["ppo", "greedy"]
    pairs = {p for g in result["groups"].values() for p in g["probability_of_improvement"]}
    assert "ppo > td" not in pairs and "td > ppo" not in pairs and "td > greedy" in pairs
    td_score = result["groups"]["known-rules"]["aggregates"]["score"]["td"]["mean"]["point"]
    assert td_score == pytest.approx(np.mean([0.5, 0.6, 0.55, 0.6]))
    td_goal = result["groups"]["known-rules"]["aggregates"]["success"]["td"]["mean"]["point"]
    assert td_goal == pytest.approx(0.85)
    assert "score games" in (tmp_path / "out" / "compare.md").read_text()
    pooled = compare([a, b, ref], tmp_path / "pooled", reps=200, pool_tracks=True)
    assert set(pooled["groups"]) == {"pooled"} and pooled["pooled_tracks"]
    assert "ppo > td" in pooled["groups"]["pooled"]["probability_of_improvement"]


def test_compare_names_two_runs_of_one_trainer_apart(tmp_path):
    """Two runs of the same trainer (tuned and untuned settings) are refused unnamed, and compared as NAME=DIR
    (a suite.json file too), each under its own name."""
    from experiments.suite.aggregate import compare

    old = _results(tmp_path / "old", "ppo", "env-only", [[0.2, 0.3, 0.0], [0.25, 0.35, 0.1]])
    new = _results(tmp_path / "new", "ppo", "env-only", [[0.4, 0.5, 0.2], [0.45, 0.55, 0.3]])
    with pytest.raises(ValueError, match=r"hold the same agent: .*name each one \(NAME=DIR\)"):
        compare([old, new], tmp_path / "out", reps=100)
    result = compare([f"untuned={old}", f"tuned={new / 'suite.json'}"], tmp_path / "out", reps=100)
    group = result["groups"]["pooled"]  # one learning track: one group
    assert group["agents"] == ["untuned", "tuned"] and "tuned > untuned" in group["probability_of_improvement"]
    assert group["aggregates"]["overall"]["tuned"]["mean"]["point"] == pytest.approx(
        np.mean([0.4, 0.5, 0.2, 0.45, 0.55, 0.3])
    )
    with pytest.raises(ValueError, match="give a name before '='"):
        compare([f"={old}", new], tmp_path / "out", reps=100)


@pytest.mark.slow
def test_a_budget_scale_trains_for_a_multiple_of_the_budget_and_never_enters_the_registry(tmp_path):
    from experiments.suite import registry
    from experiments.suite.trainers import td

    out = tmp_path / "scaled"
    result = run_suite(out, 1, trainer=td, tasks="2x4", progress=False, budget_scale=0.002)
    cell = result["runs"]["2x4"][0]
    assert result["budget_scale"] == 0.002 and cell["budget_steps"] == cell["counted_steps"] == 2000
    with pytest.raises(ValueError, match="trained at 0.002x the regime's budgets"):
        registry.add(out, "td-scaled", registry=tmp_path / "registry")
    with pytest.raises(SuiteRunError, match="holds runs at 0.002x the budgets, not 1.0x"):
        run_suite(out, 1, trainer=td, tasks="2x4", progress=False)
    with pytest.raises(ValueError, match="--budget-scale is a positive factor for a trainer's budget"):
        run_suite(tmp_path / "agent", 1, agent="greedy", tasks="2x4", progress=False, budget_scale=2)


@pytest.mark.slow
def test_candidates_are_measured_once_resume_and_refuse_a_build_under_way(tmp_path, monkeypatch):
    """The candidates tool on the smallest candidate: its table built in a process of its own (time, peak memory,
    size), V*, the agents scored as the suite scores them; a second call adds nothing; a work directory left by
    another build is refused rather than shared."""
    from experiments.suite import candidates
    from experiments.suite.scoring import score_policy

    monkeypatch.setenv("SOLVED2048_HOME", str(tmp_path / "home"))
    rows = candidates.measure(tmp_path / "out", ["2x3"], agents=("greedy",), progress=False)
    steps = {r["step"]: r for r in rows}
    assert list(steps) == ["build", "table", "agent:greedy"]
    assert steps["build"]["seconds"] > 0 and steps["build"]["peak_bytes"] > 0 and steps["build"]["bytes"] > 0
    task = candidates.candidate("2x3")
    with Oracle.open(candidates.table_dir(task)) as oracle:
        assert steps["table"]["optimal_value"] == oracle.start_value
        expected = score_policy(task, oracle, make_policy("greedy", 2, 3, seed=0, oracle=oracle))
    assert steps["agent:greedy"]["normalized"] == expected["normalized"]
    assert candidates.measure(tmp_path / "out", ["2x3"], agents=("greedy",), progress=False) == rows
    # an exact score of a fixed agent is the same for every seed: more seeds measure nothing more
    assert candidates.measure(tmp_path / "out", ["2x3"], agents=("greedy",), progress=False, seeds=3) == rows
    (tmp_path / "home" / "suite-candidates" / "2x4.work").mkdir(parents=True)
    with pytest.raises(FileExistsError, match="a build of 2x4 is under way, or was interrupted"):
        candidates.build_table(candidates.candidate("2x4"))


@pytest.mark.slow
def test_a_candidate_is_measured_with_a_learner_over_seeds(tmp_path, monkeypatch):
    """An env-only learner on a candidate: trained sealed and counted within the candidate's budget with its
    family's file (a candidate has none of its own), scored as the suite scores; two seeds' cells make one cell
    of their mean and its bootstrap interval."""
    import dataclasses

    from experiments.suite import candidates

    monkeypatch.setenv("SOLVED2048_HOME", str(tmp_path / "home"))
    task = dataclasses.replace(candidates.candidate("2x3"), budget_steps=8192)
    candidates.build_table(task)
    with Oracle.open(candidates.table_dir(task)) as oracle:
        run = candidates.score_agent(task, oracle, "jax_ppo", 0)
    assert run["track"] == "env-only" and 0 < run["counted_steps"] <= 8192
    assert run["hyperparams"] == "jax_ppo/3x3.toml" and run["method"] == "exact" and 0 < run["normalized"] < 1
    runs = [run, {**run, "seed": 1, "normalized": run["normalized"] / 2}]  # a second seed's cell, as recorded
    mean, low, high = candidates.seed_interval(runs, "score")
    assert mean == pytest.approx((runs[0]["normalized"] + runs[1]["normalized"]) / 2)
    assert min(r["normalized"] for r in runs) <= low <= mean <= high <= max(r["normalized"] for r in runs)
    assert candidates.agent_cell(runs, "score").endswith("(2 seeds)")


@pytest.mark.slow
def test_the_dqn_trainer_keeps_to_its_budget_without_masks_and_is_scored(tmp_path, capsys):
    """SB3's DQN from the task's file on the counted envs: whole collections within the budget, counted by the
    suite; its policy is scored exactly (a model without masks, so an illegal move would end its games).  Its
    progress bar shows unless the run is quiet."""
    pytest.importorskip("stable_baselines3")
    from experiments.suite.trainers import DQN_KEYS, dqn, load_hyperparams

    for t in SUITE_V2 + SUITE_V3:
        assert set(load_hyperparams("dqn", t.name, DQN_KEYS)) == set(DQN_KEYS)
    small = dataclasses.replace(get_task("2x4"), budget_steps=1000)
    model, facts = train_on_task(dqn, small, seed=0)
    assert facts["track"] == "env-only" and facts["counted_steps"] == model.train_steps == 960  # 15 x 8 envs x 8
    assert "DQN 2x4 seed 0" in capsys.readouterr().err
    run_suite(tmp_path / "dqn", 1, agent=model, tasks="2x4", progress=False, track="env-only")
    cell = json.loads((tmp_path / "dqn" / "runs" / "2x4" / "seed-0.json").read_text())
    assert cell["method"] == "exact" and 0 < cell["normalized"] < 1
    # the shaped variants, declared trainers of their own, on the same counted budget
    from experiments.suite.trainers import dqn_shaped, maskable_ppo_shaped

    assert train_on_task(dqn_shaped, small, seed=0, progress=False)[1]["counted_steps"] == 960
    assert "DQN 2x4 seed 0" not in capsys.readouterr().err  # quiet
    rollout = dataclasses.replace(small, budget_steps=4096)
    assert train_on_task(maskable_ppo_shaped, rollout, seed=0)[1]["counted_steps"] == 4096


def test_the_merge_potential_and_its_shaped_rewards_against_a_hand_computation():
    """phi sums (e - 1) * 2**e over the tiles (a goal task: those below the goal, over what the goal tile pays); the
    shaped reward is r + gamma * phi(s') - phi(s), with phi = 0 where a game ended."""
    from agents.vec_env import Game2048SB3VecEnv
    from experiments.suite.shaping import merge_potential, onehot_exponents, shaped_vec_env

    board = np.array([[[1, 2], [3, 0]]], np.uint8)  # 2, 4 / 8, empty
    assert merge_potential(board)[0] == 1 * 4 + 2 * 8  # the 4 paid 4 points, the 8 paid 4 + 4 + 8
    big = np.array([[[3, 9], [8, 2]]], np.uint8)  # 8, 512 / 256, 4 with the goal 256: the 256 and 512 do not count
    assert merge_potential(big, goal_exponent=8)[0] == pytest.approx((2 * 8 + 1 * 4) / (7 * 256))
    gamma = 0.9
    plain = Game2048SB3VecEnv(2, 2, 2, obs_mode="onehot", reward="score", invalid_action="terminate")
    shaped = shaped_vec_env(
        Game2048SB3VecEnv(2, 2, 2, obs_mode="onehot", reward="score", invalid_action="terminate"), gamma
    )
    plain.seed(5)
    shaped.seed(5)
    obs, again = plain.reset(), shaped.reset()
    np.testing.assert_array_equal(obs, again)
    ended = 0
    for step in range(60):
        actions = np.array([step % 4, (step * 3 + 1) % 4])
        before = [int(((e - 1) * 2**e)[e >= 2].sum()) for e in onehot_exponents(obs).reshape(2, -1).astype(int)]
        obs, rewards, dones, infos = plain.step(actions)
        shaped_obs, shaped_rewards, _, shaped_infos = shaped.step(actions)
        np.testing.assert_array_equal(obs, shaped_obs)
        for i in range(2):
            final = infos[i]["terminal_observation"] if dones[i] else obs[i]
            e = final.argmax(axis=0).reshape(-1).astype(int)
            after = 0 if dones[i] else int(((e - 1) * 2**e)[e >= 2].sum())
            assert shaped_rewards[i] == pytest.approx(rewards[i] + gamma * after - before[i], rel=1e-6)
            assert shaped_infos[i]["unshaped_reward"] == rewards[i]
        ended += int(dones.sum())
    assert ended > 0  # the check passed through games' ends


@pytest.mark.slow
def test_td_with_expectimax_trains_as_td_does_and_searches_at_evaluation(tmp_path, monkeypatch):
    """The same network as td's from the same seed and budget, played by depth-2 search; its run is counted on
    the known-rules track and scored (exactly on 2x3)."""
    from experiments.suite import runner
    from experiments.suite.trainers import td, td_expectimax

    small = dataclasses.replace(get_task("2x3"), budget_steps=3000)
    player = td_expectimax(small, 3000, seed=0)
    assert np.array_equal(player.network.weights, td(small, 3000, seed=0).weights) and player.depth == 2
    monkeypatch.setattr(runner, "tasks_named", lambda names, track=None: [small])
    result = run_suite(tmp_path / "tdx", 1, trainer=td_expectimax, tasks="2x3", progress=False)
    cell = result["runs"]["2x3"][0]
    assert cell["track"] == "known-rules" and cell["counted_steps"] == cell["train_steps"] == 3000
    assert cell["method"] == "exact" and 0 < cell["normalized"] < 1
