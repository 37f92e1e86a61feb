"""Endgame patterns: clear errors for bad patterns, the rules kernel against its plain-Python reference,
fixed tiles never moved, tile:K as a pattern keeping its golden checksums, and solved patterns agreeing on every
value with an independent brute-force solver (``naive_pattern.py``)."""

from __future__ import annotations

import json

import hypothesis.strategies as st
import numba
import numpy as np
import pytest
from golden_tables import checksums_of, golden
from hypothesis import given, settings
from naive_pattern import NaivePattern

from env2048 import board as B
from env2048.pattern import Pattern, PatternError, builtin_names, builtin_pattern, load_pattern
from env2048.rules import ILLEGAL, move_outcome, reference_outcome
from oracle.oracle import Oracle
from solver.build import build
from solver.distributed.driver import build_by_material
from solver.spec import SolveSpec

# ---------------------------------------------------------------------------------------------- bad patterns

GOOD = {"rows": 2, "cols": 4, "grid": [". . . 128", ". . t 64"], "target": 16}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"grid": ["64 128 256 512", "1024 2048 4096 8192"]}, "no free cell"),
        ({"grid": [". . . 16", ". . t 64"]}, "fixed tile 16 at row 0, col 3 is not larger than 16"),
        ({"target": 12}, "target must be a tile"),
        ({"target": 4}, "target must be a power of two from 8"),
        ({"grid": [". . . 128"]}, "grid must be a list of 2 strings"),
        ({"grid": [". . 128", ". . t 64"]}, "has 3 cells; the board has 4 columns"),
        ({"rows": 3, "cols": 6, "grid": [". . . . . ."] * 3}, "18 cells; patterns have at most 16"),
        ({"grid": [". . x 128", ". . t 64"]}, "'x' is not '.', 't' or a tile value"),
        ({"colour": 1}, "unknown pattern keys ['colour']"),
    ],
)
def test_bad_patterns_get_errors_naming_what_is_wrong(change, message):
    with pytest.raises(PatternError, match=message.replace("(", r"\(").replace("[", r"\[")):
        Pattern.from_dict({**GOOD, **change})


def test_pattern_files_and_builtins_load(tmp_path):
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(GOOD))
    p = load_pattern(path)
    assert p.name == "mine" and p.target_tile == 16 and p.conditions == (((6, 4),),)
    assert Pattern.from_dict(p.to_dict()) == p
    assert load_pattern(path, target=32).target_tile == 32
    free = {"L3": 10, "442": 10, "t": 10, "LL": 12, "4431": 12, "444": 12}  # docs/endgame.md
    assert set(builtin_names()) == set(free)
    for name in builtin_names():
        b = builtin_pattern(name, 512)
        assert len(b.free_cells) == free[name] and all(e > 9 for _, e in b.fixed)
        assert Pattern.from_dict(b.to_dict()) == b
    with pytest.raises(PatternError, match="needs a target tile"):
        load_pattern("L3")
    with pytest.raises(PatternError, match="neither a built-in pattern"):
        load_pattern(tmp_path / "missing.json")


# ---------------------------------------------------------------------------------------------- the rules


@numba.njit(cache=True)
def _outcomes(ids, rows, cols, moves, rules):
    out = np.empty((ids.size, 4), np.int64)
    after = np.empty((ids.size, 4), np.uint64)
    for i in range(ids.size):
        for a in range(4):
            after[i, a], _, out[i, a] = move_outcome(ids[i], a, rows, cols, moves, rules)
    return out, after


RULES_CASES = [
    GOOD,
    {"rows": 3, "cols": 3, "grid": [". . .", ". 32 .", "t . ."], "target": 8},
    {
        "rows": 2,
        "cols": 4,
        "grid": [". . . .", "64 32 . ."],
        "target": 16,
        "cap": 8,
        "precedence": "failure",
        "success": [[[1, 2, 8], [1, 3, 8]], [[1, 2, 8], [0, 2, 8]]],
    },
]


@settings(max_examples=40, deadline=None)
@given(st.sampled_from(range(len(RULES_CASES))), st.lists(st.integers(0, 7), min_size=16, max_size=16))
def test_move_outcome_matches_the_reference_and_never_moves_a_fixed_tile(case, free_tiles):
    p = Pattern.from_dict(RULES_CASES[case])
    grid = np.zeros(p.cells, np.int64)
    for cell, e in p.fixed:
        grid[cell] = e
    for k, cell in enumerate(p.free_cells):
        grid[cell] = free_tiles[k]
    b = B.pack(grid.reshape(p.rows, p.cols))
    outcomes, afters = _outcomes(np.array([b], np.uint64), p.rows, p.cols, p.tables.moves, p.rules)
    for a in range(4):
        assert outcomes[0, a] == reference_outcome(b, afters[0, a], p.rules)
        moved, _ = B.move(b, a, p.rows, p.cols)
        assert afters[0, a] == moved
        if outcomes[0, a] != ILLEGAL:
            after = B.unpack(afters[0, a], p.rows, p.cols).reshape(-1)
            assert all(after[cell] == e for cell, e in p.fixed)


def test_tile_k_as_a_pattern_keeps_its_golden_checksums(tmp_path):
    """2x4 tile:6 built as the pattern with no fixed cell and every cell a target: the same datasets, bit for bit."""
    p = Pattern.from_dict({"rows": 2, "cols": 4, "grid": [". . . .", ". . . ."], "target": 64})
    assert p.symmetries == (0, 1, 2, 3)
    build(SolveSpec.for_pattern(p), tmp_path / "t", progress=False, layout="directory")
    assert checksums_of(tmp_path / "t") == golden("2x4-tile6")


# ---------------------------------------------------------------------------------------------- brute force

AGREEMENT = {
    "2x4-targets": GOOD,
    "3x3-corner": {"rows": 3, "cols": 3, "grid": [". . .", ". . .", ". . 256"], "target": 16},
    "2x4-pairs": RULES_CASES[2],
    "4x4-9-free": {
        "rows": 4,
        "cols": 4,
        "grid": [". . . .", ". . . .", ". 64 128 256", "4096 2048 1024 512"],
        "target": 8,
    },
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(AGREEMENT))
def test_solved_patterns_agree_with_brute_force(tmp_path, name):
    data = AGREEMENT[name]
    spec = SolveSpec.for_pattern(Pattern.from_dict(data))
    build(spec, tmp_path / "t", progress=False, layout="directory")
    naive = NaivePattern(data, spec.p4)
    boards = sorted(naive.reachable_states())
    grids = np.array(boards, np.int64)
    with Oracle.open(tmp_path / "t") as oracle:
        q = oracle.q_values(grids)
        table_start = oracle.start_value
    expected = np.array([[np.nan if v is None else v for v in naive.q_values(b)] for b in boards])
    np.testing.assert_array_equal(np.isnan(q), np.isnan(expected))
    np.testing.assert_allclose(q, expected, rtol=0, atol=2e-9)
    assert abs(table_start - naive.start_value()) < 2e-9
    assert len(boards) > 100  # the patterns are not trivial


@pytest.mark.slow
def test_distributed_pattern_tables_are_identical_to_the_local_build(tmp_path):
    """The distributed build (three workers in process here; Ray runs the same steps) on a pattern, whose locked
    tiles are part of every board's material: the local build's datasets."""
    spec = SolveSpec.for_pattern(Pattern.from_dict(AGREEMENT["3x3-corner"]))
    build(spec, tmp_path / "local", progress=False, layout="directory")
    build_by_material(spec, tmp_path / "distributed", 3, low=3, progress=False)
    assert checksums_of(tmp_path / "distributed") == checksums_of(tmp_path / "local")


def test_the_cli_builds_a_pattern_file_and_reports_the_pattern(tmp_path, capsys):
    """``solver build --pattern FILE``, then ``info --json`` and ``enumerate --json`` name the pattern, with the
    same counts; ``--target`` overrides the file's target."""
    from solver.__main__ import main as solver_main

    path = tmp_path / "corner.json"
    path.write_text(json.dumps(AGREEMENT["3x3-corner"]))
    out = tmp_path / "t"
    assert (
        solver_main(
            [
                "build",
                "--board",
                "3x3",
                "--pattern",
                str(path),
                "--target",
                "32",
                "--quiet",
                "--layout",
                "directory",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert solver_main(["info", str(out), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert (
        solver_main(["enumerate", "--board", "3x3", "--pattern", str(path), "--target", "32", "--quiet", "--json"]) == 0
    )
    counts = json.loads(capsys.readouterr().out)
    expected = {**AGREEMENT["3x3-corner"], "name": "corner", "target": 32}
    assert info["pattern"] == counts["pattern"] == Pattern.from_dict(expected).to_dict()
    assert (info["states"], info["afterstates"]) == (counts["states"], counts["afterstates"])
    assert 0 < info["start_value"] < 1
