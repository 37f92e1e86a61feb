"""Solver throughput: the full 3x3 build and the 4x3 enumeration to age 300.

    python -m experiments.bench.solver [--repeats 3] [--skip-4x3] [--max-age 300]

Each build or enumeration runs in its own process (``python -m solver ...``, numba caches warm: a first
untimed run compiles), so that wall time and peak memory (``ru_maxrss`` from ``wait4``) are those of the
command a user runs.  Also times the 3x3 forward + backward passes in memory with no disk traffic, to show
how the build time splits between computing and writing.  Rates are states + afterstates per core-second.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from solver.backward import run_backward
from solver.build import set_threads
from solver.forward import run_forward
from solver.spec import SolveSpec


def run_measured(argv: list[str]) -> tuple[float, float, str]:
    """``(wall seconds, peak RSS in GB, stdout)`` of one ``python -m solver`` command."""
    start = time.perf_counter()
    with tempfile.TemporaryFile("w+") as out:
        proc = subprocess.Popen([sys.executable, "-m", "solver", *argv], stdout=out)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            raise RuntimeError(f"python -m solver {' '.join(argv)} failed with exit code {proc.returncode}")
        out.seek(0)
        return wall, usage.ru_maxrss / 2**20, out.read()


def in_memory_solve(spec: SolveSpec) -> tuple[float, float, int]:
    """Forward and backward passes with every layer kept in memory, no disk: ``(forward s, backward s, work)``."""
    layers, values = {}, {}
    t0 = time.perf_counter()
    counts = run_forward(spec, on_age=lambda c, s, a: layers.__setitem__(c.age, (s, a)), progress=False)
    t1 = time.perf_counter()
    run_backward(
        spec,
        [c.age for c in counts],
        layers.__getitem__,
        values.__getitem__,
        lambda age, s, b, a: values.__setitem__(age, s),
        progress=False,
    )
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, sum(c.states + c.afterstates for c in counts)


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-4x3", action="store_true", help="skip the 4x3 enumeration (several minutes)")
    parser.add_argument("--max-age", type=int, default=300, help="last age of the 4x3 enumeration")
    args = parser.parse_args(argv)
    cores = set_threads(None)
    report: dict = {"cores": cores}

    with tempfile.TemporaryDirectory() as tmp:
        table = str(Path(tmp) / "3x3.h5")
        build = ["build", "--board", "3x3", "--out", table, "--quiet"]
        run_measured(build)  # compile and warm caches
        runs = [run_measured(build) for _ in range(args.repeats)]
        info = json.loads(run_measured(["info", table, "--json"])[2])
    work = info["states"] + info["afterstates"]
    wall = statistics.median(r[0] for r in runs)
    report["3x3_build"] = {
        "runs_s": [round(r[0], 2) for r in runs],
        "median_s": round(wall, 2),
        "peak_rss_gb": round(max(r[1] for r in runs), 2),
        "states_plus_afterstates": work,
        "per_core_second": round(work / (wall * cores)),
    }
    print(
        f"3x3 build: median {wall:.1f} s over {args.repeats} runs {report['3x3_build']['runs_s']}, peak "
        f"{report['3x3_build']['peak_rss_gb']:.2f} GB, {work:,} states+afterstates -> "
        f"{work / (wall * cores):,.0f} per core-second",
        flush=True,
    )

    mem = [in_memory_solve(SolveSpec.parse("3x3")) for _ in range(args.repeats)]
    fwd = statistics.median(m[0] for m in mem)
    bwd = statistics.median(m[1] for m in mem)
    report["3x3_compute_only"] = {"forward_s": round(fwd, 2), "backward_s": round(bwd, 2)}
    print(
        f"3x3 compute only (no disk): forward {fwd:.1f} s + backward {bwd:.1f} s = {fwd + bwd:.1f} s -> "
        f"{work / ((fwd + bwd) * cores):,.0f} per core-second",
        flush=True,
    )

    if not args.skip_4x3:
        wall, rss, out = run_measured(
            ["enumerate", "--board", "4x3", "--max-age", str(args.max_age), "--json", "--quiet"]
        )
        info = json.loads(out)
        work = info["states"] + info["afterstates"]
        report["4x3_enumerate"] = {
            "max_age": args.max_age,
            "wall_s": round(wall, 1),
            "peak_rss_gb": round(rss, 2),
            "states": info["states"],
            "afterstates": info["afterstates"],
            "per_core_second": round(work / (wall * cores)),
        }
        print(
            f"4x3 enumerate to age {args.max_age}: {wall:.0f} s, peak {rss:.2f} GB, {info['states']:,} states + "
            f"{info['afterstates']:,} afterstates -> {work / (wall * cores):,.0f} per core-second"
        )
    return report


if __name__ == "__main__":
    main()
