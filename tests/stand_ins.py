"""Stand-ins the suite's tests hand to the runner as a trainer's result, and a trainer the command line can load
(``--trainer stand_ins:returns_optimal``: this directory is on ``sys.path`` in the tests)."""

from __future__ import annotations

import numpy as np


class FirstLegalMove:
    """A stand-in for what a trainer learned: any object with ``act_batch`` is a policy the suite scores."""

    deterministic = True

    @staticmethod
    def act_batch(boards, masks):
        return np.argmax(np.asarray(masks), axis=1)


def returns_optimal(run, budget_steps, seed):
    """A trainer that learns nothing and names the optimal agent."""
    return "optimal"
