"""The build partitioned by material (solver.distributed), workers in this process: the keys' owners, and tables
bit for bit the local build's for any number of workers and threshold, with crossing moves exchanged."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from golden_tables import checksums_of, golden, spec_of
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.build import build
from solver.distributed.column import ColumnWorker, CrossingMismatch
from solver.distributed.driver import DEFAULT_SPLIT, DEFAULT_TOLERANCE, LocalWorkers, build_by_material
from solver.distributed.lookups import joined_parts, lookup_sorted, merge_parts, positions_in
from solver.distributed.material import PART_SHIFT, UNASSIGNED, Assignment, material_keys, material_of
from solver.format import Table
from solver.format.common import SOLVER_VERSION
from solver.spec import SolveSpec
from solver.value_index import build_value_index, find
from solver.workdir import JOURNAL, WorkDir, WorkDirMismatch, journal_entries, parse_journal

from conftest import numba_threads


def test_new_keys_go_to_the_least_loaded_worker_largest_first_and_never_move():
    a = Assignment(3, 3)
    keys, owners = a.assign({5: 10, 7: 30, 9: 20})
    assert keys.tolist() == [7, 9, 5] and owners.tolist() == [0, 1, 2]
    keys, owners = a.assign({7: 1, 9: 50, 11: 5, 13: 4})  # worker 0 has 1, worker 1 has 50, worker 2 nothing
    assert keys.tolist() == [11, 13] and owners.tolist() == [2, 0]
    assert a.owners_of_keys([7, 9, 5, 11, 13, 99]).tolist() == [0, 1, 2, 2, 0, UNASSIGNED]
    ids = np.array([0], np.uint64)
    assert a.owners_of(ids, 1).tolist() == [UNASSIGNED]  # the empty multiset (key 0) was never assigned
    assert Assignment.from_json(a.to_json()).owners.tolist() == a.owners.tolist()
    with pytest.raises(ValueError, match="assigned twice"):
        a.extend(np.array([7], np.uint64), np.array([1]))
    with pytest.raises(ValueError, match="tile >= 8"):
        Assignment(2, 2)
    with pytest.raises(ValueError, match="at least 1"):
        Assignment(0, 3)


def test_a_column_larger_than_an_even_share_splits_into_parts_that_keep_their_boards():
    """A key over the threshold splits into one part per worker; part 0 keeps the key and its owner, the new parts
    are assigned like new keys, and each board's part is a hash of the board: stable, below the parts, and the
    column's material key underneath."""
    a = Assignment(4, 3)
    a.assign({5: 10, 7: 50})
    keys, parts, work = a.split({5: 10, 7: 50, 9: 20}, threshold=1.05)  # an even share is 20: key 7 is 2.5 shares
    assert keys.tolist() == [7] and parts.tolist() == [4]
    assert sorted(a.parts_of(7)) == [7 | p << PART_SHIFT for p in range(4)]
    assert sum(work[k] for k in a.parts_of(7)) == 50 and work[5] == 10 and 7 in work
    owner = int(a.owners_of_keys([7])[0])
    new_keys, _ = a.assign(work)
    assert set(new_keys.tolist()) == {9} | {7 | p << PART_SHIFT for p in (1, 2, 3)}
    assert int(a.owners_of_keys([7])[0]) == owner and len(a.owners_reached([7])) == 3  # loads 12, 10, 0, 0 first
    assert a.split({7: 500, 5: 1}, threshold=1.05)[0].size == 0  # a column is split once
    assert Assignment(1, 3).split({5: 10}, threshold=0.5)[0].size == 0  # one worker: nothing to split across
    assert a.split({11: 1, 13: 3}, threshold=1.05)[0].tolist() == [13]  # an even share is 1
    with pytest.raises(ValueError, match="> 0"):
        a.split({5: 1}, threshold=0)
    with pytest.raises(ValueError, match="split twice"):
        a.apply_splits([7], [2])
    copy = Assignment.from_json(a.to_json())
    assert copy.split_keys.tolist() == a.split_keys.tolist() and copy.split_parts.tolist() == a.split_parts.tolist()


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(0, 2**48 - 1), min_size=1, max_size=200), st.integers(2, 9))
def test_every_board_of_a_split_column_falls_in_one_of_its_parts(boards, parts):
    ids = np.array(boards, np.uint64)
    material = material_keys(ids, 12, 3)
    a = Assignment(parts, 3, split_keys=np.unique(material), split_parts=np.full(np.unique(material).size, parts))
    keys = a.keys_of(ids, 12)
    assert np.array_equal(material_of(keys), material)
    assert np.all(keys >> np.uint64(PART_SHIFT) < parts)
    assert np.array_equal(a.keys_of(ids[::-1], 12), keys[::-1])  # a board's part does not depend on the others


def test_the_hash_spreads_a_columns_boards_evenly_over_its_parts():
    """20,000 distinct 4x3 boards of small tiles (one column: no tile >= 8), each cell's exponent 0..2 as in the
    early ages, split in 7 parts: each part gets 1/7 of them within 10% (about 6 standard deviations)."""
    rng = np.random.default_rng(7)
    cells = rng.integers(0, 3, size=(40000, 12)).astype(np.uint64)
    boards = np.unique((cells << (np.arange(12, dtype=np.uint64) * np.uint64(4))).sum(axis=1, dtype=np.uint64))[:20000]
    assert boards.size == 20000 and set(material_keys(boards, 12, 3).tolist()) == {0}
    a = Assignment(7, 3, split_keys=[0], split_parts=[7])
    counts = np.bincount((a.keys_of(boards, 12) >> np.uint64(PART_SHIFT)).astype(np.int64), minlength=7)
    assert counts.size == 7 and np.all(np.abs(counts / boards.size - 1 / 7) < 0.1 / 7), counts


def slow_part_key(board: int, cells: int, low: int, split: dict[int, int]) -> int:
    """Pure Python: the board's material key (base-17 counts of its exponents >= low), with its part (Fibonacci
    hash of the board, top 32 bits, modulo the parts) above bit 56 if the column is split."""
    exponents = [(board >> (4 * c)) & 15 for c in range(cells)]
    key = sum(17 ** (e - low) for e in exponents if e >= low)
    if key in split:
        key |= ((((board * 0x9E3779B97F4A7C15) % 2**64) >> 32) % split[key]) << PART_SHIFT
    return key


def test_keys_and_owners_of_boards_match_pure_python_on_any_number_of_threads():
    """Assignment.keys_of, owners_of (one fused kernel: key, part, owner) and owners_in_split against pure Python
    on 4,000 4x3 boards, and on 300,000 boards the same on 2 threads as on 1 (blocks that start mid-array)."""
    rng = np.random.default_rng(3)
    cells = rng.integers(0, 9, size=(300_000, 12)).astype(np.uint64)
    boards = (cells << (np.arange(12, dtype=np.uint64) * np.uint64(4))).sum(axis=1, dtype=np.uint64)
    material, counts = np.unique(material_keys(boards, 12, 3), return_counts=True)
    split = {int(k): 2 + i % 5 for i, k in enumerate(material[np.argsort(-counts)][:40])}
    a = Assignment(6, 3, split_keys=sorted(split), split_parts=[split[k] for k in sorted(split)])
    every = sorted({int(k) for k in a.keys_of(boards, 12)})
    owned = every[::2]  # the others stay unassigned
    a.extend(np.array(owned, np.uint64), np.arange(len(owned)) % 6)
    owner = dict(zip(owned, (np.arange(len(owned)) % 6).tolist(), strict=True))
    few = boards[:4000]
    want = [slow_part_key(int(b), 12, 3, split) for b in few.tolist()]
    assert a.keys_of(few, 12).tolist() == want
    assert a.owners_of(few, 12).tolist() == [owner.get(k, UNASSIGNED) for k in want]
    assert a.owners_of_keys(np.array(want, np.uint64)).tolist() == [owner.get(k, UNASSIGNED) for k in want]
    in_split = [owner.get(k, UNASSIGNED) if k >> PART_SHIFT or k in split else 99 for k in want]
    assert a.owners_in_split(few, 12, 99).tolist() == in_split and 99 in in_split and len(set(in_split)) > 2
    with numba_threads(1):
        one = a.keys_of(boards, 12), a.owners_of(boards, 12), a.owners_in_split(boards, 12, 99)
    with numba_threads(2):
        two = a.keys_of(boards, 12), a.owners_of(boards, 12), a.owners_in_split(boards, 12, 99)
    assert all(np.array_equal(x, y) for x, y in zip(one, two, strict=True))
    assert set(one[1].tolist()) == {UNASSIGNED, *range(6)}


#: (board, objective, spawn model) -> (workers, threshold exponent): each spec with another cut.
CUTS = {
    ("2x3", "score", "random"): (3, 3),
    ("2x3", "tile:6", "adversarial"): (2, 4),
    ("3x2", "score", "optimistic"): (1, 3),
}


@pytest.fixture(scope="module")
def local_tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("local")
    out = {}
    for board, objective, spawn in CUTS:
        spec = SolveSpec.parse(board, objective, 0.1, spawn)
        build(spec, root / f"{board}-{objective.replace(':', '')}-{spawn}", progress=False, layout="directory")
        out[spec] = root / f"{board}-{objective.replace(':', '')}-{spawn}"
    return out


@pytest.mark.slow
@pytest.mark.parametrize("game", list(CUTS))
def test_tables_are_identical_to_the_local_build(local_tables, tmp_path, game):
    """On two threads (a test worker's default is one, as in the other builds here)."""
    spec = SolveSpec.parse(*game[:2], 0.1, game[2])
    with numba_threads(2):
        report = build_by_material(spec, tmp_path / "t", *CUTS[game], progress=False)
    assert checksums_of(tmp_path / "t") == checksums_of(local_tables[spec])
    assert report.attrs["states"] > 0 and not (tmp_path / "t.work").exists()


def journal_total(work: WorkDir, field: str) -> int:
    """A field of the forward journal's extras summed over the ages (a list field: its length)."""
    extras = [work.forward_extra(c.age).get(field, 0) for c in work.forward_counts]
    return sum(len(x) if isinstance(x, list) else x for x in extras)


@pytest.mark.slow
@pytest.mark.parametrize("tolerance, split", [(DEFAULT_TOLERANCE, DEFAULT_SPLIT), (None, None)])
def test_many_columns_and_crossing_moves_give_the_golden_table(tmp_path, tolerance, split):
    """2x4 up to 64, four workers, columns by the tiles >= 8: most ages have several columns on several workers,
    and many moves cross between them.  Rebalanced, keys move between workers, columns larger than an even share
    are split across several (spawns then cross between the parts' owners), and the states that other workers own
    of the next age are handed to them; without rebalancing or splitting nothing moves."""
    spec = spec_of("2x4-tile6")
    out = build_by_material(
        spec, tmp_path / "t", 4, 3, progress=False, keep_work=True, tolerance=tolerance, split=split
    ).out
    assert checksums_of(out) == golden("2x4-tile6")
    work = WorkDir(tmp_path / "t.work", spec, SOLVER_VERSION, layout={"backend": "material", "workers": 4, "low": 3})
    owners = {int(o) for c in work.forward_counts for o in work.forward_extra(c.age)["owners"]}
    assert journal_total(work, "crossing") > 1000 and owners == {0, 1, 2, 3}
    keys = {int(k) for c in work.forward_counts for k in work.forward_extra(c.age)["keys"]}
    if tolerance is None:
        assert journal_total(work, "moved_keys") == journal_total(work, "handed_off") == 0
        assert journal_total(work, "split_keys") == 0 and max(keys) < 1 << PART_SHIFT
    else:
        assert journal_total(work, "moved_keys") > 10 and journal_total(work, "handed_off") > 1000
        assert journal_total(work, "split_keys") > 10 and max(keys) >= 1 << PART_SHIFT
    left = {p.name.split(".")[2] for p in (tmp_path / "t.work" / "forward").iterdir()}
    assert left == {"states_upper", "states_lower", "states_code"}  # the start ages' only: the rest was discarded
    with Table(out) as t:
        assert t.attrs["states"] == sum(c.states for c in work.forward_counts)


def test_a_worker_refuses_boards_it_does_not_own(tmp_path):
    spec = SolveSpec.parse("2x3", "score")
    a = Assignment(2, 3)
    a.assign({0: 1})  # the empty multiset (every start state) -> worker 0
    starts = np.array([0x11], np.uint64)
    assert material_keys(starts, spec.cells, 3).tolist() == [0]
    with pytest.raises(CrossingMismatch, match="another worker owns"):
        ColumnWorker(spec, 1, a, tmp_path).seed(starts)


class Interrupted(Exception):
    pass


def interrupting_after(steps: int):
    """A LocalWorkers group whose ``steps``-th forward or backward step (exchange_and_spawn, settle) raises."""

    class Interrupting(LocalWorkers):
        calls = 0

        def _tick(self):
            Interrupting.calls += 1
            if Interrupting.calls == steps:
                raise Interrupted

        def exchange_and_spawn(self, *args):
            self._tick()
            return super().exchange_and_spawn(*args)

        def settle(self, age):
            self._tick()
            return super().settle(age)

    return Interrupting


@pytest.mark.slow
@pytest.mark.parametrize("steps", [40, 200])  # 2x3 has 125 ages: a stop in the forward pass, one in the backward
def test_an_interrupted_build_resumes_to_the_same_table(local_tables, tmp_path, steps):
    spec = SolveSpec.parse("2x3", "score", 0.1, "random")
    out, work = tmp_path / "t", tmp_path / "t.work"
    with pytest.raises(Interrupted):
        build_by_material(spec, out, 3, 3, work_dir=work, progress=False, make_workers=interrupting_after(steps))
    assert (work / "journal.jsonl").exists()
    build_by_material(spec, out, 3, 3, work_dir=work, progress=False)
    assert checksums_of(out) == checksums_of(local_tables[spec])


@pytest.mark.slow
def test_builds_stopped_after_hand_offs_resume_to_the_same_table(local_tables, tmp_path):
    """Columns split from the first ages on (the start states' column holds all of them).  Stopped right after the
    first age that handed states off (the resumed forward pass hands them again), and
    in the backward pass where an age needs values handed back before the stop (read back from the work
    directory)."""
    spec = SolveSpec.parse("2x3", "score", 0.1, "random")
    build_by_material(spec, tmp_path / "full", 3, 3, progress=False, keep_work=True)
    work = WorkDir(tmp_path / "full.work", spec, SOLVER_VERSION, layout={"backend": "material", "workers": 3, "low": 3})
    ages = [c.age for c in work.forward_counts]
    handing = [i for i, age in enumerate(ages) if work.forward_extra(age)["handed_off"]]
    assert handing, "no age handed states off: nothing to resume"
    splitting = [i for i, age in enumerate(ages) if work.forward_extra(age)["split_keys"]]
    # a step is one exchange_and_spawn (forward, ages ascending) or one settle (backward, ages descending); the
    # stop raises at the start of the step, so the ages before it are journalled
    forward_stop = handing[0] + 2
    assert splitting and splitting[0] < forward_stop, "no column split before the stop: the parts went untested"
    # the settle of age a - 2, where a handed off states of a + 2: it reads their values back from the directory
    backward_stop = len(ages) + (len(ages) - handing[-1]) + 1
    for steps in (forward_stop, backward_stop):
        out, scratch = tmp_path / f"t{steps}", tmp_path / f"t{steps}.work"
        with pytest.raises(Interrupted):
            build_by_material(spec, out, 3, 3, work_dir=scratch, progress=False, make_workers=interrupting_after(steps))
        build_by_material(spec, out, 3, 3, work_dir=scratch, progress=False)
        assert checksums_of(out) == checksums_of(local_tables[spec])


def test_a_work_directory_is_resumed_only_with_the_same_workers_and_threshold(tmp_path):
    spec = SolveSpec.parse("2x3", "score")
    with pytest.raises(Interrupted):
        build_by_material(spec, tmp_path / "t", 2, 3, progress=False, make_workers=interrupting_after(30))
    for workers, low in ((3, 3), (2, 4)):
        with pytest.raises(WorkDirMismatch, match="resume it the same way"):
            build_by_material(spec, tmp_path / "t", workers, low, progress=False)


@settings(max_examples=300, deadline=None)
@given(st.sets(st.integers(0, 2000), max_size=300), st.sets(st.integers(0, 2000), max_size=300))
def test_lookup_sorted_matches_a_dictionary(held, asked):
    """Every request present is answered with its value; the first absent one is reported."""
    ids = np.array(sorted(held), np.uint64)
    values = ids.astype(np.float64) * 0.5 + 1.0
    table = {int(i): float(v) for i, v in zip(ids, values, strict=True)}
    req = np.array(sorted(asked), np.uint64)
    found, missing = lookup_sorted(ids, values, req)
    absent = [i for i, r in enumerate(req.tolist()) if r not in table]
    assert missing == (absent[0] if absent else -1)
    stop = absent[0] if absent else req.size
    assert found[:stop].tolist() == [table[r] for r in req[:stop].tolist()]


@settings(max_examples=300, deadline=None)
@given(st.sets(st.integers(0, 2000), max_size=300), st.sets(st.integers(0, 2000), max_size=300))
def test_positions_in_match_a_dictionary(held, asked):
    """Each sorted board's index in the sorted layer (a crossing afterstate among a worker's afterstates), or -1."""
    merged = np.array(sorted(held), np.uint64)
    ids = np.array(sorted(asked), np.uint64)
    index = {b: i for i, b in enumerate(sorted(held))}
    assert positions_in(merged, ids).tolist() == [index.get(b, -1) for b in sorted(asked)]


def test_positions_in_parallel_blocks_that_start_mid_layer():
    """200,000 boards asked among 500,000 on 2 threads, every block starting with a binary search of its own."""
    rng = np.random.default_rng(7)
    merged = np.unique(rng.integers(0, 2**60, size=500_000, dtype=np.uint64))
    ids = np.unique(np.concatenate([rng.choice(merged, 150_000), rng.integers(0, 2**60, 50_000, dtype=np.uint64)]))
    with numba_threads(2):
        at = positions_in(merged, ids)
    held = np.isin(ids, merged)
    assert np.array_equal(at < 0, ~held) and np.array_equal(merged[at[held]], ids[held])


def test_merge_parts_sorts_the_pieces_with_their_values():
    ids, values = merge_parts([np.array([5, 9], np.uint64), np.array([1, 7], np.uint64)], [[0.5, 0.9], [0.1, 0.7]])
    assert ids.tolist() == [1, 5, 7, 9] and values.tolist() == [0.1, 0.5, 0.7, 0.9]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 5), max_size=60), st.sets(st.integers(0, 10**6), max_size=60))
def test_merge_parts_matches_sorting_every_board(piece_of, boards):
    """Disjoint sorted pieces (any sizes, empty ones too) merge into the sorted layer, each value with its board."""
    boards = sorted(boards)
    pieces = [[b for b, p in zip(boards, piece_of, strict=False) if p == k] for k in range(6)]
    ids, values = merge_parts([np.array(p, np.uint64) for p in pieces], [[b / 3 for b in p] for p in pieces])
    kept = sorted(b for b, _ in zip(boards, piece_of, strict=False))
    assert ids.tolist() == kept and values.tolist() == [b / 3 for b in kept]


def test_merge_parts_places_values_in_parallel_blocks_and_refuses_shared_boards():
    """300,000 boards in 5 pieces, merged on 2 threads (blocks that start mid-piece) as a plain sort gives them;
    pieces that share a board, or a piece with one value too few, are a clear error."""
    rng = np.random.default_rng(5)
    boards = np.unique(rng.integers(0, 2**60, size=300_000, dtype=np.uint64))
    piece = rng.integers(0, 5, size=boards.size)
    pieces = [boards[piece == k] for k in range(5)]
    with numba_threads(2):
        ids, values = merge_parts(pieces, [p.astype(np.float64) / 7 for p in pieces])
    assert np.array_equal(ids, boards) and np.array_equal(values, boards.astype(np.float64) / 7)
    with pytest.raises(ValueError, match="share 1 boards"):
        merge_parts([boards[:10], boards[9:20]], [np.zeros(10), np.zeros(11)])
    with pytest.raises(ValueError, match="one value per board"):
        merge_parts([boards[:10]], [np.zeros(9)])


def test_joined_parts_keep_each_boards_value_for_the_value_index():
    """The value index of joined pieces finds every board's own value, as that of the merged pieces does."""
    rng = np.random.default_rng(6)
    boards = np.unique(rng.integers(1, 2**60, size=100_000, dtype=np.uint64))
    piece = rng.integers(0, 3, size=boards.size)
    pieces = [boards[piece == k] for k in range(3)]
    ids, values = joined_parts(pieces, [p.astype(np.float64) / 7 for p in pieces])
    assert sorted(ids.tolist()) == boards.tolist()
    index = build_value_index(ids, values)
    found = [index.values[find(index.table, index.shift, b), 1] for b in boards[::997]]
    assert found == (boards[::997].astype(np.float64) / 7).tolist()
    with pytest.raises(ValueError, match="one value per board"):
        joined_parts([boards[:10], boards[10:20]], [np.zeros(10), np.zeros(9)])


def test_under_exchange_cost_is_seconds_per_afterstate_over_the_builds_mean():
    """Forward: 4 s for 40 afterstates, 0.1 s each, against 0.05 s per item: 2.0; backward 1 s for 50: 0.4."""
    from experiments.bench.material_balance import under_exchange_cost

    passes = {
        "forward": [{"under_s": [1.0, 3.0], "under_items": [10, 30]}],
        "backward": [{"under_s": [0.5, 0.0], "under_items": [25, 0]}, {"under_s": [0.5], "under_items": [25]}],
    }
    assert under_exchange_cost(passes, 0.05) == pytest.approx({"forward": 2.0, "backward": 0.4})


def _with_seconds(work_dir, forward: dict, backward: dict) -> None:
    """Rewrite every timed age of a kept work directory's journal with the seconds given (a clock the test
    controls); the counts the build journalled stay as they were.  ``under_s`` given as ``"per_item"`` sets each
    worker's seconds under the exchange to that many seconds per afterstate it journalled there."""
    path = Path(work_dir) / JOURNAL
    lines = []
    for entry in parse_journal(path.read_text()):
        for key, timed in (("extra", forward), ("code", backward)):
            fields = entry.get(key, {})
            if "busy_s" in fields:
                fields.update({k: v for k, v in timed.items() if k != "under_per_item"})
                fields["under_s"] = [timed["under_per_item"] * n for n in fields["under_items"]]
        lines.append(json.dumps(entry))
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.slow
def test_material_balance_reads_each_workers_counts_from_the_journal(tmp_path, capsys):
    """experiments.bench.material_balance on a real build: the journal holds every worker's seconds and boards per
    age, the counts add up to the age's, and the report reads the same from a kept work directory as from its own
    build.  (What the report computes from the seconds is checked on seconds the test sets, below: a 2x3 build's
    steps take under the journal's 1 ms resolution.)"""
    from experiments.bench.material_balance import balance, main

    spec = SolveSpec.parse("2x3", "score")
    build_by_material(spec, tmp_path / "t", 3, 3, progress=False, keep_work=True)
    got = balance(tmp_path / "t.work")
    work = WorkDir(tmp_path / "t.work", spec, SOLVER_VERSION, layout={"backend": "material", "workers": 3, "low": 3})
    assert got["forward"]["ages"] == got["backward"]["ages"] == len(work.forward_counts)
    entries = journal_entries(tmp_path / "t.work")
    counted = [e for e in entries if "forward" in e]
    assert len(counted) == got["forward"]["ages"] and all(
        [sum(e["extra"]["states_w"]), sum(e["extra"]["afterstates_w"])]
        == [e["forward"]["states"], e["forward"]["afterstates"]]
        for e in counted
    )
    for timed in [e["extra"] for e in counted] + [e["code"] for e in entries if "backward" in e]:
        seconds = timed["busy_s"] + timed["first_s"] + timed["under_s"] + [timed["wall_s"]]
        assert len(timed["busy_s"]) == len(timed["first_s"]) == len(timed["under_s"]) == 3
        assert all(math.isfinite(s) and s >= 0 for s in seconds)
    assert set(got["boards"]) == {"states", "afterstates", "both"} and min(got["boards"].values()) >= 1
    for e in counted:  # the afterstates under the exchange are some of the age's: its own afterstates' children
        assert sum(e["extra"]["under_items"]) <= e["forward"]["afterstates"]
    backward = [e["code"] for e in entries if "backward" in e]
    assert sum(sum(e["extra"]["under_items"]) for e in counted) > 0 and sum(sum(c["under_items"]) for c in backward) > 0
    assert got["crossing"] == journal_total(work, "crossing") and got["moved_keys"] == journal_total(work, "moved_keys")
    assert main(["--journal", str(tmp_path / "t.work")]) == got
    assert "critical path" in capsys.readouterr().out
    report = main(["--board", "2x3", "--objective", "score", "--workers", "2", "--rebalance", "off", "--split", "off"])
    assert report["moved_keys"] == report["handed_off"] == report["split_keys"] == 0
    assert report["forward"]["imbalance"] >= 1  # the busiest worker's seconds are at least an even share of them

    # The figures from seconds the test sets, on the same journal: forward, the workers take 1, 2 and 3 s an age,
    # 0.5, 0.5 and 1 s of it before the exchange, the driver's wall 7 s, and 1 ms per afterstate under the exchange;
    # backward 4, 4 and 4 s (2, 1 and 0 s before it), wall 12.5 s with 0.25 s waiting for writes, 3 ms per afterstate.
    _with_seconds(
        tmp_path / "t.work",
        {"busy_s": [1.0, 2.0, 3.0], "first_s": [0.5, 0.5, 1.0], "wall_s": 7.0, "under_per_item": 0.001},
        {
            "busy_s": [4.0, 4.0, 4.0],
            "first_s": [2.0, 1.0, 0.0],
            "wall_s": 12.5,
            "write_wait_s": 0.25,
            "under_per_item": 0.003,
        },
    )
    timed = balance(tmp_path / "t.work")
    n = timed["forward"]["ages"]
    assert timed["forward"] == pytest.approx(
        {
            "ages": n,
            "busiest_s": 3 * n,
            "even_s": 2 * n,
            "all_s": 6 * n,
            "imbalance": 1.5,
            "barrier_path_s": (1 + 2) * n,
            "wall_s": 7 * n,
            "write_wait_s": 0,
        }
    )
    assert timed["backward"] == pytest.approx(
        {
            "ages": n,
            "busiest_s": 4 * n,
            "even_s": 4 * n,
            "all_s": 12 * n,
            "imbalance": 1.0,
            "barrier_path_s": (2 + 4) * n,
            "wall_s": 12.5 * n,
            "write_wait_s": 0.25 * n,
        }
    )
    assert timed["critical_path_s"] == pytest.approx(7 * n) and timed["all_work_s"] == pytest.approx(18 * n)
    items = sum(e["forward"]["states"] + e["forward"]["afterstates"] for e in counted)
    per_item = 18 * n / items  # the build's mean seconds per state or afterstate
    assert timed["under_exchange"] == pytest.approx({"forward": 0.001 / per_item, "backward": 0.003 / per_item})
    kept = ("boards", "crossing", "moved_keys")
    assert {k: timed[k] for k in kept} == {k: got[k] for k in kept}
