"""Potential-based reward shaping by the merge score, a declared option of the suite's SB3 trainers.

The shaped reward of a transition s -> s' is ``r + gamma * phi(s') - phi(s)``, with ``phi = 0`` once the game has
ended: shaping of this form leaves the optimal policies of the discounted task unchanged (Ng, Harada and Russell,
1999), so a learner is still scored on the task as it is, only taught by a denser signal.

``phi(s)`` is the merge score the board's tiles stand for: a tile ``2**e`` (e >= 2) made from 2-tiles paid
``(e - 1) * 2**e`` points in merges, so ``phi`` sums that over the tiles.  On a task of success (make the tile
``2**K``) only the tiles below the goal count (an endgame's fixed tiles, larger, never move), divided by what the
goal tile itself would pay, ``(K - 1) * 2**K``: a step's shaping is then a fraction of the success reward 1.
"""

from __future__ import annotations

import numpy as np

#: The shapings a trainer may declare.
SHAPINGS = ("none", "merge")


def merge_potential(exponents: np.ndarray, goal_exponent: int | None = None) -> np.ndarray:
    """``phi`` of boards ``uint8 (n, ...)`` of tile exponents -> ``float64 (n,)``: the sum of ``(e - 1) * 2**e``
    over tiles with ``e >= 2`` (and ``e < goal_exponent``, divided by ``(K - 1) * 2**K``, when a goal is given)."""
    e = np.asarray(exponents, np.int64).reshape(len(exponents), -1)
    paid = np.where(e >= 2, (e - 1) * (np.int64(1) << e), 0)
    if goal_exponent is None:
        return paid.sum(axis=1).astype(np.float64)
    paid = np.where(e < goal_exponent, paid, 0)
    return paid.sum(axis=1) / float((goal_exponent - 1) * (1 << goal_exponent))


def onehot_exponents(observations: np.ndarray) -> np.ndarray:
    """Tile exponents ``uint8 (n, rows, cols)`` of one-hot observations ``uint8 (n, channels, rows, cols)``."""
    return np.asarray(observations).argmax(axis=1).astype(np.uint8)


def shaped_vec_env(venv, gamma: float, goal_exponent: int | None = None):
    """The SB3 ``VecEnv`` ``venv`` (one-hot observations) with its rewards shaped by :func:`merge_potential`:
    ``r + gamma * phi(s') - phi(s)``, where ``s'`` of a finished game is its end, worth 0.  Each env's unshaped
    reward stays in ``infos[i]["unshaped_reward"]``."""
    from stable_baselines3.common.vec_env import VecEnvWrapper

    class ShapedVecEnv(VecEnvWrapper):
        def reset(self):
            obs = self.venv.reset()
            self.potential = merge_potential(onehot_exponents(obs), goal_exponent)
            return obs

        def step_wait(self):
            obs, rewards, dones, infos = self.venv.step_wait()
            after = merge_potential(onehot_exponents(obs), goal_exponent)  # a finished env's obs: the next game's
            reached = np.where(dones, 0.0, after)
            shaped = rewards + gamma * reached - self.potential
            for i, info in enumerate(infos):
                info["unshaped_reward"] = float(rewards[i])
            self.potential = after
            return obs, shaped.astype(np.float32), dones, infos

    return ShapedVecEnv(venv)
