"""Sealed tables: while the suite's runner has a trainer train, or scores what it returned, no solved table can be
opened or built in the process (docs/suite.md, "What a trainer may touch").

Every way in goes through :func:`check_unsealed`: :func:`solver.format.Table` (which every reader of a table
uses), :func:`solver.build.build`, the cache of :mod:`solver.provision`, and the constructors of
:class:`oracle.Oracle` (``open``, ``connect``, ``for_board``).  A table opened before the seal (the runner's own,
which scores checkpoints and the final policy) stays usable.

The seal is a flag of the process and the environment variable :data:`SEALED_ENV_VAR`, which processes started
meanwhile inherit, so a child process of a trainer is sealed too.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from env2048.metering import inherited

#: Set in the environment while tables are sealed; its value says why.
SEALED_ENV_VAR = "SOLVED2048_SEALED"


class TablesSealed(PermissionError):
    """A solved table was asked for while the tables are sealed (a suite trainer trains)."""


_reason: str | None = None


def sealed_reason() -> str | None:
    """Why the tables are sealed now (None: they are not)."""
    return _reason if _reason is not None else os.environ.get(SEALED_ENV_VAR) or None


def check_unsealed(what: str) -> None:
    """Raise :class:`TablesSealed`, naming ``what`` was asked for, if the tables are sealed."""
    reason = sealed_reason()
    if reason is not None:
        raise TablesSealed(
            f"the oracle is not available while a trainer trains: {what} was refused ({reason}). A trainer learns "
            "from the game alone (run.make_env, run.make_vec_env, and run.simulator on the known-rules track); the "
            "runner scores the policy it returns, and the checkpoints it hands to run.checkpoint (docs/suite.md)"
        )


@contextmanager
def sealed(reason: str):
    """Seal the tables for the ``with`` block, ``reason`` saying why in each refusal; the state before is
    restored after."""
    global _reason
    before = _reason
    _reason = reason
    try:
        with inherited(SEALED_ENV_VAR, reason):
            yield
    finally:
        _reason = before
