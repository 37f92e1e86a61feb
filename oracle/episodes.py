"""One game of an agent, move by move, with the oracle's judgement of every move: what replays are drawn from.

:class:`EpisodeTrace` collects the moves while :func:`oracle.priced_games.play_game` plays; :class:`Episode` is the
finished record.  Without a table the same game is recorded with no Q-values (``q_values is None``) and a
``note`` that says why.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Episode:
    """A played game.  ``n`` = number of moves; index ``i`` is the board moved from at move ``i``.

    Arrays:
      ``boards``   uint8 (n + 1, rows, cols): exponents before each move, then the final board;
      ``actions``  int8 (n,): the agent's moves (0 UP, 1 RIGHT, 2 DOWN, 3 LEFT);
      ``rewards``  int64 (n,): merge reward of each move;
      ``spawns``   int16 (n,): cell (row-major) of the tile spawned after move ``i``, -1 when none spawned;
      ``legal``    bool (n, 4): legal moves of ``boards[i]``;
      ``q_values`` float64 (n, 4), NaN for illegal moves, or None without a table;
      ``optimal``  bool (n, 4): the optimal moves (ties within the oracle's tolerance), or None;
      ``regrets``  float64 (n,): max Q − Q(agent's move), 0 for an optimal move, or None.

    An endgame pattern's game (:mod:`env2048.pattern`) also has ``pattern``, its description, and the cells
    (row-major) of its fixed tiles (``fixed_cells``) and of its success conditions (``goal_cells``); a plain game
    has ``""`` and two empty tuples.
    """

    board: str
    objective: str
    seed: int
    agent: str
    boards: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    spawns: np.ndarray
    legal: np.ndarray
    q_values: np.ndarray | None
    optimal: np.ndarray | None
    regrets: np.ndarray | None
    outcome: float
    note: str = ""
    pattern: str = ""
    fixed_cells: tuple[int, ...] = ()
    goal_cells: tuple[int, ...] = ()

    @property
    def moves(self) -> int:
        return len(self.actions)

    @property
    def total_regret(self) -> float:
        """Sum of the per-move regrets (NaN without a table)."""
        return float(self.regrets.sum()) if self.regrets is not None else float("nan")

    @property
    def ages(self) -> np.ndarray:
        """int64 (n + 1,): sum of the tiles of each board."""
        b = self.boards.reshape(len(self.boards), -1).astype(np.int64)
        return np.where(b > 0, np.left_shift(1, b), 0).sum(axis=1)

    @property
    def scores(self) -> np.ndarray:
        """int64 (n + 1,): game score before each move and at the end."""
        return np.concatenate([[0], np.cumsum(self.rewards)])


class EpisodeTrace:
    """Accumulates one game's moves (see :class:`Episode` for the fields)."""

    def __init__(self, board: str, objective: str, seed: int, agent: str, judged: bool, note: str = "", pattern=None):
        """``judged``: the moves come with Q-values; otherwise ``note`` says why not.  ``pattern``: the
        :class:`~env2048.pattern.Pattern` the game is played on, or None."""
        self.header = (board, objective, seed, agent)
        self.judged = judged
        self.note = note
        self.pattern = pattern
        self._boards, self._actions, self._rewards, self._spawns = [], [], [], []
        self._legal, self._q, self._optimal, self._regrets = [], [], [], []

    def add(
        self,
        board,
        legal,
        action: int,
        reward: float,
        afterstate,
        next_board,
        q=None,
        optimal=None,
        regret: float | None = None,
    ) -> None:
        """Record a move from ``board`` (uint8 (rows, cols)); ``afterstate`` is the board after the move, before
        the spawn, ``next_board`` after the spawn."""
        self._boards.append(np.array(board, np.uint8))
        self._legal.append(np.array(legal, bool))
        self._actions.append(action)
        self._rewards.append(int(reward))
        spawned = np.flatnonzero(np.asarray(afterstate).ravel() != np.asarray(next_board).ravel())
        self._spawns.append(int(spawned[0]) if spawned.size == 1 else -1)
        if q is not None:
            self._q.append(np.asarray(q, np.float64))
            self._optimal.append(np.asarray(optimal, bool))
            self._regrets.append(float(regret))

    def finish(self, final_board, outcome: float) -> Episode:
        n = len(self._actions)
        judged = self.judged
        if judged and len(self._q) != n:
            raise ValueError(f"a judged trace has Q-values for {len(self._q)} of its {n} moves")
        board, objective, seed, agent = self.header
        return Episode(
            board=board,
            objective=objective,
            seed=seed,
            agent=agent,
            boards=np.stack([*self._boards, np.array(final_board, np.uint8)]),
            actions=np.array(self._actions, np.int8),
            rewards=np.array(self._rewards, np.int64),
            spawns=np.array(self._spawns, np.int16),
            legal=np.array(self._legal, bool).reshape(n, 4),
            q_values=np.array(self._q).reshape(n, 4) if judged else None,
            optimal=np.array(self._optimal, bool).reshape(n, 4) if judged else None,
            regrets=np.array(self._regrets, np.float64) if judged else None,
            outcome=float(outcome),
            note=self.note,
            **pattern_fields(self.pattern),
        )


def pattern_fields(pattern) -> dict:
    """The :class:`Episode` fields that show an endgame ``pattern`` (None: a plain game)."""
    if pattern is None:
        return {}
    goal = sorted({cell for condition in pattern.conditions for cell, _ in condition})
    return {"pattern": pattern.describe(), "fixed_cells": tuple(sorted(pattern.fixed_cells)), "goal_cells": tuple(goal)}


def chosen_episodes(regrets: np.ndarray, k: int) -> list[int]:
    """Indices of ``k`` episodes to replay, ranked by regret: ``k = 1`` the worst game; ``k = 2`` the worst and
    the median; ``k >= 3`` evenly spaced ranks from the worst to the best (the median included when ``k`` is
    odd).  ``regrets``: float64 (episodes,).  Ties keep the lower episode index."""
    regrets = np.asarray(regrets, float)
    if k < 1:
        raise ValueError(f"the number of replays must be >= 1, got {k}")
    order = np.argsort(-regrets, kind="stable")  # worst first
    n = len(order)
    if k == 1:
        ranks = [0]
    elif k == 2:
        ranks = [0, (n - 1) // 2]
    else:
        ranks = np.round(np.linspace(0, n - 1, min(k, n))).astype(int).tolist()
    seen: list[int] = []
    for r in ranks:
        if int(order[r]) not in seen:
            seen.append(int(order[r]))
    return seen
