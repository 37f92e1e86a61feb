"""How a game's ages split by *material*: the multiset of the tiles >= T on a board (issue 38, "measure first").

    python -m experiments.scale.material --board 4x3 --objective tile:8 [--max-age A] [--json OUT]
    python -m experiments.scale.material --pattern L3 --target 256 --json OUT

Symmetries and spawns (2s and 4s, below every T >= 8) leave a board's material unchanged; a move changes it only
by merging tiles >= T/2.  So if each *column* (one material key) of an age were solved by one worker, every spawn
lookup would stay in its column, and only the moves that change the key would need another column's values.  For
each age of the forward pass and each T in ``--thresholds`` this measures:

* the columns: how many keys the age's states and afterstates take, and the largest column's share of the age's
  work (states + afterstates), which bounds the age's parallel speed-up by columns;
* the crossing moves: of the (state, legal move) pairs, the share whose afterstate has another key, and the
  number of distinct afterstates so reached (the values a column would have to receive: 8 B each).

Totals weight every age by its work.  The critical path by columns is the sum over ages of the largest column's
work; its ratio to the total work is the best time that one column per worker can reach, as a share of one
worker's time.

With ``--json OUT``, every age is appended to ``OUT`` (JSON Lines) as soon as it is measured, so that a stopped run
keeps its ages; the last line is the summary.  Each age's row also holds, per threshold, the histogram itself
(``keys`` with the ``states`` and ``afterstates`` of each) and the crossing ``pairs`` ``[source key, target key,
afterstates]``: the distinct (afterstate, source key) pairs of the crossing moves, by key pair.
``experiments.scale.critical_path`` replays the distributed build's assignment of keys to machines on them.
"""

from __future__ import annotations

import argparse
import json
import time

import numba
import numpy as np
from numba import types
from numba.typed import Dict

from env2048.kernels import canonical_packed
from env2048.rules import ILLEGAL, move_outcome
from solver.__main__ import add_spec_args, material_low, spec_from_args
from solver.distributed.material import material_key, material_keys
from solver.forward import run_forward
from solver.spec import SolveSpec
from solver.threads import block_kernel, run_parallel

#: Exponents of the thresholds T measured by default: 8 ... 256.
THRESHOLDS = (3, 4, 5, 6, 7, 8)
#: A (source key, target key) pair.
_PAIR = types.UniTuple(types.uint64, 2)


@block_kernel
def crossing_block(lo, hi, states, T, rules, lows, reached, levels, legal):
    """States ``lo .. hi - 1`` of ``states``: for move a of state i, ``levels[4 * i + a]`` = the number of
    thresholds of ``lows`` (exponents, ascending) at which the move crosses (0 for none, or an illegal move) and
    ``reached[4 * i + a]`` its canonical afterstate when it crosses; ``legal[i]`` = the state's legal moves.  A
    move crosses at threshold ``low`` when its afterstate's key differs from its state's; it then crosses at every
    lower threshold too (a move changes the tiles >= 2**low only by making one)."""
    cells = T.rows * T.cols
    n_lows = lows.shape[0]
    for i in range(lo, hi):
        b = states[i]
        legal[i] = 0
        crossing = 0  # bit set of the moves that crossed every threshold so far
        for a in range(4):
            levels[4 * i + a] = 0
            after, _, outcome = move_outcome(b, a, T.rows, T.cols, T.moves, rules)
            if outcome == ILLEGAL:
                continue
            legal[i] += 1
            reached[4 * i + a] = after  # the raw afterstate until it is known to cross
            crossing |= 1 << a
        for level in range(n_lows):  # the state's key once per threshold, not once per move
            if crossing == 0:
                break
            key = material_key(b, cells, lows[level])
            for a in range(4):
                if crossing >> a & 1:
                    if material_key(reached[4 * i + a], cells, lows[level]) != key:
                        levels[4 * i + a] = level + 1
                    else:
                        crossing &= ~(1 << a)
        for a in range(4):
            if levels[4 * i + a]:
                reached[4 * i + a] = canonical_packed(reached[4 * i + a], T.rows, T.cols, T.sym_lines, T.sym_bytes)


def crossing_moves(states: np.ndarray, T, rules, lows: np.ndarray) -> tuple:
    """Every threshold at once (``lows``: exponents, ascending ``int64[L]``), each state moved once, on the
    solver's threads: ``(legal moves, crossing moves int64[L], canonical afterstates uint64[m], levels uint8[m],
    sources int64[m])`` for the m crossing moves, in the order of ``states`` (``uint64[n]``): ``levels`` counts the
    thresholds at which each crosses, ``sources`` are the indices in ``states`` of the moved boards."""
    n = states.shape[0]
    reached = np.empty(4 * n, np.uint64)
    levels = np.empty(4 * n, np.uint8)
    legal = np.empty(n, np.uint8)
    run_parallel(crossing_block, n, states, T, rules, lows, reached, levels, legal, min_block=1024)
    crossing = np.array([np.count_nonzero(levels > k) for k in range(lows.shape[0])], np.int64)
    moved = np.flatnonzero(levels)
    return int(legal.sum(dtype=np.int64)), crossing, reached[moved], levels[moved], moved // 4


@numba.njit(cache=True)
def crossing_pairs(afterstates, source_keys, target_keys):
    """The distinct (afterstate, source key) pairs of crossing moves, counted by (source key, target key):
    ``(sources uint64[p], targets uint64[p], counts int64[p])``, one entry per key pair (in no set order).
    ``afterstates`` (``uint64[m]``) must be sorted; ``source_keys`` and ``target_keys`` (``uint64[m]``) go with
    them.  Equal afterstates are few (the moves of a handful of states), so each run of them is deduplicated by a
    scan."""
    counts = Dict.empty(key_type=_PAIR, value_type=types.int64)
    n = afterstates.shape[0]
    i = 0
    while i < n:
        j = i
        while j < n and afterstates[j] == afterstates[i]:
            j += 1
        for k in range(i, j):
            seen = False
            for earlier in range(i, k):
                if source_keys[earlier] == source_keys[k]:
                    seen = True
                    break
            if not seen:
                pair = (source_keys[k], target_keys[k])
                counts[pair] = counts.get(pair, 0) + 1
        i = j
    sources = np.empty(len(counts), np.uint64)
    targets = np.empty(len(counts), np.uint64)
    numbers = np.empty(len(counts), np.int64)
    p = 0
    for pair, number in counts.items():
        sources[p], targets[p], numbers[p] = pair[0], pair[1], number
        p += 1
    return sources, targets, numbers


def key_histogram(state_keys: np.ndarray, after_keys: np.ndarray) -> dict:
    """``{"keys": [...], "states": [...], "afterstates": [...]}``: each material key of the age (ascending) with
    its number of states and of afterstates, from the keys of every state and afterstate (``uint64[n]``)."""
    state_keys, state_counts = np.unique(state_keys, return_counts=True)
    after_keys, after_counts = np.unique(after_keys, return_counts=True)
    keys = np.union1d(state_keys, after_keys)
    per_state = np.zeros(keys.size, np.int64)
    per_after = np.zeros(keys.size, np.int64)
    per_state[np.searchsorted(keys, state_keys)] = state_counts
    per_after[np.searchsorted(keys, after_keys)] = after_counts
    return {"keys": [int(k) for k in keys], "states": per_state.tolist(), "afterstates": per_after.tolist()}


def measure_age(states: np.ndarray, afterstates: np.ndarray, spec: SolveSpec, lows=THRESHOLDS) -> dict:
    """One age's columns, histogram and crossing moves for each threshold exponent of ``lows`` (ascending)."""
    row = {"states": int(states.size), "afterstates": int(afterstates.size), "by_threshold": {}}
    work = states.size + afterstates.size
    lows = np.sort(np.asarray(lows, np.int64))
    legal, crossing, reached, levels, sources = crossing_moves(states, spec.tables, spec.rules, lows)
    order = np.argsort(reached, kind="stable")
    reached, levels, sources = reached[order], levels[order], sources[order]
    for i, low in enumerate(lows):
        state_keys = material_keys(states, spec.cells, low)
        histogram = key_histogram(state_keys, material_keys(afterstates, spec.cells, low))
        sizes = np.asarray(histogram["states"]) + np.asarray(histogram["afterstates"])
        crossed = levels > i
        after = reached[crossed]
        pairs = zip(*crossing_pairs(after, state_keys[sources[crossed]], material_keys(after, spec.cells, low)),
                    strict=True)  # fmt: skip
        row["by_threshold"][str(1 << int(low))] = {
            "columns": int(sizes.size), "largest": int(sizes.max()) if sizes.size else 0,
            "largest_share": float(sizes.max() / work) if work else 0.0, "legal_moves": int(legal),
            "crossing_moves": int(crossing[i]),
            "crossing_afterstates": int(np.count_nonzero(np.diff(after)) + 1) if after.size else 0,
            **histogram, "pairs": sorted([int(a), int(b), int(n)] for a, b, n in pairs),
        }  # fmt: skip
    return row


def summarize(ages: dict[int, dict]) -> dict:
    """Per threshold, over all ages (weighted by work): columns (most in an age), the critical path's share of the
    total work, the share of crossing moves, and the crossing afterstates per state + afterstate."""
    total = sum(r["states"] + r["afterstates"] for r in ages.values())
    legal = {}
    out = {}
    for t in next(iter(ages.values()))["by_threshold"]:
        rows = [r["by_threshold"][t] for r in ages.values()]
        legal[t] = sum(x["legal_moves"] for x in rows)
        out[t] = {
            "most_columns": max(x["columns"] for x in rows),
            "critical_path_share": sum(x["largest"] for x in rows) / total,
            "crossing_move_share": sum(x["crossing_moves"] for x in rows) / max(legal[t], 1),
            "crossing_afterstates_per_item": sum(x["crossing_afterstates"] for x in rows) / total,
        }
    return {"ages": len(ages), "states_and_afterstates": total, "by_threshold": out}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_spec_args(parser)
    parser.add_argument("--max-age", type=int, default=None, help="stop the forward pass after this age")
    parser.add_argument("--thresholds", default=",".join(str(1 << t) for t in THRESHOLDS),
                        help="tiles T (powers of two >= 8) whose multisets key the columns")  # fmt: skip
    parser.add_argument(
        "--json", default=None, help="append every age's row here as it is measured (JSON Lines), then the summary"
    )
    args = parser.parse_args(argv)
    try:
        lows = tuple(material_low(int(t), "--thresholds") for t in args.thresholds.split(","))
    except ValueError as e:
        parser.error(f"{e} (spawns of 2 and 4 stay below)")
    try:
        spec = spec_from_args(args)
    except ValueError as e:
        parser.error(str(e))
    if args.threads:
        numba.set_num_threads(args.threads)
    ages: dict[int, dict] = {}
    start = time.perf_counter()
    sink = open(args.json, "w") if args.json else None  # noqa: SIM115 (closed below; one line per age)

    def on_age(count, states, afterstates):
        ages[count.age] = measure_age(states, afterstates, spec, lows)
        if sink is not None:
            sink.write(json.dumps({"age": count.age, **ages[count.age]}) + "\n")
            sink.flush()

    try:
        run_forward(spec, on_age=on_age, max_age=args.max_age, progress=not args.quiet)
        summary = summarize(ages)
        summary["seconds"] = time.perf_counter() - start
        summary["spec"] = spec.describe()
        if sink is not None:
            sink.write(json.dumps({"summary": summary}) + "\n")
    finally:
        if sink is not None:
            sink.close()
    print(f"{spec.describe()}: {summary['ages']} ages, {summary['states_and_afterstates']:,} states+afterstates, "
          f"{summary['seconds']:.0f} s")  # fmt: skip
    print("T      most columns  critical path  crossing moves  crossing afterstates per item")
    for t, s in summary["by_threshold"].items():
        shares = f"{s['critical_path_share']:>13.4f}  {s['crossing_move_share']:>14.4f}"
        print(f"{t:>5}  {s['most_columns']:>12,}  {shares}  {s['crossing_afterstates_per_item']:>10.4f}")


def load_ages(path) -> dict[int, dict]:
    """The ages of a ``--json`` file (JSON Lines, possibly cut short by a stopped run): ``{age: row}``."""
    ages = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                if "age" in row:
                    ages[int(row.pop("age"))] = row
    return ages


if __name__ == "__main__":
    main()
