"""The Ray backend per core against the local build: wall time, peak memory, exchange volume and identical tables.

    python -m experiments.bench.ray_backend [--repeats 3] [--board 4x3] [--objective tile:7] [--machines 2]
        [--material-tile 8] [--rebalance TOL|off] [--split SHARES|off] [--kinds local,ray] [--json FILE]
        [--keep-journals DIR]

The local build is ``python -m solver build ... --layout directory --threads M`` (M = ``--machines``).  The Ray
build runs on a ``ray.cluster_utils.Cluster`` of M one-CPU nodes on 127.0.0.1 started by this script (one worker
per node: ``--backend ray --address ... --machines M``), so both use M cores.  Each build is its own process,
numba caches warm (one untimed run of each first, unless ``--no-warmup``); local and Ray builds alternate;
medians of ``--repeats``.  The cluster is started before and stopped after each Ray build, outside its timing.
Peak memory is the largest sum of the resident sizes over this script's process tree (for Ray: the cluster's daemons
and actors too); the CPU seconds of the build's processes are sampled with it, by kind (the workers, the driver,
Ray's own daemons: what Ray costs the cores besides the workers' steps).  The exchange is read from the Ray build's
journal: every crossing afterstate, and every state handed to another worker (a moved key's, or another part's of a
split column), travels once as an ID (8 B, forward) and once as a value (8 B, backward).  Each Ray build's journal
is read as ``material_balance`` reads it (the busiest worker per age, the barrier inside each age, the driver's
wall).  The tables' dataset checksums are compared.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from solver.format import Table

#: Seconds between two samples of the build's processes' CPU and memory (their ``stat`` files only).
SAMPLE_EVERY = 0.5
#: Seconds between two walks that find the build's processes.  A walk reads the children of every thread of every
#: process of the tree: on a two-node Ray cluster about 17 ms of this process's CPU, which every 0.5 s took 3.4% of
#: one of the two cores the Ray build ran on.  The cluster's processes start with it and the actors within the
#: build's first seconds, so a walk every few seconds finds them all; a process is sampled from the walk after it
#: starts (its CPU before that is counted, being cumulative; its memory is not).
DISCOVER_EVERY = 5.0
PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")


def own_rss() -> int:
    """This process's resident bytes."""
    return int(Path("/proc/self/statm").read_text().split()[1]) * PAGE


def descendants(root: int) -> dict[int, str]:
    """``{pid: command line}`` of ``root``'s descendants (not ``root`` itself), in one walk of their threads'
    children."""
    out, todo = {}, [root]
    while todo:
        pid = todo.pop()
        try:
            if pid != root:
                out[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            for task in Path(f"/proc/{pid}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return out


def cpu_and_rss(pid: int) -> tuple[float, int] | None:
    """``(CPU seconds so far, resident bytes)`` of process ``pid``, or None if it has exited."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # utime + stime; rss in pages
    return (int(fields[11]) + int(fields[12])) / TICK, int(fields[21]) * PAGE


def cpu_by_kind(seen: dict[int, tuple[str, float]], driver: int) -> dict[str, float]:
    """CPU seconds of the build's processes: its workers (Ray's column actors), its driver (the ``python -m
    solver`` process; the whole local build), and Ray's own processes (GCS, raylets, idle workers, agents)."""
    out = {"workers_cpu_s": 0.0, "driver_cpu_s": 0.0, "ray_daemons_cpu_s": 0.0}
    for pid, (command, cpu) in seen.items():
        kind = "driver" if pid == driver else "workers" if "ColumnActor" in command else "ray_daemons"
        out[f"{kind}_cpu_s"] += cpu
    return out


def run_tree_measured(argv: list[str]) -> tuple[float, float, str, dict[str, float]]:
    """``(wall seconds, peak RSS in GB of this process's tree, stdout, CPU seconds by kind)`` of one ``python -m
    solver`` command (the CPU of each process as last sampled, every ``SAMPLE_EVERY`` s: see :func:`cpu_by_kind`;
    ``sampler_cpu_s``, the sampling's own)."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "solver", *argv], stdout=subprocess.PIPE, text=True)
    peak, seen, own = [0], {}, [0.0]

    def sample() -> None:
        commands, walked = {}, -DISCOVER_EVERY
        while proc.poll() is None:
            if time.perf_counter() - walked >= DISCOVER_EVERY:
                walked = time.perf_counter()
                for pid, command in descendants(os.getpid()).items():
                    # a process that is exiting reads an empty command line: keep the one seen before
                    commands[pid] = command if command.strip() else commands.get(pid, "")
            resident = own_rss()
            for pid, command in commands.items():
                stats = cpu_and_rss(pid)
                if stats is not None:
                    seen[pid] = (command, stats[0])
                    resident += stats[1]
            peak[0] = max(peak[0], resident)
            own[0] = time.thread_time()
            time.sleep(SAMPLE_EVERY)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    wall = time.perf_counter() - start
    sampler.join()
    if proc.returncode:
        raise RuntimeError(f"python -m solver {' '.join(argv)} failed with exit code {proc.returncode}")
    return wall, peak[0] / 1e9, out, {**cpu_by_kind(seen, proc.pid), "sampler_cpu_s": own[0]}


def phases(stdout: str) -> tuple[float, float, float]:
    """``(forward, backward, write)`` seconds from the build command's summary line."""
    m = re.search(r"forward ([\d.]+) s, backward ([\d.]+) s, write ([\d.]+) s", stdout)
    return tuple(float(x) for x in m.groups())


def build_seconds(stdout: str) -> float:
    return sum(phases(stdout))


def checksums(path) -> dict[str, str]:
    with Table(path) as t:
        return t.stored_checksums()


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--board", default="4x3")
    parser.add_argument("--objective", default="tile:7")
    parser.add_argument("--machines", type=int, default=2, help="Ray nodes of one CPU, and the local build's threads")
    parser.add_argument("--material-tile", type=int, default=8)
    parser.add_argument(
        "--kinds",
        default="local,ray",
        help="the builds to run: local, ray or both (default); one alone reports its times only",
    )
    parser.add_argument("--rebalance", default=None, help="the Ray build's --rebalance (default: the solver's)")
    parser.add_argument("--split", default=None, help="the Ray build's --split (default: the solver's)")
    parser.add_argument("--no-warmup", action="store_true", help="time the first run of each too (warm caches)")
    parser.add_argument("--json", default=None, help="also write the figures to this JSON file")
    parser.add_argument(
        "--keep-journals",
        default=None,
        metavar="DIR",
        help="copy each Ray build's journal to DIR/rayN/ (python -m experiments.bench.material_balance "
        "--journal DIR/rayN reads it)",
    )
    args = parser.parse_args(argv)
    from experiments.bench.material_balance import balance, describe
    from solver.distributed.driver import exchanged_boards
    from solver.distributed.session import local_cluster, private_ray_environment

    private_ray_environment()  # before Ray is imported: the cluster stays on the loopback
    spec_args = ["--board", args.board, "--objective", args.objective, "--quiet", "--layout", "directory"]
    kinds = [k for k in ("local", "ray") if k in args.kinds.split(",")]
    if not kinds or set(args.kinds.split(",")) - {"local", "ray"}:
        parser.error(f"--kinds must name local, ray or both, got {args.kinds!r}")
    runs: dict[str, list[tuple]] = {k: [] for k in kinds}
    cpus: dict[str, list[dict]] = {k: [] for k in kinds}
    exchanged, balances = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        out = {"local": Path(tmp) / "local", "ray": Path(tmp) / "ray"}
        first = 1 if args.no_warmup else 0
        for repeat in range(first, args.repeats + 1):
            for kind in kinds:
                shutil.rmtree(out[kind], ignore_errors=True)
                shutil.rmtree(Path(tmp) / f"{kind}.work", ignore_errors=True)
                os.sync()
                cluster = local_cluster(args.machines) if kind == "ray" else None
                try:
                    extra = (
                        [
                            "--backend",
                            "ray",
                            "--address",
                            cluster.address,
                            "--machines",
                            str(args.machines),
                            "--material-tile",
                            str(args.material_tile),
                            "--keep-work",
                            *(["--rebalance", args.rebalance] if args.rebalance else []),
                            *(["--split", args.split] if args.split else []),
                        ]
                        if kind == "ray"
                        else ["--threads", str(args.machines)]
                    )
                    wall, peak, stdout, cpu = run_tree_measured(["build", *spec_args, "--out", str(out[kind]), *extra])
                finally:
                    if cluster is not None:
                        cluster.shutdown()
                if kind == "ray":
                    exchanged = exchanged_boards(Path(tmp) / "ray.work")
                    if repeat:
                        balances.append(balance(Path(tmp) / "ray.work"))
                        print(describe(balances[-1]), flush=True)
                        if args.keep_journals:
                            kept = Path(args.keep_journals) / f"ray{repeat}"
                            kept.mkdir(parents=True, exist_ok=True)
                            shutil.copy(Path(tmp) / "ray.work" / "journal.jsonl", kept / "journal.jsonl")
                if repeat:  # the first run of each warms the numba caches
                    runs[kind].append((wall, build_seconds(stdout), peak, *phases(stdout)))
                    cpus[kind].append(cpu)
                    used = ", ".join(f"{k[:-6]} {v:.1f} s" for k, v in cpu.items() if v)
                    print(
                        f"{kind:>5}: {wall:6.1f} s wall ({build_seconds(stdout):.1f} s building), peak {peak:.2f} "
                        f"GB; CPU: {used}",
                        flush=True,
                    )
        identical = checksums(out["local"]) == checksums(out["ray"]) if len(kinds) == 2 else None
        with Table(out[kinds[0]]) as t:
            work = int(t.attrs["states"]) + int(t.attrs["afterstates"])
    med = {k: [statistics.median(r[i] for r in v) for i in range(6)] for k, v in runs.items()}
    report = {
        "board": args.board,
        "objective": args.objective,
        "machines": args.machines,
        "material_tile": args.material_tile,
        "repeats": args.repeats,
        "cores": os.cpu_count(),
        "rebalance": args.rebalance,
        "split": args.split,
        "identical_checksums": identical,
        "states_plus_afterstates": work,
        **{
            kind: {
                "wall_s": m[0],
                "build_s": m[1],
                "peak_gb": m[2],
                "forward_s": m[3],
                "backward_s": m[4],
                "write_s": m[5],
            }
            for kind, m in med.items()
        },
        "runs": runs,
        "cpu_seconds": cpus,
    }
    if "ray" in kinds:
        report.update(exchanged)
        report["ray_balance"] = balances
        report["exchange_bytes_per_item"] = 16 * (exchanged["crossing"] + exchanged["handed_off"]) / work
    if len(kinds) == 2:
        for phase, i in (("build", 1), ("forward", 3), ("backward", 4)):
            report[f"ratio_per_core_{phase}"] = med["local"][i] / med["ray"][i]
        print(
            f"{args.board} {args.objective}: local ({args.machines} threads) {med['local'][1]:.1f} s, Ray "
            f"({args.machines} one-CPU nodes) {med['ray'][1]:.1f} s building: per core "
            f"{report['ratio_per_core_build']:.2f}x the local rate (forward {report['ratio_per_core_forward']:.2f}x, "
            f"backward {report['ratio_per_core_backward']:.2f}x); exchange {report['exchange_bytes_per_item']:.2f} "
            f"B per state + afterstate; peak {med['local'][2]:.2f} vs {med['ray'][2]:.2f} GB; medians of "
            f"{args.repeats}; tables {'identical' if identical else 'DIFFERENT'}"
        )
    else:
        m = med[kinds[0]]
        print(
            f"{args.board} {args.objective}: {kinds[0]} {m[1]:.1f} s building (forward {m[3]:.1f} s, backward "
            f"{m[4]:.1f} s), peak {m[2]:.2f} GB; medians of {args.repeats}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))
    return report


if __name__ == "__main__":
    main()
