"""Material keys of packed boards, and which worker owns each key.

``material_key`` writes the multiset of exponents >= ``low`` of a board as one number: the count of exponent e in
base-17 digit ``e - low`` (a count is at most 16; 13 digits stay below 2**64).
"""

from __future__ import annotations

import numba
import numpy as np

_BASE = np.uint64(17)
#: Owner of a key the assignment does not hold yet.
UNASSIGNED = -1


@numba.njit(cache=True, inline="always")
def material_key(b, cells, low):
    """The multiset of exponents >= ``low`` on packed board ``b`` (``uint64``)."""
    key = np.uint64(0)
    for c in range(cells):
        e = int((b >> np.uint64(4 * c)) & np.uint64(15))
        if e >= low:
            key += _BASE ** np.uint64(e - low)
    return key


@numba.njit(cache=True)
def material_keys(ids, cells, low):
    """``uint64[n]``: :func:`material_key` of every board of ``ids`` (``uint64[n]``)."""
    out = np.empty(ids.shape[0], np.uint64)
    for i in range(ids.shape[0]):
        out[i] = material_key(ids[i], cells, low)
    return out


def key_counts(ids: np.ndarray, cells: int, low: int) -> dict[int, int]:
    """``{material key: number of boards}`` of the boards ``ids`` (``uint64[n]``)."""
    keys, counts = np.unique(material_keys(ids, cells, low), return_counts=True)
    return dict(zip((int(k) for k in keys), (int(c) for c in counts), strict=True))


class Assignment:
    """Which worker owns each material key: sorted ``keys`` (``uint64[k]``) and ``owners`` (``int64[k]``).

    A key is assigned when it first appears (:meth:`assign`), and may move to another worker at a later age to even
    out that age's work (:meth:`rebalance`); the driver sends both to every worker, which applies them
    (:meth:`apply`)."""

    def __init__(self, n_workers: int, low: int, keys=None, owners=None):
        if n_workers < 1:
            raise ValueError(f"the number of workers must be at least 1, got {n_workers}")
        if low < 3:
            raise ValueError(f"the material threshold must be a tile >= 8 (low >= 3; spawns make 2s and 4s), got "
                             f"2**{low}")  # fmt: skip
        self.n_workers, self.low = int(n_workers), int(low)
        self.keys = np.asarray(keys if keys is not None else [], np.uint64)
        self.owners = np.asarray(owners if owners is not None else [], np.int64)

    def owners_of_keys(self, keys) -> np.ndarray:
        """``int64[n]``: the owner of each material key of ``keys``; :data:`UNASSIGNED` for a key not assigned."""
        keys = np.asarray(keys, np.uint64)
        out = np.full(keys.shape, UNASSIGNED, np.int64)
        if self.keys.size:
            j = np.minimum(np.searchsorted(self.keys, keys), self.keys.size - 1)
            hit = self.keys[j] == keys
            out[hit] = self.owners[j[hit]]
        return out

    def owners_of(self, ids: np.ndarray, cells: int) -> np.ndarray:
        """``int64[n]``: the owner of each board of ``ids`` (``uint64[n]``); :data:`UNASSIGNED` for a new key."""
        return self.owners_of_keys(material_keys(ids, cells, self.low))

    def assign(self, key_work: dict[int, int]) -> tuple[np.ndarray, np.ndarray]:
        """Give each key of ``key_work`` (key -> its boards in this age) not yet assigned to a worker: largest
        first, each to the worker with the least work in this age so far (the keys it already owns included).
        Deterministic: ties go to the lower key and the lower worker.  Returns the new ``(keys, owners)``."""
        load = np.zeros(self.n_workers, np.int64)
        fresh = []
        for key, owner in zip(key_work, self.owners_of_keys(list(key_work)), strict=True):
            if owner == UNASSIGNED:
                fresh.append(int(key))
            else:
                load[owner] += key_work[key]
        fresh.sort(key=lambda k: (-key_work[k], k))
        chosen = []
        for key in fresh:
            w = int(np.argmin(load))
            load[w] += key_work[key]
            chosen.append(w)
        new = np.array(fresh, np.uint64), np.array(chosen, np.int64)
        self.extend(*new)
        return new

    def rebalance(self, key_work: dict[int, int], tolerance: float) -> tuple[np.ndarray, np.ndarray]:
        """Move keys of this age (``key_work``: key -> its work in this age; every key assigned) from the busiest
        worker to the least busy while the busiest holds more than ``1 + tolerance`` times an even share: each
        time the key whose work is nearest half the gap between the two (and below the gap), at most
        ``4 * n_workers`` moves.  Deterministic.  Returns the moved ``(keys, new owners)``, applied here."""
        if tolerance < 0:
            raise ValueError(f"the rebalancing tolerance must be >= 0, got {tolerance}")
        keys = np.array(sorted(key_work), np.uint64)
        work = np.array([key_work[int(k)] for k in keys], np.int64)
        if np.any(self.owners_of_keys(keys) == UNASSIGNED):
            raise ValueError("rebalance: every key of the age must be assigned first")
        rows = np.searchsorted(self.keys, keys)
        moved: dict[int, int] = {}
        for _ in range(4 * self.n_workers):
            owners = self.owners[rows]
            load = np.bincount(owners, weights=work, minlength=self.n_workers)
            high, low = int(np.argmax(load)), int(np.argmin(load))
            if load[high] <= (1 + tolerance) * load.sum() / self.n_workers:
                break
            gap = load[high] - load[low]
            fits = np.flatnonzero((owners == high) & (work > 0) & (work < gap))
            if not fits.size:
                break
            pick = fits[np.argmin(np.abs(work[fits] - gap / 2))]
            self.owners[rows[pick]] = low
            moved[int(keys[pick])] = low
        return np.array(list(moved), np.uint64), np.array(list(moved.values()), np.int64)

    def apply(self, keys: np.ndarray, owners: np.ndarray) -> None:
        """Give each key of ``keys`` the owner in ``owners``: a new key is added, an assigned one moves."""
        keys, owners = np.asarray(keys, np.uint64), np.asarray(owners, np.int64)
        if not keys.size:
            return
        if np.any((owners < 0) | (owners >= self.n_workers)):
            raise ValueError(f"owners must be workers 0..{self.n_workers - 1}")
        held = self.owners_of_keys(keys) != UNASSIGNED
        if held.any():
            self.owners[np.searchsorted(self.keys, keys[held])] = owners[held]
        self.extend(keys[~held], owners[~held])

    def extend(self, keys: np.ndarray, owners: np.ndarray) -> None:
        """Add keys not assigned yet with their owners."""
        if not len(keys):
            return
        keys = np.concatenate([self.keys, np.asarray(keys, np.uint64)])
        owners = np.concatenate([self.owners, np.asarray(owners, np.int64)])
        order = np.argsort(keys, kind="stable")
        self.keys, self.owners = keys[order], owners[order]
        if np.any(self.keys[1:] == self.keys[:-1]):
            raise ValueError("a material key was assigned twice")

    def copy(self) -> Assignment:
        return Assignment(self.n_workers, self.low, self.keys.copy(), self.owners.copy())

    def to_json(self) -> dict:
        return {"n_workers": self.n_workers, "low": self.low, "keys": [str(int(k)) for k in self.keys],
                "owners": [int(o) for o in self.owners]}  # fmt: skip

    @classmethod
    def from_json(cls, data: dict) -> Assignment:
        return cls(data["n_workers"], data["low"], [int(k) for k in data["keys"]], data["owners"])
