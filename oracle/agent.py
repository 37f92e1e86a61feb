"""The agent protocol the oracle scores.

An agent is any of:

* an object with ``act(observation, info) -> int`` (one decision; ``observation`` is the env's ``uint8 (rows,
  cols)`` exponent board, ``info`` the env's info dict with ``action_mask``);
* an object with ``act_batch(boards, masks) -> int[n]`` (``boards: uint8 (n, rows, cols)``, ``masks: bool
  (n, 4)``), used for many decisions at once (exact evaluation asks for every reachable state);
* a plain callable ``f(observation, info) -> int``;
* a trained Stable-Baselines3 model (``MaskablePPO``, ``PPO``, ...): it plays deterministically through
  :class:`oracle.sb3_policy.SB3Policy`, its observation encoding read from its observation space.

Actions: UP=0, RIGHT=1, DOWN=2, LEFT=3.  The ``agents`` package implements these; anything else with the same
methods works too.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def as_agent(agent):
    """``agent``, or for a Stable-Baselines3 model the agent that plays it (:class:`~oracle.sb3_policy.SB3Policy`)."""
    from .sb3_policy import SB3Policy, is_sb3_model

    return SB3Policy(agent) if is_sb3_model(agent) else agent


def single_decider(agent) -> Callable[[np.ndarray, dict], int]:
    """``f(observation, info) -> int`` for any agent of the protocol."""
    agent = as_agent(agent)
    if hasattr(agent, "act"):
        return agent.act
    if hasattr(agent, "act_batch"):

        def act(observation, info):
            return int(agent.act_batch(observation[None], np.asarray(info["action_mask"])[None])[0])

        return act
    if callable(agent):
        return agent
    raise TypeError(
        f"{type(agent).__name__} is not an agent: give it act(observation, info), act_batch(boards, masks), or "
        "pass a callable f(observation, info) -> action"
    )


def batch_decider(agent) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``f(boards uint8 (n, rows, cols), masks bool (n, 4)) -> int64[n]`` for any agent of the protocol."""
    agent = as_agent(agent)
    if hasattr(agent, "act_batch"):
        return lambda boards, masks: np.asarray(agent.act_batch(boards, masks), np.int64)
    single = single_decider(agent)

    def act_batch(boards, masks):
        return np.array([single(b, {"action_mask": m}) for b, m in zip(boards, masks, strict=True)], np.int64)

    return act_batch
