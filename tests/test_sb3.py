"""Real stable-baselines3 training through the env: MaskablePPO must only ever play legal moves."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest

import env2048  # noqa: F401  (registers the envs: the test must pass when run alone)

pytest.importorskip("sb3_contrib")


def test_maskable_ppo_smoke_run_plays_only_legal_moves():
    from sb3_contrib import MaskablePPO
    from sb3_contrib.common.maskable.utils import get_action_masks
    from stable_baselines3.common.callbacks import BaseCallback

    class CountIllegal(BaseCallback):
        def __init__(self):
            super().__init__()
            self.illegal = 0
            self.steps = 0

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                self.illegal += info["illegal_moves"]  # cumulative per episode: any illegal move makes it > 0
            self.steps += 1
            return True

    env = gym.make("Solved2048-3x3-v1", obs_mode="onehot")
    model = MaskablePPO("MlpPolicy", env, n_steps=128, batch_size=64, n_epochs=1, seed=0, device="cpu")
    counter = CountIllegal()
    model.learn(total_timesteps=384, callback=counter)
    assert counter.steps >= 384 and counter.illegal == 0
    vec = model.get_env()
    obs = vec.reset()
    masks = get_action_masks(vec)
    assert masks.shape == (1, 4) and masks.any()
    action, _ = model.predict(obs, action_masks=masks, deterministic=True)
    assert masks[0, int(action[0])]
    # Without masks an untrained policy does play illegal moves sometimes, so the zero above is the mask's doing.
    plain = gym.make("Solved2048-3x3-v1", obs_mode="onehot")
    obs, info = plain.reset(seed=0)
    illegal = 0
    for _ in range(300):
        a, _ = model.predict(obs, deterministic=False)
        obs, _, term, _, info = plain.step(int(a))
        if term:
            illegal += info["illegal_moves"]
            obs, info = plain.reset()
    illegal += info["illegal_moves"]
    assert illegal > 0


@pytest.mark.slow
def test_subprocess_workers_make_our_envs_by_module_prefixed_id():
    """SB3's SubprocVecEnv with two workers on the oracle env.  Gymnasium 1.x has no plugin registration, so a
    worker that never imported env2048 knows no ``Solved2048-*`` id: ``env2048:Solved2048-2x2`` imports it first
    (docs: getting started).  Each worker's env carries the oracle's Q-values and regret in ``info``."""
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import SubprocVecEnv

    from oracle import Oracle

    Oracle.for_board("2x2", progress=False)  # the cached table, built here once rather than by both workers
    vec = make_vec_env(
        "env2048:Solved2048-2x2", n_envs=2, seed=0, vec_env_cls=SubprocVecEnv, env_kwargs={"oracle": True}
    )
    try:
        obs = vec.reset()
        assert obs.shape == (2, 2, 2)
        regrets = []
        for _ in range(20):
            masks = np.array(vec.env_method("action_masks"))
            obs, rewards, dones, infos = vec.step(masks.argmax(axis=1))  # the first legal move
            assert all(len(info["q_values"]) == 4 and info["regret"] >= 0 for info in infos)
            regrets += [info["regret"] for info in infos]
        assert len(regrets) == 40
    finally:
        vec.close()


@pytest.mark.slow
def test_sb3_models_trained_on_a_v2_id_are_scored_by_the_suite(tmp_path, capsys):
    """PPO and DQN from SB3, trained a few hundred steps on the plain v2 env (no masks: an illegal move ends
    the game), are scored exactly from their saved files by ``suite run --agent sb3:PATH``; a model of another
    board is refused with a message that names both."""
    from stable_baselines3 import DQN, PPO

    from experiments.suite.__main__ import main

    small = {"PPO": {"n_steps": 64, "batch_size": 32, "n_epochs": 1}, "DQN": {"learning_starts": 50}}
    for algorithm in (PPO, DQN):
        name = algorithm.__name__
        model = algorithm("MlpPolicy", gym.make("Solved2048-2x4-v2"), seed=0, device="cpu", **small[name])
        model.learn(256)
        model.save(tmp_path / f"{name}.zip")
        out = tmp_path / f"runs-{name}"
        assert (
            main(
                [
                    "run",
                    "--agent",
                    f"sb3:{tmp_path / name}.zip",
                    "--tasks",
                    "2x4",
                    "--seeds",
                    "1",
                    "--out",
                    str(out),
                    "--quiet",
                ]
            )
            == 0
        )
        cell = json.loads((out / "runs" / "2x4" / "seed-0.json").read_text())
        assert cell["method"] == "exact" and 0 <= cell["normalized"] < 1, cell
    other = PPO("MlpPolicy", gym.make("Solved2048-2x3-v2"), n_steps=64, batch_size=32, seed=0, device="cpu")
    other.save(tmp_path / "other.zip")
    assert (
        main(
            [
                "run",
                "--agent",
                f"sb3:{tmp_path}/other.zip",
                "--tasks",
                "2x4",
                "--seeds",
                "1",
                "--out",
                str(tmp_path / "refused"),
                "--quiet",
            ]
        )
        != 0
    )
    err = capsys.readouterr().err
    assert (
        "PPO was trained on 2x3 boards (observation space Box(0, 7, (2, 3), uint8)); this task is 2x4 "
        "(observation space Box(0, 9, (2, 4), uint8), or one-hot Box(0, 1, (10, 2, 4), uint8))" in err
    ), err
