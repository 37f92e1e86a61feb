"""First use: the seconds a new user waits for the first priced step, the 3x3 build cold and warm, and which numba
kernels they wait for.

    python -m experiments.bench.first_use [--board 3x3] [--objective score] [--repeats 3] [--without-worker]
                                          [--compiles] [--json FILE]

*New user* (3x3 only): a fresh process with an empty numba cache and an empty table cache (``SOLVED2048_HOME``)
runs ``import env2048; env = gym.make("Solved2048-3x3", oracle=True); env.reset(seed=0)`` and one step whose
``info`` holds the oracle's regret: everything a new user meets, the table's build included; then the same
again with both caches warm (the table is there: the second use).

Each repeat runs ``python -m solver build`` in a fresh process twice with its own empty numba cache directory
(``NUMBA_CACHE_DIR``): the first run compiles every kernel it calls (what a fresh install does), the second
loads them from that cache (a warm build).  Cold and warm runs alternate, so that the machine's noise falls on
both alike; medians are printed.  First uses let a second process compile the kernels needed later
(:mod:`solver.precompile`); ``--without-worker`` times each first use also without it, in the same repeat.
``--compiles`` adds one more cold build in this process, with no worker, timing every numba compilation
(``numba:compile`` events): each function's own seconds, its callees' compilations excluded.
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
from collections import defaultdict
from pathlib import Path


def timed_build(board: str, objective: str, cache_dir: str, out: Path, worker: bool = True) -> float:
    """Wall seconds of one ``solver build`` in a new process (Python's start and imports included); ``worker``:
    whether a cold build may compile in a second process (:mod:`solver.precompile`)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache_dir, "SOLVED2048_PRECOMPILE": "1" if worker else "0"}
    cmd = [
        sys.executable,
        "-m",
        "solver",
        "build",
        "--board",
        board,
        "--objective",
        objective,
        "--out",
        str(out),
        "--quiet",
    ]
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


#: What a new user runs: the env with its oracle, to the first step priced by the oracle.
FIRST_PRICED_STEP = """
import gymnasium as gym
import numpy as np
import env2048
env = gym.make("Solved2048-3x3", oracle=True)
obs, info = env.reset(seed=0)
obs, reward, terminated, truncated, info = env.step(int(np.nanargmax(info["q_values"])))
assert info["regret"] == 0.0, info
"""


def timed_first_step(cache_dir: str, home: str, worker: bool = True) -> float:
    """Wall seconds of :data:`FIRST_PRICED_STEP` in a new process, numba's cache in ``cache_dir`` and the tables
    in ``home``; ``worker`` as in :func:`timed_build`."""
    env = {
        **os.environ,
        "NUMBA_CACHE_DIR": cache_dir,
        "SOLVED2048_HOME": home,
        "SOLVED2048_PRECOMPILE": "1" if worker else "0",
    }
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", FIRST_PRICED_STEP],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - t0


def compile_timer(on_compiled=None):
    """A numba event listener for ``numba:compile`` that sums each function's own compile seconds (nested
    compilations of its callees subtracted) into its ``own`` dict, ``{"module.qualname": seconds}``;
    ``on_compiled(name)`` is called after each.  Imports numba: set ``NUMBA_CACHE_DIR`` first."""
    from numba.core import event

    class CompileTimer(event.Listener):
        def __init__(self):
            self.own: dict[str, float] = defaultdict(float)
            self._stack: list[list] = []  # [name, start, seconds spent in nested compilations]

        def on_start(self, ev):
            fn = ev.data["dispatcher"].py_func
            self._stack.append([f"{fn.__module__}.{fn.__qualname__}", time.perf_counter(), 0.0])

        def on_end(self, ev):
            name, start, nested = self._stack.pop()
            total = time.perf_counter() - start
            self.own[name] += total - nested
            if self._stack:
                self._stack[-1][2] += total
            if on_compiled is not None:
                on_compiled(name)

    return CompileTimer()


def compile_seconds(board: str, objective: str, out: Path) -> dict[str, float]:
    """``{function: seconds}`` of every numba compilation of one build in this process (run it with an empty
    ``NUMBA_CACHE_DIR``): each function's own time, nested compilations of its callees subtracted."""
    from numba.core import event

    from solver.build import build
    from solver.spec import SolveSpec

    timer = compile_timer()
    with event.install_listener("numba:compile", timer):
        build(SolveSpec.parse(board, objective), out, progress=False)
    return dict(sorted(timer.own.items(), key=lambda kv: -kv[1]))


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--board", default="3x3")
    parser.add_argument("--objective", default="score")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--without-worker",
        action="store_true",
        help="also time each first use with the precompiling worker off (SOLVED2048_PRECOMPILE=0)",
    )
    parser.add_argument("--compiles", action="store_true", help="also time every kernel's compilation")
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    user = (args.board, args.objective) == ("3x3", "score")
    times: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            runs = [("first_use", True), ("first_use_no_worker", False)][: 2 if args.without_worker else 1]
            for name, worker in runs:
                cache = os.path.join(tmp, f"numba-{name}-{r}")
                os.mkdir(cache)
                times[name].append(timed_build(args.board, args.objective, cache, Path(tmp) / f"{name}-{r}", worker))
                if worker:
                    times["warm"].append(timed_build(args.board, args.objective, cache, Path(tmp) / f"warm-{r}"))
                if user:
                    cache, home = os.path.join(tmp, f"numba-user-{name}-{r}"), os.path.join(tmp, f"home-{name}-{r}")
                    os.mkdir(cache)
                    times[f"new_user{name[9:]}"].append(timed_first_step(cache, home, worker))
                    if worker:
                        times["second_use"].append(timed_first_step(cache, home))
            print(f"repeat {r + 1}: " + ", ".join(f"{k} {v[-1]:.1f} s" for k, v in times.items()), flush=True)
        report = {
            "board": args.board,
            "objective": args.objective,
            "threads": os.cpu_count(),
            **{f"{k}_s": v for k, v in times.items()},
            **{f"{k}_median_s": statistics.median(v) for k, v in times.items()},
        }
        print(
            f"{args.board} {args.objective} build: first use {report['first_use_median_s']:.1f} s, warm "
            f"{report['warm_median_s']:.1f} s (medians of {args.repeats}; new process each)"
        )
        if args.without_worker:
            print(f"  first use with no precompiling worker: {report['first_use_no_worker_median_s']:.1f} s")
        if user:
            print(
                f"new user, gym.make('Solved2048-3x3') to the first priced step: "
                f"{report['new_user_median_s']:.1f} s; second use {report['second_use_median_s']:.1f} s"
            )
            if args.without_worker:
                print(f"  with no precompiling worker: {report['new_user_no_worker_median_s']:.1f} s")
        if args.compiles:
            os.environ["NUMBA_CACHE_DIR"] = os.path.join(tmp, "numba-profile")  # read when numba is imported
            os.environ["SOLVED2048_PRECOMPILE"] = "0"  # every compilation in this process, where it is timed
            if "numba" in sys.modules:
                sys.exit("--compiles needs numba not yet imported in this process")
            own = compile_seconds(args.board, args.objective, Path(tmp) / "profile")
            report["compile_s"] = own
            print(f"compiling: {sum(own.values()):.1f} s in {len(own)} functions; the largest:")
            for name, seconds in list(own.items())[:15]:
                print(f"  {seconds:6.2f} s  {name}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
