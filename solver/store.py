"""The one HDF5 schema of a solved table (documented in ``docs/table-format.md``): writing and reading it.

Writers go through :func:`write_table`, readers through :class:`Table`.  Every dataset carries the SHA-256 of
its raw little-endian bytes in its ``sha256`` attribute.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import h5py
import numpy as np

from env2048 import board as B
from env2048.tables import board_tables

from .spec import SolveSpec
from .workdir import AgeCount

FORMAT_VERSION = 1
#: Bump whenever a change could alter any stored number: work directories of other versions are refused.
SOLVER_VERSION = "1.0"
LAYER_DATASETS = ("states", "state_values", "best_actions", "afterstates", "afterstate_values")


class TableError(ValueError):
    """A table file that is missing, unreadable, truncated, of another format, or fails a checksum."""


def sha256_of(array: np.ndarray) -> str:
    data = np.ascontiguousarray(array)
    if data.dtype.byteorder == ">":
        data = data.byteswap().view(data.dtype.newbyteorder("<"))
    return hashlib.sha256(data.view(np.uint8).reshape(-1)).hexdigest()


def age_group(age: int) -> str:
    return f"ages/{age:06d}"


def board_text(grid: np.ndarray) -> str:
    """``"2,0,0/0,2,0/0,0,0"``: tile values, rows separated by ``/``."""
    return "/".join(",".join(str(1 << int(v)) if v else "0" for v in row) for row in grid)


def _put(group: h5py.Group, name: str, data: np.ndarray) -> None:
    ds = group.create_dataset(name, data=data)
    ds.attrs["sha256"] = sha256_of(data)


class TableWriter:
    """Writes one table: ``write_age`` for every age (any order), then ``finish``.

    Data goes to ``OUT.partial`` and is renamed to ``OUT`` by ``finish``, so a table file that exists is
    complete; ``abort`` removes the partial file.
    """

    def __init__(self, out: str | os.PathLike, spec: SolveSpec, start_ids: np.ndarray, start_probs: np.ndarray):
        self.out = Path(out)
        self.partial = self.out.with_name(self.out.name + ".partial")
        self.spec = spec
        self.start_ids, self.start_probs = start_ids, start_probs
        self.start_values = np.full(start_ids.size, np.nan)
        self._start_ages = {}
        for i, sid in enumerate(start_ids):
            self._start_ages.setdefault(B.age(sid, spec.rows, spec.cols), []).append(i)
        self.file = h5py.File(self.partial, "w")

    def write_age(self, count: AgeCount, layer: dict[str, np.ndarray]) -> None:
        """Store one age: ``layer`` holds the five arrays of :data:`LAYER_DATASETS`."""
        g = self.file.create_group(age_group(count.age))
        g.attrs["age"] = count.age
        g.attrs["terminal"] = count.terminal
        for name in LAYER_DATASETS:
            _put(g, name, layer[name])
        states = layer["states"]
        for i in self._start_ages.get(count.age, []):
            k = int(np.searchsorted(states, self.start_ids[i]))
            if k >= states.size or states[k] != self.start_ids[i]:
                raise RuntimeError(f"start state {int(self.start_ids[i]):#x} is missing from its age layer")
            self.start_values[i] = layer["state_values"][k]

    def finish(self, counts: list[AgeCount]) -> dict:
        """Write the index, start states and root attributes, close and rename; returns the attributes."""
        f, spec = self.file, self.spec
        missing = [c.age for c in counts if age_group(c.age) not in f]
        if missing or np.isnan(self.start_values).any():
            raise RuntimeError(f"table is incomplete: ages {missing[:5]} were never written")
        ages = np.array([c.age for c in counts], np.int64)
        index = f.create_group("index")
        _put(index, "ages", ages)
        _put(index, "states", np.array([c.states for c in counts], np.int64))
        _put(index, "afterstates", np.array([c.afterstates for c in counts], np.int64))
        _put(index, "terminal", np.array([c.terminal for c in counts], np.int64))
        start = f.create_group("start")
        _put(start, "ids", self.start_ids)
        _put(start, "probs", self.start_probs)
        _put(start, "values", self.start_values)
        T = board_tables(spec.rows, spec.cols)
        attrs = {
            "format_version": FORMAT_VERSION,
            "solver_version": SOLVER_VERSION,
            "rows": spec.rows,
            "cols": spec.cols,
            "board": spec.board,
            "objective": spec.objective,
            "target_exponent": spec.target_exponent or 0,
            "p4": spec.p4,
            "spawn_model": spec.spawn,
            "symmetry_group": "D4 (8 symmetries)" if spec.rows == spec.cols else "D2 (4 symmetries)",
            "n_symmetries": int(T.sym_perm.shape[0]),
            "states": int(sum(c.states for c in counts)),
            "afterstates": int(sum(c.afterstates for c in counts)),
            "terminal_states": int(sum(c.terminal for c in counts)),
            "min_age": int(ages.min()) if ages.size else 0,
            "max_age": int(ages.max()) if ages.size else 0,
            "start_value": float(np.dot(self.start_probs, self.start_values)),
        }
        f.attrs.update(attrs)
        f.attrs["complete"] = True
        f.close()
        os.replace(self.partial, self.out)
        return attrs

    def abort(self) -> None:
        try:
            self.file.close()
        finally:
            self.partial.unlink(missing_ok=True)


class Table:
    """Read access to a solved table: ``Table(path)``; a context manager (closes the HDF5 file)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        if not self.path.exists():
            raise TableError(f"table file {self.path} does not exist")
        try:
            self.file = h5py.File(self.path, "r")
        except OSError as exc:
            raise TableError(f"{self.path} is not a readable HDF5 table (truncated or not HDF5?): {exc}") from None
        attrs = self.file.attrs
        if "format_version" not in attrs or not attrs.get("complete", False):
            self.file.close()
            raise TableError(f"{self.path} is not a complete Solved2048 table (no format_version / complete flag)")
        if int(attrs["format_version"]) != FORMAT_VERSION:
            self.file.close()
            raise TableError(
                f"{self.path} has table format {int(attrs['format_version'])}; this code reads format {FORMAT_VERSION}"
            )
        self.attrs = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in attrs.items()}
        self.spec = SolveSpec(
            int(attrs["rows"]), int(attrs["cols"]), str(attrs["objective"]), float(attrs["p4"]),
            str(attrs["spawn_model"]),
        )  # fmt: skip
        self.ages = self.file["index/ages"][...]

    def __enter__(self) -> Table:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.file.close()

    def counts(self) -> list[AgeCount]:
        idx = self.file["index"]
        return [
            AgeCount(int(a), int(s), int(m), int(t))
            for a, s, m, t in zip(idx["ages"][...], idx["states"][...], idx["afterstates"][...], idx["terminal"][...],
                                  strict=True)
        ]  # fmt: skip

    def layer(self, age: int, names=LAYER_DATASETS) -> dict[str, np.ndarray]:
        """The arrays of one age (empty arrays for an age with no states)."""
        key = age_group(int(age))
        if key not in self.file:
            return {
                "states": np.empty(0, np.uint64), "state_values": np.empty(0), "best_actions": np.empty(0, np.uint8),
                "afterstates": np.empty(0, np.uint64), "afterstate_values": np.empty(0),
            }  # fmt: skip
        g = self.file[key]
        return {name: g[name][...] for name in names}

    def start(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(ids uint64[m], probs float64[m], values float64[m])`` of the canonical start states."""
        g = self.file["start"]
        return g["ids"][...], g["probs"][...], g["values"][...]

    def datasets(self):
        """Every dataset of the file as ``(name, h5py.Dataset)``."""
        found = []
        self.file.visititems(lambda name, obj: found.append((name, obj)) if isinstance(obj, h5py.Dataset) else None)
        return found

    def bad_checksums(self) -> list[str]:
        """Names of the datasets whose bytes do not match their ``sha256`` attribute."""
        bad = []
        for name, ds in self.datasets():
            if ds.attrs.get("sha256") != sha256_of(ds[...]):
                bad.append(name)
        return bad
