"""The SB3 VecEnv of endgames: its kernels (moves, empty free cells, spawns) and per-env draws play the games of
SB3's DummyVecEnv of Endgame2048Env, the pure-Python reference, move for move."""

from __future__ import annotations

import collections

import numpy as np
import pytest

pytest.importorskip("stable_baselines3")

from stable_baselines3.common.vec_env import DummyVecEnv, VecEnv  # noqa: E402

from agents.endgame_vec_env import Endgame2048SB3VecEnv  # noqa: E402
from env2048.endgame import Endgame2048Env  # noqa: E402
from experiments.suite.envs import OneHotBoard  # noqa: E402


def _reference(n, pattern, target, invalid_action, obs_mode):
    def make():
        env = Endgame2048Env(pattern, target, invalid_action=invalid_action)
        return OneHotBoard(env) if obs_mode == "onehot" else env

    return DummyVecEnv([make for _ in range(n)])


@pytest.mark.parametrize(
    "pattern, target, invalid_action, obs_mode", [("442", 16, "terminate", "onehot"), ("t", 16, "noop", "exponent")]
)
def test_plays_the_games_of_a_dummy_vec_env_of_endgame_envs(pattern, target, invalid_action, obs_mode):
    """Seeded alike and given the same actions (mostly legal, some not), the adapter and the reference agree on
    every observation, reward, done, mask and final board over 1,500 vector steps, through games that end in
    each way the rules have (success, failure, stuck, and an illegal move where it ends the game)."""
    n, seed = 5, 3
    ours = Endgame2048SB3VecEnv(n, pattern, target, invalid_action=invalid_action, obs_mode=obs_mode)
    ref = _reference(n, pattern, target, invalid_action, obs_mode)
    assert isinstance(ours, VecEnv) and ours.observation_space == ref.observation_space
    ours.seed(seed)
    ref.seed(seed)
    assert np.array_equal(ours.reset(), ref.reset())
    rng = np.random.default_rng(0)
    ends = collections.Counter()
    for step in range(1500):
        masks = np.stack(ref.env_method("action_masks"))
        assert np.array_equal(np.stack(ours.env_method("action_masks")), masks), step
        legal = (rng.random((n, 4)) * masks).argmax(axis=1)
        actions = np.where(rng.random(n) < 0.9, legal, rng.integers(0, 4, n))
        obs, rewards, dones, infos = ours.step(actions)
        ref_obs, ref_rewards, ref_dones, ref_infos = ref.step(actions)
        assert np.array_equal(obs, ref_obs) and np.array_equal(dones, ref_dones), step
        assert np.array_equal(rewards, ref_rewards) and rewards.dtype == np.float32, step
        for i in np.flatnonzero(dones):
            assert np.array_equal(infos[i]["terminal_observation"], ref_infos[i]["terminal_observation"])
            assert infos[i]["episode"]["r"] == float(ref_infos[i]["outcome"] == "success")
            assert infos[i]["episode"]["l"] == ref_infos[i]["moves"]
            ends[ref_infos[i]["outcome"]] += 1
    expected = {"success", "failure", "stuck"} | ({"illegal"} if invalid_action == "terminate" else set())
    assert set(ends) == expected, ends


def test_refuses_bad_arguments_and_moves_it_does_not_allow():
    with pytest.raises(ValueError, match="num_envs must be a positive int"):
        Endgame2048SB3VecEnv(0, "L3", 256)
    with pytest.raises(ValueError, match="obs_mode must be one of"):
        Endgame2048SB3VecEnv(2, "L3", 256, obs_mode="pixels")
    with pytest.raises(ValueError, match="invalid_action must be"):
        Endgame2048SB3VecEnv(2, "L3", 256, invalid_action="ignore")
    vec = Endgame2048SB3VecEnv(2, "L3", 256, invalid_action="raise")
    vec.seed(0)
    vec.reset()
    with pytest.raises(ValueError, match="actions must be 0..3"):
        vec.step(np.array([0, 4]))
    masks = vec.action_masks()
    i = int(np.flatnonzero(masks.any(axis=1) & ~masks.all(axis=1))[0])
    actions = masks.argmax(axis=1)
    actions[i] = int(np.flatnonzero(~masks[i])[0])
    with pytest.raises(ValueError, match=rf"env {i}: .* is not allowed here; allowed moves"):
        vec.step(actions)
    with pytest.raises(AttributeError, match="no per-env method 'render'"):
        vec.env_method("render")
