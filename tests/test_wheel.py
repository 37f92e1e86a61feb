"""The project as a user installs it: ``python -m build`` makes an sdist and, from it, a wheel; the wheel,
installed (not editable) into a fresh venv, works from an empty directory outside the clone: import,
``gym.make("Solved2048-2x2", oracle=True)``, a 2x3 table built by ``python -m solver build`` and opened by
``Oracle.open``, a replay page (the viewer's HTML template is package data), and every command the README and the
docs show answers ``--help``.

The wheel holds every package and data file of the tree, and the wheel built from the sdist equals the one built
from the tree.

The fresh venv reuses this environment's installed dependencies through a path entry (a plain path: the ``.pth``
files there, among them this clone's editable install, are not read), so no download is needed; the wheel is the
only copy of the project it sees.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # the whole module runs in make test, not in the quick lane

ROOT = Path(__file__).resolve().parents[1]
#: The project's top-level packages; everything below them is the project's code and data.
PACKAGES = ("env2048", "solver", "oracle", "agents", "experiments")
#: Files in the package folders that are not the project's: compiled Python and numba's caches.
NOT_SHIPPED = re.compile(r"(^|/)__pycache__/|\.(pyc|nbi|nbc)$")
#: Pages whose commands a user is shown (the changelog's are the record of commands since removed).
PAGES = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").glob("*.md") if p.name != "changelog.md")]
COMMAND = re.compile(r"python -m ((?:" + "|".join(PACKAGES) + r")(?:\.\w+)*)(?: ([a-z][a-z_-]*))?")


def _quiet_env() -> dict:
    return {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """``sdist``, ``wheel`` (built from the sdist, as ``python -m build`` does) and ``tree_wheel`` (built straight
    from the tree)."""
    out = tmp_path_factory.mktemp("dist")
    # a copy of the tree without what earlier builds left in it (setuptools reuses build/ and *.egg-info/)
    tree = out / "tree-copy"
    shutil.copytree(
        ROOT,
        tree,
        ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "*.egg-info", "site", "results", "__pycache__", "*.pyc"
        ),
    )
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out / "sdist"), str(tree)],
        check=True,
        capture_output=True,
        env=_quiet_env(),
    )
    for left in [tree / "build", *tree.glob("*.egg-info")]:  # the second wheel starts from a clean tree as well
        shutil.rmtree(left, ignore_errors=True)
    subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", str(out / "tree"), str(tree)],
        check=True,
        capture_output=True,
        env=_quiet_env(),
    )
    wheels, sdists = list((out / "sdist").glob("*.whl")), list((out / "sdist").glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in (out / "sdist").iterdir())
    return {"sdist": sdists[0], "wheel": wheels[0], "tree_wheel": next((out / "tree").glob("*.whl"))}


@pytest.fixture(scope="module")
def installed(dist, tmp_path_factory) -> dict:
    """The wheel installed into a fresh venv: its ``python``, ``site`` folder, an empty working directory ``work``
    outside the clone, and the environment ``env`` to run in (tables built there go to a folder of their own)."""
    base = tmp_path_factory.mktemp("installed")
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--no-deps",
            "--no-index",
            "-q",
            str(dist["wheel"]),
        ],
        check=True,
        capture_output=True,
        env=_quiet_env(),
    )
    work = base / "work"  # outside the clone, so that nothing imports from it
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["SOLVED2048_HOME"] = str(base / "tables")  # the 2x2 table is built by the installed package
    return {"python": python, "site": site, "work": work, "env": env}


def _run(installed: dict, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [str(installed["python"]), *args],
        cwd=installed["work"],
        capture_output=True,
        text=True,
        env=installed["env"],
        timeout=timeout,
    )
    assert result.returncode == 0, f"{args}: {result.stderr[-3000:]}"
    return result


def tree_files() -> set[str]:
    """The files of the packages, as paths relative to the root: those git tracks, or, outside a clone (an
    unpacked sdist), every file in the package folders but compiled Python and numba's caches."""
    tracked = subprocess.run(["git", "ls-files", *PACKAGES], cwd=ROOT, capture_output=True, text=True)
    if tracked.returncode == 0 and tracked.stdout.strip():
        return set(tracked.stdout.split())
    return {p.relative_to(ROOT).as_posix() for top in PACKAGES for p in (ROOT / top).rglob("*") if p.is_file()}


def wheel_contents(wheel: Path) -> dict[str, str]:
    """Each file of ``wheel`` outside its ``.dist-info`` with the SHA-256 of its bytes."""
    with zipfile.ZipFile(wheel) as z:
        return {n: hashlib.sha256(z.read(n)).hexdigest() for n in z.namelist() if ".dist-info/" not in n}


def test_the_wheel_holds_every_package_and_data_file_of_the_tree(dist):
    files = {n for n in tree_files() if not NOT_SHIPPED.search(n)}
    packages = {str(Path(n).parent) for n in files if n.endswith("/__init__.py")}
    data = {n for n in files if not n.endswith(".py")}
    assert "solver/distributed" in packages and "experiments/replay/viewer_template.html" in data
    shipped = set(wheel_contents(dist["wheel"]))
    assert {f"{p}/__init__.py" for p in packages} - shipped == set(), "packages missing from the wheel"
    assert data - shipped == set(), "data files missing from the wheel"
    assert files - shipped == set() and not any(NOT_SHIPPED.search(n) for n in shipped)


def test_the_sdist_builds_a_wheel_equal_to_the_trees(dist):
    from_sdist, from_tree = wheel_contents(dist["wheel"]), wheel_contents(dist["tree_wheel"])
    assert sorted(from_sdist) == sorted(from_tree) and from_sdist == from_tree


SMOKE = """
import sys, pathlib
import gymnasium as gym
import env2048, oracle, solver, agents, experiments
from experiments.replay import replay
from oracle import Oracle

site = pathlib.Path(sys.argv[1]).resolve()
for module in (env2048, oracle, solver, agents, experiments):
    assert site in pathlib.Path(module.__file__).resolve().parents, f"{module.__name__} from {module.__file__}"
env = gym.make("Solved2048-2x2", oracle=True)
obs, info = env.reset(seed=0)
assert info["q_values"].shape == (4,), info
with Oracle.open("t2x3.h5") as oracle:  # the table python -m solver build wrote
    assert (oracle.rows, oracle.cols) == (2, 3) and oracle.value([[1, 1, 0], [0, 0, 0]]) > 0
games = replay("2x3", "greedy", episodes=1, out="replay.html", table="t2x3.h5")
assert "__DATA__" not in pathlib.Path("replay.html").read_text() and games[0].moves > 0
print("smoke ok", env2048.__file__)
"""


def test_the_installed_wheel_builds_a_table_and_opens_it_from_an_empty_directory(installed):
    _run(installed, "-m", "solver", "build", "--board", "2x3", "--out", "t2x3.h5")
    result = _run(installed, "-c", SMOKE, str(installed["site"]))
    assert "smoke ok" in result.stdout


def documented_commands() -> list[list[str]]:
    """``[module]`` or ``[module, subcommand]`` for every ``python -m`` of the project's packages that the README
    and the docs show, in order of first appearance."""
    seen: dict[tuple, None] = {}
    for page in PAGES:
        for module, word in COMMAND.findall(page.read_text()):
            seen[(module,)] = None
            if word:
                seen[(module, word)] = None
    return [list(c) for c in seen]


#: Runs each command it is given with ``--help`` in this one process (``runpy``, as ``python -m`` does), and the
#: ``--help`` of each subcommand that a command's own help lists (``{a,b}``); prints one JSON object per command.
HELP_ALL = r"""
import contextlib, io, json, re, runpy, sys

def run(argv):
    out = io.StringIO()
    sys.argv = [argv[0], *argv[1:], "--help"]
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            runpy.run_module(argv[0], run_name="__main__", alter_sys=True)
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except BaseException as error:  # the command's failure is the result
            code, _ = 1, out.write(repr(error))
    return code, out.getvalue()

done = set()
for argv in json.loads(sys.argv[1]):
    queue = [argv]
    while queue:
        cmd = queue.pop(0)
        if tuple(cmd) in done:
            continue
        done.add(tuple(cmd))
        code, text = run(cmd)
        print(json.dumps({"argv": cmd, "code": code, "usage": "usage:" in text, "tail": text[-600:]}), flush=True)
        subs = re.search(r"\{([a-z_,-]+)\}", text.split("\n\n")[0]) if len(cmd) == 1 else None
        queue += [[cmd[0], s] for s in subs.group(1).split(",")] if subs else []
"""


def test_every_documented_command_answers_help_from_the_installed_wheel(installed):
    commands = documented_commands()
    wanted = [
        ["solver", "build"],
        ["oracle"],
        ["oracle", "serve"],
        ["experiments.suite"],
        ["experiments.benchmark"],
        ["experiments.replay"],
    ]
    assert all(c in commands for c in wanted), [c for c in wanted if c not in commands]
    result = _run(installed, "-c", HELP_ALL, json.dumps(commands))
    answers = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    failed = [a for a in answers if a["code"] != 0 or not a["usage"]]
    assert failed == [], "\n".join(f"{' '.join(a['argv'])}: exit {a['code']}\n{a['tail']}" for a in failed)
    ran = {tuple(a["argv"]) for a in answers}
    assert {tuple(c) for c in commands} <= ran
    suite_subcommands = {a["argv"][1] for a in answers if a["argv"][0] == "experiments.suite" and len(a["argv"]) == 2}
    assert {"run", "compare", "tables"} <= suite_subcommands
