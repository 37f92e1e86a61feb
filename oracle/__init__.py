"""Exact optimal values, Q-values and regret of any board, from the solver's tables."""

from __future__ import annotations

from .oracle import BUILDABLE, BoardNotInTable, Oracle, cache_dir

__all__ = ["BUILDABLE", "BoardNotInTable", "Oracle", "cache_dir"]
