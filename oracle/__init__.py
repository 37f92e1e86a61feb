"""Exact optimal values, Q-values and regret of any board, from the solver's tables.

from oracle import Oracle, regret
oracle = Oracle.for_board("3x3")          # builds the table into the cache directory on first use
oracle.q_values(board), oracle.value(board), oracle.best_actions(board), oracle.action_regret(board, 3)
report = regret(agent, board="3x3", episodes=1000, seed=0)
"""

from __future__ import annotations

import env2048.kernel_cache  # noqa: F401  (numba caches the kernels user-wide: env2048.kernel_cache)

from .agent import batch_decider, single_decider
from .episodes import Episode
from .evaluate import Evaluation
from .oracle import BoardNotInTable, Oracle
from .priced_games import RegretReport, record_episodes, reenact
from .wrapper import shared_oracle

__all__ = [
    "BoardNotInTable",
    "Episode",
    "Evaluation",
    "Oracle",
    "RegretReport",
    "batch_decider",
    "evaluate",
    "oracle_for",
    "record_episodes",
    "reenact",
    "regret",
    "single_decider",
]


def oracle_for(board: str = "3x3", objective: str = "score", p4: float = 0.1) -> Oracle:
    """Deprecated: :meth:`Oracle.for_board` (this kept one oracle per board per process)."""
    import warnings

    warnings.warn("oracle.oracle_for is deprecated: use Oracle.for_board(board)", DeprecationWarning, stacklevel=2)
    return shared_oracle(board, p4, objective=objective)


def regret(
    agent, board: str = "3x3", episodes: int = 1000, seed: int = 0, objective: str = "score", progress: bool = True
) -> RegretReport:
    """Play ``agent`` on ``board`` and price every move against the optimum (see :mod:`oracle.priced_games`)."""
    oracle = shared_oracle(board, p4=0.1, objective=objective)
    return oracle.regret(agent, episodes=episodes, seed=seed, progress=progress)


def evaluate(agent, board: str = "3x3", objective: str = "score", progress: bool = True) -> Evaluation:
    """Exact expected score and optimality gap by age of ``agent``'s policy (see :mod:`oracle.evaluate`)."""
    return shared_oracle(board, p4=0.1, objective=objective).evaluate(agent, progress=progress)


def __getattr__(name: str):
    """Names that moved to :mod:`solver.provision` (``BUILDABLE``, ``cache_dir``, ...): deprecated here."""
    from .oracle import moved_to_provision

    return moved_to_provision(__name__, name)
