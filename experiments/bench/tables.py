"""Table format v2 figures: 3x3 table size and build, oracle speed, 4x3 ID bits and the full 4x3 projection.

    python -m experiments.bench.tables [--repeats 3] [--max-age 300] [--skip-3x3] [--skip-4x3] [--json FILE]

* 3x3 score table: ``python -m solver build --board 3x3`` in its own process (numba caches warm: one untimed
  run first), median wall time and peak RSS of ``--repeats`` runs, alternating with ``--format 1`` builds as the
  baseline (``os.sync()`` before each, so that no run pays for the previous one's writes); size on disk, bits
  per afterstate ID and per value from ``solver info``.
* Oracle on that table: ``Oracle.open`` time; batched ``q_values`` on 2,000,000 boards drawn uniformly from the
  table's states (derived from its afterstates); one-board latency (median of 2,000 calls).  Medians of
  ``--repeats``.
* 4x3: the forward pass to ``--max-age`` with every afterstate layer coded as in v2 (bits per ID measured, state
  counts compared with the published per-age counts), states + afterstates per core-second.
* Projection of the full 4x3 score table: per age, Elias-Fano's exact size for ``n`` afterstates of universe
  ``U(age)``, with ``n`` = the published state count times the afterstates/states ratio (measured where the
  forward pass ran, the rest scaled so that the total is the published 739,648,886,170), plus values at the
  width the ``float`` code needs for the value range (``--value-bits``, 24 by default: 19 mantissa bits and 5
  exponent bits, which cover 2^-5 .. 2^16, from the smallest non-zero 3x3 value, 0.8, to the 4x3 start value).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from experiments.bench.solver import run_measured
from oracle import Oracle
from solver import bits
from solver.build import set_threads
from solver.format import Table, elias_fano, ranking
from solver.format.v2 import encode_boards
from solver.forward import run_forward
from solver.spec import SolveSpec

#: Published per-age 4x3 state counts ("age count" per line), in ``shared/data`` next to the repository
#: (``experiments/bench/`` is two levels below the repository's root).
PUBLISHED_4X3 = Path(__file__).resolve().parents[3] / "shared" / "data" / "4x3_states_per_age.txt"
#: Seed 000's totals for the whole 4x3 game.
STATES_4X3, AFTERSTATES_4X3 = 1_152_817_492_752, 739_648_886_170
TIB = 2**40


def ef_bytes(n: int, universe: int) -> int:
    """Bytes of an Elias-Fano code of ``n`` ranks below ``universe`` as format v2 stores it (spare words too)."""
    L = elias_fano.low_bits_for(n, universe)
    return 8 * (bits.words_for(elias_fano.upper_bits_for(n, universe, L)) + bits.words_for(n * L))


def bench_3x3(repeats: int) -> dict:
    out: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        table = str(Path(tmp) / "3x3.h5")
        build = ["build", "--board", "3x3", "--out", table, "--quiet"]
        baseline = ["build", "--board", "3x3", "--out", str(Path(tmp) / "v1.h5"), "--quiet", "--format", "1"]
        run_measured(build)  # compile and warm caches
        run_measured(baseline)
        runs, v1_runs = [], []
        for _ in range(repeats):  # alternate, so that both see the same machine; each starts with no dirty pages
            os.sync()
            runs.append(run_measured(build))
            os.sync()
            v1_runs.append(run_measured(baseline))
        info = json.loads(run_measured(["info", table, "--json"])[2])
        out["build"] = {
            "runs_s": [round(r[0], 2) for r in runs],
            "median_s": round(statistics.median(r[0] for r in runs), 2),
            "peak_rss_gb": round(max(r[1] for r in runs), 3),
            "v1_runs_s": [round(r[0], 2) for r in v1_runs],
            "v1_median_s": round(statistics.median(r[0] for r in v1_runs), 2),
        }
        out["table"] = {
            k: info[k]
            for k in (
                "bytes",
                "bits_per_afterstate_id",
                "bits_per_afterstate_value",
                "bits_per_afterstate_on_disk",
                "states",
                "afterstates",
            )
        }
        print(
            f"3x3 build: median {out['build']['median_s']} s of {out['build']['runs_s']} (format v1 in the same "
            f"run: {out['build']['v1_median_s']} s of {out['build']['v1_runs_s']}), peak "
            f"{out['build']['peak_rss_gb']} GB; table {info['bytes'] / 1e6:.1f} MB: "
            f"{info['bits_per_afterstate_id']:.2f} bits per afterstate ID + "
            f"{info['bits_per_afterstate_value']:.2f} per value ({info['bits_per_afterstate_on_disk']:.2f} on disk "
            f"with HDF5 overhead)",
            flush=True,
        )

        opens = []
        for _ in range(max(repeats, 5)):
            t0 = time.perf_counter()
            Oracle.open(table).close()
            opens.append(time.perf_counter() - t0)
        with Table(table) as t:
            states = np.concatenate([t.layer(c.age, names=("states",))["states"] for c in t.counts()])
        boards = np.ascontiguousarray(states[np.random.default_rng(0).integers(0, states.size, 2_000_000)])
        oracle = Oracle.open(table)
        oracle.q_values(boards[:1000])  # compile
        rates = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            oracle.q_values(boards)
            rates.append(boards.size / (time.perf_counter() - t0))
        lat = []
        for b in boards[:2000]:
            t0 = time.perf_counter()
            oracle.q_values(b)
            lat.append(time.perf_counter() - t0)
        out["oracle"] = {
            "open_s": [round(x, 4) for x in opens],
            "open_median_s": round(statistics.median(opens), 4),
            "q_per_s": [round(r) for r in rates],
            "q_per_s_median": round(statistics.median(rates)),
            "one_board_us_median": round(1e6 * statistics.median(lat), 1),
            "resident_mb": round(oracle.resident_bytes / 1e6, 1),
        }
        o = out["oracle"]
        print(
            f"oracle: open {1000 * o['open_median_s']:.1f} ms (median of {len(opens)}); batched q_values on 2M "
            f"boards {o['q_per_s_median']:,}/s (runs {o['q_per_s']}); one board {o['one_board_us_median']} us; "
            f"open layers {o['resident_mb']} MB",
            flush=True,
        )
    return out


def bench_4x3(max_age: int) -> dict:
    spec = SolveSpec.parse("4x3")
    cores = set_threads(None)
    published = dict(np.loadtxt(PUBLISHED_4X3, dtype=np.int64))
    rows, mismatches = [], []
    code_s = 0.0

    def on_age(count, states, afterstates):
        nonlocal code_s
        t0 = time.perf_counter()
        upper, lower, _ = encode_boards(count.age, afterstates, spec)
        code_s += time.perf_counter() - t0
        if published.get(count.age) != count.states:
            mismatches.append(count.age)
        universe = ranking.boards_of_age(spec.rows, spec.cols, count.age)
        rows.append((count.age, count.states, count.afterstates, universe, 8 * (upper.nbytes + lower.nbytes)))

    t0 = time.perf_counter()
    run_forward(spec, on_age=on_age, max_age=max_age, progress=False)
    wall = time.perf_counter() - t0 - code_s
    n_states = sum(r[1] for r in rows)
    n_after = sum(r[2] for r in rows)
    id_bits = sum(r[4] for r in rows)
    assert all(8 * ef_bytes(r[2], r[3]) == r[4] for r in rows), "the size formula must match the coded layers"
    late = [r for r in rows if r[0] > max_age - 100]
    out = {
        "max_age": max_age,
        "states": n_states,
        "afterstates": n_after,
        "forward_s": round(wall, 1),
        "per_core_second": round((n_states + n_after) / (wall * cores)),
        "code_s": round(code_s, 1),
        "bits_per_id": round(id_bits / n_after, 3),
        "bits_per_id_last_100_ages": round(sum(r[4] for r in late) / sum(r[2] for r in late), 3),
        "ages_not_matching_published_counts": mismatches,
        "after_per_state": {r[0]: r[2] / r[1] for r in rows},
    }
    print(
        f"4x3 forward to age {max_age}: {n_states:,} states + {n_after:,} afterstates in {wall:.0f} s -> "
        f"{out['per_core_second']:,} per core-second (coding the layers: {code_s:.0f} s more); state counts "
        f"{'equal the published ones at every age' if not mismatches else 'DIFFER at ages ' + str(mismatches[:5])}"
        f"; {out['bits_per_id']:.2f} bits per afterstate ID ({out['bits_per_id_last_100_ages']:.2f} over the "
        f"last 100 ages)",
        flush=True,
    )
    return out


def project_4x3(measured_ratio: dict[int, float], value_bits: int) -> dict:
    published = np.loadtxt(PUBLISHED_4X3, dtype=np.int64)
    assert int(published[:, 1].sum()) == STATES_4X3, "published per-age counts must add up to seed 000's total"
    measured = {int(a): r for a, r in measured_ratio.items()}
    known_after = sum(r * c for a, c in published if (r := measured.get(int(a))) is not None)
    rest_states = sum(int(c) for a, c in published if int(a) not in measured)
    rest_ratio = (AFTERSTATES_4X3 - known_after) / rest_states
    id_bytes = value_bytes = 0
    worst = (0.0, 0)
    for age, count in published:
        n = int(round(count * measured.get(int(age), rest_ratio)))
        b = ef_bytes(n, ranking.boards_of_age(4, 3, int(age)))
        id_bytes += b
        value_bytes += 8 * bits.words_for(n * value_bits)
        worst = max(worst, (8 * b / max(n, 1), int(age)))
    total = id_bytes + value_bytes
    out = {
        "afterstates_per_state_unmeasured_ages": round(rest_ratio, 4),
        "id_bytes": id_bytes,
        "value_bytes": value_bytes,
        "value_bits": value_bits,
        "total_bytes": total,
        "total_tib": round(total / TIB, 3),
        "bits_per_id": round(8 * id_bytes / AFTERSTATES_4X3, 3),
        "worst_age_bits_per_id": {"age": worst[1], "bits": round(worst[0], 2)},
    }
    print(
        f"4x3 full score table, projected: IDs {id_bytes / TIB:.3f} TiB ({out['bits_per_id']:.2f} bits each) + "
        f"values {value_bytes / TIB:.3f} TiB ({value_bits} bits each) = {total / TIB:.3f} TiB "
        f"(afterstates per state beyond the measured ages: {rest_ratio:.4f})",
        flush=True,
    )
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-age", type=int, default=300, help="last age of the 4x3 forward pass")
    parser.add_argument("--value-bits", type=int, default=24, help="value width for the projection")
    parser.add_argument("--skip-3x3", action="store_true")
    parser.add_argument("--skip-4x3", action="store_true")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    report: dict = {"cores": os.cpu_count()}
    if not args.skip_3x3:
        report["3x3"] = bench_3x3(args.repeats)
    ratio: dict[int, float] = {}
    if not args.skip_4x3:
        report["4x3_forward"] = bench_4x3(args.max_age)
        ratio = report["4x3_forward"]["after_per_state"]
    report["4x3_projection"] = {bits: project_4x3(ratio, bits) for bits in sorted({args.value_bits, 23, 24})}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
