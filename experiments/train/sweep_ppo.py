"""A short PPO sweep on a solved board: each setting trains ``train_ppo`` for the same time budget, then is scored
by the oracle; one CSV row per setting.

    python -m experiments.train.sweep_ppo --board 3x3 --minutes 3 --jobs 2 --out results/ppo-sweep

Settings (:data:`SETTINGS`) change one thing at a time from the base: ``train_ppo``'s defaults plus ``--extra``.
``--jobs`` runs that many at once, each with ``--torch-threads 1`` (so on 2 cores two runs share the machine as one
run with 2 threads would); ``--only`` picks settings by name.  Each run writes ``OUT/NAME/`` (model, summary);
the table goes to ``OUT/sweep.csv`` (columns :data:`COLUMNS`): % of V* from ``--eval-episodes`` seeded games
(their mean score, and V* minus their mean regret: two estimates of the same expected score, the first with the
narrower interval here) and, with ``--exact``, from the oracle's exact evaluation.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from experiments.cli import parse_dataclass

#: name -> train_ppo flags, added after --extra (the baseline is the base itself).  net-128 and envs-32 are today's
#: defaults of train_ppo, chosen by this sweep from the previous base (--net 256,256 --n-envs 8 --n-steps 256
#: --batch-size 512; docs/diagnostics.md).
SETTINGS: dict[str, list[str]] = {
    "baseline": [],
    "reward-log": ["--reward", "log"],
    "obs-exponent": ["--obs", "exponent"],
    "net-128": ["--net", "128,128"],
    "net-512": ["--net", "512,512"],
    "envs-32": ["--n-envs", "32", "--n-steps", "128", "--batch-size", "1024"],
    "envs-64": ["--n-envs", "64", "--n-steps", "64", "--batch-size", "1024"],
    "steps-64": ["--n-steps", "64"],
    "ent-0": ["--ent-coef", "0"],
    "ent-0.03": ["--ent-coef", "0.03"],
    "gamma-0.99": ["--gamma", "0.99"],
    "gamma-0.999": ["--gamma", "0.999"],
    "lr-1e-3": ["--learning-rate", "1e-3"],
    "epochs-10": ["--n-epochs", "10"],
}
COLUMNS = (
    "setting",
    "flags",
    "steps",
    "train_seconds",
    "steps_per_second",
    "games",
    "percent_score",
    "percent_score_ci",
    "percent_regret",
    "percent_regret_ci",
    "optimal_move_rate",
    "percent_exact",
)


@dataclass
class Args:
    """Train train_ppo's settings for the same time each and tabulate their % of V*."""

    board: str = "3x3"
    minutes: float = 3.0
    jobs: int = 2
    only: str = ""  # comma-separated setting names; "" = all
    extra: str = ""  # flags added to every run, e.g. "--reward log" to sweep around another base
    seed: int = 0
    eval_episodes: int = 1000
    exact: bool = False
    out: str = "results/ppo-sweep"


def command(args: Args, name: str, flags: list[str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "experiments.train.ppo",
        "--board",
        args.board,
        "--minutes",
        str(args.minutes),
        "--timesteps",
        "1000000000",
        "--torch-threads",
        "1" if args.jobs > 1 else "0",
        "--seed",
        str(args.seed),
        "--eval-episodes",
        str(args.eval_episodes),
        "--checkpoint-every",
        "100000000",
        "--exact" if args.exact else "--no-exact",
        "--out",
        str(Path(args.out) / name),
        *args.extra.split(),
        *flags,
    ]


def row(name: str, flags: list[str], summary: dict) -> dict:
    regret = summary["regret"]
    return {
        "setting": name,
        "flags": " ".join(flags),
        "steps": summary["steps"],
        "train_seconds": round(summary["train_seconds"], 1),
        "steps_per_second": round(summary["steps_per_second"]),
        "games": summary["training_games"],
        "percent_score": round(100 * regret["mean_score"] / regret["start_value"], 2),
        "percent_score_ci": round(100 * regret["score_ci"] / regret["start_value"], 2),
        "percent_regret": round(100 * (regret["start_value"] - regret["mean_regret"]) / regret["start_value"], 2),
        "percent_regret_ci": round(100 * regret["regret_ci"] / regret["start_value"], 2),
        "optimal_move_rate": round(regret["optimal_move_rate"], 4),
        "percent_exact": round(summary["exact"]["percent_of_optimal"], 2) if "exact" in summary else "",
    }


def run(args: Args) -> list[dict]:
    names = [n.strip() for n in args.only.split(",") if n.strip()] or list(SETTINGS)
    unknown = sorted(set(names) - set(SETTINGS))
    if unknown:
        raise ValueError(f"unknown settings {unknown}; have {list(SETTINGS)}")
    if args.minutes <= 0 or args.jobs < 1:
        raise ValueError(f"need --minutes > 0 and --jobs >= 1, got {args.minutes}, {args.jobs}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def one(name: str) -> dict:
        log = out / f"{name}.log"
        t = time.perf_counter()
        with open(log, "w") as f:
            done = subprocess.run(command(args, name, SETTINGS[name]), stdout=f, stderr=subprocess.STDOUT)
        if done.returncode != 0:
            raise RuntimeError(f"setting {name} failed (exit {done.returncode}); see {log}")
        result = row(name, args.extra.split() + SETTINGS[name], json.loads((out / name / "summary.json").read_text()))
        print(
            f"{name}: score {result['percent_score']:.2f} ± {result['percent_score_ci']:.2f}% of V* "
            f"({result['steps']:,} steps, {time.perf_counter() - t:.0f} s)",
            flush=True,
        )
        return result

    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(one, names))
    with open(out / "sweep.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    print(f"wrote {out / 'sweep.csv'}")
    return rows


def main(argv=None) -> None:
    run(parse_dataclass(Args, argv, description=__doc__))


if __name__ == "__main__":
    main()
