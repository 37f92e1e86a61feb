"""The oracle's lookup layer: afterstate values of any table, ages opened on demand, batched numba kernels.

Below both :mod:`oracle.oracle` and :mod:`oracle.priced_games`.  A batch of boards is grouped by age (a move keeps the
age, so a board's four afterstates live in its own age's layer) and each group is answered by one kernel call
against that age's layer:

* format v2: the layer's memory-mapped Elias-Fano code and bit-packed values (:mod:`solver.format`), plus an
  in-memory select index of the code's upper bits built when the age is first used;
* format v1: the layer's sorted afterstate IDs and float64 values, read into memory, binary search.

Layers stay open up to a byte budget (least recently used ages are dropped first; a v2 layer's mapped pages are
given back to the kernel with ``madvise(MADV_DONTNEED)``), so a table larger than RAM works.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from pathlib import Path
from typing import NamedTuple

import numba
import numpy as np

from env2048.kernels import canonical_packed
from env2048.rules import FAILURE, ILLEGAL, SUCCESS, move_outcome
from solver.bits import get_field
from solver.format import elias_fano, quantise, ranking
from solver.kernels import TIE_TOLERANCE, ages_of
from solver.threads import block_kernel, run_blocks

#: ``status`` codes of :func:`q_values_block`
OK, NOT_IN_TABLE = 0, 1
#: Fewest boards a thread is given (a smaller batch runs in the calling thread: handing it over costs more).
MIN_BLOCK = 256


def optimal_mask(q: np.ndarray, rel_tol: float = TIE_TOLERANCE, abs_tol: float = 0.0) -> np.ndarray:
    """``bool[..., 4]``: actions whose Q-value is within ``rel_tol * max(1, |best|) + abs_tol`` of the best legal
    one; ``q``: ``float64[..., 4]`` with NaN for illegal moves (all False where no move is legal)."""
    legal = ~np.isnan(q)
    top = np.where(legal, q, -np.inf).max(axis=-1, keepdims=True)
    return legal & (q >= top - rel_tol * np.maximum(1.0, np.abs(top)) - abs_tol)


class Layer(NamedTuple):
    """One age's lookup arrays (kernels take the fields).  ``coded``: v2 fields (``upper``, ``samples``,
    ``lower``, ``n``, ``n_bits``, ``low_bits``, ``words``, ``width``, ``is_float``, ``base``); otherwise v1's
    sorted ``ids`` and ``vals``.  Unused fields are empty."""

    coded: bool
    half_age: int
    upper: np.ndarray
    samples: np.ndarray
    lower: np.ndarray
    n: int
    n_bits: int
    low_bits: int
    words: np.ndarray
    width: int
    is_float: bool
    base: int
    ids: np.ndarray
    vals: np.ndarray

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.upper, self.samples, self.lower, self.words, self.ids, self.vals))


def readonly(a: np.ndarray) -> np.ndarray:
    """A read-only view: every array a kernel gets is read-only, so that each kernel compiles once (memory-mapped
    arrays are read-only, and numba types the two kinds apart)."""
    v = a.view()
    v.setflags(write=False)
    return v


_U64 = readonly(np.zeros(1, np.uint64))
_I64 = readonly(np.zeros(1, np.int64))
_F64 = readonly(np.zeros(0, np.float64))
_NO_IDS = readonly(np.zeros(0, np.uint64))


def empty_layer(age: int) -> Layer:
    """A layer holding nothing (an age absent from the table)."""
    return Layer(False, age // 2, _U64, _I64, _U64, 0, 0, 0, _U64, 0, False, 0, _NO_IDS, _F64)


@numba.njit(cache=True, inline="always")
def layer_value(
    key, coded, P, half_age, shifts, upper, samples, lower, n, n_bits, low_bits, words, width, is_float, base, ids, vals
):
    """Stored value of canonical afterstate ``key`` in one layer, NaN if the layer does not hold it.  ``shifts``:
    the bit shifts of the cells format v2 codes (:class:`solver.ranking.RankShape`)."""
    if n == 0:
        return np.nan
    if coded:
        r = ranking.board_rank(ranking.compress(key, shifts), half_age, P, shifts.shape[0])
        i = elias_fano.ef_find(upper, samples, lower, n, n_bits, low_bits, r)
        if i < 0:
            return np.nan
        return quantise.decode_value(get_field(words, i, width), is_float, base)
    i = np.searchsorted(ids, key)
    if i < n and ids[i] == key:
        return vals[i]
    return np.nan


@numba.njit(cache=True, inline="always")
def _q_one(
    i,
    boards,
    q,
    status,
    rows,
    cols,
    moves,
    sym_lines,
    sym_bytes,
    rules,
    score,
    P,
    shifts,
    coded,
    half_age,
    upper,
    samples,
    lower,
    n,
    n_bits,
    low_bits,
    words,
    width,
    is_float,
    base,
    ids,
    vals,
):
    b = boards[i]
    for a in range(4):
        after, reward, outcome = move_outcome(b, a, rows, cols, moves, rules)
        if outcome == ILLEGAL:
            q[i, a] = np.nan
            continue
        r = float(reward) if score else 0.0
        if outcome == SUCCESS:
            q[i, a] = r + 1.0
            continue
        if outcome == FAILURE:
            q[i, a] = r
            continue
        key = canonical_packed(after, rows, cols, sym_lines, sym_bytes)
        v = layer_value(
            key,
            coded,
            P,
            half_age,
            shifts,
            upper,
            samples,
            lower,
            n,
            n_bits,
            low_bits,
            words,
            width,
            is_float,
            base,
            ids,
            vals,
        )
        if np.isnan(v):
            status[i] = NOT_IN_TABLE
        q[i, a] = r + v


@block_kernel
def q_values_block(
    lo,
    hi,
    sel,
    boards,
    q,
    status,
    rows,
    cols,
    moves,
    sym_lines,
    sym_bytes,
    rules,
    score,
    P,
    shifts,
    coded,
    half_age,
    upper,
    samples,
    lower,
    n,
    n_bits,
    low_bits,
    words,
    width,
    is_float,
    base,
    ids,
    vals,
):
    """Fill ``q[i]`` (``float64[4]``, NaN for illegal moves) and ``status[i]`` for ``i`` in ``sel[lo:hi]``
    (boards of one age, whose layer the remaining arguments describe; see :class:`Layer`).  ``status`` becomes
    NOT_IN_TABLE when a legal move's afterstate is not stored.  ``rules``: the game's (:mod:`env2048.rules`), a
    move that succeeds is worth 1 (plus its reward if ``score``), one that fails 0."""
    for j in range(lo, hi):
        _q_one(
            sel[j],
            boards,
            q,
            status,
            rows,
            cols,
            moves,
            sym_lines,
            sym_bytes,
            rules,
            score,
            P,
            shifts,
            coded,
            half_age,
            upper,
            samples,
            lower,
            n,
            n_bits,
            low_bits,
            words,
            width,
            is_float,
            base,
            ids,
            vals,
        )


@block_kernel
def afterstate_values_block(
    lo,
    hi,
    sel,
    afters,
    out,
    rows,
    cols,
    sym_lines,
    sym_bytes,
    P,
    shifts,
    coded,
    half_age,
    upper,
    samples,
    lower,
    n,
    n_bits,
    low_bits,
    words,
    width,
    is_float,
    base,
    ids,
    vals,
):
    """``out[i]`` = stored value of afterstate ``afters[i]`` (any symmetry), NaN if absent, for ``i`` in
    ``sel[lo:hi]``."""
    for j in range(lo, hi):
        i = sel[j]
        key = canonical_packed(afters[i], rows, cols, sym_lines, sym_bytes)
        out[i] = layer_value(
            key,
            coded,
            P,
            half_age,
            shifts,
            upper,
            samples,
            lower,
            n,
            n_bits,
            low_bits,
            words,
            width,
            is_float,
            base,
            ids,
            vals,
        )


@numba.njit(cache=True)
def group_by_age(ages, n_slots):
    """Counting sort of ``ages // 2`` (all < ``n_slots``): ``(order int64[n], starts int64[n_slots + 1])``."""
    starts = np.zeros(n_slots + 1, np.int64)
    for a in ages:
        starts[a // 2 + 1] += 1
    for k in range(n_slots):
        starts[k + 1] += starts[k]
    fill = starts[:-1].copy()
    order = np.empty(ages.shape[0], np.int64)
    for i in range(ages.shape[0]):
        slot = ages[i] // 2
        order[fill[slot]] = i
        fill[slot] += 1
    return order, starts


def physical_memory() -> int:
    """Bytes of RAM of this machine."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def stored_bytes(path) -> int:
    """Bytes a table takes on disk: its file, or every file of its directory."""
    path = Path(path)
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


class AgeLayers:
    """Layers of one open table, opened on first use and kept up to ``memory_limit`` bytes (LRU).

    ``table``: an open :func:`solver.format.Table` (v1 or v2); ``verify``: check each v2 age's checksums when it
    is first opened.  A v2 table larger than this machine's RAM is mapped for random access (``MADV_RANDOM``; see
    :meth:`solver.format.v2.MappedFile.advise_random`).
    """

    def __init__(self, table, memory_limit: int, verify: bool = False):
        self.table = table
        self.random_access = table.format_version >= 2 and stored_bytes(table.path) > physical_memory()
        self.spec = table.spec
        self.coded = table.format_version >= 2
        self.memory_limit = int(memory_limit)
        self.verify = verify
        self.T = self.spec.tables
        self.rules = self.spec.rules
        self.ages = {int(a) for a in table.ages}
        self.max_age = max(self.ages, default=0)
        shape = self.spec.rank_shape
        self.shifts = readonly(shape.shift_array)
        self.P = readonly(
            ranking.shape_prefix_tables(shape, self.max_age) if self.coded else np.zeros((16, 1, 16, 1), np.uint64)
        )
        self._open: OrderedDict[int, tuple[Layer, object]] = OrderedDict()
        self.resident_bytes = 0
        self.opened = 0

    def layer(self, age: int) -> Layer:
        age = int(age)
        if age not in self.ages:
            return empty_layer(age)
        hit = self._open.get(age)
        if hit is not None:
            self._open.move_to_end(age)
            return hit[0]
        layer, mapping = self._load(age)
        self._open[age] = (layer, mapping)
        self.resident_bytes += layer.nbytes
        self.opened += 1
        while self.resident_bytes > self.memory_limit and len(self._open) > 1:
            self._drop(next(iter(self._open)))
        return layer

    def _load(self, age: int) -> tuple[Layer, object]:
        if not self.coded:
            arrays = self.table.layer(age, names=("afterstates", "afterstate_values"))
            ids, vals = readonly(arrays["afterstates"]), readonly(arrays["afterstate_values"])
            return Layer(False, age // 2, _U64, _I64, _U64, int(ids.size), 0, 0, _U64, 0, False, 0, ids, vals), None
        mapping = self.table.map_age(age)
        if self.random_access:
            mapping.advise_random()
        c = self.table.coded_layer(age, verify=self.verify, mapped=mapping)
        upper, lower, words = readonly(c.upper), readonly(c.lower), readonly(c.values)
        samples = readonly(elias_fano.zero_samples(upper, c.upper_bits))
        layer = Layer(
            True,
            age // 2,
            upper,
            samples,
            lower,
            c.n,
            c.upper_bits,
            c.low_bits,
            words,
            c.value_bits,
            c.value_code == quantise.FLOAT_CODE,
            c.value_base,
            _NO_IDS,
            _F64,
        )
        return layer, mapping

    def _drop(self, age: int) -> None:
        layer, mapping = self._open.pop(age)
        self.resident_bytes -= layer.nbytes
        if mapping is not None:
            mapping.release((layer.upper, layer.lower, layer.words))

    def clear(self) -> None:
        for age in list(self._open):
            self._drop(age)

    # -- batched queries ----------------------------------------------------------------------------------------
    def _groups(self, ids: np.ndarray):
        """``(age, indices int64[k])`` for each age present in the batch (ages beyond the table: empty layers)."""
        ages = ages_of(ids, self.spec.cells) - self.spec.age_offset
        if ages.size == 0:
            return
        n_slots = int(ages.max()) // 2 + 1
        if n_slots > 4 * ids.size + 1024:  # sparse ages (a few huge boards): sort instead of counting
            order = np.argsort(ages, kind="stable")
            cuts = np.flatnonzero(np.diff(ages[order])) + 1
            for part in np.split(order, cuts):
                yield int(ages[part[0]]), part
            return
        order, starts = group_by_age(ages, n_slots)
        for slot in np.flatnonzero(np.diff(starts)):
            yield 2 * int(slot), order[starts[slot] : starts[slot + 1]]

    def _run_by_age(self, ids: np.ndarray, job) -> None:
        """For each age of the batch, ``job(sel, layer)`` gives a ``(kernel, n, args)`` block job; the jobs run in
        parallel blocks (:func:`solver.threads.run_blocks`), all at once unless the layers outgrow the memory
        budget: then the pending ones run before a new layer is loaded, so that their layers stay resident."""
        jobs = []
        for age, sel in self._groups(ids):
            if jobs and age not in self._open and self.resident_bytes >= self.memory_limit:
                run_blocks(jobs, MIN_BLOCK)
                jobs = []
            jobs.append(job(sel, self.layer(age)))
        run_blocks(jobs, MIN_BLOCK)

    def q_values(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(q float64[n, 4], status int8[n])`` of packed boards (see :func:`q_values_block`), on
        ``numba.get_num_threads()`` threads."""
        n = ids.shape[0]
        q = np.full((n, 4), np.nan)
        status = np.zeros(n, np.int8)
        T, rules, score = self.T, self.rules, self.spec.objective == "score"

        def job(sel, L):
            return (
                q_values_block,
                sel.shape[0],
                (
                    sel,
                    ids,
                    q,
                    status,
                    T.rows,
                    T.cols,
                    T.moves,
                    T.sym_lines,
                    T.sym_bytes,
                    rules,
                    score,
                    self.P,
                    self.shifts,
                    L.coded,
                    L.half_age,
                    L.upper,
                    L.samples,
                    L.lower,
                    L.n,
                    L.n_bits,
                    L.low_bits,
                    L.words,
                    L.width,
                    L.is_float,
                    L.base,
                    L.ids,
                    L.vals,
                ),
            )

        self._run_by_age(ids, job)
        return q, status

    def afterstate_values(self, ids: np.ndarray) -> np.ndarray:
        """``float64[n]``: values of packed afterstates (any symmetry), NaN where not stored."""
        out = np.full(ids.shape[0], np.nan)
        T = self.T

        def job(sel, L):
            return (
                afterstate_values_block,
                sel.shape[0],
                (
                    sel,
                    ids,
                    out,
                    T.rows,
                    T.cols,
                    T.sym_lines,
                    T.sym_bytes,
                    self.P,
                    self.shifts,
                    L.coded,
                    L.half_age,
                    L.upper,
                    L.samples,
                    L.lower,
                    L.n,
                    L.n_bits,
                    L.low_bits,
                    L.words,
                    L.width,
                    L.is_float,
                    L.base,
                    L.ids,
                    L.vals,
                ),
            )

        self._run_by_age(ids, job)
        return out
