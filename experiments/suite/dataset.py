"""``python -m experiments.suite dataset``: offline datasets of a suite task in Minari's format, every step labelled
by the exact oracle (extra ``suite``: ``minari[hdf5]``).

A dataset holds ``episodes`` games of a policy on the task's env (observations: the ``uint8 (rows, cols)``
exponent board; actions 0..3; rewards: the task's, so an episode's return is its score or its success).  Step
``t``'s infos (``infos[k]`` has one row per observation, the reset's first) describe observation ``t``:

==================  ==============  ==================================================================
key                 dtype, shape    meaning
==================  ==============  ==================================================================
``q_star``          float64 (4,)    Q* of each move, in the task's units (NaN where it is not allowed)
``action_mask``     bool (4,)       the allowed moves
``optimal_actions`` bool (4,)       the moves of highest Q* (within the oracle's tolerance)
``regret``          float64         max Q* − Q*(action) of the action that led here, so row t + 1 prices
                                    ``actions[t]``; NaN on the reset's row
``score``           int64           the game's merge score so far, also on goal tasks (an endgame's: 1 once won)
==================  ==============  ==================================================================

The metadata give ``ref_min_score`` = V^random and ``ref_max_score`` = V* (both exact where the suite evaluates
random play exactly, as ``ref_min_method`` says), so ``minari.get_normalized_score`` is exact; and under
``solved2048`` the task, suite version, table digest, policy and seed.  The dataset is written in a temporary
directory and moved under its id only when complete: an interrupted write leaves nothing under the id.

Minari's ``DataCollector`` needs JAX (its ``create`` extra) only to append steps to its buffers; the games are
recorded here as whole arrays and handed to ``minari.create_dataset_from_buffers``, so the ``hdf5`` extra is all
that is needed.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import warnings
from contextlib import contextmanager
from pathlib import Path

import gymnasium as gym
import numpy as np
from tqdm.auto import tqdm

import env2048  # noqa: F401  (registers the task ids)
from agents.registry import make_policy
from oracle import Oracle
from oracle.agent import batch_decider

from .policies import load_trainer
from .runner import train_on_task
from .scoring import score_policy
from .tasks import SUITE_VERSION, Task, checked_table, get_task

NAMESPACE = "solved2048"
#: Games played in lockstep and written to the file at a time.
CHUNK = 500
#: The infos every step carries (see the module docstring).
INFO_KEYS = ("q_star", "action_mask", "optimal_actions", "regret", "score")


class DatasetError(ValueError):
    """A dataset that cannot be written as asked; the message says why and what to do."""


def dataset_id(task: Task, name: str, version: int = 0) -> str:
    """``solved2048/TASK/NAME-vVERSION`` (Minari's ``namespace/env/name-vN``)."""
    if not re.fullmatch(r"[A-Za-z0-9_]+(-[A-Za-z0-9_]+)*", name) or re.search(r"-v\d+$", name):
        raise DatasetError(f"dataset name {name!r}: use letters, digits, _ and -, without a -vN version suffix")
    return f"{NAMESPACE}/{task.name}/{name}-v{version}"


def default_name(policy: str) -> str:
    """A dataset name from a policy spec: ``td:runs/x.npz`` -> ``td``, ``expectimax:2`` -> ``expectimax-2``."""
    kind, _, arg = policy.partition(":")
    return kind if not arg or "/" in arg or "." in arg else f"{kind}-{arg}"


@contextmanager
def _datasets_root(path: Path):
    """Minari reads and writes datasets under ``$MINARI_DATASETS_PATH``: point it at ``path`` for a while."""
    before = os.environ.get("MINARI_DATASETS_PATH")
    os.environ["MINARI_DATASETS_PATH"] = str(path)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("MINARI_DATASETS_PATH", None)
        else:
            os.environ["MINARI_DATASETS_PATH"] = before


def make_dataset(
    task_name: str,
    policy: str | None,
    episodes: int,
    out,
    name: str | None = None,
    seed: int = 0,
    overwrite: bool = False,
    progress: bool = True,
    trainer: str | None = None,
) -> Path:
    """Play ``episodes`` games of ``policy`` (a spec of ``agents.registry``), or of the policy that ``trainer``
    (``module:function``, as for ``run --trainer``) learns on the task with its budget and ``seed``, and write them
    as the Minari dataset ``solved2048/TASK/NAME-v0`` under the datasets root ``out``; returns its directory.  Game
    ``i`` starts from ``reset(seed=seed * 1_000_003 + i)``.  Load it with ``minari.load_dataset(id)`` once
    ``MINARI_DATASETS_PATH`` is ``out`` (or :func:`load`)."""
    import minari

    task = get_task(task_name)
    if (policy is None) == (trainer is None):
        raise DatasetError("give a --policy or a --trainer, not both and not neither")
    if not isinstance(episodes, int) or episodes < 1:
        raise DatasetError(f"--episodes must be a whole number >= 1, got {episodes!r}")
    label = policy or trainer
    ident = dataset_id(task, name or default_name(policy or trainer.partition(":")[2]))
    out = Path(out).resolve()  # Minari joins its own paths onto MINARI_DATASETS_PATH: a relative one would double
    final = out / ident
    if final.exists() and not overwrite:
        raise DatasetError(f"{final} already holds dataset {ident}: pass --overwrite to replace it, or --name")
    table, digest = checked_table(task, progress)
    out.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".writing-", dir=out))
    try:
        with Oracle.open(table) as oracle, _datasets_root(staging), warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="`author_email` is set to None", category=UserWarning)
            agent, trained_for = _the_policy(task, policy, trainer, seed, oracle)
            random_value = random_reference(task, oracle, table, digest, progress)
            spec = gym.spec(task.env_id)
            decide = batch_decider(agent)
            seeds = [seed * 1_000_003 + i for i in range(episodes)]
            bar = tqdm(total=episodes, desc=f"{ident}: games", unit="game", disable=not progress)
            chunks = (
                play_games(lambda: gym.make(spec, oracle=False), decide, oracle, seeds[lo : lo + CHUNK])
                for lo in range(0, episodes, CHUNK)
            )
            dataset = None
            for chunk in chunks:
                if dataset is None:
                    dataset = minari.create_dataset_from_buffers(
                        dataset_id=ident,
                        env=spec,
                        eval_env=spec,
                        buffer=chunk,
                        algorithm_name=label,
                        author="solved2048 (experiments.suite.dataset)",
                        code_permalink="experiments/suite/dataset.py",
                        ref_min_score=random_value["value"],
                        ref_max_score=float(oracle.start_value),
                        requirements=["solved2048"],
                        description=f"{episodes} games of {label} on suite v{SUITE_VERSION} task {task.describe()}, "
                        "every step labelled with the exact Q*, optimal moves and regret",
                    )
                else:
                    dataset.storage.update_episodes(chunk)
                bar.update(len(chunk))
            bar.close()
            dataset.storage.update_metadata(
                {
                    "solved2048": json.dumps(
                        {
                            "task": task.name,
                            "suite_version": SUITE_VERSION,
                            "env_id": task.env_id,
                            "table_digest": digest,
                            "policy": label,
                            "seed": seed,
                            "ref_min_method": random_value["method"],
                            "optimal_value": float(oracle.start_value),
                            "info_keys": list(INFO_KEYS),
                            **trained_for,
                        }
                    )
                }
            )
            del dataset
        _move_into_place(staging, ident, out, overwrite)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    if progress:
        print(
            f"wrote {ident} ({episodes} games) under {out}; MINARI_DATASETS_PATH={out} python -c "
            f"\"import minari; print(minari.load_dataset('{ident}'))\""
        )
    load(ident, out)  # it opens from its final place
    return final


def _the_policy(task: Task, policy: str | None, trainer: str | None, seed: int, oracle: Oracle) -> tuple:
    """``(agent, training facts)``: the agent of ``policy``, or of what ``trainer`` learns on the task (its budget,
    ``seed``), with the trainer's name, budget, steps and seconds."""
    rows, cols = task.shape
    if trainer is None:
        return make_policy(policy, rows, cols, seed, oracle), {}
    trained, facts = train_on_task(load_trainer(trainer), task, seed)
    return make_policy(trained, rows, cols, seed, oracle), {"trainer": trainer, **facts}


def random_reference(task: Task, oracle: Oracle, table: Path, digest: str, progress: bool) -> dict:
    """The random policy's score on the task (``experiments.suite.scoring.score_policy``, seed 0: exact wherever
    the suite evaluates random play exactly), kept beside the table in ``TASK.random.json`` with the table's digest,
    so that it is computed once per table."""
    path = Path(table).with_name(f"{task.name}.random.json")
    if path.exists():
        kept = json.loads(path.read_text())
        if kept.get("table_digest") == digest:
            return kept
    rows, cols = task.shape
    result = score_policy(task, oracle, make_policy("random", rows, cols, 0, oracle), progress)
    result["table_digest"] = digest
    tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(result, indent=1) + "\n")
    os.replace(tmp, path)
    return result


def play_games(make_env, decide, oracle: Oracle, seeds) -> list:
    """Games of ``decide(boards uint8 (n, rows, cols), masks bool (n, 4)) -> int64[n]`` on envs of ``make_env()``,
    one from ``reset(seed=s)`` for each of ``seeds``, played in lockstep so that the decisions and the oracle's
    labels come a batch at a time; returns Minari ``EpisodeBuffer``s (observations and infos one row longer than
    actions; a finished game's last row has NaN Q* and no allowed move)."""
    from minari.data_collector import EpisodeBuffer

    envs = [make_env() for _ in seeds]
    obs = [env.reset(seed=int(s))[0] for env, s in zip(envs, seeds, strict=True)]
    rec = [
        {
            "obs": [o],
            "actions": [],
            "rewards": [],
            "term": [],
            "trunc": [],
            "q": [],
            "mask": [],
            "regret": [np.nan],
            "score": [0],
        }
        for o in obs
    ]
    active = list(range(len(envs)))
    while active:
        boards = np.stack([obs[i] for i in active])
        masks = np.stack([envs[i].unwrapped.action_masks() for i in active])
        q = oracle.q_values(boards).reshape(len(active), 4)
        actions = np.asarray(decide(boards, masks), np.int64).reshape(len(active))
        still = []
        for k, i in enumerate(active):
            a = int(actions[k]) if masks[k].any() else 0  # a start with no allowed move: any action ends it
            if masks[k].any() and not masks[k, a]:
                raise ValueError(f"the policy chose {a}, which is not allowed on board {boards[k].tolist()}")
            r = rec[i]
            r["q"].append(q[k])
            r["mask"].append(masks[k])
            r["regret"].append(np.nanmax(q[k]) - q[k, a] if masks[k].any() else np.nan)
            obs[i], reward, terminated, truncated, info = envs[i].step(a)
            r["obs"].append(obs[i])
            r["actions"].append(a)
            r["rewards"].append(float(reward))
            r["term"].append(bool(terminated))
            r["trunc"].append(bool(truncated))
            r["score"].append(int(info.get("score", 0)))
            if not (terminated or truncated):
                still.append(i)
        active = still
    games = []
    for s, r in zip(seeds, rec, strict=True):
        q = np.vstack([*r["q"], np.full(4, np.nan)])  # the final board: no move
        legal = np.vstack([*r["mask"], np.zeros(4, bool)])
        optimal = np.where(legal.any(axis=1)[:, None], oracle.optimal_mask(q), False)
        infos = {
            "q_star": q,
            "action_mask": legal,
            "optimal_actions": optimal,
            "regret": np.array(r["regret"], np.float64),
            "score": np.array(r["score"], np.int64),
        }
        games.append(
            EpisodeBuffer(
                seed=int(s),
                observations=np.stack(r["obs"]),
                actions=np.array(r["actions"]),
                rewards=r["rewards"],
                terminations=r["term"],
                truncations=r["trunc"],
                infos=infos,
            )
        )
    return games


def _move_into_place(staging: Path, ident: str, out: Path, overwrite: bool) -> None:
    """Move the finished dataset (and its namespace's metadata, if new) from ``staging`` to ``out``: one rename
    of the dataset's directory, so a reader sees all of it or none."""
    namespace_meta = staging / NAMESPACE / "namespace_metadata.json"
    target_meta = out / NAMESPACE / "namespace_metadata.json"
    (out / ident).parent.mkdir(parents=True, exist_ok=True)
    if namespace_meta.exists() and not target_meta.exists():
        shutil.copy2(namespace_meta, target_meta)
    final = out / ident
    if final.exists() and overwrite:
        old = final.with_name(final.name + ".old")
        os.replace(final, old)
        os.replace(staging / ident, final)
        shutil.rmtree(old)
    else:
        os.replace(staging / ident, final)


def load(ident: str, root):
    """``minari.load_dataset(ident)`` from the datasets root ``root`` (nothing is downloaded)."""
    import minari

    with _datasets_root(Path(root)):
        return minari.load_dataset(ident)
