"""``python -m experiments.suite bc``: behaviour cloning on the suite's offline datasets (experiments.suite.dataset),
each cloned policy scored exactly against the optimum, as the suite scores any policy.

For each dataset and each size N, a fresh policy net (``agents.imitation.PolicyNetAgent``: an MLP on one-hot
boards, symmetric) is trained by cross-entropy toward the action the dataset's policy took, on every step of the
dataset's first N games with an allowed move, and then scored on the dataset's task (``scoring.score_policy``:
exact V^pi / V* where the suite evaluates exactly).  Writes ``OUT/bc.json`` and the figure ``OUT/bc.png`` (score
against the number of games, one line per dataset).  ``bc.json`` is rewritten after each clone; run the command
again after an interruption and the clones already scored there (same dataset, games, epochs and seed) are kept.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from agents.imitation import Labelled, PolicyNetAgent, fit_policy_net
from env2048 import board as B
from oracle import Oracle

from .dataset import DatasetError, load
from .scoring import score_policy
from .tasks import checked_table, get_task


def steps_of(dataset, games: int) -> Labelled:
    """The decisions of the dataset's first ``games`` games: packed boards ``uint64[n]``, their allowed moves and
    the one-hot action taken (``bool[n, 4]``), steps without an allowed move left out."""
    ids, legal, taken = [], [], []
    for episode in dataset.iterate_episodes(episode_indices=list(range(games))):
        masks = np.asarray(episode.infos["action_mask"][:-1], bool)
        keep = masks.any(axis=1)
        boards = np.asarray(episode.observations[:-1], np.uint8)[keep]
        ids.append(np.atleast_1d(B.pack(boards)).astype(np.uint64))
        legal.append(masks[keep])
        taken.append(np.eye(4, dtype=bool)[np.asarray(episode.actions)[keep]])
    return Labelled(np.concatenate(ids), np.concatenate(legal), np.concatenate(taken))


def clone(
    ident: str,
    root,
    sizes=(100, 1000, 10000),
    epochs: int = 5,
    hidden: int = 256,
    seed: int = 0,
    progress: bool = True,
    done: dict | None = None,
    on_row=None,
) -> list[dict]:
    """Behaviour cloning on the first N games of dataset ``ident`` (under the datasets root ``root``) for each N of
    ``sizes``; returns one row per size: games, steps, training seconds and the clone's score.  ``done``: rows
    already made, by ``(dataset, games)``, returned as they are; ``on_row(row)`` is called after each new one."""
    done = done or {}
    dataset = load(ident, root)
    meta = json.loads(dataset.storage.metadata["solved2048"])
    task = get_task(meta["task"])
    if max(sizes) > dataset.total_episodes or min(sizes) < 1:
        raise DatasetError(f"{ident} holds {dataset.total_episodes} games; sizes must be in 1..that, got {sizes}")
    if meta["table_digest"] != task.table_digest:
        raise DatasetError(f"{ident} was labelled with another table than the suite's task {task.name}")
    rows, cols = task.shape
    out = []
    with Oracle.open(checked_table(task, progress)[0]) as oracle:
        for games in sizes:
            if (ident, games) in done:
                out.append(done[ident, games])
                continue
            data = steps_of(dataset, games)
            agent = PolicyNetAgent(rows, cols, "mlp", hidden, seed)
            start = time.perf_counter()
            losses = fit_policy_net(agent, data, epochs=epochs, seed=seed)
            seconds = time.perf_counter() - start
            score = score_policy(task, oracle, agent, progress)
            out.append(
                {
                    "dataset": ident,
                    "task": task.name,
                    "games": games,
                    "steps": len(data),
                    "epochs": epochs,
                    "seed": seed,
                    "train_seconds": seconds,
                    "final_loss": losses[-1],
                    **score,
                }
            )
            if on_row is not None:
                on_row(out[-1])
            if progress:
                print(
                    f"{ident}: {games} games ({len(data):,} steps): {score['normalized']:.4f} of V* "
                    f"({score['method']}; trained in {seconds:.0f} s)",
                    flush=True,
                )
    return out


def plot(rows: list[dict], path) -> None:
    """Score of the clone against the number of games, one line per dataset (log x)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for ident in dict.fromkeys(r["dataset"] for r in rows):
        mine = [r for r in rows if r["dataset"] == ident]
        ax.plot([r["games"] for r in mine], [r["normalized"] for r in mine], marker="o", label=ident)
    ax.set_xscale("log")
    ax.set_xlabel("games in the dataset")
    ax.set_ylabel("V^π / V* of the cloned policy")
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("Behaviour cloning on Solved2048 datasets")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_bc(
    idents: list[str], root, out, sizes=(100, 1000, 10000), epochs: int = 5, seed: int = 0, progress: bool = True
) -> list[dict]:
    """:func:`clone` for each dataset; writes ``out/bc.json`` (after each clone) and ``out/bc.png``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "bc.json"
    earlier = json.loads(path.read_text()) if path.exists() else []
    done = {(r["dataset"], r["games"]): r for r in earlier if r.get("epochs") == epochs and r.get("seed") == seed}
    rows: list[dict] = []

    def write(kept: list[dict]) -> None:
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(kept, indent=1) + "\n")
        tmp.replace(path)

    def save(row: dict) -> None:
        done[row["dataset"], row["games"]] = row
        write(list(done.values()))

    for ident in idents:
        rows += clone(ident, root, sizes, epochs, seed=seed, progress=progress, done=done, on_row=save)
    write(rows)
    plot(rows, out / "bc.png")
    return rows
