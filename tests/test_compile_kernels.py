"""Compiling the kernels once before the tests (experiments.compile_kernels): a part fills an empty cache for the
processes after it, notes itself as done, and a failed part is named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments import compile_kernels

pytestmark = pytest.mark.slow  # compiles the env's kernels into an empty cache

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import json
import gymnasium as gym
import env2048
from env2048 import engine
env = gym.make("Game2048-v0", rows=2, cols=3)
env.reset(seed=1)
env.step(0)
stats = engine.step_kernel.stats
print(json.dumps({"hits": len(stats.cache_hits), "misses": len(stats.cache_misses)}))
"""


def _run(args, cache: Path, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "SOLVED2048_NUMBA_CACHE": str(cache)}
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300, **kwargs
    )


def test_a_part_fills_an_empty_cache_for_the_next_process_and_notes_itself(tmp_path, monkeypatch):
    cache = tmp_path / "numba"
    done = _run(["-m", "experiments.compile_kernels", "--parts", "env", "--verbose"], cache, check=True)
    assert done.stdout.startswith("compiled env in ")
    monkeypatch.setenv("SOLVED2048_NUMBA_CACHE", str(cache))
    assert compile_kernels.parts_done() == {"env"}
    counts = compile_kernels.signatures(compile_kernels.done_file().parent)
    assert counts[("env2048.engine", "engine.step_kernel")] >= 1
    probe = json.loads(_run(["-c", PROBE], cache, check=True).stdout)
    assert probe["hits"] >= 1 and probe["misses"] == 0  # loaded from the cache, not compiled
    # the cache of another run, with one signature more: --check names it
    other = tmp_path / "other" / "version"
    for path in compile_kernels.done_file().parent.glob("*/*.nbc"):
        (other / path.parent.name).mkdir(parents=True, exist_ok=True)
        (other / path.parent.name / path.name).write_bytes(b"")
    (other / "env2048.engine" / "engine.step_kernel-98.py311.99.nbc").write_bytes(b"")
    checked = _run(["-m", "experiments.compile_kernels", "--check", str(other)], cache, check=True).stdout
    assert "1 missing here" in checked and "env2048.engine engine.step_kernel: 1" in checked


def test_parts_that_are_done_are_not_run_again_and_a_failed_part_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("SOLVED2048_NUMBA_CACHE", str(tmp_path / "numba"))
    monkeypatch.setattr(compile_kernels, "PLAN", (("no-such-part",),))
    with pytest.raises(RuntimeError, match=r"(?s)parts \['no-such-part'\] failed:\n.*unknown parts"):
        compile_kernels.compile_all(jobs=2, verbose=False)
    compile_kernels._note_done("no-such-part")
    assert compile_kernels.compile_all(jobs=2, verbose=False) == 0.0  # nothing left to compile: no process started
    with pytest.raises(ValueError, match="jobs must be >= 1"):
        compile_kernels.compile_all(jobs=0)
    wrong = _run(["-m", "experiments.compile_kernels", "--parts", "env,nope"], tmp_path / "numba")
    assert wrong.returncode == 2 and "unknown parts ['nope']" in wrong.stderr
