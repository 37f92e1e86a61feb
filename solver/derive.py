"""States follow from afterstates: the states of age a are the spawned children of the afterstates of ages a-2
(a 2-tile) and a-4 (a 4-tile), plus the start states of age a.  Format v2 and the compact work directory store
afterstates only and derive states with :func:`derive_states`."""

from __future__ import annotations

import numpy as np

from .forward import canonical_starts, merge_unique, spawn
from .spec import SolveSpec


def derive_states(spec: SolveSpec, age: int, after_m2: np.ndarray, after_m4: np.ndarray) -> np.ndarray:
    """Sorted unique canonical states (``uint64[n]``) of ``age`` from the sorted afterstates of ages ``age - 2``
    (``after_m2``) and ``age - 4`` (``after_m4``)."""
    runs = []
    if spec.spawns_two and after_m2.size:
        runs.append(spawn(after_m2, spec, four=False)[0])
    if spec.spawns_four and after_m4.size:
        runs.append(spawn(after_m4, spec, two=False)[1])
    starts, _ = canonical_starts(spec)
    at_age = starts[spec.ages(starts) == age] if starts.size else starts
    if at_age.size:
        runs.append(np.sort(at_age))
    return merge_unique(runs)
