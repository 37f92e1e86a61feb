"""``verify``: checksums, layer invariants and Bellman residuals of a table, re-derived with the public game API.

The residual check recomputes sampled values from their successors with :mod:`env2048.board` (``move``,
``spawn_outcomes``, ``canonical``) in plain Python, independently of the solver's numba kernels.  On a v2 table
(values stored within an error bound, states derived from afterstates) a residual may reach a few times the
value code's bound, and the derived state counts are checked against the index.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
from tqdm.auto import tqdm

from env2048 import board as B
from env2048.rules import FAILURE, ILLEGAL, SUCCESS, reference_outcome

from .format import Table, board_text
from .format.common import tie_tolerance

#: A recomputed value may differ from the stored one by this much, relative to max(1, |value|) (v1 tables).
RESIDUAL_TOLERANCE = 1e-9
#: On v2 tables: this many times the value code's error bound (each of a residual's two sides carries the
#: stored values' error).
V2_RESIDUAL_BOUNDS = 4.0


def residual_tolerance(attrs: dict) -> tuple[float, float]:
    """``(relative to max(1, |value|), absolute)`` tolerance of a recomputed value against a stored one."""
    if int(attrs["format_version"]) == 1:
        return RESIDUAL_TOLERANCE, 0.0
    rel, absolute = float(attrs["value_error_relative"]), float(attrs["value_error_absolute"])
    return max(RESIDUAL_TOLERANCE, V2_RESIDUAL_BOUNDS * rel), V2_RESIDUAL_BOUNDS * absolute


@dataclass
class VerifyReport:
    bad_checksums: list[str] = field(default_factory=list)
    layer_errors: list[str] = field(default_factory=list)
    value_errors: list[str] = field(default_factory=list)
    checked_states: int = 0
    checked_afterstates: int = 0
    checked_ages: int = 0
    max_residual: float = 0.0

    @property
    def ok(self) -> bool:
        return not (self.bad_checksums or self.layer_errors or self.value_errors)


def _aggregate(spawn: str, p4: float, v2: list[float], v4: list[float]) -> float:
    if spawn == "random":
        n = max(len(v2), len(v4))
        return ((1 - p4) * sum(v2) + p4 * sum(v4)) / n
    if spawn == "adversarial":
        return min(v2 + v4)
    pick = max if spawn == "optimistic" else min
    return (1 - p4) * (pick(v2) if v2 else 0.0) + p4 * (pick(v4) if v4 else 0.0)


def canonical_with(ids, rows: int, cols: int, sym_perm: np.ndarray):
    """Canonical form (minimum ID over the symmetries ``sym_perm``, e.g. a pattern's subgroup) in numpy: a board
    or ``uint64[n]``."""
    arr = np.asarray(ids, np.uint64)
    flat = B.unpack(arr.reshape(-1), rows, cols).reshape(arr.size, rows * cols)
    images = np.stack([B.pack(flat[:, perm].reshape(-1, rows, cols)) for perm in sym_perm])
    out = images.min(axis=0)
    return np.uint64(out[0]) if arr.ndim == 0 else out


def verify_table(path, samples: int = 1000, seed: int = 0, progress: bool = True, ages: int | None = None):
    """Checksums of every dataset, the structure of each layer, Bellman residuals of ``samples`` random states
    and afterstates, and the start values.  ``ages``: check the layers of only that many ages, drawn at random
    in proportion to their size (and draw the samples from them), for tables too big to re-derive every age's
    states (a v2 table stores afterstates only); default every age."""
    report = VerifyReport()
    with Table(path) as table:
        spec = table.spec
        rows, cols = spec.rows, spec.cols
        sym_perm = spec.tables.sym_perm

        def canonical_of(ids):
            return canonical_with(ids, rows, cols, sym_perm)

        report.bad_checksums = table.bad_checksums()
        report.layer_errors += [f"age {a} is in the index but missing from the table" for a in table.missing_ages()]
        if report.layer_errors:
            return report
        rel_tol, abs_tol = residual_tolerance(table.attrs)
        tie_rel, tie_abs = tie_tolerance(table.attrs)  # best actions: ties as the table defines them

        @functools.lru_cache(maxsize=8)
        def layer(age: int):
            return table.layer(age)

        def lookup(ids: np.ndarray, values: np.ndarray, key, what: str) -> float:
            k = int(np.searchsorted(ids, key))
            if k >= ids.size or ids[k] != key:
                raise KeyError(f"{what} {int(key):#x} is not in its layer")
            return float(values[k])

        rng = np.random.default_rng(seed)
        counts = table.counts()
        if ages is not None and ages < 1:
            raise ValueError(f"ages must be at least 1, got {ages}")
        if ages is not None and ages < len(counts):
            weights = np.array([c.states + c.afterstates for c in counts], float)
            chosen = rng.choice(len(counts), size=ages, replace=False, p=weights / weights.sum())
            counts = [counts[int(i)] for i in sorted(chosen)]
        report.checked_ages = len(counts)
        for c in counts:
            lay = table.layer(c.age, names=("states", "afterstates"))
            for name in ("states", "afterstates"):
                ids = lay[name]
                if ids.size != getattr(c, name):
                    report.layer_errors.append(f"age {c.age}: {ids.size} {name}, index says {getattr(c, name)}")
                if ids.size > 1 and not np.all(ids[1:] > ids[:-1]):
                    report.layer_errors.append(f"age {c.age}: {name} are not sorted and unique")
                if ids.size and np.any(canonical_of(ids) != ids):
                    report.layer_errors.append(f"age {c.age}: some {name} are not canonical")

        sizes = np.array([c.states + c.afterstates for c in counts], float)
        picks = rng.choice(len(counts), size=samples, p=sizes / sizes.sum()) if samples and sizes.sum() else []
        rules = spec.rules
        score = spec.objective == "score"
        for pick in tqdm(sorted(picks), desc="verify", disable=not progress, unit=" samples"):
            c = counts[int(pick)]
            lay = layer(c.age)
            as_state = rng.random() < c.states / (c.states + c.afterstates)
            try:
                if as_state:
                    i = int(rng.integers(c.states))
                    s = lay["states"][i]
                    qs = []
                    for a in range(4):
                        after, reward = B.move(s, a, rows, cols)
                        outcome = reference_outcome(s, after, rules)
                        if outcome == ILLEGAL:
                            qs.append(None)
                            continue
                        r = float(reward) if score else 0.0
                        if outcome == SUCCESS:
                            qs.append(r + 1.0)
                        elif outcome == FAILURE:
                            qs.append(r)
                        else:
                            ca = canonical_of(after)
                            qs.append(r + lookup(lay["afterstates"], lay["afterstate_values"], ca, "afterstate"))
                    legal = [q for q in qs if q is not None]
                    expected = max(legal) if legal else 0.0
                    got = float(lay["state_values"][i])
                    report.checked_states += 1
                    best_bits = int(lay["best_actions"][i])
                    if legal:
                        tol = tie_rel * max(1.0, abs(expected)) + tie_abs
                        for a, q in enumerate(qs):
                            if q is not None and q >= expected - tol and not (best_bits >> a) & 1:
                                report.value_errors.append(f"state {int(s):#x}: optimal action {a} not in best_actions")
                            if (best_bits >> a) & 1 and (q is None or q < expected - tol):
                                report.value_errors.append(f"state {int(s):#x}: action {a} marked best but is not")
                    what = f"state {int(s):#x} (age {c.age})"
                else:
                    i = int(rng.integers(c.afterstates))
                    after = lay["afterstates"][i]
                    v2, v4 = [], []
                    children, _ = B.spawn_outcomes(after, rows, cols, spec.p4)
                    for child in children:
                        tile = B.max_exponent_of(child ^ after, rows, cols)
                        if (tile == 1 and not spec.spawns_two) or (tile == 2 and not spec.spawns_four):
                            continue
                        nxt = layer(c.age + (2 if tile == 1 else 4))
                        v = lookup(nxt["states"], nxt["state_values"], canonical_of(child), "state")
                        (v2 if tile == 1 else v4).append(v)
                    expected = _aggregate(spec.spawn, spec.p4, v2, v4)
                    got = float(lay["afterstate_values"][i])
                    report.checked_afterstates += 1
                    what = f"afterstate {int(after):#x} (age {c.age})"
            except KeyError as exc:
                report.value_errors.append(str(exc))
                continue
            residual = abs(expected - got)
            report.max_residual = max(report.max_residual, residual)
            if residual > rel_tol * max(1.0, abs(expected)) + abs_tol:
                report.value_errors.append(f"{what}: stored {got!r}, recomputed {expected!r}")

        ids, probs, values = table.start()
        for sid, v in zip(ids, values, strict=True):
            lay = layer(int(spec.ages(sid)))
            try:
                stored = lookup(lay["states"], lay["state_values"], sid, "start state")
            except KeyError as exc:
                report.value_errors.append(str(exc))
                continue
            if abs(stored - v) > rel_tol * max(1.0, abs(v)) + abs_tol:
                grid = board_text(B.unpack(sid, rows, cols))
                report.value_errors.append(f"start {grid}: value {v!r} differs from its layer's {stored!r}")
        if abs(float(np.dot(probs, values)) - float(table.attrs["start_value"])) > 1e-9:
            report.value_errors.append("start_value is not the probability-weighted sum of the start values")
    return report
