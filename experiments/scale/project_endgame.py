"""Cost of the big endgame tables (LL at 4096, 4431 and 444 at 2048) on M machines, projected from the pattern
tables built here and the critical-path model of the build partitioned by material.

    python -m experiments.scale.project_endgame --tables DIR [DIR ...] --histogram HIST.jsonl --rate R
        [--overhead X] [--json OUT]

Inputs: built pattern tables (``python -m solver build --pattern NAME --target T --layout directory``): their
states, afterstates, bytes on disk and per-age counts; and the material histogram of a pattern
(``python -m experiments.scale.material --pattern L3 --target 256 --json HIST.jsonl``).

Model:

* counts: 444 at 2048 = our 444 table at its largest T, grown by a factor ``g`` per doubling of T, with ``g`` the
  smallest and largest growth (states + afterstates) that the 10-free-cell patterns show between T = 256 and 512
  and that 444 itself shows between its two largest targets built here (the community's rule of thumb, "volume
  doubles as the target doubles", is the low end); 4431 at 2048 and LL at
  4096, which we have no table of, scale 444's by the community's table sizes (650 GB and 1.1 TB against 130 GB,
  game-difficulty/2048EndgameTablebase help.md, 10.1);
* time, network and memory: :mod:`experiments.scale.critical_path` replays the histogram's pattern on M machines
  (the driver's assignment of material keys); its shares (the busiest machine's work over an even share, bytes
  exchanged and through the busiest NIC per state + afterstate) are applied to the projected counts, at ``R``
  states + afterstates per core-second and the overhead ``X`` that ``critical_path --calibrate`` measured.  That
  a big table splits like the small pattern measured is an assumption;
* disk: afterstates x the measured bits per afterstate; memory per machine: the local backward pass's arrays
  (``project_4x3.local_backward_bytes``) for the busiest machine's share of the largest age.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from solver.format import Table
from solver.format.common import table_bytes

from .critical_path import add_model_args, modelled_load, replay, seconds, summary
from .material import load_ages
from .project_4x3 import local_backward_bytes

HOUR = 3600.0
GB = 1e9
#: game-difficulty/2048EndgameTablebase, docs_and_configs/help/help.md, 10.1 "Table Size Reference" (uncompressed)
COMMUNITY_BYTES = {"444-2048": 130e9, "4431-2048": 650e9, "LL-4096": 1.1e12}


def table_facts(path) -> dict:
    with Table(path) as t:
        p = t.spec.pattern
        if p is None:
            raise ValueError(f"{path} is not an endgame pattern table")
        counts = t.counts()
        largest = max(c.states + c.afterstates for c in counts)
        items = int(t.attrs["states"]) + int(t.attrs["afterstates"])
        return {
            "name": p.name,
            "target": p.target_tile,
            "free": len(p.free_cells),
            "items": items,
            "afterstates": int(t.attrs["afterstates"]),
            "bytes": table_bytes(path),
            "largest_age_share": largest / items,
        }


def growth_per_doubling(facts: list[dict], free: int, low: int, high: int) -> list[float]:
    """Items at target ``high`` over items at ``low`` of every pattern with ``free`` free cells and both tables."""
    by = {(f["name"], f["target"]): f for f in facts if f["free"] == free}
    return [by[(n, high)]["items"] / by[(n, low)]["items"] for n, t in by if t == low and (n, high) in by]


def project_table(
    items: float,
    after_share: float,
    largest_age_share: float,
    models: dict[int, dict],
    cores: int,
    rate: float,
    overhead: float,
    nic_gbps: float,
) -> dict:
    """One projected table of ``items`` states + afterstates (``after_share`` of them afterstates, the largest age
    ``largest_age_share`` of them) on each machine count of ``models`` (``{M: critical_path.summary}``): hours,
    network TB and memory per machine."""
    afterstates = round(items * after_share)
    states = round(items) - afterstates
    out = {}
    for m, model in models.items():
        whole = modelled_load(0, states, afterstates, model, m)
        t = seconds([whole], cores, rate, nic_gbps, overhead)
        peak = modelled_load(0, round(states * largest_age_share), round(afterstates * largest_age_share), model, m)
        out[m] = {
            "hours": t["total_s"] / HOUR,
            "network_tb": whole.exchange_bytes / 1e12,
            "memory_gb": local_backward_bytes(peak.busiest_states, peak.busiest_afterstates) / GB,
        }
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", nargs="+", required=True, help="built pattern tables (directories or files)")
    parser.add_argument("--histogram", required=True, help="material histogram of a pattern (JSON Lines)")
    add_model_args(parser)
    parser.add_argument("--json", default=None, help="also write the projection here")
    args = parser.parse_args(argv)
    facts = [table_facts(p) for p in args.tables]
    for f in facts:
        print(
            f"{f['name']}-{f['target']}: {f['items']:,} states+afterstates, {f['afterstates']:,} afterstates, "
            f"{8 * f['bytes'] / f['afterstates']:.1f} bits per afterstate, largest age "
            f"{100 * f['largest_age_share']:.2f}% of the items"
        )
    growth = growth_per_doubling(facts, 10, 256, 512)
    if not growth:
        raise SystemExit("need a 10-free-cell pattern built at both T = 256 and 512 for the growth per doubling")
    built_444 = sorted((f for f in facts if f["name"] == "444"), key=lambda f: f["target"])
    if not built_444:
        raise SystemExit("need a 444 table (python -m solver build --pattern 444 --target 128 ...)")
    base = built_444[-1]
    print(f"growth per doubling of T (10 free cells, 256 -> 512): {', '.join(f'{g:.2f}' for g in growth)}")
    if len(built_444) >= 2 and built_444[-2]["target"] * 2 == base["target"]:
        growth.append(base["items"] / built_444[-2]["items"])
        print(f"growth per doubling of T (444, {built_444[-2]['target']} -> {base['target']}): {growth[-1]:.2f}")
    doublings = (2048 // base["target"]).bit_length() - 1
    g_low, g_high = min(growth), max(growth)
    print(f"444-2048 = 444-{base['target']} x g^{doublings}, g = {g_low:.2f} ... {g_high:.2f}")
    ages = load_ages(args.histogram)
    models = {m: summary(replay(ages, args.tile, m, args.rebalance, args.split), m) for m in args.machines}
    for m, model in models.items():
        print(
            f"histogram on {m} machines: imbalance {model['imbalance']:.3f}, exchange "
            f"{model['exchange_bytes_per_item']:.2f} B per item (busiest NIC "
            f"{model['busiest_nic_bytes_per_item']:.2f})"
        )
    bits = sum(8 * f["bytes"] / f["afterstates"] for f in facts) / len(facts)
    after_share = sum(f["afterstates"] / f["items"] for f in facts) / len(facts)
    share = max(f["largest_age_share"] for f in facts)
    out = {"growth": growth, "base": base, "bits_per_afterstate": bits, "models": models, "rows": []}
    for name in ("444-2048", "4431-2048", "LL-4096"):
        scale = COMMUNITY_BYTES[name] / COMMUNITY_BYTES["444-2048"]
        for g in (g_low, g_high):
            items = base["items"] * g**doublings * scale
            row = {
                "table": name,
                "g": g,
                "items": items,
                "disk_tb": items * after_share * bits / 8 / 1e12,
                "machines": project_table(
                    items, after_share, share, models, args.cores, args.rate, args.overhead, args.nic_gbps
                ),
            }
            out["rows"].append(row)
            each = "; ".join(
                f"{m} x {args.cores}: {r['hours']:.1f} h, {r['network_tb']:.1f} TB, {r['memory_gb']:.1f} GB"
                for m, r in row["machines"].items()
            )
            print(f"{name} (g = {g:.2f}): {items:.3g} states+afterstates, table {row['disk_tb']:.2f} TB; {each}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
