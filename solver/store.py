"""Deprecated: moved to :mod:`solver.format` (solver.format.table, solver.format.v1, solver.format.common)."""

from ._moved import moved

__getattr__ = moved(
    "solver.store",
    (
        "solver.format.table",
        "solver.format.v1",
        "solver.format.common",
    ),
)
