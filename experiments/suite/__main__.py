"""Command line of the suite:
``python -m experiments.suite {tables,run,status,compare,registry,tune,curves,dataset,bc} ...``
(docs/suite.md, docs/datasets.md)."""

from __future__ import annotations

import argparse
import sys

from .runner import SuiteRunError
from .tasks import REGIMES, SUITE_VERSION, suite_tasks, tasks_named


def cmd_tables(args) -> int:
    """Build the tasks' tables (those missing), with --verify check V* and the digests against the pins, and with
    --record write what it cost."""
    import json
    from pathlib import Path

    from .entry_cost import build_tables, summary
    from .provenance import provenance

    tasks = tasks_named(args.tasks, args.suite_version)
    record = build_tables(tasks, args.verify, progress=not args.quiet, report=lambda line: print(line, flush=True))
    print(summary(record), flush=True)
    if args.record:
        record["provenance"] = provenance(["python", "-m", "experiments.suite", *sys.argv[1:]], tasks)
        Path(args.record).parent.mkdir(parents=True, exist_ok=True)
        Path(args.record).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        print(f"wrote {args.record}")
    return 1 if any(r.get("as_pinned") is False for r in record["tasks"].values()) else 0


def cmd_run(args) -> int:
    from .runner import run_suite

    result = run_suite(
        args.out,
        args.seeds,
        agent=args.agent,
        trainer=args.trainer,
        tasks=args.tasks,
        progress=not args.quiet,
        command=["python", "-m", "experiments.suite", *sys.argv[1:]],
        curve=args.curve,
        only_seeds=[int(x) for x in args.only_seeds.split(",")] if args.only_seeds else None,
        track=args.track,
        budget_scale=args.budget_scale,
        address=args.address,
        hyperparams=args.hyperparams,
        regime=args.regime,
    )
    if result is None:
        print(f"the asked runs are in {args.out}/runs; suite.json is written once every task and seed is there")
        return 0
    print(f"wrote {args.out}/suite.json: {result['seeds']} run(s) x {len(result['tasks'])} tasks")
    return 0


def cmd_status(args) -> int:
    from .run_status import format_status, run_status

    print(format_status(run_status(args.out, args.seeds, args.tasks)))
    return 0


def cmd_compare(args) -> int:
    from .aggregate import compare

    result = compare(args.dirs, args.out, reps=args.reps, pool_tracks=args.pool_tracks)
    from .aggregate import markdown

    print(markdown(result))
    print(f"wrote {args.out}/compare.md, compare.json, aggregates.png, profiles.png")
    return 0


def cmd_registry(args) -> int:
    from pathlib import Path

    from . import registry

    if args.check:
        wheres = [Path(args.dir)] if args.dir else [registry.registry_dir(v) for v in registry.audited_versions()]
        failed = 0
        for where in wheres:
            failing = registry.audit_registry(where)
            for name, problems in failing.items():
                for problem in problems:
                    print(f"{where / name}.json: {problem}")
            if failing:
                print(f"{len(failing)} of the entries of {where} fail the registry's audit")
            failed += len(failing)
        if failed:
            return 1
        if args.dir:
            print(f"every entry of {args.dir} passes the registry's audit")
            return 0
    if args.dir:
        print("error: --dir is for --check (a copy of a registry to audit)", file=sys.stderr)
        return 2
    if args.add:
        if not args.name:
            print("error: --add needs --name", file=sys.stderr)
            return 2
        tuning = [d for d in (args.tuning or "").split(",") if d]
        print(f"added {registry.add(args.add, args.name, tuning=tuning)}")
    stale = registry.render(check=args.check)
    if args.check:
        for path in stale:
            print(f"{path} is out of date with docs/reference/: run python -m experiments.suite registry")
        return 1 if stale else 0
    print(f"regenerated {registry.README.name} and {registry.PAGE.name} ({len(stale)} changed) and the plots")
    return 0


def cmd_tune(args) -> int:
    from .tuning import main_tune

    return main_tune(args)


def cmd_dataset(args) -> int:
    from .dataset import make_dataset

    make_dataset(
        args.task,
        args.policy,
        args.episodes,
        args.out,
        name=args.name,
        seed=args.seed,
        overwrite=args.overwrite,
        progress=not args.quiet,
        trainer=args.trainer,
    )
    return 0


def cmd_bc(args) -> int:
    from .offline import run_bc

    sizes = [int(x) for x in args.games.split(",")]
    rows = run_bc(args.datasets.split(","), args.root, args.out, sizes, args.epochs, args.seed, not args.quiet)
    for r in rows:
        print(f"{r['dataset']}  {r['games']:>6} games  {r['normalized']:.4f} of V* ({r['method']})")
    print(f"wrote {args.out}/bc.json and bc.png")
    return 0


def cmd_curves(args) -> int:
    from .curves import curves, markdown

    result = curves(args.dirs, args.out, reps=args.reps)
    print(markdown(result))
    print(f"wrote {args.out}/curves.json, curves.md and curves.png")
    return 0


def cmd_candidates(args) -> int:
    import json
    from pathlib import Path

    from . import rules
    from .candidates import AGENTS, markdown, measure

    agents = tuple(args.agents.split(",")) if args.agents else AGENTS
    if args.report:
        log = Path(args.out) / "candidates.jsonl"
        if not log.exists():
            raise FileNotFoundError(f"{log}: nothing measured yet")
        rows = [json.loads(line) for line in log.read_text().splitlines()]
    else:
        names = args.only.split(",") if args.only else None
        rows = measure(args.out, names, agents, progress=not args.quiet, seeds=args.seeds)
    print(markdown(rows, agents), end="")
    print("\n" + rules.report(rules.from_candidates(rows)), end="")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.suite", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    names = ", ".join(t.name for t in suite_tasks())
    p = sub.add_parser("tables", help=f"build the tables of suite v{SUITE_VERSION} ({names})")
    p.add_argument("--tasks", default=None, help="comma-separated task names (default: all)")
    p.add_argument(
        "--suite-version", type=int, default=SUITE_VERSION, help=f"the suite version's tables (default {SUITE_VERSION})"
    )
    p.add_argument("--verify", action="store_true", help="check V* and each table's digest against the pins")
    p.add_argument("--record", default=None, metavar="FILE", help="write what the tables cost (time, disk, memory)")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_tables)
    p = sub.add_parser("run", help="score an agent, or a trainer's policies, on every task and seed")
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument(
        "--agent",
        help="an agent spec (random, greedy, optimal, expectimax:D, td:PATH, ppo:PATH, dqn:PATH, sb3:PATH for any "
        "SB3 or sb3-contrib model, package.module:factory)",
    )
    who.add_argument(
        "--trainer",
        help="package.module:function, called as train(run, budget_steps, seed); its track attribute says its track",
    )
    p.add_argument(
        "--track",
        default=None,
        help="with --agent: the track its training followed (env-only, known-rules; default: reference, no training)",
    )
    p.add_argument(
        "--regime",
        choices=tuple(REGIMES),
        default="small",
        help="with --trainer: the budget regime (small: the tasks' budgets; large: "
        f"{REGIMES['large']}x them; default small)",
    )
    p.add_argument(
        "--budget-scale",
        type=float,
        default=1.0,
        help="with --trainer: train for this multiple of the regime's budgets (curves beyond them; never registered)",
    )
    p.add_argument("--seeds", type=int, default=5, help="runs per task: seeds 0..N-1 (default 5)")
    p.add_argument("--tasks", default=None, help="comma-separated task names (default: the track's list)")
    p.add_argument("--out", required=True, help="results directory (resumed if it holds a run of the same agent)")
    p.add_argument(
        "--only-seeds",
        default=None,
        metavar="LIST",
        help="run only these seeds (comma-separated): processes sharing one --out split a run",
    )
    p.add_argument(
        "--curve",
        type=int,
        default=0,
        metavar="K",
        help="with --trainer: record K checkpoints over the budget and the training regret",
    )
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_run)
    p.add_argument(
        "--address",
        default=None,
        help="spread the cells (task x seed) over the Ray cluster at this address (extra distributed); 'local' "
        "starts a private one on this machine's loopback",
    )
    p.add_argument(
        "--hyperparams",
        default=None,
        metavar="DIRS",
        help="with --trainer: train with DIR/TASK.toml (tunings' chosen files, tune --out; several directories "
        "comma-separated, one per family) in place of the trainer's own files",
    )
    p = sub.add_parser("status", help="which cells of a run are finished, and the core time the others will take")
    p.add_argument("out", help="a results directory of `run` (its --out)")
    p.add_argument("--seeds", type=int, default=5, help="the run's seeds 0..N-1 (default 5)")
    p.add_argument("--tasks", default=None, help="comma-separated task names (default: the run's track's list)")
    p.set_defaults(func=cmd_status)
    p = sub.add_parser("compare", help="aggregate results directories with rliable: table and plots")
    p.add_argument(
        "dirs",
        nargs="+",
        help="results directories of `run` (or suite.json files), each named by its agent or trainer, or NAME=DIR",
    )
    p.add_argument("--out", required=True)
    p.add_argument("--reps", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.add_argument(
        "--pool-tracks",
        action="store_true",
        help="aggregate results of different tracks together (default: one group per track)",
    )
    p.set_defaults(func=cmd_compare)
    p = sub.add_parser("registry", help="regenerate the README's headline and docs/suite.md from the registry")
    p.add_argument("--add", metavar="DIR", help="first copy this results directory's suite.json into the registry")
    p.add_argument("--name", help="its name in the registry (with --add)")
    p.add_argument("--tuning", help="with --add: comma-separated tuning directories (tune --out) that chose its files")
    p.add_argument(
        "--check",
        action="store_true",
        help="only audit the entries and check that the generated blocks are up to date",
    )
    p.add_argument("--dir", default=None, help="with --check: audit this registry directory instead (no blocks)")
    p.set_defaults(func=cmd_registry)
    p = sub.add_parser("tune", help="tune a trainer's hyperparameters on a task with Optuna (the suite's protocol)")
    p.add_argument("--trainer", required=True, help="package.module:function with a search space (maskable_ppo, dqn)")
    p.add_argument("--task", required=True, help=f"a task of suite v{SUITE_VERSION} ({names})")
    p.add_argument("--trials", type=int, required=True, help="finished trials to reach (a rerun resumes)")
    p.add_argument("--steps", type=int, required=True, help="counted training steps per trial and seed")
    p.add_argument("--seeds", type=int, default=1, help="tuning seeds per trial (1000, 1001, ...; default 1)")
    p.add_argument("--out", required=True, help="the tuning's directory: study.db, trials.jsonl, TASK.toml")
    p.add_argument("--address", default=None, help="run the trials on the Ray cluster there ('local': a private one)")
    p.add_argument(
        "--family",
        action="store_true",
        help="write the chosen values into the file of every task of the task's family (score or success)",
    )
    p.add_argument(
        "--baseline",
        action="store_true",
        help="also score the task's own file under the trial protocol, once (OUT/baseline.json): what tuning gains",
    )
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_tune)
    p = sub.add_parser("dataset", help="write a Minari dataset of a policy's games, every step labelled by the oracle")
    p.add_argument("--task", required=True, help=f"a task of suite v{SUITE_VERSION} ({names})")
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--policy", help="an agent spec: optimal, td:PATH, greedy, random, expectimax:D, ...")
    who.add_argument("--trainer", help="module:function: the policy it learns on the task (its budget, --seed)")
    p.add_argument("--episodes", type=int, required=True, help="games to record")
    p.add_argument("--out", required=True, help="the datasets root (what MINARI_DATASETS_PATH names to load them)")
    p.add_argument("--name", default=None, help="the dataset's name (default: optimal, td, ...)")
    p.add_argument("--seed", type=int, default=0, help="game i starts from reset(seed=SEED * 1_000_003 + i)")
    p.add_argument("--overwrite", action="store_true", help="replace a dataset of the same id")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_dataset)
    p = sub.add_parser("curves", help="IQM sample-efficiency curves over seeds (runs made with --curve K)")
    p.add_argument("dirs", nargs="+", help="results directories of `run --trainer ... --curve K`")
    p.add_argument("--out", required=True)
    p.add_argument("--reps", type=int, default=2000, help="bootstrap resamples (default 2000)")
    p.set_defaults(func=cmd_curves)
    p = sub.add_parser("candidates", help="measure candidate tasks: build time and memory, V*, reference scores")
    p.add_argument("--out", required=True, help="directory for candidates.jsonl (resumed)")
    p.add_argument("--only", default=None, help="comma-separated candidate names (default: all)")
    p.add_argument(
        "--agents",
        default=None,
        help="comma-separated agents (default: random,greedy,expectimax:2,td); learners: jax_ppo, maskable_ppo, dqn",
    )
    p.add_argument("--seeds", type=int, default=1, help="seeds per agent (default 1; 5 for the floor rule)")
    p.add_argument("--report", action="store_true", help="only print the table of what OUT holds")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_candidates)
    p = sub.add_parser("bc", help="behaviour cloning on datasets, each clone scored exactly")
    p.add_argument("--datasets", required=True, help="comma-separated dataset ids (solved2048/3x3/optimal-v0, ...)")
    p.add_argument("--root", required=True, help="the datasets root (as given to `dataset --out`)")
    p.add_argument("--games", default="100,1000,10000", help="dataset sizes to clone from (default 100,1000,10000)")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="directory for bc.json and bc.png")
    p.add_argument("--quiet", action="store_true")
    p.set_defaults(func=cmd_bc)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, FileNotFoundError, SuiteRunError) as e:  # bad input (TaskError, DatasetError, ...)
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
