"""A suite task without a table: the whole 4x3 game from two 2-tiles, scored by Monte Carlo in its env against the
optimum Kaneko & Yamashita publish; what needs a table refuses it clearly."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from agents.simple import GreedyAgent
from env2048 import Game2048Env
from experiments.suite.candidates import candidate
from experiments.suite.envs import make_task_env
from experiments.suite.runner import _run_task
from experiments.suite.scoring import score_policy
from experiments.suite.tasks import KANEKO_YAMASHITA_4X3, TaskError, ensure_table

EPISODES = 12
FIRST_SEED = 1 << 62


@pytest.fixture(scope="module")
def task():
    return dataclasses.replace(candidate("4x3"), mc_episodes=EPISODES)


def replayed_scores(seed0: int) -> list[int]:
    """The greedy agent's games on a bare 4x3 env with two-2 starts, played here move by move."""
    env = Game2048Env(4, 3, invalid_action="terminate", start_p4=0.0)
    agent = GreedyAgent()
    scores = []
    for i in range(EPISODES):
        obs, info = env.reset(seed=seed0 + i)
        assert sorted(obs.ravel())[-2:] == [1, 1] and np.count_nonzero(obs) == 2  # two 2-tiles
        done = False
        while not done and info["action_mask"].any():
            action = int(agent.act_batch(obs[None], info["action_mask"][None])[0])
            obs, _, done, _, info = env.step(action)
        scores.append(info["score"])
    return scores


def test_the_4x3_game_is_scored_by_monte_carlo_against_its_published_optimum(task):
    assert not task.has_table and task.optimal_value == KANEKO_YAMASHITA_4X3 and "Kaneko" in task.optimum_source
    result = score_policy(task, None, GreedyAgent(), evaluation_seed=FIRST_SEED)
    scores = replayed_scores(FIRST_SEED)
    assert result["method"] == "monte-carlo" and result["episodes"] == EPISODES
    assert result["value"] == pytest.approx(np.mean(scores))
    assert result["normalized"] == pytest.approx(np.mean(scores) / 50724.26)
    half = 1.96 * np.std(scores, ddof=1) / np.sqrt(EPISODES)  # as the tabled tasks' Monte-Carlo scores
    assert result["ci_low"] == pytest.approx(np.mean(scores) - half)
    assert result["normalized_ci"][1] == pytest.approx((np.mean(scores) + half) / 50724.26)
    assert 0 < result["normalized"] < 0.2  # greedy play is far from the optimum
    drawn = score_policy(task, None, GreedyAgent())  # a secret start of its own, out of any training seed's range
    assert drawn["evaluation_seed"] >= 1 << 62 and drawn["episodes"] == EPISODES


def test_the_runner_scores_a_tableless_task_and_records_no_table(task, tmp_path):
    digest = _run_task(tmp_path, task, [0], "greedy", None, progress=False)
    cell = json.loads((tmp_path / "runs" / "4x3" / "seed-0.json").read_text())
    assert digest == "" and cell["method"] == "monte-carlo" and cell["optimal_value"] == KANEKO_YAMASHITA_4X3


def test_what_needs_a_table_refuses_a_task_without_one(task):
    with pytest.raises(TaskError, match=r"task 4x3 has no table: .*V\* = 50724.26 is published \(Kaneko"):
        ensure_table(task)
    with pytest.raises(TaskError, match="has no table"):
        make_task_env(task, oracle=True)
    with pytest.raises(ValueError, match="a task without a table takes oracle=None"):
        score_policy(task, object(), GreedyAgent())
    env = make_task_env(task)  # the bare game, two 2-tiles at the start
    obs, _ = env.reset(seed=5)
    assert env.unwrapped.start_p4 == 0.0 and np.count_nonzero(obs) == 2 and obs.max() == 1
