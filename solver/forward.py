"""Forward pass: enumerate every reachable canonical state and afterstate, age by age.

From the canonical start states: the states of age a (complete once ages a-2 and a-4 are done) -> canonical
afterstates of their legal moves -> spawned states of ages a+2 (a 2) and a+4 (a 4).  Only the pending child runs
of the next two ages are kept in memory; each finished age is handed to ``on_age`` (the build writes it to the
work directory) and then dropped.  Duplicates are removed by sorting per chunk and merging sorted runs.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

import numpy as np
from tqdm.auto import tqdm

from .kernels import ages_of, expand_states, merge_runs, spawn_children
from .spec import SolveSpec
from .workdir import AgeCount

#: Parents handed to one kernel call: bounds the size of the child buffers (``cells * batch`` IDs).
BATCH = 1 << 21
#: Parents per chunk inside a kernel call (one sort per chunk, then a merge of the chunks' runs).
CHUNK = 1 << 15


def n_chunks_for(n: int) -> int:
    return max(1, min(4096, (n + CHUNK - 1) // CHUNK))


def merge_unique(runs: list[np.ndarray]) -> np.ndarray:
    """Union of sorted unique ``uint64`` arrays, sorted and unique."""
    runs = [r for r in runs if r.size]
    if not runs:
        return np.empty(0, np.uint64)
    if len(runs) == 1:
        return runs[0]
    counts = np.array([r.size for r in runs], np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    return merge_runs(np.concatenate(runs), starts, counts)


def canonical_starts(spec: SolveSpec) -> tuple[np.ndarray, np.ndarray]:
    """``(ids uint64[m], probs float64[m])``: canonical start states that occur with positive probability."""
    ids, probs = spec.start_states(canonical_only=True)
    keep = probs > 0
    return ids[keep], probs[keep]


def expand(states: np.ndarray, spec: SolveSpec) -> tuple[np.ndarray, int]:
    """Sorted unique canonical afterstates of ``states`` (wins left out) and the number of terminal states."""
    T = spec.tables
    runs, terminal = [], 0
    for lo in range(0, states.size, BATCH):
        part = states[lo : lo + BATCH]
        buf, starts, counts, dead = expand_states(part, T, spec.cells, spec.rules, n_chunks_for(part.size))
        runs.append(merge_runs(buf, starts, counts))
        terminal += int(dead)
    return merge_unique(runs), terminal


def spawn(
    afterstates: np.ndarray, spec: SolveSpec, two: bool = True, four: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique canonical children of ``afterstates``: ``(tile-2 children, tile-4 children)`` (a kind the
    spec cannot spawn, or not asked for with ``two`` / ``four``, comes back empty)."""
    T = spec.tables
    two, four = two and spec.spawns_two, four and spec.spawns_four
    twos, fours = [], []
    for lo in range(0, afterstates.size, BATCH):
        part = afterstates[lo : lo + BATCH]
        buf2, starts, c2, buf4, c4 = spawn_children(part, T, two, four, n_chunks_for(part.size))
        if two:
            twos.append(merge_runs(buf2, starts, c2))
        if four:
            fours.append(merge_runs(buf4, starts, c4))
    return merge_unique(twos), merge_unique(fours)


class Pending:
    """Child runs waiting for their age to be processed: age -> list of sorted unique arrays."""

    def __init__(self):
        self.runs: dict[int, list[np.ndarray]] = {}

    def add(self, age: int, ids: np.ndarray, after: int | None = None) -> None:
        if ids.size and (after is None or age > after):
            self.runs.setdefault(age, []).append(ids)

    def add_by_age(self, ids: np.ndarray, spec: SolveSpec, after: int | None = None) -> None:
        ages = ages_of(ids, spec.cells) - spec.age_offset
        for age in np.unique(ages):
            self.add(int(age), ids[ages == age], after)

    def add_children(self, age: int, afterstates: np.ndarray, spec: SolveSpec, after: int | None = None) -> None:
        twos, fours = spawn(afterstates, spec)
        self.add(age + 2, twos, after)
        self.add(age + 4, fours, after)

    def pop_next(self) -> tuple[int, np.ndarray]:
        age = min(self.runs)
        return age, merge_unique(self.runs.pop(age))

    def __bool__(self) -> bool:
        return bool(self.runs)


def run_forward(
    spec: SolveSpec,
    on_age: Callable[[AgeCount, np.ndarray, np.ndarray], None] | None = None,
    done: Iterable[AgeCount] = (),
    load_afterstates: Callable[[int], np.ndarray] | None = None,
    max_age: int | None = None,
    progress: bool = True,
) -> list[AgeCount]:
    """Enumerate ages in increasing order up to ``max_age`` (inclusive; None = to the end of the game).

    ``on_age(count, states, afterstates)`` receives each finished age.  To resume, pass the ages already
    finished as ``done`` and ``load_afterstates(age)`` to reload their afterstates: the pending children are
    rebuilt from the last two finished ages.  Returns the counts of every age, resumed ones included.
    """
    counts = list(done)
    pending = Pending()
    starts, _ = canonical_starts(spec)
    last = counts[-1].age if counts else None
    pending.add_by_age(starts, spec, after=last)
    if last is not None:
        for c in counts:
            if c.age >= last - 2:
                pending.add_children(c.age, load_afterstates(c.age), spec, after=last)
    bar = tqdm(desc=f"forward {spec.board}", unit=" ages", disable=not progress, initial=len(counts))
    total_states = sum(c.states + c.afterstates for c in counts)
    t0 = time.perf_counter()
    work = 0
    try:
        while pending:
            age, states = pending.pop_next()
            if max_age is not None and age > max_age:
                break
            afterstates, terminal = expand(states, spec)
            pending.add_children(age, afterstates, spec)
            count = AgeCount(age, int(states.size), int(afterstates.size), terminal)
            if on_age is not None:
                on_age(count, states, afterstates)
            counts.append(count)
            work += count.states + count.afterstates
            total_states += count.states + count.afterstates
            rate = work / max(time.perf_counter() - t0, 1e-9)
            bar.set_postfix_str(f"age {age}, {total_states:,} states+afterstates, {rate:,.0f}/s", refresh=False)
            bar.update()
    finally:
        bar.close()
    return counts
