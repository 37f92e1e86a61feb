"""``python -m experiments.suite run``: a fixed agent, or a learning algorithm trained per (task, seed), scored on
every task of the suite; each (task, seed) is saved as it finishes, so an interrupted run resumes.

Files: ``DIR/run.json`` (what the directory holds: suite version, agent or trainer, track),
``DIR/runs/TASK/seed-K.json`` (one per finished run) and ``DIR/suite.json`` (the score matrix, runs x tasks, with
every raw result and the provenance), written once every run is there.

A trainer's budget is counted (:mod:`experiments.suite.budget`): each run records ``counted_steps``, the steps
its counted environments or simulator took, and a step past the budget stops the run with an error.  A fixed
agent's run is on the ``reference`` track unless ``track`` says which track its training followed.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from agents.registry import make_policy
from oracle import Oracle

from .budget import REFERENCE_TRACK, TRACKS, StepBudget
from .monitor import TrainingMonitor
from .policies import load_trainer
from .provenance import provenance
from .scoring import score_policy
from .tasks import REGIMES, SUITE_VERSION, Task, checked_table, tasks_named
from .training import (
    TrainingRun,
    check_learned,
    declares_checkpoints,
    sealed_scoring,
    sealed_training,
    track_of,
)

#: Keys of suite.json and of the run files that vary from run to run of the same command (timings, dates).
TIMING_KEYS = ("seconds", "train_seconds", "created", "provenance")


def without_timings(data):
    """``data`` (a suite.json or run file, as loaded) without its :data:`TIMING_KEYS`, at every depth: what two
    runs of the same command share."""
    if isinstance(data, dict):
        return {k: without_timings(v) for k, v in data.items() if k not in TIMING_KEYS}
    if isinstance(data, list):
        return [without_timings(v) for v in data]
    return data


class SuiteRunError(RuntimeError):
    """A run of the suite stopped; the message names the task, the seed and the cause.  Finished runs are kept."""


def _write_json(path: Path, data: dict) -> None:
    """Write ``data`` to ``path`` atomically (a temporary file renamed into place): a crash leaves no half file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def _check_directory(out: Path, what: dict) -> None:
    """``out`` is new, or holds a run of the same suite version and the same agent or trainer; the
    hyperparameter files of tasks that run.json does not name yet are added to it."""
    meta = out / "run.json"
    if not meta.exists():
        _write_json(meta, what)
        return
    theirs = json.loads(meta.read_text())
    if theirs.get("suite_version") != SUITE_VERSION:
        raise SuiteRunError(
            f"{out} holds results of suite v{theirs.get('suite_version')}, not v{SUITE_VERSION}: "
            "give another --out (results of different versions are never mixed)"
        )
    mine = {k: what.get(k) for k in ("agent", "trainer")}
    if {k: theirs.get(k) for k in mine} != mine:
        raise SuiteRunError(
            f"{out} holds the runs of {theirs.get('agent') or theirs.get('trainer')!r}, not "
            f"{what['agent'] or what['trainer']!r}: give another --out"
        )
    if theirs.get("track", what["track"]) != what["track"]:
        raise SuiteRunError(
            f"{out} holds runs on the {theirs['track']} track, not {what['track']}: give another --out "
            "(results of different tracks are never mixed)"
        )
    if theirs.get("regime") != what.get("regime"):
        raise SuiteRunError(
            f"{out} holds runs of the {theirs.get('regime')} regime, not {what.get('regime')}: give another --out "
            "(results of different regimes are never mixed)"
        )
    if theirs.get("budget_scale", 1.0) != what.get("budget_scale", 1.0):
        raise SuiteRunError(
            f"{out} holds runs at {theirs.get('budget_scale', 1.0)}x the budgets, not "
            f"{what.get('budget_scale', 1.0)}x: give another --out"
        )
    if theirs.get("curve", 0) != what.get("curve", 0):
        raise SuiteRunError(
            f"{out} holds runs with --curve {theirs.get('curve', 0)}, not {what.get('curve', 0)}: give another --out"
        )
    mine, ours = what.get("hyperparams"), theirs.get("hyperparams")
    if (mine is None) != (ours is None) or any(mine[t] != ours[t] for t in set(mine or ()) & set(ours or ())):
        raise SuiteRunError(
            f"{out} holds runs trained with other hyperparameter files (theirs: {_files(ours)}; this run's: "
            f"{_files(mine)}): give another --out"
        )
    if mine and set(mine) - set(ours):
        _write_json(meta, {**theirs, "hyperparams": {**ours, **mine}})


def _files(digests: dict | None) -> str:
    """How an error names the hyperparameter files of a run: each task's file by the start of its SHA-256."""
    return "the trainer's own" if digests is None else ", ".join(f"{t} {d[:12]}" for t, d in sorted(digests.items()))


def _label(x) -> str | None:
    """How run.json names an agent or trainer: its spec string, or a function's or class's name."""
    return x if isinstance(x, str) or x is None else getattr(x, "__name__", type(x).__name__)


def run_suite(
    out,
    seeds: int,
    agent=None,
    trainer=None,
    tasks: str | None = None,
    progress: bool = True,
    command: list[str] | None = None,
    curve: int = 0,
    only_seeds=None,
    track: str | None = None,
    budget_scale: float = 1.0,
    address: str | None = None,
    hyperparams=None,
    regime: str = "small",
) -> dict | None:
    """Score ``agent`` (a spec string, SB3 model, torch module, agent object or callable), or the policies that
    ``trainer`` (``"module:function"`` or a callable ``train(run, budget_steps, seed) -> policy``, its track declared by
    its ``track`` attribute, see :mod:`experiments.suite.training`) learns, on ``tasks`` (comma-separated names; default
    the track's list) for seeds 0 .. ``seeds`` - 1.  With ``curve`` K >= 2 (trainers that hand checkpoints, see
    :mod:`experiments.suite.monitor`) each run also records its learning curve (K points, the last its final score)
    and its training regret.  ``only_seeds`` (a subset of the seeds) runs just those, so that several processes can
    share one run's cells; ``suite.json`` is written, and returned, once every (task, seed) is there (None before).
    A cell another process finished meanwhile is not run again.  ``track``: for an agent, the track its training
    followed (default :data:`REFERENCE_TRACK`, no training); the default tasks are that track's list (every task for
    the reference track).  ``regime``: the budget regime (:data:`~experiments.suite.tasks.REGIMES`, ``small`` or
    ``large``) a trainer trains in, recorded in run.json and suite.json (each run file records its
    ``budget_steps``).  ``budget_scale``: train for that multiple of the regime's budgets, to study learning curves
    beyond them; such results are marked (``budget_scale`` in run.json and suite.json) and never enter the registry.
    ``address``: compute the cells on the Ray cluster there, one Ray task each (:mod:`experiments.suite.spread`),
    with the same files and results as one process.  ``hyperparams``: a directory of hyperparameter files,
    ``TASK.toml`` for each task (a tuning's output, ``tune --out``; several directories comma-separated, one per
    family), that the trainer trains with in place of its own; each file's SHA-256 is recorded in run.json and in
    every run file."""
    if (agent is None) == (trainer is None):
        raise ValueError("give an agent or a trainer, not both and not neither")
    check_seeds(seeds)
    train = load_trainer(trainer) if isinstance(trainer, str) else trainer
    if curve and (train is None or not declares_checkpoints(train)):
        raise ValueError(
            f"--curve needs a trainer that hands checkpoints to run.checkpoint and declares train.checkpoints = "
            f"True (experiments.suite.monitor); {_label(trainer or agent)!r} does not"
        )
    if train is not None and track is not None:
        raise ValueError("a trainer declares its own track (its track attribute); --track is for an agent")
    track = track_of(train) if train is not None else (track or REFERENCE_TRACK)
    if track not in (*TRACKS, REFERENCE_TRACK):
        raise ValueError(f"unknown track {track!r}; the tracks are {', '.join((*TRACKS, REFERENCE_TRACK))}")
    if regime not in REGIMES:
        raise ValueError(f"unknown regime {regime!r}; the regimes are {', '.join(REGIMES)}")
    if regime != "small" and train is None:
        raise ValueError(f"the {regime} regime is a trainer's budget; a fixed agent is scored once, in no regime")
    what = {"suite_version": SUITE_VERSION, "agent": _label(agent), "trainer": _label(trainer), "track": track}
    if train is not None:
        what["regime"] = regime
    if curve:
        what["curve"] = curve
    if budget_scale != 1.0:
        if train is None or not budget_scale > 0:
            raise ValueError(f"--budget-scale is a positive factor for a trainer's budget, got {budget_scale!r}")
        what["budget_scale"] = float(budget_scale)
    only = set(range(seeds)) if only_seeds is None else set(only_seeds)
    if not only <= set(range(seeds)) or not only:
        raise ValueError(f"--only-seeds must name some of the seeds 0..{seeds - 1}, got {sorted(only)}")
    scale = REGIMES[regime] * budget_scale
    chosen = [replace(t, budget_steps=round(t.budget_steps * scale)) for t in tasks_named(tasks, track=track)]
    files = {}
    if hyperparams is not None:
        from .tuning import hyperparameter_files

        if train is None or "hyperparams" not in inspect.signature(train).parameters:
            who = _label(trainer or agent)
            raise ValueError(f"--hyperparams is for a trainer that takes hyperparams=; {who!r} does not")
        files = hyperparameter_files(hyperparams, [t.name for t in chosen])
        what["hyperparams"] = {name: digest for name, (_, digest) in files.items()}
    origin = provenance(command, chosen)  # the code as the run starts
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    _check_directory(out, what)
    if address:
        from .spread import run_cells_on_ray

        todo = [(t, s) for t in chosen for s in sorted(only) if not _cell(out, t, s).exists()]
        shipped = trainer if isinstance(trainer, str) else train  # a name travels better than a function
        computed = run_cells_on_ray(out, todo, agent, shipped, curve, address, progress, files)
        digests = {t.name: computed.get(t.name, t.table_digest) for t in chosen}  # each checked against its pin
    else:
        digests = {
            t.name: _run_task(out, t, sorted(only), agent, train, progress, curve, files.get(t.name)) for t in chosen
        }
    if not all(_cell(out, t, s).exists() for t in chosen for s in range(seeds)):
        return None
    result = collect(out, chosen, seeds)
    result.update(what)
    result["tables"] = digests
    result["provenance"] = origin
    _write_json(out / "suite.json", result)
    return result


def train_on_task(train, task: Task, seed: int, monitor=None, progress: bool = True, **options) -> tuple[object, dict]:
    """``(policy, facts)``: what ``train(run, task.budget_steps, seed)`` learns on a :class:`TrainingRun` of the
    task with a counted budget on the trainer's track, sealed (:func:`experiments.suite.training.sealed_training`:
    no table can be opened, and every env2048 game stepped is counted), with ``monitor`` (the runner's
    :class:`~experiments.suite.monitor.TrainingMonitor`) taking the checkpoints the trainer hands; and
    ``track``, ``budget_steps``, ``counted_steps`` (every env step and simulated move counted), ``policy_type``
    (what the trainer returned), ``train_seconds`` (checkpoints' scoring included), ``training_seeds`` (how many
    seeds the training envs were reset with) and, when the policy says, ``train_steps`` (the trainer's own word).
    A step past the budget raises :class:`experiments.suite.budget.BudgetExceeded`; a returned spec or reference
    agent :class:`~experiments.suite.training.NotLearned`.  ``options`` go to ``train`` as keywords (a tuning trial's
    ``hyperparams``); ``progress``: whether the trainer may show a progress bar."""
    policy, facts, _ = _train(train, task, seed, monitor, progress, **options)
    return policy, facts


def _train(train, task: Task, seed: int, monitor, progress: bool, **options) -> tuple[object, dict, StepBudget]:
    """:func:`train_on_task`, and the run's budget (with the seeds its training envs were reset with)."""
    start = time.perf_counter()
    budget = StepBudget(task.budget_steps, track_of(train))
    run = TrainingRun(task, budget, progress, monitor)
    with sealed_training(budget, _label(train)):
        policy = train(run, task.budget_steps, seed, **options)
    check_learned(policy)
    facts = {
        "track": run.track,
        "budget_steps": task.budget_steps,
        "counted_steps": budget.used,
        "policy_type": f"{type(policy).__module__}.{type(policy).__qualname__}",
        "train_seconds": time.perf_counter() - start,
        "training_seeds": len(budget.training_seeds),
    }
    if getattr(policy, "train_steps", None) is not None:  # what the trainer says it used
        facts["train_steps"] = int(policy.train_steps)
    return policy, facts, budget


def check_seeds(seeds) -> None:
    """A ``ValueError`` unless ``seeds``, a run's number of seeds, is a whole number >= 1."""
    if not isinstance(seeds, int) or seeds < 1:
        raise ValueError(f"--seeds must be a whole number >= 1, got {seeds!r}")


def _cell(out: Path, task: Task, seed: int) -> Path:
    return out / "runs" / task.name / f"seed-{seed}.json"


def compute_cell(
    task: Task, seed: int, agent, train, oracle, curve: int = 0, progress: bool = False, **options
) -> dict:
    """One (task, seed) of a run: ``agent`` scored, or ``train``'s policy trained (``options`` passed to it, as
    :func:`train_on_task` does) then scored, on ``oracle`` (the task's table): the dict of its run file."""
    rows, cols = task.shape
    cell = {"task": task.name, "seed": seed, "env_id": task.env_id, "suite_version": SUITE_VERSION}
    if train is None:
        cell.update(score_policy(task, oracle, make_policy(agent, rows, cols, seed, oracle), progress))
        return cell
    if curve and oracle is None:
        raise ValueError(f"a learning curve prices checkpoints on the task's table; {task.name} has none")
    monitor = TrainingMonitor(task, oracle, curve, seed, progress) if curve else None
    policy, facts, budget = _train(train, task, seed, monitor, progress, **options)
    cell.update(facts)
    with sealed_scoring(_label(train)):
        player = make_policy(policy, rows, cols, seed)
        cell.update(score_policy(task, oracle, player, progress, avoid_seeds=budget.training_seeds))
    if monitor is not None:
        cell.update(monitor.result(cell, cell.get("train_steps")))
    return cell


def compute_cell_with(hyperparams, task: Task, seed: int, agent, train, oracle, curve: int = 0, progress=False):
    """:func:`compute_cell`, the trainer given ``hyperparams`` = ``(values, sha256)`` of a file (None: its own),
    whose digest the run file records."""
    if hyperparams is None:
        return compute_cell(task, seed, agent, train, oracle, curve, progress)
    values, digest = hyperparams
    cell = compute_cell(task, seed, agent, train, oracle, curve, progress, hyperparams=values)
    return {**cell, "hyperparams": digest}


def _failed(out: Path, task: Task, seed: int, e: Exception) -> SuiteRunError:
    return SuiteRunError(
        f"task {task.name}, seed {seed}: {type(e).__name__}: {e}. The runs finished "
        f"so far are kept in {out}: the same command resumes"
    )


def _report(cell: dict) -> None:
    print(
        f"{cell['task']} seed {cell['seed']}: {cell['normalized']:.4f} of V* ({cell['method']}, "
        f"{cell['seconds']:.1f} s)",
        flush=True,
    )


def _run_task(
    out: Path, task: Task, seeds: list[int], agent, train, progress: bool, curve: int = 0, hyperparams=None
) -> str:
    """Every missing one of ``seeds`` on ``task`` (``hyperparams``: ``(values, sha256)`` of the file the trainer
    trains with, or None for its own); returns its table's digest ("" for a task without a table)."""
    table, digest = checked_table(task, progress) if task.has_table else (None, "")
    missing = [s for s in seeds if not _cell(out, task, s).exists()]
    if not missing:
        return digest
    with Oracle.open(table) if table is not None else contextlib.nullcontext() as oracle:
        for seed in missing:
            if _cell(out, task, seed).exists():  # another process sharing the run finished it
                continue
            exact = _exact_cell(out, task) if train is None else None
            try:
                if exact is not None:
                    cell = {**exact, "seed": seed, "seconds": 0.0, "same_as_seed": exact["seed"]}
                else:
                    cell = compute_cell_with(hyperparams, task, seed, agent, train, oracle, curve, progress)
            except Exception as e:
                raise _failed(out, task, seed, e) from e
            _write_json(_cell(out, task, seed), cell)
            if progress:
                _report(cell)
    return digest


def _exact_cell(out: Path, task: Task) -> dict | None:
    """A fixed agent's run of ``task`` in ``out`` scored exactly, if one is there: its value is the same for every
    seed (no training, no sampling), so the other seeds' runs repeat it (marked ``same_as_seed``) rather than
    computing it again."""
    for path in sorted((out / "runs" / task.name).glob("seed-*.json")):
        cell = json.loads(path.read_text())
        if cell.get("method") == "exact" and "same_as_seed" not in cell:
            return cell
    return None


def collect(out: Path, tasks: list[Task], seeds: int) -> dict:
    """The score matrix of the finished runs in ``out``: ``normalized[run][task]`` (runs = seeds), ``value`` the
    same for V^pi, and every run's result under ``runs[task]``."""
    runs = {
        t.name: [json.loads((out / "runs" / t.name / f"seed-{s}.json").read_text()) for s in range(seeds)]
        for t in tasks
    }
    normalized = np.array([[runs[t.name][s]["normalized"] for t in tasks] for s in range(seeds)])
    value = np.array([[runs[t.name][s]["value"] for t in tasks] for s in range(seeds)])
    return {
        "tasks": [t.name for t in tasks],
        "seeds": seeds,
        "normalized": normalized.tolist(),
        "value": value.tolist(),
        "optimal_value": {t.name: runs[t.name][0]["optimal_value"] for t in tasks},
        "family": {t.name: t.kind for t in tasks},
        "method": {t.name: runs[t.name][0]["method"] for t in tasks},
        "runs": runs,
    }
