"""PPO in JAX (agents.jax_ppo) and the counted JAX games it trains on (env2048.jax.counted): every step charged to
the installed meter, the bare game refused, the pieces of PPO against independent references (SB3's VecNormalize,
a plain loop for GAE), and a short suite run whose counted steps are the whole rollouts."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import gymnasium as gym  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from agents.jax_ppo import JaxPPOPolicy, PPOConfig, advantages, init_params, masked_logits, scale_rewards  # noqa: E402
from env2048 import jax as g2048  # noqa: E402
from env2048 import metering  # noqa: E402
from env2048.jax.counted import CountedGames, make_counted  # noqa: E402
from experiments.suite.budget import StepBudget  # noqa: E402


def uniform_legal(carry, state, key):
    logits = jnp.where(state.legal_action_mask, 0.0, -1e9)
    return jax.random.categorical(key, logits).astype(jnp.int32), None


@pytest.mark.slow
def test_counted_games_charge_each_step_and_each_rollout_when_the_code_runs():
    games = CountedGames(g2048.make(2, 3), 8)
    state = games.reset(jax.random.key(0))

    @jax.jit
    def rollout(state, key):  # traced here, before any meter: the charge still happens when it runs
        return games.rollout(state, key, uniform_legal, None, 5)

    step = jax.jit(games.step)
    rollout(state, jax.random.key(1))  # no meter: runs, charges nothing
    budget = StepBudget(60, "env-only")
    with metering.installed(budget):
        state, _, trace = rollout(state, jax.random.key(2))
        assert budget.used == 40
        actions, _ = uniform_legal(None, state, jax.random.key(3))
        state, reward, done = step(state, actions, jax.random.key(4))
        jax.block_until_ready(state)
        assert budget.used == 48
        assert trace[1].shape == (5, 8) and reward.shape == done.shape == (8,)
        with pytest.raises(Exception, match="budget"):  # past the budget: the callback refuses, the call fails
            jax.block_until_ready(rollout(state, jax.random.key(5)))
    assert budget.used == 48


def test_the_bare_jax_game_is_refused_under_a_meter_and_a_counted_batch_cannot_be_vmapped():
    with metering.installed(StepBudget(100, "env-only")):
        with pytest.raises(metering.UncountedStepError, match="run.make_jax_games"):
            g2048.make(3, 3)
        games = make_counted(3, 3, 4)  # the run's way in
        state = games.reset(jax.random.key(0))
    env = g2048.make(3, 3)
    with metering.installed(StepBudget(100, "env-only")):
        with pytest.raises(metering.UncountedStepError):
            jax.jit(jax.vmap(env.step))(state, jnp.zeros(4, jnp.int32), jax.random.split(jax.random.key(1), 4))
    actions = jnp.zeros((2, 4), jnp.int32)
    for axes, args in (
        ((None, 0, None), (state, actions, jax.random.key(2))),  # a batch of action vectors
        ((None, None, 0), (state, actions[0], jax.random.split(jax.random.key(2), 2))),  # a batch of keys
    ):
        with pytest.raises(ValueError, match="vmap"):
            jax.vmap(games.step, in_axes=axes)(*args)
    with pytest.raises(ValueError, match="vmap"):  # a population of policies on one batch of games
        jax.vmap(lambda c: games.rollout(state, jax.random.key(3), uniform_legal, c, 2)[2][1])(jnp.zeros(2))


@pytest.mark.slow
def test_a_counted_step_is_the_games_step_and_an_ended_game_starts_afresh():
    env = g2048.make(2, 2)
    games = CountedGames(env, 64)
    state = games.reset(jax.random.key(0))
    ended_some = False
    for i in range(30):
        key = jax.random.key(100 + i)
        actions = jax.random.randint(jax.random.key(i), (64,), 0, 4, jnp.int32)
        new, reward, done = games.step(state, actions, key)
        step_keys, _ = jnp.split(jax.random.split(key, 128), 2)
        alone = jax.vmap(env.step)(state, actions, step_keys)
        done, live = np.asarray(done), ~np.asarray(done)
        assert np.array_equal(done, np.asarray(alone.terminated))
        assert np.array_equal(np.asarray(reward), np.asarray(alone.rewards[:, 0]))
        assert np.array_equal(np.asarray(new.board)[live], np.asarray(alone.board)[live])
        fresh = np.asarray(new.board)[done]
        assert np.all((fresh > 0).sum(axis=(1, 2)) == 2) and np.all(np.asarray(new.step_count)[done] == 0)
        ended_some |= done.any()
        state = new
    assert ended_some


class Scripted(gym.Env):
    """Rewards and ends read from a script, one per step (for SB3's VecNormalize)."""

    observation_space = gym.spaces.Box(0, 1, (1,))
    action_space = gym.spaces.Discrete(1)

    def __init__(self, rewards, dones):
        self.rewards, self.dones, self.t = rewards, dones, 0

    def reset(self, seed=None, options=None):
        return np.zeros(1, np.float32), {}

    def step(self, action):
        r, d = float(self.rewards[self.t]), bool(self.dones[self.t])
        self.t += 1
        return np.zeros(1, np.float32), r, d, False, {}


def test_reward_scaling_is_sb3s_vecnormalize():
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    rng = np.random.default_rng(0)
    steps, n, gamma = 40, 3, 0.99
    rewards = rng.choice([0.0, 4.0, 8.0, 32.0], (steps, n)).astype(np.float32)
    dones = rng.random((steps, n)) < 0.15
    vec = VecNormalize(
        DummyVecEnv([lambda i=i: Scripted(rewards[:, i], dones[:, i]) for i in range(n)]), norm_obs=False, gamma=gamma
    )
    vec.reset()
    want = np.stack([vec.step(np.zeros(n, np.int64))[1] for _ in range(steps)])
    stats = (jnp.zeros(n), jnp.float32(0), jnp.float32(1), jnp.float32(1e-4))
    _, got = scale_rewards(stats, jnp.asarray(rewards), jnp.asarray(dones), gamma)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4)


def test_advantages_match_a_plain_loop():
    rng = np.random.default_rng(1)
    steps, n, gamma, lam = 12, 4, 0.99, 0.9
    values, rewards = rng.normal(size=(steps, n)), rng.normal(size=(steps, n))
    dones, last = rng.random((steps, n)) < 0.25, rng.normal(size=n)
    want = np.zeros((steps, n))
    for j in range(n):
        adv, next_value = 0.0, last[j]
        for t in reversed(range(steps)):
            live = 0.0 if dones[t, j] else 1.0
            adv = rewards[t, j] + gamma * next_value * live - values[t, j] + gamma * lam * live * adv
            want[t, j], next_value = adv, values[t, j]
    f32 = [jnp.asarray(x, jnp.float32) for x in (values, last, rewards)]
    got, returns = advantages(f32[0], f32[1], f32[2], jnp.asarray(dones), gamma, lam)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(np.asarray(returns), want + values, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_the_host_policy_plays_the_networks_most_probable_legal_move():
    env = g2048.make(3, 3)
    params = init_params(jax.random.key(0), 9 * env.channels, (16, 8))
    policy = JaxPPOPolicy(params, 3, 3, env.channels)
    state = CountedGames(env, 500).reset(jax.random.key(1))
    boards, masks = np.asarray(state.board, np.uint8), np.asarray(state.legal_action_mask)
    obs = np.asarray(state.observation, np.float32).reshape(500, -1)
    want = np.asarray(masked_logits(params, jnp.asarray(obs), jnp.asarray(masks), jnp))
    np.testing.assert_allclose(policy.logits(boards, masks), want, rtol=1e-5, atol=1e-5)
    actions = policy.act_batch(boards, masks)
    assert masks[np.arange(500), actions].all() and policy.deterministic and policy.cheap_to_evaluate
    with pytest.raises(ValueError, match="exponent"):
        policy.act_batch(np.full((1, 3, 3), env.channels, np.uint8), np.ones((1, 4), bool))
    # without masks (a network trained without the legal moves) the most probable move, legal or not
    blind = JaxPPOPolicy(params, 3, 3, env.channels, masks=False)
    everything = np.asarray(masked_logits(params, jnp.asarray(obs), jnp.ones((500, 4), bool), jnp))
    np.testing.assert_allclose(blind.logits(boards, masks), everything, rtol=1e-5, atol=1e-5)
    assert (blind.act_batch(boards, masks) == everything.argmax(axis=1)).all()
    assert not masks[np.arange(500), everything.argmax(axis=1)].all()  # this network does choose illegal moves


@pytest.mark.slow
def test_the_unmasked_trainer_learns_without_the_legal_moves():
    """``jax_ppo_unmasked``: the same files, the policy blind to the legal moves, its steps counted."""
    import dataclasses

    from experiments.suite.runner import train_on_task
    from experiments.suite.tasks import get_task
    from experiments.suite.trainers import jax_ppo_unmasked

    small = {"net_arch": [16], "n_envs": 8, "n_steps": 16, "batch_size": 64}
    task = get_task("2x3")

    def train(run, budget_steps, seed):
        return jax_ppo_unmasked(run, budget_steps, seed, hyperparams=small)

    train.track = "env-only"
    policy, facts = train_on_task(train, dataclasses.replace(task, budget_steps=1300), 0, progress=False)
    assert isinstance(policy, JaxPPOPolicy) and not policy.masks
    assert facts["counted_steps"] == policy.train_steps == 1280


def test_settings_that_cannot_compile_once_are_refused():
    with pytest.raises(ValueError, match="batch_size 1000 must divide"):
        PPOConfig(n_envs=32, n_steps=128, batch_size=1000)


@pytest.mark.slow
def test_a_suite_run_trains_on_counted_games_and_is_scored_exactly(tmp_path):
    """Through the CLI on 2x3, with small settings: the counted steps are the whole rollouts in the budget, a
    curve's checkpoints are taken, and the policy is scored exactly."""
    import json

    from experiments.suite.__main__ import main as suite_main

    out = tmp_path / "out"
    args = ["run", "--quiet", "--trainer", "stand_ins:jax_ppo_small", "--tasks", "2x3", "--seeds", "1"]
    assert suite_main([*args, "--budget-scale", "0.0013", "--curve", "2", "--out", str(out)]) == 0
    cell = json.loads((out / "runs" / "2x3" / "seed-0.json").read_text())
    assert cell["budget_steps"] == 1300 and cell["counted_steps"] == cell["train_steps"] == 1280
    assert cell["method"] == "exact" and 0 < cell["normalized"] < 1
    assert cell["policy_type"] == "agents.jax_ppo.JaxPPOPolicy" and len(cell["curve"]) == 3
