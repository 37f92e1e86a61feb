"""Sharded builds without Ray (the in-process engine): the shard hash against a slow reference, tables identical
to the one-process build for any number of shards, resuming after an interruption at any step."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.build import build
from solver.sharded import InProcess, build_sharded
from solver.shards import group_by_owner, lookup_sorted, owners_of, split
from solver.spec import SolveSpec
from solver.store import Table
from solver.workdir import WorkDirMismatch

MASK = (1 << 64) - 1


def owner_reference(x: int, n: int) -> int:
    """splitmix64's finaliser in plain Python integers, then modulo ``n``."""
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK
    return (x ^ (x >> 31)) % n


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, MASK), max_size=60), st.integers(1, 9))
def test_owners_and_grouping_match_reference(ids, n):
    arr = np.array(ids, np.uint64)
    assert owners_of(arr, n).tolist() == [owner_reference(x, n) for x in ids]
    grouped, starts = group_by_owner(arr, n)
    for k in range(n):
        assert grouped[starts[k] : starts[k + 1]].tolist() == [x for x in ids if owner_reference(x, n) == k]


def test_split_of_sorted_ids_gives_sorted_pieces_that_partition_them():
    ids = np.unique(np.random.default_rng(1).integers(0, 1 << 40, 5000, dtype=np.uint64))
    pieces = split(ids, 4)
    assert sum(p.size for p in pieces) == ids.size
    assert all(np.all(np.diff(p.astype(np.int64)) > 0) for p in pieces if p.size > 1)
    assert np.array_equal(np.sort(np.concatenate(pieces)), ids)
    sizes = [p.size for p in pieces]
    assert min(sizes) > 0.8 * ids.size / 4  # the hash spreads packed boards evenly


def checksums(path) -> dict[str, str]:
    with Table(path) as t:
        return t.stored_checksums()


@pytest.fixture(scope="module")
def local_tables(tmp_path_factory):
    root = tmp_path_factory.mktemp("local")
    out = {}
    for board, objective, spawn in [("2x3", "score", "random"), ("2x3", "tile:6", "adversarial"),
                                    ("3x2", "score", "optimistic")]:  # fmt: skip
        spec = SolveSpec.parse(board, objective, 0.1, spawn)
        path = root / f"{board}-{objective.replace(':', '')}-{spawn}"
        build(spec, path, progress=False, layout="directory")
        out[spec] = path
    return out


@pytest.mark.parametrize("n_shards", [1, 2, 3])
def test_sharded_tables_are_identical_to_the_local_build(local_tables, tmp_path, n_shards):
    for spec, reference in local_tables.items():
        out = tmp_path / f"{spec.board}-{spec.spawn}-{spec.objective.replace(':', '')}"
        report = build_sharded(InProcess(), spec, out, n_shards, progress=False, shard_min=0)
        assert checksums(out) == checksums(reference), spec
        assert report.attrs["states"] > 0
        assert not (tmp_path / (out.name + ".work")).exists()  # removed after success


def test_shard_min_cuts_only_large_ages_and_the_work_directory_shrinks(local_tables, tmp_path):
    spec = SolveSpec.parse("2x3", "score", 0.1, "random")
    work = tmp_path / "t.work"
    build_sharded(InProcess(), spec, tmp_path / "t", 3, work_dir=work, progress=False, shard_min=150,
                  keep_work=True)  # fmt: skip
    shards = {}
    for line in (work / "journal.jsonl").read_text().splitlines():
        entry = json.loads(line)
        if "shards" in entry:
            shards[entry["forward"]["age"]] = len(entry["shards"]["afterstates"])
    with Table(tmp_path / "t") as t:
        counts = {c.age: c for c in t.counts()}
    assert set(shards.values()) == {1, 3}
    for age, n in shards.items():  # cut when the age six below has at least shard_min afterstates
        below = counts.get(age - 6)
        assert n == (3 if below is not None and below.afterstates >= 150 else 1)
    # after success only the start ages' forward layers and state values are left (they serve a resume)
    left = {int(p.name.split(".")[0]) for p in work.rglob("*.npy")}
    assert left == {int(a) for a in np.unique([c.age for c in counts.values() if c.age <= 8])}
    assert checksums(tmp_path / "t") == checksums(local_tables[spec])


class Interrupting(InProcess):
    """Raises KeyboardInterrupt at the ``stop``-th task submitted (as a user's Ctrl-C would)."""

    def __init__(self, stop: int):
        self.stop, self.calls = stop, 0

    def submit(self, fn, *args, **kwargs):
        self.calls += 1
        if self.calls == self.stop:
            raise KeyboardInterrupt
        return super().submit(fn, *args, **kwargs)


@pytest.mark.parametrize(("stop", "shard_min"), [(5, 0), (300, 0), (492, 0), (700, 0), (1500, 0), (2300, 0),
                                               (60, 150), (200, 150)])  # fmt: skip
def test_interrupted_build_resumes_to_the_same_table(local_tables, tmp_path, stop, shard_min):
    """2x3 cut in two: about 490 task submissions in the forward pass and 1,830 in the backward pass with
    shard_min=0, fewer with 150 (small ages run whole)."""
    spec = SolveSpec.parse("2x3", "score", 0.1, "random")
    out, work = tmp_path / "t", tmp_path / "t.work"
    with pytest.raises(KeyboardInterrupt):
        build_sharded(Interrupting(stop), spec, out, 2, work_dir=work, progress=False, shard_min=shard_min)
    assert not (out / "table.h5").exists()
    build_sharded(InProcess(), spec, out, 2, work_dir=work, progress=False, shard_min=shard_min)
    assert checksums(out) == checksums(local_tables[spec])


def test_a_work_directory_is_resumed_only_with_the_same_cut(tmp_path):
    spec = SolveSpec.parse("2x3", "score", 0.1, "random")
    work = tmp_path / "t.work"
    with pytest.raises(KeyboardInterrupt):
        build_sharded(Interrupting(40), spec, tmp_path / "t", 2, work_dir=work, progress=False, shard_min=0)
    with pytest.raises(WorkDirMismatch, match="shards"):
        build_sharded(InProcess(), spec, tmp_path / "t", 3, work_dir=work, progress=False, shard_min=0)


def test_bad_arguments_are_refused(tmp_path):
    spec = SolveSpec.parse("2x2", "score", 0.1, "random")
    with pytest.raises(ValueError, match="at least 1"):
        build_sharded(InProcess(), spec, tmp_path / "t", -1, progress=False)
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="not a directory"):
        build_sharded(InProcess(), spec, tmp_path / "file", 2, progress=False)


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
