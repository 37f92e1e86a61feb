"""What plugs into the suite as a policy: spec strings (``agents.registry``), trained SB3 models, torch modules,
objects of the agent protocol (``oracle.agent``) and plain callables ``f(observation, info) -> action``."""

from __future__ import annotations

import importlib

import numpy as np

from agents.registry import make_agent
from oracle.agent import as_agent


class TorchModulePolicy:
    """A ``torch.nn.Module`` that maps a batch of boards (``float32 (n, rows, cols)`` tile exponents) to action
    logits ``(n, 4)``, played greedily among the legal moves."""

    cheap_to_evaluate = True  # batched forward passes: exact evaluation asks for every reachable state

    def __init__(self, module):
        self.module = module.eval()

    def act_batch(self, boards: np.ndarray, masks: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            logits = self.module(torch.as_tensor(np.asarray(boards, np.float32))).cpu().numpy()
        if logits.shape != (len(boards), 4):
            raise ValueError(f"the torch module returned logits of shape {logits.shape}, expected "
                             f"({len(boards)}, 4) for {len(boards)} boards")  # fmt: skip
        return np.where(masks, logits, -np.inf).argmax(axis=1)


def as_policy(policy, rows: int, cols: int, seed: int, oracle):
    """The agent that plays ``policy`` on a ``rows`` x ``cols`` task; a ``TypeError`` says what is accepted."""
    if isinstance(policy, str):
        return make_agent(policy, rows, cols, seed=seed, oracle=oracle)
    try:
        import torch

        if isinstance(policy, torch.nn.Module):
            return TorchModulePolicy(policy)
    except ImportError:
        pass
    agent = as_agent(policy)
    if hasattr(agent, "act") or hasattr(agent, "act_batch") or callable(agent):
        return agent
    raise TypeError(f"not a policy: {type(policy).__name__}; give a spec string, an SB3 model, a torch module, an "
                    "object with act(obs, info) or act_batch(boards, masks), or a callable f(obs, info)")  # fmt: skip


def load_trainer(name: str):
    """The trainer ``module:function`` (``train(task, budget_steps, seed) -> policy``)."""
    module, _, function = name.partition(":")
    if not module or not function:
        raise ValueError(f"--trainer {name!r}: write package.module:function")
    try:
        return getattr(importlib.import_module(module), function)
    except (ImportError, AttributeError) as e:
        raise ValueError(f"--trainer {name!r}: {e}") from e
