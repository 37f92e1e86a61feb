"""Format v2 (``docs/table-format.md``): per-age Elias-Fano coded afterstate ranks and bit-packed value codes.

A table is one HDF5 file, or a directory holding ``table.h5`` (the manifest: root attributes, ``/index``,
``/start``) and one file per age, ``ages/{age:06d}.h5``.  Every per-age dataset is contiguous and aligned, so a
reader can memory-map it (:class:`MappedFile`) instead of reading it: ages are touched only when used.
"""

from __future__ import annotations

import mmap
import os
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np

from ..bits import words_for
from ..spec import SolveSpec
from . import elias_fano, quantise, ranking
from .common import (
    LAYER_DATASETS,
    SOLVER_VERSION,
    AgeCount,
    StartValues,
    TableError,
    TableReader,
    age_group,
    put_dataset,
    root_attributes,
    sha256_of,
    tie_tolerance,
)

FORMAT_VERSION = 2
ID_CODE = "elias-fano of board ranks within the age"
MANIFEST = "table.h5"
#: HDF5 data blocks start on this boundary so that they can be viewed as ``uint64`` words from a memory map.
ALIGNMENT = 64
V2_DATASETS = ("ids_upper", "ids_lower", "values")


def new_h5(path: Path) -> h5py.File:
    return h5py.File(path, "w", alignment_threshold=1, alignment_interval=ALIGNMENT)


@dataclass
class CodedLayer:
    """One age of a v2 table as stored: ``n`` afterstates (ranks ``< universe``) coded in ``upper`` / ``lower``
    (``uint64`` words, Elias-Fano with ``low_bits`` low bits; ``upper_bits`` = length of the upper bitvector) and
    their values in ``values`` (``uint64`` words, ``value_bits``-wide codes of kind ``value_code`` with
    ``value_base``)."""

    age: int
    terminal: int
    n: int
    universe: int
    low_bits: int
    upper_bits: int
    upper: np.ndarray
    lower: np.ndarray
    values: np.ndarray
    value_code: str
    value_bits: int
    value_base: int

    @classmethod
    def encode(cls, count: AgeCount, spec: SolveSpec, upper, lower, low_bits, values: np.ndarray, value_code: str):
        """An age from its coded IDs and its float64 values (coded here)."""
        words, width, base = quantise.encode_values(values, value_code)
        return cls.from_codes(count, spec, upper, lower, low_bits, words, value_code, width, base)

    @classmethod
    def from_codes(
        cls,
        count: AgeCount,
        spec: SolveSpec,
        upper,
        lower,
        low_bits,
        words,
        value_code: str,
        value_bits: int,
        value_base: int,
    ):
        """An age from its coded IDs and its already coded values."""
        universe = ranking.shape_universe(spec.rank_shape, count.age)
        return cls(
            count.age,
            count.terminal,
            count.afterstates,
            universe,
            low_bits,
            elias_fano.upper_bits_for(count.afterstates, universe, low_bits),
            upper,
            lower,
            words,
            value_code,
            value_bits,
            value_base,
        )

    def afterstates(self, spec: SolveSpec) -> np.ndarray:
        """Sorted canonical afterstate IDs, ``uint64[n]``."""
        return decode_boards(self.age, self.upper, self.lower, self.n, self.low_bits, spec)

    def afterstate_values(self) -> np.ndarray:
        """Decoded values, ``float64[n]`` (within the code's error bound of the solver's)."""
        return quantise.decode_values(self.values, self.n, self.value_bits, self.value_code, self.value_base)

    @property
    def id_bytes(self) -> int:
        return self.upper.nbytes + self.lower.nbytes

    def write(self, parent: h5py.Group) -> None:
        g = parent.create_group(age_group(self.age))
        for key in ("age", "terminal", "n", "universe", "low_bits", "upper_bits", "value_bits", "value_base"):
            g.attrs[key] = int(getattr(self, key))
        g.attrs["value_code"] = self.value_code
        put_dataset(g, "ids_upper", self.upper)
        put_dataset(g, "ids_lower", self.lower)
        put_dataset(g, "values", self.values)


def encode_boards(age: int, boards: np.ndarray, spec: SolveSpec) -> tuple[np.ndarray, np.ndarray, int]:
    """``(upper, lower, low_bits)``: Elias-Fano code of the ranks of sorted canonical boards (``uint64[n]``, the
    afterstates or the states) of one age."""
    shape = spec.rank_shape
    return elias_fano.ef_encode(ranking.shape_ranks(shape, boards, age), ranking.shape_universe(shape, age))


def decode_boards(age: int, upper, lower, n: int, low_bits: int, spec: SolveSpec) -> np.ndarray:
    """Inverse of :func:`encode_boards`: the sorted canonical boards (``uint64[n]``) of one age."""
    ranks = elias_fano.ef_decode(upper, lower, n, low_bits)
    return ranking.shape_boards(spec.rank_shape, ranks, age)


class TableWriterV2:
    """Writes a v2 table: ``write_age`` for every age (any order), then ``finish`` (or ``abort``).

    ``layout="file"`` writes ``OUT.partial`` and renames it to ``OUT``; ``layout="directory"`` writes
    ``OUT/ages/*.h5`` (each under a temporary name, then renamed) and the manifest ``OUT/table.h5`` last, so a
    directory with a manifest is complete.
    """

    def __init__(self, out, spec: SolveSpec, start_ids: np.ndarray, start_probs: np.ndarray, layout: str = "file"):
        if layout not in ("file", "directory"):
            raise ValueError(f"layout must be 'file' or 'directory', got {layout!r}")
        self.out = Path(out)
        self.layout = layout
        self.spec = spec
        self.value_code = quantise.value_code_for(spec.objective)
        self.start_probs = start_probs
        self.starts = StartValues(spec, start_ids)
        self.id_bytes = self.value_bytes = 0
        self.written: set[int] = set()
        if layout == "file":
            self.partial = self.out.with_name(self.out.name + ".partial")
            self.file = new_h5(self.partial)
        else:
            if self.out.exists() and not self.out.is_dir():
                raise ValueError(f"{self.out} exists and is not a directory")
            (self.out / "ages").mkdir(parents=True, exist_ok=True)
            (self.out / MANIFEST).unlink(missing_ok=True)
            self.partial = self.out / (MANIFEST + ".partial")
            self.file = None

    def write_age(self, layer: CodedLayer, states: np.ndarray, state_values: np.ndarray) -> None:
        """Store one coded age; ``states`` / ``state_values`` (sorted, float64) give the start states' values."""
        self.starts.take(layer.age, states, state_values)
        if self.file is not None:
            layer.write(self.file)
        else:
            write_age_file(self.out, layer)
        self.record_written(layer.age, layer.id_bytes, layer.values.nbytes)

    def record_written(self, age: int, id_bytes: int, value_bytes: int) -> None:
        """Count an age written into the directory by someone else (:func:`write_age_file` on a worker)."""
        self.id_bytes += int(id_bytes)
        self.value_bytes += int(value_bytes)
        self.written.add(int(age))

    def finish(self, counts: list[AgeCount]) -> dict:
        """Write the index, start states and root attributes, close and rename; returns the attributes."""
        missing = [c.age for c in counts if c.age not in self.written]
        if missing or not self.starts.complete:
            raise RuntimeError(f"table is incomplete: ages {missing[:5]} were never written")
        f = self.file if self.file is not None else new_h5(self.partial)
        attrs = root_attributes(self.spec, counts, self.start_probs, self.starts.values)
        n_after = max(1, attrs["afterstates"])
        rel, absolute = quantise.value_error_bound(self.value_code)
        attrs.update(
            {
                "format_version": FORMAT_VERSION,
                "layout": self.layout,
                "id_code": ID_CODE,
                "value_code": self.value_code,
                "value_error_relative": rel,
                "value_error_absolute": absolute,
                "states_stored": False,
                "id_bytes": int(self.id_bytes),
                "value_bytes": int(self.value_bytes),
                "bits_per_afterstate_id": 8.0 * self.id_bytes / n_after,
                "bits_per_afterstate_value": 8.0 * self.value_bytes / n_after,
            }
        )
        write_index_and_start(f, counts, self.starts.ids, self.start_probs, self.starts.values)
        f.attrs.update(attrs)
        f.attrs["complete"] = True
        f.close()
        os.replace(self.partial, self.out if self.layout == "file" else self.out / MANIFEST)
        return attrs

    def abort(self) -> None:
        try:
            if self.file is not None:
                self.file.close()
        finally:
            if self.layout == "file":
                self.partial.unlink(missing_ok=True)


def age_path(directory, age: int) -> Path:
    """The file of one age in a directory table: ``DIR/ages/{age:06d}.h5``."""
    return Path(directory) / "ages" / f"{int(age):06d}.h5"


def write_age_file(directory: Path, layer: CodedLayer) -> Path:
    """Write one age of a directory table, :func:`age_path`, under a temporary name then renamed into place (so a
    file present under its final name is complete); returns its path."""
    final = age_path(directory, layer.age)
    tmp = final.with_name(f"{final.name}.{os.getpid()}.partial")
    with new_h5(tmp) as f:
        layer.write(f)
    os.replace(tmp, final)
    return final


def write_index_and_start(f: h5py.File, counts, start_ids, start_probs, start_values) -> None:
    index = f.create_group("index")
    put_dataset(index, "ages", np.array([c.age for c in counts], np.int64))
    put_dataset(index, "states", np.array([c.states for c in counts], np.int64))
    put_dataset(index, "afterstates", np.array([c.afterstates for c in counts], np.int64))
    put_dataset(index, "terminal", np.array([c.terminal for c in counts], np.int64))
    start = f.create_group("start")
    put_dataset(start, "ids", start_ids)
    put_dataset(start, "probs", start_probs)
    put_dataset(start, "values", start_values)


class MappedFile:
    """A read-only memory map of one HDF5 file and views of its contiguous datasets (no copy, no read until a
    page is touched).  ``release(view)`` tells the kernel the pages of a view may be dropped."""

    def __init__(self, path: Path):
        self.path = path
        with open(path, "rb") as fh:
            self.size = os.fstat(fh.fileno()).st_size
            self.map = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) if self.size else None
        self.random = False

    def view(self, ds: h5py.Dataset, what: str) -> np.ndarray:
        n = int(np.prod(ds.shape))
        if n == 0:
            return np.zeros(0, ds.dtype)
        offset = ds.id.get_offset()
        if offset is None or ds.compression is not None or ds.chunks is not None or offset % 8:
            return ds[...]  # not mappable (repacked by another tool): read it
        end = offset + n * ds.dtype.itemsize
        if end > self.size:
            raise TableError(
                f"{self.path}: dataset {what} ends at byte {end:,}, past the end of the file "
                f"({self.size:,} bytes): the file is truncated"
            )
        return np.frombuffer(self.map, dtype=ds.dtype, count=n, offset=offset)

    def advise_random(self) -> None:
        """Tell the kernel the map is read at random (``MADV_RANDOM``: no read-ahead), for a table larger than RAM
        whose lookups would otherwise read pages around each one they need and evict useful ones."""
        if self.map is not None and not self.random:
            self.map.madvise(mmap.MADV_RANDOM)
            self.random = True

    def release(self, arrays) -> None:
        if self.map is None:
            return
        page = mmap.PAGESIZE
        base = np.frombuffer(self.map, np.uint8).__array_interface__["data"][0]
        for a in arrays:
            if a.size == 0 or a.base is None:
                continue
            start = a.__array_interface__["data"][0] - base
            if not 0 <= start < self.size:
                continue
            lo = start // page * page
            self.map.madvise(mmap.MADV_DONTNEED, lo, start + a.nbytes - lo)


class TableV2(TableReader):
    """Reader of a v2 table (file or directory); ages are opened on demand (see :meth:`coded_layer`)."""

    format_version = FORMAT_VERSION

    def __init__(self, path: Path, root: h5py.File, manifest: Path):
        super().__init__(path, root)
        self.manifest = manifest
        self.directory = self.attrs.get("layout") == "directory"
        self._counts = {c.age: c for c in self.counts()}
        self._root_map: MappedFile | None = None
        self._decoded: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    # -- ages ---------------------------------------------------------------------------------------------------
    def age_file(self, age: int) -> Path:
        return age_path(self.path, age) if self.directory else self.manifest

    def _group(self, age: int, f: h5py.File) -> h5py.Group:
        key = age_group(age)
        if key not in f:
            raise TableError(
                f"{self.path}: age {age} is listed in the index but its group {key} is missing from {f.filename}"
            )
        return f[key]

    def _open_age(self, age: int):
        """``(h5py.File, owned)`` holding the age's group."""
        if not self.directory:
            return self.file, False
        path = self.age_file(age)
        if not path.exists():
            raise TableError(f"{self.path}: age {age} is listed in the manifest but {path} is missing")
        try:
            return h5py.File(path, "r"), True
        except OSError as exc:
            raise TableError(f"{path} is not a readable HDF5 file (truncated?): {exc}") from None

    def coded_layer(self, age: int, verify: bool = False, mapped: MappedFile | None = None) -> CodedLayer:
        """The stored arrays of one age: memory-mapped views when ``mapped`` (the age's :class:`MappedFile`) is
        given, else read into memory.  ``verify`` checks the datasets' SHA-256 first."""
        age = int(age)
        if age not in self._counts:
            raise KeyError(f"age {age} is not in this table")
        f, owned = self._open_age(age)
        try:
            g = self._group(age, f)
            for name in V2_DATASETS:
                if name not in g:
                    raise TableError(f"{f.filename}: dataset {g.name}/{name} is missing")
            arrays = {}
            for name in V2_DATASETS:
                ds = g[name]
                where = f"{g.name}/{name}"
                try:
                    arrays[name] = mapped.view(ds, where) if mapped is not None else ds[...]
                except OSError as exc:
                    raise TableError(f"{f.filename}: cannot read {where} (truncated file?): {exc}") from None
                if verify and ds.attrs.get("sha256") != sha256_of(arrays[name]):
                    raise TableError(f"{f.filename}: checksum mismatch in {where} (the file is damaged)")
            a = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in g.attrs.items()}
            count = self._counts[age]
            if int(a["n"]) != count.afterstates:
                raise TableError(
                    f"{f.filename}: age {age} holds {a['n']} afterstates, the index says {count.afterstates}"
                )
            layer = CodedLayer(
                age,
                int(a["terminal"]),
                int(a["n"]),
                int(a["universe"]),
                int(a["low_bits"]),
                int(a["upper_bits"]),
                arrays["ids_upper"],
                arrays["ids_lower"],
                arrays["values"],
                str(a["value_code"]),
                int(a["value_bits"]),
                int(a["value_base"]),
            )
            need_upper = words_for(layer.upper_bits)
            need_lower = words_for(layer.n * layer.low_bits)
            need_values = words_for(layer.n * layer.value_bits)
            if (layer.upper.size, layer.lower.size, layer.values.size) != (need_upper, need_lower, need_values):
                raise TableError(f"{f.filename}: age {age}'s datasets have the wrong length (damaged table)")
            return layer
        finally:
            if owned:
                f.close()

    def map_age(self, age: int) -> MappedFile:
        """A :class:`MappedFile` of the file holding ``age`` (the whole table for the one-file layout)."""
        if not self.directory:
            if self._root_map is None:
                self._root_map = MappedFile(self.manifest)
            return self._root_map
        path = self.age_file(age)
        if not path.exists():
            raise TableError(f"{self.path}: age {age} is listed in the manifest but {path} is missing")
        return MappedFile(path)

    def afterstates_of(self, age: int) -> tuple[np.ndarray, np.ndarray]:
        """Decoded ``(afterstates uint64[m], afterstate_values float64[m])`` of an age (empty if no such age)."""
        if age not in self._counts:
            return np.empty(0, np.uint64), np.empty(0)
        if age not in self._decoded:
            if len(self._decoded) >= 6:
                self._decoded.pop(next(iter(self._decoded)))
            layer = self.coded_layer(age)
            self._decoded[age] = (layer.afterstates(self.spec), layer.afterstate_values())
        return self._decoded[age]

    def layer(self, age: int, names=LAYER_DATASETS) -> dict[str, np.ndarray]:
        """The v1 arrays of one age, decoded; states, their values and best actions are derived from the
        afterstates of this age and of ages - 2 and - 4 (see :func:`solver.derive.derive_states`)."""
        from ..backward import solve_states  # the Bellman step that derives a v2 table's states
        from ..derive import derive_states

        age = int(age)
        after, values = self.afterstates_of(age)
        out = {"afterstates": after, "afterstate_values": values}
        if {"states", "state_values", "best_actions"} & set(names):
            states = derive_states(self.spec, age, self.afterstates_of(age - 2)[0], self.afterstates_of(age - 4)[0])
            s_values, best = solve_states(self.spec, states, after, values, tie_tolerance(self.attrs))
            out.update(states=states, state_values=s_values, best_actions=best)
        return {k: out[k] for k in names}

    def datasets(self):
        """Every dataset as ``(name, h5py.Dataset)``: the manifest's, then each age's (directory layout)."""
        found = []
        self.file.visititems(lambda name, obj: found.append((name, obj)) if isinstance(obj, h5py.Dataset) else None)
        if self.directory:
            for age in self.ages:
                f, _ = self._open_age(int(age))
                f.visititems(
                    lambda name, obj, f=f: (
                        found.append((f"{Path(f.filename).name}:{name}", obj))
                        if isinstance(obj, h5py.Dataset)
                        else None
                    )
                )
        return found

    def bad_checksums(self) -> list[str]:
        bad = []
        for name, ds in self.datasets():
            try:
                data = ds[...]
            except OSError:
                bad.append(name + " (unreadable)")
                continue
            if ds.attrs.get("sha256") != sha256_of(data):
                bad.append(name)
        return bad

    def missing_ages(self) -> list[int]:
        """Ages of the index with no group (one file) or no age file (directory; files are not opened)."""
        if self.directory:
            return [int(a) for a in self.ages if not self.age_file(int(a)).exists()]
        return super().missing_ages()


__all__ = ["FORMAT_VERSION", "CodedLayer", "MappedFile", "TableV2", "TableWriterV2", "encode_boards", "SOLVER_VERSION"]
