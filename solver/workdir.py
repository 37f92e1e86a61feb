"""The work directory of a build: finished ages on disk, so that an interrupted build resumes where it stopped.

Layout (all arrays are ``.npy``; states and afterstates are coded as in table format v2)::

    manifest.json                     spec and solver version
    journal.jsonl                     one line per finished step: forward counts of an age, an age solved
                                      backward (with its value code's width and base, and for a directory
                                      table the bytes of its coded IDs and values), the end of the forward pass
    forward/{age:06d}.ids_upper.npy   uint64 words: Elias-Fano upper bits of the age's afterstate ranks
    forward/{age:06d}.ids_lower.npy   uint64 words: their low bits
    forward/{age:06d}.states_upper.npy, .states_lower.npy
                                      the same for the age's states (a one-process build; ages journalled
                                      without them, by earlier releases, derive their states from the
                                      afterstates, see :mod:`solver.derive`)
    backward/{age:06d}.values.npy     uint64 words: the afterstate values' bit-packed codes (a single-file
                                      table only: a directory table's age file, written before the age is
                                      journalled, is the only copy, so a directory build needs about the
                                      table's size on disk, not twice it)
    backward/{age:06d}.exact.npy      float64 afterstate values, kept only for the ages a resumed backward pass
                                      starts from (the two lowest solved ages and the start states' ages), so
                                      that a resumed build computes exactly what an uninterrupted one does

A distributed build (:mod:`solver.distributed`) keeps the same manifest and journal (each forward line also lists
the material keys the age assigned to workers) and one file per worker, ``{age:06d}.w{worker:04d}.{name}.npy``;
its manifest records how the build was cut, and a directory is resumed only the same way.

Every file is written under a temporary name and renamed into place, and an age's journal line is appended only
after its files are all in place: a build killed at any moment (even ``kill -9``) leaves a consistent directory
whose recorded ages are complete (a torn last journal line is ignored, and its age redone).  The journal is
append-only so that recording an age costs the same at age 10 and at age 10,000.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict
from pathlib import Path

import numpy as np

from .format.common import AgeCount
from .spec import SolveSpec

MANIFEST = "manifest.json"
JOURNAL = "journal.jsonl"


# np.load parses each .npy header with ast.literal_eval; CPython 3.11 can raise "SystemError: AST constructor
# recursion depth mismatch" when two threads build ASTs at once (cpython gh-106905), and the build's writer thread
# loads layers while the main thread does.  One load at a time.
_NPY_HEADER_LOCK = threading.Lock()


class WorkDirMismatch(RuntimeError):
    """The work directory belongs to a different solve."""


class WorkDir:
    """A build's work directory (created if missing); see the module docstring for its layout."""

    def __init__(self, path: str | os.PathLike, spec: SolveSpec, solver_version: str, layout: dict | None = None):
        """``layout``: how the build cuts its work (e.g. ``{"backend": "material", "workers": 8, "low": 3}``); a
        directory written with another layout is refused, since its files would not fit together."""
        self.path = Path(path)
        self.spec = spec
        (self.path / "forward").mkdir(parents=True, exist_ok=True)
        (self.path / "backward").mkdir(parents=True, exist_ok=True)
        manifest = self.path / MANIFEST
        header = {"spec": spec.as_dict(), "solver_version": solver_version}
        if layout:
            header["layout"] = layout
        if manifest.exists():
            found = json.loads(manifest.read_text())
            if found.get("layout") != header.get("layout"):
                raise WorkDirMismatch(
                    f"work directory {self.path} was written by a build cut as {found.get('layout') or 'one process'}"
                    f", not {header.get('layout') or 'one process'}; resume it the same way, or remove it"
                )
            if found.get("spec") != header["spec"]:
                raise WorkDirMismatch(
                    f"work directory {self.path} holds a different solve ({found.get('spec')}), not "
                    f"{header['spec']}; remove it or pass another --work-dir"
                )
            if found.get("solver_version") != solver_version:
                raise WorkDirMismatch(
                    f"work directory {self.path} was written by solver version {found.get('solver_version')}, "
                    f"this is {solver_version}; remove it to rebuild"
                )
        else:
            tmp = self.path / (MANIFEST + ".tmp")
            tmp.write_text(json.dumps(header, indent=1))
            os.replace(tmp, manifest)
        self._forward: list[AgeCount] = []
        self._forward_extra: dict[int, dict] = {}
        self._forward_complete = False
        self._backward: dict[int, dict] = {}
        self._read_journal()
        self._journal = open(self.path / JOURNAL, "a")  # noqa: SIM115 (closed by close())

    # -- journal ----------------------------------------------------------------------------------------------
    def _read_journal(self) -> None:
        path = self.path / JOURNAL
        if not path.exists():
            return
        text = path.read_text()
        lines = text.split("\n")
        if lines and lines[-1] and not text.endswith("\n"):
            lines[-1] = ""  # torn by a kill in the middle of a write: that step is redone
            path.write_text("\n".join(lines[:-1]) + ("\n" if len(lines) > 1 else ""))
        for entry in parse_journal(text):
            if "forward" in entry:
                self._forward.append(AgeCount(**entry["forward"]))
                if "extra" in entry:
                    self._forward_extra[self._forward[-1].age] = entry["extra"]
            elif "backward" in entry:
                self._backward[int(entry["backward"])] = entry.get("code", {})
            elif entry.get("forward_complete"):
                self._forward_complete = True

    def _append(self, entry: dict) -> None:
        self._journal.write(json.dumps(entry) + "\n")
        self._journal.flush()

    def close(self) -> None:
        self._journal.close()

    @property
    def forward_counts(self) -> list[AgeCount]:
        return list(self._forward)

    def forward_count(self, age: int) -> AgeCount:
        if not hasattr(self, "_forward_by_age") or len(self._forward_by_age) != len(self._forward):
            self._forward_by_age = {c.age: c for c in self._forward}
        return self._forward_by_age[int(age)]

    @property
    def forward_complete(self) -> bool:
        return self._forward_complete

    @property
    def backward_done(self) -> set[int]:
        return set(self._backward)

    def backward_code(self, age: int) -> dict:
        """What the journal recorded with a solved age (the value code's ``value_bits`` and ``value_base``)."""
        return dict(self._backward[int(age)])

    def forward_extra(self, age: int) -> dict:
        """What a build journalled with a forward age besides its counts (``record_forward``'s ``extra``)."""
        return dict(self._forward_extra.get(int(age), {}))

    def record_forward(self, count: AgeCount, extra: dict | None = None) -> None:
        entry = {"forward": asdict(count)}
        if extra is not None:
            entry["extra"] = extra
            self._forward_extra[count.age] = extra
        self._append(entry)
        self._forward.append(count)

    def finish_forward(self) -> None:
        self._append({"forward_complete": True})
        self._forward_complete = True

    def record_backward(self, age: int, code: dict | None = None) -> None:
        self._append({"backward": int(age), "code": code or {}})
        self._backward[int(age)] = code or {}

    # -- arrays ---------------------------------------------------------------------------------------------
    def _file(self, stage: str, age: int, name: str) -> Path:
        return work_file(self.path, stage, age, name)

    def save(self, stage: str, age: int, name: str, array: np.ndarray) -> None:
        save_array(self._file(stage, age, name), array)

    def discard(self, stage: str, age: int, name: str) -> None:
        self._file(stage, age, name).unlink(missing_ok=True)

    def has(self, stage: str, age: int, name: str) -> bool:
        return self._file(stage, age, name).exists()

    def load(self, stage: str, age: int, name: str) -> np.ndarray:
        return load_array(self._file(stage, age, name))


def parse_journal(text: str) -> list[dict]:
    """The entries of a journal's ``text``, in order; a last line torn by a kill is left out."""
    lines = text.split("\n")
    if not text.endswith("\n"):
        lines = lines[:-1]
    return [json.loads(line) for line in lines if line]


def journal_entries(work_dir) -> list[dict]:
    """The entries of a work directory's journal (:func:`parse_journal`), read without opening it as a
    :class:`WorkDir` (which needs the build's spec)."""
    return parse_journal((Path(work_dir) / JOURNAL).read_text())


def work_file(root: Path, stage: str, age: int, name: str) -> Path:
    """Path of one array of a work directory (``stage`` is ``forward`` or ``backward``)."""
    return Path(root) / stage / f"{age:06d}.{name}.npy"


def save_array(path: Path, array: np.ndarray) -> None:
    """Write ``array`` as ``.npy`` under a temporary name, then rename it into place (atomic; two threads writing
    the same file each write their own temporary file)."""
    tmp = path.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "wb") as fh:
        np.save(fh, array, allow_pickle=False)
    os.replace(tmp, path)


def load_array(path: Path) -> np.ndarray:
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing from the work directory (it was recorded as finished)")
    with _NPY_HEADER_LOCK:
        return np.load(path, allow_pickle=False)
