"""Deprecated: moved to :mod:`solver.format` (ranking, elias_fano, quantise) and :mod:`solver.bits`."""

from ._moved import moved

__getattr__ = moved(
    "solver.codec",
    (
        "solver.format.ranking",
        "solver.format.elias_fano",
        "solver.format.quantise",
        "solver.bits",
    ),
)
