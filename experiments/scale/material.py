"""How a game's ages split by *material*: the multiset of the tiles >= T on a board.

    python -m experiments.scale.material --board 4x3 --objective tile:8 [--min-age A] [--max-age A] [--json OUT]
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

from env2048.kernels import canonical_packed
from env2048.rules import ILLEGAL, move_outcome
from solver.__main__ import add_spec_args, material_low, spec_from_args
from solver.distributed.material import material_key, material_keys
from solver.forward import n_chunks_for, run_forward
from solver.kernels import _sort_unique_inplace, chunk_bounds, merge_runs
from solver.spec import SolveSpec
from solver.threads import block_kernel, run_parallel

#: Exponents of the thresholds T measured by default: 8 ... 256.
THRESHOLDS = (3, 4, 5, 6, 7, 8)


@block_kernel
def crossing_block(lo, hi, states, T, rules, low, digits, reached, levels, legal):
    """States ``lo .. hi - 1`` of ``states``: for move a of state i, ``levels[4 * i + a]`` = the number of
    thresholds at which the move crosses (0 for none, or an illegal move) and ``reached[4 * i + a]`` its
    canonical afterstate when it crosses; ``legal[i]`` = the state's legal moves.  The thresholds are given as
    ``digits`` (``uint64[L]``, ascending, the first 1): a key at threshold j is the key at the finest threshold
    ``low`` divided by ``digits[j]``.  A move crosses at a threshold when its afterstate's key differs from its
    state's; it then crosses at every finer threshold too (a move changes the tiles >= 2**low only by making
    one)."""
    cells = T.rows * T.cols
    n_levels = digits.shape[0]
    for i in range(lo, hi):
        b = states[i]
        legal[i] = 0
        key = material_key(b, cells, low)
        for a in range(4):
            levels[4 * i + a] = 0
            after, _, outcome = move_outcome(b, a, T.rows, T.cols, T.moves, rules)
            if outcome == ILLEGAL:
                continue
            legal[i] += 1
            after_key = material_key(after, cells, low)
            level = 0
            while level < n_levels and after_key // digits[level] != key // digits[level]:
                level += 1
            if level:
                levels[4 * i + a] = level
                reached[4 * i + a] = canonical_packed(after, T.rows, T.cols, T.sym_lines, T.sym_bytes)


def key_digits(lows: np.ndarray) -> np.ndarray:
    """``uint64[L]``: for thresholds ``lows`` (exponents, ascending), what the finest threshold's key is divided
    by to give each one's: a key's base-17 digits count the exponents from ``lows[0]`` up."""
    return np.array([17 ** int(low - lows[0]) for low in lows], np.uint64)


def crossing_moves(states: np.ndarray, T, rules, lows: np.ndarray) -> tuple:
    """Every threshold at once (``lows``: exponents, ascending ``int64[L]``), each state moved once, on the
    solver's threads: ``(legal moves, crossing moves int64[L], canonical afterstates uint64[m], levels uint8[m],
    sources int64[m])`` for the m crossing moves, in the order of ``states`` (``uint64[n]``): ``levels`` counts the
    thresholds at which each crosses, ``sources`` are the indices in ``states`` of the moved boards."""
    n = states.shape[0]
    reached = np.empty(4 * n, np.uint64)
    levels = np.empty(4 * n, np.uint8)
    legal = np.empty(n, np.uint8)
    run_parallel(
        crossing_block, n, states, T, rules, int(lows[0]), key_digits(lows), reached, levels, legal, min_block=1024
    )
    crossing = np.array([np.count_nonzero(levels > k) for k in range(lows.shape[0])], np.int64)
    moved = np.flatnonzero(levels)
    return int(legal.sum(dtype=np.int64)), crossing, reached[moved], levels[moved], moved // 4


@numba.njit(cache=True, nogil=True)
def _sort_unique_chunks(lo, hi, values, bounds, key_bits, counts):
    for chunk in range(lo, hi):
        counts[chunk] = _sort_unique_inplace(values, bounds[chunk], bounds[chunk + 1], key_bits)


def sorted_unique(values: np.ndarray, key_bits: int) -> np.ndarray:
    """The distinct values of ``values`` (``uint64[m]``, each below ``2**key_bits``; overwritten), sorted: chunks
    radix-sorted on the solver's threads, then merged as the forward pass merges its runs."""
    n_chunks = n_chunks_for(values.size)
    bounds = chunk_bounds(values.size, n_chunks)
    counts = np.zeros(n_chunks, np.int64)
    run_parallel(_sort_unique_chunks, n_chunks, values, bounds, key_bits, counts)
    return merge_runs(values, bounds[:-1], counts)


def distinct_crossings(afterstates: np.ndarray, sources: np.ndarray, board_bits: int) -> tuple:
    """The distinct (afterstate, source) pairs of crossing moves (``uint64[m]``, ``int64[m]``: the canonical
    afterstate and a small index of the moved state's key), sorted by afterstate, then source:
    ``(uint64[p], int64[p])``.  Where a board and the index fit one 64-bit word together, they are sorted as one
    word, in parallel; else by ``np.lexsort``."""
    index_bits = max(1, int(sources.max()).bit_length()) if sources.size else 1
    if board_bits + index_bits <= 64:
        shift = np.uint64(index_bits)
        packed = sorted_unique((afterstates << shift) | sources.astype(np.uint64), board_bits + index_bits)
        return packed >> shift, (packed & np.uint64((1 << index_bits) - 1)).astype(np.int64)
    order = np.lexsort((sources, afterstates))
    afterstates, sources = afterstates[order], sources[order]
    first = np.ones(afterstates.size, bool)
    first[1:] = (afterstates[1:] != afterstates[:-1]) | (sources[1:] != sources[:-1])
    return afterstates[first], sources[first]


def count_pairs(sources: np.ndarray, targets: np.ndarray, source: np.ndarray, target: np.ndarray) -> list:
    """``[[source key, target key, number], ...]`` (sorted): how often each pair (``sources[source[k]]``,
    ``targets[target[k]]``) occurs; ``sources`` and ``targets`` are sorted ``uint64`` keys, ``source`` and
    ``target`` (``int64[p]``) index them."""
    ids = source * targets.size + target
    if sources.size * targets.size <= 1 << 22:
        counts = np.bincount(ids, minlength=sources.size * targets.size)
        ids = np.flatnonzero(counts)
        counts = counts[ids]
    else:
        ids, counts = np.unique(ids, return_counts=True)
    return [
        [int(sources[i // targets.size]), int(targets[i % targets.size]), int(n)]
        for i, n in zip(ids.tolist(), counts.tolist(), strict=True)
    ]


def key_histogram(keys: np.ndarray, index: np.ndarray, state_counts: np.ndarray, after_counts: np.ndarray) -> dict:
    """``{"keys": [...], "states": [...], "afterstates": [...]}``: the keys ``keys`` (sorted ``uint64[k]``) with
    the states and afterstates (``int64[f]``) of the finer keys that ``index`` (``int64[f]``) maps onto each."""
    return {
        "keys": keys.tolist(),
        "states": np.bincount(index, state_counts, keys.size).astype(np.int64).tolist(),
        "afterstates": np.bincount(index, after_counts, keys.size).astype(np.int64).tolist(),
    }


def measure_age(states: np.ndarray, afterstates: np.ndarray, spec: SolveSpec, lows=THRESHOLDS) -> dict:
    """One age's columns, histogram and crossing moves for each threshold exponent of ``lows``.

    Everything is measured once, at the finest threshold; a coarser key is the finer one without its lowest
    digits (:func:`key_digits`), so each coarser threshold is a pass over small index maps."""
    row = {"states": int(states.size), "afterstates": int(afterstates.size), "by_threshold": {}}
    work = states.size + afterstates.size
    lows = np.sort(np.asarray(lows, np.int64))
    finest = int(lows[0])
    legal, crossing, reached, _, sources = crossing_moves(states, spec.tables, spec.rules, lows)
    state_keys = material_keys(states, spec.cells, finest)
    after_keys = material_keys(afterstates, spec.cells, finest)
    keys = np.union1d(np.unique(state_keys), np.unique(after_keys))
    state_index = np.searchsorted(keys, state_keys)
    state_counts = np.bincount(state_index, minlength=keys.size)
    after_counts = np.bincount(np.searchsorted(keys, after_keys), minlength=keys.size)
    # every move in ``reached`` crosses at the finest threshold; its distinct (afterstate, source key) pairs
    after, source = distinct_crossings(reached, state_index[sources], 4 * spec.cells)
    target_keys = material_keys(after, spec.cells, finest)  # a won afterstate's key may be no key of the age's
    targets = np.unique(target_keys)
    target = np.searchsorted(targets, target_keys)
    new_after = np.ones(after.size, bool)
    new_after[1:] = after[1:] != after[:-1]
    for i, digits in enumerate(key_digits(lows)):
        coarse_keys, coarse = np.unique(keys // digits, return_inverse=True)
        coarse_targets, coarse_target = np.unique(targets // digits, return_inverse=True)
        histogram = key_histogram(coarse_keys, coarse, state_counts, after_counts)
        sizes = np.asarray(histogram["states"]) + np.asarray(histogram["afterstates"])
        s, t = coarse[source], coarse_target[target]
        first = new_after.copy()  # within an afterstate, coarser keys keep the finer keys' order
        first[1:] |= s[1:] != s[:-1]
        kept = np.flatnonzero(first & (coarse_keys[s] != coarse_targets[t]))
        row["by_threshold"][str(1 << int(lows[i]))] = {
            "columns": int(sizes.size),
            "largest": int(sizes.max()) if sizes.size else 0,
            "largest_share": float(sizes.max() / work) if work else 0.0,
            "legal_moves": int(legal),
            "crossing_moves": int(crossing[i]),
            "crossing_afterstates": int(np.count_nonzero(np.diff(after[kept])) + 1) if kept.size else 0,
            **histogram,
            "pairs": count_pairs(coarse_keys, coarse_targets, s[kept], t[kept]),
        }
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
    parser.add_argument(
        "--min-age",
        type=int,
        default=0,
        help="measure only from this age on (the forward pass still runs from the start): the "
        "score game's ages below 256 are tile:8's",
    )
    parser.add_argument(
        "--thresholds",
        default=",".join(str(1 << t) for t in THRESHOLDS),
        help="tiles T (powers of two >= 8) whose multisets key the columns",
    )
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
        if count.age < args.min_age:
            return
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
    print(
        f"{spec.describe()}: {summary['ages']} ages, {summary['states_and_afterstates']:,} states+afterstates, "
        f"{summary['seconds']:.0f} s"
    )
    print("T      most columns  critical path  crossing moves  crossing afterstates per item")
    for t, s in summary["by_threshold"].items():
        shares = f"{s['critical_path_share']:>13.4f}  {s['crossing_move_share']:>14.4f}"
        print(f"{t:>5}  {s['most_columns']:>12,}  {shares}  {s['crossing_afterstates_per_item']:>10.4f}")


def load_ages(*paths) -> dict[int, dict]:
    """The ages of ``--json`` files (JSON Lines, possibly cut short by a stopped run): ``{age: row}``.  Several
    files are spliced: each replaces the ages of those before it from its own first age on (the score game
    measured with ``--min-age 256`` after ``tile:8``'s ages below 256, which are the score game's)."""
    ages: dict[int, dict] = {}
    for path in paths:
        rows = {}
        with open(path) as f:
            for line in f:
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    if line.endswith("\n"):
                        raise
                    break  # the last line of a run killed while it wrote
                if "age" in row:
                    rows[int(row.pop("age"))] = row
        if rows:
            ages = {age: row for age, row in ages.items() if age < min(rows)} | rows
    return ages


if __name__ == "__main__":
    main()
