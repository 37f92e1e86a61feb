"""Step meters: while one is installed, every step of an env2048 environment and every move of a self-play
kernel is charged to it, before it is taken.

The suite's runner installs its trainer's budget here while the trainer trains (docs/suite.md, "What a trainer
may touch"), so that envs the trainer makes itself (``gym.make("Game2048-v0")``, ``Game2048VectorEnv``, an
endgame env) count against the budget like the envs the runner hands out.  Outside a training run no meter is
installed and each charge costs one global lookup.

A meter is any object with ``charge(steps, kind)`` (``kind`` ``"env"`` for an environment step, ``"simulated"``
for a move the learner plays by the rules without an env) and ``remaining`` (the steps it still allows);
``note_seeds(seeds)`` records the seeds that training envs were reset with, so that evaluation can avoid them.

A process started while a meter is installed (``fork``, ``spawn``, ``forkserver``: the environment variable
:data:`METERED_ENV_VAR` goes with it) refuses every step: its steps could not reach the parent's meter.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

#: Set in the environment while a meter is installed, so that child processes know it.
METERED_ENV_VAR = "SOLVED2048_METERED"

ENV_STEP, SIMULATED = "env", "simulated"


class UncountedStepError(RuntimeError):
    """A step that cannot be counted: taken in a child process of a metered training run."""


class _ChildOfMeteredProcess:
    """The meter of a process started by a metered one: it refuses every step."""

    remaining = 0

    def charge(self, steps: int, kind: str) -> None:
        raise UncountedStepError(
            f"an env2048 game was stepped in a child process of a training run ({METERED_ENV_VAR} is set): "
            "its steps cannot be counted against the run's budget; step the envs in the trainer's own process "
            "(run.make_vec_env steps many games in one kernel)"
        )

    def note_seeds(self, seeds) -> None:
        pass


_active = _ChildOfMeteredProcess() if os.environ.get(METERED_ENV_VAR) else None


def _after_fork_in_child() -> None:
    global _active
    if _active is not None:
        _active = _ChildOfMeteredProcess()


os.register_at_fork(after_in_child=_after_fork_in_child)


def active():
    """The installed meter, or None."""
    return _active


def charge(steps: int, kind: str = ENV_STEP) -> None:
    """Charge ``steps`` to the installed meter, if any (it raises when they pass its budget)."""
    meter = _active
    if meter is not None:
        meter.charge(steps, kind)


def moves_left(asked: int | None) -> int | None:
    """The moves a self-play kernel may play: ``asked`` (None: no limit) capped by the installed meter's
    remaining steps (a meter may refuse simulated moves outright, as an ``env-only`` budget does)."""
    meter = _active
    if meter is None:
        return asked
    meter.charge(0, SIMULATED)  # refuses here if the meter allows no simulation
    left = int(meter.remaining)
    return left if asked is None else min(int(asked), left)


def note_seeds(seeds) -> None:
    """Record, for the installed meter, the seeds an env was reset with (ints; None entries ignored)."""
    meter = _active
    if meter is not None:
        meter.note_seeds([int(s) for s in seeds if s is not None])


@contextmanager
def inherited(name: str, value: str):
    """The environment variable ``name`` set to ``value`` for the ``with`` block, so that processes started
    meanwhile inherit it; its value before (or its absence) is restored after."""
    before = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = before


@contextmanager
def installed(meter):
    """Install ``meter`` for the ``with`` block (and mark child processes started meanwhile); the meter before
    it is restored after."""
    global _active
    before = _active
    _active = meter
    try:
        with inherited(METERED_ENV_VAR, "1"):
            yield meter
    finally:
        _active = before


@contextmanager
def paused():
    """No meter for the ``with`` block: the runner's own games (scoring a checkpoint by Monte Carlo) are not the
    learner's.  Only the runner calls this; a trainer that does is outside the suite's rules."""
    global _active
    before = _active
    _active = None
    try:
        yield
    finally:
        _active = before
