"""n-tuple TD figures: training speed on 4x4 (four 6-tuples) and the 3x3 agent against the exact optimum.

    python -m experiments.bench_agents [--repeats 3] [--games-4x4 2000] [--train-4x4 20000] [--minutes-3x3 10]

Speed: moves per second of ``NTupleAgent.train`` (learning on), median of ``--repeats`` runs of
``--games-4x4`` games after a warm-up; then training continues to ``--train-4x4`` games and 1000 games are
played without learning (mean score, rate of reaching each tile).  3x3: train for ``--minutes-3x3`` minutes in
rounds of 5,000 games, then
the oracle's exact evaluation of the greedy player (% of V*) and 1000-game Monte-Carlo regret.
"""

from __future__ import annotations

import argparse
import statistics
import time

from agents.ntuple import NTupleAgent
from oracle import Oracle


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--games-4x4", type=int, default=2000)
    parser.add_argument("--train-4x4", type=int, default=20000, help="training games before the 4x4 test")
    parser.add_argument("--minutes-3x3", type=float, default=10.0)
    parser.add_argument("--table", default=None, help="3x3 table (default: the cache, built on first use)")
    args = parser.parse_args(argv)

    agent = NTupleAgent(4, 4, alpha=0.1, seed=0)
    agent.train(10)
    runs = [agent.train(args.games_4x4) for _ in range(args.repeats)]
    rates = [r.moves_per_second for r in runs]
    print(f"4x4 TD(0), four 6-tuples: {statistics.median(rates):,.0f} training moves/s (median of "
          f"{', '.join(f'{r:,.0f}' for r in rates)}); mean score of the last run {runs[-1].mean_score:,.0f} after "
          f"{10 + args.repeats * args.games_4x4} games", flush=True)  # fmt: skip
    played = 10 + args.repeats * args.games_4x4
    t = time.perf_counter()
    if played < args.train_4x4:
        agent.train(args.train_4x4 - played)
    test = agent.train(1000, learn=False)
    rates = ", ".join(f"{tile}: {100 * n / 1000:.1f}%" for tile, n in sorted(test.max_exponent_counts.items())
                      if tile >= 512)  # fmt: skip
    print(f"4x4 after {max(played, args.train_4x4)} training games ({time.perf_counter() - t:.0f} s more): 1-ply "
          f"mean score {test.mean_score:,.0f} over 1000 games; reached {rates}", flush=True)  # fmt: skip

    oracle = Oracle.for_board("3x3", table=args.table)
    agent = NTupleAgent(3, 3, alpha=0.1, seed=0)
    start, games = time.perf_counter(), 0
    while time.perf_counter() - start < 60 * args.minutes_3x3:
        agent.train(5000)
        games += 5000
    trained_s = time.perf_counter() - start
    exact = oracle.evaluate(agent, progress=False)
    report = oracle.regret(agent, episodes=1000, seed=0, progress=False)
    print(f"3x3 TD(0) after {games} games ({trained_s:.0f} s): exact V^pi = {exact.value:.2f} = "
          f"{exact.percent_of_optimal:.2f}% of V* {exact.optimal_value:.2f}; {report.summary()}")  # fmt: skip


if __name__ == "__main__":
    main()
