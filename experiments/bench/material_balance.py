"""How evenly a build partitioned by material spreads each age's work, in seconds, read from its journal.

    python -m experiments.bench.material_balance --board 4x3 --objective tile:6 [--workers 2] [--material-tile 8]
        [--rebalance TOL|off] [--split SHARES|off] [--json FILE]
    python -m experiments.bench.material_balance --journal WORK_DIR     # a build already run (kept with --keep-work)

The first form builds the table with the workers in this process (``solver.distributed.driver.LocalWorkers``,
each step of each worker in turn), keeps the work directory, and reads it; run it with ``NUMBA_NUM_THREADS=1`` to
mimic one-CPU machines.  Every age journals each worker's seconds on it (``busy_s``, forward and backward).  On
machines of their own the workers would wait for the busiest at every age, so the build's critical path is the
busiest worker's seconds summed over ages; an even share is all the workers' seconds over their number.  Also
reported: crossing afterstates, states handed to other workers (moved keys, split columns), keys moved and columns
split (``exchanged_boards``).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from experiments.cli import write_json
from solver.__main__ import material_low, rebalance_tolerance, split_threshold
from solver.distributed.driver import DEFAULT_SPLIT, DEFAULT_TOLERANCE, build_by_material, exchanged_boards
from solver.spec import SolveSpec
from solver.workdir import journal_entries


def phase_imbalance(rows: list[list[float]]) -> float:
    """The busiest worker's share summed over ages over an even share: ``rows`` holds each age's figure per
    worker (seconds or boards)."""
    busiest, total = sum(max(r) for r in rows), sum(sum(r) for r in rows)
    return busiest * len(rows[0]) / total if total else 1.0


def balance(work_dir) -> dict:
    """Per pass, the busiest worker's seconds summed over ages, the even share, and their ratio (the imbalance),
    with the critical path (both passes' busiest) and all the workers' seconds, from a work directory's journal.
    Where the journal has them (``first_s``, ``wall_s``): the critical path with the barrier inside each age (the
    busiest worker before the exchange plus the busiest after it), and the driver's wall seconds of the ages'
    steps; what the wall adds to the barrier's path is the exchange and the calls' own cost.  Where the journal has
    each worker's states and afterstates per age (``states_w``, ``afterstates_w``): the imbalance in boards of the
    states, of the afterstates and of both (``boards``); the steps on either side of an age's exchange work on one
    kind each, so each kind waits for its own busiest worker."""
    lines = journal_entries(work_dir)
    passes = {
        "forward": [x["extra"] for x in lines if "busy_s" in x.get("extra", {})],
        "backward": [x["code"] for x in lines if "busy_s" in x.get("code", {})],
    }
    out: dict = {}
    for name, ages in passes.items():
        if not ages:
            raise ValueError(f"{work_dir}: the journal has no {name} ages with each worker's seconds (busy_s)")
        rows = [a["busy_s"] for a in ages]
        busiest, total = sum(max(r) for r in rows), sum(sum(r) for r in rows)
        out[name] = {
            "ages": len(rows),
            "busiest_s": busiest,
            "even_s": total / len(rows[0]),
            "all_s": total,
            "imbalance": phase_imbalance(rows),
        }
        if all("first_s" in a and "wall_s" in a for a in ages):
            out[name]["barrier_path_s"] = sum(
                max(a["first_s"]) + max(b - f for b, f in zip(a["busy_s"], a["first_s"], strict=True)) for a in ages
            )
            out[name]["wall_s"] = sum(a["wall_s"] for a in ages)
            out[name]["write_wait_s"] = sum(a.get("write_wait_s", 0.0) for a in ages)
    counted = [a for a in passes["forward"] if "states_w" in a]
    if counted:  # journals written before the counts were kept have none
        out["boards"] = {kind: phase_imbalance([a[f"{kind}_w"] for a in counted]) for kind in ("states", "afterstates")}
        out["boards"]["both"] = phase_imbalance(
            [[s + t for s, t in zip(a["states_w"], a["afterstates_w"], strict=True)] for a in counted]
        )
    out["critical_path_s"] = out["forward"]["busiest_s"] + out["backward"]["busiest_s"]
    out["all_work_s"] = out["forward"]["all_s"] + out["backward"]["all_s"]
    if counted and all("under_s" in a for ages in passes.values() for a in ages):
        items = sum(sum(a["states_w"]) + sum(a["afterstates_w"]) for a in counted)
        out["under_exchange"] = under_exchange_cost(passes, out["all_work_s"] / items)
    return {**out, **exchanged_boards(work_dir)}


def under_exchange_cost(passes: dict[str, list[dict]], seconds_per_item: float) -> dict[str, float]:
    """Per pass, the seconds of an afterstate in the steps that may run while the age's exchange travels (the
    children of the worker's own afterstates; the values of the afterstates no peer asked for), over the build's
    mean ``seconds_per_item`` (all its seconds over its states + afterstates): the critical-path model's
    ``--under-exchange`` (:func:`experiments.scale.critical_path.seconds`)."""
    out = {}
    for name, ages in passes.items():
        under_s = sum(sum(a["under_s"]) for a in ages)
        items = sum(sum(a["under_items"]) for a in ages)
        out[name] = under_s / items / seconds_per_item if items else 0.0
    return out


def describe(report: dict) -> str:
    """The report in a few lines."""
    lines = []
    for name in ("forward", "backward"):
        p = report[name]
        line = f"{name}: busiest {p['busiest_s']:.1f} s, even share {p['even_s']:.1f} s ({p['imbalance']:.3f}x)"
        if "wall_s" in p:
            line += (
                f"; with the barrier inside each age {p['barrier_path_s']:.1f} s; the driver's wall "
                f"{p['wall_s']:.1f} s"
                + (f" + waiting for writes {p['write_wait_s']:.1f} s" if name == "backward" else "")
            )
        lines.append(line)
    if "boards" in report:
        b = report["boards"]
        lines.append(
            f"boards per age, busiest over an even share: states {b['states']:.3f}x, afterstates "
            f"{b['afterstates']:.3f}x, both {b['both']:.3f}x"
        )
    if "under_exchange" in report:
        u = report["under_exchange"]
        lines.append(
            f"an afterstate spawned or valued while the exchange travels costs {u['forward']:.3f} (forward) "
            f"and {u['backward']:.3f} (backward) of the build's mean state or afterstate (critical_path "
            f"--under-exchange {u['forward']:.3f} {u['backward']:.3f})"
        )
    lines.append(
        f"critical path {report['critical_path_s']:.1f} s of {report['all_work_s']:.1f} s of work; crossing "
        f"{report['crossing']:,}, handed off {report['handed_off']:,}, moved {report['moved_keys']:,}, "
        f"columns split {report['split_keys']:,}"
    )
    return "\n".join(lines)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--journal", default=None, metavar="WORK_DIR", help="read this work directory; build nothing")
    parser.add_argument("--board", default="4x3")
    parser.add_argument("--objective", default="tile:6")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--material-tile", type=int, default=8)
    parser.add_argument("--rebalance", default=str(DEFAULT_TOLERANCE), metavar="TOL|off")
    parser.add_argument("--split", default=str(DEFAULT_SPLIT), metavar="SHARES|off")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    report: dict = {}
    if args.journal:
        report = balance(args.journal)
    else:
        spec = SolveSpec.parse(args.board, args.objective)
        tolerance, low = rebalance_tolerance(args.rebalance), material_low(args.material_tile)
        split = split_threshold(args.split)
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            build_by_material(
                spec, Path(tmp) / "t", args.workers, low, keep_work=True, tolerance=tolerance, split=split
            )
            wall = time.perf_counter() - start
            report = {
                "board": args.board,
                "objective": args.objective,
                "workers": args.workers,
                "material_tile": args.material_tile,
                "rebalance": tolerance,
                "split": split,
                "wall_s": wall,
                **balance(Path(tmp) / "t.work"),
            }
    print(describe(report))
    if args.json:
        write_json(args.json, report)
    return report


if __name__ == "__main__":
    main()
