"""Cost of the full 4x3 score table on M machines, projected by the critical-path model of the build partitioned by
material (:mod:`experiments.scale.critical_path`).

    python -m experiments.scale.project_4x3 --histogram HIST.jsonl --tile 8 --rate R [--overhead X] [--json OUT]

``HIST.jsonl``: ``python -m experiments.scale.material --board 4x3 --objective score --max-age A --json HIST.jsonl``
(the score game as deep as its forward pass goes on the machine at hand), or a capped game (``tile:K``) as a
stand-in; or several, spliced (``--histogram h8.jsonl score.jsonl``: the score game measured from age 256 on,
after ``tile:8``'s younger ages, which are the score game's).  ``R``: states + afterstates per core-second of the
local kernels; ``X``: the overhead factor that ``critical_path --calibrate`` measured (Ray, per-age
synchronisation, work-directory I/O).

Per machine count M (``--cores`` each):

* the ages of the histogram whose states agree with seed 000's are replayed exactly (:func:`critical_path.replay`):
  the driver's assignment of keys, the busiest machine of each age, the exchange;
* every later age of the published per-age counts (seed 000, ``PUBLISHED_4X3``) takes the histogram's last
  quarter of ages (``--model-fraction``) as its model, weighted by work: the imbalance (the busiest machine's
  work over an even share), and bytes exchanged and through the busiest NIC per state + afterstate; its
  afterstates make seed 000's total (``AFTERSTATES_4X3``).  This is an assumption, not a measurement: the
  material of the deep ages (tiles up to 2**13) is not measured here;
* time: per age, the busiest machine's work at ``R`` per core-second on its cores plus the busiest NIC's bytes at
  ``--nic-gbps``, summed over the ages, times ``X`` (every transfer between kernels: an upper bound); the longer
  of the two per age (every transfer under the kernels: a lower bound); and with ``--under-exchange`` (measured
  by ``experiments.bench.material_balance``), the driver's steps, whose crossing transfers run under the work of
  each machine's own afterstates (:func:`critical_path.seconds`, ``pipelined_s``);
* memory per machine: :func:`local_backward_bytes` of the busiest machine's states and afterstates at the
  largest age, as the local backward pass holds them;
* network: all bytes that cross between machines, both passes.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from experiments.bench.tables import AFTERSTATES_4X3, PUBLISHED_4X3
from solver.build import HOLD_BYTES
from solver.value_index import MAX_LOAD, table_bits

from .critical_path import (
    DEFAULT_SPLIT,
    DEFAULT_TOLERANCE,
    AgeLoad,
    add_model_args,
    modelled_load,
    replay,
    seconds,
    summary,
)
from .material import load_ages

HOUR = 3600.0


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


def tail_model(loads: list[AgeLoad], machines: int, fraction: float = 0.25) -> dict:
    """The work-weighted shares of the last ``fraction`` of ``loads`` (by count of ages), which model the
    unmeasured ages."""
    tail = loads[len(loads) - max(1, round(len(loads) * fraction)) :]
    ratio = sum(x.afterstates for x in tail) / sum(x.states for x in tail)
    return {"from_age": tail[0].age, "to_age": tail[-1].age, "afterstates_per_state": ratio, **summary(tail, machines)}


def extend(
    loads: list[AgeLoad],
    published: np.ndarray,
    machines: int,
    fraction: float = 0.25,
    kept: int | None = None,
    afterstates_total: int | None = None,
) -> tuple:
    """``(loads, model)``: the measured ``loads`` up to age ``kept`` (default: all), then every later age of
    ``published`` (``int64 (ages, 2)``: age, states) modelled by :func:`tail_model` of the last ``fraction`` of
    the measured ages.  The modelled ages get the model's afterstates per state, or, given the game's
    ``afterstates_total``, the ratio that makes the total come out exact."""
    model = tail_model(loads, machines, fraction)
    last = loads[-1].age if kept is None else kept
    out = [x for x in loads if x.age <= last]
    later = published[published[:, 0] > last]
    ratio = model["afterstates_per_state"]
    if afterstates_total is not None:
        ratio = (afterstates_total - sum(x.afterstates for x in out)) / int(later[:, 1].sum())
        model = {**model, "afterstates_per_state": ratio}
    for age, states in later:
        out.append(modelled_load(int(age), int(states), round(int(states) * ratio), model, machines))
    return out, model


def check_counts(ages: dict[int, dict], published: np.ndarray) -> int:
    """The last age whose measured states equal the published count (a histogram of the score game must agree
    with seed 000 age by age); -1 when the histogram is of another game."""
    by_age = dict(zip(published[:, 0].tolist(), published[:, 1].tolist(), strict=True))
    agreed = -1
    for age in sorted(ages):
        if by_age.get(age) != ages[age]["states"]:
            return agreed
        agreed = age
    return agreed


def project(
    ages: dict[int, dict],
    tile: int,
    machines: list[int],
    cores: int,
    rate: float,
    overhead: float,
    nic_gbps: float,
    published: np.ndarray,
    fraction: float = 0.25,
    tolerance: float | None = DEFAULT_TOLERANCE,
    split: float | None = DEFAULT_SPLIT,
    under_exchange: tuple[float, float] | None = None,
) -> dict:
    agreed = check_counts(ages, published)
    out = {
        "tile": tile,
        "rebalance": tolerance,
        "split": split,
        "cores": cores,
        "rate": rate,
        "overhead": overhead,
        "nic_gbps": nic_gbps,
        "under_exchange": under_exchange,
        "measured_ages": [min(ages), max(ages)],
        "agrees_with_published_to_age": agreed,
        "machines": {},
    }
    for m in machines:
        replayed = replay(ages, tile, m, tolerance, split)
        loads, model = extend(replayed, published, m, fraction, kept=agreed, afterstates_total=AFTERSTATES_4X3)
        t = seconds(loads, cores, rate, nic_gbps, overhead, under_exchange)
        peak = max(loads, key=lambda x: x.busiest)
        out["machines"][m] = {
            "hours": t["total_s"] / HOUR,
            "overlapped_h": t["overlapped_s"] / HOUR,
            **({"pipelined_h": t["pipelined_s"] / HOUR} if "pipelined_s" in t else {}),
            "compute_h": overhead * t["compute_s"] / HOUR,
            "network_h": overhead * t["network_s"] / HOUR,
            "network_tb": sum(x.exchange_bytes for x in loads) / 1e12,
            "memory_gb": local_backward_bytes(peak.busiest_states, peak.busiest_afterstates) / 1e9,
            "states_and_afterstates": sum(x.work for x in loads),
            "tail_model": model,
            "measured": summary(replayed, m),
        }
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--histogram",
        required=True,
        nargs="+",
        help="JSON Lines of python -m experiments.scale.material; several are spliced, each from its first age on",
    )
    add_model_args(parser)
    parser.add_argument(
        "--model-fraction",
        type=float,
        default=0.25,
        help="the last fraction of the measured ages that models the later ones (default 0.25; "
        "1: all, for a capped game standing in for the score game)",
    )
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    ages = load_ages(*args.histogram)
    if not ages:
        parser.error(f"{', '.join(args.histogram)} hold no measured age")
    published = np.loadtxt(PUBLISHED_4X3, dtype=np.int64)
    if not 0 < args.model_fraction <= 1:
        parser.error(f"--model-fraction must be in (0, 1], got {args.model_fraction}")
    out = project(
        ages,
        args.tile,
        args.machines,
        args.cores,
        args.rate,
        args.overhead,
        args.nic_gbps,
        published,
        args.model_fraction,
        args.rebalance,
        args.split,
        args.under_exchange,
    )
    agreed = out["agrees_with_published_to_age"]
    print(
        f"histogram: ages {min(ages)}-{max(ages)} at T = {args.tile}; its states agree with seed 000's to age "
        f"{agreed}{' (another game: a stand-in)' if agreed < max(ages) else ''}"
    )
    for m, p in out["machines"].items():
        tm, ms = p["tail_model"], p["measured"]
        piped = f"{p['pipelined_h']:.2f} h pipelined as the driver runs, " if "pipelined_h" in p else ""
        print(
            f"{m:>3} x {args.cores} cores: {piped}{p['hours']:.2f} h with every transfer between kernels (compute "
            f"{p['compute_h']:.2f} h + network {p['network_h']:.2f} h), {p['overlapped_h']:.2f} h with every "
            f"transfer under them; network "
            f"{p['network_tb']:.1f} TB; memory {p['memory_gb']:.1f} GB per "
            f"machine; measured ages: imbalance {ms['imbalance']:.3f}, {ms['exchange_bytes_per_item']:.2f} B per "
            f"item; later ages modelled on ages {tm['from_age']}-{tm['to_age']}: imbalance "
            f"{tm['imbalance']:.3f}, {tm['exchange_bytes_per_item']:.2f} B per item"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    main()
