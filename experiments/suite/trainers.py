"""Learning algorithms for ``python -m experiments.suite run --trainer``, each ``train(run, budget_steps, seed)
-> policy``.

- ``experiments.suite.trainers:td`` (``known-rules`` track): afterstate TD(0) on the n-tuple network of
  ``agents.ntuple`` (its default tuples and stages for the board), trained on the task's own game, one thread
  (reproducible from the seed): on score tasks for the game's score (the learning rate following
  ``experiments.train.td``'s schedule for the board), on tasks of success (``tile:K``, endgames) for the
  probability of success by ``agents.ntuple_goal.GoalNTupleAgent`` (optimistic start, the default schedule: the
  3x3 one was tuned on the score; on 3x3-512 the success agent reached 0.819 of V* where the score agent reached
  0.53, and on L3-256 0.688 where the score agent, which never sees an endgame, reached 0.0015).  Games are
  played in rounds of :data:`ROUND` through the run's counted simulator, whose kernel stops at the budget's last
  move.
- ``experiments.suite.trainers:td_expectimax`` (``known-rules`` track): ``td``'s network played by expectimax of
  depth 2 on its learned values.
- ``experiments.suite.trainers:maskable_ppo`` (``env-only`` track): sb3-contrib's MaskablePPO (extra ``rl``)
  with the task's hyperparameter file ``experiments/suite/hyperparams/maskable_ppo/TASK.toml`` (one per task,
  as RL Baselines3 Zoo keeps them), one-hot observations, action masks, trained on the run's counted envs for
  the whole rollouts that fit in the budget, on the task's own game and reward.
- ``experiments.suite.trainers:jax_ppo`` (``env-only`` track): PPO in JAX (:mod:`agents.jax_ppo`, extra ``jax``)
  with MaskablePPO's settings (``hyperparams/jax_ppo/TASK.toml``), trained on the run's counted JAX games.
- ``experiments.suite.trainers:dqn`` (``env-only`` track): SB3's DQN or sb3-contrib's QR-DQN with the task's file
  ``hyperparams/dqn/TASK.toml``, one-hot observations, no action masks (an illegal move ends the game).

All are called as ``train(run, budget_steps, seed)`` with a :class:`experiments.suite.training.TrainingRun`; a
bare :class:`~experiments.suite.tasks.Task` gets a run of its own budget.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from agents.ntuple import NTupleAgent, tuple_set
from agents.ntuple_goal import GoalNTupleAgent
from experiments.train.td import alpha_at, parse_schedule

from .budget import StepBudget
from .training import TrainingRun

#: Games per round of TD training.
ROUND = 50


def as_run(task, budget_steps: int, track: str) -> TrainingRun:
    """``task`` if it is a :class:`TrainingRun`, else a run of ``budget_steps`` on ``track``."""
    return task if isinstance(task, TrainingRun) else TrainingRun(task, StepBudget(budget_steps, track))


def td(task, budget_steps: int, seed: int, hyperparams=None) -> NTupleAgent:
    """An n-tuple network trained by TD(0) for ``budget_steps`` moves on the task's game, simulated through the
    run's counted simulator, with the task's file ``hyperparams/td/TASK.toml`` (the learning rate's schedule
    over the budget, the weights' start value) or ``hyperparams`` in its place.  With ``run --curve``, every
    training move goes to ``run.record_moves`` and the network to ``run.checkpoint`` when one is due, before
    each round (neither changes the training)."""
    run = as_run(task, budget_steps, "known-rules")
    simulator = run.simulator()
    hp = task_hyperparams("td", run.name, TD_KEYS, hyperparams)
    rows, cols = run.shape
    tuples = tuple_set("default", rows, cols)
    schedule = parse_schedule(hp["schedule"])
    if run.kind == "score":
        agent = NTupleAgent(rows, cols, tuples=tuples, alpha=schedule[0][1], init=hp["init"], seed=seed)
    else:
        agent = GoalNTupleAgent(run.spec(), tuples=tuples, alpha=schedule[0][1], init=hp["init"], seed=seed)
    moves = 0
    while simulator.remaining > 0:
        run.checkpoint(agent)
        agent.alpha = alpha_at(schedule, moves / budget_steps)
        stats = simulator.train_ntuple(agent, ROUND, threads=1, trace=run.records_curve)
        run.record_moves(stats.boards, stats.actions)
        moves += stats.moves
    agent.train_steps = moves
    return agent


td.track = "known-rules"
td.checkpoints = True


def td_expectimax(task, budget_steps: int, seed: int, hyperparams=None, depth: int = 2):
    """:func:`td`'s network, played by expectimax search of ``depth`` moves on its learned values (search at
    evaluation only: the training is :func:`td`'s, move for move, its checkpoints the network's own).  On a task
    of success the search plays the network's game of success (:class:`agents.expectimax.ExpectimaxAgent` on a
    GoalNTupleAgent)."""
    from agents.expectimax import ExpectimaxAgent

    network = td(task, budget_steps, seed, hyperparams=hyperparams)
    rows, cols = task.shape
    player = ExpectimaxAgent(rows, cols, depth=depth, evaluator=network, p4=task.spec().p4)
    player.train_steps = network.train_steps
    return player


td_expectimax.track = "known-rules"
td_expectimax.checkpoints = True
td_expectimax.hyperparameter_family = "td"


#: Where the trainers' hyperparameter files are: ``HYPERPARAMS / ALGORITHM / f"{task}.toml"``.
HYPERPARAMS = Path(__file__).with_name("hyperparams")
#: The keys a TD file must set.
TD_KEYS = ("schedule", "init")
#: The keys a MaskablePPO file must set (all of them: a file is the whole configuration of its runs).
PPO_KEYS = (
    "policy",
    "net_arch",
    "n_envs",
    "n_steps",
    "batch_size",
    "n_epochs",
    "learning_rate",
    "gamma",
    "gae_lambda",
    "ent_coef",
    "reward",
    "normalize_reward",
)


def read_toml(path: Path) -> dict:
    """The TOML file at ``path`` (``tomllib``, or ``tomli``, the same parser, before Python 3.11)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    with Path(path).open("rb") as f:
        return tomllib.load(f)


def load_hyperparams(algorithm: str, task: str, required: tuple[str, ...] = ()) -> dict:
    """The hyperparameters of ``algorithm`` on ``task`` from its TOML file; a clear error for a missing file or a
    missing or unknown key."""
    path = HYPERPARAMS / algorithm / f"{task}.toml"
    if not path.exists():
        known = sorted(p.stem for p in (HYPERPARAMS / algorithm).glob("*.toml"))
        raise FileNotFoundError(
            f"no hyperparameters for {algorithm} on task {task!r}: {path} is missing "
            f"(files exist for {', '.join(known) or 'no task'})"
        )
    params = read_toml(path)
    if required:
        missing = [k for k in required if k not in params]
        unknown = [k for k in params if k not in required]
        if missing or unknown:
            raise ValueError(
                f"{path}: missing {missing or 'nothing'}, unknown {unknown or 'nothing'} "
                f"(a file sets exactly {', '.join(required)})"
            )
    return params


def with_overrides(params: dict, overrides: dict | None) -> dict:
    """``params`` with ``overrides``' values; a clear error for a key ``params`` does not have."""
    unknown = sorted(set(overrides or {}) - set(params))
    if unknown:
        raise ValueError(f"unknown hyperparameters {unknown}; the file sets {', '.join(params)}")
    return {**params, **(overrides or {})}


def task_hyperparams(algorithm: str, task: str, required: tuple[str, ...], hyperparams: dict | None) -> dict:
    """A trainer's hyperparameters on ``task``: its file ``hyperparams/ALGORITHM/TASK.toml`` with ``hyperparams``'
    values in place of the file's; ``hyperparams`` that set every key stand alone, the file not read (a task
    without a file of its own: a candidate, trained with another task's file)."""
    if hyperparams is not None and set(required) <= set(hyperparams):
        return with_overrides(dict.fromkeys(required), hyperparams)
    return with_overrides(load_hyperparams(algorithm, task, required), hyperparams)


def _learn(model, steps: int, desc: str, callback, progress: bool = True):
    """``model.learn(steps)`` with a progress bar (hidden unless ``progress``), the callback class ``callback``'s
    instance holding it as ``bar``; the env closed after.  Returns the model, with ``train_steps``."""
    with tqdm(total=steps, unit="step", desc=desc, mininterval=10, disable=not progress) as bar:
        hook = callback()
        hook.bar = bar
        model.learn(total_timesteps=steps, callback=hook)
    model.get_env().close()
    model.train_steps = int(model.num_timesteps)
    return model


def _whole_units(task, budget_steps: int, unit: int, what: str) -> int:
    """The steps of the whole ``unit``-step rollouts or collections that fit in the budget (none: an error)."""
    steps = budget_steps // unit * unit
    if steps == 0:
        raise ValueError(f"{task.name}: a budget of {budget_steps} steps holds no {what} of {unit}")
    return steps


#: The keys of a file that are not keywords of the algorithm's constructor (the suite's own, or passed apart).
NOT_CONSTRUCTOR_KEYS = ("algorithm", "policy", "net_arch", "n_envs", "reward", "normalize_reward")


def _sb3_model(algorithm, hp: dict, vec, seed: int, keys: tuple[str, ...]):
    """An SB3 model of class ``algorithm`` on ``vec``: the file's ``policy`` and ``net_arch``, its other ``keys``
    (but :data:`NOT_CONSTRUCTOR_KEYS`) as the constructor's keywords, on the CPU, silent (SB3's default logger
    makes a /tmp/SB3-* folder per run)."""
    from stable_baselines3.common.logger import Logger

    model = algorithm(
        hp["policy"],
        vec,
        **{k: hp[k] for k in keys if k not in NOT_CONSTRUCTOR_KEYS},
        seed=seed,
        device="cpu",
        verbose=0,
        policy_kwargs={"net_arch": list(hp["net_arch"])},
    )
    model.set_logger(Logger(folder=None, output_formats=[]))
    return model


def _training_vec_env(run: TrainingRun, hp: dict, seed: int, shaping: str):
    """The run's counted vector env for an SB3 learner: the file's reward, shaped if asked (before any scaling,
    so that the potential's differences are scaled with the reward), then scaled by ``VecNormalize`` if the file
    says so."""
    from stable_baselines3.common.vec_env import VecNormalize

    from .shaping import SHAPINGS, shaped_vec_env

    if shaping not in SHAPINGS:
        raise ValueError(f"shaping must be one of {', '.join(SHAPINGS)}, got {shaping!r}")
    vec = run.make_vec_env(hp["n_envs"], seed, hp["reward"])
    if shaping == "merge":
        goal = None if run.kind == "score" else run.spec().target_exponent
        vec = shaped_vec_env(vec, hp["gamma"], goal)
    if hp["normalize_reward"]:
        vec = VecNormalize(vec, norm_obs=False, norm_reward=True, gamma=hp["gamma"])
    return vec


def maskable_ppo(task, budget_steps: int, seed: int, shaping: str = "none", hyperparams=None):
    """A MaskablePPO model trained for ``budget_steps`` environment steps on the task's game, with the task's
    hyperparameter file, on the run's counted envs: the whole rollouts of ``n_envs * n_steps`` steps that fit in
    the budget (``train_steps``).  With ``run --curve``, each rollout's moves go to ``run.record_moves`` and the
    model to ``run.checkpoint`` as the steps pass the checkpoints (the runner scores the policy acting
    deterministically, so the training's random streams are untouched).  ``shaping="merge"``: the rewards shaped
    by the merge score's potential (:mod:`experiments.suite.shaping`, with the file's gamma), as
    ``maskable_ppo_shaped`` declares.  ``hyperparams``: values that replace the file's (a tuning trial's), each a
    key of the file."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.callbacks import BaseCallback

    run = as_run(task, budget_steps, "env-only")
    hp = task_hyperparams("maskable_ppo", run.name, PPO_KEYS, hyperparams)
    steps = _whole_units(run, budget_steps, hp["n_envs"] * hp["n_steps"], "rollout")
    model = _sb3_model(MaskablePPO, hp, _training_vec_env(run, hp, seed, shaping), seed, PPO_KEYS)

    class Bar(BaseCallback):
        def _on_training_start(self) -> None:
            run.checkpoint(self.model)

        def _on_step(self) -> bool:
            self.bar.update(self.training_env.num_envs)
            run.checkpoint(self.model)
            return True

        def _on_rollout_end(self) -> None:
            if run.records_curve:
                buffer = self.model.rollout_buffer  # one-hot observations (steps, envs, planes, rows, cols)
                planes = buffer.observations.reshape(-1, *buffer.observations.shape[2:])
                run.record_moves(planes.argmax(axis=1).astype(np.uint8), buffer.actions.reshape(-1))

    return _learn(model, steps, f"MaskablePPO {run.name} seed {seed}", Bar, run.progress)


maskable_ppo.track = "env-only"
maskable_ppo.checkpoints = True


def maskable_ppo_shaped(task, budget_steps: int, seed: int, hyperparams=None):
    """:func:`maskable_ppo` with ``shaping="merge"``."""
    return maskable_ppo(task, budget_steps, seed, shaping="merge", hyperparams=hyperparams)


maskable_ppo_shaped.track = "env-only"
maskable_ppo_shaped.checkpoints = True


#: The keys a JAX PPO file must set: MaskablePPO's but ``policy`` (the network is always two tanh MLPs).
JAX_PPO_KEYS = tuple(k for k in PPO_KEYS if k != "policy")


def jax_ppo(task, budget_steps: int, seed: int, hyperparams=None, masks: bool = True):
    """PPO in JAX (:mod:`agents.jax_ppo`, extra ``jax``) with the task's file ``hyperparams/jax_ppo/TASK.toml``
    (MaskablePPO's settings: the same network, rollout, epochs and minibatches), on the run's counted JAX games
    (``run.make_jax_games``: every rollout charged to the budget before it runs), for the whole rollouts that fit
    in the budget, on the task's own game and reward.  With ``run --curve``, each rollout's moves go to
    ``run.record_moves`` and the policy to ``run.checkpoint`` when one is due.  Returns a
    :class:`agents.jax_ppo.JaxPPOPolicy` (deterministic: the network's most probable legal move)."""
    from agents.jax_ppo import JaxPPOPolicy, PPOConfig, train

    run = as_run(task, budget_steps, "env-only")
    hp = task_hyperparams("jax_ppo", run.name, JAX_PPO_KEYS, hyperparams)
    reward = "score" if run.kind == "score" else "goal"
    if hp["reward"] != reward:
        raise ValueError(
            f"jax_ppo/{run.name}.toml: reward {hp['reward']!r}, but the JAX game pays the task's own reward, "
            f"{reward!r}, on this task"
        )
    config = PPOConfig.from_hyperparams(hp | {"masks": masks})
    steps = _whole_units(run, budget_steps, config.rollout_steps, "rollout")
    games = run.make_jax_games(config.n_envs)

    def between(runner, _steps_done):
        if run.checkpoint_due():
            run.checkpoint(JaxPPOPolicy.from_runner(runner, games.env, masks=masks))

    record = run.record_moves if run.records_curve else None
    return train(games, config, steps, seed, between=between, record=record, progress=run.progress)


jax_ppo.track = "env-only"
jax_ppo.checkpoints = True


def jax_ppo_unmasked(task, budget_steps: int, seed: int, hyperparams=None):
    """:func:`jax_ppo` without the legal moves: the policy may choose an illegal move, which ends the game, as
    DQN's does; the same files, so that masked and unmasked runs differ in the masks alone."""
    return jax_ppo(task, budget_steps, seed, hyperparams, masks=False)


jax_ppo_unmasked.track = "env-only"
jax_ppo_unmasked.checkpoints = True


#: The keys a DQN or QR-DQN file must set.
DQN_KEYS = (
    "algorithm",
    "policy",
    "net_arch",
    "n_envs",
    "learning_rate",
    "buffer_size",
    "learning_starts",
    "batch_size",
    "gamma",
    "train_freq",
    "gradient_steps",
    "target_update_interval",
    "exploration_fraction",
    "exploration_final_eps",
    "reward",
    "normalize_reward",
)


def dqn(task, budget_steps: int, seed: int, shaping: str = "none", hyperparams=None):
    """A value-based learner, SB3's DQN or sb3-contrib's QR-DQN (the file's ``algorithm``), trained for the whole
    collections of ``n_envs * train_freq`` steps that fit in ``budget_steps`` on the run's counted envs (one-hot
    observations, the task's own game).  It has no action masks: an illegal move ends the game with reward 0, the
    v2 rule, so it learns to avoid them as it learns any other losing move; it is scored by the same rule.
    ``shaping`` and ``hyperparams`` as for :func:`maskable_ppo`."""
    from stable_baselines3.common.callbacks import BaseCallback

    from agents.sb3 import algorithm_class

    run = as_run(task, budget_steps, "env-only")
    hp = task_hyperparams("dqn", task.name, DQN_KEYS, hyperparams)
    if hp["algorithm"] not in ("DQN", "QRDQN"):
        raise ValueError(f"dqn/{task.name}.toml: algorithm must be 'DQN' or 'QRDQN', got {hp['algorithm']!r}")
    algorithm = algorithm_class(hp["algorithm"])
    steps = _whole_units(task, budget_steps, hp["n_envs"] * hp["train_freq"], "collection")
    model = _sb3_model(algorithm, hp, _training_vec_env(run, hp, seed, shaping), seed, DQN_KEYS)

    class Bar(BaseCallback):
        def _on_step(self) -> bool:
            self.bar.update(self.training_env.num_envs)
            return True

    return _learn(model, steps, f"{hp['algorithm']} {task.name} seed {seed}", Bar, run.progress)


dqn.track = "env-only"


def dqn_shaped(task, budget_steps: int, seed: int, hyperparams=None):
    """:func:`dqn` with ``shaping="merge"``."""
    return dqn(task, budget_steps, seed, shaping="merge", hyperparams=hyperparams)


dqn_shaped.track = "env-only"
