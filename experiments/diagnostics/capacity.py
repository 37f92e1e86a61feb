"""Capacity ceiling of an n-tuple network: fit it to the optimal afterstate values, then evaluate its greedy policy
exactly.  What the function class plays when it is trained on the truth instead of on its own experience.

    python -m experiments.diagnostics.capacity --board 3x3 --tuples default --weighting uniform --epochs 8
    python -m experiments.diagnostics.capacity --board 3x3 --tuples large --weighting optimal --epochs 8

``--tuples``: ``default`` (``agents.ntuple.DEFAULT_TUPLES``), ``large`` (``agents.ntuple.LARGE_TUPLES``), or a JSON list
of cell lists.  ``--weighting``: ``uniform`` over the table's afterstates; ``optimal``: the afterstates of every
legal move from the boards the optimal policy reaches, each weighted by how often it reaches that board (from the
oracle's exact forward pass): what a greedy player must rank correctly; ``optimal-chosen``: only the afterstates
the optimal policy itself produces, weighted by their visit probabilities (which leaves the alternatives
unconstrained).

``--weighting regret`` is the decision-aware fit: ``--rounds`` rounds of exact DAgger.  Each round evaluates the
current greedy policy exactly (the oracle's forward pass over every board it reaches, a checkpoint of the curve)
and adds every (board, non-optimal legal move) pair it met, weighted by the board's visit probability times that
move's regret; then ``--samples`` pairs drawn by weight each take a ranking-hinge step (the optimal move's
r + V(afterstate) must lead by ``--margin``).  By the performance-difference identity, V* − V^π = Σ_s d^π(s) ·
regret(s, π(s)), so this weighting is what the greedy player's loss is made of.  ``--init PATH`` starts from a
saved network (e.g. a TD one, ``train_td --tuples`` to match); the best round's network is kept.

Writes the network
(``--out``, ``.npz``, playable as ``td:OUT``) and ``OUT.json`` (fit per epoch, exact % of V*).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from agents.fit import fit_values, weighted_mse
from agents.imitation import RankingPairs, fit_ntuple_pairs
from agents.ntuple import NTupleAgent, tuple_set
from agents.simple import OptimalAgent
from env2048 import board as B
from env2048.shape import parse_board
from experiments.cli import parse_dataclass, write_json
from oracle import Oracle

WEIGHTINGS = ("uniform", "optimal", "optimal-chosen", "regret")


@dataclass
class Args:
    """Fit an n-tuple network to the optimal afterstate values and evaluate its greedy policy exactly."""

    board: str = "3x3"
    tuples: str = "default"  # default, large, or a JSON list of cell lists
    weighting: str = "uniform"  # uniform, optimal, optimal-chosen or regret (decision-aware: exact DAgger rounds)
    epochs: int = 8  # value fits: passes; regret: ranking passes per round
    alpha: float = 0.5
    decay: float = 0.6
    stages: int = 0  # 0: the board's default (agents.ntuple.DEFAULT_STAGES)
    stage_shift: int = 0
    init: str = ""  # regret: start from this saved n-tuple network (.npz)
    rounds: int = 6  # regret: exact evaluations, each adding the pairs of the boards the policy reaches
    samples: int = 4_000_000  # regret: pairs drawn per ranking pass
    margin: float = 1.0  # regret: required lead of the optimal move, in value units
    seed: int = 0
    out: str = "results/capacity-3x3.npz"


def table_afterstates(oracle: Oracle) -> tuple[np.ndarray, np.ndarray]:
    """Every afterstate of the table (canonical, ``uint64[n]``) and its optimal value (``float64[n]``)."""
    ids, values = [], []
    for c in oracle.table.counts():
        if c.afterstates:
            layer = oracle.table.layer(c.age, names=("afterstates", "afterstate_values"))
            ids.append(layer["afterstates"])
            values.append(layer["afterstate_values"])
    return np.concatenate(ids), np.concatenate(values).astype(np.float64)


def optimal_visits(oracle: Oracle, every_move: bool = True, progress: bool = True):
    """Afterstates weighted by the optimal policy's visits: ``(canonical ids uint64[m], optimal values
    float64[m], weights float64[m])``.  ``every_move``: the afterstates of every legal move of each board the
    optimal policy reaches, weighted by that board's visit probability; else only the afterstates it moves to,
    weighted by their visit probabilities (summing to the expected number of moves of an optimal game)."""
    rows, cols = oracle.rows, oracle.cols
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def collect(age, ids, visits, policy, q):
        for a in range(4):
            take = ~np.isnan(q[:, a]) if every_move else policy[:, a] > 0
            if take.any():
                after, reward = B.move(ids[take], a, rows, cols)
                mass = visits[take] if every_move else visits[take] * policy[take, a]
                parts.append((B.canonical(after, rows, cols), q[take, a] - reward, mass))

    oracle.evaluate(OptimalAgent(oracle), progress=progress, on_layer=collect)
    ids = np.concatenate([p[0] for p in parts])
    values = np.concatenate([p[1] for p in parts])
    mass = np.concatenate([p[2] for p in parts])
    order = np.argsort(ids, kind="stable")
    ids, values, mass = ids[order], values[order], mass[order]
    starts = np.concatenate([[0], np.flatnonzero(ids[1:] != ids[:-1]) + 1])
    return ids[starts], values[starts], np.add.reduceat(mass, starts)


def regret_pairs(oracle: Oracle, agent, progress: bool = True):
    """Exact evaluation of ``agent`` that also gathers :class:`RankingPairs` from every board its policy reaches
    (weight = visit probability × regret of the move).  Returns ``(Evaluation, RankingPairs)``."""
    parts: list[RankingPairs] = []

    def collect(age, ids, visits, policy, q):
        pairs = RankingPairs.from_q(ids, q, oracle.optimal_mask(q), visits)
        if len(pairs):
            parts.append(pairs)

    exact = oracle.evaluate(agent, progress=progress, on_layer=collect)
    return exact, RankingPairs.concat(parts)


def make_agent(args: Args, rows: int, cols: int) -> NTupleAgent:
    if args.init:
        agent = NTupleAgent.load(args.init)
        if (agent.rows, agent.cols) != (rows, cols):
            raise ValueError(f"--init {args.init} is a {agent.rows}x{agent.cols} network, not {rows}x{cols}")
        return agent
    return NTupleAgent(
        rows,
        cols,
        tuples=tuple_set(args.tuples, rows, cols),
        seed=args.seed,
        stages=args.stages or None,
        stage_shift=args.stage_shift or None,
    )


def fit_by_regret(args: Args, oracle: Oracle, agent: NTupleAgent, progress: bool = True) -> tuple[dict, object]:
    """Exact DAgger rounds (module docstring); leaves ``agent`` at its best round.  Returns the fit's summary
    and the best round's exact evaluation."""
    if args.rounds < 1 or args.samples < 1:
        raise ValueError(f"need --rounds >= 1 and --samples >= 1, got {args.rounds}, {args.samples}")
    pairs = None
    best = best_weights = None
    rounds = []
    for r in range(args.rounds + 1):
        t = time.perf_counter()
        exact, new = regret_pairs(oracle, agent, progress)
        record = {
            "round": r,
            "percent_of_optimal": exact.percent_of_optimal,
            "new_pairs": len(new),
            "eval_seconds": time.perf_counter() - t,
        }
        if best is None or exact.value > best.value:
            best, best_weights = exact, agent.weights.copy()
        if r == args.rounds or len(new) == 0:
            rounds.append(record)
            tqdm.write(f"round {r}: {exact.percent_of_optimal:.2f}% of V*")
            break
        pairs = new if pairs is None else pairs + new
        t = time.perf_counter()
        rates = [args.alpha * args.decay**e for e in range(args.epochs)]
        losses = [
            fit_ntuple_pairs(agent, pairs, args.samples, 1, rate, args.margin, args.seed + 1000 * r + e)[0]
            for e, rate in enumerate(rates)
        ]
        record.update(pairs=len(pairs), hinge=losses, fit_seconds=time.perf_counter() - t)
        rounds.append(record)
        tqdm.write(
            f"round {r}: {exact.percent_of_optimal:.2f}% of V*; {len(pairs):,} pairs; hinge "
            + ", ".join(f"{x:.3f}" for x in losses)
        )
    agent.weights[:] = best_weights
    return {"rounds": rounds, "samples": len(pairs) if pairs is not None else 0}, best


def run(args: Args, progress: bool = True) -> dict:
    rows, cols = parse_board(args.board)
    if args.weighting not in WEIGHTINGS:
        raise ValueError(f"--weighting must be one of {WEIGHTINGS}, got {args.weighting!r}")
    if args.init and args.weighting != "regret":
        raise ValueError("--init is for --weighting regret (the value fits start from zero weights)")
    oracle = Oracle.for_board(f"{rows}x{cols}", progress=progress)
    agent = make_agent(args, rows, cols)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    summary = {
        "args": asdict(args),
        "tuples": agent.tuples,
        "stages": agent.stages,
        "n_weights": int(agent.weights.size),
    }
    t0 = time.perf_counter()
    if args.weighting == "regret":
        fit, exact = fit_by_regret(args, oracle, agent, progress)
        summary.update(fit, fit_seconds=time.perf_counter() - t0)
        fitted = f"{summary['samples']:,} (board, worse move) pairs"
    else:
        if args.weighting == "uniform":
            ids, targets = table_afterstates(oracle)
            weights = None
        else:
            ids, targets, weights = optimal_visits(oracle, args.weighting == "optimal", progress)
        data_seconds = time.perf_counter() - t0
        epochs = fit_values(
            agent,
            ids,
            targets,
            args.epochs,
            args.alpha,
            args.decay,
            weights,
            args.seed,
            progress,
            on_epoch=lambda e: tqdm.write(
                f"epoch {e.epoch}: alpha {e.alpha:.4f}, train MSE {e.train_mse:,.2f}, {e.seconds:.0f} s"
            ),
        )
        mse = weighted_mse(agent, ids, targets, weights)
        summary.update(
            samples=int(ids.size),
            data_seconds=data_seconds,
            fit_seconds=sum(e.seconds for e in epochs),
            epochs=[asdict(e) for e in epochs],
            final_mse=mse,
            final_rmse=float(np.sqrt(mse)),
        )
        fitted = f"{ids.size:,} afterstates: RMSE {summary['final_rmse']:.2f}"
        t1 = time.perf_counter()
        exact = oracle.evaluate(agent, progress=progress)
        summary["eval_seconds"] = time.perf_counter() - t1
    agent.save(out)
    summary.update(
        exact_value=exact.value,
        optimal_value=exact.optimal_value,
        percent_of_optimal=exact.percent_of_optimal,
        weights=str(out),
    )
    write_json(out.with_suffix(".json"), summary)
    print(
        f"{args.board} {args.tuples} tuples ({agent.weights.size:,} weights), {args.weighting} over {fitted}; "
        f"greedy policy exact V^pi = {exact.value:.2f} = {exact.percent_of_optimal:.2f}% of V*\n"
        f"wrote {out} and {out.with_suffix('.json')}"
    )
    return summary


def main(argv=None) -> None:
    run(parse_dataclass(Args, argv, description=__doc__))


if __name__ == "__main__":
    main()
