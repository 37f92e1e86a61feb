"""How a game's ages split by *material*: the multiset of the tiles >= T on a board (issue 38, "measure first").

    python -m experiments.scale.material --board 4x3 --objective tile:8 [--max-age A] [--json OUT]

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
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numba
import numpy as np

from env2048.kernels import canonical_packed
from env2048.rules import ILLEGAL, move_outcome
from solver.distributed.material import material_key, material_keys
from solver.forward import run_forward
from solver.spec import SolveSpec

#: Exponents of the thresholds T measured by default: 8 ... 256.
THRESHOLDS = (3, 4, 5, 6, 7, 8)


@numba.njit(cache=True)
def crossing_moves(states, T, rules, lows):
    """Every threshold at once (``lows``: exponents, ascending ``int64[L]``), each state moved once: ``(legal
    moves, crossing moves int64[L], canonical afterstates uint64[m], levels uint8[m])``.  A move crosses at
    threshold ``low`` when its afterstate's key differs from its state's; it then crosses at every lower threshold
    too (a move changes the tiles >= 2**low only by making one), so each move that crosses at ``lows[0]`` is
    listed once, with ``level`` = the number of thresholds at which it crosses."""
    cells = T.rows * T.cols
    n_lows = lows.shape[0]
    out = np.empty(4 * states.shape[0], np.uint64)
    levels = np.empty(4 * states.shape[0], np.uint8)
    crossing = np.zeros(n_lows, np.int64)
    state_keys = np.empty(n_lows, np.uint64)
    legal, m = 0, 0
    for i in range(states.shape[0]):
        b = states[i]
        for k in range(n_lows):
            state_keys[k] = material_key(b, cells, lows[k])
        for a in range(4):
            after, _, outcome = move_outcome(b, a, T.rows, T.cols, T.moves, rules)
            if outcome == ILLEGAL:
                continue
            legal += 1
            level = 0
            while level < n_lows and material_key(after, cells, lows[level]) != state_keys[level]:
                crossing[level] += 1
                level += 1
            if level:
                out[m] = canonical_packed(after, T.rows, T.cols, T.sym_lines, T.sym_bytes)
                levels[m] = level
                m += 1
    return legal, crossing, out[:m], levels[:m]


def measure_age(states: np.ndarray, afterstates: np.ndarray, spec: SolveSpec, lows=THRESHOLDS) -> dict:
    """One age's columns and crossing moves for each threshold exponent of ``lows`` (ascending)."""
    row = {"states": int(states.size), "afterstates": int(afterstates.size), "by_threshold": {}}
    work = states.size + afterstates.size
    lows = np.sort(np.asarray(lows, np.int64))
    legal, crossing, reached, levels = crossing_moves(states, spec.tables, spec.rules, lows)
    for i, low in enumerate(lows):
        keys = np.concatenate([material_keys(states, spec.cells, low), material_keys(afterstates, spec.cells, low)])
        _, sizes = np.unique(keys, return_counts=True)
        row["by_threshold"][str(1 << int(low))] = {
            "columns": int(sizes.size), "largest": int(sizes.max()) if sizes.size else 0,
            "largest_share": float(sizes.max() / work) if work else 0.0, "legal_moves": int(legal),
            "crossing_moves": int(crossing[i]), "crossing_afterstates": int(np.unique(reached[levels > i]).size),
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
    parser.add_argument("--board", default="4x3")
    parser.add_argument("--objective", default="tile:8")
    parser.add_argument("--max-age", type=int, default=None, help="stop the forward pass after this age")
    parser.add_argument("--thresholds", default=",".join(str(1 << t) for t in THRESHOLDS),
                        help="tiles T (powers of two >= 8) whose multisets key the columns")  # fmt: skip
    parser.add_argument("--json", default=None, help="write every age's row and the summary here")
    args = parser.parse_args(argv)
    tiles = [int(t) for t in args.thresholds.split(",")]
    if any(t < 8 or t & (t - 1) for t in tiles):
        parser.error(f"--thresholds must be powers of two >= 8 (spawns of 2 and 4 stay below), got {tiles}")
    lows = tuple(t.bit_length() - 1 for t in tiles)
    spec = SolveSpec.parse(args.board, args.objective)
    ages: dict[int, dict] = {}
    start = time.perf_counter()

    def on_age(count, states, afterstates):
        ages[count.age] = measure_age(states, afterstates, spec, lows)

    run_forward(spec, on_age=on_age, max_age=args.max_age)
    summary = summarize(ages)
    summary["seconds"] = time.perf_counter() - start
    summary["spec"] = spec.describe()
    print(f"{spec.describe()}: {summary['ages']} ages, {summary['states_and_afterstates']:,} states+afterstates, "
          f"{summary['seconds']:.0f} s")  # fmt: skip
    print("T      most columns  critical path  crossing moves  crossing afterstates per item")
    for t, s in summary["by_threshold"].items():
        shares = f"{s['critical_path_share']:>13.4f}  {s['crossing_move_share']:>14.4f}"
        print(f"{t:>5}  {s['most_columns']:>12,}  {shares}  {s['crossing_afterstates_per_item']:>10.4f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "ages": ages}, indent=1) + "\n")


if __name__ == "__main__":
    main()
