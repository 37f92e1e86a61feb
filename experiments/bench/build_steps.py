"""Where a local build's time goes: wall seconds of each step, summed per step and per thread.

    python -m experiments.bench.build_steps --board 4x3 --objective tile:7 [--threads N] [--json FILE]

Builds the table in a temporary directory with the solver's step functions wrapped in timers (the numba kernels
are opaque to a Python profiler; their callers are not): the forward pass's expand, spawn and merge steps, the
backward pass's two Bellman kernels and value-index builds on the main thread, loading a layer (decoding its
states and afterstates from the work directory, or deriving the states) and, on the writer thread, coding the
layers.  Steps nest: ``ForwardLayers.layer`` includes the decoding and deriving it calls, the forward pass's
``spawn`` and ``expand`` the merges they call.  Also prints the peak memory and the largest age.
"""

from __future__ import annotations

import argparse
import collections
import functools
import json
import resource
import tempfile
import threading
import time
from pathlib import Path

import solver.backward
import solver.build
import solver.derive
import solver.forward
from solver.build import build, set_threads
from solver.spec import SolveSpec

#: (module or class, function name) of the timed steps
STEPS = [
    (solver.forward, "expand"),
    (solver.forward, "spawn"),
    (solver.forward, "merge_unique"),
    (solver.backward, "afterstate_values_grouped"),
    (solver.backward, "state_values_grouped"),
    (solver.backward, "build_value_index"),
    (solver.build.ForwardLayers, "layer"),
    (solver.build, "derive_states"),
    (solver.build, "decode_boards"),
    (solver.build, "encode_boards"),
    (solver.derive, "spawn"),
    (solver.derive, "merge_unique"),
    (solver.build.CodedLayer, "encode"),
]


class StepTimer:
    """Wraps the :data:`STEPS` in timers for the duration of a ``with`` block."""

    def __init__(self):
        self.seconds: dict[tuple[str, str], float] = collections.defaultdict(float)
        self.largest = (0, 0, 0, 0)  # (states + afterstates, age, states, afterstates) of the largest layer loaded
        self._saved = []

    def _wrap(self, owner, name: str):
        raw = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
        fn = raw.__func__ if isinstance(raw, classmethod) else raw
        label = f"{getattr(owner, '__name__', owner)}.{name}".replace("solver.", "")

        @functools.wraps(fn)
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                result = fn(*args, **kwargs)
            finally:
                thread = threading.current_thread().name.split("_")[0]
                self.seconds[(thread, label)] += time.perf_counter() - start
            if name == "layer":
                states, afterstates = result
                self.largest = max(
                    self.largest, (states.size + afterstates.size, args[1], states.size, afterstates.size)
                )
            return result

        return raw, classmethod(timed) if isinstance(raw, classmethod) else timed

    def __enter__(self):
        for owner, name in STEPS:
            fn, timed = self._wrap(owner, name)
            self._saved.append((owner, name, fn))
            setattr(owner, name, timed)
        return self

    def __exit__(self, *exc):
        for owner, name, fn in reversed(self._saved):
            setattr(owner, name, fn)
        self._saved.clear()


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--board", default="4x3")
    parser.add_argument("--objective", default="tile:6")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    threads = set_threads(args.threads)
    spec = SolveSpec.parse(args.board, objective=args.objective)
    with tempfile.TemporaryDirectory() as tmp, StepTimer() as timer:
        start = time.perf_counter()
        report = build(spec, Path(tmp) / "table.h5", progress=False)
        wall = time.perf_counter() - start
    work = int(report.attrs["states"]) + int(report.attrs["afterstates"])
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    out = {
        "board": args.board,
        "objective": args.objective,
        "threads": threads,
        "states_plus_afterstates": work,
        "wall_s": wall,
        "forward_s": report.forward_s,
        "backward_s": report.backward_s,
        "writer_busy_s": report.writer_busy_s,
        "peak_gb": peak_gb,
        "largest_layer": dict(zip(("items", "age", "states", "afterstates"), timer.largest, strict=True)),
        "steps": {
            f"{thread} {label}": s for (thread, label), s in sorted(timer.seconds.items(), key=lambda kv: -kv[1])
        },
    }
    per_core = work / threads
    print(
        f"{args.board} {args.objective}, {threads} threads: {wall:.1f} s; forward {report.forward_s:.1f} s "
        f"({per_core / report.forward_s / 1e6:.2f} M states+afterstates per core-second), backward "
        f"{report.backward_s:.1f} s ({per_core / report.backward_s / 1e6:.2f} M); writer thread busy "
        f"{report.writer_busy_s:.1f} s; peak {peak_gb:.2f} GB; largest layer {out['largest_layer']}"
    )
    for step, seconds in out["steps"].items():
        print(f"{seconds:8.1f} s  {step}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
