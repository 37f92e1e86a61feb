"""Trainers named on the command line (``module:function``).  What the suite scores as a policy comes from
:func:`agents.registry.make_policy` (spec strings, SB3 models, torch modules, objects of the policy protocol of
:mod:`oracle.agent` and plain callables)."""

from __future__ import annotations

import importlib


def load_trainer(name: str):
    """The trainer ``module:function`` (``train(task, budget_steps, seed) -> policy``)."""
    module, _, function = name.partition(":")
    if not module or not function:
        raise ValueError(f"--trainer {name!r}: write package.module:function")
    try:
        return getattr(importlib.import_module(module), function)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"--trainer {name!r}: {e}") from e
