"""The oracle server on 127.0.0.1: latency of one board per request, throughput of large batches, and concurrent
clients checked against the local oracle.

    python -m experiments.bench.oracle_server [--table PATH] [--requests 2000] [--batch 65536] [--repeats 5]
        [--clients 16] [--json FILE]

Starts ``python -m oracle serve TABLE --port 0`` (default table: the cached 3x3 one, built on first use), draws
boards uniformly from the table's states, and measures through ``Oracle.connect``:

* latency: ``q_values`` of one board per request, ``--requests`` of them, after 200 to warm up (p50, p99);
* throughput: ``q_values`` of ``--batch`` boards per request (the client's batch set to it), the median rate of
  ``--repeats`` runs of 2,000,000 boards, beside the local oracle's on the same boards in the same run, in
  batches of the same size and in one batch (a batch drawn over every age costs one kernel call per age);
* concurrency: ``--clients`` threads, each its own connection, each 20 requests of 1 to 5,000 random boards, every
  answer compared bit for bit with the local oracle's.

The server is stopped with SIGTERM at the end (and would stop by itself after an hour).
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import sys
import threading
import time

import numpy as np

from experiments.cli import write_json
from oracle import Oracle
from solver.format import Table


def start_server(table: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "oracle",
            "serve",
            table,
            "--port",
            "0",
            "--stop-after",
            "3600",
            "--log-level",
            "warning",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    if " on http://" not in line:
        proc.kill()
        raise RuntimeError(f"the server did not start: {line!r}")
    return proc, line.rsplit(" on ", 1)[1].strip()


def latency(url: str, boards: np.ndarray, requests: int) -> dict:
    with Oracle.connect(url) as oracle:
        oracle.q_values(boards[:requests])  # a running server has its layers open: open theirs first
        for b in boards[:200]:
            oracle.q_values(b)
        seconds = []
        for b in boards[:requests]:
            t = time.perf_counter()
            oracle.q_values(b)
            seconds.append(time.perf_counter() - t)
    ms = 1e3 * np.array(seconds)
    return {"requests": len(seconds), "p50_ms": float(np.percentile(ms, 50)), "p99_ms": float(np.percentile(ms, 99))}


def local_in_batches(local: Oracle, boards: np.ndarray, batch: int) -> None:
    for lo in range(0, boards.size, batch):
        local.q_values(boards[lo : lo + batch])


def throughput(url: str, local: Oracle, boards: np.ndarray, batch: int, repeats: int) -> dict:
    """The remote oracle's rate in batches of ``batch`` boards, beside the local oracle's in batches of the same
    size and in one batch of all the boards (each the median of ``repeats`` runs, interleaved)."""
    rates: dict[str, list[float]] = {"remote": [], "local_same_batches": [], "local_one_batch": []}
    with Oracle.connect(url, batch=batch) as oracle:
        oracle.q_values(boards)  # every layer open, on both sides
        local.q_values(boards)
        runs = {
            "remote": lambda: oracle.q_values(boards),
            "local_one_batch": lambda: local.q_values(boards),
            "local_same_batches": lambda: local_in_batches(local, boards, batch),
        }
        for _ in range(repeats):
            for name, run in runs.items():
                t = time.perf_counter()
                run()
                rates[name].append(boards.size / (time.perf_counter() - t))
    return {
        "batch": batch,
        "boards": int(boards.size),
        "runs": rates,
        **{f"{name}_boards_per_s": statistics.median(r) for name, r in rates.items()},
    }


def concurrency(url: str, local: Oracle, states: np.ndarray, clients: int) -> dict:
    errors, answered = [], [0] * clients

    def client(k: int) -> None:
        rng = np.random.default_rng(k)
        try:
            with Oracle.connect(url) as oracle:
                for _ in range(20):
                    pick = states[rng.integers(0, states.size, int(rng.integers(1, 5000)))]
                    got, want = oracle.q_values(pick), local.q_values(pick)
                    if not np.array_equal(got.view(np.uint64), want.view(np.uint64)):
                        errors.append(f"client {k}: an answer differs from the local oracle's")
                    answered[k] += pick.size
        except Exception as exc:  # noqa: BLE001 (every client's failure is counted)
            errors.append(f"client {k}: {exc!r}")

    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return {"clients": clients, "boards": sum(answered), "errors": errors, "seconds": time.perf_counter() - started}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", default=None, help="any table (default: the cached 3x3 table)")
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=65536)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    local = Oracle.open(args.table) if args.table else Oracle.for_board("3x3")
    rng = np.random.default_rng(0)
    with Table(local.path) as table:
        states = np.concatenate([table.layer(c.age, names=("states",))["states"] for c in table.counts() if c.states])
    boards = np.ascontiguousarray(states[rng.integers(0, states.size, 2_000_000)])
    proc, url = start_server(str(local.path))
    try:
        report = {
            "table": str(local.path),
            "latency": latency(url, boards, args.requests),
            "throughput": throughput(url, local, boards, args.batch, args.repeats),
            "concurrency": concurrency(url, local, states, args.clients),
        }
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)
    lat, thr, con = report["latency"], report["throughput"], report["concurrency"]
    print(f"one board per request: p50 {lat['p50_ms']:.3f} ms, p99 {lat['p99_ms']:.3f} ms ({lat['requests']} requests)")
    same, one = thr["local_same_batches_boards_per_s"], thr["local_one_batch_boards_per_s"]
    print(
        f"batches of {thr['batch']:,}: {thr['remote_boards_per_s']:,.0f} boards/s (the local oracle in batches of "
        f"that size {same:,.0f}, in one batch {one:,.0f}; medians of {args.repeats} runs of {thr['boards']:,} "
        f"boards)"
    )
    print(
        f"{con['clients']} concurrent clients: {con['boards']:,} boards in {con['seconds']:.1f} s, "
        f"{len(con['errors'])} errors or wrong answers"
    )
    if args.json:
        write_json(args.json, report)
    return report


if __name__ == "__main__":
    main()
