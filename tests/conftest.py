"""Shared test helpers: make ``naive`` importable and give hypothesis strategies for boards."""

from __future__ import annotations

import math
import os
import shutil
import sys
import tempfile

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(__file__))
# Tables that gym.make("Solved2048-*") and Oracle.for_board build go to a fresh directory: tests never read a
# developer's cache (which an older solver may have written) nor write to it.  SB3's default logger, which makes an
# empty SB3-<time> folder per training run, writes there too; the directory goes at the end of the session.
TEST_HOME = tempfile.mkdtemp(prefix="solved2048-tests-")
os.environ["SOLVED2048_HOME"] = TEST_HOME
os.environ["SB3_LOGDIR"] = os.path.join(TEST_HOME, "sb3-logs")

settings.register_profile("ci", max_examples=150, deadline=None, derandomize=True)
settings.register_profile("dev", max_examples=60, deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Shapes the properties run on: all squares, the benchmark's non-square boards, and long thin ones.
SHAPES = [(2, 2), (3, 3), (4, 4), (4, 3), (3, 4), (3, 5), (2, 7), (7, 2), (2, 8), (5, 6), (6, 6), (8, 8), (2, 3)]
PACKED_SHAPES = [s for s in SHAPES if s[0] * s[1] <= 16]


@st.composite
def boards(draw, shapes=SHAPES, max_exp=12, fill=None):
    """(rows, cols, grid) with grid a list of lists of exponents, about half the cells filled."""
    rows, cols = draw(st.sampled_from(shapes))
    p_empty = draw(st.sampled_from([0.0, 0.2, 0.5, 0.8])) if fill is None else fill
    cells = draw(
        st.lists(
            st.one_of(st.integers(1, max_exp), st.just(0)) if p_empty else st.integers(1, max_exp),
            min_size=rows * cols,
            max_size=rows * cols,
        )
    )
    # Small exponents make merges likely; squash half of the draws into 1..3.
    cells = [v if v == 0 or draw(st.booleans()) else 1 + v % 3 for v in cells]
    return rows, cols, [cells[r * cols : (r + 1) * cols] for r in range(rows)]


def chi2_pvalue(observed, expected) -> float:
    """Upper-tail p-value of Pearson's chi-square statistic (Wilson-Hilferty normal approximation)."""
    observed = np.asarray(observed, float)
    expected = np.asarray(expected, float)
    x = float(((observed - expected) ** 2 / expected).sum())
    k = len(observed) - 1
    z = ((x / k) ** (1 / 3) - (1 - 2 / (9 * k))) / math.sqrt(2 / (9 * k))
    return 0.5 * math.erfc(z / math.sqrt(2))


def pytest_sessionfinish(session, exitstatus):
    """The session's table cache (the 3x3 table alone is 125 MB) does not outlive it."""
    shutil.rmtree(TEST_HOME, ignore_errors=True)
