"""Deprecated module paths of the table format (moved to :mod:`solver.format`): a name read from an old path is
looked up in its new module, with a ``DeprecationWarning`` that names the new place."""

from __future__ import annotations

import importlib
import warnings


def moved(old: str, new_modules: tuple[str, ...]):
    """A module ``__getattr__`` for the old module ``old`` whose names now live in ``new_modules``."""

    def __getattr__(name: str):
        for module_name in new_modules:
            module = importlib.import_module(module_name)
            if hasattr(module, name):
                warnings.warn(f"{old}.{name} moved to {module_name}.{name}", DeprecationWarning, stacklevel=2)
                return getattr(module, name)
        raise AttributeError(f"module {old!r} has no attribute {name!r}")

    return __getattr__
