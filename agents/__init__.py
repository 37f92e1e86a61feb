"""Baseline agents for the benchmark: random, greedy and optimal (n-tuple TD, expectimax and PPO to come)."""

from __future__ import annotations

from .base import Agent
from .simple import GreedyAgent, OptimalAgent, RandomAgent

__all__ = ["Agent", "GreedyAgent", "OptimalAgent", "RandomAgent"]
