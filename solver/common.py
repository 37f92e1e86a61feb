"""Deprecated: moved to :mod:`solver.format` (solver.format.common)."""

from ._moved import moved

__getattr__ = moved("solver.common", ("solver.format.common",))
