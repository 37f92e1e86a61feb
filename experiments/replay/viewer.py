"""The replay viewer: one self-contained HTML page that replays games move by move beside the optimum.

``write_replay_html(episodes, path)`` writes the page; :func:`page_data` is everything the page shows, as plain
JSON-able data (inlined in the page; no server, no network, no JavaScript library).  The page draws the board in
the game's colours; for each move the four moves' Q-values as bars (illegal ones greyed), the agent's move and the
optimal move(s), that move's regret, and running totals (score, cumulative regret, age, moves); a timeline of
regret per move that jumps to a move on click; keys ←/→, Home/End, Space (autoplay); a list of episodes.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path

import numpy as np

from env2048.render import palette_hex
from env2048.shape import ACTION_NAMES
from oracle.episodes import Episode

#: The page's template: ``__TITLE__`` and ``__DATA__`` are filled in by :func:`render_page`.
_TEMPLATE_PATH = Path(__file__).with_name("viewer_template.html")


def _finite_or_none(values) -> list:
    return [None if not math.isfinite(v) else float(v) for v in np.asarray(values, float).ravel()]


def episode_data(episode: Episode, label: str | None = None) -> dict:
    """What the page shows of one game (lists, JSON-able).  Per-position lists have ``moves + 1`` entries
    (``boards`` flattened row-major, ``scores``, ``ages``, ``cumulative_regret``); per-move lists ``moves``."""
    n = episode.moves
    rows, cols = episode.boards.shape[1:]
    judged = episode.q_values is not None
    cumulative = np.concatenate([[0.0], np.cumsum(episode.regrets)]).tolist() if judged else None
    return {
        "label": label or f"{episode.agent or 'agent'}, seed {episode.seed}",
        "agent": episode.agent,
        "seed": episode.seed,
        "board": episode.board,
        "objective": episode.objective,
        "rows": int(rows),
        "cols": int(cols),
        "moves": n,
        "boards": episode.boards.reshape(n + 1, rows * cols).astype(int).tolist(),
        "actions": episode.actions.astype(int).tolist(),
        "rewards": episode.rewards.astype(int).tolist(),
        "spawns": episode.spawns.astype(int).tolist(),
        "legal": episode.legal.tolist(),
        "q": [_finite_or_none(q) for q in episode.q_values] if judged else None,
        "optimal": episode.optimal.tolist() if judged else None,
        "regrets": episode.regrets.tolist() if judged else None,
        "scores": episode.scores.astype(int).tolist(),
        "ages": episode.ages.astype(int).tolist(),
        "cumulative_regret": cumulative,
        "total_regret": episode.total_regret if judged else None,
        "outcome": episode.outcome,
        "note": episode.note,
        "pattern": episode.pattern,
        "fixed_cells": list(episode.fixed_cells),
        "goal_cells": list(episode.goal_cells),
    }


def page_data(
    episodes: list[Episode], labels: list[str] | None = None, title: str = "", start_value: float | None = None
) -> dict:
    """Everything the page shows: ``{"title", "start_value", "actions", "palette", "episodes": [...]}``."""
    if not episodes:
        raise ValueError("no episodes to replay")
    if labels is not None and len(labels) != len(episodes):
        raise ValueError(f"{len(labels)} labels for {len(episodes)} episodes")
    labels = labels or [None] * len(episodes)
    return {
        "title": title or f"{episodes[0].board} replays",
        "start_value": start_value,
        "actions": list(ACTION_NAMES),
        "palette": palette_hex(),
        "episodes": [episode_data(e, label) for e, label in zip(episodes, labels, strict=True)],
    }


def render_page(data: dict) -> str:
    """The HTML page for :func:`page_data`'s ``data``: inline CSS, script and JSON (``<`` escaped in the JSON so
    that no string can close the script element)."""
    payload = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")
    page = _TEMPLATE_PATH.read_text()
    return page.replace("__TITLE__", html.escape(data["title"])).replace("__DATA__", payload)


def write_replay_html(
    episodes: list[Episode], path, labels: list[str] | None = None, title: str = "", start_value: float | None = None
) -> Path:
    """Write the viewer page for ``episodes`` to ``path`` (parents created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_page(page_data(episodes, labels, title, start_value)), encoding="utf-8")
    return path
