"""A pytest plugin: where a test run spends its time compiling numba kernels.

    python -m pytest -p experiments.bench.compile_profile [pytest options]

Run it with empty numba caches (a fresh clone, or ``NUMBA_CACHE_DIR`` set to an empty directory) to see what a
first run compiles.  At the end it prints the total, the functions that took longest (own seconds, callees'
compilations excluded) and the tests during which the most was compiled, and writes them all as JSON to
``$COMPILE_PROFILE_JSON`` (default ``compile-profile.json``).  Compilations in subprocesses (the CLI tests, Ray
workers, the wheel test's venv) are not seen.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict

from experiments.bench.first_use import compile_timer

_current = ["(collection)"]
_first_seen: dict[str, str] = {}
_timer = None


def pytest_configure(config):
    global _timer
    from numba.core import event

    _timer = compile_timer(on_compiled=lambda name: _first_seen.setdefault(name, _current[0]))
    event.register("numba:compile", _timer)


def pytest_runtest_setup(item):
    _current[0] = item.nodeid


def pytest_terminal_summary(terminalreporter):
    own = dict(sorted(_timer.own.items(), key=lambda kv: -kv[1]))
    by_test: dict[str, float] = defaultdict(float)
    for name, seconds in own.items():
        by_test[_first_seen[name]] += seconds
    by_test = dict(sorted(by_test.items(), key=lambda kv: -kv[1]))
    write = terminalreporter.write_line
    write(f"numba compilation: {sum(own.values()):.1f} s in {len(own)} functions; the largest:")
    for name, seconds in list(own.items())[:15]:
        write(f"  {seconds:6.2f} s  {name}")
    write("compiled during:")
    for test, seconds in list(by_test.items())[:10]:
        write(f"  {seconds:6.2f} s  {test}")
    path = os.environ.get("COMPILE_PROFILE_JSON", "compile-profile.json")
    with open(path, "w") as fh:
        json.dump({"total_s": sum(own.values()), "functions": own, "by_test": by_test}, fh, indent=1)
