"""Imitation of the optimum: behaviour cloning and DAgger, for the n-tuple network and torch policy nets, with
the exact % of V* against the number of oracle-labelled states.

    python -m experiments.train.imitate --board 3x3 --learner ntuple --method bc --labels 200000 --rounds 5
    python -m experiments.train.imitate --board 3x3 --learner mlp --method dagger --labels 200000 --rounds 5

``bc``: the optimal policy plays (whole games, a few at once) and every board it meets is labelled with the
optimal moves; checkpoint k trains a fresh learner on the first k/rounds of the labels.  ``dagger``: round 0 is
behaviour cloning on labels/rounds expert boards; each later round the learner plays (the expert's move with
probability ``beta**round``), its boards are labelled by the oracle and added, and a fresh learner is trained on
everything so far.  Writes the learner (``OUT`` + ``.npz`` for ``ntuple``, playable as ``td:PATH``; ``.pt`` for
``mlp``/``cnn``, playable as ``policy:PATH``), the learning curve ``OUT.curve.csv`` (``labels`` column; see
``experiments.diagnostics.learning_curve``) and ``OUT.json``.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

from agents.imitation import PolicyNetAgent, collect_states, fit_ntuple_actions, fit_policy_net
from agents.ntuple import NTupleAgent
from agents.simple import OptimalAgent
from env2048.shape import parse_board
from experiments.cli import parse_dataclass, write_json
from experiments.diagnostics.learning_curve import LearningCurve
from oracle import Oracle

LEARNERS = ("ntuple", "mlp", "cnn")
METHODS = ("bc", "dagger")


@dataclass
class Args:
    """Behaviour cloning / DAgger of the oracle's optimal moves; exact % of V* per round."""

    board: str = "3x3"
    learner: str = "ntuple"  # ntuple, mlp or cnn
    method: str = "bc"  # bc or dagger
    labels: int = 200_000  # oracle-labelled boards in all
    rounds: int = 5  # checkpoints (bc) or DAgger rounds
    beta: float = 0.5  # dagger: the expert moves with probability beta**round
    epochs: int = 4
    alpha: float = 0.5  # ntuple: NLMS step of the ranking fit
    margin: float = 1.0  # ntuple: required lead of an optimal move's Q (value units)
    lr: float = 1e-3  # mlp/cnn: Adam
    hidden: int = 256  # mlp/cnn width
    seed: int = 0
    eval_method: str = "auto"
    eval_episodes: int = 300
    out: str = "results/imitate-3x3"


def new_learner(args: Args, rows: int, cols: int):
    if args.learner == "ntuple":
        return NTupleAgent(rows, cols, seed=args.seed)
    return PolicyNetAgent(rows, cols, kind=args.learner, hidden=args.hidden, seed=args.seed)


def fit(learner, data, args: Args) -> list[float]:
    if isinstance(learner, NTupleAgent):
        return fit_ntuple_actions(learner, data, args.epochs, args.alpha, args.margin, seed=args.seed)
    return fit_policy_net(learner, data, args.epochs, args.lr, seed=args.seed)


def run(args: Args, progress: bool = True) -> dict:
    rows, cols = parse_board(args.board)
    if args.learner not in LEARNERS or args.method not in METHODS:
        raise ValueError(
            f"--learner must be one of {LEARNERS} and --method one of {METHODS}, got {args.learner!r}, {args.method!r}"
        )
    if args.rounds < 1 or args.labels < args.rounds or not 0 <= args.beta <= 1:
        raise ValueError(
            f"need rounds >= 1, labels >= rounds and beta in [0, 1], got {args.rounds}, {args.labels}, {args.beta}"
        )
    oracle = Oracle.for_board(f"{rows}x{cols}", progress=progress)
    expert = OptimalAgent(oracle)
    out = Path(args.out)
    curve = LearningCurve(out.with_suffix(".curve.csv"), oracle, None, args.eval_method, args.eval_episodes)
    per_round = args.labels // args.rounds
    train_seconds = 0.0
    rounds = []
    if args.method == "bc":
        all_data, env_steps = collect_states(oracle, expert, per_round * args.rounds, seed=args.seed)
    data, steps = collect_states(oracle, expert, per_round, seed=args.seed) if args.method == "dagger" else (None, 0)
    learner = None
    for k in range(args.rounds):
        if args.method == "bc":
            data = all_data.first(per_round * (k + 1))
            steps = round(env_steps * len(data) / len(all_data))
        elif k > 0:
            more, more_steps = collect_states(
                oracle, learner, per_round, seed=args.seed + k, expert_fraction=args.beta**k, expert=expert
            )
            data, steps = data + more, steps + more_steps
        learner = new_learner(args, rows, cols)
        t = time.perf_counter()
        losses = fit(learner, data, args)
        train_seconds += time.perf_counter() - t
        row = curve.record(learner, steps, train_seconds, labels=len(data))
        rounds.append(
            {
                "round": k,
                "labels": len(data),
                "env_steps": steps,
                "losses": losses,
                "percent_of_optimal": row["percent_of_optimal"],
                "method": row["method"],
            }
        )
        if progress:
            print(
                f"{args.method} {args.learner} round {k}: {len(data):,} labels, loss {losses[-1]:.4f}: "
                f"{row['percent_of_optimal']:.2f}% of V* ({row['method']})",
                flush=True,
            )
    model_path = out.with_suffix(".npz" if args.learner == "ntuple" else ".pt")
    model_path.parent.mkdir(parents=True, exist_ok=True)
    learner.save(model_path)
    summary = {
        "args": asdict(args),
        "rounds": rounds,
        "train_seconds": train_seconds,
        "model": str(model_path),
        "curve": str(curve.path),
        "final_percent_of_optimal": rounds[-1]["percent_of_optimal"],
    }
    write_json(out.with_suffix(".json"), summary)
    if progress:
        print(f"wrote {model_path}, {curve.path} and {out.with_suffix('.json')}")
    return summary


def main(argv=None) -> None:
    run(parse_dataclass(Args, argv, description=__doc__))


if __name__ == "__main__":
    main()
