"""Golden dataset checksums: the tables of a few small games as the solver wrote them before its kernels were
reworked for speed.  Every later build of these games must store bit for bit the same datasets, for
any number of threads or shards.

The JSON files in ``tests/golden/`` were written by this module's command line from the solver at commit
3092014 (before any change to the kernels)::

    python tests/golden_tables.py --write

and must never be rewritten to make a test pass: a difference means the solver changed a stored number.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from solver.build import build
from solver.format import Table
from solver.spec import SolveSpec

GOLDEN_DIR = Path(__file__).with_name("golden")

#: name -> (board, objective): every spec kept as a golden file
GAMES = {
    "2x3-score": ("2x3", "score"),
    "2x4-score": ("2x4", "score"),
    "3x3-score": ("3x3", "score"),
    "3x3-tile8": ("3x3", "tile:8"),
    "2x4-tile6": ("2x4", "tile:6"),
}


def spec_of(name: str) -> SolveSpec:
    board, objective = GAMES[name]
    return SolveSpec.parse(board, objective)


def checksums_of(path) -> dict[str, str]:
    """``{dataset name: sha256}`` of a format v2 table (file or directory)."""
    with Table(path) as t:
        return dict(sorted(t.stored_checksums().items()))


def golden(name: str) -> dict[str, str]:
    """The stored checksums of game ``name``."""
    return json.loads((GOLDEN_DIR / f"{name}.json").read_text())["datasets"]


def write(names) -> None:
    GOLDEN_DIR.mkdir(exist_ok=True)
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "t.h5"
            build(spec_of(name), path, progress=False)
            entry = {"board": GAMES[name][0], "objective": GAMES[name][1], "datasets": checksums_of(path)}
        (GOLDEN_DIR / f"{name}.json").write_text(json.dumps(entry, indent=1) + "\n")
        print(f"{name}: {len(entry['datasets'])} datasets")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="(re)write the golden files: only before a change")
    parser.add_argument("names", nargs="*", default=list(GAMES))
    args = parser.parse_args()
    if not args.write:
        sys.exit("nothing to do: pass --write (only ever from a solver known to be right)")
    write(args.names)
