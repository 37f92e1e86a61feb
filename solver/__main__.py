"""Command line of the solver: ``python -m solver {build,info,enumerate,verify,convert} ...``.

Examples::

    python -m solver build --board 3x3 --out tables/3x3.h5
    python -m solver build --board 2x2 --objective tile:5 --out tables/2x2-32.h5
    python -m solver build --board 4x3 --objective tile:7 --layout directory --out tables/4x3-128
    python -m solver build --board 4x3 --objective tile:6 --backend ray --out tables/4x3-64
    python -m solver build --board 4x3 --backend ray --address HEAD:6379 --machines 8 --out /shared/4x3
    python -m solver build --board 4x4 --pattern L3 --target 256 --layout directory --out tables/L3-256
    python -m solver build --pattern my-pattern.json --out tables/mine.h5
    python -m solver info tables/3x3.h5 --json
    python -m solver enumerate --board 4x3 --max-age 300 --json
    python -m solver verify tables/3x3.h5 --samples 2000
    python -m solver convert old-v1.h5 new-v2.h5
"""

from __future__ import annotations

import argparse
import json
import os
import sys

# The build codes and writes finished ages on a second thread while the numba kernels run on every core: OpenMP
# threads that spin after each parallel region would take that thread's core (3x3 build: ~15 s instead of ~18).
# Must be set before the OpenMP runtime starts; a value the user set wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from env2048 import board as B
from env2048.pattern import builtin_names, load_pattern
from env2048.shape import parse_board

from .build import build, set_threads
from .convert import convert_table
from .distributed.session import RayUnavailable
from .format import Table, TableError, board_text
from .format.common import table_bytes
from .forward import run_forward
from .spec import SPAWN_MODELS, SolveSpec
from .verify import verify_table
from .workdir import WorkDirMismatch


def add_spec_args(p: argparse.ArgumentParser) -> None:
    """The options that name a solve (read back by :func:`spec_from_args`), with --threads and --quiet."""
    p.add_argument("--board", default=None, help="RxC, rows x columns (e.g. 3x3, 4x3); at most 16 cells")
    p.add_argument("--objective", default="score", help="score (default) or tile:K (probability of making 2**K)")
    p.add_argument(
        "--pattern",
        default=None,
        help=f"an endgame pattern instead of the whole game: a built-in name ({', '.join(builtin_names())}) "
        "or a JSON pattern file (docs/endgame.md); the objective is then its probability of success",
    )
    p.add_argument(
        "--target",
        type=int,
        default=None,
        help="the pattern's target tile (e.g. 512): needed with a built-in pattern, overrides a file's",
    )
    p.add_argument(
        "--p4",
        type=float,
        default=None,
        help="probability that a spawned tile is a 4 (default 0.1, or the pattern file's p4)",
    )
    p.add_argument("--spawn", default="random", choices=SPAWN_MODELS, help="spawn model (default random)")
    p.add_argument(
        "--threads",
        type=int,
        default=None,
        help="numba threads (default: all cores); build --backend ray without --address: the CPUs of "
        "the private Ray it starts",
    )
    p.add_argument("--quiet", action="store_true", help="no progress bars")


def spec_from_args(args) -> SolveSpec:
    """The solve the command line describes: ``--board`` and ``--objective``, or ``--pattern`` (and ``--target``)."""
    if args.pattern is None:
        if args.target is not None:
            raise ValueError("--target goes with --pattern; for the whole game use --objective tile:K")
        if args.board is None:
            raise ValueError("--board is required (or --pattern NAME|FILE.json)")
        return SolveSpec.parse(args.board, args.objective, 0.1 if args.p4 is None else args.p4, args.spawn)
    if args.objective != "score":
        raise ValueError("--pattern solves the probability of success: leave out --objective")
    pattern = load_pattern(args.pattern, args.target)
    if args.board is not None and parse_board(args.board) != (pattern.rows, pattern.cols):
        raise ValueError(f"--board {args.board} does not match pattern {pattern.name}'s {pattern.rows}x{pattern.cols}")
    return SolveSpec.for_pattern(pattern, args.p4, args.spawn)


def _ages_json(counts) -> list[dict]:
    return [{"age": c.age, "states": c.states, "afterstates": c.afterstates, "terminal": c.terminal} for c in counts]


def cmd_build(args) -> int:
    spec = spec_from_args(args)
    if args.backend == "ray":
        report = build_on_ray(spec, args)
    else:
        if args.address or any(x is not None for x in (args.machines, args.material_tile, args.rebalance, args.split)):
            raise ValueError("--address, --machines, --material-tile, --rebalance and --split belong to --backend ray")
        report = build(
            spec,
            args.out,
            args.work_dir,
            args.threads,
            progress=not args.quiet,
            keep_work=args.keep_work,
            format_version=args.format,
            layout=args.layout or "file",
        )
    a = report.attrs
    unit = "machine" if args.backend == "ray" else "thread"
    print(
        f"{spec.describe()}: {a['states']:,} states, {a['afterstates']:,} afterstates "
        f"({a['terminal_states']:,} terminal), start value {a['start_value']:.12g}\n"
        f"forward {report.forward_s:.1f} s, backward {report.backward_s:.1f} s, write {report.write_s:.1f} s "
        f"on {report.threads} {unit}{'' if report.threads == 1 else 's'} -> {report.out}"
    )
    if report.writer_busy_s:
        print(f"writer thread (coding and writing ages, alongside the passes): busy {report.writer_busy_s:.1f} s")
    return 0


def build_on_ray(spec: SolveSpec, args):
    """``build --backend ray``: a build partitioned by material (:mod:`solver.distributed`), one worker per machine
    of the Ray cluster at ``--address`` (``--machines``: wait for that many), or one worker on a private Ray started
    on this machine."""
    if args.format != 2 or (args.layout or "directory") != "directory":
        raise ValueError("the Ray backend writes format 2 tables as a directory (--format 2 --layout directory)")
    from .distributed.driver import DEFAULT_LOW, DEFAULT_SPLIT, DEFAULT_TOLERANCE
    from .distributed.ray_actors import build_on_actors
    from .distributed.session import cluster_machines, ray_session

    low = DEFAULT_LOW if args.material_tile is None else material_low(args.material_tile)
    tolerance = DEFAULT_TOLERANCE if args.rebalance is None else rebalance_tolerance(args.rebalance)
    split = DEFAULT_SPLIT if args.split is None else split_threshold(args.split)
    if args.machines is not None and args.machines > 1 and not args.address:
        raise ValueError("a private Ray (no --address) is one machine: --machines more than 1 needs --address")
    with ray_session(args.address, num_cpus=args.threads) as ray:
        machines = cluster_machines(ray, args.machines)
        if not args.quiet:
            print(f"{len(machines)} machine(s): {', '.join(f'{m.cpus} CPUs' for m in machines)}", flush=True)
        report, _ = build_on_actors(
            spec,
            args.out,
            machines,
            low=low,
            work_dir=args.work_dir,
            progress=not args.quiet,
            keep_work=args.keep_work,
            tolerance=tolerance,
            split=split,
        )
    return report


def material_low(tile: int, option: str = "--material-tile") -> int:
    """``--material-tile T`` (or the command's ``option``) -> the exponent of T (a power of two, at least 8)."""
    if tile < 8 or tile & (tile - 1):
        raise ValueError(f"{option} must be a power of two of at least 8 (8, 16, 32, ...), got {tile}")
    return tile.bit_length() - 1


def _number_or_off(text: str, allowed, what: str) -> float | None:
    """An option's ``NUMBER|off`` -> the number if ``allowed(number)``, None for ``off``; else a ValueError that
    says ``what`` is allowed."""
    if text == "off":
        return None
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not allowed(value):
        raise ValueError(f"{what} or 'off', got {text!r}")
    return value


def rebalance_tolerance(text: str) -> float | None:
    """``--rebalance TOL|off`` -> the tolerance (a number >= 0), or None for ``off`` (keys never move)."""
    return _number_or_off(text, lambda v: v >= 0, "--rebalance must be a tolerance >= 0 (such as 0.05)")


def split_threshold(text: str) -> float | None:
    """``--split SHARES|off`` -> the threshold (a number > 0), or None for ``off`` (a column is never split)."""
    return _number_or_off(text, lambda v: v > 0, "--split must be a number of even shares > 0 (such as 1.05)")


def cmd_info(args) -> int:
    with Table(args.file) as t:
        a = t.attrs
        ids, probs, values = t.start()
        start_values = {
            board_text(B.unpack(i, t.spec.rows, t.spec.cols)): float(v) for i, v in zip(ids, values, strict=True)
        }
        info = {
            "board": a["board"],
            "objective": a["objective"],
            "p4": a["p4"],
            "spawn": a["spawn_model"],
            "states": a["states"],
            "afterstates": a["afterstates"],
            "terminal_states": a["terminal_states"],
            "start_value": a["start_value"],
            "start_values": start_values,
            "ages": _ages_json(t.counts()),
        }
        if t.spec.pattern is not None:
            info["pattern"] = t.spec.pattern.to_dict()
        info.update(format_fields(t))
    if args.json:
        print(json.dumps(info, indent=1))
        return 0
    print(f"{args.file}: {t.spec.describe()}")
    if "pattern" in info:
        for line in info["pattern"]["grid"]:
            print("  " + "".join(f"{tok:>7}" for tok in line.split()))
    if info["format_version"] == 1:
        note = "exact; v1 also stores every state, 17 bytes each"
    elif info["value_error_relative"]:
        note = f"{info['value_code']} code, error <= {info['value_error_relative']:.3g} relative"
    else:
        note = f"{info['value_code']} code, error <= {info['value_error_absolute']:.3g} absolute"
    print(
        f"format v{info['format_version']} ({info['layout']}), {info['bytes']:,} bytes: "
        f"{info['bits_per_afterstate_id']:.2f} bits per afterstate ID + {info['bits_per_afterstate_value']:.2f} per "
        f"value ({note}); {info['bits_per_afterstate_on_disk']:.2f} bits per afterstate on disk"
    )
    print(f"states {info['states']:,}  afterstates {info['afterstates']:,}  terminal {info['terminal_states']:,}")
    print(f"ages {info['ages'][0]['age']}..{info['ages'][-1]['age']} ({len(info['ages'])} layers)")
    print(f"start value {info['start_value']:.12g} (expectation over the random start)")
    for board, v in start_values.items():
        print(f"  {board:<24} {v:.12g}")
    return 0


def format_fields(t) -> dict:
    """Format, layout, size on disk, bits per afterstate and value code of an open table (any version)."""
    a = t.attrs
    n = max(1, int(a["afterstates"]))
    version = int(a["format_version"])
    size = table_bytes(t.path)
    out = {
        "format_version": version,
        "layout": a.get("layout", "file"),
        "bytes": int(size),
        "bits_per_afterstate_on_disk": 8.0 * size / n,
    }
    if version == 1:
        out.update(
            bits_per_afterstate_id=64.0,
            bits_per_afterstate_value=64.0,
            value_code="float64",
            value_error_relative=0.0,
            value_error_absolute=0.0,
        )
    else:
        for key in (
            "bits_per_afterstate_id",
            "bits_per_afterstate_value",
            "value_error_relative",
            "value_error_absolute",
        ):
            out[key] = float(a[key])
        out["value_code"] = str(a["value_code"])
    return out


def cmd_convert(args) -> int:
    report = convert_table(args.src, args.out, layout=args.layout, progress=not args.quiet)
    print(
        f"{args.src} (v1, {report['src_bytes']:,} bytes) -> {args.out} (v2, {report['out_bytes']:,} bytes); "
        f"max value error {report['max_relative_error']:.3g} relative, {report['max_absolute_error']:.3g} "
        f"absolute"
    )
    return 0


def cmd_enumerate(args) -> int:
    spec = spec_from_args(args)
    set_threads(args.threads)
    counts = run_forward(spec, max_age=args.max_age, progress=not args.quiet)
    info = {
        "board": spec.board,
        "objective": spec.objective,
        "p4": spec.p4,
        "max_age": args.max_age,
        "states": sum(c.states for c in counts),
        "afterstates": sum(c.afterstates for c in counts),
        "terminal_states": sum(c.terminal for c in counts),
        "ages": _ages_json(counts),
    }
    if spec.pattern is not None:  # as in `info`: the pattern beside the tile:K its rules extend
        info["pattern"] = spec.pattern.to_dict()
    if args.json:
        print(json.dumps(info, indent=1))
    else:
        print(
            f"{spec.describe()} up to age {args.max_age}: {info['states']:,} states, "
            f"{info['afterstates']:,} afterstates, {info['terminal_states']:,} terminal"
        )
        for c in counts:
            print(f"  age {c.age:>6}: {c.states:>14,} states {c.afterstates:>14,} afterstates")
    return 0


def cmd_verify(args) -> int:
    report = verify_table(args.file, samples=args.samples, seed=args.seed, progress=not args.quiet, ages=args.ages)
    print(f"checksums: {'ok' if not report.bad_checksums else 'MISMATCH in ' + ', '.join(report.bad_checksums)}")
    print(
        f"layers: {'ok' if not report.layer_errors else str(len(report.layer_errors)) + ' errors'} "
        f"({report.checked_ages} ages checked)"
    )
    print(
        f"values: {report.checked_states} states and {report.checked_afterstates} afterstates re-derived, "
        f"max residual {report.max_residual:.3g}, {len(report.value_errors)} errors"
    )
    for line in (report.layer_errors + report.value_errors)[:20]:
        print("  " + line)
    print("OK" if report.ok else "FAILED")
    return 0 if report.ok else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m solver", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("build", help="strongly solve a board into an HDF5 table (resumable)")
    add_spec_args(p)
    p.add_argument("--out", required=True, help="table file to write (HDF5)")
    p.add_argument("--work-dir", default=None, help="where finished ages are kept (default OUT.work)")
    p.add_argument("--keep-work", action="store_true", help="keep the work directory after success")
    p.add_argument("--format", type=int, default=2, choices=(1, 2), help="table format (default 2, compact)")
    p.add_argument(
        "--layout",
        default=None,
        choices=("file", "directory"),
        help="v2: one HDF5 file (default for the local backend) or a directory of per-age files with a manifest "
        "(default and only choice for --backend ray)",
    )
    p.add_argument(
        "--backend",
        default="local",
        choices=("local", "ray"),
        help="local (default: this process, all cores) or ray (one worker per machine of a Ray cluster, ages cut by "
        "material; extra 'distributed')",
    )
    p.add_argument(
        "--address",
        default=None,
        help="ray: address of a running Ray cluster (default: start a private one on this machine)",
    )
    p.add_argument(
        "--machines",
        type=int,
        default=None,
        help="ray with --address: wait until this many machines (Ray nodes) have joined, and run one worker on each "
        "(default: the machines there at the start)",
    )
    p.add_argument(
        "--material-tile",
        type=int,
        default=None,
        help="ray: the columns of an age are the multisets of its boards' tiles >= this (a power of two >= 8; "
        "default 8); each machine owns whole columns",
    )
    p.add_argument(
        "--rebalance",
        default=None,
        metavar="TOL|off",
        help="ray: at every age, move columns from the busiest machine to the least busy while the busiest has more "
        "than (1 + TOL) times an even share of the age's work (afterstates, and the states they forecast for the "
        "next age; default 0.05); off: a column stays where it "
        "first appeared",
    )
    p.add_argument(
        "--split",
        default=None,
        metavar="SHARES|off",
        help="ray: split a column whose work in an age (as --rebalance weighs it) exceeds SHARES times an even "
        "share of the age across "
        "every machine, by a hash of the board (default 1.05); off: a column stays whole",
    )
    p.set_defaults(fn=cmd_build)

    p = sub.add_parser("convert", help="turn a v1 table into a v2 table")
    p.add_argument("src", help="v1 table file")
    p.add_argument("out", help="v2 table to write (file, or directory with --layout directory)")
    p.add_argument("--layout", default="file", choices=("file", "directory"))
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(fn=cmd_convert)

    p = sub.add_parser("info", help="totals, start values and per-age counts of a table")
    p.add_argument("file")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_info)

    p = sub.add_parser("enumerate", help="forward pass only (counts, no values) up to an age")
    add_spec_args(p)
    p.add_argument("--max-age", type=int, default=None, help="last age to enumerate, inclusive (default: all)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(fn=cmd_enumerate)

    p = sub.add_parser("verify", help="checksums and Bellman residuals of sampled states")
    p.add_argument("file")
    p.add_argument("--samples", type=int, default=1000, help="states + afterstates to re-derive (default 1000)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--ages",
        type=int,
        default=None,
        help="check only this many ages, drawn in proportion to their size (default: every age); for "
        "big tables, whose states must be re-derived from the afterstates",
    )
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(fn=cmd_verify)

    args = parser.parse_args(argv)
    try:
        return args.fn(args)
    except (ValueError, TableError, WorkDirMismatch, FileNotFoundError, RayUnavailable, TimeoutError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
