"""A common base class for the agents of the policy protocol (defined in :mod:`oracle.agent`, where the oracle
consumes it).

Every agent here has ``act(observation, info) -> int`` and ``act_batch(boards, masks) -> int64[n]``, takes a
``seed`` (the same seed gives the same games) and declares itself deterministic or gives ``action_probs``.
"""

from __future__ import annotations

import numpy as np

from oracle.agent import BatchPolicy, batch_decider, single_decider

__all__ = ["Agent", "batch_decider", "single_decider"]


class Agent(BatchPolicy):
    """Base class: subclasses implement ``act_batch``; ``act`` (:class:`oracle.agent.BatchPolicy`) calls it on
    one board."""

    name = "agent"
    #: True if the move depends on the board alone (given the seed); a subclass that samples gives
    #: ``action_probs`` instead.  Exact evaluation needs one of the two.
    deterministic = False
    #: True if the action on a mirrored board is the mirrored action (exact evaluation may use canonical boards)
    symmetric = False
    #: True if deciding is cheap enough for the oracle's exact evaluation on 3x3 (millions of boards in seconds)
    cheap_to_evaluate = False

    def act_batch(self, boards: np.ndarray, masks: np.ndarray) -> np.ndarray:
        raise NotImplementedError
