"""Shared by the Ray tests: the specs they build, their golden checksums, and a local cluster."""

from __future__ import annotations

import pytest
from golden_tables import golden

from solver.distributed.session import no_cloud_probes, private_ray_environment
from solver.spec import SolveSpec

private_ray_environment()  # before anything imports Ray: loopback only, no usage statistics

#: Every node of the tests' clusters: this machine's loopback, no dashboard.
NODE = {"num_cpus": 1, "node_ip_address": "127.0.0.1", "include_dashboard": False}

#: What the Ray tests build; "3x3 to 256" is the 3x3 game with the objective of making a 256.
SPECS = {
    "2x3": SolveSpec.parse("2x3", "score", 0.1, "random"),
    "2x4": SolveSpec.parse("2x4", "score", 0.1, "random"),
    "3x3-256": SolveSpec.parse("3x3", "tile:8", 0.1, "random"),
}
#: Their golden checksums (tests/golden/): the tables the solver wrote before its kernels were reworked.
GOLDEN_NAMES = {"2x3": "2x3-score", "2x4": "2x4-score", "3x3-256": "3x3-tile8"}


def require_ray():
    return pytest.importorskip("ray", reason="Ray is not installed: pip install -e '.[distributed]' (make test does)")


def golden_checksums(name: str) -> dict[str, str]:
    """The golden checksums of ``SPECS[name]``: what the one-process build wrote, and still writes (2x3, 2x4 and
    the 3x3 score table are rebuilt and compared in test_golden.py)."""
    return golden(GOLDEN_NAMES[name])


def start_cluster(nodes: int = 3):
    """A ``ray.cluster_utils.Cluster`` of ``nodes`` one-CPU nodes on 127.0.0.1 (its processes started without
    cloud probes, see ``solver.ray_engine.no_cloud_probes``); the caller shuts it down."""
    from ray.cluster_utils import Cluster

    with no_cloud_probes():
        c = Cluster(initialize_head=True, head_node_args=NODE)
        for _ in range(nodes - 1):
            c.add_node(**NODE)
    c.wait_for_nodes()
    return c
