"""Baseline agents for the benchmark: random, greedy, optimal, n-tuple TD and expectimax (PPO: experiments)."""

from __future__ import annotations

from .base import Agent
from .expectimax import ExpectimaxAgent
from .ntuple import NTupleAgent
from .simple import GreedyAgent, OptimalAgent, RandomAgent

__all__ = ["Agent", "ExpectimaxAgent", "GreedyAgent", "NTupleAgent", "OptimalAgent", "RandomAgent"]
