"""Capacity ceiling of an n-tuple network: fit it to the optimal afterstate values, then evaluate its greedy policy
exactly.  What the function class plays when it is trained on the truth instead of on its own experience.

    python -m experiments.capacity --board 3x3 --tuples default --weighting uniform --epochs 8
    python -m experiments.capacity --board 3x3 --tuples large --weighting optimal --epochs 8

``--tuples``: ``default`` (``agents.ntuple.DEFAULT_TUPLES``), ``large`` (:data:`LARGE_TUPLES`), or a JSON list
of cell lists.  ``--weighting``: ``uniform`` over the table's afterstates; ``optimal``: the afterstates of every
legal move from the boards the optimal policy reaches, each weighted by how often it reaches that board (from the
oracle's exact forward pass): what a greedy player must rank correctly; ``optimal-chosen``: only the afterstates
the optimal policy itself produces, weighted by their visit probabilities (which leaves the alternatives
unconstrained).  Writes the network
(``--out``, ``.npz``, playable as ``td:OUT``) and ``OUT.json`` (fit per epoch, exact % of V*).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from agents.fit import fit_values, weighted_mse
from agents.ntuple import DEFAULT_TUPLES, NTupleAgent
from agents.simple import OptimalAgent
from env2048 import board as B
from env2048.shape import parse_board
from experiments.cli import parse_dataclass, write_json
from oracle import Oracle

#: Larger tuple sets (cells row-major): on 3x3 four 7-tuples (two full rows plus a third-row cell; the cross plus
#: two corners; an S shape), 19.5 M weights each per stage.
LARGE_TUPLES = {
    (3, 3): [[0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 3, 4, 5, 7], [1, 3, 4, 5, 7, 0, 8], [0, 1, 2, 4, 6, 7, 8]],
}
WEIGHTINGS = ("uniform", "optimal", "optimal-chosen")


@dataclass
class Args:
    """Fit an n-tuple network to the optimal afterstate values and evaluate its greedy policy exactly."""

    board: str = "3x3"
    tuples: str = "default"  # default, large, or a JSON list of cell lists
    weighting: str = "uniform"  # uniform, optimal (every move of the boards optimal play reaches), optimal-chosen
    epochs: int = 8
    alpha: float = 0.5
    decay: float = 0.6
    seed: int = 0
    out: str = "results/capacity-3x3.npz"


def tuple_set(name: str, rows: int, cols: int) -> list[list[int]]:
    if name == "default":
        return DEFAULT_TUPLES[rows, cols]
    if name == "large":
        if (rows, cols) not in LARGE_TUPLES:
            raise ValueError(f"no large tuple set for {rows}x{cols} (have {sorted(LARGE_TUPLES)}); give a JSON list")
        return LARGE_TUPLES[rows, cols]
    try:
        tuples = json.loads(name)
    except json.JSONDecodeError:
        raise ValueError(f"--tuples must be default, large or a JSON list of cell lists, got {name!r}") from None
    if not isinstance(tuples, list) or not all(isinstance(t, list) for t in tuples):
        raise ValueError(f"--tuples JSON must be a list of cell lists, got {name!r}")
    return tuples


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


def run(args: Args, progress: bool = True) -> dict:
    rows, cols = parse_board(args.board)
    if args.weighting not in WEIGHTINGS:
        raise ValueError(f"--weighting must be one of {WEIGHTINGS}, got {args.weighting!r}")
    tuples = tuple_set(args.tuples, rows, cols)
    oracle = Oracle.for_board(f"{rows}x{cols}", progress=progress)
    agent = NTupleAgent(rows, cols, tuples=tuples, seed=args.seed)
    t0 = time.perf_counter()
    if args.weighting == "uniform":
        ids, targets = table_afterstates(oracle)
        weights = None
    else:
        ids, targets, weights = optimal_visits(oracle, args.weighting == "optimal", progress)
    data_seconds = time.perf_counter() - t0
    epochs = fit_values(agent, ids, targets, args.epochs, args.alpha, args.decay, weights, args.seed, progress,
                        on_epoch=lambda e: tqdm.write(f"epoch {e.epoch}: alpha {e.alpha:.4f}, train MSE "
                                                      f"{e.train_mse:,.2f}, {e.seconds:.0f} s"))  # fmt: skip
    fit_seconds = sum(e.seconds for e in epochs)
    mse = weighted_mse(agent, ids, targets, weights)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    agent.save(out)
    t1 = time.perf_counter()
    exact = oracle.evaluate(agent, progress=progress)
    summary = {
        "args": asdict(args), "tuples": tuples, "n_weights": int(agent.weights.size), "samples": int(ids.size),
        "data_seconds": data_seconds, "fit_seconds": fit_seconds, "epochs": [asdict(e) for e in epochs],
        "final_mse": mse, "final_rmse": float(np.sqrt(mse)), "exact_value": exact.value,
        "optimal_value": exact.optimal_value, "percent_of_optimal": exact.percent_of_optimal,
        "eval_seconds": time.perf_counter() - t1, "weights": str(out),
    }  # fmt: skip
    write_json(out.with_suffix(".json"), summary)
    print(f"{args.board} {args.tuples} tuples ({agent.weights.size:,} weights), {args.weighting} over "
          f"{ids.size:,} afterstates: RMSE {summary['final_rmse']:.2f}; greedy policy exact V^pi = {exact.value:.2f}"
          f" = {exact.percent_of_optimal:.2f}% of V*\nwrote {out} and {out.with_suffix('.json')}")  # fmt: skip
    return summary


def main(argv=None) -> None:
    run(parse_dataclass(Args, argv, description=__doc__))


if __name__ == "__main__":
    main()
