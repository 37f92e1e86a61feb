"""The work directory of a build: finished ages on disk, so that an interrupted build resumes where it stopped.

Layout (all arrays are ``.npy``)::

    manifest.json                     spec, solver version, per-age forward counts, ages solved backward
    forward/{age:06d}.states.npy      uint64 sorted canonical states of that age
    forward/{age:06d}.afterstates.npy uint64 sorted canonical afterstates
    backward/{age:06d}.state_values.npy, .best_actions.npy, .afterstate_values.npy

Every file is written under a temporary name and renamed into place, and the manifest is updated (the same way)
only after an age's files are all in place: a build killed at any moment (even ``kill -9``) leaves a consistent
directory whose recorded ages are complete.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .spec import SolveSpec

MANIFEST = "manifest.json"


@dataclass
class AgeCount:
    """Forward-pass counts of one age."""

    age: int
    states: int
    afterstates: int
    terminal: int


class WorkDirMismatch(RuntimeError):
    """The work directory belongs to a different solve."""


class WorkDir:
    """A build's work directory (created if missing); see the module docstring for its layout."""

    def __init__(self, path: str | os.PathLike, spec: SolveSpec, solver_version: str):
        self.path = Path(path)
        self.spec = spec
        (self.path / "forward").mkdir(parents=True, exist_ok=True)
        (self.path / "backward").mkdir(parents=True, exist_ok=True)
        manifest = self.path / MANIFEST
        if manifest.exists():
            self._m = json.loads(manifest.read_text())
            if self._m.get("spec") != spec.as_dict():
                raise WorkDirMismatch(
                    f"work directory {self.path} holds a different solve ({self._m.get('spec')}), not "
                    f"{spec.as_dict()}; remove it or pass another --work-dir"
                )
            if self._m.get("solver_version") != solver_version:
                raise WorkDirMismatch(
                    f"work directory {self.path} was written by solver version {self._m.get('solver_version')}, "
                    f"this is {solver_version}; remove it to rebuild"
                )
        else:
            self._m = {
                "spec": spec.as_dict(),
                "solver_version": solver_version,
                "forward": [],
                "forward_complete": False,
                "backward_done": [],
            }
            self._write_manifest()

    # -- manifest -------------------------------------------------------------------------------------------
    def _write_manifest(self) -> None:
        tmp = self.path / (MANIFEST + ".tmp")
        tmp.write_text(json.dumps(self._m, indent=1))
        os.replace(tmp, self.path / MANIFEST)

    @property
    def forward_counts(self) -> list[AgeCount]:
        return [AgeCount(**row) for row in self._m["forward"]]

    @property
    def forward_complete(self) -> bool:
        return bool(self._m["forward_complete"])

    @property
    def backward_done(self) -> set[int]:
        return set(self._m["backward_done"])

    def record_forward(self, count: AgeCount) -> None:
        self._m["forward"].append(asdict(count))
        self._write_manifest()

    def finish_forward(self) -> None:
        self._m["forward_complete"] = True
        self._write_manifest()

    def record_backward(self, age: int) -> None:
        self._m["backward_done"].append(int(age))
        self._write_manifest()

    # -- arrays ---------------------------------------------------------------------------------------------
    def _file(self, stage: str, age: int, name: str) -> Path:
        return self.path / stage / f"{age:06d}.{name}.npy"

    def save(self, stage: str, age: int, name: str, array: np.ndarray) -> None:
        final = self._file(stage, age, name)
        tmp = final.with_suffix(".tmp")
        with open(tmp, "wb") as fh:
            np.save(fh, array, allow_pickle=False)
        os.replace(tmp, final)

    def load(self, stage: str, age: int, name: str) -> np.ndarray:
        path = self._file(stage, age, name)
        if not path.exists():
            raise FileNotFoundError(f"{path} is missing from the work directory (it was recorded as finished)")
        return np.load(path, allow_pickle=False)
