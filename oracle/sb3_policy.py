"""Deprecated: the SB3 adapter lives in :mod:`oracle.agent` (``SB3Policy``, ``is_sb3_model``, ``as_policy``)."""

from __future__ import annotations

import warnings

from . import agent as _agent


def __getattr__(name: str):
    if name in ("SB3Policy", "is_sb3_model", "CHUNK"):
        warnings.warn(f"oracle.sb3_policy.{name} moved to oracle.agent.{name}", DeprecationWarning, stacklevel=2)
        return getattr(_agent, name)
    raise AttributeError(f"module 'oracle.sb3_policy' has no attribute {name!r}")
