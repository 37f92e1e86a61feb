"""The forward pass alone, in memory: seconds and states + afterstates per core-second.

    python -m experiments.bench.forward [--board 4x3] [--objective score] [--max-age 180] [--repeats 3]

Runs :func:`solver.forward.run_forward` to ``--max-age`` (inclusive) ``--repeats`` times in this process, after
one short untimed run that loads the numba kernels; prints each time and the median.  To compare two versions
of the solver, run it in each tree alternately (``PYTHONPATH=TREE python -m experiments.bench.forward ...``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numba

from solver.forward import run_forward
from solver.spec import SolveSpec


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--board", default="4x3")
    parser.add_argument("--objective", default="score")
    parser.add_argument("--max-age", type=int, default=180)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    spec = SolveSpec.parse(args.board, args.objective)
    threads = numba.get_num_threads()
    run_forward(spec, max_age=40, progress=False)
    seconds, work = [], 0
    for _ in range(args.repeats):
        t = time.perf_counter()
        counts = run_forward(spec, max_age=args.max_age, progress=False)
        seconds.append(time.perf_counter() - t)
        work = sum(c.states + c.afterstates for c in counts)
        print(f"{seconds[-1]:.1f} s", flush=True)
    med = statistics.median(seconds)
    rate = work / med / threads
    print(
        f"{spec.describe()} to age {args.max_age}: {work:,} states+afterstates, {med:.1f} s (median of "
        f"{args.repeats}) on {threads} threads: {rate / 1e6:.2f} M per core-second"
    )
    return {"seconds": seconds, "median_s": med, "work": work, "threads": threads, "per_core_second": rate}


if __name__ == "__main__":
    main()
