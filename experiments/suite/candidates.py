"""Measuring candidate tasks, to choose a task set by measurement: each candidate's table (build time, peak
memory, size, V*) and the reference agents' normalized scores on it.

    python -m experiments.suite candidates --out results/candidates [--only L3-512,442-256] [--agents ...]

Each table is built in a process of its own (``python -m solver build``, directory layout) under
``$SOLVED2048_HOME/suite-candidates/NAME``, which reports its own wall time and peak resident memory.  Each agent
is then scored as the suite scores it (:func:`experiments.suite.scoring.score_policy`: exact where the table and
the agent allow, else Monte Carlo); ``td`` is first trained by the suite's TD trainer for the candidate's budget
(with the candidate's own file, else its family's: :data:`TD_FILES`).
One JSON line per finished step goes to ``OUT/candidates.jsonl``: an interrupted run resumes where it stopped.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

from .tasks import KANEKO_YAMASHITA, KANEKO_YAMASHITA_4X3, Task

#: The candidates: every task of suite v1 and the games that could replace or join them, under suite v2's rules (an
#: illegal move ends the game), as candidates of suite v3; ``4x3``, the whole game from two 2-tiles, has no table
#: here (its V* is published) and is scored by Monte Carlo.
CANDIDATES: tuple[Task, ...] = (
    Task("2x3", "", 1_000_000, True, math.nan, "", version=3, board="2x3"),
    Task("2x4", "", 1_000_000, True, math.nan, "", version=3, board="2x4"),
    Task("3x3", "", 5_000_000, True, math.nan, "", version=3, board="3x3"),
    Task("2x4-128", "", 1_000_000, True, math.nan, "", version=3, board="2x4", objective="tile:7"),
    Task("2x4-256", "", 1_000_000, True, math.nan, "", version=3, board="2x4", objective="tile:8"),
    Task("3x3-256", "", 5_000_000, True, math.nan, "", version=3, board="3x3", objective="tile:8"),
    Task("3x3-512", "", 5_000_000, True, math.nan, "", version=3, board="3x3", objective="tile:9"),
    Task("4x3-128", "", 2_000_000, False, math.nan, "", version=3, board="4x3", objective="tile:7"),
    Task("4x3-256", "", 2_000_000, False, math.nan, "", version=3, board="4x3", objective="tile:8"),
    Task("L3-128", "", 2_000_000, True, math.nan, "", version=3, pattern="L3", target=128),
    Task("L3-256", "", 2_000_000, True, math.nan, "", version=3, pattern="L3", target=256),
    Task("L3-512", "", 2_000_000, True, math.nan, "", version=3, pattern="L3", target=512),
    Task("442-128", "", 2_000_000, True, math.nan, "", version=3, pattern="442", target=128),
    Task("442-256", "", 2_000_000, True, math.nan, "", version=3, pattern="442", target=256),
    Task("442-512", "", 2_000_000, True, math.nan, "", version=3, pattern="442", target=512),
    Task("t-128", "", 2_000_000, True, math.nan, "", version=3, pattern="t", target=128),
    Task("t-256", "", 2_000_000, True, math.nan, "", version=3, pattern="t", target=256),
    Task("t-512", "", 2_000_000, True, math.nan, "", version=3, pattern="t", target=512),
    Task("4x3", "", 5_000_000, False, KANEKO_YAMASHITA_4X3, "", version=3, board="4x3", start_p4=0.0,
         optimum_source=KANEKO_YAMASHITA),
)  # fmt: skip
#: The reference agents scored on every candidate (``td``: trained first, see the module docstring).
AGENTS = ("random", "greedy", "expectimax:2", "td")
#: The env-only learners a candidate can be measured with (``--agents jax_ppo``): trained by the suite's trainer,
#: sealed and counted as ``run`` trains, for the candidate's budget, with the settings of its family's tuned file
#: (:data:`LEARNER_FILES`), since a candidate has no file of its own.
LEARNERS = ("jax_ppo", "jax_ppo_unmasked", "maskable_ppo", "dqn")
#: The task whose hyperparameter file a learner uses on a candidate of each family.
LEARNER_FILES = {"score": "3x3", "success": "3x3-512"}
#: The same for ``td`` on a candidate without a file of its own: the default schedule, values starting at 0 (score)
#: or at 1 (success), as every such file of v2.
TD_FILES = {"score": "2x4", "success": "3x3-512"}


def candidate(name: str) -> Task:
    for task in CANDIDATES:
        if task.name == name:
            return task
    raise ValueError(f"unknown candidate {name!r}; known: {', '.join(t.name for t in CANDIDATES)}")


def table_dir(task: Task) -> Path:
    from solver.provision import cache_dir

    return cache_dir() / "suite-candidates" / task.name


def build_command(task: Task, out: Path) -> list[str]:
    """``python -m solver build`` of the candidate's game into ``out`` (directory layout, no progress bars)."""
    cmd = [sys.executable, "-m", "solver", "build", "--out", str(out), "--layout", "directory", "--quiet"]
    if task.pattern is not None:
        return cmd + ["--pattern", task.pattern, "--target", str(task.target)]
    return cmd + ["--board", task.board, "--objective", task.objective]


_MEASURED_BUILD = """
import resource, subprocess, sys, time, json
start = time.perf_counter()
done = subprocess.run(sys.argv[1:])
peak = max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, 0) * 1024
print(json.dumps({"returncode": done.returncode, "seconds": time.perf_counter() - start, "peak_bytes": peak}))
"""


def build_table(task: Task) -> dict:
    """Build the candidate's table in a process of its own: ``{"seconds", "peak_bytes", "bytes"}`` (peak: the
    largest resident set of the build's processes)."""
    out = table_dir(task)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():
        raise FileExistsError(f"{out} exists: its build time is not known here; delete it to measure again")
    work = out.with_name(out.name + ".work")
    if work.exists():  # two builds in one work directory would corrupt it; a resumed one would time only its end
        raise FileExistsError(
            f"{work} exists: a build of {task.name} is under way, or was interrupted (its time would not be the "
            "whole build's); delete it to measure again"
        )
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED_BUILD, *build_command(task, out)], capture_output=True, text=True
    )
    lines = done.stdout.strip().splitlines()
    report = json.loads(lines[-1]) if lines else {"returncode": done.returncode}
    if report["returncode"] != 0:
        raise RuntimeError(f"building {task.name} failed: {done.stderr.strip()[-2000:]}")
    from .entry_cost import directory_bytes

    return {"seconds": report["seconds"], "peak_bytes": report["peak_bytes"], "bytes": directory_bytes(out)}


def score_agent(task: Task, oracle, agent: str, seed: int = 0) -> dict:
    """The suite's score of ``agent`` (a spec; ``td`` or one of :data:`LEARNERS`: trained for the budget first)
    on ``task`` (``oracle``: its table's, None for a task without one)."""
    from agents.registry import make_policy

    from . import trainers
    from .runner import train_on_task
    from .scoring import score_policy
    from .trainers import td

    facts = {}
    rows, cols = task.shape
    if agent in LEARNERS:
        folder = agent.removesuffix("_unmasked")  # the unmasked variant trains with the same files
        hyperparams = trainers.load_hyperparams(folder, LEARNER_FILES[task.kind])
        policy, facts = train_on_task(getattr(trainers, agent), task, seed, progress=False, hyperparams=hyperparams)
        facts["hyperparams"] = f"{folder}/{LEARNER_FILES[task.kind]}.toml"
        policy = make_policy(policy, rows, cols, seed)
    elif agent == "td":
        own = (trainers.HYPERPARAMS / "td" / f"{task.name}.toml").exists()
        file = task.name if own else TD_FILES[task.kind]
        start = time.perf_counter()
        policy = td(task, task.budget_steps, seed, hyperparams=trainers.load_hyperparams("td", file))
        facts = {"train_seconds": time.perf_counter() - start, "train_steps": int(policy.train_steps),
                 "hyperparams": f"td/{file}.toml"}  # fmt: skip
    else:
        policy = make_policy(agent, rows, cols, seed=seed, oracle=oracle)
    result = score_policy(task, oracle, policy)
    return facts | result


def measure(out, names=None, agents=AGENTS, progress: bool = True, seeds: int = 1) -> list[dict]:
    """Build and score every candidate of ``names`` (default all; one without a table is only scored, against its
    published V*), each agent for ``seeds`` seeds (0, 1, ...; a fixed agent scored exactly, once: its value is
    the same for every seed); the JSON lines of ``OUT/candidates.jsonl``."""
    from oracle import Oracle

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "candidates.jsonl"
    done = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    seen = {(r["task"], r["step"], r.get("seed", 0)) for r in done}
    chosen = [candidate(n) for n in names] if names else list(CANDIDATES)

    def record(row: dict) -> None:
        done.append(row)
        with log.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        if progress:
            print(json.dumps(row), flush=True)

    def exact_and_fixed(task: str, agent: str) -> bool:
        """Whether ``agent`` is a fixed agent (not trained) whose seed-0 score on ``task`` is exact."""
        first = [r for r in done if r["task"] == task and r["step"] == f"agent:{agent}" and r.get("seed", 0) == 0]
        return agent != "td" and agent not in LEARNERS and bool(first) and first[0]["method"] == "exact"

    def score_all(task: Task, oracle) -> None:
        for agent in agents:
            for seed in range(seeds):
                if seed > 0 and exact_and_fixed(task.name, agent):
                    break  # the same value for every seed
                if (task.name, f"agent:{agent}", seed) not in seen:
                    cell = score_agent(task, oracle, agent, seed)
                    record({"task": task.name, "step": f"agent:{agent}", "seed": seed, **cell})

    for task in chosen:
        if not task.has_table:
            if (task.name, "table", 0) not in seen:
                record({"task": task.name, "step": "table", "optimal_value": task.optimal_value,
                        "source": task.optimum_source})  # fmt: skip
            score_all(task, None)
            continue
        if (task.name, "build", 0) not in seen:
            record({"task": task.name, "step": "build", **build_table(task)})
        with Oracle.open(table_dir(task)) as oracle:
            if (task.name, "table", 0) not in seen:
                facts = {"optimal_value": oracle.start_value, "afterstates": oracle.n_afterstates}
                record({"task": task.name, "step": "table", **facts})
            score_all(task, oracle)
    return done


def markdown(rows: list[dict], agents=AGENTS) -> str:
    """The measurements as a Markdown table: per candidate its table (build time, peak memory, size, V*) and each
    agent's normalized score (``†`` Monte Carlo; over several seeds their mean and its 95% bootstrap interval,
    Monte-Carlo error included), in the order measured; a dash where not measured yet."""
    by_task: dict[str, dict] = {}
    for r in rows:
        steps = by_task.setdefault(r["task"], {})
        if r["step"].startswith("agent:"):
            steps.setdefault(r["step"], []).append(r)
        else:
            steps[r["step"]] = r
    head = "| task | build | peak | size | V* | " + " | ".join(agents) + " |"
    lines = [head, "|---|---:|---:|---:|---:|" + "---:|" * len(agents)]
    for task, steps in by_task.items():
        build, table = steps.get("build"), steps.get("table")
        none = "no table" if table and "source" in table else "–"  # a published V*
        cells = [
            f"{build['seconds']:.0f} s" if build else none,
            f"{build['peak_bytes'] / 1e9:.1f} GB" if build else none,
            f"{build['bytes'] / 1e9:.2f} GB" if build else none,
            f"{table['optimal_value']:.4g}" + (" (published)" if "source" in table else "") if table else "–",
        ]
        cells += [agent_cell(steps.get(f"agent:{agent}", []), "success" if is_success(task) else "score")
                  for agent in agents]  # fmt: skip
        lines.append(f"| `{task}` | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def is_success(name: str) -> bool:
    """Whether the candidate ``name`` is scored on success (a goal tile or an endgame)."""
    return candidate(name).kind == "success"


def seed_interval(runs: list[dict], kind: str) -> tuple[float, float, float]:
    """``(mean, low, high)``: the mean normalized score of an agent's seeds on one task and its 95% bootstrap
    interval, each Monte-Carlo score redrawn from its own error (:mod:`experiments.suite.bootstrap`)."""
    from .bootstrap import ScoreCells, intervals

    data = {
        "tasks": ["t"],
        "normalized": [[r["normalized"]] for r in runs],
        "method": {"t": "monte-carlo" if any(r["method"] != "exact" for r in runs) else "exact"},
        "family": {"t": kind},
        "runs": {"t": runs},
    }
    cells = ScoreCells.of_result(data)
    low, high = intervals(cells)[:, 1]
    return float(cells.normalized.mean()), float(low), float(high)


def agent_cell(runs: list[dict], kind: str) -> str:
    """One agent's cell: ``–`` unmeasured; one seed its score; several their mean and interval, and the count."""
    from .aggregate import score_text

    if not runs:
        return "–"
    mark = "" if all(r["method"] == "exact" for r in runs) else "†"
    if len(runs) == 1:
        x = runs[0]["normalized"]
        return (f"{x:.3f}" if x >= 1e-3 or x == 0 else f"{x:.1e}") + mark
    mean, low, high = seed_interval(runs, kind)
    return f"{score_text(mean)} [{score_text(low)}, {score_text(high)}]{mark} ({len(runs)} seeds)"
