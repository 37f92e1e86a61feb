"""The kernels' numba cache is shared by every install: a second copy of the package, at another path, loads the
kernels the first copy compiled instead of compiling them again; ``NUMBA_CACHE_DIR`` still takes precedence."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from env2048 import kernel_cache

pytestmark = pytest.mark.slow  # the whole module runs in make test, not in the quick lane

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json, numpy as np
import env2048.board as board
kernel = board._row_move_generic
result = kernel(np.uint64(0x11), 1, 9, True)
print(json.dumps({"file": board.__file__, "result": [int(x) for x in result], "path": kernel._cache._cache_path,
                  "hits": len(kernel.stats.cache_hits), "misses": len(kernel.stats.cache_misses)}))
"""


def _copy_of_env2048(parent: Path) -> Path:
    shutil.copytree(ROOT / "env2048", parent / "env2048", ignore=shutil.ignore_patterns("__pycache__"))
    return parent


def _probe(site: Path, **env: str) -> dict:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE") and k != "PYTHONPATH"}
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=site,
        env={**clean, "PYTHONPATH": str(site), **env},
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_second_install_loads_the_kernels_the_first_compiled(tmp_path):
    cache = tmp_path / "cache"
    first = _probe(_copy_of_env2048(tmp_path / "a"), SOLVED2048_NUMBA_CACHE=str(cache))
    second = _probe(_copy_of_env2048(tmp_path / "b"), SOLVED2048_NUMBA_CACHE=str(cache))
    assert first["file"] != second["file"]
    assert (first["hits"], first["misses"]) == (0, 1)
    assert (second["hits"], second["misses"]) == (1, 0)
    assert first["result"] == second["result"]
    assert first["path"] == second["path"] and Path(first["path"]).name == "env2048.board"
    assert Path(first["path"]).parent.parent.parent == cache  # cache / py3X-numbaV / digest of the kernels / module


def test_a_changed_kernel_module_gets_its_own_cache_directory(tmp_path):
    """A module with kernels changed: another directory (its callers elsewhere are compiled again too).  A module
    without kernels changed: the same directory, nothing compiled."""
    cache = tmp_path / "cache"
    first = _probe(_copy_of_env2048(tmp_path / "a"), SOLVED2048_NUMBA_CACHE=str(cache))
    changed = _copy_of_env2048(tmp_path / "b")
    with open(changed / "env2048" / "board.py", "a") as f:
        f.write("\n# a different version of the module\n")
    second = _probe(changed, SOLVED2048_NUMBA_CACHE=str(cache))
    assert first["path"] != second["path"] and (second["hits"], second["misses"]) == (0, 1)
    plain = _copy_of_env2048(tmp_path / "c")
    with open(plain / "env2048" / "env.py", "a") as f:
        f.write("\n# no kernel here\n")
    third = _probe(plain, SOLVED2048_NUMBA_CACHE=str(cache))
    assert third["path"] == first["path"] and (third["hits"], third["misses"]) == (1, 0)


def test_numba_cache_dir_still_wins(tmp_path):
    mine = tmp_path / "numba-cache-dir"
    probe = _probe(
        _copy_of_env2048(tmp_path / "a"), SOLVED2048_NUMBA_CACHE=str(tmp_path / "unused"), NUMBA_CACHE_DIR=str(mine)
    )
    assert Path(probe["path"]).is_relative_to(mine) and not (tmp_path / "unused").exists()


def test_only_other_versions_unused_for_long_are_removed(tmp_path):
    old, recent, current = (tmp_path / name for name in ("old", "recent", "current"))
    for path in (old, recent, current):
        (path / "env2048.board").mkdir(parents=True)
    long_ago = time.time() - (kernel_cache.STALE_DAYS + 1) * 86400
    os.utime(old, (long_ago, long_ago))
    os.utime(current, (long_ago, long_ago))
    kernel_cache.remove_stale_versions(tmp_path, keep="current")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["current", "recent"]


def test_compile_progress_counts_real_compilations_only(capsys):
    """A bar appears at the first compilation and counts the functions compiled; calls that compile nothing show
    no bar, and with progress off nothing is shown."""
    import numba

    from env2048.compile_progress import COMPILING, compile_progress

    @numba.njit
    def twice(x):
        return 2 * x

    with compile_progress() as counter:
        assert twice(3) == 6
    assert counter.count == 1
    assert COMPILING in capsys.readouterr().err
    with compile_progress() as counter:
        assert twice(4) == 8  # already compiled for int64
    assert counter.count == 0 and COMPILING not in capsys.readouterr().err
    with compile_progress(enabled=False) as counter:
        assert twice(1.5) == 3.0  # compiles for float64, unseen
    assert counter.count == 0 and COMPILING not in capsys.readouterr().err
