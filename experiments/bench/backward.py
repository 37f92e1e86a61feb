"""Designs of the backward pass compared on the same inputs: the forward layers of one game, held in memory.

    python -m experiments.bench.backward [--board 4x3 --objective tile:6] [--repeats 3] [--designs A,B,...]
                                         [--json FILE]

The forward pass runs once; then each design solves every age, largest first, ``--repeats`` times (interleaved,
so that the machine's noise falls on every design alike), and its values and best actions must equal the first
design's bit for bit.  Rates are states + afterstates per core-second of the backward pass (index builds
included; no disk, no coding), with each step's mean seconds and lookups per core-second (to set against the
roofline of :mod:`experiments.bench.roofline`).  Designs:

- ``baseline``: the kernels before their rework, one lookup at a time (:mod:`experiments.bench.backward_baseline`),
  on ``hash_index`` tables (separate key and value arrays, allocated by numba: 4 KiB pages; built on one thread);
- ``hugepages``: the same kernels and tables, the tables copied into numpy-allocated arrays (2 MiB pages);
- ``slots-gN``: :mod:`solver.value_index` tables (key and value in one 16-byte slot, huge pages, built in
  parallel) with the grouped kernels of :mod:`solver.bellman`, ``N`` boards per group (``g1``: one at a time);
  ``slots-gN-loadP``: the same with tables at most P% full (default 75).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numba
import numpy as np

from env2048.tables import board_tables
from experiments.bench.backward_baseline import afterstate_values, hash_index, state_values
from experiments.cli import write_json
from solver.bellman import afterstate_values_grouped, state_values_grouped
from solver.forward import n_chunks_for, run_forward
from solver.kernels import TIE_TOLERANCE
from solver.moves import state_moves
from solver.spec import SolveSpec
from solver.value_index import MAX_LOAD, build_value_index

DEFAULT_DESIGNS = "baseline,hugepages,slots-g1,slots-g4,slots-g16,slots-g32"
#: the timed steps of a backward pass
STEPS = ("afterstate", "index", "state")


def _hash_index_hugepages(ids, values):
    keys, vals, shift = hash_index(ids, values)
    return np.array(keys), np.array(vals), shift  # numpy's copies: huge pages


def design(name: str):
    """``(build_index(ids, values), afterstate_kernel(afterstates, T, spec, i2, i4, n_chunks),
    state_kernel(states, T, spec, index, n_chunks))`` of a design."""
    if name in ("baseline", "hugepages"):
        build = hash_index if name == "baseline" else _hash_index_hugepages

        def after(a, T, spec, i2, i4, nc):
            return afterstate_values(a, T.sym_shift, T.sym_bytes, spec.p4, spec.spawn_code, i2, i4, nc)

        def state(s, T, spec, idx, nc):
            return state_values(
                s, T, spec.cells, spec.win_exponent, spec.objective == "score", idx, nc, TIE_TOLERANCE, 0.0
            )

        return build, after, state
    if name.startswith("slots-g"):
        group, _, load = name[len("slots-g") :].partition("-load")
        group = int(group)
        max_load = int(load) / 100 if load else MAX_LOAD

        def build(ids, values):
            return build_value_index(ids, values, max_load=max_load)

        def after(a, T, spec, i2, i4, nc):
            return afterstate_values_grouped(a, T, spec.p4, spec.spawn_code, i2[:3], i4[:3], nc, group)

        def state(s, T, spec, idx, nc):
            return state_values_grouped(
                s, T, spec.rules, spec.objective == "score", idx[:3], nc, TIE_TOLERANCE, 0.0, group
            )

        return build, after, state
    raise ValueError(f"unknown design {name!r}: one of {DEFAULT_DESIGNS} (slots-gN for any N)")


def solve_all(spec: SolveSpec, layers: dict, name: str, steps: dict | None = None) -> tuple[float, dict]:
    """Seconds of a whole backward pass with design ``name``, and ``{age: (state values, best actions)}``;
    ``steps`` (if given) gets the seconds of each step added: ``afterstate`` and ``state`` kernels, ``index``
    builds."""
    build, after, state = design(name)
    T = board_tables(spec.rows, spec.cols)
    empty = build(np.empty(0, np.uint64), np.empty(0, np.float64))
    window, results = {}, {}
    spent = dict.fromkeys(STEPS, 0.0)
    t0 = time.perf_counter()

    def timed(step, fn, *args):
        t = time.perf_counter()
        result = fn(*args)
        spent[step] += time.perf_counter() - t
        return result

    for age in sorted(layers, reverse=True):
        states, afterstates = layers[age]
        a_values, missing = timed(
            "afterstate",
            after,
            afterstates,
            T,
            spec,
            window.get(age + 2, empty),
            window.get(age + 4, empty),
            n_chunks_for(afterstates.size),
        )
        assert missing < 0
        after_index = timed("index", build, afterstates, a_values)
        s_values, best, missing = timed("state", state, states, T, spec, after_index, n_chunks_for(states.size))
        assert missing < 0
        window[age] = timed("index", build, states, s_values)
        window.pop(age + 4, None)
        results[age] = (s_values, best)
    seconds = time.perf_counter() - t0
    if steps is not None:
        for key, value in spent.items():
            steps[key] = steps.get(key, 0.0) + value
    return seconds, results


def probe_counts(spec: SolveSpec, layers: dict) -> dict:
    """Lookups a backward pass makes: ``afterstate`` (one per spawned child: empty cells x tiles the game
    spawns, per afterstate) and ``state`` (one per legal move that does not win, per state)."""
    tiles = int(spec.p4 < 1.0) + int(spec.p4 > 0.0)
    after_probes = state_probes = 0
    for states, afterstates in layers.values():
        for c in range(spec.cells):
            nibble = (afterstates >> np.uint64(4 * c)) & np.uint64(15)
            after_probes += tiles * int(np.count_nonzero(nibble == 0))
        state_probes += int(np.count_nonzero(state_moves(spec, states).keys))
    return {"afterstate": after_probes, "state": state_probes}


def same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        np.array_equal(a[k][0].view(np.uint64), b[k][0].view(np.uint64)) and np.array_equal(a[k][1], b[k][1]) for k in a
    )


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--board", default="4x3")
    parser.add_argument("--objective", default="tile:6")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--designs", default=DEFAULT_DESIGNS)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    spec = SolveSpec.parse(args.board, args.objective)
    names = args.designs.split(",")
    for name in names:
        design(name)  # an unknown name fails before the forward pass
    layers = {}
    t0 = time.perf_counter()
    counts = run_forward(spec, on_age=lambda c, s, a: layers.__setitem__(c.age, (s, a)), progress=False)
    forward_s = time.perf_counter() - t0
    work = sum(c.states + c.afterstates for c in counts)
    threads = numba.get_num_threads()
    print(f"{spec.describe()}: {work:,} states+afterstates, forward {forward_s:.1f} s on {threads} threads")
    small = {a: layers[a] for a in sorted(layers)[-8:]}  # the largest ages: their children are all there
    for name in names:
        solve_all(spec, small, name)  # compile
    times = {name: [] for name in names}
    steps = {name: {} for name in names}
    reference = None
    for _ in range(args.repeats):
        for name in names:
            seconds, results = solve_all(spec, layers, name, steps[name])
            if reference is None:
                reference = results
            elif not same(reference, results):
                raise SystemExit(f"design {name} gives other values or actions than {names[0]}")
            times[name].append(seconds)
            del results
    probes = probe_counts(spec, layers)
    out = {
        "board": args.board,
        "objective": args.objective,
        "work": work,
        "threads": threads,
        "forward_s": forward_s,
        "probes": probes,
        "designs": {},
    }
    print(f"lookups: {probes['afterstate']:,} by afterstates, {probes['state']:,} by states")
    base = statistics.median(times[names[0]])
    for name in names:
        med = statistics.median(times[name])
        rate = work / med / threads
        mean_steps = {k: v / args.repeats for k, v in steps[name].items()}
        lookups = {k: probes[k] / mean_steps[k] / threads for k in probes}
        out["designs"][name] = {
            "seconds": times[name],
            "median_s": med,
            "per_core_second": rate,
            "step_seconds": mean_steps,
            "lookups_per_core_second": lookups,
        }
        print(
            f"{name:>10}: {med:7.1f} s (median of {args.repeats}), {rate / 1e6:5.2f} M per core-second, "
            f"{base / med:4.2f}x {names[0]}; identical"
        )
        print(
            f"{'':>10}  mean per pass: afterstate kernel {mean_steps['afterstate']:.1f} s "
            f"({lookups['afterstate'] / 1e6:.1f} M lookups per core-second), state kernel "
            f"{mean_steps['state']:.1f} s ({lookups['state'] / 1e6:.1f} M), index builds {mean_steps['index']:.1f} s"
        )
    if args.json:
        write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
