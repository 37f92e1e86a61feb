"""Tables provisioned on this machine: where they are kept, which boards build here, and building one once.

The oracle opens and queries tables; this module is where they come from when nobody gave a path:

* :func:`cache_dir`: ``$SOLVED2048_HOME`` or ``~/.cache/solved2048``;
* :data:`BUILDABLE`: the boards whose score tables build here in about a minute or less, and :data:`TOO_BIG` what
  the others would cost;
* :func:`cached_table`: a board's table in the cache, built there on first use;
* :func:`build_once`: a table built at a path unless it is there, one process at a time (a file lock), with a
  second process compiling meanwhile the kernels needed next (:mod:`solver.precompile`).
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from tqdm.auto import tqdm

from . import precompile
from .build import build
from .seal import check_unsealed
from .spec import SolveSpec

#: Boards whose tables build here in about a minute or less: ``cached_table`` builds them on first use.
BUILDABLE = {(2, 2), (2, 3), (3, 2), (2, 4), (4, 2), (3, 3)}
#: What solving the boards that do not build here would cost (from seed 000 and this solver's measured rate).
TOO_BIG = {
    (4, 3): "4x3 has 1.15e12 states and 7.4e11 afterstates: its score table in format v2 is about 2.4-2.5 TiB "
    "(projected from measured 4x3 layers by `python -m experiments.bench.tables`), and solving it is projected at "
    "15.2 h on one 16-core machine with the local backend, or 2.33 h on 8 of them with Ray (the build partitioned "
    "by material) (`python -m experiments.scale.project_4x3`, docs/4x3.md; Kaneko & Yamashita needed 65 h on 16 "
    "cores and 1.4 TiB for the IDs alone)",
}


def cache_dir() -> Path:
    """Where :func:`cached_table` keeps tables: ``$SOLVED2048_HOME`` or ``~/.cache/solved2048``."""
    return Path(os.environ.get("SOLVED2048_HOME") or Path.home() / ".cache" / "solved2048")


def table_name(spec: SolveSpec) -> str:
    """The file name of ``spec``'s table in the cache (``3x3-score-p4_0.1-random.h5``)."""
    objective = spec.objective.replace(":", "")
    return f"{spec.board}-{objective}-p4_{spec.p4:g}-{spec.spawn}.h5"


def cached_table(spec: SolveSpec, progress: bool = True, warm_oracle: bool = False) -> Path:
    """Path of ``spec``'s table in :func:`cache_dir`, solving it there first if missing (boards of
    :data:`BUILDABLE` only; others raise ``FileNotFoundError`` saying how to build them elsewhere).
    ``warm_oracle``: see :func:`build_once`."""
    check_unsealed(f"the cached table of {spec.describe()}")
    path = cache_dir() / table_name(spec)
    if path.exists():  # tables appear by an atomic rename: one that exists is complete
        return path
    shape = (spec.rows, spec.cols)
    if shape not in BUILDABLE:
        cost = TOO_BIG.get(shape, f"{spec.board} is too large to solve here")
        raise FileNotFoundError(
            f"no table for {spec.describe()} in {cache_dir()}; {cost}. Build it on a big machine with "
            f"`python -m solver build --board {spec.board} --objective {spec.objective} --p4 {spec.p4:g} "
            f"--spawn {spec.spawn} --out FILE` and pass table=FILE"
        )
    return build_once(spec, path, progress, warm_oracle=warm_oracle)


def build_once(
    spec: SolveSpec, path: Path, progress: bool = True, what: str | None = None, warm_oracle: bool = False, **build_args
) -> Path:
    """Build ``spec``'s table at ``path`` unless it is there (``build_args`` go to ``solver.build.build``, e.g.
    ``layout="directory"``).  Processes that ask for the same missing table at once (e.g. parallel training runs)
    build it one at a time: they would otherwise share one work directory.  The first builds; the others wait,
    then find it.  ``what`` names it in the progress message (default: the spec).  ``warm_oracle`` (the oracle
    says whether its own kernels are missing from numba's cache): the second process compiles them too, while
    this one builds."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not path.exists():
            # a cold cache: what the build and the oracle need next compiles in a second process meanwhile
            precompile.start(spec, oracle=warm_oracle)
            if progress:
                tqdm.write(f"solving {what or spec.describe()} once into {path} ...")
            build(spec, path, progress=progress, **build_args)
            precompile.wait_for("oracle", progress)  # the env's and the oracle's kernels, wanted next
    return path
