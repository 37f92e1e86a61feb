"""Where a suite result comes from: the code's commit, the package versions, the suite and protocol versions,
the command and the machine."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

#: Distributions whose versions a result records.
PACKAGES = ("solved2048", "numpy", "numba", "gymnasium", "h5py", "torch", "stable-baselines3", "sb3-contrib", "rliable")


def git_commit(root: Path | None = None) -> str | None:
    """The commit of the code's checkout (``+dirty`` if it has uncommitted changes), or None outside git."""
    root = root or Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("+dirty" if dirty else "")


def versions() -> dict[str, str | None]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def provenance(command: list[str] | None, tasks) -> dict:
    from experiments.benchmark import PROTOCOL_VERSION

    from .tasks import SUITE_VERSION

    return {
        "commit": git_commit(),
        "packages": versions(),
        "suite_version": SUITE_VERSION,
        "protocol_version": PROTOCOL_VERSION,
        "command": command if command is not None else sys.argv,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpus": os.cpu_count(),
            "processor": platform.machine(),
        },
        "tasks": {t.name: t.env_id for t in tasks},
    }
