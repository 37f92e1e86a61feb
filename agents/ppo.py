"""Adapter: a trained Stable-Baselines3 policy as an agent (the benchmark's ``ppo:PATH``).

The playing is :class:`oracle.sb3_policy.SB3Policy` (observation encoding read from the model; masks for
MaskablePPO, the best legal move otherwise); this adds the agent interface and loading a ``MaskablePPO`` file.
Needs the ``rl`` extra (stable-baselines3, sb3-contrib, torch); imported only when used.
"""

from __future__ import annotations

from oracle.sb3_policy import SB3Policy, is_sb3_model

from .base import Agent

__all__ = ["PPOAgent", "is_sb3_model"]


class PPOAgent(SB3Policy, Agent):
    """Plays a trained SB3 model deterministically, legal moves only (see :class:`oracle.sb3_policy.SB3Policy`)."""

    name = "ppo"

    @classmethod
    def load(cls, path, seed: int = 0) -> PPOAgent:
        from sb3_contrib import MaskablePPO

        return cls(MaskablePPO.load(str(path), device="cpu"), seed=seed)
