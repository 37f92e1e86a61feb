"""Compile the project's numba kernels into the kernel cache once, in several processes at once.

A process that finds a kernel missing from the cache (:mod:`env2048.kernel_cache`) compiles it before it runs it:
30-70 s for a first build, and every process that starts on a cold cache pays it again, so pytest-xdist's workers
compile most kernels once each.  ``python -m experiments.compile_kernels`` fills the cache beforehand, the way the
library's users fill it: each *part* below runs a small real workload of one package (a 2x2 build, a few env
steps, a few TD games, ...), which compiles the kernels that workload reaches for the argument types it passes.
The parts are shared among ``--jobs`` processes, so that the cores compile at once (numba compiles one function
at a time per process).  Each part runs where it was assigned, the largest first, and the parts that read a
table start after the build part that writes the kernels they share.

What the parts reach is what the library's own paths reach; a kernel called with other argument types (a test's
made-up arrays, a read-only array where the library passes a writable one) is compiled where it is first called,
as before.  ``--check`` says how many of a cache's kernel signatures the parts did not compile: run it on the cache
of a full test run to see what is left.

The finished parts are noted in the cache's directory (``compiled-parts.json``), keyed like the cache by the
digest of the kernels' source: a second run does nothing until a kernel changes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from env2048.kernel_cache import cache_root, version_dir

#: The note of the finished parts, in the cache's version directory.
DONE_FILE = "compiled-parts.json"


def _spec(board: str, objective: str = "score"):
    from solver.spec import SolveSpec

    return SolveSpec.parse(board, objective)


_home: tempfile.TemporaryDirectory | None = None


def _table_home() -> None:
    """A private table cache for the parts that need a table: ``SOLVED2048_HOME`` of this process, removed when
    the process exits."""
    global _home
    if _home is None:
        _home = tempfile.TemporaryDirectory(prefix="solved2048-compile-")
        os.environ["SOLVED2048_HOME"] = _home.name


def part_build() -> None:
    """The solver's forward and backward passes and the table format (a 2x2 build, a 2x3 build for a tile, a
    resumed build that reads its layers back), and the large layers' parallel value index."""
    from solver import precompile
    from solver.build import build
    from solver.value_index import build_value_index

    with tempfile.TemporaryDirectory() as tmp:
        build(_spec("2x2"), Path(tmp) / "2x2.h5", progress=False)
        build(_spec("2x3", "tile:5"), Path(tmp) / "2x3-32", progress=False, keep_work=True)
        build(_spec("2x3", "tile:5"), Path(tmp) / "2x3-32", progress=False)  # resumes from its work directory
    precompile.compile_backward(_spec("2x2"))
    build_value_index(np.array([1, 2], np.uint64), np.zeros(2), parallel_min=1)


def _play(env, moves: int = 20) -> None:
    """A few moves of ``env`` (single or vector), each the first legal one."""
    _, info = env.reset(seed=0)
    for _ in range(moves):
        _, _, done, _, info = env.step(np.argmax(info["action_mask"], axis=-1))
        if np.all(done):
            break
    env.close()


def part_env() -> None:
    """The packed game's kernels: the single env, the native vector env, the board functions."""
    import gymnasium as gym

    import env2048  # noqa: F401  (registers the ids)
    from env2048 import board as B
    from env2048.vector import Game2048VectorEnv

    _play(gym.make("Game2048-v0", rows=2, cols=3))
    _play(Game2048VectorEnv(4, 2, 3))
    ids = np.array([0x21, 0x121], np.uint64)
    B.canonical(ids, 2, 3)
    B.symmetries(ids[0], 2, 3)
    B.spawn_outcomes(ids[0], 2, 3)
    B.legal_actions(ids[0], 2, 3)


def part_grid() -> None:
    """The grid game beyond 16 cells, and an endgame env."""
    import gymnasium as gym

    import env2048  # noqa: F401

    _play(gym.make("Game2048-v0", rows=5, cols=6))
    _play(gym.make("Endgame2048-L3-256-v2"), moves=1)


def part_oracle() -> None:
    """The oracle's lookups, the priced env and exact policy evaluation (on the 2x2 table, built here)."""
    from agents import GreedyAgent
    from oracle import Oracle
    from solver import precompile

    _table_home()
    precompile.compile_oracle()  # the priced env's step: what a first user of the oracle compiles
    with Oracle.for_board("2x2", progress=False) as oracle:
        oracle.evaluate(GreedyAgent(), progress=False)


def part_agents() -> None:
    """The n-tuple TD learners (score and goal, one thread and several; packed and beyond 16 cells), expectimax,
    and the value fit."""
    from agents.expectimax import ExpectimaxAgent
    from agents.fit import fit_values
    from agents.ntuple import NTupleAgent
    from agents.ntuple_goal import GoalNTupleAgent
    from env2048 import board as B

    td = NTupleAgent(2, 3, seed=0)
    td.train(5)
    td.train(4, threads=2)
    boards = np.zeros((2, 2, 3), np.uint8)
    boards[:, 0, 0] = 1
    masks = np.ones((2, 4), bool)
    td.act_batch(boards, masks)
    wide = NTupleAgent(5, 5, tuples=[[0, 1]], base=4, seed=0)  # beyond 16 cells: agents.ntuple_wide's kernels
    wide.train(2)
    wide.train(2, threads=2)
    wide.act_batch(np.zeros((1, 5, 5), np.uint8), masks[:1])
    goal = GoalNTupleAgent(_spec("2x3", "tile:5"), seed=0)
    goal.train(5)
    goal.act_batch(boards, masks)
    for evaluator in ("heuristic", td):
        agent = ExpectimaxAgent(2, 3, depth=2, evaluator=evaluator, cache_size=64)
        agent.act_batch(boards, masks)
        agent.q_values(boards[0])
    ExpectimaxAgent(2, 3, depth=1, evaluator=goal, cache_size=64).act_batch(boards, masks)
    ids = np.atleast_1d(np.asarray(B.pack(boards), np.uint64))
    fit_values(td, ids, np.ones(ids.size), epochs=1, alpha=0.5, decay=1.0, progress=False)


def part_distributed() -> None:
    """The build partitioned by material, its workers in this process (2x4 up to 64: columns by the tiles >= 8),
    and the measures of the material partition (experiments.scale)."""
    from experiments.scale.material import measure_age
    from solver.distributed.driver import build_by_material
    from solver.format import Table

    with tempfile.TemporaryDirectory() as tmp:
        out = build_by_material(_spec("2x4", "tile:6"), Path(tmp) / "t", 3, 3, progress=False).out
        with Table(out) as table:
            age = table.counts()[len(table.counts()) // 2].age
            layer = table.layer(age, names=("states", "afterstates"))
            measure_age(layer["states"], layer["afterstates"], _spec("2x4", "tile:6"), lows=(3,))


def part_ray() -> None:
    """The build on Ray actors (a private one-node Ray, two workers; a game and an endgame): the arrays the actors
    receive from Ray's object store are read-only, which gives several kernels a signature of their own.  Skipped
    without Ray (the ``distributed`` extra)."""
    import importlib.util

    if importlib.util.find_spec("ray") is None:
        return
    from env2048.pattern import Pattern
    from solver.distributed.ray_actors import build_on_actors
    from solver.distributed.session import Machine, ray_session
    from solver.spec import SolveSpec

    pattern = SolveSpec.for_pattern(Pattern.from_dict(CORNER_PATTERN))
    with ray_session(num_cpus=2), tempfile.TemporaryDirectory() as tmp:
        for name, spec in (("game", _spec("2x4", "tile:6")), ("endgame", pattern)):
            build_on_actors(spec, Path(tmp) / name, [Machine(None, 1)] * 2, low=3, progress=False)


#: A small endgame: 3x3, a 64 in a corner, make a 16 in the opposite one.
CORNER_PATTERN = {"rows": 3, "cols": 3, "grid": [". . t", ". . .", ". . 64"], "target": 16}


def part_endgame() -> None:
    """An endgame: a pattern's build, its oracle and its n-tuple learner (a 3x3 corner pattern)."""
    from agents.ntuple_goal import GoalNTupleAgent
    from env2048.pattern import Pattern
    from oracle import Oracle
    from solver.build import build
    from solver.spec import SolveSpec

    spec = SolveSpec.for_pattern(Pattern.from_dict(CORNER_PATTERN))
    with tempfile.TemporaryDirectory() as tmp:
        build(spec, Path(tmp) / "corner.h5", progress=False)
        with Oracle.open(Path(tmp) / "corner.h5") as oracle:
            agent = GoalNTupleAgent(spec, seed=0)
            agent.train(3)
            oracle.evaluate(agent, progress=False)


def part_imitation() -> None:
    """Learning from the oracle: labelled states, the ranking fits, the capacity diagnostics, the figures' layer
    statistics (on the 2x2 table)."""
    from agents import OptimalAgent
    from agents.imitation import collect_states, fit_ntuple_actions
    from agents.ntuple import NTupleAgent
    from experiments.diagnostics.capacity import regret_pairs
    from experiments.figures import solved_game_by_age
    from oracle import Oracle

    _table_home()
    with Oracle.for_board("2x2", progress=False) as oracle:
        data, _ = collect_states(oracle, OptimalAgent(oracle), 50, seed=0)
        agent = NTupleAgent(2, 2, tuples=[[0, 1], [0, 2]], seed=0)
        fit_ntuple_actions(agent, data, epochs=1, alpha=1.0, margin=1.0)
        regret_pairs(oracle, agent, progress=False)
    solved_game_by_age("2x2", variants=False, progress=False)


#: name -> (what it runs, parts that must be done first in the same process, or in the cache).
PARTS: dict[str, tuple[Callable[[], None], tuple[str, ...]]] = {
    "build": (part_build, ()),
    "env": (part_env, ()),
    "grid": (part_grid, ()),
    "agents": (part_agents, ()),
    "oracle": (part_oracle, ("build",)),
    "distributed": (part_distributed, ("build",)),
    "endgame": (part_endgame, ("build",)),
    "ray": (part_ray, ("build", "distributed", "endgame")),
    "imitation": (part_imitation, ("oracle",)),
}
#: Their order and the process each goes to, for two processes, so that both end about together (one run, cold,
#: both processes at once: build 47 s, agents 33, ray 22, oracle 14, env 14, imitation 12, distributed 11,
#: endgame 9, grid 4).  A part that needs what the other process compiles waits for it.  With one process, all
#: in the order of the first process and then the second's.
PLAN = (("build", "distributed", "endgame", "ray"), ("env", "grid", "agents", "oracle", "imitation"))
#: Longest wait, in seconds, of a part for the parts it needs (then it compiles what it lacks itself).
WAIT_S = 600.0


def done_file() -> Path:
    return version_dir(cache_root()) / DONE_FILE


def parts_done() -> set[str]:
    """The parts already compiled into the cache of this version of the kernels."""
    try:
        return set(json.loads(done_file().read_text()))
    except (FileNotFoundError, ValueError):
        return set()


def _note_done(part: str) -> None:
    """Add ``part`` to the note (written whole and renamed: two processes never leave it half written)."""
    path = done_file()
    done = sorted(parts_done() | {part})
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(done))
    os.replace(tmp, path)


def run_parts(names: list[str], verbose: bool = False) -> None:
    """Run the parts ``names`` in this process, in order, each noted when it is done."""
    for name in names:
        end = time.monotonic() + WAIT_S
        while not set(PARTS[name][1]) <= parts_done() and time.monotonic() < end:
            time.sleep(0.5)
        start = time.perf_counter()
        PARTS[name][0]()
        _note_done(name)
        if verbose:
            print(f"compiled {name} in {time.perf_counter() - start:.1f} s", flush=True)


def compile_all(jobs: int = 2, verbose: bool = True) -> float:
    """Compile every part missing from the cache, on ``jobs`` processes (1 or 2); returns the seconds taken.
    Raises ``RuntimeError`` naming the part whose process failed."""
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    start = time.perf_counter()
    done = parts_done()
    lanes = [list(lane) for lane in PLAN] if jobs > 1 else [[n for lane in PLAN for n in lane]]
    lanes = [[n for n in lane if n not in done] for lane in lanes]
    lanes = [lane for lane in lanes if lane]
    if not lanes:
        return 0.0
    env = {**os.environ, "SOLVED2048_PRECOMPILE": "0"}
    if jobs > 1:  # one numba thread each: the processes share the cores
        env["NUMBA_NUM_THREADS"] = "1"
    with tempfile.TemporaryDirectory(prefix="solved2048-compile-logs-") as logs:
        procs, outputs = [], []
        for i, lane in enumerate(lanes):
            # what a part prints (a table's progress bars, Ray's start) is kept and shown only if the part fails
            output = open(Path(logs) / f"lane{i}.txt", "w+")  # noqa: SIM115  (closed below, after the wait)
            outputs.append(output)
            command = [sys.executable, "-m", "experiments.compile_kernels", "--parts", ",".join(lane)]
            procs.append(
                subprocess.Popen(
                    command + (["--verbose"] if verbose else []),
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=None if verbose else output,
                    stderr=output,
                )
            )
        try:
            failed = _wait(lanes, procs)
        finally:
            for proc in procs:  # what a stopped process cached so far stays cached
                if proc.poll() is None:
                    proc.terminate()
                    proc.wait()
            for output in outputs:
                output.close()
        if failed:
            i, lane = failed
            tail = (Path(logs) / f"lane{i}.txt").read_text()[-4000:]
            raise RuntimeError(f"compiling the kernels of parts {lane} failed:\n{tail}")
    return time.perf_counter() - start


def _wait(lanes, procs) -> tuple[int, list[str]] | None:
    """Wait for every process; ``(index, parts)`` of the first that failed (the others are then stopped)."""
    while True:
        for i, (lane, proc) in enumerate(zip(lanes, procs, strict=True)):
            if proc.poll() not in (None, 0):
                return i, lane
        if all(proc.poll() == 0 for proc in procs):
            return None
        time.sleep(0.2)


def signatures(root: Path) -> dict[tuple[str, str], int]:
    """``{(module, function): compiled signatures}`` in the kernel cache directory ``root`` (a version directory
    of :func:`env2048.kernel_cache.cache_root`), counted from numba's cache files ``<function>-<line>.pyXY.N.nbc``."""
    counts: dict[tuple[str, str], int] = {}
    for path in root.glob("*/*.nbc"):
        key = (path.parent.name, path.name.split(".py")[0].rsplit("-", 1)[0])
        counts[key] = counts.get(key, 0) + 1
    return counts


def check(other: Path) -> None:
    """Print what the kernel cache version directory ``other`` holds that this cache's does not."""
    ours, theirs = signatures(version_dir(cache_root())), signatures(other)
    missing = {k: n - ours.get(k, 0) for k, n in theirs.items() if n > ours.get(k, 0)}
    print(f"{sum(theirs.values())} signatures there, {sum(ours.values())} here; {sum(missing.values())} missing here")
    for (module, function), n in sorted(missing.items()):
        print(f"  {module} {function}: {n}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="processes (default: 2)")
    parser.add_argument("--parts", help=f"run these parts in this process, in order (of {','.join(PARTS)})")
    parser.add_argument("--check", type=Path, help="a kernel cache version directory to compare this one with")
    parser.add_argument("--verbose", action="store_true", help="print each part's time")
    args = parser.parse_args(argv)
    if args.check:
        check(args.check)
    elif args.parts:
        names = args.parts.split(",")
        unknown = [n for n in names if n not in PARTS]
        if unknown:
            parser.error(f"unknown parts {unknown}: choose from {','.join(PARTS)}")
        run_parts(names, verbose=args.verbose)
    else:
        seconds = compile_all(args.jobs, verbose=args.verbose)
        print(f"kernels compiled into {version_dir(cache_root())} in {seconds:.1f} s")


if __name__ == "__main__":
    main()
