"""Solver: agreement with an independent slow solver, published figures, resume, threads, verify, CLI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest
from golden_tables import checksums_of, golden

import solver.build
from env2048 import board as B
from solver.__main__ import main as solver_main
from solver.build import HeldLayers, build
from solver.format import Table
from solver.format.common import SOLVER_VERSION
from solver.forward import run_forward
from solver.provision import cached_table
from solver.spec import SolveSpec
from solver.verify import verify_table
from solver.workdir import WorkDir

import naive
from naive_solver import shared_solver

CASES = [
    ("2x2", "score", "random"),
    ("2x2", "tile:5", "random"),
    ("2x2", "score", "adversarial"),
    ("2x2", "score", "optimistic"),
    ("2x2", "score", "pessimistic"),
    ("2x3", "score", "random"),
    ("2x3", "tile:6", "random"),
    ("2x3", "score", "adversarial"),
    ("2x3", "tile:5", "adversarial"),
    ("3x2", "score", "optimistic"),
]


@pytest.fixture(scope="module")
def all_tables(tmp_path_factory):
    """Every case built in both formats: ``{(fmt, board, objective, spawn): path}``."""
    root = tmp_path_factory.mktemp("tables")
    out = {}
    for fmt in (1, 2):
        for board, objective, spawn in CASES:
            path = root / f"v{fmt}-{board}-{objective.replace(':', '')}-{spawn}.h5"
            build(SolveSpec.parse(board, objective, 0.1, spawn), path, progress=False, format_version=fmt)
            out[fmt, board, objective, spawn] = path
    return out


@pytest.fixture(scope="module")
def tables(all_tables):
    """The default (v2) tables: ``{(board, objective, spawn): path}``."""
    return {key[1:]: path for key, path in all_tables.items() if key[0] == 2}


def value_tolerance(t) -> dict:
    """``pytest.approx`` tolerances of a table's values against exact ones (v2: the value code's bound)."""
    if t.format_version == 1:
        return {"abs": 1e-9, "rel": 1e-12}
    return {"abs": 1e-9 + t.attrs["value_error_absolute"], "rel": 1e-12 + t.attrs["value_error_relative"]}


def grid_of(board_id, rows, cols):
    return tuple(map(tuple, naive.unpack(int(board_id), rows, cols)))


@pytest.mark.parametrize("fmt", [1, 2])
@pytest.mark.parametrize(
    "case",
    [c if c[0] == "2x2" else pytest.param(c, marks=pytest.mark.slow) for c in CASES],
    ids=["-".join(c) for c in CASES],
)  # the 2x2 games in the quick lane
def test_every_value_matches_the_independent_solver(all_tables, case, fmt):
    board, objective, spawn = case
    spec = SolveSpec.parse(board, objective, 0.1, spawn)
    ref = shared_solver(spec.rows, spec.cols, objective, 0.1, spawn)
    with Table(all_tables[(fmt, *case)]) as t:
        tol = value_tolerance(t)
        n_states = n_after = 0
        for c in t.counts():
            layer = t.layer(c.age)
            assert layer["states"].size == c.states and layer["afterstates"].size == c.afterstates
            for sid, v in zip(layer["states"], layer["state_values"], strict=True):
                assert v == pytest.approx(ref.state_value(grid_of(sid, spec.rows, spec.cols)), **tol)
            for aid, v in zip(layer["afterstates"], layer["afterstate_values"], strict=True):
                assert v == pytest.approx(ref.afterstate_value(grid_of(aid, spec.rows, spec.cols)), **tol)
            n_states += c.states
            n_after += c.afterstates
        assert t.attrs["start_value"] == pytest.approx(ref.start_value(), abs=1e-9)
        states, afterstates, terminal = ref.reachable()
        assert (n_states, n_after, t.attrs["terminal_states"]) == (len(states), len(afterstates), terminal)


@pytest.mark.slow
@pytest.mark.parametrize("case", [("2x3", "score", "random"), ("2x3", "tile:6", "random")])
def test_best_actions_are_the_reference_argmax(all_tables, case):
    """v1: exactly the reference's optimal actions.  v2: a superset of them, equal wherever the reference's best
    and second-best Q-values differ by more than 4.5 times the value code's error bound."""
    board, objective, spawn = case
    spec = SolveSpec.parse(board, objective)
    ref = shared_solver(spec.rows, spec.cols, objective)
    for fmt in (1, 2):
        with Table(all_tables[(fmt, *case)]) as t:
            rel, absolute = (
                (0.0, 0.0) if fmt == 1 else (t.attrs["value_error_relative"], t.attrs["value_error_absolute"])
            )
            clear = 0
            for c in t.counts():
                layer = t.layer(c.age)
                for sid, bits in zip(layer["states"], layer["best_actions"], strict=True):
                    q = ref.q_values(grid_of(sid, spec.rows, spec.cols))
                    legal = [x for x in q if x is not None]
                    want = 0
                    if legal:
                        top = max(legal)
                        want = sum(1 << a for a, x in enumerate(q) if x is not None and x >= top - 1e-9 * max(1, top))
                        others = [top - x for a, x in enumerate(q) if x is not None and not (want >> a) & 1]
                        if others and min(others) <= 4.5 * (rel * max(1, top) + absolute) + 1e-9 * max(1, top):
                            assert int(bits) & want == want  # a near tie: the exact optimal actions are all in
                            continue
                    assert int(bits) == want
                    clear += 1
            assert clear > 0.99 * t.attrs["states"]


@pytest.mark.slow
def test_symmetric_boards_have_equal_values():
    ref = shared_solver(2, 3)
    rng = np.random.default_rng(1)
    states, _, _ = ref.reachable()
    for sid in rng.choice(sorted(states), 200):
        grid = naive.unpack(int(sid), 2, 3)
        values = {round(ref.state_value(tuple(map(tuple, g))), 9) for g in naive.symmetries(grid)}
        assert len(values) == 1


# -- published figures (../shared/REFERENCE.md) ---------------------------------------------------------------


def test_2x2_win_probabilities_match_lees_miller(tmp_path):
    for k, published in ((4, 0.96251125), (5, 0.082887289)):
        attrs = build(SolveSpec.parse("2x2", f"tile:{k}"), tmp_path / f"{k}.h5", progress=False).attrs
        assert attrs["start_value"] == pytest.approx(published, abs=5e-9)
    # Seed 002's table for 2x2 to 32 has 59 states: the non-terminal states without 32, plus one win and one lose.
    assert attrs["states"] - attrs["terminal_states"] + 2 == 59


def test_4x3_first_ages_match_published_counts():
    counts = run_forward(SolveSpec.parse("4x3"), max_age=22, progress=False)
    assert [c.age for c in counts] == list(range(4, 24, 2))
    assert [c.states for c in counts] == [22, 72, 172, 366, 739, 1337, 2307, 3812, 6186, 9574]


@pytest.mark.slow
def test_3x3_full_game_counts_match_published():
    """The forward pass's per-age counts, as the session's cached 3x3 table (built by the solver) stores them."""
    with Table(cached_table(SolveSpec.parse("3x3"), progress=False)) as table:
        counts = table.counts()
    totals = [sum(getattr(c, f) for c in counts) for f in ("states", "afterstates", "terminal")]
    assert totals == [48_713_519, 31_431_374, 7_388_502]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("k", "published", "nonterminal"), [(9, 0.73677417702316, 12_789_511), (10, 0.011337880082527, 25_179_012)]
)
def test_3x3_win_probabilities_match_published(k, published, nonterminal):
    """The tables as the solver builds them, once per session: the game to 512 is the suite task 3x3-512's table
    (test_suite.py checks its pinned digest), the game to 1024 a table of the session's cache."""
    from experiments.suite import get_task
    from experiments.suite.tasks import ensure_table

    spec, task = SolveSpec.parse("3x3", f"tile:{k}"), get_task("3x3-512")
    path = ensure_table(task, progress=False) if task.spec() == spec else cached_table(spec, progress=False)
    with Table(path) as table:
        attrs = dict(table.attrs)
    assert attrs["start_value"] == pytest.approx(published, abs=1e-12)
    assert attrs["states"] - attrs["terminal_states"] == nonterminal
    assert (k == 9) == (task.spec() == spec)  # the task is the game to 512


# -- build mechanics -------------------------------------------------------------------------------------------


def checksums(path) -> dict[str, str]:
    with Table(path) as t:
        return {name: ds.attrs["sha256"] for name, ds in t.datasets()}


@pytest.mark.slow
def test_result_does_not_depend_on_threads(tmp_path):
    spec = SolveSpec.parse("2x3")
    build(spec, tmp_path / "one.h5", threads=1, progress=False)
    build(spec, tmp_path / "two.h5", threads=2, progress=False)
    assert checksums(tmp_path / "one.h5") == checksums(tmp_path / "two.h5")


def journal_count(work, stage: str) -> int:
    """Ages a work directory records as finished in ``stage`` ("forward" or "backward")."""
    path = work / "journal.jsonl"
    if not path.exists():
        return 0
    return sum(1 for line in path.read_text().splitlines() if line.startswith(f'{{"{stage}": '))


class Interrupt(Exception):
    pass


def interrupt_at(monkeypatch, method: str, call: int):
    """Make the ``call``-th call of ``WorkDir.<method>`` raise :class:`Interrupt`, as if Ctrl-C arrived after
    ``call - 1`` finished ages; returns a function that restores the method."""
    original = getattr(WorkDir, method)
    calls = []

    def interrupted(self, *args):
        calls.append(1)
        if len(calls) == call:
            raise Interrupt
        return original(self, *args)

    monkeypatch.setattr(WorkDir, method, interrupted)
    return lambda: monkeypatch.setattr(WorkDir, method, original)


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["forward", "backward", "backward-checkpoints"])
def test_interrupted_build_resumes_to_identical_datasets(tmp_path, monkeypatch, stage):
    """Interrupted after 39 ages; "backward-checkpoints" keeps exact values every age, so that the resumed
    backward pass starts from the last solved ages instead of redoing them."""
    spec = SolveSpec.parse("2x3")
    build(spec, tmp_path / "clean.h5", progress=False)
    if stage == "backward-checkpoints":
        monkeypatch.setattr(solver.build, "CHECKPOINT_SECONDS", 0.0)
    restore = interrupt_at(monkeypatch, "record_forward" if stage == "forward" else "record_backward", 40)
    with pytest.raises(Interrupt):
        build(spec, tmp_path / "resumed.h5", progress=False)
    assert not (tmp_path / "resumed.h5").exists()
    assert journal_count(tmp_path / "resumed.h5.work", stage.split("-")[0]) == 39
    restore()
    if stage == "backward-checkpoints":
        kept = solver.build.resumable_ages(
            WorkDir(tmp_path / "resumed.h5.work", spec, SOLVER_VERSION),
            [c.age for c in run_forward(spec, progress=False)],
            set(),
            2,
        )
        assert len(kept) >= 37  # at most the last two solved ages are redone
    build(spec, tmp_path / "resumed.h5", progress=False)
    assert checksums(tmp_path / "resumed.h5") == checksums(tmp_path / "clean.h5")
    assert not (tmp_path / "resumed.h5.work").exists()


@pytest.mark.slow
@pytest.mark.parametrize("when", ["early", "late"])
def test_interrupted_directory_build_keeps_one_copy_and_resumes(tmp_path, monkeypatch, when):
    """A directory table's age files are the only copy of a solved age: the work directory holds no coded
    values, a resumed build keeps those files (it refuses, with a clear error, when one has gone) and ends with
    the same datasets as an uninterrupted build.  "late" stops before the last age, after the other start ages,
    whose start values a resumed build takes without rewriting their files."""
    spec = SolveSpec.parse("2x3")
    build(spec, tmp_path / "clean", layout="directory", progress=False)
    stop = 40 if when == "early" else len(run_forward(spec, progress=False)) - 1
    monkeypatch.setattr(solver.build, "CHECKPOINT_SECONDS", 0.0)
    restore = interrupt_at(monkeypatch, "record_backward", stop)
    out, work = tmp_path / "resumed", tmp_path / "resumed.work"
    with pytest.raises(Interrupt):
        build(spec, out, layout="directory", progress=False)
    restore()
    assert not (out / "table.h5").exists() and journal_count(work, "backward") == stop - 1
    assert not list((work / "backward").glob("*.values.npy"))
    written = sorted((out / "ages").glob("*.h5"))
    assert len(written) >= stop - 1
    solved = [
        json.loads(line)["backward"]
        for line in (work / "journal.jsonl").read_text().splitlines()
        if line.startswith('{"backward"')
    ]
    moved = out / "ages" / f"{solved[0]:06d}.h5"
    moved.rename(tmp_path / "aside.h5")
    with pytest.raises(RuntimeError, match=f"age {solved[0]} as solved, but its table file .* is missing"):
        build(spec, out, layout="directory", progress=False)
    (tmp_path / "aside.h5").rename(moved)
    before = {p: p.stat().st_mtime_ns for p in written}
    build(spec, out, layout="directory", progress=False)
    assert checksums(out) == checksums(tmp_path / "clean")
    kept = [p for p, mtime in before.items() if p.stat().st_mtime_ns == mtime]
    assert len(kept) >= stop - 3  # journalled ages keep their files; at most the last checkpoint pair is redone
    assert not work.exists()


def test_held_layers_keep_what_fits_their_budget_until_released():
    states, afterstates = np.arange(3, dtype=np.uint64), np.arange(2, dtype=np.uint64)  # 40 bytes
    held = HeldLayers(budget=70)
    held.hold(8, states, afterstates)
    held.hold(10, states, afterstates)  # 80 bytes would not fit
    assert held.get(8)[0] is states and held.get(10) is None and held.nbytes == 40
    held.release(8)
    held.hold(10, states, afterstates)
    assert held.get(8) is None and held.get(10)[1] is afterstates and held.nbytes == 40


@pytest.mark.slow
def test_backward_pass_decodes_states_or_derives_ages_journalled_without_them(tmp_path, monkeypatch):
    """With no layer held in memory, the backward pass decodes each age's states from the work directory; ages
    journalled without states (earlier releases kept afterstates only) derive them from the afterstates of ages
    - 2 and - 4.  Both give the table an uninterrupted build writes."""
    monkeypatch.setattr(solver.build, "HOLD_BYTES", 0)
    spec, out = SolveSpec.parse("2x3"), tmp_path / "t.h5"
    work = tmp_path / "t.h5.work"
    restore = interrupt_at(monkeypatch, "finish_forward", 1)
    with pytest.raises(Interrupt):
        build(spec, out, progress=False)
    restore()
    ages = sorted(int(p.name[:6]) for p in (work / "forward").glob("*.states_upper.npy"))
    assert len(ages) == journal_count(work, "forward") > 40
    without = set(ages[::3])
    for age in without:
        for part in ("upper", "lower"):
            (work / "forward" / f"{age:06d}.states_{part}.npy").unlink()
    derived, derive = [], solver.build.derive_states
    monkeypatch.setattr(solver.build, "derive_states", lambda s, age, *a: derived.append(age) or derive(s, age, *a))
    build(spec, out, progress=False)
    assert set(derived) == without
    assert checksums_of(out) == golden("2x3-score")


@pytest.mark.slow
def test_kill_9_then_rerun_resumes(tmp_path):
    """A real ``kill -9`` in the middle of a 2x4 build on two threads, then the same command again: the only build
    of the 2x4 game that is checked against its golden checksums (test_golden.py builds the smaller games)."""
    out = tmp_path / "t.h5"
    cmd = [sys.executable, "-m", "solver", "build", "--board", "2x4", "--threads", "2", "--out", str(out), "--quiet"]
    work = tmp_path / "t.h5.work"
    proc = subprocess.Popen(cmd, cwd=os.path.dirname(os.path.dirname(__file__)))
    while proc.poll() is None and journal_count(work, "forward") < 60:  # kill it once 60 ages are journalled
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = journal_count(work, "forward")
    assert done >= 60 and not out.exists()
    subprocess.run(cmd, check=True, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert checksums_of(out) == golden("2x4-score")  # what an uninterrupted build writes


def test_work_dir_of_another_solve_is_refused(tmp_path):
    work = tmp_path / "w"
    WorkDir(work, SolveSpec.parse("2x2"), "1.0")
    with pytest.raises(RuntimeError, match="different solve"):
        build(SolveSpec.parse("2x3"), tmp_path / "t.h5", work_dir=work, progress=False)


# -- verify and info -------------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(("fmt", "dataset"), [(1, "state_values"), (2, "values")])
def test_verify_passes_then_catches_a_changed_value(all_tables, tmp_path, fmt, dataset):
    src = all_tables[fmt, "2x3", "score", "random"]
    assert verify_table(src, samples=300, progress=False).ok
    bad = tmp_path / "bad.h5"
    bad.write_bytes(src.read_bytes())
    with h5py.File(bad, "r+") as f:
        name = sorted(f["ages"])[10]
        f[f"ages/{name}/{dataset}"][0] += 1
    report = verify_table(bad, samples=50, progress=False)
    assert not report.ok and report.bad_checksums == [f"ages/{name}/{dataset}"]
    assert solver_main(["verify", str(bad), "--quiet", "--samples", "10"]) == 1


def test_verify_recomputes_values(all_tables, tmp_path):
    """A value changed together with its checksum is still caught by the Bellman residuals (v1: raw values;
    v2: every value code shifted, as a bad encoder would)."""
    from solver.format import sha256_of

    for fmt, dataset, delta in ((1, "afterstate_values", 0.5), (2, "values", 1 << 20)):
        bad = tmp_path / f"bad{fmt}.h5"
        bad.write_bytes(all_tables[fmt, "2x2", "score", "random"].read_bytes())
        with h5py.File(bad, "r+") as f:
            for name in f["ages"]:
                ds = f[f"ages/{name}/{dataset}"]
                if ds.shape[0]:
                    values = ds[...] + (np.uint64(delta) if fmt == 2 else delta)
                    ds[...] = values
                    ds.attrs["sha256"] = sha256_of(values)
        report = verify_table(bad, samples=400, progress=False)
        assert not report.bad_checksums and report.value_errors, fmt


def test_info_json_shape(tables, capsys):
    path = tables["2x2", "score", "random"]
    assert solver_main(["info", str(path), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert {
        "board",
        "objective",
        "states",
        "afterstates",
        "terminal_states",
        "start_value",
        "start_values",
        "ages",
    } <= set(info)
    assert info["board"] == "2x2" and info["objective"] == "score"
    assert info["format_version"] == 2 and info["layout"] == "file" and info["bytes"] == path.stat().st_size
    # 2x2 layers are a few boards each: whole words of padding dominate the bits per afterstate
    assert info["bits_per_afterstate_id"] > 0 and info["bits_per_afterstate_value"] > 0
    assert info["value_code"] == "float" and info["value_error_relative"] <= 1e-6
    assert sum(a["states"] for a in info["ages"]) == info["states"]
    ids, probs = B.start_states(2, 2, 0.1, canonical_only=True)
    assert len(info["start_values"]) == len(ids)
    expected = sum(p * info["start_values"][k] for p, k in zip(probs, info["start_values"], strict=True))
    assert info["start_value"] == pytest.approx(expected)


def test_enumerate_json_matches_build(tables, capsys):
    assert solver_main(["enumerate", "--board", "2x3", "--json", "--quiet"]) == 0
    info = json.loads(capsys.readouterr().out)
    with Table(tables["2x3", "score", "random"]) as t:
        assert info["states"] == t.attrs["states"] and info["afterstates"] == t.attrs["afterstates"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["build", "--board", "5x4", "--out", "x.h5"], "at most 16 cells"),
        (["build", "--board", "3x3", "--objective", "tile:2048", "--out", "x.h5"], "tile:11"),
        (["build", "--board", "3x3", "--p4", "1.5", "--out", "x.h5"], "p4"),
        (["build", "--board", "3by3", "--out", "x.h5"], "RxC"),
        (["info", "missing.h5"], "does not exist"),
    ],
)
def test_cli_errors_say_what_is_allowed(argv, message, capsys):
    assert solver_main(argv) == 2
    assert message in capsys.readouterr().err


def test_truncated_table_is_rejected(tables, tmp_path, capsys):
    data = tables["2x3", "score", "random"].read_bytes()
    bad = tmp_path / "cut.h5"
    bad.write_bytes(data[: len(data) // 2])
    assert solver_main(["info", str(bad)]) == 2
    assert "truncated" in capsys.readouterr().err


@pytest.mark.slow
def test_directory_layout_and_convert_give_the_same_datasets(all_tables, tmp_path):
    """A v2 table written as one file, as a directory, or converted from the v1 table of the same solve: the
    same datasets, bit for bit (checksums); ``verify`` passes on each."""
    spec = SolveSpec.parse("2x3")
    directory = tmp_path / "dir"
    build(spec, directory, layout="directory", progress=False)
    assert (
        solver_main(["convert", str(all_tables[1, "2x3", "score", "random"]), str(tmp_path / "conv.h5"), "--quiet"])
        == 0
    )

    def by_age(path):
        return {name.split(":")[-1]: sha for name, sha in checksums(path).items() if "ages/" in name}

    want = by_age(all_tables[2, "2x3", "score", "random"])
    assert by_age(directory) == want and by_age(tmp_path / "conv.h5") == want and len(want) > 300
    for path in (directory, tmp_path / "conv.h5"):
        assert verify_table(path, samples=200, progress=False).ok
    assert solver_main(["convert", str(tmp_path / "conv.h5"), str(tmp_path / "again.h5"), "--quiet"]) == 2


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=["-".join(c) for c in CASES])
def test_verify_passes_on_every_v2_table(tables, case):
    """Residuals within the value code's bound, best actions under the table's own tie rule."""
    report = verify_table(tables[case], samples=2000, progress=False)
    assert report.ok, report.value_errors[:3] + report.layer_errors[:3]
    assert report.checked_states + report.checked_afterstates == 2000


@pytest.mark.slow
def test_verify_on_sampled_ages(tables, capsys):
    """``--ages K`` checks K ages drawn by size, and draws the residual samples from those ages only."""
    path = tables["2x3", "score", "random"]
    with Table(path) as t:
        n_ages = len(t.counts())
    report = verify_table(path, samples=500, progress=False, ages=5)
    assert report.ok and report.checked_ages == 5 < n_ages
    assert report.checked_states + report.checked_afterstates == 500
    assert verify_table(path, samples=0, progress=False).checked_ages == n_ages
    with pytest.raises(ValueError, match="at least 1"):
        verify_table(path, samples=0, progress=False, ages=0)
    assert solver_main(["verify", str(path), "--ages", "3", "--samples", "50", "--quiet"]) == 0
    assert "(3 ages checked)" in capsys.readouterr().out
