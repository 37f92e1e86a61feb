"""Monte-Carlo regret of an agent: play it, and price every move with the oracle's Q-values.

By the performance-difference identity, the expected sum over an episode of the per-move regret
``max_a Q*(s, a) - Q*(s, π(s))`` equals ``V*(start) - V^π(start)``; its sample mean has far lower variance than
``V*(start) - mean score`` because the spawn luck cancels inside each Q*.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field

import numpy as np
from tqdm.auto import tqdm

from env2048.env import Game2048Env

from .agent import single_decider

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
    optimal_move_rate: float
    moves: int
    blunder_threshold: float
    ages: np.ndarray = field(repr=False)
    visits: np.ndarray = field(repr=False)
    mean_regret_by_age: np.ndarray = field(repr=False)
    optimal_rate_by_age: np.ndarray = field(repr=False)
    blunders_by_age: np.ndarray = field(repr=False)

    @property
    def percent_of_optimal(self) -> float:
        """Mean score as a percentage of V*(start)."""
        return 100.0 * self.mean_score / self.start_value if self.start_value else math.nan

    def to_dict(self) -> dict:
        out = asdict(self)
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


def play_regret(oracle, agent, episodes: int = 1000, seed: int = 0, blunder: float | None = None,
                progress: bool = True) -> RegretReport:  # fmt: skip
    """Play ``agent`` for ``episodes`` games (episode i reset with seed ``seed + i``) and price every move."""
    spec = oracle.spec
    if spec.spawn != "random":
        raise ValueError(f"regret plays the real game; this table's spawn model is {spec.spawn!r}, not 'random'")
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    goal = None if spec.target_exponent is None else 1 << spec.target_exponent
    env = Game2048Env(spec.rows, spec.cols, p4=spec.p4, goal_tile=goal, invalid_action="raise")
    decide = single_decider(agent)
    threshold = BLUNDER_FRACTION * oracle.start_value if blunder is None else float(blunder)
    max_age_slot = 2 + (1 << (spec.rows * spec.cols + 2)) // 2  # bounded by the largest possible age
    visits = np.zeros(min(max_age_slot, 1 << 20), np.int64)
    regret_sum = np.zeros_like(visits, dtype=np.float64)
    optimal = np.zeros_like(visits)
    blunders = np.zeros_like(visits)
    scores = np.zeros(episodes)
    regrets = np.zeros(episodes)
    for ep in tqdm(range(episodes), desc=f"regret {spec.board}", disable=not progress, unit=" games"):
        obs, info = env.reset(seed=seed + ep)
        total = 0.0
        done = False
        while not done:
            if not info["action_mask"].any():
                break
            q = oracle.q_values(obs)
            action = int(decide(obs, info))
            if not 0 <= action <= 3 or np.isnan(q[action]):
                raise ValueError(f"agent chose action {action}, which is illegal here (mask {info['action_mask']})")
            best = np.nanmax(q)
            is_optimal = bool(oracle.optimal_mask(q)[action])
            r = 0.0 if is_optimal else float(best - q[action])  # ties within rounding are not regret
            slot = info["age"] // 2
            visits[slot] += 1
            regret_sum[slot] += r
            optimal[slot] += is_optimal
            blunders[slot] += r > threshold
            total += r
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        scores[ep] = info["score"] if goal is None else float(info["max_tile"] >= goal)
        regrets[ep] = total
    used = np.flatnonzero(visits)
    mean_score, score_ci = mean_ci(scores)
    mean_regret, regret_ci = mean_ci(regrets)
    return RegretReport(
        board=spec.board, objective=spec.objective, episodes=episodes, seed=seed, mean_score=mean_score,
        score_ci=score_ci, start_value=oracle.start_value, mean_regret=mean_regret, regret_ci=regret_ci,
        optimal_move_rate=float(optimal.sum() / max(1, visits.sum())), moves=int(visits.sum()),
        blunder_threshold=threshold, ages=2 * used, visits=visits[used],
        mean_regret_by_age=regret_sum[used] / visits[used], optimal_rate_by_age=optimal[used] / visits[used],
        blunders_by_age=blunders[used],
    )  # fmt: skip
