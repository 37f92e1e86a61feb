"""Train sb3-contrib MaskablePPO on a solved board and measure it against the optimum.

    python -m experiments.train.ppo [--board 3x3] [--timesteps 3000000] [--seed 0] [--out results/ppo-3x3] ...

The policy sees the one-hot observation (``--obs onehot``, or ``exponent``) and only legal moves (action
masks).  The games run in the native vector env through :class:`agents.vec_env.Game2048SB3VecEnv` (``--vec
native``; ``dummy`` is SB3's DummyVecEnv of single envs).  Rewards are the game's merge rewards (``--reward
score``) or log2(1 + reward) (``log``), normalised by sb3's running estimate (``VecNormalize``, rewards only).
With ``--eval-every N`` (env steps) or ``Ns`` (seconds) a learning curve goes to ``OUT/curve.csv`` (see
``experiments.diagnostics.learning_curve``).  Every
``--checkpoint-every`` steps the model is saved under ``OUT/checkpoints/`` (an interrupted run keeps them);
at the end ``OUT/model.zip`` and ``OUT/summary.json``: training time and speed, then, from the oracle,
``--eval-episodes`` games of regret and (unless ``--no-exact``) the exact expected score of the deterministic
policy (% of optimal).  ``--minutes`` bounds the training time as well as ``--timesteps``.

The model plays in the benchmark as ``ppo:OUT/model.zip`` (see :class:`oracle.agent.SB3Policy`).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

from tqdm.auto import tqdm

import env2048  # noqa: F401  (registers the environments)
from env2048.shape import parse_board
from experiments.cli import parse_dataclass, write_json
from experiments.diagnostics.learning_curve import EvalEvery, LearningCurve
from oracle.agent import as_policy


@dataclass
class Args:
    """MaskablePPO on Solved2048-RxC with one-hot observations."""

    board: str = "3x3"
    timesteps: int = 50_000_000  # an upper bound: --minutes stops first on 2 cores
    minutes: float = 10.0  # > 0: also stop after this many minutes of training (curve checkpoints excluded)
    torch_threads: int = 0  # 0: torch's default (all cores)
    n_envs: int = 32  # with the 128x128 net: 3.6x the steps/s of the previous defaults (docs/diagnostics.md)
    seed: int = 0
    learning_rate: float = 3e-4
    n_steps: int = 128  # per env and update
    batch_size: int = 1024
    n_epochs: int = 4
    gamma: float = 0.995
    gae_lambda: float = 0.95
    ent_coef: float = 0.01
    net: str = "128,128"
    obs: str = "onehot"  # onehot or exponent
    reward: str = "score"  # score or log (log2(1 + merge reward))
    vec: str = "native"  # native (one numba kernel for all envs) or dummy (SB3's DummyVecEnv)
    checkpoint_every: int = 250_000
    exact: bool = True  # evaluate the final policy exactly (about 3 minutes on 3x3) besides the regret games
    eval_episodes: int = 1000
    eval_every: str = ""  # "" = no learning curve; N env steps or Ns seconds of training
    eval_method: str = "regret"  # regret (fixed seeded games, with a CI), exact, or auto
    curve_episodes: int = 300  # regret games per curve checkpoint
    out: str = "results/ppo-3x3"


def make_model(args: Args):
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.vec_env import VecNormalize

    from agents.vec_env import Game2048SB3VecEnv

    rows, cols = parse_board(args.board)
    if args.obs not in ("onehot", "exponent") or args.vec not in ("native", "dummy"):
        raise ValueError(f"--obs must be onehot or exponent and --vec native or dummy, got {args.obs!r}, {args.vec!r}")
    if args.vec == "native":
        vec = Game2048SB3VecEnv(args.n_envs, rows, cols, obs_mode=args.obs, reward=args.reward)
        vec.seed(args.seed)
    else:
        if args.reward != "score":
            raise ValueError("--reward log needs --vec native")
        vec = make_vec_env(
            f"Solved2048-{rows}x{cols}",
            n_envs=args.n_envs,
            seed=args.seed,
            env_kwargs={"obs_mode": args.obs, "oracle": False},
        )
    vec = VecNormalize(vec, norm_obs=False, norm_reward=True, gamma=args.gamma)
    policy_kwargs = {"net_arch": [int(x) for x in args.net.split(",")]}
    return MaskablePPO(
        "MlpPolicy",
        vec,
        learning_rate=args.learning_rate,
        n_steps=args.n_steps,
        batch_size=args.batch_size,
        n_epochs=args.n_epochs,
        gamma=args.gamma,
        gae_lambda=args.gae_lambda,
        ent_coef=args.ent_coef,
        policy_kwargs=policy_kwargs,
        seed=args.seed,
        device="cpu",
        verbose=0,
    )


def train(args: Args) -> dict:
    """Train, save checkpoints and the final model, evaluate with the oracle; returns the summary."""
    from stable_baselines3.common.callbacks import BaseCallback

    from oracle import Oracle

    if args.minutes < 0 or args.torch_threads < 0:
        raise ValueError(f"--minutes and --torch-threads must be >= 0, got {args.minutes}, {args.torch_threads}")
    if args.torch_threads:
        import torch

        torch.set_num_threads(args.torch_threads)
    out = Path(args.out)
    (out / "checkpoints").mkdir(parents=True, exist_ok=True)
    model = make_model(args)
    oracle = Oracle.for_board(args.board)
    curve = None
    if args.eval_every:
        every = EvalEvery.parse(args.eval_every)
        curve = LearningCurve(out / "curve.csv", oracle, every, args.eval_method, args.curve_episodes, run=out.name)

    class Progress(BaseCallback):
        """tqdm over environment steps, mean score of finished games, periodic checkpoints."""

        def __init__(self):
            super().__init__()
            self.bar = tqdm(total=args.timesteps, unit="step", desc=f"MaskablePPO {args.board}")
            self.scores: list[float] = []
            self.next_checkpoint = args.checkpoint_every
            self.evaluating = 0.0  # seconds spent on curve checkpoints, not training

        def trained_seconds(self) -> float:
            return time.perf_counter() - start - self.evaluating

        def _on_training_start(self) -> None:
            if curve is not None:
                self.checkpoint()

        def checkpoint(self) -> None:
            t = time.perf_counter()
            row = curve.record(
                as_policy(self.model), self.num_timesteps, self.trained_seconds(), games=len(self.scores)
            )
            self.evaluating += time.perf_counter() - t
            share, ci = row["percent_of_optimal"], row["percent_ci"]
            self.bar.write(
                f"checkpoint {row['checkpoint']}: {self.num_timesteps:,} steps: {share:.2f} ± {ci:.2f}% "
                f"of V* ({row['method']})"
            )

        def _on_step(self) -> bool:
            self.bar.update(self.training_env.num_envs)
            for info in self.locals["infos"]:
                if "episode" in info:
                    self.scores.append(float(info["episode"]["r"]))
            if self.scores and self.n_calls % 200 == 0:
                recent = self.scores[-200:]
                self.bar.set_postfix(score=f"{sum(recent) / len(recent):.0f}")
            if self.num_timesteps >= self.next_checkpoint:
                self.model.save(out / "checkpoints" / f"step{self.num_timesteps}.zip")
                self.next_checkpoint += args.checkpoint_every
            if curve is not None and curve.due(self.num_timesteps, self.trained_seconds()):
                self.checkpoint()
            return not (args.minutes > 0 and self.trained_seconds() >= 60 * args.minutes)

    progress = Progress()
    start = time.perf_counter()
    try:
        model.learn(total_timesteps=args.timesteps, callback=progress)
    finally:
        progress.bar.close()
        model.save(out / "model.zip")
    seconds = time.perf_counter() - start - progress.evaluating
    if curve is not None and curve.rows[-1]["env_steps"] != model.num_timesteps:
        progress.checkpoint()
    recent = progress.scores[-1000:]
    summary = {
        "args": asdict(args),
        "steps": int(model.num_timesteps),
        "train_seconds": seconds,
        "steps_per_second": model.num_timesteps / seconds,
        "training_games": len(progress.scores),
        "mean_score_last_1000_training_games": sum(recent) / max(len(recent), 1),
        "model": str(out / "model.zip"),
        "curve": str(curve.path) if curve is not None else None,
    }
    agent = as_policy(model)
    report = oracle.regret(agent, episodes=args.eval_episodes, seed=args.seed)
    summary["regret"] = {k: v for k, v in report.to_dict().items() if not isinstance(v, list)}
    exact_text = ""
    if args.exact:
        exact = oracle.evaluate(agent)
        summary["exact"] = {k: v for k, v in exact.to_dict().items() if k not in ("ages", "visits", "gap_by_age")}
        exact_text = (
            f"exact V^pi = {exact.value:.2f} = {exact.percent_of_optimal:.2f}% of V* {exact.optimal_value:.2f}; "
        )
    write_json(out / "summary.json", summary)
    print(
        f"{model.num_timesteps:,} steps in {seconds:.0f} s ({summary['steps_per_second']:,.0f} steps/s); "
        f"{exact_text}{report.summary()}\nwrote {out / 'model.zip'} and {out / 'summary.json'}"
    )
    return summary


def main(argv=None) -> None:
    train(parse_dataclass(Args, argv, description=__doc__))


if __name__ == "__main__":
    main()
