"""Stand-ins the suite's tests hand to the runner as a trainer's result (the trainers that try to game the suite
are in red_team.py)."""

from __future__ import annotations

import numpy as np


class FirstLegalMove:
    """A stand-in for what a trainer learned: any object with ``act_batch`` is a policy the suite scores."""

    deterministic = True

    @staticmethod
    def act_batch(boards, masks):
        return np.argmax(np.asarray(masks), axis=1)


def learner_runs(tasks, seeds: int = 5, **fields) -> dict[str, list[dict]]:
    """A learner's run results on ``tasks`` as far as the registry's audit reads them (seeds 0 .. ``seeds`` - 1 on
    the env-only track, each counting its task's whole budget), with ``fields`` added to each."""
    from experiments.suite import SUITE_VERSION, get_task

    return {
        task: [
            {
                "seed": seed,
                "track": "env-only",
                "suite_version": SUITE_VERSION,
                "budget_steps": get_task(task).budget_steps,
                "counted_steps": get_task(task).budget_steps,
                **fields,
            }
            for seed in range(seeds)
        ]
        for task in tasks
    }


def jax_ppo_small(task, budget_steps: int, seed: int):
    """The suite's JAX PPO trainer with a small network and rollout (quick to compile and train in a test)."""
    from experiments.suite.trainers import jax_ppo

    small = {"net_arch": [16], "n_envs": 8, "n_steps": 16, "batch_size": 64}
    return jax_ppo(task, budget_steps, seed, hyperparams=small)


jax_ppo_small.track = "env-only"
jax_ppo_small.checkpoints = True
