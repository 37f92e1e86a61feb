"""Oracle figures on 3x3 (or any table): batched lookup throughput, Monte-Carlo regret and exact evaluation of the
baselines.

    python -m experiments.bench.oracle [--episodes 1000] [--repeats 5] [--table PATH] [--ages N] [--lookups-only]

Throughput: ``q_values`` on 2,000,000 boards drawn uniformly from the table's states (a worst case for the
caches; a v2 table's states are derived from its afterstates; ``--ages N``: from N ages drawn at random, for
tables whose states do not fit in memory), median of ``--repeats``.  Regret: ``Oracle.regret`` with seed 0.
Exact: ``Oracle.evaluate``.  ``--table`` takes any table, an endgame pattern's included.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from agents import GreedyAgent, OptimalAgent, RandomAgent
from oracle import Oracle
from solver.format import Table


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--table", default=None, help="any table (default: the cached 3x3 table, built on first use)")
    parser.add_argument("--ages", type=int, default=None, help="draw the boards from this many random ages")
    parser.add_argument("--lookups-only", action="store_true", help="the throughput only (no regret, no exact)")
    args = parser.parse_args(argv)
    t = time.perf_counter()
    oracle = Oracle.open(args.table) if args.table else Oracle.for_board("3x3")
    print(f"loaded {oracle} in {time.perf_counter() - t:.1f} s")

    rng = np.random.default_rng(0)
    with Table(oracle.path) as table:
        counts = [c for c in table.counts() if c.states]
        if args.ages is not None and args.ages < len(counts):
            counts = [counts[i] for i in sorted(rng.choice(len(counts), args.ages, replace=False))]
        states = np.concatenate([table.layer(c.age, names=("states",))["states"] for c in counts])
    boards = np.ascontiguousarray(states[rng.integers(0, states.size, 2_000_000)])
    oracle.q_values(boards[:100])
    rates = []
    for _ in range(args.repeats):
        t = time.perf_counter()
        oracle.q_values(boards)
        rates.append(boards.size / (time.perf_counter() - t))
    print(
        f"q_values: {statistics.median(rates):,.0f} boards/s (median of {args.repeats}: "
        f"{', '.join(f'{r:,.0f}' for r in rates)})"
    )
    if args.lookups_only:
        return

    for agent in (RandomAgent(seed=0), GreedyAgent(), OptimalAgent(oracle)):
        t = time.perf_counter()
        report = oracle.regret(agent, episodes=args.episodes, seed=0, progress=False)
        print(f"regret {agent.name:>8}: {report.summary()} [{time.perf_counter() - t:.1f} s]")
        exact = oracle.evaluate(agent, progress=False)
        print(
            f"exact  {agent.name:>8}: V^pi = {exact.value:.6f} ({exact.percent_of_optimal:.3f}% of V*), gap "
            f"{exact.gap:.6f}, {exact.states:,} boards, {exact.seconds:.1f} s"
        )


if __name__ == "__main__":
    main()
