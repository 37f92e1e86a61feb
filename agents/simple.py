"""Baseline agents: uniformly random, greedy (largest immediate reward), and optimal (from the oracle)."""

from __future__ import annotations

import numpy as np

from env2048 import board as B

from .base import Agent

#: Tie-break order of the greedy and optimal agents: LEFT, UP, RIGHT, DOWN.
PREFERENCE = (3, 0, 1, 2)


class RandomAgent(Agent):
    """A uniformly random legal move.  ``action_probs`` gives the exact policy (uniform over legal moves)."""

    name = "random"
    symmetric = True
    cheap_to_evaluate = True

    def __init__(self, seed: int = 0):
        self.rng = np.random.default_rng(seed)

    def act_batch(self, boards, masks):
        masks = np.asarray(masks, bool)
        counts = masks.sum(axis=1)
        pick = (self.rng.random(masks.shape[0]) * np.maximum(counts, 1)).astype(np.int64)
        order = np.cumsum(masks, axis=1) - 1  # rank of each legal action among the legal ones
        hit = masks & (order == pick[:, None])
        return np.where(counts > 0, hit.argmax(axis=1), 0)

    def action_probs(self, boards, masks):
        masks = np.asarray(masks, bool)
        return masks / np.maximum(masks.sum(axis=1, keepdims=True), 1)


class GreedyAgent(Agent):
    """The allowed move with the largest merge reward; ties go to the first of LEFT, UP, RIGHT, DOWN.
    Deterministic (the seed is accepted for a uniform interface and unused)."""

    name = "greedy"
    deterministic = True
    cheap_to_evaluate = True

    def __init__(self, seed: int = 0):
        self.seed = seed

    def act_batch(self, boards, masks):
        boards = np.asarray(boards)
        rows, cols = boards.shape[-2:]
        ids = B.pack(boards.reshape(-1, rows, cols).astype(np.uint8))
        best_reward = np.full(ids.size, -1, np.int64)
        best = np.zeros(ids.size, np.int64)
        allowed = np.asarray(masks, bool).reshape(ids.size, 4)  # an endgame pattern allows fewer moves than B.move
        for a in PREFERENCE:
            after, reward = B.move(ids, a, rows, cols)
            better = (after != ids) & allowed[:, a] & (reward > best_reward)
            best_reward[better] = reward[better]
            best[better] = a
        return best


class OptimalAgent(Agent):
    """An optimal move from the oracle: the one with the largest stored Q-value, exact ties going to the first
    of LEFT, UP, RIGHT, DOWN.  Its exact value is V* on a v1 table whichever optimal move it picks, so exact
    evaluation may treat it as symmetric; on a v2 table (values within an error bound) it can differ from V* by
    a few times the bound where two moves are that close."""

    name = "optimal"
    deterministic = True
    symmetric = True
    cheap_to_evaluate = True

    def __init__(self, oracle, seed: int = 0):
        self.oracle = oracle
        self.seed = seed

    def act_batch(self, boards, masks):
        return self.actions_from_q(np.atleast_2d(self.oracle.q_values(np.asarray(boards).astype(np.int64))))

    @staticmethod
    def actions_from_q(q: np.ndarray) -> np.ndarray:
        """``int64[n]``: the moves this agent picks given its oracle's ``q float64 (n, 4)`` (NaN = illegal), so
        that exact evaluation, which looks the Q-values up anyway, need not look them up twice."""
        top = np.where(np.isnan(q), -np.inf, q).max(axis=1)
        out = np.zeros(q.shape[0], np.int64)
        for a in reversed(PREFERENCE):
            out[q[:, a] == top] = a
        return out
