"""``Endgame2048-v0``: an endgame pattern (:mod:`env2048.pattern`) played on its whole board, scored against its
solved table when one is given."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numba
import numpy as np
from gymnasium import spaces

from . import board as B
from . import metering
from .pattern import Pattern, load_pattern
from .render import render_ansi, render_rgb
from .rules import FAILURE, ILLEGAL, SUCCESS, legal_bits_rules, move_outcome
from .shape import ACTION_NAMES

OUTCOMES = {SUCCESS: "success", FAILURE: "failure"}


@numba.njit(cache=True)
def _play(b, action, rows, cols, moves, rules):
    after, _, outcome = move_outcome(b, action, rows, cols, moves, rules)
    return after, outcome


@numba.njit(cache=True)
def play_many(boards, actions, rows, cols, moves, rules, free_cells):
    """Each board's move under a pattern's rules: packed ``boards uint64[n]``, ``actions int64[n]``, ``free_cells
    int64[k]`` -> ``(afterstates uint64[n], outcomes int64[n], empty int64[n])``: the rules' ``ILLEGAL``, ``PLAY``,
    ``SUCCESS`` or ``FAILURE``, and the number of empty free cells of each afterstate (where a spawn may go)."""
    n = boards.shape[0]
    after = np.empty(n, np.uint64)
    outcomes = np.empty(n, np.int64)
    empty = np.zeros(n, np.int64)
    for i in range(n):
        a, _, outcome = move_outcome(boards[i], actions[i], rows, cols, moves, rules)
        after[i] = a
        outcomes[i] = outcome
        for c in free_cells:
            if (a >> np.uint64(4 * c)) & np.uint64(15) == 0:
                empty[i] += 1
    return after, outcomes, empty


@numba.njit(cache=True)
def spawn_many(afterstates, picks, exponents, free_cells):
    """``afterstates uint64[n]`` with a tile of exponent ``exponents[i]`` (``int64[n]``) on the ``picks[i]``-th
    empty cell of ``free_cells`` (``int64[k]``, in that order); boards whose pick is negative stay as they are."""
    out = afterstates.copy()
    for i in range(out.shape[0]):
        left = picks[i]
        if left < 0:
            continue
        for c in free_cells:
            if (out[i] >> np.uint64(4 * c)) & np.uint64(15) == 0:
                if left == 0:
                    out[i] |= np.uint64(exponents[i]) << np.uint64(4 * c)
                    break
                left -= 1
    return out


class Endgame2048Env(gym.Env):
    """An endgame of 2048: fixed large tiles, a target tile to make with the free cells.

    ## Description
    The pattern's rules (docs/endgame.md): a move is allowed iff it changes the board and moves no fixed tile;
    a move that leaves the target tile T on a target cell succeeds, one that leaves a free tile larger than T
    fails; spawns go to empty free cells (a 4 with probability ``p4``).  Any agent for the plain board plays it
    as it is: the observation is the whole board, fixed tiles included.

    ## Action Space
    ``Discrete(4)``: 0 = UP, 1 = RIGHT, 2 = DOWN, 3 = LEFT; ``info["action_mask"]`` / ``action_masks()`` give the
    allowed ones.

    ## Observation Space
    ``Box(0, 15, (rows, cols), uint8)``: each cell's tile exponent (0 empty, 11 for 2048), fixed tiles with their
    real values.

    ## Rewards
    1 for the move that succeeds, 0 otherwise: the return is 1 exactly when the endgame is won.

    ## Starting State
    The fixed tiles plus two spawns on the free cells.

    ## Episode End
    Termination on success, on failure, when no move is allowed (then ``info["outcome"]`` is ``"stuck"``), and
    with ``invalid_action="terminate"`` on a move that is not allowed (``"illegal"``, reward 0).  A few starts
    allow no move (L3-256: 10 of 200 seeded resets): there any action ends the game, reward 0.  The registered
    ids truncate at ``max_episode_steps`` (free cells x target: twice the most allowed moves a game can have), so
    that an agent repeating a move that is not allowed cannot play for ever.

    ## Information
    ``action_mask`` (bool[4]), ``moves``, ``illegal_moves``, ``outcome`` (None while playing), ``score`` (1 once
    won), ``age`` (sum of the free tiles), after a step ``afterstate`` (exponents after the move, before the
    spawn); with
    ``oracle_table``: ``success_probability`` (float64[4], the probability of success after each move under
    optimal play, NaN where not allowed), ``value`` (the best of them) and ``optimal_actions`` (bool[4]).

    ## Arguments
    ``Endgame2048Env(pattern="L3", target=512, oracle=None, p4=None, invalid_action="noop", render_mode=None)``:
    ``pattern`` a built-in name, a JSON pattern file or a :class:`~env2048.pattern.Pattern`; ``target`` the target
    tile (needed for built-ins; overrides a file's); ``oracle`` an open :class:`oracle.Oracle` of a table built
    with ``python -m solver build --pattern ...`` for the same pattern (``gym.make("Endgame2048-v0", ...,
    oracle_table=DIR)`` opens it); ``invalid_action`` ``"noop"`` (reward 0, board unchanged), ``"terminate"`` (the
    game ends, a failure) or ``"raise"``.

    ## Version History
    * v0: initial version.  Since 2026-11-26 a start with no allowed move ends at the first step, as documented
      (before, every action was refused and the episode never ended).
    """

    metadata = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

    def __init__(
        self,
        pattern: str | Pattern | dict = "L3",
        target: int | None = None,
        oracle=None,
        p4: float | None = None,
        invalid_action: str = "noop",
        render_mode: str | None = None,
    ):
        self.pattern = load_pattern(pattern, target)
        p = self.pattern
        self.rows, self.cols = p.rows, p.cols
        self.p4 = B.check_p4(p4 if p4 is not None else p.p4 if p.p4 is not None else 0.1)
        if invalid_action not in ("noop", "terminate", "raise"):
            raise ValueError(f"invalid_action must be 'noop', 'terminate' or 'raise', got {invalid_action!r}")
        self.invalid_action = invalid_action
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']} or None, got {render_mode!r}")
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0, 15, (self.rows, self.cols), np.uint8)
        self.action_space = spaces.Discrete(4)
        self._tables, self._rules = p.tables, p.rules
        starts, probs = B.start_states(self.rows, self.cols, self.p4, board=p.fixed_board)
        keep = probs > 0
        self._starts, self._start_probs = starts[keep], probs[keep] / probs[keep].sum()
        self._free = np.array(p.free_cells, np.int64)
        self.oracle = oracle
        if oracle is not None:
            theirs = oracle.spec.pattern
            if theirs is None or theirs.rules.tolist() != p.rules.tolist() or oracle.spec.p4 != self.p4:
                found = theirs.describe() if theirs is not None else oracle.spec.describe()
                raise ValueError(
                    f"the oracle's table {oracle.path} solves {found} (p4={oracle.spec.p4:g}), not "
                    f"{p.describe()} (p4={self.p4:g})"
                )
        self._board = np.uint64(0)
        self._over, self._started = False, False
        self._moves = self._illegal = 0
        self._score = 0.0

    # -- API ------------------------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        if seed is not None:
            metering.note_seeds((seed,))
        self._board = self._starts[self.np_random.choice(self._starts.size, p=self._start_probs)]
        self._over, self._started = False, True
        self._moves = self._illegal = 0
        self._score = 0.0
        return self._observe(), self._info(None)

    def step(self, action):
        if not self._started:
            raise RuntimeError("call reset() before step()")
        if self._over:
            raise RuntimeError("the episode is over (terminated); call reset() to start a new game")
        if isinstance(action, bool) or not isinstance(action, int | np.integer) or not 0 <= int(action) <= 3:
            raise ValueError(f"action must be an int 0..3 (UP, RIGHT, DOWN, LEFT), got {action!r}")
        a = int(action)
        metering.charge(1)
        after, outcome = _play(self._board, a, self.rows, self.cols, self._tables.moves, self._rules)
        if outcome == ILLEGAL:
            if not self._mask().any():  # a start with no allowed move (the rules value it 0): the game is over
                self._over = True
                return self._observe(), 0.0, True, False, self._info("stuck", self._observe())
            if self.invalid_action == "raise":
                allowed = [ACTION_NAMES[i] for i in range(4) if self._mask()[i]]
                raise ValueError(f"{ACTION_NAMES[a]} ({a}) is not allowed here; allowed moves: {allowed}")
            self._illegal += 1
            if self.invalid_action == "terminate":  # the game ends where it stands: a failure, reward 0
                self._over = True
                return self._observe(), 0.0, True, False, self._info("illegal", self._observe())
            return self._observe(), 0.0, False, False, self._info(None, self._observe())
        self._moves += 1
        afterstate = B.unpack(np.uint64(after), self.rows, self.cols).astype(np.uint8)
        if outcome in OUTCOMES:
            self._board, self._over = np.uint64(after), True
            self._score = float(outcome == SUCCESS)
            return self._observe(), self._score, True, False, self._info(OUTCOMES[outcome], afterstate)
        self._board = self._spawn(np.uint64(after))
        if not self._mask().any():
            self._over = True
            return self._observe(), 0.0, True, False, self._info("stuck", afterstate)
        return self._observe(), 0.0, False, False, self._info(None, afterstate)

    def action_masks(self) -> np.ndarray:
        """Allowed actions of the current board, ``bool[4]`` (sb3-contrib MaskablePPO protocol)."""
        return self._mask()

    @property
    def board(self) -> np.ndarray:
        """Current exponents, ``uint8 (rows, cols)`` (a copy)."""
        return self._observe()

    @property
    def board_id(self) -> np.uint64:
        """Current packed board."""
        return self._board

    def render(self):
        board = self._observe()
        if self.render_mode == "ansi":
            return render_ansi(board)
        if self.render_mode == "rgb_array":
            return render_rgb(board)
        return None

    # -- internals ------------------------------------------------------------------------------------------
    def _mask(self) -> np.ndarray:
        bits = legal_bits_rules(self._board, self.rows, self.cols, self._tables.moves, self._rules)
        return np.array([(bits >> a) & 1 for a in range(4)], bool)

    def _spawn(self, after: np.uint64) -> np.uint64:
        grid = B.unpack(after, self.rows, self.cols).reshape(-1)
        empty = self._free[grid[self._free] == 0]
        cell = int(empty[self.np_random.integers(empty.size)])
        tile = 2 if self.np_random.random() < self.p4 else 1
        return np.uint64(int(after) | tile << (4 * cell))

    def _observe(self) -> np.ndarray:
        return B.unpack(self._board, self.rows, self.cols).astype(np.uint8)

    def _info(self, outcome: str | None, afterstate: np.ndarray | None = None) -> dict:
        age = int(B.age(self._board, self.rows, self.cols)) - self.pattern.age_offset
        info = {
            "action_mask": self._mask(),
            "moves": self._moves,
            "illegal_moves": self._illegal,
            "outcome": outcome,
            "score": self._score,
            "age": age,
        }
        if afterstate is not None:
            info["afterstate"] = afterstate
        if self.oracle is not None and outcome is None:
            q = self.oracle.q_values(self._board)
            info["success_probability"] = q
            info["value"] = float(np.nanmax(q)) if not np.isnan(q).all() else 0.0
            info["optimal_actions"] = self.oracle.best_actions(self._board)
        return info

    def close(self):
        if self.oracle is not None:
            self.oracle.close()
            self.oracle = None
