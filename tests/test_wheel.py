"""The project as a user installs it: ``python -m build`` makes a wheel and an sdist, and the wheel, installed
(not editable) into a fresh venv, works from outside the clone: import, ``gym.make("Solved2048-2x2")`` with the
oracle, a 2x3 solve, a replay page (the viewer's HTML template is package data).

The fresh venv reuses this environment's installed dependencies through a path entry (a plain path: the ``.pth``
files there, among them this clone's editable install, are not read), so no download is needed; the wheel is the
only copy of the project it sees.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SMOKE = """
import sys, pathlib
import gymnasium as gym
import env2048, oracle, solver, agents, experiments
from solver.build import build
from solver.spec import SolveSpec
from experiments.replay import replay

site = pathlib.Path(sys.argv[1]).resolve()
for module in (env2048, oracle, solver, agents, experiments):
    assert site in pathlib.Path(module.__file__).resolve().parents, f"{module.__name__} from {module.__file__}"
env = gym.make("Solved2048-2x2")
obs, info = env.reset(seed=0)
assert info["q_values"].shape == (4,), info
build(SolveSpec.parse("2x3"), pathlib.Path("t2x3.h5"), progress=False)
games = replay("2x3", "greedy", episodes=1, out="replay.html", table="t2x3.h5")
assert "__DATA__" not in pathlib.Path("replay.html").read_text() and games[0].moves > 0
print("smoke ok", env2048.__file__)
"""


def test_built_wheel_installs_into_a_fresh_venv_and_works(tmp_path):
    quiet_pip = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(ROOT)], check=True,
                   capture_output=True, env=quiet_pip)  # fmt: skip
    wheels, sdists = list(dist.glob("*.whl")), list(dist.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in dist.iterdir())

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())  # fmt: skip
    (site / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", "-q",
                    str(wheels[0])], check=True, capture_output=True, env=quiet_pip)  # fmt: skip

    work = tmp_path / "work"  # outside the clone, so that nothing imports from it
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["SOLVED2048_HOME"] = str(tmp_path / "tables")  # the 2x2 table is built by the installed package
    result = subprocess.run([str(python), "-c", SMOKE, str(site)], cwd=work, capture_output=True, text=True, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "smoke ok" in result.stdout
