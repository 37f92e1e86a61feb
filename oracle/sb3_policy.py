"""A trained Stable-Baselines3 policy (``MaskablePPO``, ``PPO``, ``A2C``, ...) as an agent of the oracle's protocol,
so that ``oracle.regret``, ``oracle.evaluate`` and the benchmark take a model as it is.

The observation encoding is read from the model's observation space: ``(rows*cols + 2, rows, cols)`` is the env's
``obs_mode="onehot"``, ``(rows, cols)`` its exponent board.  Nothing here imports SB3 (torch only, lazily, for
models without action masks); :class:`agents.ppo.PPOAgent` adds loading from a file.
"""

from __future__ import annotations

import inspect

import numpy as np

from env2048.engine import onehot

#: Boards per forward pass (the oracle's exact evaluation hands over whole layers of millions of boards).
CHUNK = 65536


def is_sb3_model(obj) -> bool:
    """True for a Stable-Baselines3 model (``predict``, ``policy`` and ``observation_space``)."""
    return all(hasattr(obj, name) for name in ("predict", "policy", "observation_space"))


class SB3Policy:
    """Plays a trained SB3 model deterministically, legal moves only.

    ``model``: observation space ``Box(0, 1, (rows*cols + 2, rows, cols), uint8)`` (one-hot) or ``(rows, cols)``
    (exponents).  A ``MaskablePPO`` gets the legal moves as ``action_masks``; another SB3 model plays its most
    probable legal move.  Deterministic; the seed is accepted for a uniform interface.
    """

    name = "sb3"

    def __init__(self, model, seed: int = 0):
        if not is_sb3_model(model):
            raise TypeError(f"{type(model).__name__} is not a Stable-Baselines3 model (needs predict, policy and "
                            "observation_space)")  # fmt: skip
        shape = tuple(int(x) for x in model.observation_space.shape)
        if len(shape) == 3 and shape[0] == shape[1] * shape[2] + 2:
            self.encoding = "onehot"
            self.channels, self.rows, self.cols = shape
        elif len(shape) == 2:
            self.encoding = "exponent"
            self.rows, self.cols = shape
            self.channels = self.rows * self.cols + 2
        else:
            raise ValueError(
                f"the model's observations have shape {shape}; expected the env's one-hot (rows*cols + 2, rows, "
                "cols) or exponent (rows, cols) encoding"
            )
        self.model, self.seed = model, seed
        self.maskable = "action_masks" in inspect.signature(model.predict).parameters

    def observe(self, boards: np.ndarray) -> np.ndarray:
        """The model's observations of exponent boards ``uint8 (n, rows*cols)``."""
        if self.encoding == "exponent":
            return boards.reshape(-1, self.rows, self.cols)
        return onehot(boards, self.channels).reshape(-1, self.channels, self.rows, self.cols)

    def act_batch(self, boards, masks):
        boards = np.asarray(boards, np.uint8).reshape(-1, self.rows * self.cols)
        masks = np.asarray(masks, bool).reshape(-1, 4)
        if boards.size and boards.max() >= self.channels:
            raise ValueError(f"exponent {boards.max()} has no one-hot plane (the model has {self.channels})")
        out = np.empty(boards.shape[0], np.int64)
        for lo in range(0, boards.shape[0], CHUNK):
            obs, legal = self.observe(boards[lo : lo + CHUNK]), masks[lo : lo + CHUNK]
            if self.maskable:
                actions, _ = self.model.predict(obs, action_masks=legal, deterministic=True)
            else:
                actions = self._best_legal(obs, legal)
            out[lo : lo + CHUNK] = actions
        return out

    def act(self, observation, info) -> int:
        return int(self.act_batch(np.asarray(observation)[None], np.asarray(info["action_mask"])[None])[0])

    def _best_legal(self, obs: np.ndarray, legal: np.ndarray) -> np.ndarray:
        import torch

        tensor, _ = self.model.policy.obs_to_tensor(obs)
        with torch.no_grad():
            probs = self.model.policy.get_distribution(tensor).distribution.probs.cpu().numpy()
        return np.where(legal, probs, -1.0).argmax(axis=1)
