"""Loading a trained Stable-Baselines3 or sb3-contrib model from its ``.zip`` (the suite's ``sb3:PATH``).

The algorithm is read from the file: the policy class it saved (maskable actor-critic, DQN, QR-DQN or plain
actor-critic) and, for an actor-critic, whether it has PPO's ``clip_range``.  The model then plays as
:class:`oracle.agent.SB3Policy` (as it was trained, deterministically).  Needs the ``rl`` extra.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

from oracle.agent import SB3Policy

#: policy class module -> the algorithm that saved it (``None``: an actor-critic, PPO or A2C by its data)
POLICY_MODULES = {
    "sb3_contrib.common.maskable.policies": "MaskablePPO",
    "stable_baselines3.dqn.policies": "DQN",
    "sb3_contrib.qrdqn.policies": "QRDQN",
    "stable_baselines3.common.policies": None,
}
ALGORITHMS = ("MaskablePPO", "PPO", "A2C", "DQN", "QRDQN")


def saved_algorithm(path) -> str:
    """The algorithm (one of :data:`ALGORITHMS`) that saved the model at ``path``; ``ValueError`` otherwise."""
    path = Path(path)
    try:
        with zipfile.ZipFile(path) as archive:
            data = json.loads(archive.read("data"))
    except (zipfile.BadZipFile, KeyError, json.JSONDecodeError) as err:
        raise ValueError(f"{path} is not a Stable-Baselines3 model file ({err})") from err
    module = str(data.get("policy_class", {}).get("__module__", ""))
    if module not in POLICY_MODULES:
        raise ValueError(f"{path}: a model of policy module {module!r}; supported: {', '.join(ALGORITHMS)}")
    algorithm = POLICY_MODULES[module]
    if algorithm is None:
        algorithm = "PPO" if "clip_range" in data else "A2C"
    return algorithm


def algorithm_class(name: str):
    """The SB3 / sb3-contrib class of an algorithm name of :data:`ALGORITHMS`."""
    if name in ("MaskablePPO", "QRDQN"):
        import sb3_contrib

        return getattr(sb3_contrib, name)
    if name in ("PPO", "A2C", "DQN"):
        import stable_baselines3

        return getattr(stable_baselines3, name)
    raise ValueError(f"unknown algorithm {name!r}; supported: {', '.join(ALGORITHMS)}")


def load_model(path, algorithms: tuple[str, ...] = ALGORITHMS):
    """The model saved at ``path`` (on the CPU), of one of ``algorithms``; ``ValueError`` names what it is
    otherwise."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"no model file {str(path)!r}")
    name = saved_algorithm(path)
    if name not in algorithms:
        raise ValueError(f"{path} holds a {name} model; expected one of {', '.join(algorithms)}")
    return algorithm_class(name).load(str(path), device="cpu")


def load_policy(
    path, rows: int | None = None, cols: int | None = None, algorithms: tuple[str, ...] = ALGORITHMS
) -> SB3Policy:
    """The policy of the model at ``path``; with ``rows`` and ``cols`` a model of another board is refused with a
    message that names both."""
    from oracle.agent import as_policy

    policy = as_policy(load_model(path, algorithms), rows=rows, cols=cols)
    policy.name = f"{policy.name}:{Path(path).stem}"
    return policy
