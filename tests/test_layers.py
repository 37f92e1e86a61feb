"""Imports go one way: env2048 <- solver <- oracle <- agents <- experiments."""

from __future__ import annotations

import ast
import pathlib

ORDER = ["env2048", "solver", "oracle", "agents", "experiments"]
ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_packages_import_only_to_their_left():
    bad = []
    for rank, package in enumerate(ORDER):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                names = []
                if isinstance(node, ast.Import):
                    names = [a.name for a in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    names = [node.module]
                for name in names:
                    top = name.split(".")[0]
                    if top in ORDER and ORDER.index(top) > rank:
                        bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert bad == []
