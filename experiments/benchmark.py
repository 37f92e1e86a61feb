"""The benchmark: agents on a solved board, every move priced by the oracle.  Protocol: docs/benchmark.md.

    python -m experiments.benchmark --board 3x3 --agents random,greedy,expectimax:2,td:PATH \\
        --episodes 1000 --seed 0 --out results/
    python -m experiments.benchmark --pattern L3 --target 512 --table tables/L3-512 --agents random,greedy,optimal

An endgame pattern (docs/endgame.md) is benchmarked on its table: the score is the success rate, the regret is in
probability of success, and the files go to ``OUT/PATTERN-T/``.

Agents: see ``agents.registry`` (``random``, ``greedy``, ``optimal``, ``expectimax:D[:PATH]``, ``td:PATH``,
``ppo:PATH``, or ``package.module:factory``).  Writes ``OUT/BOARD/benchmark.{md,csv,json}``, the optimality gap
by age of all agents (``gap-by-age.png``) and one figure per agent (``agent-LABEL.png``); with ``--replays K``
also ``replay-LABEL.html``, the viewer of K of the agent's games chosen by regret (see ``experiments.replay``).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import platform
import re
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from agents.registry import USAGE, make_policy
from env2048.pattern import load_pattern
from env2048.shape import parse_board
from oracle import Oracle
from oracle.agent import evaluates_exactly
from oracle.episodes import chosen_episodes
from oracle.oracle import open_oracle
from oracle.priced_games import reenact
from oracle.wrapper import shared_oracle

from .replay.viewer import write_replay_html

#: Version of the protocol and of the JSON schema (bump when either changes).
PROTOCOL_VERSION = 3
#: Scalar columns of the results table, in order (the JSON has these plus ``by_age`` per agent).
COLUMNS = (
    "label",
    "spec",
    "episodes",
    "mean_score",
    "score_ci",
    "percent_of_optimal",
    "mean_regret",
    "regret_ci",
    "optimal_move_rate",
    "moves",
    "exact_value",
    "exact_percent_of_optimal",
    "exact_states",
    "exact_seconds",
    "seconds",
)


def label_of(spec) -> str:
    """A short, file-name-safe label: paths become their file stem (``td:runs/w.npz`` -> ``td-w``), and a stem
    that already starts with the agent's name stands alone (``td:runs/td-3x3.npz`` -> ``td-3x3``).  An agent
    object (or SB3 model) given instead of a spec is labelled by its ``name`` or its class."""
    if not isinstance(spec, str):
        spec = str(getattr(spec, "name", None) or type(spec).__name__)
    parts = [Path(p).stem if ("/" in p or "." in p) and i else p for i, p in enumerate(spec.split(":"))]
    if len(parts) == 2 and parts[1].startswith(parts[0]):
        parts = parts[1:]
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", "-".join(parts)).strip("-")


def agent_of(spec, oracle: Oracle, seed: int):
    """The policy of a spec string, an agent object or a trained SB3 model (:func:`agents.registry.make_policy`)."""
    return make_policy(spec, oracle.rows, oracle.cols, seed=seed, oracle=oracle)


def run_agent(
    oracle: Oracle, spec, episodes: int, seed: int, exact: str, progress: bool, keep_actions: bool = False
) -> tuple[dict, object]:
    """Benchmark one agent (a spec string, an agent object or an SB3 model): ``(row, RegretReport)``; ``row``
    has :data:`COLUMNS` and ``by_age``."""
    rows, cols = oracle.rows, oracle.cols
    agent = agent_of(spec, oracle, seed)
    start = time.perf_counter()
    report = oracle.regret(agent, episodes=episodes, seed=seed, progress=progress, keep_actions=keep_actions)
    row = {
        "label": label_of(spec),
        "spec": spec if isinstance(spec, str) else label_of(spec),
        "episodes": episodes,
        "mean_score": report.mean_score,
        "score_ci": report.score_ci,
        "percent_of_optimal": report.percent_of_optimal,
        "mean_regret": report.mean_regret,
        "regret_ci": report.regret_ci,
        "optimal_move_rate": report.optimal_move_rate,
        "moves": report.moves,
        "exact_value": None,
        "exact_percent_of_optimal": None,
        "exact_states": None,
        "exact_seconds": None,
    }
    if exact == "always" or (exact == "auto" and evaluates_exactly(agent, rows * cols)):
        agent = agent_of(spec, oracle, seed)  # a spec gets a fresh generator: exact uses action_probs
        ev = oracle.evaluate(agent, progress=progress)
        row.update(
            exact_value=ev.value,
            exact_percent_of_optimal=ev.percent_of_optimal,
            exact_states=ev.states,
            exact_seconds=ev.seconds,
        )
    row["seconds"] = time.perf_counter() - start
    row["by_age"] = {
        "ages": report.ages.tolist(),
        "visits_per_game": (report.visits / episodes).tolist(),
        "mean_regret_per_move": report.mean_regret_by_age.tolist(),
        "optimal_move_rate": [None if np.isnan(x) else x for x in report.optimal_rate_by_age.tolist()],
        "contested_per_game": (report.contested_by_age / episodes).tolist(),
    }
    return row, report


def _fmt(value, digits: int = 2) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:,.{digits}f}" if isinstance(value, float) else f"{value:,}"


def markdown_table(result: dict) -> str:
    """The results as a Markdown table (with a one-line header naming the board, V*, episodes and seed)."""
    lines = [
        f"**{result['board']}**, V* = {result['optimal_value']:.2f}; {result['episodes']} episodes per agent, "
        f"seed {result['seed']} (protocol v{result['protocol_version']}).",
        "",
        "| agent | mean score ± 95% CI | % of optimal | regret per game ± 95% CI | optimal moves | exact V^π "
        "(% of V*) | time (s) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["agents"]:
        exact = "–" if r["exact_value"] is None else f"{r['exact_value']:.2f} ({r['exact_percent_of_optimal']:.2f}%)"
        lines.append(
            f"| {r['label']} | {_fmt(r['mean_score'])} ± {_fmt(r['score_ci'])} | {_fmt(r['percent_of_optimal'])}% "
            f"| {_fmt(r['mean_regret'])} ± {_fmt(r['regret_ci'])} | {100 * r['optimal_move_rate']:.2f}% | {exact} "
            f"| {r['seconds']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def binned_by_age(by_age: dict, width: int) -> tuple[np.ndarray, ...]:
    """Per-age results pooled into age bins of ``width``: ``(bin centres, visits per game, mean regret per move,
    optimal-move rate)``, means weighted by visits."""
    ages = np.asarray(by_age["ages"])
    visits = np.asarray(by_age["visits_per_game"], float)
    bins = ages // width
    used, inverse = np.unique(bins, return_inverse=True)
    v = np.bincount(inverse, visits)
    regret = np.bincount(inverse, visits * np.asarray(by_age["mean_regret_per_move"])) / v
    contested = np.asarray(by_age.get("contested_per_game", visits), float)
    rates = np.nan_to_num(np.asarray(by_age["optimal_move_rate"], float))  # no contested move: no weight
    c = np.bincount(inverse, contested)
    rate = np.full(c.shape, np.nan)
    np.divide(np.bincount(inverse, contested * rates), c, out=rate, where=c > 0)
    return used * width + width / 2, v, regret, rate


def plot_gap_by_age(result: dict, path, bins: int = 80) -> None:
    """All agents: mean regret per move, optimal-move rate and moves per game against age, pooled into about
    ``bins`` age bins (even widths) so that 1000 games give smooth curves."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    top_age = max((max(r["by_age"]["ages"], default=0) for r in result["agents"]), default=0)
    width = max(2, 2 * round(top_age / bins / 2))
    fig, axes = plt.subplots(3, 1, sharex=True, figsize=(9, 8), height_ratios=(3, 2, 1.5))
    for r in result["agents"]:
        ages, visits, regret, rate = binned_by_age(r["by_age"], width)
        axes[0].plot(ages, regret, lw=1, label=r["label"])
        axes[1].plot(ages, 100 * rate, lw=1, label=r["label"])
        axes[2].plot(ages, visits, lw=1, label=r["label"])
    axes[2].set_title(f"age bins of {width}", fontsize=8, loc="right")
    axes[0].set_yscale("symlog", linthresh=1.0)
    axes[0].set_ylabel("mean regret per move")
    axes[0].legend(fontsize=8, ncol=2)
    axes[1].set_ylabel("optimal moves (%)")
    axes[1].set_ylim(0, 101)
    axes[2].set_ylabel("moves per game\n(per bin)")
    axes[2].set_xlabel("age (sum of tiles) of the board moved from")
    axes[0].set_title(f"{result['board']}: where agents lose against the optimum ({result['episodes']} episodes)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_replays(oracle: Oracle, report, spec, k: int, path) -> list[int]:
    """The viewer page of ``k`` of the agent's benchmark games, chosen by regret (worst, median, best, ...: see
    :func:`oracle.episodes.chosen_episodes`), replayed from the report's recorded actions.  Returns the episode
    indices shown."""
    chosen = chosen_episodes(report.episode_regrets, k)
    order = np.argsort(-report.episode_regrets, kind="stable").tolist()
    episodes, labels = [], []
    for i in chosen:
        episode = reenact(report.episode_actions[i], report.seed + i, oracle, agent_name=label_of(spec))
        rank = order.index(i)
        where = {0: "worst", len(order) - 1: "best", (len(order) - 1) // 2: "median"}.get(rank, f"rank {rank + 1}")
        episodes.append(episode)
        labels.append(
            f"{where} of {len(order)} by regret: episode {i} (seed {episode.seed}), regret "
            f"{episode.total_regret:.2f}, {episode.moves} moves"
        )
    title = f"{oracle.spec.board} {oracle.spec.objective}: {label_of(spec)}, benchmark games"
    write_replay_html(episodes, path, labels, title=title, start_value=oracle.start_value)
    return chosen


def run(
    board: str | None,
    specs: list,
    episodes: int = 1000,
    seed: int = 0,
    out="results",
    exact: str = "auto",
    table=None,
    progress: bool = True,
    replays: int = 0,
    pattern=None,
    target: int | None = None,
) -> dict:
    """Benchmark ``specs`` (spec strings, agent objects or trained SB3 models) on ``board``, or on the endgame
    ``pattern`` (a built-in name, a JSON file or a Pattern; with ``target``) whose ``table`` is given; writes the
    files (see the module docstring) and returns the result.
    ``replays`` > 0 also writes ``replay-LABEL.html`` per agent with that many of its games (worst first)."""
    import matplotlib.pyplot as plt

    if pattern is not None:
        pattern = load_pattern(pattern, target)
        board = f"{pattern.rows}x{pattern.cols}"
    elif board is None:
        raise ValueError("give a board, or a pattern with its table")
    rows, cols = parse_board(board)
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    if replays < 0:
        raise ValueError(f"replays must be >= 0, got {replays}")
    if exact not in ("auto", "always", "never"):
        raise ValueError(f"exact must be auto, always or never, got {exact!r}")
    if not specs:
        raise ValueError(f"no agents given: use {USAGE}")
    labels = [label_of(s) for s in specs]
    if len(set(labels)) != len(labels):
        raise ValueError(f"two agents have the same label in {labels}: give distinct specs")
    if pattern is None:
        oracle = shared_oracle(f"{rows}x{cols}", table=table)
        name = oracle.spec.board
    else:
        oracle = pattern_oracle(pattern, table)
        name = f"{pattern.name}-{pattern.target_tile}"
    out_dir = Path(out) / name
    out_dir.mkdir(parents=True, exist_ok=True)
    result = {
        "protocol_version": PROTOCOL_VERSION,
        "board": name,
        "objective": oracle.spec.objective,
        "p4": oracle.spec.p4,
        "optimal_value": oracle.start_value,
        "episodes": episodes,
        "seed": seed,
        "table": str(oracle.path),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {platform.system()}, Python {platform.python_version()}",
        "agents": [],
    }
    for spec in specs:
        row, report = run_agent(oracle, spec, episodes, seed, exact, progress, keep_actions=replays > 0)
        if replays:
            row["replays"] = write_replays(oracle, report, spec, replays, out_dir / f"replay-{row['label']}.html")
        result["agents"].append(row)
        report.plot(
            out_dir / f"agent-{row['label']}.png",
            title=f"{oracle.spec.board}, {row['label']}: optimality gap by age ({episodes} episodes)",
        )
        plt.close("all")
        if progress:
            exact_note = "" if row["exact_value"] is None else f"; exact V^pi {row['exact_value']:.2f}"
            print(f"{row['label']}: {report.summary()}{exact_note}", flush=True)
    if pattern is not None:
        result["pattern"] = pattern.to_dict()
    (out_dir / "benchmark.json").write_text(json.dumps(result, indent=1) + "\n")
    with open(out_dir / "benchmark.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(result["agents"])
    (out_dir / "benchmark.md").write_text(markdown_table(result))
    plot_gap_by_age(result, out_dir / "gap-by-age.png")
    return result


def pattern_oracle(pattern, table) -> Oracle:
    """The oracle of an endgame pattern's table, checked to solve that pattern."""
    if table is None:
        raise ValueError(
            f"{pattern.describe()}: give its table (python -m solver build --pattern ... --out DIR), --table DIR"
        )
    oracle = open_oracle(table)
    theirs = oracle.spec.pattern
    if theirs is None or theirs.rules.tolist() != pattern.rules.tolist():
        found = oracle.spec.describe()
        oracle.close()
        raise ValueError(f"{table} solves {found}, not {pattern.describe()}")
    return oracle


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--board",
        default="3x3",
        help="a solved board: 2x2, 2x3, 3x2, 2x4, 4x2, 3x3 (built on first use) or any board with --table",
    )
    parser.add_argument("--agents", default="random,greedy,expectimax:2", help=f"comma-separated: {USAGE}")
    parser.add_argument("--episodes", type=int, default=1000, help="games per agent (episode i uses seed+i)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="results", help="directory; files go to OUT/BOARD/")
    parser.add_argument(
        "--exact",
        choices=("auto", "always", "never"),
        default="auto",
        help="exact V^pi by the oracle: auto = where cheap (see docs/benchmark.md)",
    )
    parser.add_argument(
        "--table",
        default=None,
        help="solved table (file or directory) or an oracle server's URL (http://...; default: the cache)",
    )
    parser.add_argument(
        "--replays",
        type=int,
        default=0,
        help="also write replay-LABEL.html per agent with "
        "this many of its games: 1 = the worst by regret, 2 = + the median, 3+ = worst to "
        "best",
    )
    parser.add_argument(
        "--pattern",
        default=None,
        help="an endgame pattern (built-in name or JSON file) instead of a board; needs --table",
    )
    parser.add_argument("--target", type=int, default=None, help="the pattern's target tile (e.g. 512)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    specs = [s.strip() for s in args.agents.split(",") if s.strip()]
    result = run(
        None if args.pattern else args.board,
        specs,
        args.episodes,
        args.seed,
        args.out,
        args.exact,
        args.table,
        not args.quiet,
        args.replays,
        args.pattern,
        args.target,
    )
    out_dir = Path(args.out) / result["board"]
    print("\n" + markdown_table(result))
    replays = " and replay-*.html" if args.replays else ""
    print(f"wrote {out_dir}/benchmark.md, .csv, .json, gap-by-age.png, agent-*.png{replays}")


if __name__ == "__main__":
    main()
