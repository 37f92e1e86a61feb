"""Command lines from dataclasses, through tyro: every field becomes ``--field-name`` with its type, its default
and, as its help, the comment written beside it; booleans get ``--flag`` / ``--no-flag``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import tyro


def parse_dataclass(cls, argv=None, description: str | None = None):
    """An instance of dataclass ``cls`` from the command line ``argv`` (default ``sys.argv[1:]``); a bad flag or
    value exits with tyro's usage message, as argparse does."""
    argv = _values_with_spaces_attached(sys.argv[1:] if argv is None else list(argv))
    module = cls.__module__
    if module == "__main__":  # run as python -m experiments.X: the module's own name is in its spec
        module = getattr(getattr(sys.modules["__main__"], "__spec__", None), "name", None) or module
    return tyro.cli(cls, args=argv, description=description or cls.__doc__, prog=f"python -m {module}")


def _values_with_spaces_attached(argv: list[str]) -> list[str]:
    """``["--extra", "--net 256,256"]`` -> ``["--extra=--net 256,256"]``: a value that starts with a dash but holds a
    space is a value, never a flag (argparse's rule, which tyro lacks), so ``--extra "--net 256,256"`` keeps working."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and arg.startswith("-") and " " in arg:
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def write_json(path, data) -> Path:
    """Write ``data`` as indented JSON (parent directories created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path
