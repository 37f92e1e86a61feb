"""PPO in JAX (extra ``jax``), PureJaxRL-style: vmapped games, each update (a rollout of ``n_envs * n_steps``
steps, then ``n_epochs`` passes of minibatch Adam) one jitted function, and runs of updates compiled as one
``lax.scan``.  It learns what sb3-contrib's MaskablePPO learns with the same settings: separate policy and value
MLPs with tanh units (orthogonal init, as SB3's ``MlpPolicy``), the illegal moves masked out of the policy,
clipped surrogate, advantages normalized per minibatch, gradients clipped to a global norm of 0.5, Adam with
eps 1e-5, and optionally the rewards scaled as SB3's ``VecNormalize(norm_reward=True)`` scales them.

Train with :func:`train` on a :class:`env2048.jax.counted.CountedGames` (a suite run's ``make_jax_games``; every
step charged to the run's budget, one charge per rollout).  The result, :class:`JaxPPOPolicy`, plays the policy
network's most probable legal move on the host, in NumPy (deterministic, cheap to evaluate: the oracle scores it
exactly over every reachable state).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import NamedTuple

import numpy as np

from .base import Agent

#: SB3's PPO defaults that the suite's files do not set (the same in MaskablePPO).
CLIP_RANGE, VF_COEF, MAX_GRAD_NORM, ADAM_EPS = 0.2, 0.5, 0.5, 1e-5
#: VecNormalize's defaults: the scaled reward is clipped to +-10; eps under the square root.
REWARD_CLIP, REWARD_EPS = 10.0, 1e-8


@dataclass(frozen=True)
class PPOConfig:
    """PPO's settings, named as in SB3 (and in the suite's hyperparameter files)."""

    net_arch: tuple[int, ...] = (128, 128)
    n_envs: int = 32
    n_steps: int = 128
    batch_size: int = 1024
    n_epochs: int = 4
    learning_rate: float = 3e-4
    gamma: float = 0.995
    gae_lambda: float = 0.95
    ent_coef: float = 0.01
    normalize_reward: bool = False
    clip_range: float = CLIP_RANGE
    vf_coef: float = VF_COEF
    max_grad_norm: float = MAX_GRAD_NORM
    #: Whether the policy sees the legal moves (illegal ones masked out, as MaskablePPO); without, it may choose an
    #: illegal move, which ends the game (the information SB3's DQN has).
    masks: bool = True

    def __post_init__(self):
        if self.rollout_steps % self.batch_size:
            raise ValueError(
                f"batch_size {self.batch_size} must divide a rollout's n_envs * n_steps = {self.rollout_steps} steps "
                "(every minibatch the same size, so that an update compiles once)"
            )
        if not self.net_arch or min(self.net_arch) < 1:
            raise ValueError(f"net_arch lists one or more layer widths >= 1, got {self.net_arch!r}")

    @property
    def rollout_steps(self) -> int:
        return self.n_envs * self.n_steps

    @classmethod
    def from_hyperparams(cls, hp: dict) -> PPOConfig:
        """The settings of a suite hyperparameter file (the keys of ``PPO_KEYS``; ``policy`` and ``reward`` are
        the caller's)."""
        names = {f.name for f in fields(cls)}
        kept = {k: v for k, v in hp.items() if k in names}
        kept["net_arch"] = tuple(int(w) for w in hp["net_arch"])
        return cls(**kept)


# -- the network ----------------------------------------------------------------------------------------------------


def init_params(key, obs_dim: int, net_arch: tuple[int, ...]) -> dict:
    """``{"pi": [(W, b), ...], "vf": [...]}``: two MLPs ``obs_dim -> net_arch -> 4`` and ``-> 1``, float32,
    orthogonal weights (gain sqrt 2 inside, 0.01 on the policy's output, 1 on the value's), zero biases."""
    import jax
    import jax.numpy as jnp

    def mlp(key, out: int, out_gain: float):
        dims = (obs_dim, *net_arch, out)
        keys = jax.random.split(key, len(dims) - 1)
        layers = []
        for i, (k, n_in, n_out) in enumerate(zip(keys, dims[:-1], dims[1:], strict=True)):
            gain = out_gain if i == len(dims) - 2 else math.sqrt(2.0)
            w = jax.nn.initializers.orthogonal(gain)(k, (n_in, n_out), jnp.float32)
            layers.append((w, jnp.zeros(n_out, jnp.float32)))
        return layers

    pi_key, vf_key = jax.random.split(key)
    return {"pi": mlp(pi_key, 4, 0.01), "vf": mlp(vf_key, 1, 1.0)}


def _mlp(layers, x, xp):
    for w, b in layers[:-1]:
        x = xp.tanh(x @ w + b)
    w, b = layers[-1]
    return x @ w + b


def masked_logits(params, obs, mask, xp):
    """``float32 (n, 4)``: the policy's logits on ``obs`` (n, obs_dim), an illegal move's set to -1e8."""
    return xp.where(mask, _mlp(params["pi"], obs, xp), -1e8)


def value(params, obs, xp):
    return _mlp(params["vf"], obs, xp)[..., 0]


# -- training -------------------------------------------------------------------------------------------------------


class Runner(NamedTuple):
    """What one update hands the next: the network, Adam's state, the games, the reward scaler's running return
    and statistics (``ret`` float32 (n_envs,), ``mean``, ``var``, ``count``), and the PRNG key."""

    params: dict
    opt_state: object
    games: object
    ret: object
    ret_mean: object
    ret_var: object
    ret_count: object
    key: object


def _observe(state):
    return state.observation.reshape(state.observation.shape[0], -1).astype("float32")


def scale_rewards(stats, rewards, dones, gamma: float):
    """SB3's ``VecNormalize(norm_reward=True)`` scaling, step by step.  ``stats``: ``(ret float32 (n,), mean,
    var, count)``, each env's running discounted return and the running mean, variance and count of every
    return seen; ``rewards``, ``dones``: ``(T, n)``.  Each step adds the returns of its n envs to the statistics,
    divides the rewards by the square root of the variance (plus 1e-8), clips them to +-10, and zeroes the return
    of a game that ended.  Returns ``(stats, scaled float32 (T, n))``."""
    import jax
    import jax.numpy as jnp

    def one(c, step):
        ret, mean, var, count = c
        reward, done = step
        ret = ret * gamma + reward
        b_mean, b_var, b_count = ret.mean(), ret.var(), ret.shape[0]
        delta, total = b_mean - mean, count + b_count
        mean = mean + delta * b_count / total
        var = (var * count + b_var * b_count + delta**2 * count * b_count / total) / total
        scaled = jnp.clip(reward / jnp.sqrt(var + REWARD_EPS), -REWARD_CLIP, REWARD_CLIP)
        return (jnp.where(done, 0.0, ret), mean, var, total), scaled

    return jax.lax.scan(one, stats, (rewards, dones))


def advantages(values, last_value, rewards, dones, gamma: float, lam: float):
    """Generalized advantage estimates and returns (``float32 (T, n)`` each) of a rollout: ``values``,
    ``rewards``, ``dones`` ``(T, n)`` per step, ``last_value`` ``(n,)`` the value of the state after the last
    step.  A step that ended its game bootstraps from nothing (a 2048 game is never cut short)."""
    import jax
    import jax.numpy as jnp

    def one(c, step):
        adv, next_value = c
        reward, done, v = step
        live = 1.0 - done.astype(jnp.float32)
        delta = reward + gamma * next_value * live - v
        adv = delta + gamma * lam * live * adv
        return (adv, v), adv

    _, adv = jax.lax.scan(one, (jnp.zeros_like(last_value), last_value), (rewards, dones, values), reverse=True)
    return adv, adv + values


def make_update(games, config: PPOConfig):
    """``(runner0(key) -> Runner, update(runner) -> (runner, (boards, actions)))``: the first state and one PPO
    update (a counted rollout of ``config.n_steps`` on every game, then the epochs), pure and jittable; ``boards``
    ``int32 (n_steps, n_envs, rows, cols)`` and ``actions`` the moves made on them."""
    import jax
    import jax.numpy as jnp
    import optax

    if games.num_envs != config.n_envs:
        raise ValueError(f"the games batch holds {games.num_envs} games; the settings say n_envs {config.n_envs}")
    env = games.env
    obs_dim = env.rows * env.cols * env.channels
    optimizer = optax.chain(
        optax.clip_by_global_norm(config.max_grad_norm), optax.adam(config.learning_rate, eps=ADAM_EPS)
    )
    n_minibatches = config.rollout_steps // config.batch_size

    def runner0(key) -> Runner:
        net_key, game_key, key = jax.random.split(key, 3)
        params = init_params(net_key, obs_dim, config.net_arch)
        zeros = jnp.zeros(config.n_envs, jnp.float32)
        return Runner(
            params, optimizer.init(params), games.reset(game_key), zeros, jnp.float32(0), jnp.float32(1),
            jnp.float32(1e-4), key,
        )  # fmt: skip

    def act(params, state, key):
        obs = _observe(state)
        mask = state.legal_action_mask if config.masks else jnp.ones_like(state.legal_action_mask)
        logits = masked_logits(params, obs, mask, jnp)
        action = jax.random.categorical(key, logits).astype(jnp.int32)
        logp = jax.nn.log_softmax(logits)[jnp.arange(action.shape[0]), action]
        return action, (obs, mask, logp, value(params, obs, jnp))

    def loss(params, batch):
        obs, mask, action, old_logp, adv, ret = batch
        logits = masked_logits(params, obs, mask, jnp)
        logp_all = jax.nn.log_softmax(logits)
        logp = logp_all[jnp.arange(action.shape[0]), action]
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        ratio = jnp.exp(logp - old_logp)
        clipped = jnp.clip(ratio, 1.0 - config.clip_range, 1.0 + config.clip_range)
        policy_loss = -jnp.minimum(ratio * adv, clipped * adv).mean()
        value_loss = ((ret - value(params, obs, jnp)) ** 2).mean()
        entropy = -(jnp.exp(logp_all) * jnp.where(mask, logp_all, 0.0)).sum(axis=-1).mean()
        return policy_loss - config.ent_coef * entropy + config.vf_coef * value_loss

    def update(r: Runner):
        key, roll_key, perm_key = jax.random.split(r.key, 3)
        games_state, _, (before, actions, extra, rewards, dones) = games.rollout(
            r.games, roll_key, act, r.params, config.n_steps
        )
        obs, masks, logp, values = extra
        stats = (r.ret, r.ret_mean, r.ret_var, r.ret_count)
        if config.normalize_reward:
            stats, rewards = scale_rewards(stats, rewards, dones, config.gamma)
        last_value = value(r.params, _observe(games_state), jnp)
        adv, returns = advantages(values, last_value, rewards, dones, config.gamma, config.gae_lambda)
        flat = jax.tree.map(
            lambda x: x.reshape((config.rollout_steps, *x.shape[2:])), (obs, masks, actions, logp, adv, returns)
        )

        def epoch(carry, key):
            params, opt_state = carry
            order = jax.random.permutation(key, config.rollout_steps).reshape(n_minibatches, config.batch_size)

            def minibatch(carry, idx):
                params, opt_state = carry
                grads = jax.grad(loss)(params, jax.tree.map(lambda x: x[idx], flat))
                moves, opt_state = optimizer.update(grads, opt_state, params)
                return (optax.apply_updates(params, moves), opt_state), None

            return jax.lax.scan(minibatch, (params, opt_state), order)[0], None

        (params, opt_state), _ = jax.lax.scan(
            epoch, (r.params, r.opt_state), jax.random.split(perm_key, config.n_epochs)
        )
        return Runner(params, opt_state, games_state, *stats, key), (before.board, actions)

    return runner0, update


def train(
    games,
    config: PPOConfig,
    steps: int,
    seed: int,
    between: Callable[[Runner, int], None] | None = None,
    every: int | None = None,
    record: Callable[[np.ndarray, np.ndarray], None] | None = None,
    progress: bool = False,
) -> JaxPPOPolicy:
    """PPO on ``games`` (a :class:`env2048.jax.counted.CountedGames` of ``config.n_envs`` games) for the whole
    updates that fit in ``steps`` environment steps, from ``seed``.  Runs of updates are compiled as one scan;
    ``between(runner, steps_done)`` is called before the first update and after every ``every`` updates (default:
    about 1% of the training), and ``record(boards, actions)`` (if given) after every update with its rollout's
    boards (``uint8 (n, rows, cols)``) and moves (which then runs one update per call).  Returns the policy, its
    ``train_steps`` the steps trained."""
    import jax
    from tqdm.auto import tqdm

    updates = steps // config.rollout_steps
    if updates == 0:
        raise ValueError(f"{steps} steps hold no rollout of n_envs * n_steps = {config.rollout_steps} steps")
    runner0, update = make_update(games, config)
    every = 1 if record is not None else max(1, every or updates // 100)

    @jax.jit
    def one(r):
        return update(r)

    @jax.jit
    def many(r):
        return jax.lax.scan(lambda r, _: (update(r)[0], None), r, None, length=every)[0]

    runner, done = jax.jit(runner0)(jax.random.key(seed)), 0
    with tqdm(total=updates * config.rollout_steps, unit="step", desc="JAX PPO", disable=not progress) as bar:
        while done < updates:
            if between is not None:
                between(runner, done * config.rollout_steps)
            n = min(every, updates - done)
            if record is not None:
                runner, (boards, actions) = one(runner)
                rows, cols = boards.shape[-2:]
                record(np.asarray(boards, np.uint8).reshape(-1, rows, cols), np.asarray(actions).reshape(-1))
            elif n == every:
                runner = many(runner)
            else:
                for _ in range(n):
                    runner = one(runner)[0]
            done += n
            bar.update(n * config.rollout_steps)
    policy = JaxPPOPolicy.from_runner(runner, games.env, masks=config.masks)
    policy.train_steps = done * config.rollout_steps
    return policy


# -- the trained policy ---------------------------------------------------------------------------------------------


class JaxPPOPolicy(Agent):
    """A trained policy network's most probable legal move (ties to the first), computed in NumPy float32 from
    the one-hot planes of the board (``rows * cols * channels`` inputs, as the JAX game observes it); with
    ``masks=False`` (a network trained without the legal moves) its most probable move, legal or not."""

    name = "jax_ppo"
    deterministic = True
    cheap_to_evaluate = True
    #: Boards per forward pass.
    CHUNK = 4096

    def __init__(self, params: dict, rows: int, cols: int, channels: int, seed: int = 0, masks: bool = True):
        self.params = {
            k: [(np.asarray(w, np.float32), np.asarray(b, np.float32)) for w, b in v] for k, v in params.items()
        }
        self.rows, self.cols, self.channels, self.seed, self.masks = rows, cols, channels, seed, masks
        self.train_steps = None

    @classmethod
    def from_runner(cls, runner: Runner, env, masks: bool = True) -> JaxPPOPolicy:
        return cls(runner.params, env.rows, env.cols, env.channels, masks=masks)

    def observe(self, boards: np.ndarray) -> np.ndarray:
        """``float32 (n, rows * cols * channels)``: the one-hot planes of ``boards`` (uint8 (n, rows, cols))."""
        flat = np.asarray(boards).reshape(-1, self.rows * self.cols).astype(np.intp)
        if flat.size and flat.max() >= self.channels:
            raise ValueError(f"a board holds exponent {flat.max()}; this network sees exponents < {self.channels}")
        return np.eye(self.channels, dtype=np.float32)[flat].reshape(flat.shape[0], -1)

    def logits(self, boards: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """``float32 (n, 4)``: the masked logits (an illegal move's -1e8; none masked for a policy without
        ``masks``)."""
        masks = np.asarray(masks, bool).reshape(-1, 4)
        if not self.masks:
            masks = np.ones_like(masks)
        out = np.empty(masks.shape, np.float32)
        boards = np.asarray(boards).reshape(-1, self.rows, self.cols)
        for lo in range(0, masks.shape[0], self.CHUNK):
            hi = lo + self.CHUNK
            out[lo:hi] = masked_logits(self.params, self.observe(boards[lo:hi]), masks[lo:hi], np)
        return out

    def act_batch(self, boards, masks):
        return self.logits(boards, masks).argmax(axis=1).astype(np.int64)
