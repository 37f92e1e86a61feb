"""Deprecated: a trained SB3 model plays through :class:`oracle.agent.SB3Policy` (``oracle.agent.as_policy``)
and loads with :func:`agents.sb3.load_policy`.  ``PPOAgent`` stays one release for old code."""

from __future__ import annotations

import warnings

from oracle.agent import SB3Policy, is_sb3_model

__all__ = ["PPOAgent", "is_sb3_model"]


class PPOAgent(SB3Policy):
    """Deprecated alias of :class:`oracle.agent.SB3Policy`."""

    def __init__(self, model, seed: int = 0):
        warnings.warn(
            "agents.ppo.PPOAgent is deprecated: use oracle.agent.as_policy(model), or agents.sb3.load_policy(path)",
            DeprecationWarning,
            stacklevel=2,
        )
        super().__init__(model)

    @classmethod
    def load(cls, path, seed: int = 0) -> SB3Policy:
        from .sb3 import load_policy

        return load_policy(path)
