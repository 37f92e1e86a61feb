"""n-tuple TD figures: training speed on 4x4 (four 6-tuples), 5x5 and 6x6 (the wall tuples), and the 4x4 1-ply
player after 20,000 training games.

    python -m experiments.bench.agents [--repeats 5] [--games-4x4 2000] [--games-wide 20] [--train-4x4 20000]
        [--alpha 0.1]

Speed: moves per second of ``NTupleAgent.train`` on one thread (learning on, ``--alpha``), median of
``--repeats`` runs of ``--games-4x4`` games (``--games-wide`` on 5x5 and 6x6; 0 skips them) after a warm-up.
Seeded and single-threaded, every version of the code plays the same games, so two versions' figures compare
like for like.  ``--train-4x4 0`` skips the quality run.  Quality: a fresh network trained for ``--train-4x4`` games by
``experiments.train.td`` (its default learning-rate schedule, seed 0), then 1000 games without learning (mean
score, rate of reaching each tile).  The 3x3 figure (10 minutes of training, measured by the oracle) comes from
``python -m experiments.train.td --board 3x3 --minutes 10``.
"""

from __future__ import annotations

import argparse
import statistics

from agents.ntuple import WIDE_BASE, NTupleAgent
from experiments.train import td as train_td


def speed(rows: int, cols: int, games: int, args, tuples: str) -> None:
    """Print the median training moves/s of ``args.repeats`` rounds of ``games`` games, after a warm-up."""
    agent = NTupleAgent(rows, cols, alpha=args.alpha, seed=0)
    agent.train(2)
    runs = [agent.train(games) for _ in range(args.repeats)]
    rates = [r.moves_per_second for r in runs]
    print(
        f"{rows}x{cols} TD(0), {tuples}: {statistics.median(rates):,.0f} training moves/s (median of "
        f"{', '.join(f'{r:,.0f}' for r in rates)}); mean score of the last run {runs[-1].mean_score:,.0f} after "
        f"{2 + args.repeats * games} games",
        flush=True,
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--games-4x4", type=int, default=2000)
    parser.add_argument("--games-wide", type=int, default=20, help="games per speed run on 5x5 and 6x6")
    parser.add_argument("--train-4x4", type=int, default=20000, help="training games before the 4x4 test")
    parser.add_argument("--alpha", type=float, default=0.1, help="learning rate of the speed runs")
    parser.add_argument("--out", default="results/td-4x4.npz", help="where the 20,000-game network is saved")
    args = parser.parse_args(argv)

    speed(4, 4, args.games_4x4, args, "four 6-tuples")
    if args.games_wide > 0:
        for side in (5, 6):
            speed(side, side, args.games_wide, args, f"the wall tuples, base {WIDE_BASE}")
    if args.train_4x4 <= 0:
        return
    summary = train_td.train(
        train_td.Args(board="4x4", minutes=0, games=args.train_4x4, round=1000, out=args.out, evaluate=False)
    )
    test = summary["greedy_games"]
    rates = ", ".join(f"{tile}: {n / 10:.1f}%" for tile, n in test["reached"].items() if int(tile) >= 512)
    print(
        f"4x4 after {summary['games']} training games ({summary['train_seconds']:.0f} s, "
        f"{summary['moves_per_second']:,.0f} moves/s): 1-ply mean score {test['mean_score']:,.0f} over 1000 games; "
        f"reached {rates}",
        flush=True,
    )


if __name__ == "__main__":
    main()
