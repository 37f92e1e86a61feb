"""Boards per second of an SB3 policy's ``act_batch`` (what exact evaluation spends its time in) for several
forward-pass sizes, median of ``--repeats``, and whether every size gives the same actions.

    python -m experiments.bench.forward_chunk [--chunks 65536,8192,4096,1024] [--boards 262144] [--repeats 3]

The models are untrained MaskablePPO and DQN with a 256x256x256 MLP (the largest net of the search spaces) on
3x3 one-hot observations; the boards are random exponents 0..9.  Run it with ``OMP_NUM_THREADS=1`` for one
core's figure: :data:`oracle.agent.CHUNK` is the size the suite uses.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np


def models(vec) -> dict:
    from sb3_contrib import MaskablePPO
    from stable_baselines3 import DQN

    net = {"net_arch": [256, 256, 256]}
    return {
        "MaskablePPO": MaskablePPO("MlpPolicy", vec, policy_kwargs=net, seed=0),
        "DQN": DQN("MlpPolicy", vec, policy_kwargs=net, seed=0, buffer_size=1000),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", default="65536,8192,4096,1024")
    parser.add_argument("--boards", type=int, default=262_144)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    import oracle.agent as policy_module
    from agents.registry import make_policy
    from experiments.suite.envs import make_task_vec_env

    chunks = [int(c) for c in args.chunks.split(",")]
    boards = np.random.default_rng(0).integers(0, 10, size=(args.boards, 9)).astype(np.uint8)
    masks = np.ones((args.boards, 4), bool)
    default = policy_module.CHUNK
    try:
        for name, model in models(make_task_vec_env("3x3", 4, 0, "score")).items():
            policy = make_policy(model, 3, 3, 0, None)
            first = None
            for chunk in chunks:
                policy_module.CHUNK = chunk
                times = []
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    actions = policy.act_batch(boards, masks)
                    times.append(time.perf_counter() - start)
                first = actions if first is None else first
                same = "same actions" if np.array_equal(actions, first) else "OTHER ACTIONS"
                rate = args.boards / statistics.median(times)
                print(f"{name} chunk {chunk:>6}: {rate / 1e3:,.0f} k boards/s (median of {args.repeats}), {same}")
    finally:
        policy_module.CHUNK = default
    print(f"the suite's chunk: {default}")


if __name__ == "__main__":
    main()
