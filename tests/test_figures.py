"""Figures of the solved game: the per-age statistics against a pure-Python pass, and rendering without a display."""

from __future__ import annotations

import numpy as np
import pytest

from env2048.tables import board_tables
from experiments import figures
from solver.format import Table
from solver.provision import cached_table
from solver.spec import SolveSpec

import naive


def reference_statistics(layer, rows, cols, p4=0.1) -> list[float]:
    value = dict(zip(layer["afterstates"].tolist(), layer["afterstate_values"].tolist(), strict=True))
    empty = gaps = ties = multi = 0.0
    for s in layer["states"].tolist():
        grid = naive.unpack(s, rows, cols)
        empty += len(naive.empty_cells(grid))
        q = sorted(
            r + value[naive.canonical(after)] for a in range(4) for after, r in [naive.move(grid, a)] if after != grid
        )
        if len(q) >= 2:
            multi += 1
            gaps += sum(q[-1] - x for x in q[:-1]) / (len(q) - 1)
            ties += q[-1] - q[-2] < figures.NEAR_TIE
    can_end = p_end = 0.0
    for b in layer["afterstates"].tolist():
        p = sum(
            prob for child, prob in naive.spawn_outcomes(naive.unpack(b, rows, cols), p4) if not any(naive.legal(child))
        )
        can_end += p > 0
        p_end += p
    best = max(layer["afterstate_values"].tolist(), default=-np.inf)
    return [empty, multi, gaps, ties, can_end, p_end, best]


@pytest.mark.slow
@pytest.mark.parametrize("board", ["2x3", "3x2"])
def test_layer_statistics_match_reference(board):
    spec = SolveSpec.parse(board)
    T = board_tables(spec.rows, spec.cols)
    checked = 0
    with Table(cached_table(spec, progress=False)) as table:
        for c in table.counts()[::7]:
            layer = table.layer(c.age)
            got = figures.layer_statistics(
                layer["states"],
                layer["afterstates"],
                layer["afterstate_values"],
                spec.rows,
                spec.cols,
                T.moves,
                T.sym_lines,
                T.sym_bytes,
                0.1,
            )
            np.testing.assert_allclose(got, reference_statistics(layer, spec.rows, spec.cols), rtol=1e-9)
            checked += c.states
    assert checked > 1000


def test_figures_render_to_files_without_a_display(tmp_path):
    figures.main(["--board", "2x2", "--out", str(tmp_path), "--quiet"])
    png = tmp_path / "2x2-solved.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20000
    lines = (tmp_path / "2x2-by-age.csv").read_text().splitlines()
    assert lines[0].split(",") == list(figures.FIELDS)
    ages = [int(line.split(",")[0]) for line in lines[1:]]
    assert ages == sorted(ages) and len(ages) == len(set(ages)) > 10
