"""Deprecated: moved to :mod:`solver.format` (solver.format.v2)."""

from ._moved import moved

__getattr__ = moved("solver.table_v2", ("solver.format.v2",))
