"""The n-tuple TD agent for games won or lost: a ``tile:K`` objective or an endgame pattern (:mod:`env2048.rules`).

The value learnt is the probability of success: a move that succeeds is worth 1 and ends the game, one that fails
(or leaves no move) is worth 0, and every other move is worth V(afterstate), the n-tuple network's estimate.  Play
is greedy on that worth; learning moves V(afterstate) toward the worth of the next move (afterstate TD(0) with
reward 1 on success), as :mod:`agents.ntuple` does for the score.  Games start from the rules' empty board (the
fixed tiles of a pattern) plus two spawns, and spawns go to empty cells (for a pattern those are its free cells:
fixed tiles never move).  The weights, tuples and symmetries are :class:`agents.ntuple.NTupleAgent`'s.
"""

from __future__ import annotations

import time

import numba
import numpy as np

from env2048 import metering
from env2048.rules import FAILURE, ILLEGAL, PLAY, SUCCESS, move_outcome

from .ntuple import NTupleAgent, TrainStats, _spawn_packed, _td_update, evaluate_afterstate, trace_buffers, traced


@numba.njit(cache=True)
def best_move_rules(b, rows, cols, moves, rules, weights, offsets, rows_cells, rows_tuple, layout, allowed=15):
    """``(action, outcome, afterstate, worth)`` of the move with the highest worth (1 on success, 0 on failure,
    else V(afterstate)) among those allowed by ``rules`` and by the bits of ``allowed``; action -1 if there is
    none (first action wins ties)."""
    best_a, best_outcome, best_after, best_worth = -1, ILLEGAL, b, -np.inf
    for a in range(4):
        if not (allowed >> a) & 1:
            continue
        after, _, outcome = move_outcome(b, a, rows, cols, moves, rules)
        if outcome == ILLEGAL:
            continue
        if outcome == SUCCESS:
            worth = 1.0
        elif outcome == FAILURE:
            worth = 0.0
        else:
            worth = evaluate_afterstate(after, weights, offsets, rows_cells, rows_tuple, layout)
        if worth > best_worth:
            best_a, best_outcome, best_after, best_worth = a, outcome, after, worth
    return best_a, best_outcome, best_after, best_worth


@numba.njit(cache=True)
def train_success_episodes(
    n_episodes,
    T,
    rules,
    empty_board,
    p4,
    alpha,
    key,
    weights,
    offsets,
    rows_cells,
    rows_tuple,
    layout,
    learn,
    trace_boards,
    trace_actions,
    max_moves,
):
    """Play ``n_episodes`` greedy games of ``rules`` from ``empty_board`` plus two spawns, learning by afterstate
    TD(0) if ``learn``; the moves are traced and ``max_moves`` bounds them as in
    :func:`agents.ntuple.train_episodes`.  Returns ``(won int64[n] (1 = success), moves int64[n] (-1: not
    begun), key)``; ``weights`` is updated in place."""
    rows, cols, moves = T.rows, T.cols, T.moves
    cells = rows * cols
    won = np.zeros(n_episodes, np.int64)
    n_moves = np.zeros(n_episodes, np.int64)
    k = 0
    for ep in range(n_episodes):
        if k >= max_moves:
            n_moves[ep:] = -1
            break
        b, key = _spawn_packed(empty_board, cells, p4, key)
        b, key = _spawn_packed(b, cells, p4, key)
        a, outcome, after, _ = best_move_rules(
            b, rows, cols, moves, rules, weights, offsets, rows_cells, rows_tuple, layout
        )
        while a >= 0 and k < max_moves:
            if k < trace_boards.shape[0]:
                trace_boards[k] = b
                trace_actions[k] = a
            k += 1
            n_moves[ep] += 1
            if outcome != PLAY:  # success or failure ends the game; its worth is not learnt
                won[ep] = outcome == SUCCESS
                break
            b, key = _spawn_packed(after, cells, p4, key)
            a2, outcome2, after2, worth2 = best_move_rules(
                b, rows, cols, moves, rules, weights, offsets, rows_cells, rows_tuple, layout
            )
            if learn:
                _td_update(after, worth2 if a2 >= 0 else 0.0, alpha, weights, offsets, rows_cells, rows_tuple, layout)
            a, outcome, after = a2, outcome2, after2
    return won, n_moves, key


@numba.njit(cache=True)
def _act_many_rules(ids, allowed, T, rules, weights, offsets, rows_cells, rows_tuple, layout):
    """Greedy actions ``int64[n]`` for packed boards ``ids uint64[n]``, each among its ``allowed int64[n]``."""
    out = np.zeros(ids.shape[0], np.int64)
    for i in range(ids.shape[0]):
        a, _, _, _ = best_move_rules(
            ids[i], T.rows, T.cols, T.moves, rules, weights, offsets, rows_cells, rows_tuple, layout, allowed[i]
        )
        out[i] = max(a, 0)
    return out


class GoalNTupleAgent(NTupleAgent):
    """An :class:`~agents.ntuple.NTupleAgent` that learns and plays a game of success or failure: ``spec`` is a
    :class:`solver.spec.SolveSpec` with a ``tile:K`` objective or a pattern (its rules, start board and ``p4``).
    ``init`` (default 1, every afterstate a sure win until play shows otherwise) is the optimistic start that
    makes the greedy player explore: with 0, no game is won by chance on an endgame and nothing is learnt.
    Other arguments as for ``NTupleAgent``; ``train`` plays on one thread (reproducible from the seed), and its
    ``mean_score`` is the share of games won."""

    name = "ntuple-goal"

    def __init__(
        self,
        spec,
        tuples=None,
        alpha: float = 0.1,
        init: float = 1.0,
        seed: int = 0,
        stages: int | None = None,
        stage_shift: int | None = None,
    ):
        if spec.pattern is None and spec.target_exponent is None:
            raise ValueError(f"{spec.describe()} is played for its score: use agents.ntuple.NTupleAgent")
        super().__init__(
            spec.rows,
            spec.cols,
            tuples,
            alpha=alpha,
            init=init,
            p4=spec.p4,
            seed=seed,
            stages=stages,
            stage_shift=stage_shift,
        )
        self.spec = spec
        self.rules = spec.rules
        self.empty_board = np.uint64(spec.empty_board)

    def train(
        self, episodes: int, learn: bool = True, threads: int = 1, trace: bool = False, max_moves: int | None = None
    ) -> TrainStats:
        """Play ``episodes`` games, learning unless ``learn=False``; ``mean_score`` is the share won; ``trace`` and
        ``max_moves`` as for :meth:`agents.ntuple.NTupleAgent.train`."""
        max_moves = metering.moves_left(max_moves)
        if threads != 1:
            raise ValueError(f"GoalNTupleAgent trains on one thread (reproducible from the seed), got {threads}")
        start = time.perf_counter()
        boards, actions = trace_buffers(episodes if trace else 0)
        won, moves, key = train_success_episodes(
            int(episodes),
            self._T,
            self.rules,
            self.empty_board,
            self.p4,
            self.alpha / self.rows_cells.shape[0],
            self.key,
            *self._args(),
            learn,
            boards,
            actions,
            np.iinfo(np.int64).max if max_moves is None else int(max_moves),
        )
        self.key = np.uint64(key)
        begun = moves >= 0
        won, moves, episodes = won[begun], moves[begun], int(begun.sum())
        metering.charge(int(moves.sum()), metering.SIMULATED)
        seconds = time.perf_counter() - start
        stats = TrainStats(
            int(episodes), int(moves.sum()), seconds, float(won.mean()) if episodes else 0.0, {"won": int(won.sum())}
        )
        if trace:
            stats.boards, stats.actions = traced(boards, actions, stats.moves)
        return stats

    def _choose(self, ids: np.ndarray, allowed: np.ndarray) -> np.ndarray:
        return _act_many_rules(ids, allowed, self._T, self.rules, *self._args())
