"""One worker of a build partitioned by material: the boards whose key it owns, and its steps of each age.

The driver calls the steps in order for every age, on every worker, and carries the exchanges between them:

forward, increasing ages::

    expand(age)            -> {"states", "terminal", "key_work": {key: afterstates made}}
    send_crossing(age, new keys, their owners) -> {owner: crossing afterstates (sorted uint64)}
    receive_crossing(age, source, ids)          (from every other worker's send_crossing)
    spawn(age)             -> {"afterstates", "next_age"}

backward, decreasing ages::

    value_afterstates(age) -> {source: values (float64) of the crossing afterstates it sent, in its order}
    receive_values(age, owner, values)          (from every other worker's value_afterstates)
    value_states(age)      -> (afterstates, their values, states, state values) of this worker

Every array a worker holds is its own: states of its keys, the afterstates of its keys, and per other worker the
crossing afterstates sent to or received from it (the IDs, kept from the forward pass so that the backward pass
exchanges values only).
"""

from __future__ import annotations

import numpy as np

from ..backward import solve_states
from ..forward import Pending, expand, merge_unique
from ..shards import lookup_sorted, merge_shards, values_from_children
from ..spec import SolveSpec
from ..value_index import ValueIndex, build_value_index, empty_value_index
from .material import Assignment, material_keys

EMPTY_IDS = np.empty(0, np.uint64)


class CrossingMismatch(RuntimeError):
    """A worker was asked for, or sent, crossing afterstates it does not hold."""


class ColumnWorker:
    """The boards of the material keys that ``index`` owns in ``assignment`` (a copy: the driver sends each new
    key's owner with :meth:`send_crossing`)."""

    def __init__(self, spec: SolveSpec, index: int, assignment: Assignment):
        self.spec, self.index, self.assignment = spec, int(index), assignment
        self.pending = Pending()
        self.states: dict[int, np.ndarray] = {}
        self.afterstates: dict[int, np.ndarray] = {}
        self.sent: dict[int, dict[int, np.ndarray]] = {}
        self.received: dict[int, dict[int, np.ndarray]] = {}
        self._expanded: dict[int, np.ndarray] = {}
        self._own: dict[int, np.ndarray] = {}
        self.state_values: dict[int, np.ndarray] = {}
        self.afterstate_values: dict[int, np.ndarray] = {}
        self.values_in: dict[int, dict[int, np.ndarray]] = {}
        self._window: dict[int, ValueIndex] = {}

    def seed(self, starts: np.ndarray) -> int | None:
        """Take this worker's canonical start states (``uint64``, any ages); returns its first age."""
        owners = self.assignment.owners_of(starts, self.spec.cells)
        if np.any(owners != self.index):
            raise CrossingMismatch(f"worker {self.index} was given start states another worker owns")
        self.pending.add_by_age(starts, self.spec)
        return self.next_age()

    def next_age(self) -> int | None:
        return min(self.pending.runs) if self.pending else None

    # -- forward ------------------------------------------------------------------------------------------------
    def expand(self, age: int) -> dict:
        """Expand this worker's states of ``age`` (none if it has no pending runs of that age)."""
        states = merge_unique(self.pending.runs.pop(age, []))
        afterstates, terminal = expand(states, self.spec)
        self.states[age], self._expanded[age] = states, afterstates
        keys, counts = np.unique(material_keys(afterstates, self.spec.cells, self.assignment.low), return_counts=True)
        return {"states": int(states.size), "terminal": int(terminal),
                "key_work": dict(zip((int(k) for k in keys), (int(c) for c in counts), strict=True))}  # fmt: skip

    def send_crossing(self, age: int, new_keys: np.ndarray, new_owners: np.ndarray) -> dict[int, np.ndarray]:
        """Record the keys assigned in this age; keep the expanded afterstates this worker owns and return the
        others by owner (each sorted)."""
        self.assignment.extend(new_keys, new_owners)
        afterstates = self._expanded.pop(age)
        owners = self.assignment.owners_of(afterstates, self.spec.cells)
        if np.any(owners < 0):
            raise CrossingMismatch(f"age {age}: an afterstate's key has no owner")
        self._own[age] = afterstates[owners == self.index]
        out = {int(w): afterstates[owners == w] for w in np.unique(owners) if w != self.index}
        self.sent[age] = out
        return out

    def receive_crossing(self, age: int, source: int, ids: np.ndarray) -> None:
        self.received.setdefault(age, {})[int(source)] = ids

    def spawn(self, age: int) -> dict:
        """This worker's afterstates of ``age`` (its own and those received), and their children pending."""
        afterstates = merge_unique([self._own.pop(age), *self.received.get(age, {}).values()])
        self.afterstates[age] = afterstates
        self.pending.add_children(age, afterstates, self.spec)
        return {"afterstates": int(afterstates.size), "next_age": self.next_age()}

    # -- backward -----------------------------------------------------------------------------------------------
    def _index(self, age: int) -> ValueIndex:
        if age not in self.state_values:
            return empty_value_index()
        if age not in self._window:
            self._window[age] = build_value_index(self.states[age], self.state_values[age])
        return self._window[age]

    def value_afterstates(self, age: int) -> dict[int, np.ndarray]:
        """Values of this worker's afterstates of ``age`` from its states of ages + 2 and + 4; returns, for each
        worker that sent crossing afterstates here, their values in the order it sent them."""
        afterstates = self.afterstates.get(age, EMPTY_IDS)
        values = values_from_children(self.spec, afterstates, self._index(age + 2), self._index(age + 4))
        self.afterstate_values[age] = values
        out = {}
        for source, ids in self.received.pop(age, {}).items():
            found, missing = lookup_sorted(afterstates, values, ids)
            if missing >= 0:
                raise CrossingMismatch(f"age {age}: worker {source} sent afterstate {int(ids[missing]):#x}, which "
                                       f"worker {self.index} does not hold")  # fmt: skip
            out[source] = found
        return out

    def receive_values(self, age: int, owner: int, values: np.ndarray) -> None:
        sent = self.sent.get(age, {}).get(int(owner), EMPTY_IDS)
        if values.shape != sent.shape:
            raise CrossingMismatch(f"age {age}: {values.size} values from worker {owner} for the {sent.size} "
                                   "crossing afterstates sent to it")  # fmt: skip
        self.values_in.setdefault(age, {})[int(owner)] = values

    def value_states(self, age: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Values of this worker's states of ``age`` from its afterstates' values and the crossing values
        received; returns ``(afterstates, afterstate values, states, state values)`` of the age and forgets what
        no lower age needs."""
        sent, values_in = self.sent.pop(age, {}), self.values_in.pop(age, {})
        if set(sent) != set(values_in):
            raise CrossingMismatch(f"age {age}: values for the crossing afterstates sent to {sorted(set(sent))} "
                                   f"came from {sorted(set(values_in))}")  # fmt: skip
        afterstates, values = self.afterstates.pop(age, EMPTY_IDS), self.afterstate_values.pop(age)
        ids, vals = merge_shards([afterstates, *sent.values()], [values, *(values_in[w] for w in sent)])
        states = self.states.get(age, EMPTY_IDS)
        state_values = solve_states(self.spec, states, ids, vals)[0]
        self.state_values[age] = state_values
        for old in [a for a in self.state_values if a > age + 2]:  # ages a - 2 and a - 4 read only a and a + 2
            del self.state_values[old], self.states[old]
            self._window.pop(old, None)
        return afterstates, values, states, state_values
