"""Imitation of the optimum: states labelled by the oracle's optimal moves, and learners fitted to them.

* :func:`collect_states` plays a policy (the optimal one for behaviour cloning, the learner's own for DAgger) in
  the native vector env and returns the boards it met, labelled by the oracle: legal and optimal moves.
* n-tuple network: :func:`fit_ntuple_actions` makes every optimal move's ``r + V(afterstate)`` exceed every
  other legal move's by a margin (a ranking hinge loss, NLMS steps on the two afterstates of a violated pair).
* torch: :class:`PolicyNet` (an MLP or a small CNN on one-hot boards) trained by cross-entropy toward the set of
  optimal moves (:func:`fit_policy_net`), played by :class:`PolicyNetAgent`.  The net sees every board in its
  canonical orientation and its move is mapped back, so it is symmetric (exact evaluation uses canonical boards).

Arrays: boards as packed ``uint64[n]``; masks ``bool[n, 4]`` (UP, RIGHT, DOWN, LEFT).
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np

from env2048 import board as B
from env2048.engine import onehot
from env2048.kernels import move_packed
from env2048.tables import board_tables
from env2048.vector import Game2048VectorEnv
from oracle.agent import batch_decider

from .base import Agent
from .fit import _nlms_step
from .ntuple import NTupleAgent, evaluate_afterstate


@dataclass
class Labelled:
    """Boards ``uint64[n]`` with their legal moves and the oracle's optimal moves (``bool[n, 4]`` each)."""

    ids: np.ndarray
    legal: np.ndarray
    optimal: np.ndarray

    def __len__(self) -> int:
        return int(self.ids.size)

    def __add__(self, other: Labelled) -> Labelled:
        return Labelled(
            np.concatenate([self.ids, other.ids]),
            np.concatenate([self.legal, other.legal]),
            np.concatenate([self.optimal, other.optimal]),
        )

    def first(self, n: int) -> Labelled:
        return Labelled(self.ids[:n], self.legal[:n], self.optimal[:n])


def label(oracle, ids: np.ndarray) -> Labelled:
    """The oracle's labels of packed boards (each with a legal move)."""
    ids = np.asarray(ids, np.uint64)
    q = oracle.q_values(ids)
    return Labelled(ids, ~np.isnan(q), oracle.optimal_mask(q))


def collect_states(
    oracle, policy, n: int, seed: int, num_envs: int = 8, expert_fraction: float = 0.0, expert=None
) -> tuple[Labelled, int]:
    """Play ``policy`` (any agent) in ``num_envs`` games at once until ``n`` boards with a legal move have been
    met; returns them labelled by the oracle, and the env steps taken.  Few games at once, so that the boards
    come from whole games rather than from the openings of many.  With ``expert_fraction`` β > 0 each move
    is the ``expert``'s with probability β (DAgger's mixture)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    rows, cols = oracle.rows, oracle.cols
    goal = None if oracle.spec.target_exponent is None else 1 << oracle.spec.target_exponent
    env = Game2048VectorEnv(num_envs, rows, cols, p4=oracle.spec.p4, goal_tile=goal)
    decide = batch_decider(policy)
    expert_decide = batch_decider(expert) if expert_fraction > 0 else None
    rng = np.random.default_rng(seed)
    obs, info = env.reset(seed=seed)
    met: list[np.ndarray] = []
    count = steps = 0
    while count < n:
        live = info["action_mask"].any(axis=1)
        actions = np.zeros(num_envs, np.int64)
        if live.any():
            boards, masks = obs[live], info["action_mask"][live]
            chosen = decide(boards, masks)
            if expert_decide is not None:
                mix = rng.random(chosen.size) < expert_fraction
                if mix.any():
                    chosen[mix] = expert_decide(boards[mix], masks[mix])
            actions[live] = chosen
            ids = B.pack(boards)
            met.append(np.atleast_1d(ids))
            count += ids.size
        obs, _, _, _, info = env.step(actions)
        steps += int(live.sum())
    ids = np.concatenate(met)[:n]
    return label(oracle, ids), steps


# -- the n-tuple network --------------------------------------------------------------------------------------
@numba.njit(cache=True)
def _ranking_pass(ids, optimal, order, alpha, margin, T, weights, offsets, rows_cells, rows_tuple, layout):
    """One pass of ranking-hinge steps over ``order``; returns the mean hinge loss seen before the steps.

    For board ``b``: ``best`` = the optimal move the network values most; for each other legal, non-optimal move
    ``a`` with ``margin + Q(a) - Q(best) > 0`` (Q = reward + V(afterstate)), V(after_best) moves up and
    V(after_a) down by ``alpha`` times half the violation each (NLMS steps)."""
    rows, cols, moves = T.rows, T.cols, T.moves
    slots = np.empty(rows_cells.shape[0], np.int64)
    afters = np.zeros(4, np.uint64)
    rewards = np.zeros(4)
    total = 0.0
    for j in range(order.shape[0]):
        i = order[j]
        b = ids[i]
        legal = np.zeros(4, np.bool_)
        best = -1
        best_q = -np.inf
        for a in range(4):
            after, reward = move_packed(b, a, rows, cols, moves)
            if after == b:
                continue
            legal[a] = True
            afters[a] = after
            rewards[a] = reward
            if optimal[i, a]:
                q = reward + evaluate_afterstate(after, weights, offsets, rows_cells, rows_tuple, layout)
                if q > best_q:
                    best, best_q = a, q
        if best < 0:
            continue
        for a in range(4):
            if not legal[a] or optimal[i, a]:
                continue
            v_best = evaluate_afterstate(afters[best], weights, offsets, rows_cells, rows_tuple, layout)
            v_a = evaluate_afterstate(afters[a], weights, offsets, rows_cells, rows_tuple, layout)
            violation = margin + rewards[a] + v_a - rewards[best] - v_best
            if violation <= 0:
                continue
            total += violation
            _nlms_step(
                afters[best], v_best + violation / 2, alpha, weights, offsets, rows_cells, rows_tuple, layout, slots
            )
            _nlms_step(afters[a], v_a - violation / 2, alpha, weights, offsets, rows_cells, rows_tuple, layout, slots)
    return total / max(order.shape[0], 1)


def fit_ntuple_actions(
    agent: NTupleAgent, data: Labelled, epochs: int = 4, alpha: float = 0.5, margin: float = 1.0, seed: int = 0
) -> list[float]:
    """Fit ``agent`` so that its greedy move is optimal on ``data`` (see :func:`_ranking_pass`); ``margin`` in
    value units (points for the score objective).  Returns the mean hinge loss of each epoch."""
    if epochs < 1 or not 0 < alpha <= 1 or margin < 0:
        raise ValueError(f"need epochs >= 1, alpha in (0, 1] and margin >= 0, got {epochs}, {alpha}, {margin}")
    T = board_tables(agent.rows, agent.cols)
    rng = np.random.default_rng(seed)
    losses = []
    for _ in range(epochs):
        order = rng.permutation(len(data)).astype(np.int64)
        losses.append(float(_ranking_pass(data.ids, data.optimal, order, alpha, margin, T, *agent._args())))
    return losses


@numba.njit(cache=True)
def _pair_pass(ids, optimal, worse, order, alpha, margin, T, weights, offsets, rows_cells, rows_tuple, layout):
    """Ranking-hinge steps on (board, worse move) pairs: sample ``i`` is board ``ids[i]`` and its non-optimal
    move ``worse[i]``, pushed below the optimal move the network values most (as in :func:`_ranking_pass`).
    Returns the mean hinge loss seen before the steps."""
    rows, cols, moves = T.rows, T.cols, T.moves
    slots = np.empty(rows_cells.shape[0], np.int64)
    total = 0.0
    for j in range(order.shape[0]):
        i = order[j]
        b = ids[i]
        best_after = np.uint64(0)
        best_reward = 0.0
        best_v = -np.inf
        for a in range(4):
            if not optimal[i, a]:
                continue
            after, reward = move_packed(b, a, rows, cols, moves)
            v = evaluate_afterstate(after, weights, offsets, rows_cells, rows_tuple, layout)
            if reward + v > best_reward + best_v:
                best_after, best_reward, best_v = after, reward, v
        if best_v == -np.inf:
            continue
        after, reward = move_packed(b, worse[i], rows, cols, moves)
        v_a = evaluate_afterstate(after, weights, offsets, rows_cells, rows_tuple, layout)
        violation = margin + reward + v_a - best_reward - best_v
        if violation <= 0:
            continue
        total += violation
        _nlms_step(best_after, best_v + violation / 2, alpha, weights, offsets, rows_cells, rows_tuple, layout, slots)
        _nlms_step(after, v_a - violation / 2, alpha, weights, offsets, rows_cells, rows_tuple, layout, slots)
    return total / max(order.shape[0], 1)


@dataclass
class RankingPairs:
    """Decision-aware training data: pair ``i`` asks that on board ``ids[i]`` (packed ``uint64``) every move of
    ``optimal[i]`` (``bool[4]``) beat the non-optimal legal move ``worse[i]`` (``int8``); ``weight[i]``
    (``float64``) is what getting it wrong costs, e.g. visit probability × (max Q − Q(worse))."""

    ids: np.ndarray
    optimal: np.ndarray
    worse: np.ndarray
    weight: np.ndarray

    def __len__(self) -> int:
        return int(self.ids.size)

    @classmethod
    def from_q(cls, ids: np.ndarray, q: np.ndarray, optimal: np.ndarray, mass: np.ndarray) -> RankingPairs:
        """Every (board, legal non-optimal move) pair of boards ``uint64[n]`` with Q-values ``float64[n, 4]``
        (NaN = illegal), optimal masks ``bool[n, 4]`` and board weights ``float64[n]`` (e.g. visit
        probabilities); each pair weighs ``mass × (max Q − Q(move))``."""
        worse = ~np.isnan(q) & ~optimal
        board, move = np.nonzero(worse)
        gap = np.nanmax(q[board], axis=1) - q[board, move]
        return cls(
            np.ascontiguousarray(ids[board], np.uint64),
            np.ascontiguousarray(optimal[board]),
            move.astype(np.int8),
            mass[board] * gap,
        )

    @classmethod
    def concat(cls, parts: list[RankingPairs]) -> RankingPairs:
        """All pairs of ``parts`` in one set (each array copied once); no parts give an empty set."""
        if not parts:
            return cls(np.zeros(0, np.uint64), np.zeros((0, 4), bool), np.zeros(0, np.int8), np.zeros(0))
        return cls(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("ids", "optimal", "worse", "weight")))

    def __add__(self, other: RankingPairs) -> RankingPairs:
        return RankingPairs.concat([self, other])


def fit_ntuple_pairs(
    agent: NTupleAgent,
    pairs: RankingPairs,
    samples: int,
    epochs: int = 1,
    alpha: float = 0.5,
    margin: float = 1.0,
    seed: int = 0,
) -> list[float]:
    """Decision-aware fit: each epoch draws ``samples`` pairs with probability proportional to their weight (with
    replacement) and takes the ranking-hinge step of :func:`_pair_pass` on each.  Weighted by visit probability ×
    regret, the expected hinge bounds the policy's loss against the optimum (V* − V^π = Σ_s d^π(s) · regret(s,
    π(s)), the performance-difference identity).  Returns the mean hinge loss of each epoch."""
    if epochs < 1 or samples < 1 or not 0 < alpha <= 1 or margin < 0:
        raise ValueError(
            f"need epochs >= 1, samples >= 1, alpha in (0, 1] and margin >= 0, got {epochs}, "
            f"{samples}, {alpha}, {margin}"
        )
    if len(pairs) == 0 or pairs.weight.sum() <= 0:
        raise ValueError("no pair with a positive weight to fit (is the policy already optimal?)")
    T = board_tables(agent.rows, agent.cols)
    rng = np.random.default_rng(seed)
    probs = pairs.weight / pairs.weight.sum()
    worse = pairs.worse.astype(np.int64)
    losses = []
    for _ in range(epochs):
        order = rng.choice(len(pairs), samples, p=probs).astype(np.int64)
        losses.append(float(_pair_pass(pairs.ids, pairs.optimal, worse, order, alpha, margin, T, *agent._args())))
    return losses


# -- torch policy networks ------------------------------------------------------------------------------------
def canonical_frame(ids: np.ndarray, rows: int, cols: int) -> tuple[np.ndarray, np.ndarray]:
    """``(canonical ids uint64[n], symmetry index int64[n])``: the image of each board with the smallest ID
    and the symmetry that gives it (``sym_perm[s]``, first such ``s`` on ties)."""
    T = board_tables(rows, cols)
    grids = B.unpack(np.asarray(ids, np.uint64), rows, cols).reshape(-1, rows * cols)
    images = np.stack([B.pack(grids[:, T.sym_perm[s]].reshape(-1, rows, cols)) for s in range(len(T.sym_perm))])
    images = images.reshape(len(T.sym_perm), -1)
    which = images.argmin(axis=0)
    return images[which, np.arange(images.shape[1])], which


def masks_to_frame(masks: np.ndarray, which: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Move masks ``bool[n, 4]`` of boards into their canonical frames (``which`` from :func:`canonical_frame`):
    move ``a`` on a board is move ``sym_action[s, a]`` on its image ``s``."""
    sym_action = board_tables(rows, cols).sym_action
    out = np.zeros_like(masks)
    n = np.arange(masks.shape[0])
    for a in range(4):
        out[n, sym_action[which, a]] = masks[:, a]
    return out


def action_from_frame(actions: np.ndarray, which: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """Moves chosen on the canonical images back on the boards as given."""
    sym_action = board_tables(rows, cols).sym_action
    inverse = np.argsort(sym_action, axis=1)  # inverse[s, image action] = board action
    return inverse[which, actions]


def make_policy_net(rows: int, cols: int, kind: str = "mlp", hidden: int = 256):
    """``kind`` ``mlp`` (two hidden layers of ``hidden``) or ``cnn`` (two 2x2 convolutions of ``hidden // 4``
    and ``hidden // 2`` channels, then a linear layer): one-hot ``(rows*cols + 2, rows, cols)`` boards -> 4 logits."""
    import torch.nn as nn

    channels = rows * cols + 2
    if kind == "mlp":
        return nn.Sequential(
            nn.Flatten(),
            nn.Linear(channels * rows * cols, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, 4),
        )
    if kind == "cnn":
        c1, c2 = max(8, hidden // 4), max(16, hidden // 2)
        return nn.Sequential(
            nn.Conv2d(channels, c1, 2),
            nn.ReLU(),
            nn.Conv2d(c1, c2, 2, padding=1),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(c2 * rows * cols, 4),
        )
    raise ValueError(f"kind must be 'mlp' or 'cnn', got {kind!r}")


class PolicyNetAgent(Agent):
    """Plays a torch policy net's most probable legal move (deterministic, symmetric: see the module doc)."""

    name = "policy"
    symmetric = True
    deterministic = True
    cheap_to_evaluate = True

    def __init__(self, rows: int, cols: int, kind: str = "mlp", hidden: int = 256, seed: int = 0):
        import torch

        torch.manual_seed(seed)
        self.rows, self.cols, self.kind, self.hidden, self.seed = rows, cols, kind, hidden, seed
        self.channels = rows * cols + 2
        self.net = make_policy_net(rows, cols, kind, hidden)

    def inputs(self, ids: np.ndarray):
        """Float tensor ``(n, channels, rows, cols)`` of canonical boards ``uint64[n]``."""
        import torch

        grids = B.unpack(np.asarray(ids, np.uint64), self.rows, self.cols).reshape(-1, self.rows * self.cols)
        planes = onehot(grids.astype(np.uint8), self.channels).reshape(-1, self.channels, self.rows, self.cols)
        return torch.from_numpy(planes.astype(np.float32))

    def act_batch(self, boards, masks, chunk: int = 1 << 16):
        import torch

        boards = np.asarray(boards, np.uint8).reshape(-1, self.rows, self.cols)
        masks = np.asarray(masks, bool).reshape(-1, 4)
        out = np.zeros(boards.shape[0], np.int64)
        self.net.eval()
        for lo in range(0, boards.shape[0], chunk):
            ids, which = canonical_frame(B.pack(boards[lo : lo + chunk]), self.rows, self.cols)
            legal = masks_to_frame(masks[lo : lo + chunk], which, self.rows, self.cols)
            with torch.no_grad():
                logits = self.net(self.inputs(ids)).numpy()
            chosen = np.where(legal, logits, -np.inf).argmax(axis=1)
            out[lo : lo + chunk] = action_from_frame(chosen, which, self.rows, self.cols)
        return out

    def save(self, path) -> None:
        import torch

        torch.save(
            {
                "state_dict": self.net.state_dict(),
                "rows": self.rows,
                "cols": self.cols,
                "kind": self.kind,
                "hidden": self.hidden,
            },
            str(path),
        )

    @classmethod
    def load(cls, path) -> PolicyNetAgent:
        import torch

        data = torch.load(str(path), map_location="cpu", weights_only=True)
        agent = cls(int(data["rows"]), int(data["cols"]), str(data["kind"]), int(data["hidden"]))
        agent.net.load_state_dict(data["state_dict"])
        return agent


def fit_policy_net(
    agent: PolicyNetAgent, data: Labelled, epochs: int = 5, lr: float = 1e-3, batch: int = 512, seed: int = 0
) -> list[float]:
    """Train by cross-entropy toward the set of optimal moves: loss = −log Σ_{a optimal} softmax(logits over the
    legal moves)_a, on canonical boards.  Returns the mean loss of each epoch."""
    import torch

    if epochs < 1 or lr <= 0 or batch < 1:
        raise ValueError(f"need epochs >= 1, lr > 0 and batch >= 1, got {epochs}, {lr}, {batch}")
    ids, which = canonical_frame(data.ids, agent.rows, agent.cols)
    legal = torch.from_numpy(masks_to_frame(data.legal, which, agent.rows, agent.cols))
    optimal = torch.from_numpy(masks_to_frame(data.optimal, which, agent.rows, agent.cols))
    x = agent.inputs(ids)
    torch.manual_seed(seed)
    opt = torch.optim.Adam(agent.net.parameters(), lr=lr)
    agent.net.train()
    losses = []
    for _ in range(epochs):
        perm = torch.randperm(len(data))
        total = 0.0
        for lo in range(0, len(data), batch):
            idx = perm[lo : lo + batch]
            logits = agent.net(x[idx]).masked_fill(~legal[idx], -1e9)
            log_all = torch.logsumexp(logits, dim=1)
            log_opt = torch.logsumexp(logits.masked_fill(~optimal[idx], -1e9), dim=1)
            loss = (log_all - log_opt).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * idx.numel()
        losses.append(total / len(data))
    return losses
