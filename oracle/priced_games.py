"""Monte-Carlo regret of an agent: play it, and price every move with the oracle's Q-values.

By the performance-difference identity, the expected sum over an episode of the per-move regret
``max_a Q*(s, a) - Q*(s, π(s))`` equals ``V*(start) - V^π(start)``; its sample mean has far lower variance than
``V*(start) - mean score`` because the spawn luck cancels inside each Q*.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields

import numpy as np
from tqdm.auto import tqdm

from env2048.env import Game2048Env

from .agent import single_decider
from .episodes import Episode, EpisodeTrace

#: A move whose regret exceeds this fraction of V*(start) counts as a blunder (default threshold).
BLUNDER_FRACTION = 0.01


def mean_ci(values: np.ndarray) -> tuple[float, float]:
    """Mean and the half-width of its 95% normal confidence interval."""
    values = np.asarray(values, float)
    if values.size == 0:
        return math.nan, math.nan
    half = 1.96 * values.std(ddof=1) / math.sqrt(values.size) if values.size > 1 else math.inf
    return float(values.mean()), float(half)


@dataclass
class RegretReport:
    """What ``regret`` measured.  Per-age arrays are aligned with ``ages`` (the age of the board moved from)."""

    board: str
    objective: str
    episodes: int
    seed: int
    mean_score: float
    score_ci: float
    start_value: float
    mean_regret: float
    regret_ci: float
    #: the share of optimal moves among the contested ones: moves from boards where some legal move is not
    #: optimal (and illegal moves); NaN if there was none.  A move from a board where every legal move is optimal
    #: is no decision, and random play would get it right.
    optimal_move_rate: float
    moves: int
    blunder_threshold: float
    ages: np.ndarray = field(repr=False)
    visits: np.ndarray = field(repr=False)
    mean_regret_by_age: np.ndarray = field(repr=False)
    optimal_rate_by_age: np.ndarray = field(repr=False)
    blunders_by_age: np.ndarray = field(repr=False)
    #: int64 per age: the contested moves (see ``optimal_move_rate``; ``optimal_rate_by_age`` is NaN without any)
    contested_by_age: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, np.int64))
    contested_moves: int = 0
    #: float64 (episodes,): each game's outcome (score, or 1/0 for a goal tile) and its summed regret
    episode_scores: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    episode_regrets: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    #: each game's actions, int8 (moves,) per episode, when played with ``keep_actions``; not part of ``to_dict``
    episode_actions: list = field(repr=False, default_factory=list)

    @property
    def percent_of_optimal(self) -> float:
        """Mean score as a percentage of V*(start)."""
        return 100.0 * self.mean_score / self.start_value if self.start_value else math.nan

    def to_dict(self) -> dict:
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "episode_actions"}
        for key, value in out.items():
            if isinstance(value, np.ndarray):
                out[key] = value.tolist()
        out["percent_of_optimal"] = self.percent_of_optimal
        return out

    def to_json(self, path=None) -> str:
        text = json.dumps(self.to_dict(), indent=1)
        if path is not None:
            with open(path, "w") as fh:
                fh.write(text)
        return text

    def summary(self) -> str:
        return (
            f"{self.board} {self.objective}, {self.episodes} episodes: score {self.mean_score:.2f} ± "
            f"{self.score_ci:.2f} ({self.percent_of_optimal:.2f}% of V* = {self.start_value:.2f}), regret "
            f"{self.mean_regret:.2f} ± {self.regret_ci:.2f} per game, optimal moves {100 * self.optimal_move_rate:.2f}%"
        )

    def plot(self, path=None, title: str | None = None):
        """Optimality gap by age: mean regret and optimal-move rate (top), visits (bottom).  Returns the figure;
        saves it to ``path`` if given.  Uses matplotlib without a display."""
        import matplotlib

        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        fig, (top, bottom) = plt.subplots(2, 1, sharex=True, figsize=(8, 5.5), height_ratios=(3, 1))
        top.plot(self.ages, self.mean_regret_by_age, color="tab:red", lw=1, label="mean regret per move")
        top.set_ylabel("mean regret per move", color="tab:red")
        rate = top.twinx()
        rate.plot(self.ages, 100 * self.optimal_rate_by_age, color="tab:blue", lw=1, label="optimal moves")
        rate.set_ylabel("optimal moves (%)", color="tab:blue")
        rate.set_ylim(0, 101)
        bottom.bar(self.ages, self.visits, width=2, color="0.5")
        bottom.set_ylabel("visits")
        bottom.set_xlabel("age (sum of tiles)")
        top.set_title(title or f"{self.board}: optimality gap by age ({self.episodes} episodes)")
        fig.tight_layout()
        if path is not None:
            fig.savefig(path, dpi=120)
        return fig


class _AgeStats:
    """Per-age sums of one agent's moves: visits, regret, contested moves (boards where some legal move is not
    optimal), optimal moves among those, blunders (indexed by age // 2)."""

    def __init__(self, rows: int, cols: int, threshold: float):
        max_age_slot = 2 + (1 << (rows * cols + 2)) // 2  # bounded by the largest possible age
        self.visits = np.zeros(min(max_age_slot, 1 << 20), np.int64)
        self.regret = np.zeros_like(self.visits, dtype=np.float64)
        self.optimal = np.zeros_like(self.visits)
        self.contested = np.zeros_like(self.visits)
        self.blunders = np.zeros_like(self.visits)
        self.threshold = threshold

    def add(self, age: int, regret: float, is_optimal: bool, contested: bool) -> None:
        slot = age // 2
        self.visits[slot] += 1
        self.regret[slot] += regret
        self.contested[slot] += contested
        self.optimal[slot] += is_optimal and contested
        self.blunders[slot] += regret > self.threshold


def game_env(spec) -> Game2048Env:
    """The env that plays ``spec``'s game (shape, p4, and the goal tile of ``tile:K``, or the endgame pattern);
    an illegal move ends the game, as in the v2 envs."""
    if spec.pattern is not None:
        from env2048.endgame import Endgame2048Env

        return Endgame2048Env(spec.pattern, p4=spec.p4, invalid_action="terminate")
    goal = None if spec.target_exponent is None else 1 << spec.target_exponent
    return Game2048Env(spec.rows, spec.cols, p4=spec.p4, goal_tile=goal, invalid_action="terminate")


def play_game(
    env: Game2048Env,
    decide,
    seed: int,
    oracle=None,
    stats: _AgeStats | None = None,
    trace: EpisodeTrace | None = None,
    actions: list | None = None,
) -> tuple[float, float]:
    """Play one game from ``env.reset(seed=seed)`` with ``decide(observation, info) -> action``.

    With an ``oracle`` every move is priced (regret = max Q − Q(move), 0 for a move optimal within the tie
    tolerance; an illegal move ends the game, ``env`` made with ``invalid_action="terminate"``, and its regret is
    max Q) and added to ``stats``.  ``trace`` records the moves; ``actions`` (a list) gets the actions.
    Returns ``(outcome, total regret)``: the outcome is the final score, or for a goal tile (or an endgame
    pattern) 1.0 if it was made, else 0.0; the regret is 0 without an oracle.
    """
    obs, info = env.reset(seed=seed)
    pattern = getattr(env.unwrapped, "pattern", None)
    goal = None if pattern is not None else env.unwrapped.goal_tile
    total = 0.0
    done = False
    while not done and info["action_mask"].any():
        q = oracle.q_values(obs) if oracle is not None else None
        action = int(decide(obs, info))
        if not 0 <= action <= 3:
            raise ValueError(f"the agent chose action {action}; actions are 0..3 (UP, RIGHT, DOWN, LEFT)")
        best_moves, r = None, 0.0
        if q is not None:
            best_moves = oracle.optimal_mask(q)
            is_optimal = bool(best_moves[action])
            lost = 0.0 if np.isnan(q[action]) else q[action]  # an illegal move ends the game
            r = 0.0 if is_optimal else float(np.nanmax(q) - lost)  # ties within rounding are not regret
            if stats is not None:
                legal = ~np.isnan(q)
                contested = bool((legal & ~best_moves).any()) or not legal[action]  # a choice that matters
                stats.add(info["age"], r, is_optimal, contested)
            total += r
        if actions is not None:
            actions.append(action)
        next_obs, reward, terminated, truncated, next_info = env.step(action)
        if trace is not None:
            trace.add(obs, info["action_mask"], action, reward, next_info["afterstate"], next_obs, q, best_moves, r)
        obs, info = next_obs, next_info
        done = terminated or truncated
    outcome = info["score"] if goal is None else float(info["max_tile"] >= goal)
    return float(outcome), total


def play_regret(
    oracle,
    agent,
    episodes: int = 1000,
    seed: int = 0,
    blunder: float | None = None,
    progress: bool = True,
    keep_actions: bool = False,
) -> RegretReport:
    """Play ``agent`` for ``episodes`` games (episode i reset with seed ``seed + i``) and price every move.

    ``keep_actions``: keep each game's moves (``report.episode_actions``, one byte per move), from which
    :func:`reenact` replays any game move by move without the agent (for replays of chosen games).
    """
    spec = oracle.spec
    if spec.spawn != "random":
        raise ValueError(f"regret plays the real game; this table's spawn model is {spec.spawn!r}, not 'random'")
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    env = game_env(spec)
    decide = single_decider(agent)
    threshold = BLUNDER_FRACTION * oracle.start_value if blunder is None else float(blunder)
    stats = _AgeStats(spec.rows, spec.cols, threshold)
    scores = np.zeros(episodes)
    regrets = np.zeros(episodes)
    kept: list[np.ndarray] = []
    for ep in tqdm(range(episodes), desc=f"regret {spec.board}", disable=not progress, unit=" games"):
        moves = [] if keep_actions else None
        scores[ep], regrets[ep] = play_game(env, decide, seed + ep, oracle, stats, actions=moves)
        if keep_actions:
            kept.append(np.array(moves, np.int8))
    used = np.flatnonzero(stats.visits)
    visits = stats.visits[used]
    contested = stats.contested[used]
    optimal_by_age = np.full(used.size, np.nan)
    np.divide(stats.optimal[used], contested, out=optimal_by_age, where=contested > 0)
    contested = stats.contested[used]
    with np.errstate(invalid="ignore", divide="ignore"):
        optimal_by_age = np.where(contested > 0, stats.optimal[used] / np.maximum(contested, 1), np.nan)
    mean_score, score_ci = mean_ci(scores)
    mean_regret, regret_ci = mean_ci(regrets)
    return RegretReport(
        board=spec.board,
        objective=spec.objective,
        episodes=episodes,
        seed=seed,
        mean_score=mean_score,
        score_ci=score_ci,
        start_value=oracle.start_value,
        mean_regret=mean_regret,
        regret_ci=regret_ci,
        optimal_move_rate=float(stats.optimal.sum() / stats.contested.sum()) if stats.contested.any() else math.nan,
        moves=int(stats.visits.sum()),
        contested_moves=int(stats.contested.sum()),
        blunder_threshold=threshold,
        ages=2 * used,
        visits=visits,
        mean_regret_by_age=stats.regret[used] / visits,
        optimal_rate_by_age=optimal_by_age,
        contested_by_age=contested,
        blunders_by_age=stats.blunders[used],
        episode_scores=scores,
        episode_regrets=regrets,
        episode_actions=kept,
    )


def record_episodes(
    agent, seeds, oracle=None, env: Game2048Env | None = None, agent_name: str = "", note: str = ""
) -> list[Episode]:
    """Play one game per seed and keep every move.  With ``oracle`` its game is played and every move judged;
    else ``env`` (a :class:`Game2048Env`, any shape) is played unjudged and each episode carries ``note``, which
    says why there are no Q-values."""
    if oracle is not None:
        spec = oracle.spec
        if spec.spawn != "random":
            raise ValueError(f"replays play the real game; this table's spawn model is {spec.spawn!r}, not 'random'")
        env, board, objective = game_env(spec), spec.board, spec.objective
    elif env is None:
        raise ValueError("record_episodes needs an oracle, or an env to play without one")
    else:
        base = env.unwrapped
        board = f"{base.rows}x{base.cols}"
        objective = "score" if base.goal_tile is None else f"tile:{int(base.goal_tile).bit_length() - 1}"
    decide = single_decider(agent)
    episodes = []
    for seed in seeds:
        trace = EpisodeTrace(
            board,
            objective,
            int(seed),
            agent_name,
            judged=oracle is not None,
            note="" if oracle is not None else note,
            pattern=getattr(env.unwrapped, "pattern", None),
        )
        outcome, _ = play_game(env, decide, int(seed), oracle, None, trace)
        episodes.append(trace.finish(env.unwrapped.board, outcome))
    return episodes


def reenact(
    actions, seed: int, oracle=None, env: Game2048Env | None = None, agent_name: str = "", note: str = ""
) -> Episode:
    """The game of ``seed`` played with the recorded ``actions`` (e.g. ``report.episode_actions[i]`` with seed
    ``report.seed + i``), move by move, as an :class:`Episode` (judged when ``oracle`` is given).  The spawns
    follow from the seed, so this is the same game without needing the agent again."""
    actions = np.asarray(actions, np.int64)
    step = iter(actions.tolist())

    def scripted(observation, info):
        try:
            return next(step)
        except StopIteration:
            raise ValueError(f"the game of seed {seed} goes on after the {len(actions)} recorded actions") from None

    episode = record_episodes(scripted, [seed], oracle, env, agent_name, note)[0]
    if episode.moves != len(actions):
        raise ValueError(f"the game of seed {seed} ended after {episode.moves} of {len(actions)} recorded actions")
    return episode
