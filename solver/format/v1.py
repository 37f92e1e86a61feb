"""Format v1 (``docs/table-format.md``): every state and afterstate as a ``uint64`` ID and a ``float64`` value.

Format v2 (:mod:`solver.format.v2`, what ``build`` writes by default) stores afterstates only, compactly coded.
Every dataset carries the SHA-256 of its raw little-endian bytes in its ``sha256`` attribute.
"""

from __future__ import annotations

import os
from pathlib import Path

import h5py
import numpy as np

from ..spec import SolveSpec
from .common import (
    LAYER_DATASETS,
    AgeCount,
    StartValues,
    TableReader,
    age_group,
    put_dataset,
    root_attributes,
    sha256_of,
)
from .v2 import write_index_and_start

__all__ = ["FORMAT_VERSION", "TableV1", "TableWriterV1"]

FORMAT_VERSION = 1


class TableWriterV1:
    """Writes one v1 table: ``write_age`` for every age (any order), then ``finish``.

    Data goes to ``OUT.partial`` and is renamed to ``OUT`` by ``finish``, so a table file that exists is
    complete; ``abort`` removes the partial file.
    """

    def __init__(self, out: str | os.PathLike, spec: SolveSpec, start_ids: np.ndarray, start_probs: np.ndarray):
        self.out = Path(out)
        self.partial = self.out.with_name(self.out.name + ".partial")
        self.spec = spec
        self.start_probs = start_probs
        self.starts = StartValues(spec, start_ids)
        self.file = h5py.File(self.partial, "w")

    def write_age(self, count: AgeCount, layer: dict[str, np.ndarray]) -> None:
        """Store one age: ``layer`` holds the five arrays of :data:`LAYER_DATASETS`."""
        g = self.file.create_group(age_group(count.age))
        g.attrs["age"] = count.age
        g.attrs["terminal"] = count.terminal
        for name in LAYER_DATASETS:
            put_dataset(g, name, layer[name])
        self.starts.take(count.age, layer["states"], layer["state_values"])

    def finish(self, counts: list[AgeCount]) -> dict:
        """Write the index, start states and root attributes, close and rename; returns the attributes."""
        f, spec = self.file, self.spec
        missing = [c.age for c in counts if age_group(c.age) not in f]
        if missing or not self.starts.complete:
            raise RuntimeError(f"table is incomplete: ages {missing[:5]} were never written")
        write_index_and_start(f, counts, self.starts.ids, self.start_probs, self.starts.values)
        attrs = {
            "format_version": FORMAT_VERSION,
            **root_attributes(spec, counts, self.start_probs, self.starts.values),
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


class TableV1(TableReader):
    """Read access to a v1 table (open it with :func:`Table`); a context manager (closes the HDF5 file)."""

    format_version = FORMAT_VERSION

    def layer(self, age: int, names=LAYER_DATASETS) -> dict[str, np.ndarray]:
        """The arrays of one age (empty arrays for an age with no states)."""
        key = age_group(int(age))
        if key not in self.file:
            return {
                "states": np.empty(0, np.uint64),
                "state_values": np.empty(0),
                "best_actions": np.empty(0, np.uint8),
                "afterstates": np.empty(0, np.uint64),
                "afterstate_values": np.empty(0),
            }
        g = self.file[key]
        return {name: g[name][...] for name in names}

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
