"""Solved tables on disk (``docs/table-format.md``): :func:`Table` opens any version; format v1 lives here.

Format v1 stores every state and afterstate as a ``uint64`` ID and a ``float64`` value; format v2
(:mod:`solver.table_v2`, what ``build`` writes by default) stores afterstates only, compactly coded.  Every
dataset carries the SHA-256 of its raw little-endian bytes in its ``sha256`` attribute.
"""

from __future__ import annotations

import os
from pathlib import Path

import h5py
import numpy as np

from .common import (
    LAYER_DATASETS,
    SOLVER_VERSION,
    StartValues,
    TableError,
    TableReader,
    age_group,
    board_text,
    put_dataset,
    root_attributes,
    sha256_of,
)
from .spec import SolveSpec
from .table_v2 import MANIFEST, TableV2, write_index_and_start
from .workdir import AgeCount

__all__ = ["LAYER_DATASETS", "SOLVER_VERSION", "Table", "TableError", "TableV1", "TableWriterV1", "board_text",
           "sha256_of"]  # fmt: skip

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
        attrs = {"format_version": FORMAT_VERSION,
                 **root_attributes(spec, counts, self.start_probs, self.starts.values)}  # fmt: skip
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


def _open_root(path: Path) -> tuple[h5py.File, Path]:
    """The HDF5 file holding a table's root attributes: the file itself, or a directory's manifest."""
    if not path.exists():
        raise TableError(f"table {path} does not exist")
    manifest = path / MANIFEST if path.is_dir() else path
    if path.is_dir() and not manifest.exists():
        raise TableError(f"{path} is a directory without a manifest {MANIFEST}: not a (complete) v2 table")
    try:
        return h5py.File(manifest, "r"), manifest
    except OSError as exc:
        raise TableError(f"{manifest} is not a readable HDF5 table (truncated or not HDF5?): {exc}") from None


def Table(path: str | os.PathLike):  # noqa: N802 (a factory standing where the v1 class stood)
    """Open a solved table of any format: a :class:`TableV1` or a :class:`~solver.table_v2.TableV2` (both
    context managers with ``attrs``, ``spec``, ``ages``, ``counts()``, ``layer(age)``, ``start()``,
    ``datasets()`` and ``bad_checksums()``)."""
    path = Path(path)
    f, manifest = _open_root(path)
    attrs = f.attrs
    if "format_version" not in attrs or not attrs.get("complete", False):
        f.close()
        raise TableError(f"{path} is not a complete Solved2048 table (no format_version / complete flag)")
    version = int(attrs["format_version"])
    if version == 1:
        return TableV1(path, f)
    if version == 2:
        return TableV2(path, f, manifest)
    f.close()
    raise TableError(f"{path} has table format {version}; this code reads formats 1 and 2")


class TableV1(TableReader):
    """Read access to a v1 table (open it with :func:`Table`); a context manager (closes the HDF5 file)."""

    format_version = FORMAT_VERSION

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
