"""Opening a solved table of any format version (``docs/table-format.md``)."""

from __future__ import annotations

import os
from pathlib import Path

import h5py

from ..seal import check_unsealed
from .common import TableError
from .v1 import TableV1
from .v2 import MANIFEST, TableV2


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
    """Open a solved table of any format: a :class:`TableV1` or a :class:`~solver.format.v2.TableV2` (both
    context managers with ``attrs``, ``spec``, ``ages``, ``counts()``, ``layer(age)``, ``start()``,
    ``datasets()`` and ``bad_checksums()``)."""
    check_unsealed(f"opening the table {path}")
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
