"""``python -m experiments.suite tune``: the suite's one tuning protocol for every learning algorithm.

    python -m experiments.suite tune --trainer experiments.suite.trainers:maskable_ppo --task 3x3 \\
        --trials 20 --steps 1000000 --out tuning/maskable_ppo/3x3

Optuna (RL Baselines3 Zoo's tuner) samples the trainer's search space (``search_spaces/ALGORITHM.toml``) with its
TPE sampler, seeded; each trial trains the trainer with the sampled values replacing its task file's, for
``--steps`` counted steps on each of the tuning seeds (:data:`TUNING_SEED` on: disjoint from the evaluation seeds
0, 1, ...), and its objective is the mean v2 normalized score of the trained policies, scored as the suite scores
them (exact where cheap).  No pruner: every trial runs its whole budget, so the compute of a tuning is
``trials x steps x seeds`` environment steps, the same for every algorithm given the same arguments.

With ``--address`` the trials run as Ray tasks on a cluster, as many at once as it has CPUs (Optuna's ask-and-tell
on the same study), and so does ``--baseline``. The study lives in ``OUT/study.db`` (SQLite): the same command
resumes it, up to ``--trials`` finished trials (a trial cut short by an interruption is marked failed and not
counted). ``OUT`` also holds ``search-space.toml`` (the space searched), ``trials.jsonl`` (every trial: number,
state, values, objective, seconds, the code's commit; without ``study.db`` the log alone resumes the tuning, the
same trials replayed into a new study) and ``TASK.toml``, the hyperparameter file the tuning chose: the task's file
with the best trial's values, its header naming the trial. With ``--family`` the choice is written for every task of the
tuned task's family (score games, or success tasks): ``OUT/TASK.toml`` for each, that task's own file with the
chosen values. ``run --hyperparams OUT`` trains with the chosen files. With ``--baseline`` the tuned task's own
file is also scored under the trial protocol, once, into ``OUT/baseline.json``: the point the tuning's gain is
measured from (not a trial of the study, so it leaves the search and its choice unchanged).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import time
from pathlib import Path

#: The first tuning seed; trial seeds are TUNING_SEED, TUNING_SEED + 1, ... (evaluation seeds are 0, 1, ...).
TUNING_SEED = 1000
SEARCH_SPACES = Path(__file__).with_name("search_spaces")
BASELINE = "baseline.json"
#: The Optuna study (SQLite) and the log of its trials (JSON lines), in a tuning's directory.
STUDY, LOG = "study.db", "trials.jsonl"


def algorithm_of(train) -> str:
    """The hyperparameter family of a trainer (``maskable_ppo``, ``dqn``): its ``hyperparameter_family``
    attribute, else its name without a ``_shaped`` suffix."""
    name = getattr(train, "hyperparameter_family", getattr(train, "__name__", ""))
    return name.removesuffix("_shaped")


def load_search_space(algorithm: str) -> dict:
    """``{key: {"low", "high", "log"} or {"choices"}}`` of ``search_spaces/ALGORITHM.toml``, checked."""
    path = SEARCH_SPACES / f"{algorithm}.toml"
    if not path.exists():
        known = ", ".join(sorted(p.stem for p in SEARCH_SPACES.glob("*.toml")))
        raise FileNotFoundError(f"no search space for {algorithm!r}: {path} is missing (spaces exist for {known})")
    from .trainers import read_toml

    space = read_toml(path)
    for key, dim in space.items():
        if not (set(dim) == {"choices"} or {"low", "high"} <= set(dim) <= {"low", "high", "log"}):
            raise ValueError(f"{path}: [{key}] sets low and high (and log), or choices; got {sorted(dim)}")
    return space


def distributions(space: dict) -> dict:
    """``{key: optuna distribution}`` of ``space``: a list of choices is offered as its items' JSON texts, a range
    of whole numbers as an integer range, any other range as a float range (log-scaled if ``log``)."""
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    out = {}
    for key, dim in space.items():
        if "choices" in dim:
            out[key] = CategoricalDistribution([json.dumps(c) for c in dim["choices"]])
        elif isinstance(dim["low"], int) and isinstance(dim["high"], int):
            out[key] = IntDistribution(dim["low"], dim["high"], log=dim.get("log", False))
        else:
            out[key] = FloatDistribution(float(dim["low"]), float(dim["high"]), log=dim.get("log", False))
    return out


def sample(trial, space: dict) -> dict:
    """One point of ``space`` from an Optuna ``trial`` (a list-valued choice decoded from its JSON text)."""
    from optuna.distributions import CategoricalDistribution, IntDistribution

    params = {}
    for key, dist in distributions(space).items():
        if isinstance(dist, CategoricalDistribution):
            params[key] = json.loads(trial.suggest_categorical(key, dist.choices))
        elif isinstance(dist, IntDistribution):
            params[key] = trial.suggest_int(key, dist.low, dist.high, log=dist.log)
        else:
            params[key] = trial.suggest_float(key, dist.low, dist.high, log=dist.log)
    return params


def trial_score(train, task, steps: int, seeds: list[int], params: dict) -> float:
    """Mean normalized score over ``seeds`` of ``train`` with ``params`` for ``steps`` counted steps on ``task``,
    each seed trained and scored as a run's cell is (:func:`experiments.suite.runner.compute_cell`)."""
    from dataclasses import replace

    from oracle import Oracle

    from .runner import compute_cell
    from .tasks import checked_table

    short = replace(task, budget_steps=steps)
    with Oracle.open(checked_table(task, progress=False)[0]) as oracle:
        scores = [compute_cell(short, seed, None, train, oracle, hyperparams=params)["normalized"] for seed in seeds]
    return float(sum(scores) / len(scores))


def timed_trial(trainer, task, steps: int, seeds: list[int], params: dict) -> tuple[float, float]:
    """``(objective, seconds)`` of one trial of ``trainer`` (a function, or its ``module:function`` name, as a Ray
    worker gets it)."""
    from .policies import load_trainer

    train = load_trainer(trainer) if isinstance(trainer, str) else trainer
    start = time.perf_counter()
    value = trial_score(train, task, steps, seeds, params)
    return value, time.perf_counter() - start


def score_baseline(trainer, task, steps: int, seeds: list[int], out: Path, commit: str | None) -> dict:
    """``{"value", "seconds", "commit"}`` of the task's own hyperparameter file trained and scored as a trial is
    (``steps`` on the tuning ``seeds``), kept in ``OUT/baseline.json``; read from there when it is already scored."""
    path = Path(out) / BASELINE
    if path.exists():
        return json.loads(path.read_text())
    return _write_baseline(path, *timed_trial(trainer, task, steps, seeds, {}), commit)


def _write_baseline(path: Path, value: float, seconds: float, commit: str | None) -> dict:
    record = {"value": value, "seconds": seconds, "commit": commit}
    path.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    return record


def _open_study(out: Path, sampler_seed: int, space: dict):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        storage=f"sqlite:///{out / STUDY}",
        study_name="tune",
        direction="maximize",
        pruner=optuna.pruners.NopPruner(),
        load_if_exists=True,
    )
    if not study.trials and (out / LOG).exists():  # a new study.db (a new checkout, say) beside the log
        _replay_log(study, out / LOG, space)
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        study._storage.set_trial_state_values(t._trial_id, optuna.trial.TrialState.FAIL)  # cut short: not counted
    # A resumed study's sampler seeded as at the start would draw the first trials' values again; seeding it by
    # the trials already made keeps a resumed study deterministic without repeating them.
    study.sampler = optuna.samplers.TPESampler(seed=sampler_seed + len(study.trials))
    return study


def _replay_log(study, log: Path, space: dict) -> None:
    """Add the trials of a tuning's ``trials.jsonl`` to an empty ``study``, in their order, with their values,
    states and user attributes: the log alone (kept in a registry, or committed while a tuning is under way)
    resumes a tuning as its ``study.db`` would.  A trial the log shows running was cut short: it is added as
    failed."""
    import optuna

    dists = distributions(space)
    complete = optuna.trial.TrialState.COMPLETE
    for expected, row in enumerate(read_log(log)):
        state = optuna.trial.TrialState.FAIL if row["state"] == "RUNNING" else optuna.trial.TrialState[row["state"]]
        keys = set(row["params"])
        if row["number"] != expected or not keys <= set(dists) or (state == complete and keys != set(dists)):
            raise ValueError(
                f"{log}: row {expected} is trial {row['number']} ({row['state']}) with keys {sorted(keys)}; a log to "
                f"resume from numbers its trials 0, 1, ... and its complete ones set the search space's keys "
                f"{sorted(dists)}"
            )
        params = {k: json.dumps(v) if "choices" in space[k] else v for k, v in row["params"].items()}
        attrs = {k: row[k] for k in ("seconds", "commit") if row.get(k) is not None}
        study.add_trial(
            optuna.trial.create_trial(
                state=state,
                value=row["value"] if state == complete else None,
                params=params,
                distributions={k: dists[k] for k in params},
                user_attrs=attrs,
            )
        )


def read_log(path: Path) -> list[dict]:
    """The rows of a tuning's ``trials.jsonl``, one dict per trial (number, state, params, value, seconds, commit)."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line]


def _check_directory(out: Path, what: dict) -> None:
    meta = out / "tune.json"
    if meta.exists():
        theirs = json.loads(meta.read_text())
        if theirs != what:
            changed = sorted(k for k in set(what) | set(theirs) if theirs.get(k) != what.get(k))
            raise ValueError(f"{out} holds a tuning with other {', '.join(changed)}: give another --out")
    else:
        meta.write_text(json.dumps(what, indent=1, sort_keys=True) + "\n")


def tune(
    trainer: str,
    task_name: str,
    trials: int,
    steps: int,
    out,
    seeds: int = 1,
    progress: bool = True,
    address: str | None = None,
    family: bool = False,
    baseline: bool = False,
) -> dict:
    """Run (or resume) the tuning of ``trainer`` (``module:function``) on ``task_name`` until ``trials`` trials
    are complete; returns ``{"best": {...}, "file": path, "files": [path, ...]}``.  ``address``: run the trials
    as Ray tasks on the cluster there (``"local"``: a private one), as many at once as it has CPUs, asked of and
    told to the same study.  ``family``: write the chosen values into the file of every task of the tuned task's
    family (``files``), not only the tuned task's (``file``).  ``baseline``: first score the task's own file under
    the trial protocol (:func:`score_baseline`; the result's ``"baseline"``)."""
    import optuna
    from tqdm.auto import tqdm

    from .policies import load_trainer
    from .provenance import git_commit
    from .tasks import SUITE_VERSION, get_task, tasks_named
    from .trainers import load_hyperparams

    if trials < 1 or steps < 1 or seeds < 1:
        raise ValueError(f"--trials, --steps and --seeds are whole numbers >= 1, got {trials}, {steps}, {seeds}")
    train = load_trainer(trainer)
    task = get_task(task_name)
    algorithm = algorithm_of(train)
    space = load_search_space(algorithm)
    from .training import track_of

    track = track_of(train)
    if not task.for_track(track):
        raise ValueError(f"task {task.name} is not on the {track} track's list of suite v{SUITE_VERSION}")
    family_tasks = [t.name for t in tasks_named(None, track=track) if t.kind == task.kind]
    applies_to = family_tasks if family else [task.name]
    bases = {name: load_hyperparams(algorithm, name) for name in applies_to}
    for name, base in bases.items():
        unknown = sorted(set(space) - set(base))
        if unknown:
            raise ValueError(f"search space {algorithm}.toml has keys {unknown} that {name}.toml does not set")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    what = {"trainer": trainer, "task": task.name, "suite_version": SUITE_VERSION, "steps": steps, "seeds": seeds}
    if family:
        what["applies_to"] = applies_to
    _check_directory(out, what)
    shutil.copyfile(SEARCH_SPACES / f"{algorithm}.toml", out / "search-space.toml")
    study = _open_study(out, sampler_seed=TUNING_SEED, space=space)
    tuning_seeds = list(range(TUNING_SEED, TUNING_SEED + seeds))

    commit = git_commit()
    # on a cluster the baseline is one more Ray task beside the trials
    own = score_baseline(train, task, steps, tuning_seeds, out, commit) if baseline and not address else None

    def objective(trial):
        value, seconds = timed_trial(train, task, steps, tuning_seeds, sample(trial, space))
        trial.set_user_attr("seconds", seconds)
        trial.set_user_attr("commit", commit)
        return value

    def complete() -> int:
        return len(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))

    bar = tqdm(
        total=trials,
        initial=min(complete(), trials),
        unit="trial",
        desc=f"tune {algorithm} on {task.name}",
        disable=not progress,
    )
    if address:
        _optimize_on_ray(
            study,
            space,
            trainer,
            task,
            steps,
            tuning_seeds,
            trials - complete(),
            address,
            out,
            bar,
            commit,
            baseline=baseline,
        )
    while complete() < trials:
        study.optimize(objective, n_trials=1, catch=())
        bar.update(1)
        _write_log(study, out / LOG)
    bar.close()
    _write_log(study, out / LOG)
    if baseline and address:
        own = json.loads((out / BASELINE).read_text())
    best = study.best_trial
    chosen = {k: json.loads(v) if isinstance(v, str) else v for k, v in best.params.items()}
    paths = [
        write_hyperparams(out / f"{name}.toml", base, chosen, algorithm, name, best, what, trials)
        for name, base in bases.items()
    ]
    result = {
        "best": {"number": best.number, "value": best.value, "params": chosen},
        "file": str(out / f"{task.name}.toml"),
        "files": [str(p) for p in paths],
    }
    if own is not None:
        result["baseline"] = own
    return result


def _optimize_on_ray(
    study,
    space,
    trainer,
    task,
    steps,
    seeds,
    wanted: int,
    address: str,
    out: Path,
    bar,
    commit: str | None,
    baseline: bool = False,
) -> None:
    """``wanted`` more complete trials, run as Ray tasks, as many at once as the cluster has CPUs (Optuna's
    ask-and-tell: each finished trial is told to the study, and the log written, as it comes back); with
    ``baseline``, the task's own file scored as a trial is (:func:`score_baseline`) by one more task, first,
    unless ``OUT/baseline.json`` is there."""
    import optuna

    from solver.distributed.session import ray_session

    from .spread import RETRIES

    with ray_session(None if address == "local" else address) as ray:
        remote = ray.remote(max_retries=RETRIES, num_cpus=1)(timed_trial)
        width = max(1, int(ray.cluster_resources().get("CPU", 1)))
        running: dict = {}  # Ray reference -> its trial (None: the baseline)
        if baseline and not (out / BASELINE).exists():
            running[remote.remote(trainer, task, steps, seeds, {})] = None
        told = 0
        while told < wanted or None in running.values():
            while len(running) < width and told + sum(t is not None for t in running.values()) < wanted:
                trial = study.ask()
                running[remote.remote(trainer, task, steps, seeds, sample(trial, space))] = trial
            done, _ = ray.wait(list(running), num_returns=1)
            trial = running.pop(done[0])
            try:
                value, seconds = ray.get(done[0])
            except Exception:
                for ref in running:
                    ray.cancel(ref)
                if trial is not None:
                    study.tell(trial, state=optuna.trial.TrialState.FAIL)
                raise
            if trial is None:
                _write_baseline(out / BASELINE, value, seconds, commit)
                continue
            trial.set_user_attr("seconds", seconds)
            trial.set_user_attr("commit", commit)
            study.tell(trial, value)
            told += 1
            bar.update(1)
            _write_log(study, out / LOG)


def _write_log(study, path: Path) -> None:
    lines = []
    for t in study.get_trials(deepcopy=False):
        params = {k: json.loads(v) if isinstance(v, str) else v for k, v in t.params.items()}
        row = {"number": t.number, "state": t.state.name, "params": params, "value": t.value}
        row["seconds"] = t.user_attrs.get("seconds")
        row["commit"] = t.user_attrs.get("commit")  # the code that trained it (+dirty: uncommitted changes)
        lines.append(json.dumps(row, sort_keys=True))
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(path)


def _toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return repr(value)


def write_hyperparams(path: Path, base: dict, chosen: dict, algorithm, task, best, what, trials) -> Path:
    """The task's hyperparameter file with the tuning's choice, its header naming the trial that chose it."""
    where = "" if task == what["task"] else f" on task {what['task']} for its family"
    header = [
        f"# {algorithm} on task {task}: chosen by `python -m experiments.suite tune`{where} "
        f"(suite v{what['suite_version']}),",
        f"# trial {best.number}, the best of {trials} complete trials: mean normalized score {best.value:.6g}",
        f"# after {what['steps']:,} steps on {what['seeds']} tuning seed(s).",
    ]
    body = [f"{key} = {_toml_value(chosen.get(key, value))}" for key, value in base.items()]
    path.write_text("\n".join(header + body) + "\n")
    return path


def file_digest(path) -> str:
    """The SHA-256 of a file's bytes, hex."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def hyperparameter_files(directories, tasks: list[str]) -> dict[str, tuple[dict, str]]:
    """``{task: (values, sha256)}`` of ``DIR/TASK.toml`` for each of ``tasks``, each found in exactly one of
    ``directories`` (a path, or several, comma-separated: tunings' chosen files, one per family; ``run
    --hyperparams``); a clear error for a missing directory, a task without a file, or a task with two."""
    from .trainers import read_toml

    if isinstance(directories, (str, Path)):
        directories = str(directories).split(",")
    directories = [Path(d) for d in directories]
    for directory in directories:
        if not directory.is_dir():
            raise FileNotFoundError(f"--hyperparams {directory}: no such directory (give a tuning's --out)")
    found = {t: [d / f"{t}.toml" for d in directories if (d / f"{t}.toml").exists()] for t in tasks}
    missing = [t for t, paths in found.items() if not paths]
    if missing:
        present = sorted({p.stem for d in directories for p in d.glob("*.toml") if p.name != "search-space.toml"})
        raise FileNotFoundError(
            f"--hyperparams {','.join(map(str, directories))}: no file for task(s) {', '.join(missing)} (they have "
            f"{', '.join(present) or 'none'}; tune with --family, give each family's tuning, or run --tasks the "
            "files cover)"
        )
    twice = {t: paths for t, paths in found.items() if len(paths) > 1}
    if twice:
        t, paths = next(iter(twice.items()))
        raise ValueError(f"--hyperparams: task {t} has a file in two directories ({paths[0]}, {paths[1]}): give one")
    return {t: (read_toml(paths[0]), file_digest(paths[0])) for t, paths in found.items()}


def main_tune(args) -> int:
    result = tune(
        args.trainer,
        args.task,
        args.trials,
        args.steps,
        args.out,
        args.seeds,
        not args.quiet,
        args.address,
        family=args.family,
        baseline=args.baseline,
    )
    best = result["best"]
    print(f"best trial {best['number']}: {best['value']:.6g} with {json.dumps(best['params'])}", file=sys.stdout)
    if "baseline" in result:
        print(f"the task's own file under the same protocol: {result['baseline']['value']:.6g} ({args.out}/{BASELINE})")
    print(f"wrote {', '.join(result['files'])}, {args.out}/trials.jsonl")
    return 0
