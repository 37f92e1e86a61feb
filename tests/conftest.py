"""Shared test helpers: make ``naive`` importable and give hypothesis strategies for boards."""

from __future__ import annotations

import contextlib
import math
import multiprocessing.util
import os
import shutil
import signal
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st

from env2048.kernel_cache import cache_base

sys.path.insert(0, os.path.dirname(__file__))

#: pytest-xdist's name of this worker process ("gw0", ...); empty in the controller or a run without workers.
XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")

#: The temporary directory and home of the machine, before :func:`pytest_configure` moved both into pytest's base
#: temporary directory (tests that check that nothing is left outside it look here).
#: (pytest-xdist's workers start after the controller moved both: they read the originals it passed on.)
SYSTEM_TMP = os.environ.setdefault("SOLVED2048_SYSTEM_TMP", tempfile.gettempdir())
SYSTEM_HOME = os.environ.setdefault("SOLVED2048_SYSTEM_HOME", os.path.expanduser("~"))

# The compiled kernels stay in this user's numba cache for the project (env2048.kernel_cache), not in the session's
# home: they are compiled code checked against the digest of the kernels' source, and a session that started from
# an empty cache would compile every kernel again (set SOLVED2048_NUMBA_CACHE to an empty directory for that).
os.environ["SOLVED2048_NUMBA_CACHE"] = str(cache_base())
# No precompiling worker beside the tests (solver.precompile): a cold run's first build would start one that
# competes with the test processes for the cores; tests/test_precompile.py runs it itself.
os.environ["SOLVED2048_PRECOMPILE"] = "0"
# JAX's CPU backend runs each computation on every core by default; on two pytest workers sharing two cores its
# threads would fight the other worker's, so each test process gives it one.
if XDIST_WORKER:
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")
    # Likewise numba's kernels and torch's: one thread per worker by default, a core each.  Two workers on two
    # threads each took 591 s of pytest here (kernels cached) against 427 s on one: four threads on two cores wait
    # for each other at every parallel step.  The tests that check results on several threads ask for two
    # (numba_threads, the solver's threads=2); numba may still start two (NUMBA_NUM_THREADS is left alone).
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import numba

    numba.set_num_threads(1)


def pytest_sessionstart(session):
    """With ``SOLVED2048_COMPILE_FIRST=1``, on a cold kernel cache, the controller compiles the kernels once, on
    both cores, before pytest-xdist's workers start (experiments.compile_kernels), rather than each worker
    compiling what it needs when it needs it.  Off by default: on the 2-core machine, from an empty cache, pytest
    took 720 s and 758 s with it (the compile 72 s and 84 s of that) and 612 s and 633 s without it: the workers' own
    compiles overlap the other worker's tests, and each compiles only what its tests need."""
    if XDIST_WORKER or os.environ.get("SOLVED2048_COMPILE_FIRST", "0") != "1":
        return
    from experiments.compile_kernels import PARTS, compile_all, parts_done

    if set(PARTS) <= parts_done():
        return
    seconds = compile_all(jobs=2, verbose=False)
    session.config.stash[COMPILE_SECONDS] = seconds


COMPILE_SECONDS = pytest.StashKey[float]()


def pytest_terminal_summary(terminalreporter, config):
    if COMPILE_SECONDS in config.stash:
        terminalreporter.write_line(
            f"kernels compiled before the tests, on two processes: {config.stash[COMPILE_SECONDS]:.1f} s"
        )


@pytest.hookimpl(trylast=True)  # after pytest's own tmp_path plugin has set up the base temporary directory
def pytest_configure(config):
    """Everything the suite writes goes below pytest's base temporary directory, before any test module is
    imported: the temporary files of this process and of every process it starts (Ray's session directories,
    Chromium's, torch's, tempfile's), and what programs keep in a home directory (Ray's auth token, matplotlib's
    and Chromium's caches).  Tables that gym.make("Solved2048-*") and Oracle.for_board build go to a fresh
    directory too: tests never read a developer's cache (which an older solver may have written) nor write to it.
    SB3's default logger, which makes an empty SB3-<time> folder per training run, writes there as well."""
    base = config._tmp_path_factory.getbasetemp()  # what the tmp_path_factory fixture gives; no public hook has it
    home, tmp = base / "home", base / "tmp"
    # One table cache for the whole session, pytest-xdist's workers included (theirs is popen-gwN below the
    # controller's): a table that tests on two workers need is built once (build_once's lock makes the other wait).
    shared = base.parent if XDIST_WORKER else base
    tables = shared / "solved2048-home"
    # JAX's compiled programs likewise, in a persistent compilation cache shared by the workers: the tests that build
    # the same program (the env's step, a PPO update of one shape) in separate functions or processes compile it once.
    # It starts empty each session, like the kernel cache of a clean clone.
    jax_cache = shared / "jax-cache"
    for path in (home, tmp, tables, jax_cache):
        path.mkdir(exist_ok=True)
    os.environ.update(
        {
            "HOME": str(home),
            "TMPDIR": str(_short_link(tmp)),
            "SOLVED2048_HOME": str(tables),
            "SB3_LOGDIR": str(tables / "sb3-logs"),
        }
    )
    _use_jax_cache(jax_cache)
    for name, sub in (
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_STATE_HOME", ".local/state"),
    ):
        os.environ[name] = str(home / sub)
    tempfile.tempdir = None  # tempfile reads TMPDIR again


def _use_jax_cache(directory: Path) -> None:
    """Point JAX's persistent compilation cache at ``directory`` and keep every program in it, however quick its
    compile or small its code: in this process (whether or not a plugin imported JAX already) and, through the
    environment, in the processes it starts."""
    options = {
        "jax_compilation_cache_dir": str(directory),
        "jax_persistent_cache_min_compile_time_secs": 0,
        "jax_persistent_cache_min_entry_size_bytes": 0,
    }
    os.environ.update({name.upper(): str(value) for name, value in options.items()})
    if "jax" in sys.modules:
        import jax

        for name, value in options.items():
            jax.config.update(name, value)


#: A short path to the session's temporary directory (see :func:`_short_link`).
SHORT_TMP = Path(SYSTEM_TMP) / f"s2048-{os.getpid()}"


def _short_link(target: Path) -> Path:
    """A short path to ``target``: the symbolic link ``SHORT_TMP`` (removed at the end of the session).  Ray's Unix
    sockets live below TMPDIR and their paths may not exceed 107 bytes, which pytest's base temporary directory,
    with pytest-xdist's ``popen-gwN`` in it, would."""
    link = SHORT_TMP
    link.unlink(missing_ok=True)
    link.symlink_to(target, target_is_directory=True)
    return link


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


@contextlib.contextmanager
def numba_threads(n: int):
    """Kernels run on ``n`` numba threads (at most the cores numba sees) inside the block; the count before is
    restored after it."""
    import numba

    before = numba.get_num_threads()
    numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
    try:
        yield
    finally:
        numba.set_num_threads(before)


@pytest.fixture(scope="session")
def table_2x3(tmp_path_factory):
    """The 2x3 score table (format v2, one HDF5 file), built once per test process: tests only read it."""
    from solver.build import build
    from solver.spec import SolveSpec

    path = tmp_path_factory.mktemp("table-2x3") / "2x3.h5"
    build(SolveSpec.parse("2x3"), path, progress=False)
    return path


@pytest.fixture(scope="session", autouse=True)
def no_process_left_running():
    """No test leaves a process running: any process still below this one when the session's tests are done
    fails the session (an error at the teardown of its last test; under pytest-xdist, each worker checks its
    own), and is ended."""
    yield
    from sockets import descendants

    left = {pid: _command_line(pid) for pid in descendants(os.getpid()) if pid != os.getpid()}
    left = {pid: line for pid, line in left.items() if line and not any(h in line for h in MULTIPROCESSING_HELPERS)}
    for pid in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if left:
        pytest.fail(f"processes left running by the tests (ended now): {left}")


def pytest_sessionfinish(session, exitstatus):
    """The session's table cache (the 3x3 table alone is 125 MB) does not outlive it (pytest keeps its last three
    base temporary directories), nor does the short link to its temporary directory.

    The link goes last, as this process exits: multiprocessing (SB3's SubprocVecEnv) keeps a temporary directory
    below it and removes it then, in an exit finalizer of priority -100; a finalizer of lower priority runs after
    that one (removed here, the link took the directory's path away first, and the finalizer failed)."""
    if not XDIST_WORKER:  # the controller ends last; a worker's end would take the cache from the other
        shutil.rmtree(os.environ["SOLVED2048_HOME"], ignore_errors=True)
    multiprocessing.util.Finalize(None, SHORT_TMP.unlink, kwargs={"missing_ok": True}, exitpriority=-200)


#: multiprocessing's helper processes (SB3's SubprocVecEnv starts them): they serve this process until it exits,
#: and then end by themselves.
MULTIPROCESSING_HELPERS = ("multiprocessing.forkserver", "multiprocessing.resource_tracker")


def _command_line(pid: int) -> str:
    """The command line of process ``pid``; empty if it has ended (a zombie has none)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return ""
