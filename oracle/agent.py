"""The policy protocol — what the oracle scores, the suite runs and the benchmark prices — and the one adapter
that turns anything else into it.

A *policy* has

* ``act_batch(boards, masks) -> int64[n]``: one move per board (``boards: uint8 (n, rows, cols)`` tile
  exponents, ``masks: bool (n, 4)`` the legal moves; UP=0, RIGHT=1, DOWN=2, LEFT=3), and it declares what it is,
  for exact scoring:
* ``deterministic = True``: the move ``act_batch`` picks depends on the board alone (and on the seed the policy
  was made with), or
* ``action_probs(boards, masks) -> float64 (n, 4)``: the distribution ``act_batch`` samples from (rows sum to 1).

Optional: ``cheap_to_evaluate`` (True when deciding millions of boards in batches takes seconds: exact
evaluation asks for every reachable state), ``symmetric`` (the move on a mirrored board is the mirrored move:
exact evaluation may use canonical boards) and ``name``.  The ``agents`` package implements it.

A move that changes nothing (or that an endgame pattern forbids) is *illegal*.  It ends the game, as in the v2
environments: no reward, no further moves, and a goal not yet made is lost.  Its regret is therefore the whole
``max Q*`` of the board.

:func:`as_policy` is the adapter.  It takes a policy as it is, and turns into one:

* an object with ``act(observation, info) -> int`` only, or a plain callable ``f(observation, info) -> int``
  (``info["action_mask"]`` holds the legal moves); such a policy declares nothing unless given
  ``deterministic=True``;
* a trained Stable-Baselines3 or sb3-contrib model (``PPO``, ``A2C``, ``DQN``, ``QRDQN``, ``MaskablePPO``, ...):
  it plays ``model.predict(observation, deterministic=True)`` as it was trained, with the legal moves as
  ``action_masks`` for a maskable model; the observation encoding (one-hot ``(rows*cols + 2, rows, cols)`` or
  exponent ``(rows, cols)``) is read from its observation space;
* a ``torch.nn.Module`` mapping ``float32 (n, rows, cols)`` exponent boards to logits ``(n, 4)``, played greedily
  among the legal moves.

:func:`evaluates_exactly` is the one place that decides whether a policy is scored exactly or by Monte Carlo.
Nothing here imports an RL library: SB3 models are used through ``predict``, torch only for a torch module.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

from env2048.engine import onehot

#: Boards with at most this many cells are evaluated exactly whatever the policy costs per decision.
SMALL_BOARD_CELLS = 8
#: Boards per forward pass of a model (exact evaluation hands over whole layers of millions of boards).  Small
#: enough that a layer's activations stay in cache: 4,096 runs a 256x256x256 MLP 1.5x faster on one core than
#: 65,536, with the same actions bit for bit (``python -m experiments.bench.forward_chunk``).
CHUNK = 4096

WHAT_TO_DECLARE = (
    "set `deterministic = True` on it if its move depends on the board alone, or give it "
    "`action_probs(boards, masks) -> float64 (n, 4)`; a callable is declared with "
    "`oracle.agent.as_policy(f, deterministic=True)`"
)


def declares_policy(policy) -> bool:
    """Whether ``policy`` says what it is: ``deterministic = True`` or ``action_probs``."""
    return hasattr(policy, "action_probs") or getattr(policy, "deterministic", False) is True


def evaluates_exactly(policy, cells: int, table_allows: bool = True) -> bool:
    """Whether ``policy`` (as :func:`as_policy` gives it) on a board of ``cells`` cells is scored exactly: where
    the table allows it, on small boards (:data:`SMALL_BOARD_CELLS`) always, on larger ones when deciding is
    cheap (``cheap_to_evaluate``); deeper search or a plain callable, asked about every reachable state of an
    endgame, would take hours and is estimated by Monte Carlo instead.

    Raises ``ValueError`` when the answer would be yes but the policy declares neither ``deterministic`` nor
    ``action_probs``: its exact value is not defined by its moves alone."""
    if not table_allows or not (cells <= SMALL_BOARD_CELLS or bool(getattr(policy, "cheap_to_evaluate", False))):
        return False
    if not declares_policy(policy):
        raise ValueError(f"{policy_name(policy)} cannot be scored exactly: {WHAT_TO_DECLARE}")
    return True


def policy_name(policy) -> str:
    """The policy's ``name``, or its class name."""
    return str(getattr(policy, "name", None) or type(policy).__name__)


def is_sb3_model(obj) -> bool:
    """True for a Stable-Baselines3 model (``predict``, ``policy`` and ``observation_space``)."""
    return all(hasattr(obj, name) for name in ("predict", "policy", "observation_space"))


def _is_torch_module(obj) -> bool:
    torch = sys.modules.get("torch")  # a torch module exists only if torch is already imported
    return torch is not None and isinstance(obj, torch.nn.Module)


def as_policy(obj, deterministic: bool | None = None, rows: int | None = None, cols: int | None = None):
    """``obj`` as a policy of the protocol (see the module docstring).

    ``deterministic=True`` declares a plain callable or ``act``-only object deterministic.  ``rows`` and
    ``cols``, if given, are the board the policy will play: a model trained on another board is refused with a
    message that names both.  Raises ``TypeError`` for anything else, saying what is accepted."""
    if is_sb3_model(obj):
        policy = SB3Policy(obj)
    elif _is_torch_module(obj):
        policy = TorchModulePolicy(obj)
    elif hasattr(obj, "act_batch"):
        policy = obj
    elif hasattr(obj, "act") or callable(obj):
        policy = SingleDecisionPolicy(obj, deterministic)
    else:
        raise TypeError(
            f"{type(obj).__name__} is not a policy: give an object with act_batch(boards, masks) (or "
            "act(observation, info)), a callable f(observation, info) -> action, a Stable-Baselines3 model or a "
            "torch module"
        )
    board = getattr(policy, "board_shape", None)
    if rows is not None and board is not None and tuple(board) != (rows, cols):
        raise ValueError(
            f"{policy_name(policy)} was trained on {board[0]}x{board[1]} boards (observation space "
            f"{policy.observation_space}); this task is {rows}x{cols} (observation space Box(0, {rows * cols + 1}, "
            f"({rows}, {cols}), uint8), or one-hot Box(0, 1, ({rows * cols + 2}, {rows}, {cols}), uint8))"
        )
    return policy


def single_decider(agent) -> Callable[[np.ndarray, dict], int]:
    """``f(observation, info) -> int`` for anything :func:`as_policy` accepts."""
    if hasattr(agent, "act"):
        return agent.act
    policy = as_policy(agent)
    if isinstance(policy, SingleDecisionPolicy):
        return policy.decide
    return lambda observation, info: BatchPolicy.act(policy, observation, info)


def batch_decider(agent) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """``f(boards uint8 (n, rows, cols), masks bool (n, 4)) -> int64[n]`` for anything :func:`as_policy`
    accepts."""
    policy = as_policy(agent)
    return lambda boards, masks: np.asarray(policy.act_batch(boards, masks), np.int64)


class BatchPolicy:
    """Base of the policies that decide in batches: ``act`` asks ``act_batch`` about one board."""

    def act(self, observation, info) -> int:
        return int(self.act_batch(np.asarray(observation)[None], np.asarray(info["action_mask"])[None])[0])


class SingleDecisionPolicy:
    """A callable ``f(observation, info)`` or an object with ``act(observation, info)``, asked board by board."""

    cheap_to_evaluate = False

    def __init__(self, decide_or_agent, deterministic: bool | None = None):
        self.decide = getattr(decide_or_agent, "act", decide_or_agent)
        self.name = (
            policy_name(decide_or_agent)
            if hasattr(decide_or_agent, "act")
            else getattr(decide_or_agent, "__name__", "callable")
        )
        declared = getattr(decide_or_agent, "deterministic", None) if deterministic is None else deterministic
        if declared is not None:
            self.deterministic = bool(declared)
        self.symmetric = bool(getattr(decide_or_agent, "symmetric", False))

    def act_batch(self, boards: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return np.array(
            [self.decide(b, {"action_mask": m}) for b, m in zip(boards, masks, strict=True)], np.int64
        ).reshape(len(masks))

    def act(self, observation, info) -> int:
        return int(self.decide(observation, info))


class SB3Policy(BatchPolicy):
    """A trained SB3 model, played as it was trained: ``model.predict(obs, deterministic=True)``, with the legal
    moves as ``action_masks`` for a maskable model (a model without masks may pick an illegal move, which ends
    the game).  ``model``'s observation space is ``Box(0, 1, (rows*cols + 2, rows, cols), uint8)`` (one-hot) or
    ``(rows, cols)`` (exponents)."""

    deterministic = True
    cheap_to_evaluate = True  # batched forward passes
    name = "sb3"

    def __init__(self, model):
        if not is_sb3_model(model):
            raise TypeError(
                f"{type(model).__name__} is not a Stable-Baselines3 model (needs predict, policy and observation_space)"
            )
        self.observation_space = model.observation_space
        shape = tuple(int(x) for x in (model.observation_space.shape or ()))
        if len(shape) == 3 and shape[0] == shape[1] * shape[2] + 2:
            self.encoding = "onehot"
            self.channels, self.rows, self.cols = shape
        elif len(shape) == 2:
            self.encoding = "exponent"
            self.rows, self.cols = shape
            self.channels = self.rows * self.cols + 2
        else:
            raise ValueError(
                f"the model's observation space is {model.observation_space}; expected the env's one-hot "
                "(rows*cols + 2, rows, cols) or exponent (rows, cols) encoding"
            )
        self.board_shape = (self.rows, self.cols)
        self.model = model
        self.name = type(model).__name__
        try:
            import inspect

            self.maskable = "action_masks" in inspect.signature(model.predict).parameters
        except (TypeError, ValueError):
            self.maskable = False

    def observe(self, boards: np.ndarray) -> np.ndarray:
        """The model's observations of exponent boards ``uint8 (n, rows*cols)``."""
        if self.encoding == "exponent":
            return boards.reshape(-1, self.rows, self.cols)
        return onehot(boards, self.channels).reshape(-1, self.channels, self.rows, self.cols)

    def act_batch(self, boards, masks) -> np.ndarray:
        boards = np.asarray(boards, np.uint8).reshape(-1, self.rows * self.cols)
        masks = np.asarray(masks, bool).reshape(-1, 4)
        if boards.size and self.encoding == "onehot" and boards.max() >= self.channels:
            raise ValueError(f"exponent {boards.max()} has no one-hot plane (the model has {self.channels})")
        out = np.empty(boards.shape[0], np.int64)
        for lo in range(0, boards.shape[0], CHUNK):
            obs = self.observe(boards[lo : lo + CHUNK])
            if self.maskable:
                actions, _ = self.model.predict(obs, action_masks=masks[lo : lo + CHUNK], deterministic=True)
            else:
                actions, _ = self.model.predict(obs, deterministic=True)
            out[lo : lo + CHUNK] = np.asarray(actions).reshape(-1)
        return out


class TorchModulePolicy(BatchPolicy):
    """A ``torch.nn.Module`` that maps ``float32 (n, rows, cols)`` exponent boards to action logits ``(n, 4)``,
    played greedily among the legal moves."""

    deterministic = True
    cheap_to_evaluate = True  # batched forward passes
    name = "torch-module"

    def __init__(self, module):
        self.module = module.eval()

    def act_batch(self, boards: np.ndarray, masks: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            logits = self.module(torch.as_tensor(np.asarray(boards, np.float32))).cpu().numpy()
        if logits.shape != (len(boards), 4):
            raise ValueError(
                f"the torch module returned logits of shape {logits.shape}, expected ({len(boards)}, 4) for "
                f"{len(boards)} boards"
            )
        return np.where(masks, logits, -np.inf).argmax(axis=1)
