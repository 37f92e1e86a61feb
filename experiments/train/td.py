"""Train an n-tuple network by afterstate TD(0) and (on a solved board) measure it against the optimum.

    python -m experiments.train.td [--board 3x3] [--minutes 10] [--games 0] [--seed 0] [--out results/td-3x3.npz]

Training runs in rounds of ``--round`` games until ``--minutes`` of training (or ``--games`` games, if given)
have passed, on ``--threads`` threads that share the weights (default: all cores; a time budget is not
reproducible anyway, while ``--threads 1 --games N`` replays exactly from the seed).  The learning rate follows
``--schedule``, ``"f:alpha,..."`` pairs: from fraction ``f`` of the budget on, ``alpha`` (default
:data:`DEFAULT_SCHEDULE`: 0.5, then 0.1 from half-time, 0.02 for the last fifth; on 3x3
:data:`BOARD_SCHEDULES`).  The weights are saved after every ``--checkpoint-minutes`` and at the end (also on
Ctrl-C), to ``--out``; a JSON summary goes next to it.  On a board this machine solves, the oracle
then gives the greedy player's exact expected score, and with ``--eval-every N`` (env moves) or ``--eval-every
Ns`` (seconds of training) a learning curve goes to ``OUT.curve.csv`` (see
``experiments.diagnostics.learning_curve``; plot
with ``python -m experiments.diagnostics.curves``).

The weights play in the benchmark as ``td:OUT`` (or ``expectimax:D:OUT``).  Any board from 2x2 to 8x8 trains:
beyond 16 cells on the exponent-array kernels (``agents.ntuple_wide``), with the wall tuples by default.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

from tqdm.auto import tqdm

from agents.ntuple import NTupleAgent, TrainingDiverged, tuple_set
from env2048.shape import parse_board
from experiments.cli import parse_dataclass, write_json
from experiments.diagnostics.learning_curve import EvalEvery, LearningCurve
from solver.provision import BUILDABLE

DEFAULT_SCHEDULE = "0:0.5,0.5:0.1,0.8:0.02"
#: 3x3 plateaus within 2 minutes at 0.5 and gains most at the small rates, so it leaves 0.5 early and ends at
#: 0.005 (10 minutes: 95.62% of V* against 94.56% with DEFAULT_SCHEDULE; docs/diagnostics.md).
#: On 6x6, 0.5 diverged (the weights overflowed) after about 5,000 games: where several symmetric images of a wall
#: tuple read one weight, an update moves V by several times the learning rate.
BOARD_SCHEDULES = {(3, 3): "0:0.5,0.2:0.1,0.5:0.02,0.8:0.005", (6, 6): "0:0.1,0.5:0.02,0.8:0.005"}


@dataclass
class Args:
    """Afterstate TD(0) on an n-tuple network (default tuples of agents.ntuple.DEFAULT_TUPLES, wall_tuples beyond 16
    cells)."""

    board: str = "3x3"
    minutes: float = 10.0
    games: int = 0  # 0: no limit on games, only on time
    schedule: str = ""  # "" = the board's default (BOARD_SCHEDULES, else DEFAULT_SCHEDULE)
    tc: bool = False
    tuples: str = "default"  # default, large (agents.ntuple.LARGE_TUPLES) or a JSON list of cell lists
    stages: int = 0  # 0: the board's default (agents.ntuple.DEFAULT_STAGES)
    stage_shift: int = 0  # 0: the board's default
    seed: int = 0
    threads: int = 0  # games played at once on shared weights ("Hogwild"); 0 = all cores; 1 = reproducible
    round: int = 2000
    checkpoint_minutes: float = 2.0
    evaluate: bool = True
    test_games: int = 1000  # greedy games without learning at the end (0: none)
    eval_every: str = ""  # "" = no learning curve; N env moves or Ns seconds of training
    eval_method: str = "auto"  # auto (exact for the n-tuple player), exact, or regret
    eval_episodes: int = 300  # regret games per checkpoint (method regret)
    out: str = "results/td-3x3.npz"


def parse_schedule(text: str) -> list[tuple[float, float]]:
    """``"0:0.5,0.5:0.1"`` -> ``[(0.0, 0.5), (0.5, 0.1)]``, checked: fractions rise from 0 and stay below 1,
    learning rates positive."""
    try:
        steps = [(float(f), float(a)) for f, a in (item.split(":") for item in text.split(","))]
    except ValueError:
        raise ValueError(f"schedule {text!r}: write fraction:alpha pairs such as 0:0.5,0.5:0.1") from None
    fractions = [f for f, _ in steps]
    if fractions[0] != 0 or fractions != sorted(set(fractions)) or fractions[-1] >= 1 or min(a for _, a in steps) <= 0:
        raise ValueError(f"schedule {text!r}: fractions must rise from 0 below 1, learning rates be > 0")
    return steps


def alpha_at(schedule: list[tuple[float, float]], fraction: float) -> float:
    return [a for f, a in schedule if f <= fraction][-1]


def make_curve(args: Args, out: Path, rows: int, cols: int):
    """The run's :class:`~experiments.diagnostics.learning_curve.LearningCurve` (``OUT.curve.csv``), or None without
    ``--eval-every``; a board without a table here cannot have one."""
    if not args.eval_every:
        return None
    every = EvalEvery.parse(args.eval_every)
    if (rows, cols) not in BUILDABLE:
        raise ValueError(f"--eval-every needs the board's table: {rows}x{cols} is not solved here")
    from oracle import Oracle

    oracle = Oracle.for_board(f"{rows}x{cols}")
    return LearningCurve(out.with_suffix(".curve.csv"), oracle, every, args.eval_method, args.eval_episodes)


def train(args: Args) -> dict:
    rows, cols = parse_board(args.board)
    schedule = parse_schedule(args.schedule or BOARD_SCHEDULES.get((rows, cols), DEFAULT_SCHEDULE))
    if args.minutes <= 0 and args.games <= 0:
        raise ValueError("give a budget: --minutes > 0 or --games > 0")
    agent = NTupleAgent(
        rows,
        cols,
        tuples=tuple_set(args.tuples, rows, cols),
        alpha=schedule[0][1],
        seed=args.seed,
        tc=args.tc,
        stages=args.stages or None,
        stage_shift=args.stage_shift or None,
    )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    curve = make_curve(args, out, rows, cols)
    threads = args.threads or os.cpu_count() or 1
    budget_s = 60 * args.minutes if args.minutes > 0 else float("inf")
    games = moves = 0
    spent = 0.0
    last_checkpoint = 0.0
    diverged = False
    bar = tqdm(
        total=round(budget_s) if args.games <= 0 else args.games,
        desc=f"TD {args.board}",
        unit="s" if args.games <= 0 else " games",
    )
    try:
        if curve is not None:
            curve.record(agent, 0, 0.0)
        while spent < budget_s and (args.games <= 0 or games < args.games):
            fraction = spent / budget_s if args.games <= 0 else games / args.games
            if args.minutes > 0 and args.games > 0:
                fraction = max(spent / budget_s, games / args.games)
            agent.alpha = alpha_at(schedule, fraction)
            n = args.round if args.games <= 0 else min(args.round, args.games - games)
            stats = agent.train(n, threads=threads)
            games, moves, spent = games + n, moves + stats.moves, spent + stats.seconds
            bar.update(round(spent) - bar.n if args.games <= 0 else n)
            bar.set_postfix(games=games, score=f"{stats.mean_score:.0f}", alpha=agent.alpha)
            if spent - last_checkpoint >= 60 * args.checkpoint_minutes:
                agent.save(out)
                last_checkpoint = spent
            if curve is not None and curve.due(moves, spent):
                row = curve.record(agent, moves, spent, games=games)
                bar.write(
                    f"checkpoint {row['checkpoint']}: {moves:,} moves, {spent:.0f} s: "
                    f"{row['percent_of_optimal']:.2f}% of V* ({row['method']})"
                )
    except TrainingDiverged as e:
        diverged = True  # keep the last checkpoint, not the broken weights
        raise TrainingDiverged(f"{e} (after {games:,} games; the last checkpoint, if any, is kept at {out})") from None
    finally:
        bar.close()
        if not diverged:
            agent.save(out)
    if curve is not None and (not curve.rows or curve.rows[-1]["env_steps"] != moves):
        curve.record(agent, moves, spent, games=games)
    summary = {
        "args": asdict(args),
        "schedule": schedule,
        "threads": threads,
        "games": games,
        "moves": moves,
        "train_seconds": spent,
        "moves_per_second": moves / spent if spent else None,
        "weights": str(out),
    }
    test = agent.train(args.test_games, learn=False) if args.test_games > 0 else None
    if test is not None:
        summary["greedy_games"] = {"games": test.episodes, "mean_score": test.mean_score,
                                   "reached": test.max_exponent_counts}  # fmt: skip
    last = curve.rows[-1] if curve is not None else None
    if last is not None and last["method"] == "exact":  # the curve's last checkpoint is this network, exactly
        summary["exact"] = {
            "value": last["value"],
            "optimal_value": last["optimal_value"],
            "percent_of_optimal": last["percent_of_optimal"],
        }
    elif args.evaluate and (rows, cols) in BUILDABLE:
        from oracle import Oracle

        exact = Oracle.for_board(f"{rows}x{cols}").evaluate(agent)
        summary["exact"] = {
            "value": exact.value,
            "optimal_value": exact.optimal_value,
            "percent_of_optimal": exact.percent_of_optimal,
            "states": exact.states,
        }
    if curve is not None:
        summary["curve"] = str(curve.path)
    write_json(out.with_suffix(".json"), summary)
    line = f"{games:,} games, {moves:,} moves in {spent:.0f} s ({summary['moves_per_second']:,.0f} moves/s)"
    if test is not None:
        line += f"; {test.episodes} greedy games: mean score {test.mean_score:,.1f}"
    if "exact" in summary:
        exact = summary["exact"]
        line += (
            f"; exact V^pi = {exact['value']:.2f} = {exact['percent_of_optimal']:.2f}% of V* "
            f"{exact['optimal_value']:.2f}"
        )
    print(f"{line}\nwrote {out} and {out.with_suffix('.json')}")
    return summary


def main(argv=None) -> None:
    train(parse_dataclass(Args, argv, description=__doc__))


if __name__ == "__main__":
    main()
