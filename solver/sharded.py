"""A build cut into shards (:mod:`solver.shards`) and run by an engine: Ray (:mod:`solver.ray_engine`) on a
cluster, or :class:`InProcess` (the same steps one after the other, for tests and debugging).

The driver submits one task per shard and step and passes the tasks' outputs (object references on Ray) from
step to step; it never holds a large layer itself.  Ages stay the unit of progress: an age is journalled in the
work directory once every shard has written its part, and a build that stops resumes from the last journalled
age.

Work directory (on storage every worker can reach; see :mod:`solver.workdir` for the journal)::

    forward/{age:06d}.s{shard:04d}.ids_upper.npy     the shard's afterstates, Elias-Fano coded as in format v2
    forward/{age:06d}.s{shard:04d}.ids_lower.npy
    forward/{age:06d}.s{shard:04d}.states_upper.npy  the shard's states, coded the same way
    forward/{age:06d}.s{shard:04d}.states_lower.npy
    backward/{age:06d}.s{shard:04d}.state_values.npy the shard's float64 state values

The backward pass deletes what no lower age reads (:meth:`ShardedBuild.discard_finished`): the work directory
keeps the forward layers of the ages not yet solved, and the states and state values of the two lowest solved
ages (where a resumed pass starts) and of the start ages.

The table is a v2 directory whose age files the workers write (:func:`task_write`); the driver writes the
manifest last.  Every value comes from the same kernels as in the one-process build, so the table's datasets
have the same checksums as a local build's, whatever the number of shards.
"""

from __future__ import annotations

import os
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from . import codec
from .build import BuildReport, run_directory_build
from .common import SOLVER_VERSION
from .forward import canonical_starts, spawn
from .shards import (
    afterstate_values_from,
    children_requests,
    expand_shard,
    lookup_shard,
    merge_shards,
    move_requests,
    solve_whole,
    spawn_shard,
    split,
    state_values_from,
)
from .spec import SolveSpec
from .table_v2 import CodedLayer, TableWriterV2, decode_boards, encode_boards, write_age_file
from .workdir import AgeCount, WorkDir, load_array, save_array, work_file

#: Raw forward layers (states and afterstates) kept in the engine's memory (object store) for the backward pass;
#: beyond this the backward tasks decode them from the work directory.
HOLD_BYTES = 1 << 30
#: An age is cut into shards when the age six below it has at least this many afterstates (see
#: :class:`ShardedBuild`).
SHARD_MIN = 1 << 18
#: Backward ages whose request steps are submitted ahead of the age being solved (they need forward data only).
LOOKAHEAD = 2
#: Backward ages submitted but not yet journalled before the driver waits for the oldest.
MAX_INFLIGHT = 6


@dataclass(frozen=True)
class ShardFile:
    """One shard's array in the work directory, loaded by the task that needs it: ``kind`` is ``afterstates`` or
    ``states`` (a coded forward layer, decoded to sorted ``uint64[n]``) or ``state_values`` (``float64[n]``)."""

    work: str
    kind: str
    age: int
    shard: int
    n: int

    def load(self, spec: SolveSpec) -> np.ndarray:
        if self.kind == "state_values":
            return load_array(shard_file(self.work, "backward", self.age, self.shard, "state_values"))
        prefix = "ids" if self.kind == "afterstates" else "states"
        upper = load_array(shard_file(self.work, "forward", self.age, self.shard, f"{prefix}_upper"))
        lower = load_array(shard_file(self.work, "forward", self.age, self.shard, f"{prefix}_lower"))
        low_bits = codec.low_bits_for(self.n, codec.shape_universe(spec.rank_shape, self.age))
        return decode_boards(self.age, upper, lower, self.n, low_bits, spec)


def shard_file(work, stage: str, age: int, shard: int, name: str) -> Path:
    return work_file(Path(work), stage, age, f"s{shard:04d}.{name}")


def _array(x, spec: SolveSpec) -> np.ndarray:
    return x.load(spec) if isinstance(x, ShardFile) else x


def _arrays(items, spec: SolveSpec) -> list[np.ndarray]:
    return [_array(x, spec) for x in items]


def _save_coded(work: str, age: int, shard: int, prefix: str, boards: np.ndarray, spec: SolveSpec) -> None:
    """Canonical boards of one age (states or afterstates), Elias-Fano coded like a v2 table's IDs."""
    upper, lower, _ = encode_boards(age, boards, spec)
    save_array(shard_file(work, "forward", age, shard, f"{prefix}_upper"), upper)
    save_array(shard_file(work, "forward", age, shard, f"{prefix}_lower"), lower)


def _cut(items, sizes):
    """``items`` cut into consecutive lists of the given sizes."""
    out, at = [], 0
    for size in sizes:
        out.append(list(items[at : at + size]))
        at += size
    return out


# -- tasks: flat signatures (an engine resolves top-level references), tuples out ---------------------------
def task_expand(spec: SolveSpec, n: int, work: str, age: int, shard: int, *pieces):
    """States of one shard (saved, coded) -> ``(meta, states, afterstate piece for each of the n shards...)``."""
    states, terminal, after_pieces = expand_shard(spec, n, pieces)
    _save_coded(work, age, shard, "states", states, spec)
    return ({"states": int(states.size), "terminal": terminal}, states, *after_pieces)


def _spawn_outputs(spec: SolveSpec, work: str, age: int, shard: int, shards_next, pieces, meta: dict):
    afterstates, twos, fours = spawn_shard(spec, shards_next, pieces)
    _save_coded(work, age, shard, "ids", afterstates, spec)
    meta.update(afterstates=int(afterstates.size), twos=sum(int(p.size) for p in twos),
                fours=sum(int(p.size) for p in fours))  # fmt: skip
    return (meta, afterstates, *twos, *fours)


def task_spawn(spec: SolveSpec, shards_next: tuple[int, int], work: str, age: int, shard: int, *pieces):
    """Afterstates of one shard (saved, coded) -> ``(meta, afterstates, two-tile pieces, four-tile pieces)``."""
    return _spawn_outputs(spec, work, age, shard, shards_next, pieces, {})


def task_forward_whole(spec: SolveSpec, shards_next: tuple[int, int], work: str, age: int, *pieces):
    """An age held by one shard: :func:`task_expand` then :func:`task_spawn` in one task
    -> ``(meta, afterstates, two-tile pieces, four-tile pieces, states)``."""
    meta, states, afterstates = task_expand(spec, 1, work, age, 0, *pieces)
    return (*_spawn_outputs(spec, work, age, 0, shards_next, [afterstates], meta), states)


def task_respawn(spec: SolveSpec, shards_next: tuple[int, int], source: ShardFile):
    """A finished age's children again (resuming the forward pass) -> ``(meta, two pieces..., four pieces...)``."""
    twos, fours = spawn(source.load(spec), spec)
    return ({"twos": int(twos.size), "fours": int(fours.size)}, *split(twos, shards_next[0]),
            *split(fours, shards_next[1]))  # fmt: skip


def task_load(spec: SolveSpec, source: ShardFile):
    """A layer of one shard from the work directory, decoded once for every task of the age that reads it."""
    return (source.load(spec),)


def task_children_requests(spec: SolveSpec, shards_next: tuple[int, int], afterstates):
    """-> ``(requests to the state shards of age + 2..., to those of age + 4...)``."""
    req2, req4 = children_requests(spec, shards_next, _array(afterstates, spec))
    return (*req2, *req4)


def task_move_requests(spec: SolveSpec, n: int, states):
    """-> ``(requests to the n afterstate shards of the age..., the states' moves)``."""
    requests, moves = move_requests(spec, n, _array(states, spec))
    return (*requests, moves)


def task_lookup(spec: SolveSpec, ids, values, *requests):
    """-> one answer (``float64``) per request."""
    return tuple(lookup_shard(_array(ids, spec), _array(values, spec), requests))


def task_afterstate_values(spec: SolveSpec, shards_next: tuple[int, int], afterstates, *exchange):
    """``exchange``: the requests to the state shards of age + 2, their answers, the same for age + 4
    -> ``(values,)``."""
    r2, a2, r4, a4 = _cut(exchange, (shards_next[0], shards_next[0], shards_next[1], shards_next[1]))
    return (afterstate_values_from(spec, _array(afterstates, spec), r2, a2, r4, a4),)


def task_state_values(spec: SolveSpec, n: int, work: str, age: int, shard: int, moves, *exchange):
    """``moves``: the shard's states' moves (from :func:`task_move_requests`); ``exchange``: the requests to the
    age's n afterstate shards, then their answers.  Saves the values -> ``(state values,)``."""
    values = state_values_from(moves, exchange[:n], exchange[n:])
    save_array(shard_file(work, "backward", age, shard, "state_values"), values)
    return (values,)


def _write(spec: SolveSpec, out: str, count: AgeCount, afterstates, values, work: str | None = None) -> dict:
    """Codes and writes one age's table file; with ``work``, the age has one shard whose forward code (in the
    work directory) is already the age's."""
    ids, vals = merge_shards(afterstates, values)
    if work is None:
        upper, lower, low_bits = encode_boards(count.age, ids, spec)
    else:
        upper = load_array(shard_file(work, "forward", count.age, 0, "ids_upper"))
        lower = load_array(shard_file(work, "forward", count.age, 0, "ids_lower"))
        low_bits = codec.low_bits_for(count.afterstates, codec.shape_universe(spec.rank_shape, count.age))
    layer = CodedLayer.encode(count, spec, upper, lower, low_bits, vals, codec.value_code_for(spec.objective))
    write_age_file(Path(out), layer)
    return {"id_bytes": int(layer.id_bytes), "value_bytes": int(layer.values.nbytes),
            "value_bits": int(layer.value_bits), "value_base": int(layer.value_base)}  # fmt: skip


def task_write(spec: SolveSpec, out: str, count: AgeCount, n: int, *shards):
    """Codes one age from its ``n`` shards' afterstates then values and writes ``OUT/ages/{age}.h5``
    -> ``(meta,)`` with the bytes and the value code."""
    return (_write(spec, out, count, _arrays(shards[:n], spec), _arrays(shards[n:], spec)),)


def task_solve_whole(spec: SolveSpec, shards_next: tuple[int, int], work: str, out: str, count: AgeCount,
                     afterstates, states, *next_layers):  # fmt: skip
    """An age held by one shard, from the whole state layers above it (``next_layers``: the states of age + 2's
    shards, their values, then the same for age + 4).  Saves the state values and writes the age's table file
    -> ``(state values, meta)``."""
    n2, n4 = shards_next
    s2, v2, s4, v4 = (_arrays(part, spec) for part in _cut(next_layers, (n2, n2, n4, n4)))
    afterstates = _array(afterstates, spec)
    values, state_values = solve_whole(spec, afterstates, _array(states, spec), merge_shards(s2, v2),
                                       merge_shards(s4, v4))  # fmt: skip
    save_array(shard_file(work, "backward", count.age, 0, "state_values"), state_values)
    return state_values, _write(spec, out, count, [afterstates], [values], work)


class InProcess:
    """An engine that runs each task at once in this process (``submit`` returns the outputs themselves)."""

    def submit(self, fn, *args, num_returns: int = 1, whole: bool = False) -> list:
        out = fn(*args)
        assert len(out) == num_returns, (fn.__name__, len(out), num_returns)
        return list(out)

    def get(self, refs):
        return refs

    def ready(self, ref) -> bool:
        return True

    def cpus(self) -> int:
        return 1


# -- the driver -------------------------------------------------------------------------------------------------
class ShardedBuild:
    """Drives one sharded build; see the module docstring.  Use :func:`build_sharded`.

    Small ages cost more in task overhead than in work, so an age is cut into ``n_shards`` shards only when the
    age six below it has at least ``shard_min`` afterstates (a rule that depends only on finished ages, so that a
    resumed build cuts every age as the first run did); other ages are held by one shard whose forward step, and
    backward step, is a single "whole" task that the engine may run in the driver on all its cores.
    """

    def __init__(self, engine, spec: SolveSpec, n_shards: int, out: Path, work: WorkDir, progress: bool,
                 shard_min: int):  # fmt: skip
        self.engine, self.spec, self.n, self.shard_min = engine, spec, n_shards, shard_min
        self.out, self.work, self.progress = out, work, progress
        self.work_path = str(work.path.resolve())
        self.counts: dict[int, AgeCount] = {c.age: c for c in work.forward_counts}
        self.held: dict[tuple[str, int], list] = {}  # (kind, age) -> refs per shard of the forward layers kept
        self.held_bytes = 0
        self.loaded: dict[tuple[str, int], list] = {}  # the same, loaded again from the work directory
        self.start_ids, self.start_probs = canonical_starts(spec)
        self.start_ages = sorted({int(a) for a in spec.ages(self.start_ids)})

    def starts_at(self, age: int) -> np.ndarray:
        return np.sort(self.start_ids[self.spec.ages(self.start_ids) == age])

    def shards_of(self, age: int) -> int:
        """Shards of an age (decided from the finished age ``age - 6``)."""
        below = self.counts.get(age - 6)
        return self.n if below is not None and below.afterstates >= self.shard_min else 1

    def shards_next(self, age: int) -> tuple[int, int]:
        return self.shards_of(age + 2), self.shards_of(age + 4)

    def layer(self, kind: str, age: int) -> list:
        """One forward layer (``states`` or ``afterstates``) of an age, per shard: the references kept from the
        forward pass, or else the outputs of one load task per shard (decoding a shard's file once for all the
        tasks that read it; an age held by one shard is loaded in the driver)."""
        if (kind, age) in self.held:
            return self.held[kind, age]
        if (kind, age) not in self.loaded:
            sizes = self.work.shard_sizes(age)[kind]
            self.loaded[kind, age] = [
                self.engine.submit(task_load, self.spec, ShardFile(self.work_path, kind, age, t, size),
                                   whole=len(sizes) == 1)[0]
                for t, size in enumerate(sizes)
            ]  # fmt: skip
        return self.loaded[kind, age]

    def forget(self, age: int) -> None:
        """Drop the driver's references to an age's forward layers (the engine frees them once no task needs
        them)."""
        for kind in ("states", "afterstates"):
            self.loaded.pop((kind, age), None)
            if (kind, age) in self.held:
                self.held_bytes -= 8 * getattr(self.counts[age], kind)
                del self.held[kind, age]

    def fetch(self, items) -> list[np.ndarray]:
        """Arrays from task outputs or work-directory files."""
        return [x.load(self.spec) if isinstance(x, ShardFile) else self.engine.get(x) for x in items]

    # -- forward --------------------------------------------------------------------------------------------
    def forward(self) -> None:
        work, spec, engine = self.work, self.spec, self.engine
        last = max(self.counts) if self.counts else None
        pending: dict[int, list[list]] = {}  # age -> per shard: the pieces sent to it

        def add(age: int, pieces) -> None:
            if last is None or age > last:
                slots = pending.setdefault(age, [[] for _ in pieces])
                assert len(slots) == len(pieces), f"age {age} cut two ways"
                for slot, piece in zip(slots, pieces, strict=True):
                    slot.append(piece)

        def add_children(age: int, meta: dict, pieces) -> None:
            n2, _ = self.shards_next(age)
            if meta["twos"]:
                add(age + 2, pieces[:n2])
            if meta["fours"]:
                add(age + 4, pieces[n2:])

        for age in self.start_ages:
            add(age, split(self.starts_at(age), self.shards_of(age)))
        if last is not None:  # resume: the children of the last two finished ages
            for age in sorted(a for a in self.counts if a >= last - 2):
                for t, size in enumerate(work.shard_sizes(age)["afterstates"]):
                    n2, n4 = self.shards_next(age)
                    refs = engine.submit(task_respawn, spec, (n2, n4), ShardFile(self.work_path, "afterstates", age,
                                         t, size), num_returns=1 + n2 + n4)  # fmt: skip
                    add_children(age, engine.get(refs[0]), refs[1:])
        bar = tqdm(desc=f"forward {spec.board} (up to {self.n} shards)", unit=" ages", disable=not self.progress,
                   initial=len(self.counts))  # fmt: skip
        t0, done_work = time.perf_counter(), 0
        try:
            while pending:
                age = min(pending)
                slots = pending.pop(age)
                n, (n2, n4) = len(slots), self.shards_next(age)
                if n == 1:
                    out = engine.submit(task_forward_whole, spec, (n2, n4), self.work_path, age, *slots[0],
                                        num_returns=3 + n2 + n4, whole=True)  # fmt: skip
                    outs, states = [out[:-1]], [out[-1]]
                    state_metas = metas = engine.get([out[0]])
                else:
                    ex = [engine.submit(task_expand, spec, n, self.work_path, age, s, *slots[s], num_returns=2 + n)
                          for s in range(n)]  # fmt: skip
                    outs = [engine.submit(task_spawn, spec, (n2, n4), self.work_path, age, t,
                                          *[e[2 + t] for e in ex], num_returns=2 + n2 + n4)
                            for t in range(n)]  # fmt: skip
                    states = [e[1] for e in ex]
                    got = engine.get([e[0] for e in ex] + [o[0] for o in outs])
                    state_metas, metas = got[:n], got[n:]
                for meta, out in zip(metas, outs, strict=True):
                    add_children(age, meta, out[2:])
                count = AgeCount(age, sum(m["states"] for m in state_metas), sum(m["afterstates"] for m in metas),
                                 sum(m["terminal"] for m in state_metas))  # fmt: skip
                work.record_forward(count, {"states": [m["states"] for m in state_metas],
                                            "afterstates": [m["afterstates"] for m in metas]})  # fmt: skip
                self.counts[age] = count
                size = 8 * (count.states + count.afterstates)
                if self.held_bytes + size <= HOLD_BYTES:
                    self.held["afterstates", age] = [o[1] for o in outs]
                    self.held["states", age] = states
                    self.held_bytes += size
                done_work += count.states + count.afterstates
                rate = done_work / max(time.perf_counter() - t0, 1e-9)
                bar.set_postfix_str(f"age {age}, {rate:,.0f} states+afterstates/s", refresh=False)
                bar.update()
        finally:
            bar.close()
        work.finish_forward()

    # -- backward -------------------------------------------------------------------------------------------
    def backward(self, table: TableWriterV2) -> None:
        work, spec, engine, counts = self.work, self.spec, self.engine, self.counts
        shards = {age: len(work.shard_sizes(age)["states"]) for age in counts}
        done = work.backward_done
        for age in sorted(done):  # written by an interrupted run
            code = work.backward_code(age)
            table.record_written(age, code["id_bytes"], code["value_bytes"])
        state_values: dict[int, list] = {
            age: [ShardFile(self.work_path, "state_values", age, t, size)
                  for t, size in enumerate(work.shard_sizes(age)["states"])]
            for age in done
        }  # fmt: skip
        for age in self.start_ages:
            if age in done:
                self.take_start_values(table, age, state_values[age])
        todo = [a for a in sorted(counts, reverse=True) if a not in done]
        requests: dict[int, tuple[list, list]] = {}
        inflight: deque = deque()
        empty = (np.empty(0, np.uint64), np.empty(0, np.float64))
        out_dir = str(self.out.resolve())
        bar = tqdm(total=len(counts), initial=len(counts) - len(todo), unit=" ages", disable=not self.progress,
                   desc=f"backward {spec.board} (up to {self.n} shards)")  # fmt: skip
        t0, done_work = time.perf_counter(), 0

        def solved_states(age: int) -> tuple[int, list, list]:
            """``(shards, states per shard, state values per shard)`` of a solved age (empty if no such age)."""
            if age not in counts:
                return 1, [empty[0]], [empty[1]]
            return shards[age], self.layer("states", age), state_values[age]

        def submit_requests(age: int) -> None:
            """Both request steps of a cut age: they need forward layers only, so they run ahead."""
            n, nxt = shards[age], (shards.get(age + 2, 1), shards.get(age + 4, 1))
            children = [engine.submit(task_children_requests, spec, nxt, a, num_returns=sum(nxt))
                        for a in self.layer("afterstates", age)]  # fmt: skip
            moves = [engine.submit(task_move_requests, spec, n, s, num_returns=n + 1)
                     for s in self.layer("states", age)]  # fmt: skip
            requests[age] = (children, moves)

        def retire() -> None:
            nonlocal done_work
            age, written = inflight.popleft()
            meta = engine.get(written)
            if age in self.start_ages:
                self.take_start_values(table, age, state_values[age])
            table.record_written(age, meta["id_bytes"], meta["value_bytes"])
            work.record_backward(age, meta)
            self.discard_finished(age, shards)
            done_work += counts[age].states + counts[age].afterstates
            rate = done_work / max(time.perf_counter() - t0, 1e-9)
            bar.set_postfix_str(f"age {age}, {rate:,.0f} states+afterstates/s", refresh=False)
            bar.update()

        try:
            for i, age in enumerate(todo):
                n = shards[age]
                n2, states2, values2 = solved_states(age + 2)
                n4, states4, values4 = solved_states(age + 4)
                after, states = self.layer("afterstates", age), self.layer("states", age)
                if n == 1:
                    solved, written = engine.submit(task_solve_whole, spec, (n2, n4), self.work_path, out_dir,
                                                    counts[age], after[0], states[0], *states2, *values2, *states4,
                                                    *values4, num_returns=2, whole=True)  # fmt: skip
                    state_values[age] = [solved]
                else:
                    for ahead in todo[i : i + LOOKAHEAD + 1]:
                        if ahead not in requests and shards[ahead] > 1:
                            submit_requests(ahead)
                    children, moves = requests.pop(age)
                    exchange: list[list] = [[] for _ in range(n)]  # per afterstate shard: r2, a2, r4, a4
                    for first, m, ids, vals in ((0, n2, states2, values2), (n2, n4, states4, values4)):
                        answers = [engine.submit(task_lookup, spec, ids[t], vals[t],
                                                 *[children[s][first + t] for s in range(n)], num_returns=n)
                                   for t in range(m)]  # fmt: skip
                        for s in range(n):
                            exchange[s] += [children[s][first + t] for t in range(m)]
                            exchange[s] += [answers[t][s] for t in range(m)]
                    values = [engine.submit(task_afterstate_values, spec, (n2, n4), after[s], *exchange[s])[0]
                              for s in range(n)]  # fmt: skip
                    answers = [engine.submit(task_lookup, spec, after[s], values[s], *[moves[t][s] for t in range(n)],
                                             num_returns=n) for s in range(n)]  # fmt: skip
                    state_values[age] = [engine.submit(task_state_values, spec, n, self.work_path, age, t, moves[t][n],
                                                       *moves[t][:n], *[answers[s][t] for s in range(n)])[0]
                                         for t in range(n)]  # fmt: skip
                    written = engine.submit(task_write, spec, out_dir, counts[age], n, *after, *values)[0]
                inflight.append((age, written))
                state_values.pop(age + 6, None)  # no lower age reads these any more
                self.forget(age + 4)
                self.forget(age + 6)
                while inflight and (len(inflight) > MAX_INFLIGHT or engine.ready(inflight[0][1])):
                    retire()
            while inflight:
                retire()
        finally:
            bar.close()

    def discard_finished(self, age: int, shards: dict[int, int]) -> None:
        """Once ``age`` is journalled, no age below it reads the afterstates of ``age`` nor the states and state
        values of ``age + 4`` any more (start ages are kept: their start values are taken on resume), so the
        work directory shrinks as the table grows."""
        doomed = [("forward", age, name) for name in ("ids_upper", "ids_lower")]
        if age + 4 in shards and age + 4 not in self.start_ages:
            doomed += [("forward", age + 4, "states_upper"), ("forward", age + 4, "states_lower"),
                       ("backward", age + 4, "state_values")]  # fmt: skip
        for stage, a, name in doomed:
            if a in shards:
                for t in range(shards[a]):
                    shard_file(self.work_path, stage, a, t, name).unlink(missing_ok=True)

    def take_start_values(self, table: TableWriterV2, age: int, value_refs) -> None:
        """The start states of ``age``: their values from the age's state values."""
        states, values = merge_shards(self.fetch(self.layer("states", age)), self.fetch(value_refs))
        table.starts.take(age, states, values)


def build_sharded(
    engine,
    spec: SolveSpec,
    out: str | os.PathLike,
    n_shards: int | None = None,
    work_dir: str | os.PathLike | None = None,
    progress: bool = True,
    keep_work: bool = False,
    shard_min: int = SHARD_MIN,
) -> BuildReport:
    """Solve ``spec`` into the v2 table directory ``out`` with ``engine`` running the shards' tasks
    (``n_shards`` default: the engine's CPUs).  Resumable like :func:`solver.build.build`: run it again with
    the same number of shards after an interruption."""
    n_shards = int(n_shards or engine.cpus())
    if n_shards < 1:
        raise ValueError(f"the number of shards must be at least 1, got {n_shards}")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise ValueError(f"{out} exists and is not a directory: a sharded build writes a table directory")
    work = WorkDir(work_dir or out.with_name(out.name + ".work"), spec, SOLVER_VERSION,
                   layout={"backend": "sharded", "shards": n_shards, "shard_min": int(shard_min)})  # fmt: skip
    run = ShardedBuild(engine, spec, n_shards, out, work, progress, shard_min)
    return run_directory_build(run, spec, out, work, keep_work, n_shards)
