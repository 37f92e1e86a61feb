"""Agents by name, for command lines: ``make_agent("expectimax:2", rows=3, cols=3, seed=0)``.

Specs (``PATH`` is a file written by the agent's training script):

==========================  ==============================================================================
``random``                  uniformly random legal move
``greedy``                  largest immediate reward
``optimal``                 the oracle's move (needs ``oracle=``)
``expectimax:D``            expectimax to depth D on the heuristic (beyond 16 cells: :class:`WideExpectimaxAgent`, as
                            for ``expectimax:D:PATH``)
``expectimax:D:PATH``       expectimax to depth D on a trained n-tuple network (``.npz``)
``td:PATH``                 trained n-tuple network, greedy 1-ply (``.npz`` from ``experiments.train.td``; any board)
``ppo:PATH``                MaskablePPO or PPO model (``.zip``, e.g. from ``experiments.train.ppo``)
``dqn:PATH``                DQN or QR-DQN model (``.zip``)
``sb3:PATH``                any SB3 / sb3-contrib model of :data:`agents.sb3.ALGORITHMS` (``.zip``)
``policy:PATH``             torch policy net imitating the optimum (``.pt`` from ``experiments.train.imitate``)
``package.module:factory``  your own: ``factory(rows=, cols=, seed=)`` returns an agent (see oracle.agent)
==========================  ==============================================================================

SB3 models play as they were trained (``oracle.agent.SB3Policy``); :func:`make_policy` also takes objects.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from env2048.shape import is_packable
from oracle.agent import as_policy

from .expectimax import MAX_DEPTH, ExpectimaxAgent
from .ntuple import NTupleAgent
from .simple import GreedyAgent, OptimalAgent, RandomAgent
from .wide_expectimax import WideExpectimaxAgent

NAMES = ("random", "greedy", "optimal", "expectimax", "td", "ppo", "dqn", "sb3", "policy")
USAGE = (
    "random, greedy, optimal, expectimax:D[:PATH], td:PATH, ppo:PATH, dqn:PATH, sb3:PATH, policy:PATH or "
    "package.module:factory"
)
#: spec name -> the SB3 algorithms its file may hold
SB3_SPECS = {"ppo": ("MaskablePPO", "PPO"), "dqn": ("DQN", "QRDQN"), "sb3": None}


def _file(path: str, spec: str) -> Path:
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"agent {spec!r}: no file {path!r}")
    return p


def _network(path: str, spec: str, rows: int, cols: int) -> NTupleAgent:
    network = NTupleAgent.load(_file(path, spec))
    if (network.rows, network.cols) != (rows, cols):
        raise ValueError(f"agent {spec!r}: the network plays {network.rows}x{network.cols}, not {rows}x{cols}")
    return network


def make_agent(spec: str, rows: int, cols: int, seed: int = 0, oracle=None):
    """The agent a spec names (see the module docstring), for a ``rows`` x ``cols`` board.  With the ``oracle`` of an
    endgame pattern's table, expectimax searches the pattern's game (see :mod:`agents.expectimax`).

    Raises ``ValueError`` / ``FileNotFoundError`` saying what was wrong and what is allowed.
    """
    name, _, rest = spec.partition(":")
    if name == "random" and not rest:
        return RandomAgent(seed=seed)
    if name == "greedy" and not rest:
        return GreedyAgent(seed=seed)
    if name == "optimal" and not rest:
        if oracle is None:
            raise ValueError("agent 'optimal' needs the board's oracle (solved table)")
        return OptimalAgent(oracle, seed=seed)
    if name == "expectimax":
        depth, _, path = rest.partition(":")
        if not depth.isdigit() or not 1 <= int(depth) <= MAX_DEPTH:
            raise ValueError(f"agent {spec!r}: write expectimax:D with D in 1..{MAX_DEPTH}, optionally :PATH")
        if not is_packable(rows, cols):  # beyond 16 cells: the search on exponent arrays
            evaluator = _network(path, spec, rows, cols) if path else "heuristic"
            agent = WideExpectimaxAgent(rows, cols, depth=int(depth), seed=seed, evaluator=evaluator)
            agent.name = spec if not path else f"expectimax:{depth}:td"
            return agent
        evaluator = _network(path, spec, rows, cols) if path else "heuristic"
        pattern = getattr(getattr(oracle, "spec", None), "pattern", None)
        agent = ExpectimaxAgent(
            rows,
            cols,
            depth=int(depth),
            evaluator=evaluator,
            seed=seed,
            rules=None if pattern is None else pattern.rules,
        )
        agent.name = spec if not path else f"expectimax:{depth}:td"
        return agent
    if name == "td":
        if not rest:
            raise ValueError("agent 'td' needs a weights file: td:PATH")
        agent = _network(rest, spec, rows, cols)
        agent.name = "td"
        return agent
    if name == "policy":
        if not rest:
            raise ValueError("agent 'policy' needs a model file: policy:PATH")
        from .imitation import PolicyNetAgent

        agent = PolicyNetAgent.load(_file(rest, spec))
        if (agent.rows, agent.cols) != (rows, cols):
            raise ValueError(f"agent {spec!r}: the net plays {agent.rows}x{agent.cols}, not {rows}x{cols}")
        return agent
    if name in SB3_SPECS:
        if not rest:
            raise ValueError(f"agent {name!r} needs a model file: {name}:PATH")
        from .sb3 import ALGORITHMS, load_policy

        try:
            return load_policy(_file(rest, spec), rows, cols, SB3_SPECS[name] or ALGORITHMS)
        except ValueError as err:
            raise ValueError(f"agent {spec!r}: {err}") from err
    if rest and name not in NAMES:
        try:
            module = importlib.import_module(name)
        except ImportError as err:
            raise ValueError(f"agent {spec!r}: cannot import module {name!r} ({err})") from err
        factory = getattr(module, rest, None)
        if not callable(factory):
            raise ValueError(f"agent {spec!r}: module {name!r} has no callable {rest!r}")
        return factory(rows=rows, cols=cols, seed=seed)
    raise ValueError(f"unknown agent {spec!r}: use {USAGE}")


def make_policy(policy, rows: int, cols: int, seed: int = 0, oracle=None):
    """The policy (:mod:`oracle.agent`) that ``policy`` names or is, for a ``rows`` x ``cols`` board: a spec string
    through :func:`make_agent`, anything else through :func:`oracle.agent.as_policy` (a model of another board is
    refused).  The suite and the benchmark take their agents from here."""
    if isinstance(policy, str):
        return make_agent(policy, rows, cols, seed=seed, oracle=oracle)
    return as_policy(policy, rows=rows, cols=cols)
