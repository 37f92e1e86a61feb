"""Material keys of packed boards, and which worker owns each key.

``material_key`` writes the multiset of exponents >= ``low`` of a board as one number: the count of exponent e in
base-17 digit ``e - low`` (a count is at most 16; 13 digits stay below 17**13 < 2**54).

A column too large for one worker is *split* across a group of ``g`` workers: its boards are cut by a hash of the
board into ``g`` parts, whose keys carry the part's number in the top byte (``key | part << PART_SHIFT``; part 0 is
the material key itself, so a column that is never split keeps its key).  Spawns stay in the column but may then
land in another part: the spawning worker hands those children to their part's owner, as it hands off the states
of a key that moved.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numba
import numpy as np

from ..threads import block_kernel, run_parallel

#: ``_DIGIT[low, e]``: what a tile of exponent ``e`` adds to the key of threshold ``low``, 17**(e - low) or 0 below
#: ``low`` (a lookup with no branch: numba's integer power loops, and a branch on every cell's exponent is
#: mispredicted often enough to cost more than the rest of the key).
_DIGIT = np.array([[17 ** (e - low) if e >= low else 0 for e in range(16)] for low in range(16)], np.uint64)
#: ``_PAIR[low, byte]``: the same for the two cells of one byte of a packed board (half the lookups; a row is 2 KiB
#: and stays in the L1 cache).
_PAIR = np.array(
    [[_DIGIT[low, byte & 15] + _DIGIT[low, byte >> 4] for byte in range(256)] for low in range(16)], np.uint64
)
#: Owner of a key the assignment does not hold yet.
UNASSIGNED = -1
#: A part's number sits above the material key's 54 bits.
PART_SHIFT = 56
#: The most parts a column can be split into (the part's number fills the top byte).
MAX_PARTS = 256
_MATERIAL_MASK = np.uint64((1 << PART_SHIFT) - 1)
_HASH = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing: the board's bits spread into the high half


@numba.njit(cache=True, inline="always")
def material_key(b, cells, low):
    """The multiset of exponents >= ``low`` on packed board ``b`` (``uint64``)."""
    key = np.uint64(0)
    for byte in range(cells // 2):
        key += _PAIR[low, (b >> np.uint64(8 * byte)) & np.uint64(255)]
    if cells % 2:
        key += _DIGIT[low, (b >> np.uint64(4 * (cells - 1))) & np.uint64(15)]
    return key


class KeyTable(NamedTuple):
    """An open-addressing hash table from the keys of a sorted ``uint64[k]`` array to their rows: ``keys
    uint64[size]`` and ``rows int64[size]`` (-1: an empty slot), ``shift`` so that ``(key * _HASH) >> shift`` is a
    key's home slot.  At most a quarter full, so that a lookup usually reads one slot: a board's key and owner
    then cost no search of the sorted keys (a binary search's branches are mispredicted on every board)."""

    keys: np.ndarray
    rows: np.ndarray
    shift: np.uint64


@numba.njit(cache=True)
def _fill_key_table(sorted_keys, bits):
    size = 1 << bits
    keys, rows = np.zeros(size, np.uint64), np.full(size, -1, np.int64)
    mask, shift = np.uint64(size - 1), np.uint64(64 - bits)
    for row in range(sorted_keys.shape[0]):
        slot = (sorted_keys[row] * _HASH) >> shift
        while rows[slot] >= 0:
            slot = (slot + np.uint64(1)) & mask
        keys[slot], rows[slot] = sorted_keys[row], row
    return keys, rows


def key_table(sorted_keys: np.ndarray) -> KeyTable:
    """The :class:`KeyTable` of ``sorted_keys`` (``uint64[k]``, unique)."""
    bits = max(4, int(4 * sorted_keys.size - 1).bit_length())
    return KeyTable(*_fill_key_table(np.asarray(sorted_keys, np.uint64), bits), np.uint64(64 - bits))


@numba.njit(cache=True, inline="always")
def row_of(key, keys, rows, shift):
    """The row of ``key`` in a :class:`KeyTable` (``keys``, ``rows``, ``shift``), or -1."""
    mask = np.uint64(keys.shape[0] - 1)
    slot = (key * _HASH) >> shift
    while rows[slot] >= 0:
        if keys[slot] == key:
            return rows[slot]
        slot = (slot + np.uint64(1)) & mask
    return np.int64(-1)


@block_kernel
def _material_keys_block(lo, hi, ids, cells, low, out):
    for i in range(lo, hi):
        out[i] = material_key(ids[i], cells, low)


def material_keys(ids: np.ndarray, cells: int, low: int) -> np.ndarray:
    """``uint64[n]``: :func:`material_key` of every board of ``ids`` (``uint64[n]``), on the solver's threads."""
    out = np.empty(ids.shape[0], np.uint64)
    run_parallel(_material_keys_block, ids.shape[0], ids, cells, low, out, min_block=1 << 16)
    return out


@numba.njit(cache=True, inline="always")
def part_of(b, parts):
    """Which of ``parts`` parts a board ``b`` (``uint64``) of a split column belongs to: a hash, the same in every
    process."""
    return ((b * _HASH) >> np.uint64(32)) % np.uint64(parts)


@numba.njit(cache=True, inline="always")
def part_key(b, cells, low, split, split_parts):
    """The key of packed board ``b``: its material key, with the board's part in the top byte if its column is
    split (``split``: the :class:`KeyTable` of the split columns' keys as ``(keys, rows, shift)``; ``split_parts``,
    ``int64[s]``: how many parts each has, by row)."""
    key = material_key(b, cells, low)
    j = row_of(key, split[0], split[1], split[2])
    if j >= 0:
        key |= part_of(b, split_parts[j]) << np.uint64(PART_SHIFT)
    return key


@numba.njit(cache=True, inline="always")
def owner_of_key(key, table, owners):
    """The owner of ``key`` (``table``: the :class:`KeyTable` of the assigned keys as ``(keys, rows, shift)``,
    ``owners`` ``int64[k]`` by row), or :data:`UNASSIGNED`."""
    j = row_of(key, table[0], table[1], table[2])
    return owners[j] if j >= 0 else UNASSIGNED


@block_kernel
def _part_keys_block(lo, hi, ids, cells, low, split, split_parts, out):
    for i in range(lo, hi):
        out[i] = part_key(ids[i], cells, low, split, split_parts)


@block_kernel
def _owners_of_keys_block(lo, hi, query, table, owners, out):
    for i in range(lo, hi):
        out[i] = owner_of_key(query[i], table, owners)


@block_kernel
def _owners_block(lo, hi, ids, cells, low, split, split_parts, table, owners, out):
    for i in range(lo, hi):
        out[i] = owner_of_key(part_key(ids[i], cells, low, split, split_parts), table, owners)


@block_kernel
def _split_owners_block(lo, hi, ids, cells, low, split, split_parts, table, owners, default, out):
    for i in range(lo, hi):
        b = ids[i]
        key = material_key(b, cells, low)
        j = row_of(key, split[0], split[1], split[2])
        if j >= 0:
            out[i] = owner_of_key(key | part_of(b, split_parts[j]) << np.uint64(PART_SHIFT), table, owners)
        else:
            out[i] = default


def share_evenly(work: int, parts: int) -> list[int]:
    """``work`` shared among ``parts`` parts as the hash shares a column's boards: evenly, part 0 taking the rest."""
    return [work // parts + (work % parts if p == 0 else 0) for p in range(parts)]


def with_states_ahead(key_work: dict[int, int], key_states: dict[int, int], earlier: dict[int, int]) -> dict[int, int]:
    """Each key's work in an age as the driver weighs it: its afterstates of age a (``key_work``) plus a forecast
    of its states of age a + 2, which its owner at a will hold: the afterstates times the key's own ratio of
    states at a (``key_states``) to afterstates at a - 2 (``earlier``), or the whole age's ratio for a key that
    had no afterstates then.  Weighed by afterstates alone, the states end up out of balance (1.12 of an even
    share on 4x3 ``tile:6``; docs/solver-performance.md)."""
    before = sum(earlier.values())
    age_ratio = sum(key_states.values()) / before if before else 1.0
    out = {}
    for key, afterstates in key_work.items():
        ratio = key_states.get(key, 0) / earlier[key] if earlier.get(key) else age_ratio
        out[key] = afterstates + round(afterstates * ratio)
    return out


def material_of(keys) -> np.ndarray:
    """``uint64[n]``: the material key of each (part) key of ``keys``."""
    return np.asarray(keys, np.uint64) & _MATERIAL_MASK


def counts_of(keys: np.ndarray) -> dict[int, int]:
    """``{key: how many times}`` of ``keys`` (``uint64[n]``), in increasing order of key."""
    unique, counts = np.unique(keys, return_counts=True)
    return dict(zip((int(k) for k in unique), (int(c) for c in counts), strict=True))


def key_counts(ids: np.ndarray, cells: int, low: int) -> dict[int, int]:
    """``{material key: number of boards}`` of the boards ``ids`` (``uint64[n]``)."""
    return counts_of(material_keys(ids, cells, low))


class Assignment:
    """Which worker owns each material key: sorted ``keys`` (``uint64[k]``) and ``owners`` (``int64[k]``).

    A key is assigned when it first appears (:meth:`assign`), and may move to another worker at a later age to even
    out that age's work (:meth:`rebalance`); the driver sends both to every worker, which applies them
    (:meth:`apply`).  A column larger than one worker's share of an age is split into parts (:meth:`split`; the
    sorted ``split_keys``, ``uint64[s]``, with ``split_parts``, ``int64[s]``), each part a key of its own from then
    on; a column is split once."""

    def __init__(self, n_workers: int, low: int, keys=None, owners=None, split_keys=None, split_parts=None):
        if n_workers < 1:
            raise ValueError(f"the number of workers must be at least 1, got {n_workers}")
        if low < 3:
            raise ValueError(
                f"the material threshold must be a tile >= 8 (low >= 3; spawns make 2s and 4s), got 2**{low}"
            )
        self.n_workers, self.low = int(n_workers), int(low)
        self.keys = np.asarray(keys if keys is not None else [], np.uint64)
        self.owners = np.asarray(owners if owners is not None else [], np.int64)
        self.split_keys, self.split_parts = np.empty(0, np.uint64), np.empty(0, np.int64)
        self.apply_splits(split_keys if split_keys is not None else [], split_parts if split_parts is not None else [])
        self._tables: dict[str, tuple[np.ndarray, KeyTable]] = {}

    def _table_of(self, name: str) -> KeyTable:
        """The :class:`KeyTable` of the sorted array ``self.<name>``, made again whenever that array is replaced (every
        change of the keys or of the splits replaces it; an owner that moves changes ``owners``, not the rows)."""
        array = getattr(self, name)
        held = self._tables.get(name)
        if held is None or held[0] is not array:
            held = self._tables[name] = array, key_table(array)
        return held[1]

    def _key_table(self) -> KeyTable:
        return self._table_of("keys")

    def _split_table(self) -> KeyTable:
        return self._table_of("split_keys")

    def keys_of(self, ids: np.ndarray, cells: int) -> np.ndarray:
        """``uint64[n]``: the key of each board of ``ids`` (``uint64[n]``): its material key, or its part's key
        if that column is split."""
        ids = np.asarray(ids, np.uint64)
        out = np.empty(ids.shape[0], np.uint64)
        run_parallel(
            _part_keys_block,
            ids.shape[0],
            ids,
            cells,
            self.low,
            self._split_table(),
            self.split_parts,
            out,
            min_block=1 << 16,
        )
        return out

    def parts_of(self, key: int) -> list[int]:
        """Every part's key of the column of ``key`` (the key itself if that column is not split)."""
        material = int(material_of([key])[0])
        j = int(np.searchsorted(self.split_keys, np.uint64(material)))
        if j < self.split_keys.size and int(self.split_keys[j]) == material:
            return [material | p << PART_SHIFT for p in range(int(self.split_parts[j]))]
        return [material]

    def owners_reached(self, keys) -> set[int]:
        """The owners of every part of the columns of ``keys``: where a worker's afterstates of those keys may go,
        as the driver and the worker both reckon it (a column split in this age was expanded as one key)."""
        parts = [p for k in {int(k) for k in material_of(keys)} for p in self.parts_of(k)]
        return {int(o) for o in self.owners_of_keys(parts)}

    def split(self, key_work: dict[int, int], threshold: float) -> tuple[np.ndarray, np.ndarray, dict[int, int]]:
        """Split each column of ``key_work`` (key -> its work in this age) not split yet whose work exceeds
        ``threshold`` times an even share of the age: into one part per worker (at most :data:`MAX_PARTS`).  Part 0
        keeps the column's key and owner; the others are new keys.  Returns the columns split, their parts, and
        ``key_work`` with each split column's work shared evenly among its parts (the estimate :meth:`assign` and
        :meth:`rebalance` weigh this age by).

        Why every worker: a column is split once, and a large one keeps growing for many ages after; cut into
        just enough parts for the age it crossed the threshold, its parts outgrow an even share again (on the
        4x3 histogram at 64 machines, the busiest machine then held 5.9 even shares; split across all, 1.24)."""
        if threshold <= 0:
            raise ValueError(f"the splitting threshold must be > 0 (a multiple of an even share), got {threshold}")
        total = sum(key_work.values())
        even = total / self.n_workers
        split, parts = [], []
        if self.n_workers > 1 and total:
            for key in sorted(key_work):
                whole = key == int(material_of([key])[0]) and len(self.parts_of(key)) == 1
                if whole and key_work[key] > threshold * even:
                    split.append(key)
                    parts.append(min(self.n_workers, MAX_PARTS))
        new = np.array(split, np.uint64), np.array(parts, np.int64)
        self.apply_splits(*new)
        out = dict(key_work)
        for key, n in zip(split, parts, strict=True):
            out.update(zip(self.parts_of(key), share_evenly(out.pop(key), n), strict=True))
        return *new, out

    def apply_splits(self, keys, parts) -> None:
        """Split the columns ``keys`` (material keys, ``uint64[s]``) into ``parts`` (``int64[s]``) parts each."""
        keys, parts = np.asarray(keys, np.uint64), np.asarray(parts, np.int64)
        if not keys.size:
            return
        if np.any((parts < 2) | (parts > MAX_PARTS)):
            raise ValueError(f"a column splits into 2..{MAX_PARTS} parts, got {sorted(set(parts.tolist()))}")
        if np.any(material_of(keys) != keys):
            raise ValueError("only a material key (part 0) can be split")
        joined = np.concatenate([self.split_keys, keys])
        order = np.argsort(joined, kind="stable")
        if np.any(joined[order][1:] == joined[order][:-1]):
            raise ValueError("a column was split twice")
        self.split_keys, self.split_parts = joined[order], np.concatenate([self.split_parts, parts])[order]

    def owners_of_keys(self, keys) -> np.ndarray:
        """``int64[n]``: the owner of each material key of ``keys``; :data:`UNASSIGNED` for a key not assigned."""
        keys = np.asarray(keys, np.uint64)
        out = np.empty(keys.shape, np.int64)
        run_parallel(
            _owners_of_keys_block,
            keys.size,
            keys.reshape(-1),
            self._key_table(),
            self.owners,
            out.reshape(-1),
            min_block=1 << 16,
        )
        return out

    def owners_of(self, ids: np.ndarray, cells: int) -> np.ndarray:
        """``int64[n]``: the owner of each board of ``ids`` (``uint64[n]``); :data:`UNASSIGNED` for a new key."""
        ids = np.asarray(ids, np.uint64)
        out = np.empty(ids.shape[0], np.int64)
        run_parallel(
            _owners_block,
            ids.shape[0],
            ids,
            cells,
            self.low,
            self._split_table(),
            self.split_parts,
            self._key_table(),
            self.owners,
            out,
            min_block=1 << 16,
        )
        return out

    def owners_in_split(self, ids: np.ndarray, cells: int, default: int) -> np.ndarray:
        """``int64[n]``: the owner of each board of ``ids`` (``uint64[n]``) whose column is split, ``default`` for
        the others: :meth:`owners_of` for a worker whose keys did not move, without searching every key."""
        ids = np.asarray(ids, np.uint64)
        out = np.empty(ids.shape[0], np.int64)
        run_parallel(
            _split_owners_block,
            ids.shape[0],
            ids,
            cells,
            self.low,
            self._split_table(),
            self.split_parts,
            self._key_table(),
            self.owners,
            np.int64(default),
            out,
            min_block=1 << 16,
        )
        return out

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
        return Assignment(
            self.n_workers,
            self.low,
            self.keys.copy(),
            self.owners.copy(),
            self.split_keys.copy(),
            self.split_parts.copy(),
        )

    def to_json(self) -> dict:
        return {
            "n_workers": self.n_workers,
            "low": self.low,
            "keys": [str(int(k)) for k in self.keys],
            "owners": [int(o) for o in self.owners],
            "split_keys": [str(int(k)) for k in self.split_keys],
            "split_parts": [int(p) for p in self.split_parts],
        }

    @classmethod
    def from_json(cls, data: dict) -> Assignment:
        return cls(
            data["n_workers"],
            data["low"],
            [int(k) for k in data["keys"]],
            data["owners"],
            [int(k) for k in data.get("split_keys", [])],
            data.get("split_parts", []),
        )


def _uint64s() -> np.ndarray:
    return np.empty(0, np.uint64)


def _int64s() -> np.ndarray:
    return np.empty(0, np.int64)


@dataclass
class Changes:
    """What the driver decided in one age (or several, on resume), for every worker to apply to its assignment: the
    columns split (``split_keys`` ``uint64[s]``, ``split_parts`` ``int64[s]``), then the keys assigned or moved
    (``keys`` ``uint64[k]``, ``owners`` ``int64[k]``; each key once)."""

    keys: np.ndarray = field(default_factory=_uint64s)
    owners: np.ndarray = field(default_factory=_int64s)
    split_keys: np.ndarray = field(default_factory=_uint64s)
    split_parts: np.ndarray = field(default_factory=_int64s)

    def __post_init__(self):
        self.keys, self.owners = np.asarray(self.keys, np.uint64), np.asarray(self.owners, np.int64)
        self.split_keys = np.asarray(self.split_keys, np.uint64)
        self.split_parts = np.asarray(self.split_parts, np.int64)

    def apply_to(self, assignment: Assignment) -> None:
        assignment.apply_splits(self.split_keys, self.split_parts)
        assignment.apply(self.keys, self.owners)
