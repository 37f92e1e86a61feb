"""Game2048VectorEnv: identical to independent single envs under the same seeds, reachable by gym.make_vec."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from env2048 import Game2048Env, Game2048VectorEnv, IllegalActionError


@pytest.mark.parametrize(
    "rows,cols,invalid,start_p4",
    [(2, 2, "noop", None), (3, 3, "noop", None), (4, 3, "terminate", 0.0), (3, 5, "noop", None), (3, 3, "spawn", 0.5)],
)
def test_vector_env_equals_single_envs(rows, cols, invalid, start_p4):
    n, seed = 5, 42
    vec = Game2048VectorEnv(n, rows, cols, invalid_action=invalid, start_p4=start_p4)
    singles = [Game2048Env(rows, cols, invalid_action=invalid, start_p4=start_p4) for _ in range(n)]
    obs, info = vec.reset(seed=seed)
    for i, env in enumerate(singles):
        o, inf = env.reset(seed=seed + i)
        assert (o == obs[i]).all() and inf["age"] == info["age"][i]
    rng = np.random.default_rng(0)
    done = np.zeros(n, bool)
    resets = 0
    for _ in range(1500):
        actions = rng.integers(0, 4, n)
        obs, reward, term, trunc, info = vec.step(actions)
        for i, env in enumerate(singles):
            if done[i]:  # NEXT_STEP autoreset: this step reset env i
                o, inf = env.reset()
                r, t = 0.0, False
                assert not info["_afterstate"][i]
                resets += 1
            else:
                o, r, t, _, inf = env.step(int(actions[i]))
                assert info["_afterstate"][i] and (info["afterstate"][i] == inf["afterstate"]).all()
            assert (o == obs[i]).all() and r == reward[i] and t == term[i]
            for key in ("score", "max_tile", "age", "moves", "illegal_moves"):
                assert inf[key] == info[key][i], key
            assert (inf["action_mask"] == info["action_mask"][i]).all()
        assert not trunc.any()
        done = term
    assert resets > 0


def test_make_vec_uses_native_vector_env():
    envs = gym.make_vec("Solved2048-3x3", num_envs=8)
    assert isinstance(envs.unwrapped, Game2048VectorEnv)
    obs, info = envs.reset(seed=0)
    assert obs.shape == (8, 3, 3) and obs.dtype == np.uint8
    assert envs.single_observation_space.shape == (3, 3)
    envs = gym.make_vec("Game2048-v0", num_envs=3, rows=2, cols=7, obs_mode="onehot")
    obs, _ = envs.reset(seed=0)
    assert obs.shape == (3, 16, 2, 7) and envs.observation_space.contains(obs)


def test_vector_env_rejects_bad_input():
    with pytest.raises(ValueError, match="num_envs"):
        Game2048VectorEnv(0)
    vec = Game2048VectorEnv(4, 3, 3)
    with pytest.raises(RuntimeError, match="reset"):
        vec.step(np.zeros(4, int))
    vec.reset(seed=0)
    with pytest.raises(ValueError, match="shape"):
        vec.step(np.zeros(3, int))
    with pytest.raises(ValueError, match="0..3"):
        vec.step(np.full(4, 7))
    with pytest.raises(ValueError, match="seeds"):
        vec.reset(seed=[1, 2])
    raising = Game2048VectorEnv(2, 2, 2, invalid_action="raise")
    _, info = raising.reset(seed=1)
    for _ in range(200):
        mask = info["action_mask"]
        if not mask.all(axis=1).all():
            i = int(np.flatnonzero(~mask.all(axis=1))[0])
            actions = mask.argmax(axis=1)
            actions[i] = int(np.flatnonzero(~mask[i])[0])
            with pytest.raises(IllegalActionError, match=f"env {i}"):
                raising.step(actions)
            break
        _, _, _, _, info = raising.step(mask.argmax(axis=1))
    else:
        pytest.fail("never met an illegal move")


def test_vector_render():
    vec = Game2048VectorEnv(2, 3, 3, render_mode="ansi")
    vec.reset(seed=0)
    frames = vec.render()
    assert len(frames) == 2 and all(len(f.splitlines()) == 3 for f in frames)


def test_a_time_limit_truncates_each_env_and_resets_it_on_its_next_step():
    """``max_episode_steps`` counts each env's steps, illegal ones included: always pressing UP, an env that is
    still playing is truncated at step 5, and the step after starts its new game (its action ignored)."""
    envs = Game2048VectorEnv(num_envs=3, rows=2, cols=2, max_episode_steps=5)
    envs.reset(seed=0)
    up = np.zeros(3, np.int64)
    for step in range(1, 6):
        _, _, terminated, truncated, info = envs.step(up)
        assert not terminated.any() and (info["moves"] + info["illegal_moves"] == step).all()
        assert truncated.all() == (step == 5) and truncated.any() == (step == 5)
    _, reward, terminated, truncated, info = envs.step(up)  # the new games start
    assert not truncated.any() and (reward == 0).all() and (info["moves"] + info["illegal_moves"] == 0).all()
    assert gym.make_vec("Solved2048-2x2-v1", num_envs=2).unwrapped.max_episode_steps == 64
    with pytest.raises(ValueError, match="max_episode_steps"):
        Game2048VectorEnv(num_envs=1, max_episode_steps=0)
