"""Exact labels on the device against the host oracle, on the suite's tables: Q* of boards of random games,
and the speed of both.

    python -m experiments.bench.device_oracle [--tasks 2x3,2x4,3x3,3x3-512,L3-256,442-256,t-512] [--boards 100000]

For each task, ``--boards`` boards of random legal play (reachable ones, repeats included; in an endgame, random
allowed play) are labelled by the host :class:`oracle.Oracle` (float64) and by
:class:`oracle.device.DeviceOracle` (float32, jitted); prints the boards whose legal moves differ or whose Q*
differ by more than float32 rounding (0 expected), the largest relative difference, and the boards per second of
each (compile excluded).
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None) -> int:
    import jax

    from env2048.conformance import played_boards, played_endgame_boards
    from experiments.suite.tasks import checked_table, get_task
    from oracle import Oracle
    from oracle.device import DeviceOracle

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", default="2x3,2x4,3x3,3x3-512,L3-256,442-256,t-512")
    p.add_argument("--boards", type=int, default=100_000)
    args = p.parse_args(argv)
    bad_total = 0
    for name in args.tasks.split(","):
        task = get_task(name)
        rows, cols = task.shape
        if task.pattern is not None:
            boards = played_endgame_boards(task.pattern, args.boards, task.target)
        else:
            boards = played_boards(rows, cols, args.boards)
        goal = task.spec().objective
        if task.pattern is None and goal.startswith("tile:"):  # boards past the goal are not the game's
            boards = boards[boards.max(axis=(1, 2)) < int(goal.split(":")[1])]
        with Oracle.open(checked_table(task)[0]) as host:
            start = time.perf_counter()
            device = DeviceOracle.from_oracle(host)
            load = time.perf_counter() - start
            start = time.perf_counter()
            want = host.q_values(boards).reshape(-1, 4)
            host_seconds = time.perf_counter() - start
        jax.block_until_ready(device.lookup_q(boards[:1000]))  # compile for this batch size's shape below
        jax.block_until_ready(device.lookup_q(boards))
        start = time.perf_counter()
        got, missing = (np.asarray(x) for x in jax.block_until_ready(device.lookup_q(boards)))
        device_seconds = time.perf_counter() - start
        legal = ~np.isnan(want)
        rel = np.abs(got[legal] - want[legal]) / np.maximum(np.abs(want[legal]), 1e-30)
        bad = int(((np.isnan(got) != ~legal).any(axis=1) | missing).sum()) + int((rel > 2**-21).sum())
        bad_total += bad
        print(
            f"{name}: {len(boards):,} boards, {len(device.keys):,} afterstates on the device (base {device.base}, "
            f"{device.layout.words}-word keys, "
            f"loaded in {load:.1f} s): {bad} disagreements, largest relative difference {rel.max():.2e}; host "
            f"{len(boards) / host_seconds / 1e6:.2f} M boards/s, device {len(boards) / device_seconds / 1e6:.2f} M "
            f"boards/s ({jax.devices()[0].platform})"
        )
    return 1 if bad_total else 0


if __name__ == "__main__":
    raise SystemExit(main())
