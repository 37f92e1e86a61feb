"""The Ray backend against the local build: wall time, peak memory, and identical tables.

    python -m experiments.bench.ray_backend [--repeats 3] [--board 3x3] [--objective score] [--shard-min N]
        [--json FILE]

Each build is the command a user runs (``python -m solver build ... --layout directory`` and the same with
``--backend ray --threads 2``, which starts a private Ray on this machine and stops it at the end), in its own
process, numba caches warm (one untimed run of each first, unless ``--no-warmup``).  Local and Ray builds
alternate; medians of ``--repeats``.  Peak memory is the largest sum of the resident sizes over the command's
process tree (the Ray daemons and workers included; object-store pages are counted in every process that maps
them).  The tables' dataset checksums are compared.  The Ray wall time includes starting Ray; the build alone
(forward + backward + write, as the command prints it) is reported too.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from solver.store import Table


def tree_rss_bytes(root: int) -> int:
    """Sum of VmRSS over ``root`` and its descendants (0 for processes that have gone)."""
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
            for task in Path(f"/proc/{pid}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total


def run_tree_measured(argv: list[str]) -> tuple[float, float, str]:
    """``(wall seconds, peak process-tree RSS in GB, stdout)`` of one ``python -m solver`` command."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "solver", *argv], stdout=subprocess.PIPE, text=True)
    peak = [0]

    def sample() -> None:
        while proc.poll() is None:
            peak[0] = max(peak[0], tree_rss_bytes(proc.pid))
            time.sleep(0.25)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    wall = time.perf_counter() - start
    sampler.join()
    if proc.returncode:
        raise RuntimeError(f"python -m solver {' '.join(argv)} failed with exit code {proc.returncode}")
    return wall, peak[0] / 1e9, out


def phases(stdout: str) -> tuple[float, float, float]:
    """``(forward, backward, write)`` seconds from the build command's summary line."""
    m = re.search(r"forward ([\d.]+) s, backward ([\d.]+) s, write ([\d.]+) s", stdout)
    return tuple(float(x) for x in m.groups())


def build_seconds(stdout: str) -> float:
    return sum(phases(stdout))


def checksums(path) -> dict[str, str]:
    with Table(path) as t:
        return t.stored_checksums()


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--board", default="3x3")
    parser.add_argument("--objective", default="score")
    parser.add_argument("--shards", type=int, default=2)
    parser.add_argument("--shard-min", type=int, default=None, help="the Ray build's --shard-min (default its own)")
    parser.add_argument("--no-warmup", action="store_true", help="time the first run of each too (warm caches)")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    spec_args = ["--board", args.board, "--objective", args.objective, "--quiet", "--layout", "directory"]
    ray_args = ["--backend", "ray", "--threads", "2", "--shards", str(args.shards)]
    if args.shard_min is not None:
        ray_args += ["--shard-min", str(args.shard_min)]
    runs: dict[str, list[tuple[float, float, float]]] = {"local": [], "ray": []}
    with tempfile.TemporaryDirectory() as tmp:
        out = {"local": Path(tmp) / "local", "ray": Path(tmp) / "ray"}
        first = 1 if args.no_warmup else 0
        for repeat in range(first, args.repeats + 1):
            for kind in ("local", "ray"):
                shutil.rmtree(out[kind], ignore_errors=True)
                os.sync()
                wall, peak, stdout = run_tree_measured(
                    ["build", *spec_args, "--out", str(out[kind]), *(ray_args if kind == "ray" else [])]
                )
                if repeat:  # the first run of each warms the numba caches
                    runs[kind].append((wall, build_seconds(stdout), peak, *phases(stdout)))
                    print(f"{kind:>5}: {wall:6.1f} s wall ({build_seconds(stdout):.1f} s building), peak {peak:.2f} GB",
                          flush=True)  # fmt: skip
        identical = checksums(out["local"]) == checksums(out["ray"])
        with Table(out["local"]) as t:
            work = int(t.attrs["states"]) + int(t.attrs["afterstates"])
            largest = max(t.counts(), key=lambda c: c.states + c.afterstates)
    med = {k: [statistics.median(r[i] for r in v) for i in range(6)] for k, v in runs.items()}
    report = {
        "board": args.board, "objective": args.objective, "shards": args.shards, "shard_min": args.shard_min,
        "repeats": args.repeats, "cores": os.cpu_count(), "identical_checksums": identical,
        "states_plus_afterstates": work,
        "largest_age": {"age": largest.age, "states": largest.states, "afterstates": largest.afterstates},
        **{kind: {"wall_s": m[0], "build_s": m[1], "peak_gb": m[2], "forward_s": m[3], "backward_s": m[4],
                  "write_s": m[5]} for kind, m in med.items()},
        "ratio_wall": med["ray"][0] / med["local"][0], "ratio_build": med["ray"][1] / med["local"][1],
        "runs": runs,
    }  # fmt: skip
    print(f"{args.board} {args.objective}: local {med['local'][0]:.1f} s, Ray {med['ray'][0]:.1f} s wall "
          f"({report['ratio_wall']:.2f}x; building alone {report['ratio_build']:.2f}x), peak {med['local'][2]:.2f} "
          f"vs {med['ray'][2]:.2f} GB; medians of {args.repeats}; tables "
          f"{'identical' if identical else 'DIFFERENT'}")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
