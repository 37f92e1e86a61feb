"""Pieces every table format shares: the error type, checksums, group names and the root attributes."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from env2048.pattern import Pattern

from ..spec import SolveSpec

#: relative tolerance under which two actions' values count as tied for "best"
TIE_TOLERANCE = 1e-12


@dataclass
class AgeCount:
    """Forward-pass counts of one age: states, afterstates and terminal states (what a table's index holds)."""

    age: int
    states: int
    afterstates: int
    terminal: int


#: Bump whenever a change could alter any stored number or the work directory: other versions' work directories
#: are refused.
SOLVER_VERSION = "2.0"
#: Format v2: actions whose Q-values differ by less than this many times the value code's error bound are tied
#: (see :func:`tie_tolerance`).
V2_TIE_BOUNDS = 2.5
#: The arrays of one age as the v1 format stores them (and as every reader's ``layer`` returns them).
LAYER_DATASETS = ("states", "state_values", "best_actions", "afterstates", "afterstate_values")


class TableError(ValueError):
    """A table that is missing, unreadable, truncated, of another format, or fails a checksum."""


def spec_from_attrs(attrs: dict) -> SolveSpec:
    """The spec a table's root attributes record (see :func:`root_attributes`)."""
    a = attrs
    pattern = Pattern.from_dict(json.loads(a["pattern"])) if "pattern" in a else None
    return SolveSpec(
        int(a["rows"]), int(a["cols"]), str(a["objective"]), float(a["p4"]), str(a["spawn_model"]), pattern
    )


class TableReader:
    """What every format's reader shares: the root attributes, the spec, the index and the start states of an
    open root HDF5 file (a table file, or a directory's manifest); a context manager that closes it."""

    def __init__(self, path, root: h5py.File):
        self.path = path
        self.file = root
        self.attrs = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in root.attrs.items()}
        self.spec = spec_from_attrs(self.attrs)
        self.ages = root["index/ages"][...]

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.file.close()

    def counts(self) -> list[AgeCount]:
        """Forward-pass counts of every age, in increasing age."""
        idx = self.file["index"]
        return [
            AgeCount(int(a), int(s), int(m), int(t))
            for a, s, m, t in zip(
                idx["ages"][...], idx["states"][...], idx["afterstates"][...], idx["terminal"][...], strict=True
            )
        ]

    def start(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ids uint64[m], probs float64[m], values float64[m])`` of the canonical start states."""
        g = self.file["start"]
        return g["ids"][...], g["probs"][...], g["values"][...]

    def stored_checksums(self) -> dict[str, str]:
        """``{dataset name in its file: sha256 attribute}`` of every dataset, the same names for both layouts
        (``index/ages``, ``ages/000004/values``, ...): two tables hold the same data iff these are equal."""
        return {name.split(":")[-1]: str(ds.attrs.get("sha256")) for name, ds in self.datasets()}

    def content_digest(self) -> str:
        """sha256 of the ``{dataset: sha256}`` checksums (sorted, as JSON): one fingerprint of the table's content,
        read from attributes only (the suite pins it; the oracle server reports it)."""
        checksums = dict(sorted(self.stored_checksums().items()))
        return hashlib.sha256(json.dumps(checksums, sort_keys=True).encode()).hexdigest()

    def missing_ages(self) -> list[int]:
        """Ages of the index whose group is not in the file (a damaged table)."""
        present = set(self.file["ages"]) if "ages" in self.file else set()
        return [int(a) for a in self.ages if f"{int(a):06d}" not in present]


def sha256_of(array: np.ndarray) -> str:
    """Hex SHA-256 of an array's raw little-endian bytes in C order."""
    data = np.ascontiguousarray(array)
    if data.dtype.byteorder == ">":
        data = data.byteswap().view(data.dtype.newbyteorder("<"))
    return hashlib.sha256(data.view(np.uint8).reshape(-1)).hexdigest()


def age_group(age: int) -> str:
    return f"ages/{age:06d}"


def board_text(grid: np.ndarray) -> str:
    """``"2,0,0/0,2,0/0,0,0"``: tile values, rows separated by ``/``."""
    return "/".join(",".join(str(1 << int(v)) if v else "0" for v in row) for row in grid)


def put_dataset(group: h5py.Group, name: str, data: np.ndarray) -> None:
    """A dataset with its ``sha256`` attribute."""
    ds = group.create_dataset(name, data=data)
    ds.attrs["sha256"] = sha256_of(data)


def expected_start_value(start_probs, start_values) -> float:
    """V*(start): the start states' values weighted by their probabilities, summed exactly (``math.fsum``) so
    that its last bits do not depend on the CPU or the numpy build (a BLAS dot product's do: 1 ulp apart on 3x3
    between two machines)."""
    return math.fsum(np.multiply(np.asarray(start_probs, np.float64), np.asarray(start_values, np.float64)).tolist())


def root_attributes(spec: SolveSpec, counts: list[AgeCount], start_probs, start_values) -> dict:
    """The root attributes every format writes (``format_version`` aside)."""
    ages = np.array([c.age for c in counts], np.int64)
    T = spec.tables
    group, n_sym = ("D4", 8) if spec.rows == spec.cols else ("D2", 4)
    group = f"{group} ({n_sym} symmetries)" if T.sym_perm.shape[0] == n_sym else f"{T.sym_perm.shape[0]} of {group}'s"
    attrs = {
        "solver_version": SOLVER_VERSION,
        "rows": spec.rows,
        "cols": spec.cols,
        "board": spec.board,
        "objective": spec.objective,
        "target_exponent": spec.target_exponent or 0,
        "p4": spec.p4,
        "spawn_model": spec.spawn,
        "symmetry_group": group,
        "n_symmetries": int(T.sym_perm.shape[0]),
        "states": int(sum(c.states for c in counts)),
        "afterstates": int(sum(c.afterstates for c in counts)),
        "terminal_states": int(sum(c.terminal for c in counts)),
        "min_age": int(ages.min()) if ages.size else 0,
        "max_age": int(ages.max()) if ages.size else 0,
        "start_value": expected_start_value(start_probs, start_values),
    }
    if spec.pattern is not None:
        attrs["pattern"] = spec.pattern.to_json()
    return attrs


class StartValues:
    """The start states' values, collected while a writer stores ages (every writer needs them for ``/start``).

    ``ids``: the canonical start states (``uint64[m]``, sorted); ``values`` fills in as ages arrive."""

    def __init__(self, spec: SolveSpec, ids: np.ndarray):
        self.ids = ids
        self.values = np.full(ids.size, np.nan)
        self._by_age: dict[int, list[int]] = {}
        for i, sid in enumerate(ids):
            self._by_age.setdefault(int(spec.ages(sid)), []).append(i)

    def needs(self, age: int) -> bool:
        """Whether ``age`` holds start states (its writer must then pass that age's states and values)."""
        return int(age) in self._by_age

    def take(self, age: int, states: np.ndarray, state_values: np.ndarray) -> None:
        """Record the values of the start states of ``age`` from its sorted states and their values."""
        for i in self._by_age.get(int(age), []):
            k = int(np.searchsorted(states, self.ids[i]))
            if k >= states.size or states[k] != self.ids[i]:
                raise RuntimeError(f"start state {int(self.ids[i]):#x} is missing from its age layer")
            self.values[i] = state_values[k]

    @property
    def complete(self) -> bool:
        return not np.isnan(self.values).any()


def table_bytes(path) -> int:
    """Size on disk of a table file, or of every file of a table directory."""
    path = Path(path)
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def tie_tolerance(attrs: dict) -> tuple[float, float]:
    """``(relative to max(1, |best Q|), absolute)`` within which a table's actions count as equally good.

    v1 stores values exactly: ``TIE_TOLERANCE`` (rounding).  v2 values carry an error of up to ``e`` (relative
    ``r``, absolute ``a``), so two Q-values may swap order if they differ by less than about ``2e``: actions
    within ``TIE_TOLERANCE + 2.5 r`` (relative) ``+ 2.5 a`` of the best are all optimal.  Every action optimal
    in the exact solution is then optimal in v2 too, and the sets are the same wherever the exact best and
    second-best Q-values differ by more than about ``4.5 r`` (relative) ``+ 4.5 a``."""
    if int(attrs["format_version"]) == 1:
        return TIE_TOLERANCE, 0.0
    rel, absolute = float(attrs["value_error_relative"]), float(attrs["value_error_absolute"])
    return TIE_TOLERANCE + V2_TIE_BOUNDS * rel, V2_TIE_BOUNDS * absolute
