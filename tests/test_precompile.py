"""The precompiling worker (``solver.precompile``) compiles exactly what a build and the priced env compile: its
made-up calls use the same argument types, so what it caches is what the build then loads; and a worker started
on an empty cache fills it for the other processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

import env2048.env
from env2048 import engine
from oracle import lookup
from solver import backward, bellman, precompile, value_index
from solver.build import build
from solver.spec import SolveSpec

pytestmark = pytest.mark.slow  # the whole module runs in make test, not in the quick lane

ROOT = Path(__file__).resolve().parents[1]

#: The kernels each part compiles, looked at by the test (the largest ones, and the parallel value index's).
KERNELS = {
    "backward": [bellman.state_values_grouped, bellman._afterstate_values_chunks, value_index._fill_parts],
    "env": [engine.reset_kernel, engine.step_kernel],
    "oracle": [lookup.q_values_block],
}


def test_the_workers_calls_compile_no_signature_a_build_and_the_priced_env_do_not(tmp_path, monkeypatch):
    """After a real build and a priced step (2x2), the worker's calls add no signature to any kernel: numba
    would otherwise have compiled them anew for the made-up inputs' types.  The 3x3 spec's made-up layer too:
    the types do not depend on the board."""
    monkeypatch.setenv("SOLVED2048_HOME", str(tmp_path / "home"))
    spec = SolveSpec.parse("2x2")
    build(spec, tmp_path / "2x2.h5", progress=False)
    value_index.build_value_index(np.array([1, 2], np.uint64), np.zeros(2), parallel_min=1)  # large layers' path
    env = gym.make("Solved2048-2x2", oracle=True)
    _, info = env.reset(seed=0)
    env.step(int(np.nanargmax(info["q_values"])))
    kernels = [k for part in KERNELS.values() for k in part]
    before = {k.py_func.__qualname__: set(k.signatures) for k in kernels}
    assert all(before.values()), before
    calls = spy_on(
        monkeypatch,
        [
            (backward, "state_values_grouped"),
            (backward, "afterstate_values_grouped"),
            (env2048.env, "step_kernel"),
            (lookup, "q_values_block"),
        ],
    )
    precompile.compile_backward(spec)
    precompile.compile_backward(SolveSpec.parse("3x3"))
    precompile.compile_env(spec)
    precompile.compile_oracle()
    assert {k.py_func.__qualname__: set(k.signatures) for k in kernels} == before
    assert all(calls.values()), calls  # the made-up calls did reach the kernels


def spy_on(monkeypatch, names) -> dict[str, int]:
    """Count the calls of each ``(module, name)`` function, which still runs: ``{name: calls}``."""
    calls = dict.fromkeys((name for _, name in names), 0)
    for module, name in names:
        real = getattr(module, name)

        def counted(*args, _real=real, _name=name):
            calls[_name] += 1
            return _real(*args)

        monkeypatch.setattr(module, name, counted)
    return calls


PROBE = """
import json
from env2048 import engine
from solver import precompile
import gymnasium as gym, env2048
env = gym.make("Game2048-v0", rows=2, cols=3)
env.reset(seed=1)
env.step(0)
print(json.dumps({"cached": precompile.is_cached(engine.step_kernel), "hits": len(engine.step_kernel.stats.cache_hits),
                  "misses": len(engine.step_kernel.stats.cache_misses)}))
"""


def test_a_worker_fills_an_empty_cache_for_the_next_process(tmp_path, monkeypatch):
    """A worker launched as a build launches it (the env part: the quickest to compile), on an empty numba cache:
    ``wait_for`` returns once the worker says the part is done, and the next process loads the kernels from the
    cache instead of compiling them."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    assert not precompile.is_cached(lambda: None)
    worker = precompile.launch(SolveSpec.parse("2x3"), ["env"])
    monkeypatch.setattr(precompile, "_worker", worker)
    monkeypatch.setattr(precompile, "_parts_done", set())
    monkeypatch.setattr(precompile, "_unread", b"")
    try:
        precompile.wait_for("env", timeout=300)
        assert precompile._parts_done == {"env"}
        assert worker.wait(60) == 0
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    probe = json.loads(result.stdout.strip().splitlines()[-1])
    assert probe == {"cached": True, "hits": 1, "misses": 0}


def test_a_stuck_worker_does_not_stop_the_build(monkeypatch):
    """``wait_for`` gives up after its timeout: the build then compiles what is missing itself."""
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], stdout=subprocess.PIPE)
    monkeypatch.setattr(precompile, "_worker", sleeper)
    monkeypatch.setattr(precompile, "_parts_done", set())
    try:
        t0 = time.monotonic()
        precompile.wait_for("backward", timeout=1.0)
        # it waited its timeout, then gave up while the worker still ran (the sleeper ends only after 60 s)
        assert time.monotonic() - t0 >= 1.0 and sleeper.poll() is None and precompile._parts_done == set()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_unknown_parts_are_refused(capsys):
    with pytest.raises(SystemExit):
        precompile.main(["--board", "3x3", "--parts", "backward,oracles"])
    assert "unknown parts ['oracles']; allowed: backward, env, oracle" in capsys.readouterr().err


def test_start_launches_nothing_when_switched_off(monkeypatch):
    monkeypatch.setenv(precompile.ENV_SWITCH, "0")
    assert precompile.start(SolveSpec.parse("3x3"), oracle=True) is None


@pytest.mark.parametrize("threads", [1, 2])
def test_start_launches_nothing_when_numba_is_held_to_one_thread(monkeypatch, threads):
    """Parallel trainers run with NUMBA_NUM_THREADS=1: a worker would take a core another of them uses."""
    launched = []
    monkeypatch.setenv(precompile.ENV_SWITCH, "1")
    monkeypatch.setattr(precompile, "_worker", None)
    monkeypatch.setattr(precompile.numba.config, "NUMBA_DEFAULT_NUM_THREADS", 2)
    monkeypatch.setattr(precompile.numba.config, "NUMBA_NUM_THREADS", threads)
    monkeypatch.setattr(precompile, "launch", lambda spec, parts: launched.append(parts) or "worker")
    monkeypatch.setattr(precompile.atexit, "register", lambda fn: None)
    started = precompile.start(SolveSpec.parse("3x3"), oracle=True)  # the oracle always asks when it lacks kernels
    assert (started, launched) == ((None, []) if threads == 1 else ("worker", [precompile.PARTS]))
