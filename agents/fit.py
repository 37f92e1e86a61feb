"""Supervised fitting of an n-tuple network to given afterstate values (e.g. the optimal ones from a table).

``fit_values(agent, ids, targets)`` runs normalised least-mean-squares SGD on ``(target − V(afterstate))²`` over
shuffled passes (epochs): each step moves V(afterstate) by ``alpha * (target − V)``, the error split over the
weights V sums (a weight that a self-symmetric board reads several times counts that often), so ``alpha = 1``
fits the sample just seen exactly and any ``alpha`` in (0, 1] is stable.  With ``sample_weights``
each epoch instead draws its samples with probability proportional to the weights (with replacement), so the fit
minimises the weighted squared error without steps scaled by tiny weights.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numba
import numpy as np
from tqdm.auto import tqdm

from .ntuple import NTupleAgent, evaluate_afterstate


@numba.njit(cache=True)
def _nlms_step(b, target, alpha, weights, offsets, rows_cells, rows_tuple, layout, slots):
    """Move V(b) by ``alpha * (target − V(b))`` (see the module docstring); returns V(b) before the step.
    ``slots``: scratch ``int64[n_images]``.  The index loop is agents.ntuple's, written out for the same reason."""
    base = layout[0]
    exps = np.empty(16, np.int64)
    age = np.int64(0)
    for c in range(16):
        e = np.int64((b >> np.uint64(4 * c)) & np.uint64(15))
        age += (np.int64(1) << e) if e else 0
        exps[c] = min(e, base - 1)
    at = min(age >> layout[1], layout[2] - 1) * layout[3]
    width = rows_cells.shape[1]
    n = rows_cells.shape[0]
    value = 0.0
    for r in range(n):
        idx = np.int64(0)
        for k in range(width):
            c = rows_cells[r, k]
            if c < 0:
                break
            idx = idx * base + exps[c]
        slots[r] = at + offsets[rows_tuple[r]] + idx
        value += weights[slots[r]]
    norm = 0  # Σ over images of how many images read the same weight = Σ multiplicity²
    for r in range(n):
        for q in range(n):
            norm += slots[q] == slots[r]
    delta = alpha * (target - value) / norm
    for r in range(n):
        weights[slots[r]] += delta
    return value


@numba.njit(cache=True)
def _sgd_pass(ids, targets, order, alpha, weights, offsets, rows_cells, rows_tuple, layout):
    """One step per index of ``order`` (into ``ids uint64[n]`` / ``targets float64[n]``); returns the sum of the
    squared errors seen before each step."""
    sse = 0.0
    slots = np.empty(rows_cells.shape[0], np.int64)
    for j in range(order.shape[0]):
        i = order[j]
        value = _nlms_step(ids[i], targets[i], alpha, weights, offsets, rows_cells, rows_tuple, layout, slots)
        sse += (targets[i] - value) ** 2
    return sse


@numba.njit(cache=True, parallel=True)
def _predict(ids, weights, offsets, rows_cells, rows_tuple, layout):
    out = np.empty(ids.shape[0], np.float64)
    for i in numba.prange(ids.shape[0]):
        out[i] = evaluate_afterstate(ids[i], weights, offsets, rows_cells, rows_tuple, layout)
    return out


@dataclass
class FitEpoch:
    epoch: int
    alpha: float
    train_mse: float  # mean squared error seen during the pass (before each step)
    seconds: float


def predict_values(agent: NTupleAgent, ids: np.ndarray) -> np.ndarray:
    """``float64[n]``: V of packed afterstates ``uint64[n]``."""
    return _predict(np.ascontiguousarray(ids, np.uint64), *agent._args())


def weighted_mse(agent: NTupleAgent, ids, targets, sample_weights=None) -> float:
    """Mean (or ``sample_weights``-weighted mean) squared error of the network on the given afterstates."""
    err = (np.asarray(targets, np.float64) - predict_values(agent, ids)) ** 2
    return float(np.average(err, weights=sample_weights))


def fit_values(
    agent: NTupleAgent,
    ids,
    targets,
    epochs: int = 8,
    alpha: float = 0.5,
    decay: float = 0.6,
    sample_weights=None,
    seed: int = 0,
    progress: bool = True,
    on_epoch=None,
) -> list[FitEpoch]:
    """Fit ``agent``'s weights to ``targets`` (``float64[n]``) on afterstates ``ids`` (``uint64[n]``, packed).

    Epoch ``e`` uses the step size ``alpha * decay**e`` (in (0, 1]: the fraction of the error removed per
    step).  ``sample_weights`` (``float64[n]``, >= 0): draw each epoch's ``n`` samples with these probabilities.
    ``on_epoch(FitEpoch)`` is called after each epoch.  Returns the epochs' records.
    """
    ids = np.ascontiguousarray(ids, np.uint64)
    targets = np.ascontiguousarray(targets, np.float64)
    if ids.shape != targets.shape or ids.ndim != 1:
        raise ValueError(f"ids and targets must be 1-d arrays of one length, got {ids.shape} and {targets.shape}")
    if epochs < 1 or not 0 < alpha <= 1 or not 0 < decay <= 1:
        raise ValueError(f"need epochs >= 1, alpha and decay in (0, 1], got {epochs}, {alpha}, {decay}")
    probs = None
    if sample_weights is not None:
        w = np.asarray(sample_weights, np.float64)
        if w.shape != ids.shape or (w < 0).any() or w.sum() <= 0:
            raise ValueError("sample_weights must be >= 0, not all 0, one per sample")
        probs = w / w.sum()
    rng = np.random.default_rng(seed)
    records = []
    for epoch in tqdm(range(epochs), desc="fit", unit=" epochs", disable=not progress):
        t = time.perf_counter()
        order = rng.permutation(ids.size) if probs is None else rng.choice(ids.size, ids.size, p=probs)
        rate = alpha * decay**epoch
        sse = _sgd_pass(ids, targets, order.astype(np.int64), rate, *agent._args())
        record = FitEpoch(epoch, rate, sse / ids.size, time.perf_counter() - t)
        records.append(record)
        if on_epoch is not None:
            on_epoch(record)
    return records
