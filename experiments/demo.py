"""`make demo`: play a few seeded games on 3x3 and 4x3 and print them.

A greedy player (largest immediate reward, ties broken by the first of LEFT, UP, RIGHT, DOWN) plays; the
final boards and scores are printed, and on 3x3 the oracle prices every move (the first run builds the exact
3x3 table into ~/.cache/solved2048, about 20 s).  Replaced by the full benchmark once the solver and oracle exist.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

import env2048  # noqa: F401  (registers the environments)
from env2048 import board as packed

PREFERENCE = (3, 0, 1, 2)


def greedy_action(obs: np.ndarray, mask: np.ndarray) -> int:
    rows, cols = obs.shape
    best, best_reward = -1, -1
    for a in PREFERENCE:
        if mask[a]:
            _, reward = packed.move(packed.pack(obs), a, rows, cols)
            if reward > best_reward:
                best, best_reward = a, reward
    return best


def play(env_id: str, seed: int) -> None:
    env = gym.make(env_id, render_mode="ansi")
    obs, info = env.reset(seed=seed)
    print(f"{env_id}, seed {seed}: start\n{env.render()}")
    # Solved2048-3x3 carries the exact oracle (its table is built into the cache on first use): price each move.
    priced = "q_values" in info
    if priced:
        print(f"optimal expected score from here: {np.nanmax(info['q_values']):.2f}")
    terminated, regret = False, 0.0
    while not terminated:
        obs, _, terminated, _, info = env.step(greedy_action(obs, info["action_mask"]))
        regret += info.get("regret", 0.0)
    print(f"game over after {info['moves']} moves: score {info['score']}, max tile {info['max_tile']}")
    if priced:
        print(f"greedy gave away {regret:.2f} points of expected score against optimal play (sum of move regrets)")
    print(env.render())


def main() -> None:
    for env_id in ("Solved2048-3x3", "Solved2048-4x3"):
        for seed in (0, 1):
            play(env_id, seed)


if __name__ == "__main__":
    main()
