"""The critical path of the build partitioned by material on M machines, replayed from a measured histogram.

    python -m experiments.scale.critical_path HIST.jsonl --tile 8 --machines 1 2 8 64 [--cores 16 --rate R]

``HIST.jsonl`` is what ``python -m experiments.scale.material --json`` writes: for every age and threshold T, the
states and afterstates of each material key and the crossing pairs (source key, target key, afterstates).  Ages
run one after another (age a needs the values of a + 2 and a + 4), so an age takes as long as its busiest
machine.  For each machine count M this replays, age by age:

* the assignment: the keys new in an age go to machines exactly as the distributed driver gives them
  (:class:`solver.distributed.material.Assignment`: largest first, each to the machine with the least work of
  that age, weighed by afterstates and the states they forecast for the age after,
  :func:`~solver.distributed.material.with_states_ahead`); with ``--rebalance TOL``, keys also move between
  machines at every age as the driver moves them (:meth:`~solver.distributed.material.Assignment.rebalance`), and
  without it a key never moves (the driver's ``--rebalance off``);
* compute: the busiest machine's states (held since the age before) + afterstates, at ``rate`` per core-second
  on ``cores`` cores;
* exchange: every crossing pair whose source and target keys sit on different machines sends each of its
  afterstates twice, once as an ID (8 B, forward) and once as a value (8 B, backward); a target key that no
  afterstate of the age has is a won game, whose value is known.  A machine's NIC carries 8 B per such afterstate
  in each direction; the age waits for the busiest NIC at ``nic_gbps``.

The sum over ages, times an ``overhead`` factor, is the model's build time: with every transfer between kernels,
with every transfer under them, and (``--under-exchange``) as the driver pipelines them, each crossing transfer
under the work of a machine's own afterstates (:func:`seconds`).  :func:`calibrate` measures that factor: the model
of a build measured on this machine (local on 2 threads, Ray on two one-CPU nodes) against the measured Ray time.
The figures count pairs per source key, so an afterstate reached from two keys of the same machine is counted
twice: the exchange is an upper bound, and a machine's own afterstates (those it did not receive) a lower one.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

import numpy as np

from solver.__main__ import material_low, rebalance_tolerance, split_threshold
from solver.distributed.driver import DEFAULT_SPLIT, DEFAULT_TOLERANCE
from solver.distributed.material import UNASSIGNED, Assignment, material_of, share_evenly, with_states_ahead

from .material import load_ages

#: Bytes per crossing afterstate and direction: an 8-byte ID forward, an 8-byte value backward.
ID_BYTES = VALUE_BYTES = 8


@dataclass
class AgeLoad:
    """One age on M machines: work in states + afterstates, bytes in both passes."""

    age: int
    states: int
    afterstates: int
    busiest: int  # states + afterstates of the busiest machine
    busiest_states: int
    busiest_afterstates: int
    largest_column: int  # states + afterstates of the largest key
    exchange_bytes: int  # all machines, both passes, IDs and values
    busiest_nic_bytes: int  # the busiest machine's bytes in one direction, both passes
    # per machine: states + afterstates; the afterstates it made itself (not received from another machine: the
    # work a worker does while the exchange travels); bytes in one direction, both passes, of the crossing
    # afterstates (which travel under that work) and of the states handed off (which do not)
    machine_work: tuple[float, ...] = ()
    machine_own: tuple[float, ...] = ()
    machine_crossing_bytes: tuple[float, ...] = ()
    machine_handoff_bytes: tuple[float, ...] = ()

    @property
    def work(self) -> int:
        return self.states + self.afterstates


def distribution(assignment: Assignment, keys, machines: int) -> np.ndarray:
    """``float64[k, machines]``: the share of each material key's boards on each machine (its parts' owners, a
    part each ``1 / parts`` of the column, as the hash spreads them); a row of zeros for a key not assigned."""
    out = np.zeros((len(keys), machines))
    for i, key in enumerate(keys):
        parts = assignment.parts_of(int(key))
        owners = assignment.owners_of_keys(parts)
        if np.all(owners != UNASSIGNED):
            np.add.at(out[i], owners, 1.0 / len(parts))
    return out


def spread(assignment: Assignment, key_work: dict[int, int]) -> dict[int, int]:
    """``key_work`` by material key -> by the keys the driver weighs: a split column's work shared evenly among
    its parts (the share the hash gives them)."""
    out = {}
    for key, work in key_work.items():
        parts = assignment.parts_of(key)
        out.update(zip(parts, share_evenly(work, len(parts)), strict=True))
    return out


def replay(
    ages: dict[int, dict], tile: int, machines: int, tolerance: float | None = None, split: float | None = None
) -> list[AgeLoad]:
    """Each age of the histogram ``ages`` (``{age: row}``, as :func:`experiments.scale.material.load_ages` reads
    it) on ``machines`` machines at threshold ``tile``, keys assigned as the distributed driver assigns them.
    With a ``tolerance``, keys are also moved between machines at every age as the driver moves them
    (:meth:`Assignment.rebalance`), and a moved key's states of that age count as exchanged (an ID forward, a value
    backward: the driver sends its afterstates of that age and hands off its states of the next).  With ``split``,
    a column whose work exceeds that many even shares is split as the driver splits it (:meth:`Assignment.split`),
    each part holding an equal share of the column; its states whose part is not their parent afterstate's count as
    exchanged (a spawn handed to another part's owner: an ID forward, a value backward)."""
    low = material_low(int(tile), "--tile")
    assignment = Assignment(machines, low)
    out = []
    earlier: dict[int, int] = {}  # the afterstates by key of the age before
    for age in sorted(ages):
        row = ages[age]["by_threshold"].get(str(tile))
        if row is None:
            raise ValueError(f"age {age} was not measured at T = {tile} (it has {sorted(ages[age]['by_threshold'])})")
        keys = np.asarray([int(k) for k in row["keys"]], np.uint64)
        states, after = np.asarray(row["states"], np.int64), np.asarray(row["afterstates"], np.int64)
        owners = assignment.owners_of_keys(keys)
        # the age's states sit where the age before put their keys (the driver hands them off after its spawns)
        before = distribution(assignment, keys, machines)
        # the driver weighs keys by their expanded afterstates and the states these forecast for the age after (a
        # key with states only is new only at the start)
        by_after = {int(k): int(a) for k, a in zip(keys, after, strict=True) if a > 0}
        ahead = with_states_ahead(by_after, {int(k): int(n) for k, n in zip(keys, states, strict=True)}, earlier)
        earlier = by_after
        key_work = {
            int(k): ahead[int(k)] if a > 0 else int(n)
            for k, n, a, o in zip(keys, states, after, owners, strict=True)
            if a > 0 or o == UNASSIGNED
        }
        if split is not None:
            assignment.split(spread(assignment, key_work), split)
        assignment.assign(spread(assignment, key_work))
        moved = 0.0
        if tolerance is not None:
            # weighed as the driver weighs them
            moved_keys, _ = assignment.rebalance(spread(assignment, ahead), tolerance)
            row_of = {int(k): i for i, k in enumerate(keys)}
            for part in moved_keys:
                moved += states[row_of[int(material_of([part])[0])]] / len(assignment.parts_of(int(part)))
        share = distribution(assignment, keys, machines)
        new = before.sum(axis=1) == 0  # start states of keys new in this age: where the driver puts them
        before[new] = share[new]
        load_states, load_after = states @ before, after @ share
        busiest = int(np.argmax(load_states + load_after))
        # spawns into another part of a split column: each such state once, an ID forward and a value back
        spawn_far = states * (1 - (share**2).sum(axis=1))
        handed = (states[:, None] * share * (1 - share)).sum(axis=0) * 2
        crossing = np.zeros(machines)
        received = np.zeros(machines)
        exchanged = float(spawn_far.sum())
        if row["pairs"]:
            pairs = np.asarray([[int(a), int(b), int(n)] for a, b, n in row["pairs"]], dtype=object)
            ends = np.asarray(pairs[:, :2], np.uint64)
            count = np.asarray(pairs[:, 2], np.float64)
            index = {int(k): i for i, k in enumerate(np.unique(ends))}
            at = distribution(assignment, list(index), machines)
            source = at[[index[int(k)] for k in ends[:, 0]]]
            target = at[[index[int(k)] for k in ends[:, 1]]]
            won = target.sum(axis=1) == 0  # a key no afterstate has: a won game, no value
            count[won] = 0
            exchanged += float((count * (1 - (source * target).sum(axis=1))).sum())
            received = (count[:, None] * target * (1 - source)).sum(axis=0)
            crossing = (count[:, None] * source * (1 - target)).sum(axis=0) + received
        nic = handed + crossing
        exchanged += moved
        out.append(
            AgeLoad(
                age=age,
                states=int(states.sum()),
                afterstates=int(after.sum()),
                busiest=round(load_states[busiest] + load_after[busiest]),
                busiest_states=round(load_states[busiest]),
                busiest_afterstates=round(load_after[busiest]),
                largest_column=int((states + after).max()) if keys.size else 0,
                exchange_bytes=round(exchanged * (ID_BYTES + VALUE_BYTES)),
                busiest_nic_bytes=round((nic.max() + moved) * ID_BYTES),
                machine_work=tuple(load_states + load_after),
                machine_own=tuple(np.maximum(load_after - received, 0.0)),
                machine_crossing_bytes=tuple(crossing * ID_BYTES),
                machine_handoff_bytes=tuple((handed + moved) * ID_BYTES),
            )
        )
    return out


def seconds(
    loads: list[AgeLoad],
    cores: int,
    rate: float,
    nic_gbps: float | None,
    overhead: float = 1.0,
    under_exchange: tuple[float, float] | None = None,
) -> dict:
    """The model's time for ``loads``: compute (the busiest machine of every age at ``rate`` states + afterstates
    per core-second on ``cores`` cores) and network (the busiest NIC of every age at ``nic_gbps``; None: free),
    each summed over the ages, and their total times ``overhead`` (``total_s``: every transfer between kernels).
    ``overlapped_s``: the same ages if every transfer ran under the kernels, each age as long as the longer of its
    compute and its network, times ``overhead``: a lower bound.

    ``pipelined_s``, given ``under_exchange`` (``(forward, backward)``, from ``experiments.bench.material_balance``:
    an afterstate's seconds in the steps that run while the exchange travels, over the mean seconds of a state or
    afterstate): the driver's steps.  Per age and machine, its compute, then per pass half of its crossing bytes
    less what its own afterstates' work in that pass hides, then its hand-offs; the age as long as its slowest
    machine, times ``overhead``."""
    per_second = cores * rate
    nic_bytes_per_second = None if nic_gbps is None else nic_gbps * 1e9 / 8
    compute = sum(x.busiest for x in loads) / per_second
    if nic_bytes_per_second is None:
        return {
            "compute_s": compute,
            "network_s": 0.0,
            "total_s": overhead * compute,
            "overlapped_s": overhead * compute,
            "pipelined_s": overhead * compute,
        }
    network = sum(x.busiest_nic_bytes for x in loads) / nic_bytes_per_second
    overlapped = sum(max(x.busiest / per_second, x.busiest_nic_bytes / nic_bytes_per_second) for x in loads)
    out = {
        "compute_s": compute,
        "network_s": network,
        "total_s": overhead * (compute + network),
        "overlapped_s": overhead * overlapped,
    }
    if under_exchange is not None:
        pipelined = 0.0
        for x in loads:
            work, own = np.asarray(x.machine_work), np.asarray(x.machine_own)
            crossing, handed = np.asarray(x.machine_crossing_bytes), np.asarray(x.machine_handoff_bytes)
            machine_s = work / per_second + handed / nic_bytes_per_second
            for cost in under_exchange:
                machine_s += np.maximum(crossing / 2 / nic_bytes_per_second - cost * own / per_second, 0.0)
            pipelined += float(machine_s.max())
        out["pipelined_s"] = overhead * pipelined
    return out


def summary(loads: list[AgeLoad], machines: int) -> dict:
    """Work-weighted shares of ``loads`` on ``machines`` machines: the imbalance (the busiest machine's work over
    an even share, summed over ages), the largest column's share of the work, bytes per state + afterstate (all
    exchanged, and through the busiest NIC), and of the busiest machine's afterstates in each age, the share it
    made itself, and its crossing and handed-off bytes per state + afterstate."""
    work = sum(x.work for x in loads)
    busiest = [int(np.argmax(x.machine_work)) for x in loads]
    after = sum(x.busiest_afterstates for x in loads)  # the busiest machine's, as argmax finds it
    mine = {
        name: sum(getattr(x, name)[b] for x, b in zip(loads, busiest, strict=True))
        for name in ("machine_own", "machine_crossing_bytes", "machine_handoff_bytes")
    }
    return {
        "machines": machines,
        "ages": len(loads),
        "states_and_afterstates": work,
        "imbalance": sum(x.busiest for x in loads) * machines / work,
        "critical_path_share": sum(x.busiest for x in loads) / work,
        "largest_column_share": sum(x.largest_column for x in loads) / work,
        "exchange_bytes_per_item": sum(x.exchange_bytes for x in loads) / work,
        "busiest_nic_bytes_per_item": sum(x.busiest_nic_bytes for x in loads) / work,
        "busiest_own_share": mine["machine_own"] / after if after else 1.0,
        "busiest_crossing_bytes_per_item": mine["machine_crossing_bytes"] / work,
        "busiest_handoff_bytes_per_item": mine["machine_handoff_bytes"] / work,
    }


def modelled_load(age: int, states: int, afterstates: int, model: dict, machines: int) -> AgeLoad:
    """An age of ``states`` and ``afterstates`` that was not measured, on ``machines`` machines, given the shares
    of a measured one (``model``: a :func:`summary`): the busiest machine holds ``imbalance / machines`` of it, and
    the largest column and the bytes scale with its work."""
    work = states + afterstates
    share = model["imbalance"] / machines
    busiest_afterstates = round(afterstates * share)
    return AgeLoad(
        age=age,
        states=states,
        afterstates=afterstates,
        busiest=round(work * share),
        busiest_states=round(states * share),
        busiest_afterstates=busiest_afterstates,
        largest_column=round(work * model["largest_column_share"]),
        exchange_bytes=round(work * model["exchange_bytes_per_item"]),
        busiest_nic_bytes=round(work * model["busiest_nic_bytes_per_item"]),
        machine_work=(work * share,),
        machine_own=(busiest_afterstates * model["busiest_own_share"],),
        machine_crossing_bytes=(work * model["busiest_crossing_bytes_per_item"],),
        machine_handoff_bytes=(work * model["busiest_handoff_bytes_per_item"],),
    )


def calibrate(
    ages: dict[int, dict],
    tile: int,
    local_seconds: float,
    ray_seconds: float,
    workers: int = 2,
    tolerance: float | None = DEFAULT_TOLERANCE,
    split: float | None = DEFAULT_SPLIT,
) -> dict:
    """The model's ``overhead`` from one build measured on this machine: the local build on ``workers`` threads
    (its rate per core-second is the model's rate) against the Ray build on ``workers`` one-CPU nodes (keys moved
    with ``tolerance``, as that build moved them), network free (loopback).  Returns the rate, the modelled and
    the measured Ray seconds, and their ratio."""
    loads = replay(ages, tile, workers, tolerance, split)
    rate = sum(x.work for x in loads) / (local_seconds * workers)
    modelled = seconds(loads, cores=1, rate=rate, nic_gbps=None)["total_s"]
    return {
        "rate_per_core_second": rate,
        "modelled_ray_s": modelled,
        "measured_ray_s": ray_seconds,
        "overhead": ray_seconds / modelled,
    }


def _tile(text: str) -> int:
    """``--tile`` as argparse reads it: a clear usage error for anything but a power of two >= 8."""
    try:
        tile = int(text)
        material_low(tile, "--tile")
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return tile


def _tolerance(text: str) -> float | None:
    try:
        return rebalance_tolerance(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _split(text: str) -> float | None:
    try:
        return split_threshold(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_model_args(parser: argparse.ArgumentParser, rate_required: bool = True) -> None:
    """The model's options shared by the projections: --tile, --rebalance, --split, --rate, --overhead, --cores,
    --machines, --nic-gbps."""
    parser.add_argument("--tile", type=_tile, default=8, help="the material threshold T (default 8)")
    parser.add_argument(
        "--rebalance",
        type=_tolerance,
        default=DEFAULT_TOLERANCE,
        metavar="TOL|off",
        help="move keys at every age while the busiest machine exceeds an even share by more than "
        f"TOL, as the driver does (default {DEFAULT_TOLERANCE}, the driver's); off: never",
    )
    parser.add_argument(
        "--split",
        type=_split,
        default=DEFAULT_SPLIT,
        metavar="SHARES|off",
        help="split a column larger than SHARES even shares of an age across machines, as the driver "
        f"does (default {DEFAULT_SPLIT}, the driver's); off: never",
    )
    parser.add_argument(
        "--rate",
        type=float,
        required=rate_required,
        default=None,
        help="states + afterstates per core-second of the whole build",
    )
    parser.add_argument("--overhead", type=float, default=1.0, help="from critical_path --calibrate (default 1)")
    parser.add_argument("--cores", type=int, default=16, help="cores per machine (default 16)")
    parser.add_argument("--machines", type=int, nargs="+", default=[1, 2, 8, 64])
    parser.add_argument("--nic-gbps", type=float, default=10.0)
    parser.add_argument(
        "--under-exchange",
        type=float,
        nargs=2,
        default=None,
        metavar=("FORWARD", "BACKWARD"),
        help="an afterstate's cost in the steps that run while the exchange travels, per pass, over "
        "the mean state or afterstate (python -m experiments.bench.material_balance prints it): "
        "adds the driver's pipelined time",
    )


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "histogram",
        nargs="+",
        help="JSON Lines of python -m experiments.scale.material --json; several are spliced, each "
        "from its first age on",
    )
    add_model_args(parser, rate_required=False)
    parser.add_argument(
        "--calibrate",
        type=float,
        nargs=2,
        metavar=("LOCAL_S", "RAY_S"),
        default=None,
        help="seconds of this build: local on 2 threads, Ray on 2 one-CPU nodes",
    )
    args = parser.parse_args(argv)
    ages = load_ages(*args.histogram)
    if not ages:
        parser.error(f"{', '.join(args.histogram)} hold no measured age")
    out: dict = {"tile": args.tile, "cores": args.cores, "machines": {}}
    rate, overhead = args.rate, args.overhead
    if args.calibrate:
        cal = calibrate(ages, args.tile, *args.calibrate, tolerance=args.rebalance, split=args.split)
        out["calibration"] = cal
        rate = rate or cal["rate_per_core_second"]
        overhead = cal["overhead"]
        print(
            f"calibration: local {args.calibrate[0]:.1f} s on 2 threads = {cal['rate_per_core_second']:,.0f} per "
            f"core-second; the model gives Ray on 2 x 1 CPU {cal['modelled_ray_s']:.1f} s, measured "
            f"{cal['measured_ray_s']:.1f} s: overhead x{cal['overhead']:.3f}"
        )
    if rate is None:
        parser.error("give --rate or --calibrate")
    for m in args.machines:
        loads = replay(ages, args.tile, m, args.rebalance, args.split)
        s = summary(loads, m)
        t = seconds(loads, args.cores, rate, args.nic_gbps, overhead, args.under_exchange)
        out["machines"][m] = {**s, **t}
        piped = f"; pipelined {t['pipelined_s']:,.0f} s" if "pipelined_s" in t else ""
        print(
            f"{m:>3} x {args.cores} cores: imbalance {s['imbalance']:.3f}, exchange "
            f"{s['exchange_bytes_per_item']:.2f} B per item (busiest NIC {s['busiest_nic_bytes_per_item']:.2f}); "
            f"compute {t['compute_s']:,.0f} s + network {t['network_s']:,.0f} s, x{overhead:.3f} = "
            f"{t['total_s']:,.0f} s{piped}"
        )
    return out


if __name__ == "__main__":
    main()
