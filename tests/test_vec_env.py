"""The SB3 VecEnv adapter over the native vector env: same games as Game2048Env for a seed, SB3's wrappers and
MaskablePPO run on it; trained SB3 models are accepted directly by the oracle and the benchmark."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")

from sb3_contrib import MaskablePPO  # noqa: E402
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported  # noqa: E402
from stable_baselines3 import PPO  # noqa: E402
from stable_baselines3.common.vec_env import VecCheckNan, VecEnv, VecNormalize  # noqa: E402

from agents.vec_env import Game2048SB3VecEnv, transform_reward  # noqa: E402
from env2048.env import Game2048Env  # noqa: E402
from experiments import benchmark  # noqa: E402
from oracle import Oracle  # noqa: E402
from oracle.agent import SB3Policy, as_policy  # noqa: E402


@pytest.mark.parametrize("obs_mode", ["exponent", "onehot"])
def test_steps_like_the_single_env(obs_mode):
    """Env i of the adapter seeded with s plays Game2048Env's games after reset(seed=s + i), then reset(): the
    same observations, rewards, dones, masks and terminal boards, across several finished games."""
    n, seed = 3, 11
    vec = Game2048SB3VecEnv(n, 2, 3, obs_mode=obs_mode)
    assert isinstance(vec, VecEnv)
    vec.seed(seed)
    obs = vec.reset()
    singles = [Game2048Env(2, 3, obs_mode=obs_mode) for _ in range(n)]
    single_obs = [env.reset(seed=seed + i)[0] for i, env in enumerate(singles)]
    rng = np.random.default_rng(0)
    finished = 0
    for _ in range(400):
        np.testing.assert_array_equal(obs, np.stack(single_obs))
        masks = vec.action_masks()
        assert [m.tolist() for m in vec.env_method("action_masks")] == masks.tolist()
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in masks])
        obs, rewards, dones, infos = vec.step(actions)
        for i, env in enumerate(singles):
            np.testing.assert_array_equal(masks[i], env.action_masks())
            o, r, term, trunc, info = env.step(int(actions[i]))
            assert rewards[i] == r and dones[i] == (term or trunc)
            if dones[i]:
                finished += 1
                np.testing.assert_array_equal(infos[i]["terminal_observation"], o)
                assert infos[i]["episode"]["r"] == info["score"] and infos[i]["episode"]["l"] == info["moves"]
                o, _ = env.reset()
            single_obs[i] = o
    assert finished >= 6


def test_the_goal_reward_is_one_exactly_on_the_move_that_makes_the_goal():
    """reward="goal": 1 on the finishing step of a game whose largest tile reached the goal, 0 on every other step;
    a game ends at the goal."""
    vec = Game2048SB3VecEnv(4, 2, 3, goal_tile=16, reward="goal", obs_mode="exponent")
    vec.seed(5)
    vec.reset()
    rng = np.random.default_rng(1)
    made = 0
    for _ in range(3000):
        masks = vec.action_masks()
        obs, rewards, dones, infos = vec.step(np.array([rng.choice(np.flatnonzero(m)) for m in masks]))
        for i in range(4):
            reached = dones[i] and infos[i]["terminal_observation"].max() >= 4  # exponent 4: the 16 tile
            assert rewards[i] == float(reached)
            made += reached
    assert made >= 5
    with pytest.raises(ValueError, match="needs a goal_tile"):
        Game2048SB3VecEnv(2, 3, 3, reward="goal")


def test_log_rewards_and_errors():
    np.testing.assert_allclose(transform_reward(np.array([0.0, 4.0, 12.0]), "log"), [0, np.log2(5), np.log2(13)])
    with pytest.raises(ValueError, match="reward must be one of"):
        Game2048SB3VecEnv(2, 3, 3, reward="squared")
    vec = Game2048SB3VecEnv(2, 3, 3)
    with pytest.raises(AttributeError, match="only 'action_masks'"):
        vec.env_method("render")
    with pytest.raises(AttributeError, match="share their settings"):
        vec.set_attr("p4", 0.2)


@pytest.mark.slow
def test_sb3_wrappers_and_maskable_ppo_run_on_it():
    vec = VecCheckNan(VecNormalize(Game2048SB3VecEnv(4, 3, 3, reward="log"), norm_obs=False), raise_exception=True)
    assert is_masking_supported(vec)
    model = MaskablePPO("MlpPolicy", vec, n_steps=64, batch_size=64, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=512)
    assert model.num_timesteps >= 512
    obs = vec.reset()
    masks = get_action_masks(vec)
    assert masks.shape == (4, 4) and masks.any(axis=1).all()
    actions, _ = model.predict(obs, action_masks=masks, deterministic=True)
    assert masks[np.arange(4), actions].all()


@pytest.mark.slow
def test_oracle_and_benchmark_take_an_sb3_model(tmp_path):
    """A trained model is a policy as it is: regret, exact evaluation and the benchmark play it through
    SB3Policy (masks for MaskablePPO), also a plain PPO on exponent boards, without masks, as it was trained;
    the old name PPOAgent still plays it, with a deprecation warning."""
    oracle = Oracle.for_board("2x3", progress=False)
    masked = MaskablePPO("MlpPolicy", Game2048SB3VecEnv(2, 2, 3), n_steps=32, batch_size=32, seed=0, device="cpu")
    plain = PPO(
        "MlpPolicy", Game2048SB3VecEnv(2, 2, 3, obs_mode="exponent"), n_steps=32, batch_size=32, seed=0, device="cpu"
    )
    for model, encoding in ((masked, "onehot"), (plain, "exponent")):
        model.learn(64)
        agent = as_policy(model)
        assert isinstance(agent, SB3Policy) and agent.encoding == encoding
        direct = oracle.evaluate(model, progress=False)
        assert direct.value == oracle.evaluate(agent, progress=False).value
        report = oracle.regret(model, episodes=5, seed=1, progress=False)
        assert report.moves > 0
    result = benchmark.run("2x3", [masked], episodes=5, out=tmp_path, progress=False)
    assert result["agents"][0]["label"] == "MaskablePPO" and result["agents"][0]["exact_value"] is not None
    with pytest.raises(TypeError, match="not a Stable-Baselines3 model"):
        SB3Policy(object())
    from agents.ppo import PPOAgent

    with pytest.warns(DeprecationWarning, match="as_policy"):
        old = PPOAgent(masked)
    assert oracle.evaluate(old, progress=False).value == oracle.evaluate(masked, progress=False).value
