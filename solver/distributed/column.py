"""One worker of a build partitioned by material: the boards whose key it owns, and its steps of each age.

The driver calls the steps in order for every age, on every worker, and carries the exchanges between them:

forward, increasing ages::

    expand(age)            -> {"states", "terminal", "key_work": {key: afterstates made}, "key_states": {key: states}}
    send_crossing(age, changes)                 -> {owner: crossing afterstates (sorted)}
                           (changes: the columns split in this age, the keys assigned or moved, their owners)
    receive_crossing(age, source, ids)          (from every other worker's send_crossing)
    spawn_own(age)         (may run while the crossing afterstates travel): the children of its own afterstates
    spawn(age)             -> {"afterstates", "next_age", "handed_off", "busy_s", "first_s"}: the children of the
                              others; the layers are saved on the worker's writer thread while the next age is
                              expanded
    hand_off(age)          -> {owner: its states of age + 2 that this worker holds} (keys moved, columns split)
    receive_handoff(age, source, ids)           (from every other worker's hand_off)
    saved()                (the next expand calls it before it returns): every spawned age's files are written, and
                           the driver journals the age spawned last; after the last age the driver calls it itself

backward, decreasing ages::

    value_crossing(age)    -> {source: values (float64) of the crossing afterstates it sent, in its order}
    receive_values(age, owner, values)          (from every other worker's value_crossing)
    value_rest(age)        (may run while the crossing values travel): the values of its other afterstates
    value_states(age)      -> {"states", "afterstates", "busy_s", "first_s"}; the values are saved
    hand_back(age)         -> {source: values of the states of age that source handed to this worker}
    receive_handback(age, owner, values)        (from every other worker's hand_back)
    write(age, out)        -> the age's table file from every worker's part (one worker per age)

``busy_s`` is the worker's seconds in the age's steps; ``first_s`` those before the exchange every worker waits for
(expand, send_crossing and spawn_own; value_crossing and value_rest).  The steps that may run while an exchange
travels are what a machine does meanwhile, so that on a real network the transfers run under the kernels: the
peers' crossing afterstates are the last ones spawned, and the crossing values the first ones computed.

Every array a worker holds is its own: states of its keys, the afterstates of its keys, and per other worker the
crossing afterstates sent to it or received from it (the IDs, kept from the forward pass so that the backward pass
exchanges values only).  When the driver moves a key to another worker in age a, its afterstates of age a belong to
the new owner (they cross), and so do its states of age a + 2 that the old owner spawned earlier: the old owner
hands them off after its spawn step, and receives their values back once the new owner has valued them (its
afterstates of age a - 2 need them).  Once some column is split, every spawn step hands off the children of age
a + 2 that another part's owner holds, in the same way.  The layers live in the shared work directory, so that a
worker that is replaced, or a build that is resumed, reads them back::

    forward/{age:06d}.w{worker:04d}.states_{upper,lower,code}.npy       the worker's states of the age, Elias-Fano
    forward/{age:06d}.w{worker:04d}.afterstates_{upper,lower,code}.npy  its afterstates (own and received)
    forward/{age:06d}.w{worker:04d}.sent.npy          uint64: crossing afterstates sent, by owner, each sorted
    forward/{age:06d}.w{worker:04d}.sent_counts.npy   int64[workers]: how many went to each owner
    forward/{age:06d}.w{worker:04d}.received.npy      the same for those received, by source
    forward/{age:06d}.w{worker:04d}.received_counts.npy
    backward/{age:06d}.w{worker:04d}.state_values.npy float64, beside the states
    forward/{age:06d}.w{worker:04d}.handoff_sent.npy  uint64: states of the age handed to their keys' new owners
    forward/{age:06d}.w{worker:04d}.handoff_sent_counts.npy      int64[workers]: how many went to each owner
    forward/{age:06d}.w{worker:04d}.handoff_received.npy         the same for those received, by source
    forward/{age:06d}.w{worker:04d}.handoff_received_counts.npy
    backward/{age:06d}.w{worker:04d}.values.npy       float64, beside the afterstates
    backward/{age:06d}.w{worker:04d}.handback{owner:04d}.npy     float64: values of the states handed to owner
"""

from __future__ import annotations

import functools
import time
from pathlib import Path

import numba
import numpy as np

from ..backward import afterstate_values, solve_states
from ..build import HOLD_BYTES, BackgroundWriter, HeldLayers
from ..format import elias_fano, quantise, ranking
from ..format.v2 import CodedLayer, encode_boards, write_age_file
from ..forward import Pending, expand, merge_unique
from ..spec import SolveSpec
from ..value_index import ValueIndex, build_value_index, empty_value_index
from ..workdir import AgeCount, load_array, save_array, work_file
from .lookups import joined_parts, lookup_sorted, merge_parts, positions_in
from .material import Assignment, Changes, counts_of

EMPTY_IDS = np.empty(0, np.uint64)
#: Spawned ages whose layers may wait for the writer thread before a spawn waits for it (memory: each holds its
#: layer's boards, which the worker holds anyway until the next age is expanded).
MAX_SAVING = 2


class CrossingMismatch(RuntimeError):
    """A worker was asked for, or sent, crossing afterstates it does not hold."""


def part_file(work, stage: str, age: int, worker: int, name: str) -> Path:
    return work_file(Path(work), stage, age, f"w{worker:04d}.{name}")


def _by_worker(ids: dict[int, np.ndarray], n_workers: int) -> tuple[np.ndarray, np.ndarray]:
    counts = np.array([ids[w].size if w in ids else 0 for w in range(n_workers)], np.int64)
    joined = np.concatenate([ids[w] for w in range(n_workers) if w in ids]) if ids else EMPTY_IDS
    return joined, counts


def _split_by_worker(joined: np.ndarray, counts: np.ndarray) -> dict[int, np.ndarray]:
    ends = np.cumsum(counts)
    return {w: joined[ends[w] - counts[w] : ends[w]] for w in range(counts.size) if counts[w]}


def _timed(*fields: str):
    """A decorator adding the wall time of ``step(self, age, ...)`` to ``getattr(self, field)[age]`` for each
    field."""

    def decorate(step):
        @functools.wraps(step)
        def timed(self, age, *args):
            start = time.perf_counter()
            try:
                return step(self, age, *args)
            finally:
                took = time.perf_counter() - start
                for field in fields:
                    seconds = getattr(self, field)
                    seconds[age] = seconds.get(age, 0.0) + took

        return timed

    return decorate


#: A step's seconds go to ``self.busy[age]``: what the worker spent on the age.
busy = _timed("busy")
#: A step that may run while an exchange travels: its seconds also go to ``self.under[age]``.
under_exchange = _timed("busy", "under")


class ColumnWorker:
    """The boards of the material keys that ``index`` owns in ``assignment`` (a copy: the driver sends each new
    key's owner with :meth:`send_crossing`), kept in the work directory ``work``.  As the local build does, the
    worker also keeps its first forward layers in memory, up to ``hold_bytes`` (the local build's ``HOLD_BYTES``
    per machine), so that the backward pass does not decode them again."""

    def __init__(self, spec: SolveSpec, index: int, assignment: Assignment, work, hold_bytes: int = HOLD_BYTES):
        self.spec, self.index, self.assignment = spec, int(index), assignment
        self.n_workers, self.work = assignment.n_workers, str(work)
        self.pending = Pending()
        self._handoff_out: dict[int, np.ndarray] = {}
        self._lost_keys = False
        self._states: dict[int, np.ndarray] = {}
        self._expanded: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # age -> afterstates, keys, unique
        self._own: dict[int, np.ndarray] = {}
        self._own_spawned: set[int] = set()  # ages whose own afterstates' children are pending already
        self.sent: dict[int, dict[int, np.ndarray]] = {}
        self.received: dict[int, dict[int, np.ndarray]] = {}
        self._afterstates: dict[int, np.ndarray] = {}
        self._afterstate_values: dict[int, np.ndarray] = {}
        self._crossing_values: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # age -> valued first, their values
        self.values_in: dict[int, dict[int, np.ndarray]] = {}
        self.handoff_in: dict[int, dict[int, np.ndarray]] = {}  # age -> {source: states handed to this worker}
        self._handback_out: dict[int, dict[int, np.ndarray]] = {}
        self._window: dict[int, ValueIndex] = {}
        self._held: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # age -> its states and values, before the index
        self.ages: set[int] = set()
        self.busy: dict[int, float] = {}  # age -> seconds of its steps so far (spawn and value_states report them)
        self.under: dict[int, float] = {}  # age -> seconds of those that may run while an exchange travels
        self.under_items: dict[int, int] = {}  # age -> the afterstates they spawned or valued
        self._background: BackgroundWriter | None = None
        self._closed = False
        self.held = HeldLayers(hold_bytes)  # the first layers spawned, until value_states lets each go

    def _save(self, stage: str, age: int, name: str, array: np.ndarray) -> None:
        save_array(part_file(self.work, stage, age, self.index, name), array)

    def _load(self, stage: str, age: int, name: str, worker: int | None = None) -> np.ndarray:
        return load_array(part_file(self.work, stage, age, self.index if worker is None else worker, name))

    def _save_boards(self, age: int, name: str, boards: np.ndarray) -> None:
        """Sorted canonical boards of one age, Elias-Fano coded as in a v2 table (a fifth of their raw size)."""
        upper, lower, low_bits = encode_boards(age, boards, self.spec)
        self._save("forward", age, f"{name}_upper", upper)
        self._save("forward", age, f"{name}_lower", lower)
        self._save("forward", age, f"{name}_code", np.array([boards.size, low_bits], np.int64))

    def _load_ranks(self, age: int, name: str, worker: int | None = None) -> np.ndarray:
        """The ranks (``uint64[n]``) of saved sorted boards: sorted too, since ranks order boards as their IDs do."""
        n, low_bits = (int(x) for x in self._load("forward", age, f"{name}_code", worker))
        upper = self._load("forward", age, f"{name}_upper", worker)
        return elias_fano.ef_decode(upper, self._load("forward", age, f"{name}_lower", worker), n, low_bits)

    def _load_boards(self, age: int, name: str) -> np.ndarray:
        """This worker's states or afterstates (``name``) of ``age``: held in memory, or decoded."""
        held = self.held.get(age)
        if held is not None:
            return held[0] if name == "states" else held[1]
        return ranking.shape_boards(self.spec.rank_shape, self._load_ranks(age, name), age)

    def seed(self, starts: np.ndarray) -> int | None:
        """Take this worker's canonical start states (``uint64``, any ages); returns its first age."""
        owners = self.assignment.owners_of(starts, self.spec.cells)
        if np.any(owners != self.index):
            raise CrossingMismatch(f"worker {self.index} was given start states another worker owns")
        self.pending.add_by_age(starts, self.spec)
        return self.next_age()

    def resume_forward(self, starts: np.ndarray, finished: list[int], changes: Changes) -> int | None:
        """Continue a forward pass whose ages ``finished`` are journalled (``changes``: the columns they split and
        the keys they assigned or moved): the start states of later ages, and the children of the last two
        finished ages."""
        changes.apply_to(self.assignment)
        last = max(finished)
        owners = self.assignment.owners_of(starts, self.spec.cells)
        self.pending.add_by_age(starts[owners == self.index], self.spec, after=last)
        for age in (a for a in finished if a >= last - 2):
            self.pending.add_children(age, self._load_boards(age, "afterstates"), self.spec, after=last)
        self._take_moved(last + 2, lost_keys=True)  # handed off after spawning the last age (its moves unknown)
        for source in range(self.n_workers):  # every worker saved its hand-off before the last age was journalled
            piece = self._crossing(last + 2, "handoff_sent", source).get(self.index)
            if source != self.index and piece is not None:
                self.receive_handoff(last, source, piece)
        return self.next_age()

    def next_age(self) -> int | None:
        return min(self.pending.runs) if self.pending else None

    # -- forward ------------------------------------------------------------------------------------------------
    @busy
    def expand(self, age: int) -> dict:
        """Expand this worker's states of ``age`` (none if it has no pending runs of that age)."""
        handed = self.handoff_in.pop(age, {})
        joined, counts = _by_worker(handed, self.n_workers)
        self._save("forward", age, "handoff_received", joined)
        self._save("forward", age, "handoff_received_counts", counts)
        states = merge_unique([*self.pending.runs.pop(age, []), *handed.values()])
        afterstates, terminal = expand(states, self.spec)
        keys = self.assignment.keys_of(afterstates, self.spec.cells)
        key_work = counts_of(keys)
        self._states[age], self._expanded[age] = states, (afterstates, keys, np.fromiter(key_work, np.uint64))
        key_states = counts_of(self.assignment.keys_of(states, self.spec.cells))
        self.saved()  # the earlier ages' layers, saved meanwhile on the writer thread: the driver journals them now
        return {"states": int(states.size), "terminal": int(terminal), "key_work": key_work, "key_states": key_states}

    @busy
    def send_crossing(self, age: int, changes: Changes) -> dict[int, np.ndarray]:
        """Record the columns split and the keys assigned or moved in this age (``changes``); keep the expanded
        afterstates this worker owns and return the others by owner (each sorted; an empty array to an owner of a
        part of a column this worker expanded, so that every worker expects exactly those it hears from)."""
        lost = (self.assignment.owners_of_keys(changes.keys) == self.index) & (changes.owners != self.index)
        self._lost_keys = bool(lost.any())  # some of this worker's keys moved away: spawn hands their states off
        changes.apply_to(self.assignment)
        afterstates, keys, expanded_keys = self._expanded.pop(age)
        if changes.split_keys.size:  # expanded before the split: the parts' keys
            keys = self.assignment.keys_of(afterstates, self.spec.cells)
        owners = self.assignment.owners_of_keys(keys)
        if np.any(owners < 0):
            raise CrossingMismatch(f"age {age}: an afterstate's key has no owner")
        targets = self.assignment.owners_reached(expanded_keys) - {self.index}  # by column: a split keeps them
        if not set(np.flatnonzero(np.bincount(owners, minlength=self.n_workers)).tolist()) - {self.index} <= targets:
            raise CrossingMismatch(f"age {age}: worker {self.index} sends afterstates beyond the owners it reckoned")
        self._own[age] = afterstates[owners == self.index]
        out = {w: afterstates[owners == w] for w in sorted(targets)}
        self.sent[age] = out
        return out

    def receive_crossing(self, age: int, source: int, ids: np.ndarray) -> None:
        self.received.setdefault(age, {})[int(source)] = ids

    @under_exchange
    def spawn_own(self, age: int) -> None:
        """The children of the afterstates of ``age`` that this worker made itself and owns: the work it can do
        while the crossing afterstates from its peers are on their way."""
        if age not in self._own_spawned:
            self.pending.add_children(age, self._own[age], self.spec)
            self._own_spawned.add(age)
            self.under_items[age] = int(self._own[age].size)

    def spawn(self, age: int) -> dict:
        """This worker's afterstates of ``age`` (its own and those received) and their children pending (those of
        its own ones already, if :meth:`spawn_own` ran); the layers are saved with the crossing afterstates on the
        worker's writer thread (:meth:`saved` waits for them)."""
        self.spawn_own(age)
        start = time.perf_counter()
        received = self.received.pop(age, {})
        own = self._own.pop(age)
        self._own_spawned.discard(age)
        afterstates = merge_unique([own, *received.values()])
        states, sent = self._states.pop(age), self.sent.pop(age, {})
        self.held.hold(age, states, afterstates)  # while its saving is under way on the writer thread
        if afterstates.size > own.size:  # those received that this worker did not make too
            self.pending.add_children(age, afterstates[positions_in(own, afterstates) < 0], self.spec)
        next_age = self.next_age()  # before the hand-off: some worker holds those states either way
        moving = self._lost_keys or self.assignment.split_keys.size  # some children may belong to another worker
        self._handoff_out = self._take_moved(age + 2, self._lost_keys) if moving else {}
        handed = int(sum(ids.size for ids in self._handoff_out.values()))
        self._writer().submit(self._save_spawned, age, states, afterstates, sent, received, self._handoff_out)
        return {
            "afterstates": int(afterstates.size),
            "next_age": next_age,
            "handed_off": handed,
            **self._seconds(age, start),
        }

    def _save_spawned(self, age, states, afterstates, sent, received, handoff) -> None:
        """Everything :meth:`spawn` made that a resumed build or the backward pass reads from the work directory."""
        self._save_boards(age, "states", states)
        self._save_boards(age, "afterstates", afterstates)
        for name, pieces, at in (("sent", sent, age), ("received", received, age), ("handoff_sent", handoff, age + 2)):
            joined, counts = _by_worker(pieces, self.n_workers)
            self._save("forward", at, name, joined)
            self._save("forward", at, f"{name}_counts", counts)

    def _writer(self) -> BackgroundWriter:
        """The thread that codes and saves the forward layers while the worker goes on (as the local build's writer
        does), with the kernel threads of the step that first needs it."""
        if self._closed:
            raise RuntimeError(f"worker {self.index} was closed: its build attempt is over")
        if self._background is None:
            self._background = BackgroundWriter(MAX_SAVING, numba.get_num_threads())
        return self._background

    def saved(self) -> None:
        """Wait until every layer spawned so far is saved (re-raising a failed save): the driver journals an age
        only after this."""
        if self._background is not None:
            self._background.drain()

    def close(self) -> None:
        """Finish the saves under way and stop the writer thread: at the end of the forward pass, or when the worker
        is replaced after a reset (its saves must not race the new worker's saves of the same files)."""
        self._closed = True
        if self._background is not None:
            try:
                self._background.drain()
            finally:
                self._background.close()
                self._background = None

    def _seconds(self, age: int, start: float) -> dict[str, float]:
        """The seconds of ``age``'s steps: before the exchange (``first_s``) and in all (``busy_s``), the last step
        having started at ``start`` (``time.perf_counter()``); and those of the steps that may run while an
        exchange travels (``under_s``) with the afterstates they spawned or valued (``under_items``)."""
        first = self.busy.pop(age, 0.0)
        return {
            "busy_s": first + time.perf_counter() - start,
            "first_s": first,
            "under_s": self.under.pop(age, 0.0),
            "under_items": self.under_items.pop(age, 0),
        }

    def _take_moved(self, age: int, lost_keys: bool) -> dict[int, np.ndarray]:
        """Take this worker's pending states of ``age`` whose keys other workers own now: ``{owner: sorted ids}``.
        Unless some of its keys moved away in this age (``lost_keys``), only the states of split columns can."""
        runs = self.pending.runs.pop(age, [])
        if not runs:
            return {}
        states = merge_unique(runs)
        if lost_keys:
            owners = self.assignment.owners_of(states, self.spec.cells)
        else:
            owners = self.assignment.owners_in_split(states, self.spec.cells, self.index)
        if np.any(owners < 0):
            raise CrossingMismatch(f"age {age}: a pending state's key has no owner")
        mine = owners == self.index
        if mine.all():  # the usual case: nothing to copy
            self.pending.runs[age] = [states]
            return {}
        if mine.any():
            self.pending.runs[age] = [states[mine]]
        return {int(w): states[owners == w] for w in np.flatnonzero(np.bincount(owners[~mine]))}

    def hand_off(self, age: int) -> dict[int, np.ndarray]:
        """The states of ``age + 2`` that :meth:`spawn` took from this worker (their keys moved): ``{owner: ids}``."""
        out, self._handoff_out = self._handoff_out, {}
        return out

    def receive_handoff(self, age: int, source: int, ids: np.ndarray) -> None:
        """States of ``age + 2`` whose keys this worker owns now, from the worker that spawned them."""
        self.handoff_in.setdefault(age + 2, {})[int(source)] = ids

    # -- backward -----------------------------------------------------------------------------------------------
    def _crossing(self, age: int, name: str, worker: int | None = None) -> dict[int, np.ndarray]:
        """A saved exchange of ``age`` (``name``: sent, received, handoff_sent, handoff_received) by peer."""
        return _split_by_worker(
            self._load("forward", age, name, worker), self._load("forward", age, f"{name}_counts", worker)
        )

    def begin_backward(self, ages) -> None:
        """The ages of the game (the forward pass's), before the first backward step."""
        self.ages = {int(a) for a in ages}

    def _handed_off(self, age: int) -> dict[int, np.ndarray]:
        """The states of ``age`` this worker handed off, by owner (none at the first age: no spawn made them)."""
        return self._crossing(age, "handoff_sent") if age - 2 in self.ages else {}

    def _index(self, age: int) -> ValueIndex:
        """The value index of this worker's states of a solved ``age`` (empty past the last age)."""
        if age not in self.ages:
            return empty_value_index()
        if age not in self._window:
            held = self._held.pop(age, None)  # valued here, waiting for the values handed back
            if held is None:
                held = self._load_boards(age, "states"), self._load("backward", age, "state_values")
            ids, values = [held[0]], [held[1]]
            for owner, handed in self._handed_off(age).items():
                ids.append(handed)
                values.append(self._load("backward", age, f"handback{owner:04d}"))
                if values[-1].shape != handed.shape:
                    raise CrossingMismatch(
                        f"age {age}: {values[-1].size} values from worker {owner} for the "
                        f"{handed.size} states handed to it"
                    )
            self._window[age] = build_value_index(*joined_parts(ids, values))
        return self._window[age]

    @busy
    def value_crossing(self, age: int) -> dict[int, np.ndarray]:
        """Values of the crossing afterstates of ``age`` that peers sent this worker, from its states of ages + 2 and
        + 4, first (the peers wait for them); returns, for each worker that sent some, their values in the order
        it sent them.  :meth:`value_rest` values the others while these travel."""
        asked = self._crossing(age, "received")
        crossing = merge_unique(list(asked.values()))
        values = self._afterstate_values_of(age, crossing)
        self._crossing_values[age] = crossing, values
        return {source: lookup_sorted(crossing, values, ids)[0] for source, ids in asked.items()}

    @under_exchange
    def value_rest(self, age: int) -> None:
        """Values of all of this worker's afterstates of ``age``: those of :meth:`value_crossing` placed, the others
        computed."""
        afterstates = self._load_boards(age, "afterstates")
        crossing, crossing_values = self._crossing_values.pop(age)
        at = positions_in(afterstates, crossing)
        if np.any(at < 0):
            missing = int(crossing[np.argmax(at < 0)])
            raise CrossingMismatch(
                f"age {age}: a peer sent afterstate {missing:#x}, which worker {self.index} does not hold"
            )
        values = np.empty(afterstates.size, np.float64)
        values[at] = crossing_values
        rest = np.ones(afterstates.size, np.bool_)
        rest[at] = False
        values[rest] = self._afterstate_values_of(age, afterstates[rest])
        self.under_items[age] = int(afterstates.size - crossing.size)
        self._afterstates[age], self._afterstate_values[age] = afterstates, values

    def _afterstate_values_of(self, age: int, afterstates: np.ndarray) -> np.ndarray:
        if not afterstates.size:
            return np.empty(0, np.float64)
        return afterstate_values(self.spec, afterstates, self._index(age + 2), self._index(age + 4))

    def _answer(self, age: int, name: str, ids: np.ndarray, values: np.ndarray, what: str) -> dict[int, np.ndarray]:
        """For each peer of the saved exchange ``name`` of ``age``, the values (``float64``) of the boards it gave
        this worker, in its order, from this worker's sorted ``ids`` and their ``values``."""
        out = {}
        for source, asked in self._crossing(age, name).items():
            found, missing = lookup_sorted(ids, values, asked)
            if missing >= 0:
                raise CrossingMismatch(
                    f"age {age}: worker {source} {what} {int(asked[missing]):#x}, which worker "
                    f"{self.index} does not hold"
                )
            out[source] = found
        return out

    def expected_values(self, age: int) -> list[int]:
        """The workers that owe this one the values of crossing afterstates of ``age``."""
        return sorted(self._crossing(age, "sent"))

    def receive_values(self, age: int, owner: int, values: np.ndarray) -> None:
        self.values_in.setdefault(age, {})[int(owner)] = values

    def value_states(self, age: int) -> dict:
        """Values of this worker's states of ``age`` from its afterstates' values and the crossing values
        received, saved with the afterstates' values."""
        start = time.perf_counter()
        sent, values_in = self._crossing(age, "sent"), self.values_in.pop(age, {})
        if set(sent) != set(values_in):
            raise CrossingMismatch(
                f"age {age}: values for the crossing afterstates sent to {sorted(set(sent))} "
                f"came from {sorted(set(values_in))}"
            )
        for owner, ids in sent.items():
            if values_in[owner].shape != ids.shape:
                raise CrossingMismatch(
                    f"age {age}: {values_in[owner].size} values from worker {owner} for the "
                    f"{ids.size} crossing afterstates sent to it"
                )
        afterstates, values = self._afterstates.pop(age), self._afterstate_values.pop(age)
        ids, vals = joined_parts([afterstates, *sent.values()], [values, *(values_in[w] for w in sent)])
        states = self._load_boards(age, "states")
        self.held.release(age)  # no later step reads them from here
        state_values = solve_states(self.spec, states, ids, vals)[0]
        self._save("backward", age, "values", values)
        self._save("backward", age, "state_values", state_values)
        for old in [a for a in self._window if a > age + 2]:  # ages a - 2 and a - 4 read only a and a + 2
            del self._window[old]
        for old in [a for a in self._held if a > age + 2]:
            del self._held[old]
        self._handback_out[age] = self._answer(age, "handoff_received", states, state_values, "handed off state")
        if self._handed_off(age):  # its index waits for the values handed back
            self._held[age] = states, state_values
        else:
            self._window[age] = build_value_index(states, state_values)
        return {
            "states": int(states.size),
            "afterstates": int(afterstates.size),
            **self._seconds(age, start),
        }

    def hand_back(self, age: int) -> dict[int, np.ndarray]:
        """For each worker that handed this one states of ``age``, their values, in the order it sent them."""
        return self._handback_out.pop(age, {})

    def receive_handback(self, age: int, owner: int, values: np.ndarray) -> None:
        """Values of the states of ``age`` this worker handed to ``owner``, saved for :meth:`_index`."""
        self._save("backward", age, f"handback{int(owner):04d}", values)

    def write(self, count: AgeCount, out) -> dict:
        """Code and write the table file of ``count.age`` from every worker's afterstates and values ->
        ``{"id_bytes", "value_bytes"}``."""
        age = count.age
        workers = range(self.n_workers)
        # merged and coded as ranks: no board is unranked and ranked again (the local build reuses its forward code)
        ranks, values = merge_parts(
            [self._load_ranks(age, "afterstates", w) for w in workers],
            [self._load("backward", age, "values", w) for w in workers],
        )
        upper, lower, low_bits = elias_fano.ef_encode(ranks, ranking.shape_universe(self.spec.rank_shape, age))
        layer = CodedLayer.encode(
            count, self.spec, upper, lower, low_bits, values, quantise.value_code_for(self.spec.objective)
        )
        write_age_file(Path(out), layer)
        return {"id_bytes": int(layer.id_bytes), "value_bytes": int(layer.values.nbytes)}

    def start_values(self, age: int) -> tuple[np.ndarray, np.ndarray]:
        """This worker's states of ``age`` and their values (for the start states)."""
        return self._load_boards(age, "states"), self._load("backward", age, "state_values")
