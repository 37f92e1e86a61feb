"""Exact evaluation of a policy: its expected score from the random start, and where it loses against the optimum.

A forward pass over the boards the policy can reach, age by age, carries each board's exact visit probability
d(s) (start distribution, the policy's action probabilities, the spawn probabilities).  Then, exactly:

* ``V^π(start) = Σ_s d(s) Σ_a π(a|s) r(s, a)`` (expected total reward, by linearity of expectation), and
* ``V*(start) − V^π(start) = Σ_s d(s) Σ_a π(a|s) (max Q*(s) − Q*(s, a))`` (performance difference identity).

Both are computed; they agree to rounding, which checks the oracle and the pass against each other.  The
second, split by age, is the exact optimality gap by age.  Boards are kept raw, so any policy is exact; an agent
with ``symmetric = True`` (its action on a mirrored board is the mirrored action) is evaluated on canonical
boards, up to 8x fewer.  A policy is evaluated by its ``action_probs(boards, masks)`` if it has them, else by
its moves if it declares ``deterministic = True``; one that declares neither is refused (see
:mod:`oracle.agent`).  An illegal move ends the game, as in the v2 envs: ``r(s, a) = 0``, no successors, and
``Q*(s, a) = 0``, so its regret is ``max Q*(s)``.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import numba
import numpy as np
from tqdm.auto import tqdm

from env2048 import board as B
from env2048.kernels import canonical_packed
from env2048.rules import FAILURE, SUCCESS, legal_masks, move_outcome

from .agent import WHAT_TO_DECLARE, as_policy, policy_name


@dataclass
class Evaluation:
    """Exact figures of a policy (per-age arrays aligned with ``ages``)."""

    board: str
    objective: str
    value: float  # V^π(start): expected score (or win probability for tile:K)
    optimal_value: float  # V*(start)
    gap: float  # V*(start) − V^π(start) from the per-move regrets
    consistency: float  # |V* − gap − value|: rounding only
    states: int  # (raw or canonical) boards the policy reaches
    seconds: float
    ages: np.ndarray = field(repr=False)
    visits: np.ndarray = field(repr=False)  # expected number of moves made at each age (Σ d(s))
    gap_by_age: np.ndarray = field(repr=False)

    @property
    def percent_of_optimal(self) -> float:
        return 100.0 * self.value / self.optimal_value if self.optimal_value else float("nan")

    def to_dict(self) -> dict:
        out = {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in asdict(self).items()}
        out["percent_of_optimal"] = self.percent_of_optimal
        return out


@numba.njit(cache=True)
def _step_layer(ids, weight, policy, T, p4, rules, score, symmetric):
    """Expand one layer: ``(reward_mass, win_mass, child2, w2, child4, w4)``.

    ``reward_mass`` = Σ_s d(s) Σ_a π(a|s) r(s, a); ``win_mass`` the probability of winning moves (tile:K);
    children of tile 2 (age + 2) and tile 4 (age + 4) with their probability mass, unsorted, duplicates kept.
    """
    rows, cols, moves, sym_lines, sym_bytes = T.rows, T.cols, T.moves, T.sym_lines, T.sym_bytes
    cells = rows * cols
    n = ids.shape[0]
    cap = 0
    for i in range(n):
        for a in range(4):
            if policy[i, a] > 0:
                cap += cells
    child2 = np.empty(cap, np.uint64)
    child4 = np.empty(cap, np.uint64)
    w2 = np.empty(cap, np.float64)
    w4 = np.empty(cap, np.float64)
    k = 0
    reward_mass = 0.0
    win_mass = 0.0
    for i in range(n):
        b = ids[i]
        for a in range(4):
            pa = policy[i, a]
            if pa <= 0:
                continue
            after, reward, outcome = move_outcome(b, a, rows, cols, moves, rules)
            mass = weight[i] * pa
            if score:
                reward_mass += mass * reward
            if outcome == SUCCESS:
                win_mass += mass
                continue
            if outcome == FAILURE:
                continue
            empty = 0
            for c in range(cells):
                empty += ((after >> np.uint64(4 * c)) & np.uint64(15)) == 0
            for c in range(cells):
                shift = np.uint64(4 * c)
                if (after >> shift) & np.uint64(15):
                    continue
                c2 = after | (np.uint64(1) << shift)
                c4 = after | (np.uint64(2) << shift)
                if symmetric:
                    c2 = canonical_packed(c2, rows, cols, sym_lines, sym_bytes)
                    c4 = canonical_packed(c4, rows, cols, sym_lines, sym_bytes)
                child2[k] = c2
                child4[k] = c4
                w2[k] = mass * (1.0 - p4) / empty
                w4[k] = mass * p4 / empty
                k += 1
    return reward_mass, win_mass, child2[:k], w2[:k], child4[:k], w4[:k]


def _merge(parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """Sum the weights of equal IDs: sorted unique IDs and their total weight."""
    ids = np.concatenate([p[0] for p in parts])
    w = np.concatenate([p[1] for p in parts])
    order = np.argsort(ids, kind="stable")
    ids, w = ids[order], w[order]
    if ids.size == 0:
        return ids, w
    starts = np.concatenate([[0], np.flatnonzero(ids[1:] != ids[:-1]) + 1])
    return ids[starts], np.add.reduceat(w, starts)


def policy_matrix(agent, boards: np.ndarray, masks: np.ndarray, q: np.ndarray | None = None) -> np.ndarray:
    """``float64 (n, 4)``: the policy's action probabilities (one-hot for a deterministic one), validated; mass
    on an illegal move (``~masks``) is allowed: it ends the game.

    ``q`` (``float64 (n, 4)``), if given, are the Q-values of ``boards`` in the agent's own oracle: an agent that
    decides from them alone (``actions_from_q``, the optimal agent) then decides without looking them up again."""
    if q is not None and hasattr(agent, "actions_from_q"):
        actions = np.asarray(agent.actions_from_q(q), np.int64)
    elif hasattr(agent, "action_probs"):
        probs = np.asarray(agent.action_probs(boards, masks), np.float64)
        if probs.shape != masks.shape or (probs < 0).any() or not np.allclose(probs.sum(1), 1):
            raise ValueError(
                f"{policy_name(agent)}: action_probs must give ({len(masks)}, 4) non-negative probabilities that "
                f"sum to 1 per board, got shape {probs.shape}"
            )
        return probs
    elif getattr(agent, "deterministic", False) is True:
        actions = np.asarray(agent.act_batch(boards, masks), np.int64)
    else:
        raise ValueError(f"{policy_name(agent)} cannot be evaluated exactly: {WHAT_TO_DECLARE}")
    if actions.shape != (boards.shape[0],) or (actions < 0).any() or (actions > 3).any():
        raise ValueError(
            f"{policy_name(agent)} must return one action in 0..3 (UP, RIGHT, DOWN, LEFT) per board, got "
            f"{actions[:8]!r}"
        )
    probs = np.zeros(masks.shape)
    probs[np.arange(actions.size), actions] = 1.0
    return probs


def evaluate_policy(oracle, agent, progress: bool = True, batch: int = 1 << 18, on_layer=None) -> Evaluation:
    """Exact :class:`Evaluation` of ``agent`` against ``oracle``'s table (see the module docstring).

    ``on_layer(age, ids, visits, policy, q)``, if given, sees every batch of boards with a legal move: packed
    ``ids uint64[m]`` (canonical for a symmetric agent), their visit probabilities ``float64[m]``, the policy
    ``float64[m, 4]`` and the Q-values ``float64[m, 4]`` (NaN = illegal); e.g. to weight afterstates by how
    often the policy reaches them."""
    spec = oracle.spec
    if spec.spawn != "random":
        raise ValueError(f"exact evaluation plays the real game; this table's spawn model is {spec.spawn!r}")
    agent = as_policy(agent)
    T, rules = spec.tables, spec.rules
    symmetric = bool(getattr(agent, "symmetric", False))
    start_ids, start_probs = spec.start_states(canonical_only=symmetric)
    keep = start_probs > 0
    pending: dict[int, list] = {}
    ages = spec.ages(start_ids[keep])
    for age in np.unique(ages):
        sel = ages == age
        pending[int(age)] = [(start_ids[keep][sel], start_probs[keep][sel])]
    t0 = time.perf_counter()
    value = 0.0
    out_ages, visits, gaps = [], [], []
    n_states = 0
    score = spec.objective == "score"
    bar = tqdm(desc=f"evaluate {spec.board}", unit=" ages", disable=not progress)
    while pending:
        age = min(pending)
        ids, weight = _merge(pending.pop(age))
        n_states += ids.size
        gap = 0.0
        lives = []
        for lo in range(0, ids.size, batch):
            part, w = ids[lo : lo + batch], weight[lo : lo + batch]
            boards = B.unpack(part, spec.rows, spec.cols)
            masks = legal_masks(part, spec.rows, spec.cols, T.moves, rules)
            live = masks.any(axis=1)
            lives.append(live)
            policy = np.zeros(masks.shape)
            if live.any():
                q = oracle.q_values(part[live])
                own_q = q if getattr(agent, "oracle", None) is oracle else None
                policy[live] = policy_matrix(agent, boards[live], masks[live], own_q)
                if on_layer is not None:
                    on_layer(age, part[live], w[live], policy[live], q)
                best = np.nanmax(q, axis=1, keepdims=True)
                regret = np.where(np.isnan(q), best, best - q)  # an illegal move ends the game: Q = 0
                gap += float(np.sum(w[live] * np.sum(policy[live] * regret, axis=1)))
            played = policy * masks  # the mass of illegal moves ends there: no reward, no successors
            reward_mass, win_mass, c2, w2, c4, w4 = _step_layer(part, w, played, T, spec.p4, rules, score, symmetric)
            value += reward_mass + win_mass
            for child_age, c, cw in ((age + 2, c2, w2), (age + 4, c4, w4)):
                if c.size and cw.any():
                    nz = cw > 0
                    pending.setdefault(child_age, []).append((c[nz], cw[nz]))
        out_ages.append(age)
        visits.append(float(weight[np.concatenate(lives)].sum()) if ids.size else 0)
        gaps.append(gap)
        bar.update()
    bar.close()
    total_gap = float(np.sum(gaps))
    return Evaluation(
        board=spec.board,
        objective=spec.objective,
        value=value,
        optimal_value=oracle.start_value,
        gap=total_gap,
        consistency=abs(oracle.start_value - total_gap - value),
        states=n_states,
        seconds=time.perf_counter() - t0,
        ages=np.array(out_ages),
        visits=np.array(visits),
        gap_by_age=np.array(gaps),
    )
