"""The build partitioned by material (solver.distributed), workers in this process: the keys' owners, and tables
bit for bit the local build's for any number of workers and threshold, with crossing moves exchanged."""

from __future__ import annotations

import numpy as np
import pytest
from golden_tables import checksums_of, golden, spec_of

from solver.build import build
from solver.distributed.column import ColumnWorker, CrossingMismatch
from solver.distributed.driver import MaterialBuild, build_by_material
from solver.distributed.material import UNASSIGNED, Assignment, material_keys
from solver.spec import SolveSpec
from solver.store import Table


def test_new_keys_go_to_the_least_loaded_worker_largest_first_and_never_move():
    a = Assignment(3, 3)
    keys, owners = a.assign({5: 10, 7: 30, 9: 20})
    assert keys.tolist() == [7, 9, 5] and owners.tolist() == [0, 1, 2]
    keys, owners = a.assign({7: 1, 9: 50, 11: 5, 13: 4})  # worker 0 has 1, worker 1 has 50, worker 2 nothing
    assert keys.tolist() == [11, 13] and owners.tolist() == [2, 0]
    ids = np.array([0], np.uint64)
    assert a.owners_of(ids, 1).tolist() == [UNASSIGNED]  # the empty multiset (key 0) was never assigned
    assert Assignment.from_json(a.to_json()).owners.tolist() == a.owners.tolist()
    with pytest.raises(ValueError, match="assigned twice"):
        a.extend(np.array([7], np.uint64), np.array([1]))
    with pytest.raises(ValueError, match="tile >= 8"):
        Assignment(2, 2)
    with pytest.raises(ValueError, match="at least 1"):
        Assignment(0, 3)


@pytest.fixture(scope="module")
def local_tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("local")
    out = {}
    for board, objective, spawn in [("2x3", "score", "random"), ("2x3", "tile:6", "adversarial"),
                                    ("3x2", "score", "optimistic")]:  # fmt: skip
        spec = SolveSpec.parse(board, objective, 0.1, spawn)
        build(spec, root / f"{board}-{objective.replace(':', '')}-{spawn}", progress=False, layout="directory")
        out[spec] = root / f"{board}-{objective.replace(':', '')}-{spawn}"
    return out


@pytest.mark.parametrize("n_workers, low", [(1, 3), (3, 3), (2, 4)])
def test_tables_are_identical_to_the_local_build(local_tables, tmp_path, n_workers, low):
    for spec, reference in local_tables.items():
        out = tmp_path / f"{spec.board}-{spec.spawn}-{spec.objective.replace(':', '')}"
        report = build_by_material(spec, out, n_workers, low, progress=False)
        assert checksums_of(out) == checksums_of(reference), spec
        assert report.attrs["states"] > 0


def test_many_columns_and_crossing_moves_give_the_golden_table(tmp_path):
    """2x4 up to 64, four workers, columns by the tiles >= 8: most ages have several columns on several workers,
    and many moves cross between them."""
    spec = spec_of("2x4-tile6")
    run = MaterialBuild(spec, 4, 3, progress=False)
    run.forward()
    assert run.crossing > 1000 and len(set(run.assignment.owners.tolist())) == 4
    out = build_by_material(spec, tmp_path / "t", 4, 3, progress=False).out
    assert checksums_of(out) == golden("2x4-tile6")
    with Table(out) as t:
        assert t.attrs["states"] == sum(c.states for c in run.counts.values())


def test_a_worker_refuses_boards_it_does_not_own():
    spec = SolveSpec.parse("2x3", "score")
    a = Assignment(2, 3)
    a.assign({0: 1})  # the empty multiset (every start state) -> worker 0
    starts = np.array([0x11], np.uint64)
    assert material_keys(starts, spec.cells, 3).tolist() == [0]
    with pytest.raises(CrossingMismatch, match="another worker owns"):
        ColumnWorker(spec, 1, a).seed(starts)
    worker = ColumnWorker(spec, 0, a)
    worker.sent[4] = {1: np.array([1, 2], np.uint64)}
    with pytest.raises(CrossingMismatch, match="1 values from worker 1 for the 2"):
        worker.receive_values(4, 1, np.zeros(1))
