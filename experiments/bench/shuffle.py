"""What a sharded build moves between its tasks: bytes exchanged per state + afterstate, and the largest task.

    python -m experiments.bench.shuffle [--board 4x3] [--objective tile:6] [--shards 16 64] [--json FILE]

Runs the sharded build (:mod:`solver.sharded`) with the in-process engine, which executes exactly the tasks a
Ray build submits, and adds up the sizes of the arrays that pass from one task to another through the object
store: the forward pass's afterstate and child pieces, the backward pass's requests and answers (states and
afterstates are cut by a hash, so with the shards spread over M machines a fraction (M - 1) / M of these bytes
crosses the network).  Forward layers, held or reloaded, and the table files are not exchanges: a layer is
read by the shard that owns it.  Also reports the largest shard task's inputs + outputs (the working set that
bounds a worker's memory; an age's write task holds the whole age and is left out), and the seconds spent in
each kind of task.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from pathlib import Path

import numpy as np

from solver import sharded
from solver.sharded import InProcess, build_sharded
from solver.spec import SolveSpec
from solver.store import Table

#: Tasks whose outputs travel to other shards, and which of their outputs do.
EXCHANGES = {
    "task_expand": slice(2, None),  # afterstate pieces (meta and the shard's own states stay)
    "task_spawn": slice(2, None),  # child pieces
    "task_forward_whole": slice(2, -1),
    "task_children_requests": slice(0, None),
    "task_move_requests": slice(0, -1),  # requests (the moves stay: Ray runs their state-values task where they are)
    "task_lookup": slice(0, None),  # answers
}
BACKWARD = {"task_children_requests", "task_move_requests", "task_lookup"}


def nbytes(items) -> int:
    """Bytes of the arrays in ``items``, those inside tuples (a shard's kept moves) included."""
    return sum(x.nbytes if isinstance(x, np.ndarray) else nbytes(x) for x in items if isinstance(x, np.ndarray | tuple))


class Accounting(InProcess):
    """The in-process engine, adding up exchanged bytes and the largest task's working set."""

    def __init__(self):
        self.exchanged = Counter()
        self.seconds = Counter()
        self.largest = (0, "")

    def submit(self, fn, *args, num_returns: int = 1, whole: bool = False) -> list:
        t0 = time.perf_counter()
        out = super().submit(fn, *args, num_returns=num_returns)
        name = fn.__name__
        self.seconds[name] += time.perf_counter() - t0
        if name in EXCHANGES:
            self.exchanged["backward" if name in BACKWARD else "forward"] += nbytes(out[EXCHANGES[name]])
        if not whole and name != "task_write":  # a write task holds its whole age (reported apart)
            size = nbytes(args) + nbytes(out)
            if size > self.largest[0]:
                self.largest = (size, name)
        return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--board", default="4x3")
    parser.add_argument("--objective", default="tile:6")
    parser.add_argument("--shards", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--shard-min", type=int, default=sharded.SHARD_MIN)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    spec = SolveSpec.parse(args.board, args.objective)
    report = {"board": args.board, "objective": args.objective, "shard_min": args.shard_min, "runs": {}}
    for n in args.shards:
        engine = Accounting()
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.perf_counter()
            result = build_sharded(engine, spec, Path(tmp) / "t", n, progress=False, shard_min=args.shard_min)
            wall = time.perf_counter() - t0
            with Table(Path(tmp) / "t") as t:
                report["largest_age_items"] = max(c.states + c.afterstates for c in t.counts())
        work = result.attrs["states"] + result.attrs["afterstates"]
        run = {
            "shards": n, "wall_s": round(wall, 1), "states_plus_afterstates": work,
            "forward_bytes": engine.exchanged["forward"], "backward_bytes": engine.exchanged["backward"],
            "forward_bytes_per_item": engine.exchanged["forward"] / work,
            "backward_bytes_per_item": engine.exchanged["backward"] / work,
            "largest_task": {"bytes": engine.largest[0], "task": engine.largest[1]},
            "seconds_by_task": {k: round(v, 1) for k, v in engine.seconds.most_common()},
        }  # fmt: skip
        report["runs"][n] = run
        print(f"{spec.describe()}, {n} shards: {work:,} states+afterstates; exchanged "
              f"{run['forward_bytes_per_item']:.1f} B per state+afterstate forward, "
              f"{run['backward_bytes_per_item']:.1f} B backward; largest task {engine.largest[1]} "
              f"{engine.largest[0] / 1e6:.0f} MB in+out ({wall:.0f} s in one process: "
              f"{', '.join(f'{k} {v:.0f} s' for k, v in engine.seconds.most_common(8))})", flush=True)  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
