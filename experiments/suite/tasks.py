"""The frozen task sets of the Solved2048 suite (docs/suite.md): :data:`SUITE_V3` (current), :data:`SUITE_V2` and
:data:`SUITE_V1`, each task's table and env.

A task is a game this project solves exactly (or whose optimum is published), so that every policy is scored
against the true optimum V*.  Suite v3, each track with its own success tasks:

==============  ===========================================  ===========================  ============  ===========
task            game                                         score (normalized by V*)     tracks        V^pi
==============  ===========================================  ===========================  ============  ===========
``2x3``         2x3 board, score                             V^pi / V* (expected score)   both          exact
``2x4``         2x4 board, score                             V^pi / V*                    both          exact
``3x3``         3x3 board, score                             V^pi / V*                    both          exact (*)
``4x3``         the whole 4x3 game from two 2-tiles, score   V^pi / 50724.26 (published)  both          Monte Carlo
``L3-128``      4x4 endgame L3, make a 128                   P^pi(success) / P*(success)  env-only      exact (*)
``442-128``     4x4 endgame 442, make a 128                  as above                     env-only      exact (*)
``t-128``       4x4 endgame t, make a 128                    as above                     env-only      exact (*)
``3x3-512``     3x3 board, make a 512 (reward 1 when made)   P^pi(512) / P*(512)          known-rules   exact (*)
``L3-256``      4x4 endgame L3, make a 256                   P^pi(success) / P*(success)  known-rules   exact (*)
``442-256``     4x4 endgame 442, make a 256                  as above                     known-rules   exact (*)
``t-512``       4x4 endgame t, make a 512                    as above                     known-rules   exact (*)
==============  ===========================================  ===========================  ============  ===========

(*) for agents that decide cheaply in batches; others by Monte Carlo (``oracle.agent.evaluates_exactly``).  Every
task has two budget regimes (:data:`REGIMES`).  Suite v2 had ``2x3``, ``2x4``, ``3x3``, ``3x3-512``,
``4x3-256``, ``L3-256``, ``442-256`` and ``t-512`` for every track; suite v1 ``2x4``, ``3x3``, ``3x3-512``,
``4x3-128``, ``L3-256``, ``442-256`` and ``t-256``.

A change of a task's rules, budget or evaluation makes a new suite version; tables and results of one version are
never mixed with another's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from env2048.pattern import load_pattern
from solver.format import Table
from solver.spec import SolveSpec

from .budget import REFERENCE_TRACK, TRACKS

SUITE_VERSION = 3

#: The budget regimes of suite v3: each a factor on the tasks' budgets.  ``small`` (the budgets as the tasks give
#: them) measures sample efficiency; ``large`` is where deep RL trains, sized from JAX PPO's and TD's curves
#: (docs/suite.md).  Results of two regimes are never pooled.
REGIMES = {"small": 1, "large": 10}


#: The optimal expected score of the whole 4x3 game from a start with two 2-tiles (every such start has it), as
#: Kaneko & Yamashita publish it, to two decimals: "Strongly Solving 2048 4x3" (2025), whose table (1.15e12
#: states) is beyond this machine.
KANEKO_YAMASHITA_4X3 = 50724.26
#: Where :data:`KANEKO_YAMASHITA_4X3` comes from, as a task names it.
KANEKO_YAMASHITA = 'Kaneko & Yamashita (2025), "Strongly Solving 2048 4x3"'
#: The small regime's budget of suite v3's whole 4x3 game, in environment steps or simulated moves.
BUDGET_4X3 = 10_000_000


class TaskError(ValueError):
    """An unknown task or suite version, or a table that is not the task's."""


@dataclass(frozen=True)
class Task:
    """One task of the suite.

    ``name``: short name (``3x3-512``); ``env_id``: its versioned Gymnasium id; ``board`` (``"3x3"``) and
    ``objective`` (``"score"`` or ``"tile:K"``), or an endgame ``pattern`` (built-in name) with its ``target``
    tile; ``budget_steps``: the environment steps a learning algorithm may take; ``exact``: whether a policy's
    value is computed exactly by the oracle (otherwise estimated from ``mc_episodes`` games, with a CI);
    ``optimal_value``: V* (expected score, or probability of success) and ``table_digest``: the sha256 of the
    table's dataset checksums, both pinned when the suite was frozen (the tests and ``tables --verify`` check
    them); ``version``: the suite version the task belongs to; ``start_p4``: the chance that a start tile is a 4
    (None: the spawns' p4; 0: two 2-tiles).  A task whose game is too large to solve here has no table:
    ``optimum_source`` then names the published work its V* comes from, and it is scored by Monte Carlo in its
    env.  ``tracks``: the learners' tracks whose task list holds the task (empty: every track's)."""

    name: str
    env_id: str
    budget_steps: int
    exact: bool
    optimal_value: float
    table_digest: str
    board: str | None = None
    objective: str = "score"
    pattern: str | None = None
    target: int | None = None
    mc_episodes: int = 1000
    version: int = 1
    start_p4: float | None = None
    optimum_source: str = ""
    tracks: tuple[str, ...] = ()

    def for_track(self, track: str) -> bool:
        """Whether learners of ``track`` are scored on the task (every task of a version without per-track lists;
        the reference agents, track ``reference``, on every task)."""
        return not self.tracks or track == REFERENCE_TRACK or track in self.tracks

    @property
    def has_table(self) -> bool:
        """Whether the suite builds the task's table (False: its V* is published, see ``optimum_source``)."""
        return not self.optimum_source

    @property
    def env_kwargs(self) -> dict:
        """What the task's game passes to its envs beyond the board: its start (``start_p4``), where it has one."""
        return {} if self.start_p4 is None else {"start_p4": self.start_p4}

    @property
    def kind(self) -> str:
        """``"score"`` (expected score) or ``"success"`` (probability of making the goal tile)."""
        return "score" if self.pattern is None and self.objective == "score" else "success"

    @property
    def invalid_action(self) -> str:
        """What an illegal move does in the task's envs: ends the game from suite v2 on, changes nothing in v1."""
        return "terminate" if self.version >= 2 else "noop"

    @property
    def shape(self) -> tuple[int, int]:
        spec = self.spec()
        return spec.rows, spec.cols

    def spec(self) -> SolveSpec:
        """The game the task's table solves."""
        if self.pattern is not None:
            return SolveSpec.for_pattern(load_pattern(self.pattern, self.target))
        return SolveSpec.parse(self.board, self.objective)

    def describe(self) -> str:
        return f"{self.name} ({self.spec().describe()}; {self.env_id})"

    def oracle(self, progress: bool = True):
        """The oracle of the task's table (built on first use, checked against the task's pinned digest); a
        :class:`TaskError` for a task without one."""
        from oracle import Oracle

        return Oracle.open(checked_table(self, progress)[0])


# V* (repr of the float64 start value) and digests: read off the tables built on 2026-11-26 when v1 was frozen
# (`python -m solver build ... --layout directory`); `python -m experiments.suite tables --verify` checks them.
SUITE_V1: tuple[Task, ...] = (
    Task("2x4", "Solved2048-2x4-v1", 1_000_000, True, 2641.8730356922492,
         "c83dcc30f81785d2d81933a701234817c31f99defab3f38b37986ab86a7203a1", board="2x4"),
    Task("3x3", "Solved2048-3x3-v1", 5_000_000, True, 5468.486797410301,
         "aaa2555b446daf3d13d1f55b0488a7dcfb62b08873e92e07ff3db5a214ad8482", board="3x3"),
    Task("3x3-512", "Solved2048-3x3-512-v1", 5_000_000, True, 0.7367741770231624,
         "eaa7cbedceb71ebd8380b012b24a5ec47e2e81023218f8eaa223b3af15f7c078", board="3x3", objective="tile:9"),
    Task("4x3-128", "Solved2048-4x3-128-v1", 2_000_000, False, 0.9999999999999998,
         "806ae68f15b7dcd9a19c708208de801d8a51799503312cf25d9beadb5294ecd4", board="4x3", objective="tile:7"),
    Task("L3-256", "Endgame2048-L3-256-v1", 2_000_000, True, 0.7633492015778262,
         "d1cc94d62980e2486228f7141fc81b9db2ec2a6f51a3d58d647ed503f18f0e96", pattern="L3", target=256),
    Task("442-256", "Endgame2048-442-256-v1", 2_000_000, True, 0.8090281055142653,
         "926c6772952a1d0080b2c3f00883d330b3092055e53cabcd5ada2a3b0c093108", pattern="442", target=256),
    Task("t-256", "Endgame2048-t-256-v1", 2_000_000, True, 0.35119725672710167,
         "b0eccf94f11d3d9dfc6002692648122f2c5546c763274bf02bfe08934cc79812", pattern="t", target=256),
)  # fmt: skip

# Suite v2: the task set chosen by measurement (docs/suite.md, "How the v2 tasks were chosen"; the candidates' log
# is docs/reference/candidates/candidates.jsonl).  V* and digests read off the tables built by `python -m
# experiments.suite candidates` on 2026-11-28; `tables --verify` checks them on tables built afresh.
SUITE_V2: tuple[Task, ...] = (
    Task("2x3", "Solved2048-2x3-v2", 1_000_000, True, 480.25827177595846,
         "706c8667d474b99c5a2457782e3af420abdd7b20ead3c7ec98ae22b188bb0bb3", board="2x3", version=2),
    Task("2x4", "Solved2048-2x4-v2", 1_000_000, True, 2641.873035692249,
         "c83dcc30f81785d2d81933a701234817c31f99defab3f38b37986ab86a7203a1", board="2x4", version=2),
    Task("3x3", "Solved2048-3x3-v2", 5_000_000, True, 5468.486797410302,
         "aaa2555b446daf3d13d1f55b0488a7dcfb62b08873e92e07ff3db5a214ad8482", board="3x3", version=2),
    Task("3x3-512", "Solved2048-3x3-512-v2", 5_000_000, True, 0.7367741770231625,
         "eaa7cbedceb71ebd8380b012b24a5ec47e2e81023218f8eaa223b3af15f7c078", board="3x3", objective="tile:9",
         version=2),
    Task("4x3-256", "Solved2048-4x3-256-v2", 2_000_000, False, 0.9999999999999999,
         "925d0f155ee938a52d7152b8c12c8f29f7ecb2d736df8748c31ef2104ca21df5", board="4x3", objective="tile:8",
         version=2),
    Task("L3-256", "Endgame2048-L3-256-v2", 2_000_000, True, 0.7633492015778262,
         "d1cc94d62980e2486228f7141fc81b9db2ec2a6f51a3d58d647ed503f18f0e96", pattern="L3", target=256, version=2),
    Task("442-256", "Endgame2048-442-256-v2", 2_000_000, True, 0.8090281055142652,
         "926c6772952a1d0080b2c3f00883d330b3092055e53cabcd5ada2a3b0c093108", pattern="442", target=256, version=2),
    Task("t-512", "Endgame2048-t-512-v2", 2_000_000, True, 0.2777243527120862,
         "b624f091391e5d0161dda9f33fc3c817376ddcbceb36a34551dbf65225a7e105", pattern="t", target=512, version=2),
)  # fmt: skip

#: The env-only and the known-rules track of suite v3, whose success tasks differ.
ENV_ONLY, KNOWN_RULES = ("env-only",), ("known-rules",)

# Suite v3: v2's rules, a task list per track on the success family and the whole 4x3 game (docs/suite.md, "Suite
# v3: the rules"; the candidates' log is docs/reference/candidates-v3/candidates.jsonl).  The env-only track's
# success tasks are the endgames at 128, where its learners score; the known-rules track keeps v2's, where TD
# stays below the ceiling.  V* and digests: v2's pins for v2's games, read off the candidates' tables (built by
# `python -m experiments.suite candidates` on 2026-12-05) for the others; `tables --verify` checks them.
SUITE_V3: tuple[Task, ...] = (
    Task("2x3", "Solved2048-2x3-v2", 1_000_000, True, 480.25827177595846,
         "706c8667d474b99c5a2457782e3af420abdd7b20ead3c7ec98ae22b188bb0bb3", board="2x3", version=3),
    Task("2x4", "Solved2048-2x4-v2", 1_000_000, True, 2641.873035692249,
         "c83dcc30f81785d2d81933a701234817c31f99defab3f38b37986ab86a7203a1", board="2x4", version=3),
    Task("3x3", "Solved2048-3x3-v2", 5_000_000, True, 5468.486797410302,
         "aaa2555b446daf3d13d1f55b0488a7dcfb62b08873e92e07ff3db5a214ad8482", board="3x3", version=3),
    Task("4x3", "Solved2048-4x3-twos-v2", BUDGET_4X3, False, KANEKO_YAMASHITA_4X3, "", board="4x3", version=3,
         start_p4=0.0, optimum_source=KANEKO_YAMASHITA),
    Task("L3-128", "Endgame2048-L3-128-v2", 2_000_000, True, 0.7680661928433852,
         "fdc0f51595b5330ed213fb21061f4c874af90bc68c09bfccddac2f29a4d81a0d", pattern="L3", target=128, version=3,
         tracks=ENV_ONLY),
    Task("442-128", "Endgame2048-442-128-v2", 2_000_000, True, 0.8204701998500207,
         "1b272e46b9c9d8ac837afc1162bf31e5fe9c31123dc584ec6bdc9aecc320f580", pattern="442", target=128, version=3,
         tracks=ENV_ONLY),
    Task("t-128", "Endgame2048-t-128-v2", 2_000_000, True, 0.3531884244945132,
         "1a2c1df1e10027d55796b61dc44f51ea6076599d0162f7a63e32c1afc046f507", pattern="t", target=128, version=3,
         tracks=ENV_ONLY),
    Task("3x3-512", "Solved2048-3x3-512-v2", 5_000_000, True, 0.7367741770231625,
         "eaa7cbedceb71ebd8380b012b24a5ec47e2e81023218f8eaa223b3af15f7c078", board="3x3", objective="tile:9",
         version=3, tracks=KNOWN_RULES),
    Task("L3-256", "Endgame2048-L3-256-v2", 2_000_000, True, 0.7633492015778262,
         "d1cc94d62980e2486228f7141fc81b9db2ec2a6f51a3d58d647ed503f18f0e96", pattern="L3", target=256, version=3,
         tracks=KNOWN_RULES),
    Task("442-256", "Endgame2048-442-256-v2", 2_000_000, True, 0.8090281055142652,
         "926c6772952a1d0080b2c3f00883d330b3092055e53cabcd5ada2a3b0c093108", pattern="442", target=256, version=3,
         tracks=KNOWN_RULES),
    Task("t-512", "Endgame2048-t-512-v2", 2_000_000, True, 0.2777243527120862,
         "b624f091391e5d0161dda9f33fc3c817376ddcbceb36a34551dbf65225a7e105", pattern="t", target=512, version=3,
         tracks=KNOWN_RULES),
)  # fmt: skip

#: Every suite version's tasks; :data:`SUITE_VERSION` is the current one.
SUITES: dict[int, tuple[Task, ...]] = {1: SUITE_V1, 2: SUITE_V2, 3: SUITE_V3}
TASKS = {t.name: t for t in SUITES[SUITE_VERSION]}


def suite_tasks(version: int = SUITE_VERSION) -> tuple[Task, ...]:
    """The tasks of suite ``version``; a clear :class:`TaskError` for a version that does not exist."""
    if version not in SUITES:
        raise TaskError(f"suite version {version} does not exist: the versions are {', '.join(map(str, SUITES))}")
    return SUITES[version]


def get_task(name: str, version: int = SUITE_VERSION) -> Task:
    """The task ``name`` of suite ``version``; a clear :class:`TaskError` for an unknown one."""
    tasks = {t.name: t for t in suite_tasks(version)}
    if name not in tasks:
        raise TaskError(f"unknown task {name!r}: suite v{version} has {', '.join(tasks)}")
    return tasks[name]


def task_lists(version: int = SUITE_VERSION) -> dict[str, list[Task]]:
    """``{track: its tasks}`` of suite ``version`` where its tracks have lists of their own (v3), else ``{"": every
    task}`` (one list for every track, v1 and v2); tasks in the suite's order."""
    tasks = suite_tasks(version)
    if not any(t.tracks for t in tasks):
        return {"": list(tasks)}
    return {track: [t for t in tasks if t.for_track(track)] for track in TRACKS}


def tasks_named(names: str | None, version: int = SUITE_VERSION, track: str | None = None) -> list[Task]:
    """The tasks of a comma-separated list (for None or "all": all of the suite's, or of ``track``'s list), in the
    suite's order; a :class:`TaskError` for a task that is not on ``track``'s list."""
    tasks = [t for t in suite_tasks(version) if track is None or t.for_track(track)]
    if names in (None, "", "all"):
        return tasks
    wanted = [get_task(n.strip(), version) for n in names.split(",") if n.strip()]
    off = [t.name for t in wanted if t not in tasks]
    if off:
        raise TaskError(
            f"task(s) {', '.join(off)} of suite v{version} are not on the {track} track's list, which is "
            f"{', '.join(t.name for t in tasks)}"
        )
    return [t for t in tasks if t in wanted]


def tables_dir(version: int = SUITE_VERSION) -> Path:
    """Where a suite version's tables live: ``$SOLVED2048_HOME/suite-vN`` (``~/.cache/solved2048/suite-vN``)."""
    from solver.provision import cache_dir

    return cache_dir() / f"suite-v{version}"


def table_path(task: Task) -> Path:
    return tables_dir(task.version) / task.name


def ensure_table(task: Task, progress: bool = True) -> Path:
    """The task's table, built on first use (a directory table; an interrupted build resumes from its work
    directory).  Processes that ask at once build it one at a time."""
    from oracle.oracle import oracle_kernels_missing
    from solver.provision import build_once
    from solver.seal import check_unsealed

    check_unsealed(f"the table of suite task {task.name}")
    check_has_table(task)
    path = table_path(task)
    if table_is_complete(task):
        return path
    return build_once(  # else built here, or waited for while another process builds it
        task.spec(),
        path,
        progress,
        what=f"suite task {task.describe()}",
        warm_oracle=oracle_kernels_missing(),
        layout="directory",
    )


def table_is_complete(task: Task) -> bool:
    """Whether the task's table is built, whole: a directory table's manifest is written last, so a table whose
    manifest is there is complete (one being built has its directory, not yet its manifest)."""
    from solver.format.v2 import MANIFEST

    return (table_path(task) / MANIFEST).exists()


def check_has_table(task: Task) -> None:
    """A :class:`TaskError` for a task without a table (its V* is published, its policies scored by Monte Carlo)."""
    if not task.has_table:
        raise TaskError(
            f"task {task.name} has no table: its game is too large to solve here, its V* = {task.optimal_value} is "
            f"published ({task.optimum_source}), and a policy is scored on it by Monte Carlo"
        )


def checked_table(task: Task, progress: bool = True) -> tuple[Path, str]:
    """``(path, digest)`` of the task's table (built on first use); a :class:`TaskError` if its digest is not the
    one pinned for the task."""
    path = ensure_table(task, progress)
    digest = table_digest(path)
    if task.table_digest and digest != task.table_digest:
        raise TaskError(
            f"{task.name}: the table {path} is not the suite's (digest {digest[:12]}..., expected "
            f"{task.table_digest[:12]}...): delete it to have it built again"
        )
    return path, digest


#: How close a table's V* must be to its task's pin.  The digest pins a table's content exactly; V* is a root
#: attribute summed from the start states' values, by BLAS in tables built before 2026-11-27, whose last bits depend
#: on the CPU and the numpy build (the 3x3 pins are 1 ulp from what numpy 2.4.6 sums here), exactly since.
PIN_REL_TOL = 1e-13


def matches_pinned_value(value: float, pinned: float) -> bool:
    """Whether a table's V* is its task's pinned V* (within :data:`PIN_REL_TOL`, a few ulps)."""
    return math.isclose(value, pinned, rel_tol=PIN_REL_TOL, abs_tol=0.0)


def table_digest(path) -> str:
    """sha256 of a table's ``{dataset: sha256}`` checksums (sorted, as JSON): one fingerprint of its content."""
    with Table(path) as t:
        return t.content_digest()
