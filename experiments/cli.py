"""Command lines from dataclasses: every field becomes ``--field-name`` with its type and default."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path


def parse_dataclass(cls, argv=None, description: str | None = None):
    """An instance of dataclass ``cls`` from the command line (``--help`` lists the fields with defaults)."""
    parser = argparse.ArgumentParser(description=description or cls.__doc__,
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)  # fmt: skip
    for f in dataclasses.fields(cls):
        flag = "--" + f.name.replace("_", "-")
        kind = f.type if isinstance(f.type, type) else {"int": int, "float": float, "str": str, "bool": bool}[f.type]
        if kind is bool:
            parser.add_argument(flag, action=argparse.BooleanOptionalAction, default=f.default)
        else:
            parser.add_argument(flag, type=kind, default=f.default)
    return cls(**vars(parser.parse_args(argv)))


def write_json(path, data) -> Path:
    """Write ``data`` as indented JSON (parent directories created); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
    return path
