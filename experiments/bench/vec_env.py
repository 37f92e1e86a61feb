"""Env stepping for SB3: the native adapter (``agents.vec_env.Game2048SB3VecEnv``) against SB3's DummyVecEnv of
``Solved2048`` envs, with random legal actions (no policy), and MaskablePPO's training speed on each.  With
``--pattern``, an endgame: ``agents.endgame_vec_env.Endgame2048SB3VecEnv`` against SB3's DummyVecEnv of one-hot
``Endgame2048Env`` envs (the suite's v2 rule: an illegal move ends the game).

    python -m experiments.bench.vec_env [--board 3x3] [--n-envs 8] [--steps 200000] [--ppo-steps 20000] [--repeats 3]
    python -m experiments.bench.vec_env --pattern L3 --target 256 --n-envs 32 --ppo-steps 0

Prints the median steps per second of each (one process, both measured in turn, so load affects both alike).
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time

import numpy as np

import env2048  # noqa: F401  (registers the environments)
from env2048.shape import parse_board


def make_vec(kind: str, n_envs: int, rows: int, cols: int, seed: int = 0):
    """The ``native`` adapter or SB3's ``dummy`` VecEnv of the rows x cols board."""
    if kind == "native":
        from agents.vec_env import Game2048SB3VecEnv

        vec = Game2048SB3VecEnv(n_envs, rows, cols, obs_mode="onehot")
        vec.seed(seed)
        return vec
    from stable_baselines3.common.env_util import make_vec_env

    return make_vec_env(
        f"Solved2048-{rows}x{cols}", n_envs=n_envs, seed=seed, env_kwargs={"obs_mode": "onehot", "oracle": False}
    )


def make_endgame_vec(kind: str, n_envs: int, pattern: str, target: int, seed: int = 0):
    """The ``native`` adapter or SB3's ``dummy`` VecEnv of the endgame (an illegal move ends the game)."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    from agents.endgame_vec_env import Endgame2048SB3VecEnv
    from env2048.endgame import Endgame2048Env
    from experiments.suite.envs import OneHotBoard

    if kind == "native":
        vec = Endgame2048SB3VecEnv(n_envs, pattern, target, invalid_action="terminate")
    else:
        vec = DummyVecEnv(
            [lambda: OneHotBoard(Endgame2048Env(pattern, target, invalid_action="terminate")) for _ in range(n_envs)]
        )
    vec.seed(seed)
    return vec


def stepping_rate(make, kind: str, n_envs: int, steps: int) -> float:
    """Env steps per second of ``make(kind, n_envs)`` with uniformly random legal moves (masks from
    ``env_method("action_masks")``)."""
    vec = make(kind, n_envs)
    vec.reset()
    rng = np.random.default_rng(0)
    t = time.perf_counter()
    for _ in range(steps // n_envs):
        masks = np.stack(vec.env_method("action_masks"))
        actions = (rng.random((n_envs, 4)) * masks).argmax(axis=1)
        vec.step(actions)
    return steps // n_envs * n_envs / (time.perf_counter() - t)


def ppo_rate(make, kind: str, n_envs: int, steps: int) -> float:
    """MaskablePPO training steps per second on ``make(kind, n_envs)`` (n_steps 256, batch 512, 4 epochs,
    256x256 MLP)."""
    from sb3_contrib import MaskablePPO

    model = MaskablePPO(
        "MlpPolicy",
        make(kind, n_envs),
        n_steps=256,
        batch_size=512,
        n_epochs=4,
        seed=0,
        device="cpu",
        verbose=0,
    )
    t = time.perf_counter()
    model.learn(total_timesteps=steps)
    return model.num_timesteps / (time.perf_counter() - t)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--board", default="3x3")
    parser.add_argument("--n-envs", type=int, default=8)
    parser.add_argument("--steps", type=int, default=200_000, help="env steps per stepping measurement")
    parser.add_argument("--ppo-steps", type=int, default=20_000, help="PPO steps per measurement (0: skip)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pattern", help="an endgame pattern (with --target) instead of the board")
    parser.add_argument("--target", type=int, help="the endgame's target tile")
    args = parser.parse_args(argv)
    if (args.pattern is None) != (args.target is None):
        parser.error("--pattern and --target go together")
    if args.pattern is None:
        rows, cols = parse_board(args.board)
        make, game = functools.partial(make_vec, rows=rows, cols=cols), args.board
    else:
        make = functools.partial(make_endgame_vec, pattern=args.pattern, target=args.target)
        game = f"{args.pattern}-{args.target}"
    for name, measure, steps in (
        ("env stepping", stepping_rate, args.steps),
        ("MaskablePPO", ppo_rate, args.ppo_steps),
    ):
        if steps <= 0:
            continue
        rates = {kind: [] for kind in ("native", "dummy")}
        for _ in range(args.repeats):
            for kind in rates:
                rates[kind].append(measure(make, kind, args.n_envs, steps))
        native, dummy = statistics.median(rates["native"]), statistics.median(rates["dummy"])
        print(
            f"{name}, {game}, {args.n_envs} envs: native {native:,.0f} steps/s, DummyVecEnv {dummy:,.0f} "
            f"steps/s ({native / dummy:.1f}x); runs: native {[round(r) for r in rates['native']]}, dummy "
            f"{[round(r) for r in rates['dummy']]}"
        )


if __name__ == "__main__":
    main()
