"""The golden seeded trajectory: one full 3x3 game with seed 0 and a fixed action rule.

``python tests/golden.py`` rewrites ``tests/fixtures/golden_3x3_seed0.json``; do that only when the rules or the
random-number protocol change on purpose (and say so in the commit).
"""

from __future__ import annotations

import json
import os

import numpy as np

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "golden_3x3_seed0.json")
ORDER = (3, 0, 1, 2, 0, 3)  # the action rule: first legal action of this order, rotated by the move number


def play_golden() -> dict:
    import gymnasium as gym

    import env2048  # noqa: F401

    env = gym.make("Solved2048-3x3", oracle=False)  # the game alone: the trajectory needs no table
    obs, info = env.reset(seed=0)
    record = {"boards": [obs.ravel().tolist()], "actions": [], "rewards": [], "afterstates": []}
    terminated = False
    t = 0
    while not terminated:
        order = ORDER[t % len(ORDER) :] + ORDER[: t % len(ORDER)]
        action = next(a for a in order if info["action_mask"][a])
        obs, reward, terminated, _, info = env.step(action)
        record["actions"].append(int(action))
        record["rewards"].append(float(reward))
        record["boards"].append(np.asarray(obs).ravel().tolist())
        record["afterstates"].append(info["afterstate"].ravel().tolist())
        t += 1
    record["score"] = int(info["score"])
    return record


if __name__ == "__main__":
    with open(FIXTURE, "w") as f:
        json.dump(play_golden(), f)
    print("wrote", FIXTURE)
