"""The solver still writes, bit for bit, the tables it wrote before its kernels were reworked (``golden_tables.py``):
small games on one and two threads, both layouts, and the cached 3x3 table the other tests use."""

from __future__ import annotations

import pytest
from golden_tables import checksums_of, golden, spec_of

from solver.build import build
from solver.provision import cached_table


@pytest.mark.parametrize(
    ("name", "threads", "layout"),
    [
        ("2x3-score", 1, "file"),
        ("2x3-score", 2, "directory"),
        ("2x4-tile6", 1, "directory"),
        ("2x4-tile6", 2, "file"),
    ],
)
def test_small_tables_match_the_golden_checksums(tmp_path, name, threads, layout):
    out = tmp_path / "t"
    build(spec_of(name), out, threads=threads, progress=False, layout=layout)
    assert checksums_of(out) == golden(name)


@pytest.mark.slow
def test_3x3_table_matches_the_golden_checksums():
    """The 3x3 score table of the test session's cache (built once, shared with the oracle tests)."""
    assert checksums_of(cached_table(spec_of("3x3-score"), progress=False)) == golden("3x3-score")
