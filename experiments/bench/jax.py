"""The JAX path side by side with what researchers use today: env steps/s against pgx, jumanji and our numba
vector env, and PPO training steps/s against SB3's MaskablePPO, in one run, as a table.

    python -m experiments.bench.jax [--quick] [--skip sb3,pgx,jumanji,small]

- **Env steps/s**: 4x4, random legal moves, games that end restarted in the same step, ``vmap`` of 1,024 and
  65,536 games, 100 steps per jitted call (compile excluded; the best of 3 calls).  Ours through
  :class:`env2048.jax.counted.CountedGames` (its rollout, one host charge per call); pgx ``2048`` with
  ``pgx.experimental.auto_reset``; jumanji ``Game2048-v1`` with its ``VmapAutoResetWrapper``; numba:
  :class:`env2048.vector.Game2048VectorEnv` (uniformly random legal moves drawn in NumPy).  pgx and jumanji are
  installed for the benchmark only (``pip install pgx jumanji``); a missing one is reported, not fatal.
- **PPO steps/s**: 3x3, MaskablePPO's tuned 3x3 settings (``hyperparams/jax_ppo/3x3.toml``: 128x128 tanh MLPs,
  32 envs x 128 steps, 10 epochs of minibatches of 1,024).  SB3 trains ``--sb3-steps`` (its first rollout's
  set-up included), JAX PPO ``--jax-steps`` after one compiled update; the GFLOP/s of each from the MLPs'
  multiply-adds (forward on every rollout step; forward and backward, 3x the forward, on every epoch's sample).
  The small network (``--small-arch``, default 32x32) is timed the same way.
- **Exact labels**: Q* of 65,536 3x3 boards of random games (``--oracle-boards``) by the host
  :class:`oracle.Oracle` and by :class:`oracle.device.DeviceOracle` (jitted, compile excluded, the best of 3
  calls), boards/s; the suite's 3x3 table is built on first use (about a minute; ``--skip oracle`` leaves it out).
- ``--peak``: the machine's peak GFLOP/s to print beside (default: measured, float32 matmul of 2,048 squared).
"""

from __future__ import annotations

import argparse
import time

#: 4x4 batch sizes of the env table.
BATCHES = (1024, 65536)
#: Steps per jitted call of the env benchmarks.
STEPS = 100


def _best(f, repeats: int = 3) -> float:
    """The least of ``repeats`` wall times of ``f()`` (after one warm-up call that compiles)."""
    f()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times)


def ours_env(n: int) -> float:
    import jax
    import jax.numpy as jnp

    from env2048 import jax as g2048
    from env2048.jax.counted import CountedGames

    games = CountedGames(g2048.make(4, 4), n)

    def act(_carry, state, key):
        return jax.random.categorical(key, jnp.where(state.legal_action_mask, 0.0, -1e9)).astype(jnp.int32), None

    roll = jax.jit(lambda s, k: games.rollout(s, k, act, None, STEPS)[0])
    state = [games.reset(jax.random.key(0))]

    def run():
        state[0] = jax.block_until_ready(roll(state[0], jax.random.key(1)))

    return n * STEPS / _best(run)


def pgx_env(n: int) -> float:
    import jax
    import jax.numpy as jnp
    import pgx
    from pgx.experimental import auto_reset

    env = pgx.make("2048")
    step = jax.vmap(auto_reset(env.step, env.init))

    def body(carry, _):
        state, key = carry
        key, a, s = jax.random.split(key, 3)
        logits = jnp.where(state.legal_action_mask, 0.0, -1e9)
        action = jax.random.categorical(a, logits)
        return (step(state, action, jax.random.split(s, n)), key), None

    roll = jax.jit(lambda s, k: jax.lax.scan(body, (s, k), None, length=STEPS)[0][0])
    state = [jax.vmap(env.init)(jax.random.split(jax.random.key(0), n))]

    def run():
        state[0] = jax.block_until_ready(roll(state[0], jax.random.key(1)))

    return n * STEPS / _best(run)


def jumanji_env(n: int) -> float:
    import jax
    import jax.numpy as jnp
    import jumanji
    from jumanji.wrappers import VmapAutoResetWrapper

    env = VmapAutoResetWrapper(jumanji.make("Game2048-v1"))

    def body(carry, _):
        state, timestep, key = carry
        key, a = jax.random.split(key)
        logits = jnp.where(timestep.observation.action_mask, 0.0, -1e9)
        state, timestep = env.step(state, jax.random.categorical(a, logits))
        return (state, timestep, key), None

    roll = jax.jit(lambda s, t, k: jax.lax.scan(body, (s, t, k), None, length=STEPS)[0][:2])
    carry = [env.reset(jax.random.split(jax.random.key(0), n))]

    def run():
        carry[0] = jax.block_until_ready(roll(*carry[0], jax.random.key(1)))

    return n * STEPS / _best(run)


def numba_env(n: int) -> float:
    from agents.simple import RandomAgent
    from env2048.vector import Game2048VectorEnv

    env = Game2048VectorEnv(n, 4, 4)
    env.reset(seed=0)
    agent = RandomAgent(0)
    steps = max(1, 2_000_000 // n)

    def run():
        for _ in range(steps):
            masks = env.action_masks()
            env.step(agent.act_batch(None, masks))

    return n * steps / _best(run, 1)


def mlp_flops(obs_dim: int, arch, outputs=(4, 1)) -> int:
    """Multiply-adds x 2 of one forward pass of the policy and value MLPs on one observation."""
    total = 0
    for out in outputs:
        dims = (obs_dim, *arch, out)
        total += sum(2 * a * b for a, b in zip(dims[:-1], dims[1:], strict=True))
    return total


def ppo_flops_per_step(obs_dim: int, arch, n_epochs: int) -> int:
    """FLOPs per environment step of PPO: one forward on the rollout step, then ``n_epochs`` passes of forward and
    backward (about 3x the forward) over it."""
    forward = mlp_flops(obs_dim, arch)
    return forward + n_epochs * 3 * forward


def sb3_ppo(hp: dict, steps: int) -> float:
    """Steps/s of MaskablePPO on task 3x3 as the suite's trainer builds it (its vector env, rewards scaled by
    ``VecNormalize``, the model from the same settings), ``steps`` steps from seed 0."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import VecNormalize

    from experiments.suite.envs import make_task_vec_env
    from experiments.suite.trainers import PPO_KEYS, _sb3_model

    vec = VecNormalize(make_task_vec_env("3x3", hp["n_envs"], 0, "score"), norm_obs=False, gamma=hp["gamma"])
    model = _sb3_model(MaskablePPO, {**hp, "policy": "MlpPolicy"}, vec, 0, PPO_KEYS)
    start = time.perf_counter()
    model.learn(total_timesteps=steps)
    return model.num_timesteps / (time.perf_counter() - start)


def jax_ppo(hp: dict, steps: int, arch=None) -> tuple[float, float]:
    """``(steps/s, compile seconds)`` of JAX PPO on 3x3 (the compile: the first update, timed apart)."""
    import jax

    from agents.jax_ppo import PPOConfig, make_update
    from env2048.jax.counted import make_counted

    config = PPOConfig.from_hyperparams({**hp, **({"net_arch": arch} if arch else {})})
    games = make_counted(3, 3, config.n_envs)
    runner0, update = make_update(games, config)
    updates = max(1, steps // config.rollout_steps)
    many = jax.jit(lambda r: jax.lax.scan(lambda r, _: (update(r)[0], None), r, None, length=updates)[0])
    runner = jax.jit(runner0)(jax.random.key(0))
    start = time.perf_counter()
    runner = jax.block_until_ready(many(runner))  # compiles, then runs
    first = time.perf_counter() - start
    start = time.perf_counter()
    jax.block_until_ready(many(runner))
    seconds = time.perf_counter() - start
    return updates * config.rollout_steps / seconds, first - seconds


def peak_gflops() -> float:
    """float32 matmul GFLOP/s of this machine through XLA (2,048 x 2,048, the best of 3)."""
    import jax
    import jax.numpy as jnp

    a = jnp.ones((2048, 2048), jnp.float32)
    f = jax.jit(lambda x: x @ x)
    return 2 * 2048**3 / _best(lambda: jax.block_until_ready(f(a))) / 1e9


def main(argv=None) -> int:
    import jax

    from experiments.suite.trainers import JAX_PPO_KEYS, load_hyperparams

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer steps (a check that it runs, not figures)")
    p.add_argument("--skip", default="", help="comma-separated: sb3, pgx, jumanji, numba, small, oracle")
    p.add_argument("--sb3-steps", type=int, default=200_000)
    p.add_argument("--jax-steps", type=int, default=2_000_000)
    p.add_argument("--small-arch", default="32,32")
    p.add_argument("--peak", type=float, default=None)
    p.add_argument("--oracle-boards", type=int, default=65_536)
    args = p.parse_args(argv)
    skip = set(filter(None, args.skip.split(",")))
    skip = {"ours" if s == "jax" else s for s in skip}
    batches = (256,) if args.quick else BATCHES
    sb3_steps = 8192 if args.quick else args.sb3_steps
    jax_steps = 8192 * 4 if args.quick else args.jax_steps
    device = jax.devices()[0]
    print(f"JAX {jax.__version__} on {device.platform} ({device.device_kind}); steps/s, compile excluded")
    print("\n| 4x4 env, random legal moves | " + " | ".join(f"vmap {n:,}" for n in batches) + " |")
    print("|---|" + "---:|" * len(batches))
    rows = {}
    for name, f in (
        ("ours (JAX)", ours_env),
        ("pgx", pgx_env),
        ("jumanji", jumanji_env),
        ("numba vector env", numba_env),
    ):
        key = name.split()[0]
        if key in skip:
            continue
        try:
            rows[name] = [f(n) for n in batches]
        except ImportError as e:
            print(f"| {name} | not installed ({e.name}) |")
            continue
        print(f"| {name} | " + " | ".join(f"{x / 1e6:.2f} M" for x in rows[name]) + " |")
    for other in ("pgx", "jumanji"):
        if "ours (JAX)" in rows and other in rows:
            ratio = ", ".join(f"{a / b:.2f}x" for a, b in zip(rows["ours (JAX)"], rows[other], strict=True))
            print(f"ours / {other}: {ratio}")

    hp = load_hyperparams("jax_ppo", "3x3", JAX_PPO_KEYS)
    obs_dim = 9 * 11
    peak = args.peak or peak_gflops()
    print(f"\n3x3 PPO, MaskablePPO's tuned settings ({hp['n_envs']} envs x {hp['n_steps']} steps, {hp['n_epochs']} "
          f"epochs, minibatch {hp['batch_size']}); peak {peak:.1f} GFLOP/s (float32 matmul)")  # fmt: skip
    print("\n| PPO, 3x3 | network | steps/s | GFLOP/s | vs SB3 | compile s |")
    print("|---|---|---:|---:|---:|---:|")
    sb3 = None
    if "sb3" not in skip:
        sb3 = sb3_ppo(hp, sb3_steps)
        gf = sb3 * ppo_flops_per_step(obs_dim, hp["net_arch"], hp["n_epochs"]) / 1e9
        print(f"| SB3 MaskablePPO | {hp['net_arch']} | {sb3:,.0f} | {gf:.1f} | 1.00x | |")
    archs = [tuple(hp["net_arch"])]
    if "small" not in skip:
        archs.append(tuple(int(w) for w in args.small_arch.split(",")))
    for arch in archs:
        rate, compile_s = jax_ppo(hp, jax_steps, arch)
        gf = rate * ppo_flops_per_step(obs_dim, arch, hp["n_epochs"]) / 1e9
        vs = f"{rate / sb3:.2f}x" if sb3 else ""
        print(f"| JAX PPO | {list(arch)} | {rate:,.0f} | {gf:.1f} | {vs} | {compile_s:.1f} |")
    if "oracle" not in skip:
        n = 1024 if args.quick else args.oracle_boards
        host, device = oracle_labels(n)
        print(f"\n| Q* of {n:,} 3x3 boards | boards/s |\n|---|---:|")
        print(f"| host Oracle | {host / 1e6:.2f} M |\n| DeviceOracle | {device / 1e6:.2f} M |")
    return 0


def oracle_labels(n: int) -> tuple[float, float]:
    """Boards per second of the host :class:`oracle.Oracle` and of :class:`oracle.device.DeviceOracle` labelling
    ``n`` 3x3 boards of random games with Q*."""
    import jax

    from env2048.conformance import played_boards
    from experiments.suite.tasks import checked_table, get_task
    from oracle import Oracle
    from oracle.device import DeviceOracle

    boards = played_boards(3, 3, n)
    with Oracle.open(checked_table(get_task("3x3"))[0]) as host:
        device = DeviceOracle.from_oracle(host)
        host_rate = n / _best(lambda: host.q_values(boards))
    labelled = jax.numpy.asarray(boards)
    return host_rate, n / _best(lambda: jax.block_until_ready(device.q_values(labelled)))


if __name__ == "__main__":
    raise SystemExit(main())
