"""Speed of the layer codec: ranking, unranking and Elias-Fano coding of one sorted layer.

    python -m experiments.bench.codec [--board 4x3] [--age 202] [--n 12000000] [--repeats 5] [--threads N]

Draws ``--n`` distinct ranks among the boards of one age (sorted, as a layer's), unranks them to boards, ranks
the boards again and codes the ranks with Elias-Fano, checking each round trip; prints the median rate of each
step in elements per second.  4x3 age 202 is the largest age of the ``tile:7`` game (12.8 M states).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

from solver.build import set_threads
from solver.format import elias_fano, ranking
from solver.spec import SolveSpec


def median_seconds(repeats: int, fn, *args):
    """``(median seconds, last result)`` of ``repeats`` calls, after one untimed call (compilation)."""
    result = fn(*args)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--board", default="4x3")
    parser.add_argument("--age", type=int, default=202)
    parser.add_argument("--n", type=int, default=12_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    threads = set_threads(args.threads)
    shape = SolveSpec.parse(args.board).rank_shape
    universe = ranking.shape_universe(shape, args.age)
    n = min(args.n, universe)
    rng = np.random.default_rng(0)
    drawn = np.empty(0, np.uint64)
    while drawn.size < n:  # duplicates collapse: draw until n distinct ranks are there (n may be the universe)
        drawn = np.union1d(drawn, rng.integers(0, universe, int(n * 1.3) + 64, dtype=np.uint64))
    ranks = np.sort(rng.choice(drawn, n, replace=False)) if drawn.size > n else drawn
    t_unrank, boards = median_seconds(args.repeats, ranking.shape_boards, shape, ranks, args.age)
    t_rank, again = median_seconds(args.repeats, ranking.shape_ranks, shape, boards, args.age)
    t_encode, (upper, lower, low_bits) = median_seconds(args.repeats, elias_fano.ef_encode, ranks, universe)
    t_decode, decoded = median_seconds(args.repeats, elias_fano.ef_decode, upper, lower, ranks.size, low_bits)
    if not (np.array_equal(again, ranks) and np.array_equal(decoded, ranks)):
        raise AssertionError("a round trip did not give the ranks back")
    rates = {
        step: ranks.size / t
        for step, t in (("unrank", t_unrank), ("rank", t_rank), ("ef_encode", t_encode), ("ef_decode", t_decode))
    }
    print(
        f"{args.board} age {args.age}: {ranks.size:,} sorted ranks of {universe:,}, {threads} threads, median of "
        f"{args.repeats}: " + ", ".join(f"{k} {v / 1e6:.1f} M/s" for k, v in rates.items())
    )
    return rates


if __name__ == "__main__":
    main()
