"""Trainers that try to game the suite, each the way the next person would try it, for tests/test_protocol.py
(``--trainer red_team:NAME``: this directory is on ``sys.path`` in the tests).  Each trainer that gets past a rule
writes what it saw into :data:`SEEN` (the tests run the command line in their own process and read it)."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import numpy as np
from stand_ins import FirstLegalMove

import env2048  # noqa: F401  (registers the ids)

#: What the trainers saw, by trainer name.
SEEN: dict[str, object] = {}


def returns_optimal(run, budget_steps, seed):
    """Learns nothing and names the optimal agent."""
    return "optimal"


def returns_greedy(run, budget_steps, seed):
    """Learns nothing and returns the fixed greedy agent."""
    from agents import GreedyAgent

    return GreedyAgent()


def asks_the_run_for_its_oracle(run, budget_steps, seed):
    """``run.oracle()``, as ``TrainingRun`` forwarded every attribute to the task."""
    return run.oracle()


def asks_the_run_for_its_task(run, budget_steps, seed):
    """The task behind the run, then its oracle."""
    return run.task.oracle()


def opens_the_table_by_board(run, budget_steps, seed):
    """``Oracle.for_board``, the documented way to an oracle."""
    from oracle import Oracle

    return Oracle.for_board(run.board)


def opens_the_cached_table(run, budget_steps, seed):
    """:mod:`solver.provision`'s cache of tables."""
    from solver.provision import cached_table

    return cached_table(run.spec(), progress=False)


def opens_the_suites_table(run, budget_steps, seed):
    """The suite's own task, found by name, and its table."""
    from experiments.suite.tasks import get_task

    return get_task(run.name).oracle(progress=False)


def opens_the_table_file(run, budget_steps, seed):
    """The table's file, opened with the reader every oracle uses."""
    from experiments.suite.tasks import get_task, table_path
    from solver.format import Table

    return Table(table_path(get_task(run.name)))


def makes_a_v1_env_with_its_oracle(run, budget_steps, seed):
    """A v1 id, whose env carries the oracle's Q-values in ``info``."""
    return gym.make(run.env_id.replace("-v2", "-v1"))


def plays_uncounted_envs(run, budget_steps, seed):
    """Plays games on envs it makes itself: ``gym.make("Game2048-v0")``, the native vector env and the task's
    own id, one step past the budget in all."""
    from env2048 import Game2048VectorEnv

    rows, cols = run.shape
    env = gym.make("Game2048-v0", rows=rows, cols=cols)
    vec = Game2048VectorEnv(8, rows, cols)
    task_env = gym.make(run.env_id, oracle=False)
    steps = 0
    for e in (env, task_env):
        e.reset(seed=seed)
    vec.reset(seed=seed)
    while True:  # stops at BudgetExceeded
        for e in (env, task_env):
            _, _, done, _, _ = e.step(int(e.unwrapped.action_masks().argmax()))
            steps += 1
            if done:
                e.reset()
        vec.step(np.argmax(vec.action_masks(), axis=1))
        steps += 8
        SEEN["plays_uncounted_envs"] = steps


def steps_in_a_child_process(run, budget_steps, seed):
    """Plays the game in a child process, whose steps the parent's meter cannot see."""
    code = (
        "import gymnasium as gym, env2048\n"
        "env = gym.make('Game2048-v0', rows=2, cols=3)\n"
        "env.reset(seed=0)\n"
        "env.step(0)\n"
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    raise RuntimeError(f"the child exited with {child.returncode}: {child.stderr.strip().splitlines()[-1]}")


def env_only_plays_by_the_rules(run, budget_steps, seed):
    """An env-only trainer that trains an n-tuple network by self-play, outside any env."""
    from agents.ntuple import NTupleAgent

    rows, cols = run.shape
    agent = NTupleAgent(rows, cols, seed=seed)
    agent.train(100)
    return agent


def reads_its_checkpoints(run, budget_steps, seed, monitor=None):
    """Hands two candidate policies as checkpoints and tries to keep the better by what comes back."""
    env = run.make_env()
    env.reset(seed=seed)
    seen = {"monitor": monitor, "returned": []}
    for _ in range(budget_steps):
        seen["returned"].append(run.checkpoint(FirstLegalMove()))
        _, _, done, _, _ = env.step(int(env.unwrapped.action_masks().argmax()))
        if done:
            env.reset()
    seen["attributes"] = sorted(a for a in dir(run) if not a.startswith("_"))
    SEEN["reads_its_checkpoints"] = seen
    return FirstLegalMove()


reads_its_checkpoints.checkpoints = True


class OracleAtActTime:
    """A policy that opens the oracle when it is asked for a move."""

    deterministic = True

    def act_batch(self, boards, masks):
        from oracle import Oracle

        oracle = Oracle.for_board("2x3")
        return oracle.best_actions(np.asarray(boards, np.uint8))


def returns_a_policy_that_opens_the_oracle(run, budget_steps, seed):
    env = run.make_env()
    env.reset(seed=seed)
    env.step(0)
    return OracleAtActTime()


def trains_on_the_evaluation_seeds(run, budget_steps, seed):
    """Plays the games of the seeds that Monte-Carlo evaluation used to play (``seed * 1_000_003 + i``), one
    move each, so as to learn those very games."""
    env = run.make_env()
    for i in range(100):
        env.reset(seed=seed * 1_000_003 + i)
        env.step(int(env.unwrapped.action_masks().argmax()))
    return FirstLegalMove()


def honest_env_only(run, budget_steps, seed):
    """Learns nothing much, honestly: plays the run's env until its budget is spent."""
    env = run.make_env()
    env.reset(seed=seed)
    while run.budget.remaining > 0:
        _, _, done, _, _ = env.step(int(env.unwrapped.action_masks().argmax()))
        if done:
            env.reset()
    return FirstLegalMove()


def honest_known_rules(run, budget_steps, seed):
    """An n-tuple network trained by self-play through the run's counted simulator."""
    from agents.ntuple import NTupleAgent

    rows, cols = run.shape
    agent = NTupleAgent(rows, cols, seed=seed)
    simulator = run.simulator()
    while simulator.remaining > 0:
        simulator.train_ntuple(agent, 20)
    return agent


honest_known_rules.track = "known-rules"


def plays_the_jax_game(run, budget_steps, seed):
    """Simulates the game in JAX, whose jitted moves no Python counter sees."""
    import jax

    from env2048 import jax as g2048

    env = g2048.make(*run.shape)
    env.step(env.init(jax.random.key(seed)), 0, jax.random.key(seed + 1))
    return FirstLegalMove()


def jits_the_jax_moves(run, budget_steps, seed):
    """The JAX game's move function on its own, jitted inside the trainer."""
    import jax
    import jax.numpy as jnp

    from env2048.jax import afterstate

    jax.jit(afterstate)(jnp.zeros(run.shape, jnp.int32), 0)
    return FirstLegalMove()


def vmaps_the_counted_games(run, budget_steps, seed):
    """The run's counted JAX games, vmapped over many keys: each call would step several batches and charge one."""
    import jax
    import jax.numpy as jnp

    games = run.make_jax_games(4)
    state = games.reset(jax.random.key(seed))
    keys = jax.random.split(jax.random.key(seed + 1), 8)
    jax.vmap(games.step, in_axes=(None, None, 0))(state, jnp.zeros(4, jnp.int32), keys)
    return FirstLegalMove()


def looks_ahead_inside_its_rollout(run, budget_steps, seed):
    """The run's counted JAX games, whose rollout charges its own steps, with a policy that simulates a step of
    the bare game for each move it chooses (a lookahead no meter would see)."""
    import jax
    import jax.numpy as jnp

    games = run.make_jax_games(4)

    def act(carry, state, key):
        ahead = jax.vmap(games.env.step)(state, jnp.zeros(4, jnp.int32), jax.random.split(key, 4))
        return jnp.argmax(ahead.rewards[:, 0] * 0).astype(jnp.int32) + jnp.zeros(4, jnp.int32), None

    jax.jit(lambda s, k: games.rollout(s, k, act, None, 3))(games.reset(jax.random.key(seed)), jax.random.key(1))
    return FirstLegalMove()
