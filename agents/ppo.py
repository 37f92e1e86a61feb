"""Adapter: a trained sb3-contrib ``MaskablePPO`` model (one-hot observations) as an agent for the oracle.

Needs the ``rl`` extra (stable-baselines3, sb3-contrib, torch); imported only when used.
"""

from __future__ import annotations

import numpy as np

from env2048.engine import onehot

from .base import Agent

#: Boards per forward pass (the oracle's exact evaluation hands over whole layers of millions of boards).
CHUNK = 65536


class PPOAgent(Agent):
    """Plays ``model.predict(onehot(board), action_masks=legal, deterministic=True)``.

    ``model``: a ``MaskablePPO`` whose observation space is the env's ``obs_mode="onehot"`` one, ``Box(0, 1,
    (rows*cols + 2, rows, cols), uint8)``.  Deterministic; the seed is accepted for a uniform interface.
    """

    name = "ppo"

    def __init__(self, model, seed: int = 0):
        shape = model.observation_space.shape
        if len(shape) != 3 or shape[0] != shape[1] * shape[2] + 2:
            raise ValueError(f"expected a model trained on one-hot observations (K, rows, cols), got shape {shape}")
        self.model, self.seed = model, seed
        self.channels, self.rows, self.cols = (int(x) for x in shape)

    @classmethod
    def load(cls, path, seed: int = 0) -> PPOAgent:
        from sb3_contrib import MaskablePPO

        return cls(MaskablePPO.load(str(path), device="cpu"), seed=seed)

    def act_batch(self, boards, masks):
        boards = np.asarray(boards, np.uint8).reshape(-1, self.rows * self.cols)
        masks = np.asarray(masks, bool).reshape(-1, 4)
        if boards.size and boards.max() >= self.channels:
            raise ValueError(f"exponent {boards.max()} has no one-hot plane (the model has {self.channels})")
        out = np.empty(boards.shape[0], np.int64)
        for lo in range(0, boards.shape[0], CHUNK):
            obs = onehot(boards[lo : lo + CHUNK], self.channels).reshape(-1, self.channels, self.rows, self.cols)
            actions, _ = self.model.predict(obs, action_masks=masks[lo : lo + CHUNK], deterministic=True)
            out[lo : lo + CHUNK] = actions
        return out
