"""Shared by the Ray tests: the specs they build, their golden checksums, and a local cluster."""

from __future__ import annotations

import pytest
from golden_tables import golden

from solver.distributed.session import local_cluster, private_ray_environment
from solver.spec import SolveSpec

private_ray_environment()  # before anything imports Ray: loopback only, no usage statistics

#: What the Ray tests build; "2x4-64" is the 2x4 game with the objective of making a 64.
SPECS = {
    "2x3": SolveSpec.parse("2x3", "score", 0.1, "random"),
    "2x4": SolveSpec.parse("2x4", "score", 0.1, "random"),
    "2x4-64": SolveSpec.parse("2x4", "tile:6", 0.1, "random"),
}
#: Their golden checksums (tests/golden/): the tables the solver wrote before its kernels were reworked.
GOLDEN_NAMES = {"2x3": "2x3-score", "2x4": "2x4-score", "2x4-64": "2x4-tile6"}


def require_ray():
    return pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[distributed]' (make test does)")


def golden_checksums(name: str) -> dict[str, str]:
    """The golden checksums of ``SPECS[name]``: what the one-process build wrote, and still writes (2x3 and 2x4-64
    are rebuilt and compared in test_golden.py, 2x4 in test_solver.py's kill -9 test)."""
    return golden(GOLDEN_NAMES[name])


def start_cluster(nodes: int = 3):
    """``nodes`` one-CPU nodes on 127.0.0.1 (``solver.distributed.session.local_cluster``); the caller shuts it
    down."""
    return local_cluster(nodes)
