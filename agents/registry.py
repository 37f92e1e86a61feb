"""Agents by name, for command lines: ``make_agent("expectimax:2", rows=3, cols=3, seed=0)``.

Specs (``PATH`` is a file written by the agent's training script):

==========================  ==============================================================================
``random``                  uniformly random legal move
``greedy``                  largest immediate reward
``optimal``                 the oracle's move (needs ``oracle=``)
``expectimax:D``            expectimax to depth D on the heuristic
``expectimax:D:PATH``       expectimax to depth D on a trained n-tuple network (``.npz``)
``td:PATH``                 trained n-tuple network, greedy 1-ply (``.npz`` from ``experiments.train.td``)
``ppo:PATH``                MaskablePPO model (``.zip`` from ``experiments.train.ppo``)
``policy:PATH``             torch policy net imitating the optimum (``.pt`` from ``experiments.train.imitate``)
``package.module:factory``  your own: ``factory(rows=, cols=, seed=)`` returns an agent (see oracle.agent)
==========================  ==============================================================================
"""

from __future__ import annotations

import importlib
from pathlib import Path

from .expectimax import MAX_DEPTH, ExpectimaxAgent
from .ntuple import NTupleAgent
from .simple import GreedyAgent, OptimalAgent, RandomAgent

NAMES = ("random", "greedy", "optimal", "expectimax", "td", "ppo", "policy")
USAGE = "random, greedy, optimal, expectimax:D[:PATH], td:PATH, ppo:PATH, policy:PATH or package.module:factory"


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
        evaluator = _network(path, spec, rows, cols) if path else "heuristic"
        pattern = getattr(getattr(oracle, "spec", None), "pattern", None)
        agent = ExpectimaxAgent(rows, cols, depth=int(depth), evaluator=evaluator, seed=seed,
                                rules=None if pattern is None else pattern.rules)  # fmt: skip
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
    if name == "ppo":
        if not rest:
            raise ValueError("agent 'ppo' needs a model file: ppo:PATH")
        from .ppo import PPOAgent

        agent = PPOAgent.load(_file(rest, spec), seed=seed)
        if (agent.rows, agent.cols) != (rows, cols):
            raise ValueError(f"agent {spec!r}: the model plays {agent.rows}x{agent.cols}, not {rows}x{cols}")
        return agent
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
