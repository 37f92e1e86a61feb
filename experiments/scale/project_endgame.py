"""Cost of the big endgame tables (LL at 4096, 4431 and 444 at 2048) on a Ray cluster, projected from the pattern
tables built here.

    python -m experiments.scale.project_endgame --tables DIR [DIR ...] [--json OUT]

Inputs: built pattern tables (``python -m solver build --pattern NAME --target T --layout directory``): their
states, afterstates, bytes on disk and per-age counts.

Model:

* counts: 444 at 2048 = our 444 table at its largest T, grown by a factor ``g`` per doubling of T, with ``g`` the
  smallest and largest growth (states + afterstates) that the 10-free-cell patterns show between T = 256 and 512
  and that 444 itself shows between its two largest targets built here (the community's rule of thumb, "volume
  doubles as the target doubles", is the low end); 4431 at 2048 and LL at
  4096, which we have no table of, scale 444's by the community's table sizes (650 GB and 1.1 TB against 130 GB,
  game-difficulty/2048EndgameTablebase help.md, 10.1);
* time: items / (rate per core-second x cores x machines), forward and backward, at the Ray backend's rates per
  core measured on 4x3 ``tile:7`` (``experiments.bench.ray_backend``; docs/solver-performance.md) and, as the best case,
  the local rates these pattern builds reached;
* disk: afterstates x the measured bits per afterstate; memory per worker: the largest age's share of the items,
  cut into ``shards per core x cores x machines`` shards, at 32 bytes per item (value index slot + keys), and the
  write task, which holds a whole age's afterstates (ID and value, 16 bytes each) while it codes them.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from solver.common import table_bytes
from solver.store import Table

HOUR = 3600.0
GB = 1e9
#: game-difficulty/2048EndgameTablebase, docs_and_configs/help/help.md, 10.1 "Table Size Reference" (uncompressed)
COMMUNITY_BYTES = {"444-2048": 130e9, "4431-2048": 650e9, "LL-4096": 1.1e12}
#: Ray backend per core-second on 4x3 tile:7 (experiments.bench.ray_backend, 2026-11-24): forward, backward
RAY_RATES = (3.14e6, 1.12e6)


def table_facts(path) -> dict:
    with Table(path) as t:
        p = t.spec.pattern
        if p is None:
            raise ValueError(f"{path} is not an endgame pattern table")
        counts = t.counts()
        largest = max(c.states + c.afterstates for c in counts)
        items = int(t.attrs["states"]) + int(t.attrs["afterstates"])
        return {"name": p.name, "target": p.target_tile, "free": len(p.free_cells), "items": items,
                "afterstates": int(t.attrs["afterstates"]), "bytes": table_bytes(path),
                "largest_age_share": largest / items}  # fmt: skip


def growth_per_doubling(facts: list[dict], free: int, low: int, high: int) -> list[float]:
    """Items at target ``high`` over items at ``low`` of every pattern with ``free`` free cells and both tables."""
    by = {(f["name"], f["target"]): f for f in facts if f["free"] == free}
    return [by[(n, high)]["items"] / by[(n, low)]["items"] for n, t in by if t == low and (n, high) in by]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", nargs="+", required=True, help="built pattern tables (directories or files)")
    parser.add_argument("--cores", type=int, default=16, help="cores per machine (default 16)")
    parser.add_argument("--machines", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--shards-per-core", type=int, default=4)
    parser.add_argument("--json", default=None, help="also write the projection here")
    args = parser.parse_args(argv)
    facts = [table_facts(p) for p in args.tables]
    for f in facts:
        print(f"{f['name']}-{f['target']}: {f['items']:,} states+afterstates, {f['afterstates']:,} afterstates, "
              f"{8 * f['bytes'] / f['afterstates']:.1f} bits per afterstate, largest age "
              f"{100 * f['largest_age_share']:.2f}% of the items")  # fmt: skip
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
    bits = sum(8 * f["bytes"] / f["afterstates"] for f in facts) / len(facts)
    after_share = sum(f["afterstates"] / f["items"] for f in facts) / len(facts)
    share = max(f["largest_age_share"] for f in facts)
    out = {"growth": growth, "base": base, "bits_per_afterstate": bits, "rows": []}
    for name in ("444-2048", "4431-2048", "LL-4096"):
        scale = COMMUNITY_BYTES[name] / COMMUNITY_BYTES["444-2048"]
        for g in (g_low, g_high):
            items = base["items"] * g**doublings * scale
            row = {"table": name, "g": g, "items": items, "disk_tb": items * after_share * bits / 8 / 1e12}
            for m in args.machines:
                cores = args.cores * m
                row[f"ray_hours_{m}"] = items / cores * (1 / RAY_RATES[0] + 1 / RAY_RATES[1]) / HOUR
                row[f"task_gb_{m}"] = items * share / (args.shards_per_core * cores) * 32 / GB
            row["write_task_gb"] = items * share * after_share * 16 / GB
            out["rows"].append(row)
            hours = ", ".join(f"{row[f'ray_hours_{m}']:.1f} h on {m} x {args.cores}" for m in args.machines)
            print(f"{name} (g = {g:.2f}): {items:.3g} states+afterstates, table {row['disk_tb']:.2f} TB; Ray: {hours}; "
                  f"per task {row[f'task_gb_{args.machines[-1]}']:.2f} GB on {args.machines[-1]} machines, write task "
                  f"{row['write_task_gb']:.1f} GB")  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
