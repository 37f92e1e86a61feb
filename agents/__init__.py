"""Baseline agents for the benchmark: random, greedy, optimal, n-tuple TD and expectimax (PPO: experiments)."""

from __future__ import annotations

import env2048.kernel_cache  # noqa: F401  (numba caches the kernels user-wide: env2048.kernel_cache)

from .base import Agent
from .expectimax import ExpectimaxAgent
from .ntuple import NTupleAgent
from .simple import GreedyAgent, OptimalAgent, RandomAgent
from .wide_expectimax import WideExpectimaxAgent

__all__ = [
    "Agent",
    "ExpectimaxAgent",
    "GreedyAgent",
    "NTupleAgent",
    "OptimalAgent",
    "RandomAgent",
    "WideExpectimaxAgent",
]
