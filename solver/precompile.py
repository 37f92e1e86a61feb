"""Compile, in a second process, the kernels a first build needs later, while this process compiles and runs the
first ones.

Numba compiles one function at a time per process (its compiler lock), and a first build waits ~65 s for ~90
functions on two cores, mostly one core busy.  The build's order is fixed: the forward pass's kernels, then the
backward pass's, then (for a user of the oracle) the env's and the oracle's.  So when the cache
(:mod:`env2048.kernel_cache`) lacks the backward pass's kernels, :func:`start` launches ``python -m
solver.precompile``, which compiles them into the same cache on the other core: it calls the backward pass's
functions on a few made-up boards (compiling needs only the argument types; the made-up layer is then rejected as
corrupt, which is expected), then steps a ``Game2048-v0`` env, and with ``oracle`` solves the 2x2 board into a
temporary directory and prices a move on it, once the forward kernels are in the cache (this process compiles
them; the worker waits for them rather than compile them twice).  The worker prints each part's name when it is
done, and the build waits for the backward part before its backward pass (:func:`wait_for`), the oracle for the
rest before its first lookup: compiling a kernel here that the worker is compiling would only take its core.  A
kernel the worker did not cache (it failed, or was stopped) is compiled here as before, so the worker can only
save time, never change a result (the cache holds the same machine code either process would make).

``SOLVED2048_PRECOMPILE=0`` turns it off; it is off on one core.  The worker is stopped when this process exits.
"""

from __future__ import annotations

import argparse
import atexit
import os
import select
import subprocess
import sys
import tempfile
import time

import numba
from tqdm.auto import tqdm

#: Set to "0" to never start the worker (the worker sets it for itself: it starts no worker of its own).
ENV_SWITCH = "SOLVED2048_PRECOMPILE"
#: Longest wait, in seconds, of the worker for the forward pass's kernels before it compiles them itself.
WAIT_FORWARD_S = 180.0

_worker: subprocess.Popen | None = None
#: Whose kernels each part compiles, for messages.
WHAT = {"backward": "backward pass's", "env": "env's", "oracle": "env's and oracle's"}
#: The parts the worker has said it finished, and the end of its output not yet split into lines.
_parts_done: set[str] = set()
_unread = b""
#: Longest wait, in seconds, of the build for one part of the worker (it then compiles what is missing itself).
WAIT_WORKER_S = 300.0


def is_cached(dispatcher) -> bool:
    """Whether numba's on-disk cache has an index for ``dispatcher`` (some signature of it was compiled and
    saved); False for a function without a cache."""
    cache_file = getattr(getattr(dispatcher, "_cache", None), "_cache_file", None)
    index = getattr(cache_file, "_index_path", None)
    return index is not None and os.path.exists(index)


def start(spec, oracle: bool = False) -> subprocess.Popen | None:
    """Launch the worker for ``spec``'s build unless the backward pass's kernels are cached and ``oracle`` is false
    (the oracle passes whether its own kernels are missing), it is switched off, there is one core or numba is held
    to one thread (``NUMBA_NUM_THREADS=1``), or a worker was launched already by this process. Returns the worker's
    process, or None."""
    global _worker
    # numba's count of the cores this process may run on, and of the threads it was told to use (parallel
    # trainers run one thread each, and a worker would take a core another of them uses)
    cores = min(numba.config.NUMBA_DEFAULT_NUM_THREADS, numba.config.NUMBA_NUM_THREADS)
    if _worker is not None or os.environ.get(ENV_SWITCH, "1") == "0" or cores < 2:
        return None
    from .bellman import state_values_grouped

    if is_cached(state_values_grouped) and not oracle:
        return None
    _worker = launch(spec, PARTS if oracle else PARTS[:2])
    atexit.register(stop)
    return _worker


def launch(spec, parts) -> subprocess.Popen:
    """``python -m solver.precompile`` for ``spec`` and ``parts`` (of :data:`PARTS`), silent."""
    cmd = [
        sys.executable,
        "-m",
        "solver.precompile",
        "--board",
        spec.board,
        "--objective",
        spec.objective,
        "--parts",
        ",".join(parts),
    ]
    # one numba thread: an idle OpenMP pool would spin beside the build
    env = {**os.environ, ENV_SWITCH: "0", "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.Popen(cmd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)


def wait_for(part: str, progress: bool = False, timeout: float | None = None) -> None:
    """Wait until the worker, if one runs, has compiled ``part`` (its kernels are in the cache), has ended, or
    ``timeout`` seconds (default :data:`WAIT_WORKER_S`) have passed: compiling them here too would only take the
    core the worker compiles them on, but a stuck worker must not stop the build.  The worker prints each part's
    name when the part is done.  With ``progress``, says so when there is something to wait for."""
    global _unread
    if _worker is None or part in _parts_done or _worker.stdout is None:
        return
    if progress and _worker.poll() is None:
        tqdm.write(f"waiting for a second process compiling the {WHAT[part]} kernels (once per install)")
    end = time.monotonic() + (WAIT_WORKER_S if timeout is None else timeout)
    fd = _worker.stdout.fileno()
    while part not in _parts_done:
        ready, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
        if not ready:
            return  # timed out: what the worker has not cached compiles here
        chunk = os.read(fd, 4096)
        if not chunk:
            return  # the worker ended
        *lines, _unread = (_unread + chunk).split(b"\n")
        _parts_done.update(line.decode().strip() for line in lines)


def stop() -> None:
    """Stop the worker if it still runs (what it cached so far stays cached)."""
    if _worker is not None and _worker.poll() is None:
        _worker.terminate()
        try:
            _worker.wait(10)
        except subprocess.TimeoutExpired:
            _worker.kill()
            _worker.wait()


def compile_backward(spec) -> None:
    """Compile the backward pass's kernels for ``spec``'s types by running them on a made-up layer (two boards,
    no next layers: the kernels run, find the children missing and the pass rejects the layer)."""
    import numpy as np

    from .backward import CorruptLayer, solve_age, solve_states
    from .value_index import build_value_index, empty_value_index

    boards = np.array([0x21, 0x121], np.uint64)
    values = np.zeros(2, np.float64)
    for solve in (
        lambda: solve_age(spec, boards, boards, empty_value_index(), empty_value_index()),
        lambda: solve_states(spec, boards, boards, values),
    ):
        try:
            solve()
        except CorruptLayer:
            pass
    build_value_index(boards, values, parallel_min=1)  # large layers' index: built in parallel partitions


def compile_env(spec) -> None:
    """Compile the env's reset and step kernels."""
    import gymnasium as gym
    import numpy as np

    import env2048  # noqa: F401  (registers the ids)

    env = gym.make("Game2048-v0", rows=spec.rows, cols=spec.cols)
    _, info = env.reset(seed=0)
    env.step(int(np.argmax(info["action_mask"])))


def wait_for_forward(timeout: float, parent: int) -> None:
    """Wait until the forward pass's largest kernels are cached (the parent process compiles them), the
    parent is gone, or ``timeout`` seconds have passed."""
    from .kernels import _spawn_chunks, expand_states

    end = time.monotonic() + timeout
    while time.monotonic() < end and os.getppid() == parent:
        if is_cached(expand_states) and is_cached(_spawn_chunks):
            return
        time.sleep(0.5)


def compile_oracle() -> None:
    """Compile the oracle's lookup kernels and the priced env's: solve 2x2 into the table cache
    (``SOLVED2048_HOME``; the build's kernels are the first build's, cached by now) and price a move."""
    import gymnasium as gym
    import numpy as np

    import env2048  # noqa: F401

    env = gym.make("Solved2048-2x2", oracle=True)
    _, info = env.reset(seed=0)
    env.step(int(np.nanargmax(info["q_values"])))
    env.close()


#: What the worker compiles, in this order: the backward pass's kernels, the env's, the oracle's.  Not the forward
#: pass's: the build needs them at once; those it needs after ``expand_states`` (~10 s of compiling) would keep the
#: worker from the backward pass's until the build waits for them (one run each: 84.6 s to the first priced step,
#: against 79.4 s and 81.7 s without them; docs/solver-performance.md, "A second process compiles meanwhile").
PARTS = ("backward", "env", "oracle")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--board", required=True)
    parser.add_argument("--objective", default="score")
    parser.add_argument("--parts", default=",".join(PARTS[:2]), help=f"of {','.join(PARTS)}")
    args = parser.parse_args(argv)
    parts = args.parts.split(",")
    if unknown := set(parts) - set(PARTS):
        parser.error(f"unknown parts {sorted(unknown)}; allowed: {', '.join(PARTS)}")
    from .spec import SolveSpec

    parent = os.getppid()
    spec = SolveSpec.parse(args.board, args.objective)
    compilers = {"backward": compile_backward, "env": compile_env}
    for part in parts:
        if os.getppid() != parent:
            return  # the build is gone: nobody waits for the rest
        if part == "oracle":
            wait_for_forward(WAIT_FORWARD_S, parent)
            with tempfile.TemporaryDirectory(prefix="solved2048-precompile-") as home:
                os.environ["SOLVED2048_HOME"] = home
                compile_oracle()
        else:
            compilers[part](spec)
        print(part, flush=True)  # to the process that waits for it (wait_for)


if __name__ == "__main__":
    main()
