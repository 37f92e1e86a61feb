"""Cost of the full 4x3 score table on real hardware, projected from rates measured here.

    python -m experiments.scale.project_4x3 --ray RAY.json --shuffle SHUFFLE.json --forward FWD.json [--json OUT]

This models the hash-sharded Ray backend, removed on 2026-11-26 (docs/4x3.md); its inputs were measured with
that backend's benchmarks, and the figures it gave stay in docs/4x3.md as the record.  Issue 38 replaces it with a
critical-path model per age of the build partitioned by material.

Inputs (JSON files written by the benchmarks of the time):

* ``--ray``: ``experiments.bench.ray_backend --board 4x3 --objective tile:K`` (as it then was) — forward and
  backward seconds of a complete sharded build on Ray and of the local build, with their states + afterstates:
  rates per core-second.
* ``--shuffle``: ``experiments.bench.shuffle`` (removed) — bytes the sharded build exchanged per state +
  afterstate, and its largest task.
* ``--forward``: ``experiments.bench.tables --skip-3x3 --max-age A`` — the forward pass of the 4x3 score game
  itself (rate, afterstates per state measured to age A) and the table-size projection.

Model, per machine count M (16 cores each; ``--cores``, ``--machines``):

* compute: seconds = (states + afterstates of the whole game) / (rate per core-second x 16 M), forward and
  backward with the measured Ray rates (which include Ray's task overhead on this 2-core machine, and the time
  the forward pass spends coding its layers).  Per-item work does not depend on the age, and every large age is
  cut into more shards than there are cores, so the age-by-age sequence is not the bottleneck (the ~8,000 age
  boundaries cost ~8,000 x 4 task round trips, minutes);
* network: a fraction (M - 1) / M of the exchanged bytes crosses between machines, each with ``--nic-gbps``
  (default 10 Gbit/s) each way; reported as its own time (an upper bound: it overlaps computation);
* memory per worker: the largest task's working set scales with the largest 4x3 age divided by the shards; the
  write task of an age holds the whole age (IDs, values, codes);
* one machine can also run the local backend (one process, whole ages in memory, its own measured rates) when
  its largest age fits ``--memory-gb``: :func:`local_backward_bytes` models the backward pass's live arrays,
  and the same model for the capped build's largest age is printed next to that build's measured peak;
* disk: the table (from the size projection) plus the work directory at its largest (the forward pass's coded
  states and afterstates of every age, before the backward pass consumes them).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from experiments.bench.tables import AFTERSTATES_4X3, PUBLISHED_4X3, STATES_4X3, TIB, ef_bytes
from solver import codec
from solver.build import HOLD_BYTES
from solver.value_index import MAX_LOAD, table_bits

HOUR = 3600.0


def load(path) -> dict:
    return json.loads(Path(path).read_text())


def work_dir_bytes(after_per_state: dict[int, float], rest_ratio: float) -> int:
    """The forward pass's coded states and afterstates over all ages (Elias-Fano, exact size per age)."""
    total = 0
    for age, count in np.loadtxt(PUBLISHED_4X3, dtype=np.int64):
        universe = codec.boards_of_age(4, 3, int(age))
        n_after = int(round(count * after_per_state.get(int(age), rest_ratio)))
        total += ef_bytes(int(count), universe) + ef_bytes(n_after, universe)
    return total


def value_table_bytes(n: int) -> int:
    """Bytes of a :mod:`solver.value_index` table of ``n`` keys (16-byte slots, a power of two of them)."""
    return 16 << int(table_bits(n, MAX_LOAD))


def local_backward_bytes(states: int, afterstates: int) -> int:
    """Memory of the local backward pass while it solves an age of ``states`` states and ``afterstates``
    afterstates, at the state kernel: the decoded IDs (8 bytes each), the value tables of ages + 2 and + 4 (taken
    as large as this age's) and of the afterstates, the afterstate values, state values and best actions, the
    forward layers held in memory (``HOLD_BYTES``), and one finished age waiting for the writer thread."""
    ids = 8 * (states + afterstates)
    tables = 2 * value_table_bytes(states) + value_table_bytes(afterstates)
    results = 8 * afterstates + 9 * states
    return ids + tables + 2 * results + HOLD_BYTES


def project(ray: dict, shuffle: dict, forward: dict, cores: int, machines: list[int], nic_gbps: float,
            shards_per_core: int, memory_gb: float = 64.0) -> dict:  # fmt: skip
    items = STATES_4X3 + AFTERSTATES_4X3
    measured_cores = 2
    rates = {
        "ray_forward": ray["states_plus_afterstates"] / (ray["ray"]["forward_s"] * measured_cores),
        "ray_backward": ray["states_plus_afterstates"] / (ray["ray"]["backward_s"] * measured_cores),
        "local_forward": ray["states_plus_afterstates"] / (ray["local"]["forward_s"] * measured_cores),
        "local_backward": ray["states_plus_afterstates"] / (ray["local"]["backward_s"] * measured_cores),
        "score_forward_kernel": forward["4x3_forward"]["per_core_second"],
    }
    runs = shuffle["runs"]
    biggest = max(runs, key=int)
    exchange = runs[biggest]["forward_bytes_per_item"] + runs[biggest]["backward_bytes_per_item"]
    published = np.loadtxt(PUBLISHED_4X3, dtype=np.int64)
    ratio = {int(a): r for a, r in forward["4x3_forward"]["after_per_state"].items()}
    projection = forward["4x3_projection"]
    table_bytes = projection.get("24", projection.get(24, next(iter(projection.values()))))["total_bytes"]
    rest_ratio = next(iter(projection.values()))["afterstates_per_state_unmeasured_ages"]
    largest_age_states = int(published[:, 1].max())
    largest_age_items = largest_age_states * (1 + rest_ratio)
    largest_age_after = largest_age_states * rest_ratio
    work_bytes = work_dir_bytes(ratio, rest_ratio)
    task_bytes_per_item = runs[biggest]["largest_task"]["bytes"] * int(biggest) / shuffle["largest_age_items"]
    out = {"rates_per_core_second": {k: round(v) for k, v in rates.items()}, "exchange_bytes_per_item": exchange,
           "table_tib": table_bytes / TIB, "work_dir_peak_tib": work_bytes / TIB,
           "disk_peak_tib": (table_bytes + work_bytes) / TIB, "machines": {}}  # fmt: skip
    measured_age = ray.get("largest_age")
    if measured_age:
        s, a = measured_age["states"], measured_age["afterstates"]
        model_gb = local_backward_bytes(largest_age_states, int(largest_age_after)) / 1e9
        out["local_one_machine"] = {
            "forward_h": round(items / (rates["local_forward"] * cores) / HOUR, 1),
            "backward_h": round(items / (rates["local_backward"] * cores) / HOUR, 1),
            "memory_gb_model": round(model_gb, 1),
            "model_gb_of_measured_age": round(local_backward_bytes(s, a) / 1e9, 2),
            "measured_peak_gb": ray["local"]["peak_gb"], "memory_gb": memory_gb,
            "fits": model_gb <= memory_gb,
        }  # fmt: skip
        local = out["local_one_machine"]
        local["compute_h"] = round(local["forward_h"] + local["backward_h"], 1)
    for m in machines:
        total_cores = cores * m
        shards = shards_per_core * total_cores
        fwd_h = items / (rates["ray_forward"] * total_cores) / HOUR
        bwd_h = items / (rates["ray_backward"] * total_cores) / HOUR
        crossing = exchange * items * (m - 1) / m
        net_h = crossing / (m * nic_gbps * 1e9 / 8) / HOUR
        worker_gb = task_bytes_per_item * largest_age_items / shards / 1e9
        write_gb = largest_age_after * (8 + 8 + 4) / 1e9
        out["machines"][m] = {
            "cores": total_cores, "shards": shards, "forward_h": round(fwd_h, 1), "backward_h": round(bwd_h, 1),
            "compute_h": round(fwd_h + bwd_h, 1), "network_tb": round(crossing / 1e12, 1),
            "network_h_if_not_overlapped": round(net_h, 2), "worker_task_gb": round(worker_gb, 2),
            "write_task_gb": round(write_gb, 1),
        }  # fmt: skip
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ray", required=True, help="bench_ray JSON of a 4x3 capped build")
    parser.add_argument("--shuffle", required=True, help="bench_shuffle JSON")
    parser.add_argument("--forward", required=True, help="bench_tables JSON with the 4x3 forward pass")
    parser.add_argument("--cores", type=int, default=16, help="cores per machine")
    parser.add_argument("--machines", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--nic-gbps", type=float, default=10.0)
    parser.add_argument("--shards-per-core", type=int, default=2)
    parser.add_argument("--memory-gb", type=float, default=64.0,
                        help="memory of one machine, for the local backend's projection (default 64)")  # fmt: skip
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    out = project(load(args.ray), load(args.shuffle), load(args.forward), args.cores, args.machines, args.nic_gbps,
                  args.shards_per_core, args.memory_gb)  # fmt: skip
    r = out["rates_per_core_second"]
    print(f"measured rates per core-second (states+afterstates): Ray forward {r['ray_forward']:,}, Ray backward "
          f"{r['ray_backward']:,}; local forward {r['local_forward']:,}, local backward {r['local_backward']:,}; "
          f"4x3 score forward kernel {r['score_forward_kernel']:,}")  # fmt: skip
    print(f"exchanged {out['exchange_bytes_per_item']:.1f} B per state+afterstate; disk: table "
          f"{out['table_tib']:.2f} TiB + work directory up to {out['work_dir_peak_tib']:.2f} TiB")  # fmt: skip
    for m, p in out["machines"].items():
        print(f"{m} x {args.cores} cores ({p['shards']} shards): forward {p['forward_h']} h + backward "
              f"{p['backward_h']} h = {p['compute_h']} h; network {p['network_tb']} TB "
              f"({p['network_h_if_not_overlapped']} h if not overlapped); per task {p['worker_task_gb']} GB, "
              f"write task {p['write_task_gb']} GB")  # fmt: skip
    local = out.get("local_one_machine")
    if local:
        print(f"1 x {args.cores} cores, local backend: forward {local['forward_h']} h + backward "
              f"{local['backward_h']} h = {local['compute_h']} h; memory {local['memory_gb_model']} GB (model; "
              f"it gives {local['model_gb_of_measured_age']} GB for the measured build's largest age, and that "
              f"build peaked at {local['measured_peak_gb']:.2f} GB): "
              f"{'fits' if local['fits'] else 'does not fit'} {args.memory_gb:g} GB")  # fmt: skip
    else:
        print("no local-backend projection: the --ray JSON predates its largest_age field; run the benchmark again")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
