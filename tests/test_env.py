"""Game2048Env: Gymnasium and SB3 checkers, rules seen through the env, spawn statistics, golden trajectory."""

from __future__ import annotations

import json
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env

from env2048 import REGISTERED_IDS, SUITE_IDS, Game2048Env, IllegalActionError

import naive
from conftest import chi2_pvalue
from golden import FIXTURE, play_golden


def first_legal(info) -> int:
    return int(np.flatnonzero(info["action_mask"])[0])


#: The ids whose table takes seconds to build (the 3x3 one 20 s) are checked in make test, not in the quick lane.
SLOW_TABLES = ("Solved2048-2x4-v1", "Solved2048-3x3-v1")
CHECKED_IDS = [pytest.param(i, marks=pytest.mark.slow) if i in SLOW_TABLES else i for i in sorted(REGISTERED_IDS)]
#: Every id the project registers (the boards', the suite's tasks', the endgames').
PROJECT_IDS = sorted(i for i in gym.registry if i.split("-")[0] in ("Game2048", "Solved2048", "Endgame2048"))


def made_as_registered(env_id: str, **kwargs) -> gym.Env:
    """``gym.make(env_id)``, wrappers included; an id whose oracle needs a table that takes minutes here (4x3, the
    suite's goal games and endgames) is made with ``oracle=False``, and ``Endgame2048-v0`` gets its target."""
    if env_id in SUITE_IDS or env_id == "Solved2048-4x3-v1":
        kwargs.setdefault("oracle", False)
    if env_id == "Endgame2048-v0":
        kwargs.setdefault("target", 512)
    return gym.make(env_id, **kwargs)


@pytest.mark.slow
@pytest.mark.parametrize("env_id", CHECKED_IDS)
def test_gymnasium_env_checker(env_id):
    """Gymnasium's checker on the env as ``gym.make`` returns it: its time limit and oracle wrappers included."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*different from the unwrapped version")  # the wrappers: meant
        gym_check_env(gym.make(env_id), skip_render_check=True)
        gym_check_env(gym.make(env_id, render_mode="rgb_array"))


@pytest.mark.parametrize("env_id", [i for i in PROJECT_IDS if i not in REGISTERED_IDS])
def test_gymnasium_env_checker_on_the_suite_and_endgame_ids(env_id):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*different from the unwrapped version")
        gym_check_env(made_as_registered(env_id), skip_render_check=True)


@pytest.mark.parametrize(
    "env_id",
    [pytest.param(i, marks=pytest.mark.slow) if i == "Game2048-v0" or i in SLOW_TABLES else i for i in PROJECT_IDS],
)
def test_an_agent_that_always_presses_up_ends_every_episode(env_id):
    """No registered id lets an episode run for ever: the v2 ids end the game at the first illegal UP, the others
    truncate at their ``max_episode_steps`` (Game2048-v0: about a million steps, in make test only)."""
    env = made_as_registered(env_id)
    limit = env.spec.max_episode_steps
    assert limit is not None or env.unwrapped.invalid_action == "terminate", env_id
    env.reset(seed=0)
    steps, over = 0, False
    while not over:
        _, _, terminated, truncated, info = env.step(0)
        steps, over = steps + 1, terminated or truncated
        assert limit is None or steps <= limit
    if limit is None:  # v2: the game ended where UP was illegal, or no move was left
        assert info["illegal_moves"] == 1 or not info["action_mask"].any()


@pytest.mark.parametrize("env_id", CHECKED_IDS)
@pytest.mark.parametrize("obs_mode", ["exponent", "onehot"])
def test_sb3_env_checker(env_id, obs_mode):
    from stable_baselines3.common.env_checker import check_env

    # SB3's checker reports problems as warnings.  Allowed: its advice on the observation shapes this env's API
    # fixes.  A 2-D (rows, cols) board is "neither an image nor a vector" and a 3-D one-hot stack is guessed to
    # be an image for CnnPolicy; MlpPolicy flattens both.  Anything else fails the test.
    advisories = {
        "exponent": ["unconventional shape"],
        "onehot": [
            "is an image but the upper and lower bounds",
            "Treating image space as channels-last",
            "minimal resolution for an image",
        ],
    }[obs_mode] + [
        "has no optimal-value table here",  # Solved2048-4x3's own warning
        "is out of date. You should consider upgrading",
    ]  # Gymnasium's, on a v1 id: v2 exists
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(gym.make(env_id, obs_mode=obs_mode), warn=True)
    problems = [str(w.message) for w in caught if not any(a in str(w.message) for a in advisories)]
    assert problems == []


def test_registered_shapes():
    env = gym.make("Solved2048-4x3", oracle=False)
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4, 3)
    assert gym.make("Solved2048-2x2").reset(seed=0)[0].shape == (2, 2)
    assert gym.make("Game2048-v0").reset(seed=0)[0].shape == (4, 4)
    assert gym.make("Game2048-v0", rows=3, cols=5).reset(seed=0)[0].shape == (3, 5)


@pytest.mark.parametrize("rows,cols", [(3, 3), (4, 3), (3, 5), (2, 7), (6, 6)])
def test_every_step_follows_the_reference_rules(rows, cols):
    """Random play, illegal moves included: each transition is a reference move plus at most one spawn."""
    env = Game2048Env(rows, cols)
    obs, info = env.reset(seed=rows * cols)
    assert (obs > 0).sum() == 2 and set(obs[obs > 0].tolist()) <= {1, 2}
    rng = np.random.default_rng(0)
    score = 0
    for _ in range(3000):
        action = int(rng.integers(4))
        before = obs.tolist()
        obs, reward, terminated, truncated, info = env.step(action)
        ref_after, ref_reward = naive.move(before, action)
        assert info["afterstate"].tolist() == ref_after
        assert reward == ref_reward
        diff = np.argwhere(obs != np.array(ref_after))
        if ref_after == before:  # illegal: nothing moves, nothing spawns
            assert obs.tolist() == before and reward == 0
        else:
            assert len(diff) == 1 and ref_after[diff[0][0]][diff[0][1]] == 0
            assert obs[tuple(diff[0])] in (1, 2)
            score += reward
        assert info["age"] == naive.age(obs.tolist())
        assert info["score"] == score
        assert info["max_tile"] == 2 ** int(obs.max())
        assert info["action_mask"].tolist() == naive.legal(obs.tolist())
        assert not truncated
        if terminated:
            assert not any(naive.legal(obs.tolist()))
            obs, info = env.reset()
            score = 0


def test_illegal_action_modes():
    env = Game2048Env(3, 3)
    obs, info = env.reset(seed=3)
    while info["action_mask"].all():
        obs, _, _, _, info = env.step(first_legal(info))
    board_with_illegal = obs.copy()
    bad = int(np.flatnonzero(~info["action_mask"])[0])
    obs2, reward, terminated, _, info2 = env.step(bad)
    assert (obs2 == board_with_illegal).all() and reward == 0 and not terminated
    assert info2["illegal_moves"] == 1 and info2["moves"] == info["moves"]
    assert info2["age"] == info["age"]

    for mode, expect in (("terminate", "terminated"), ("raise", IllegalActionError)):
        env = Game2048Env(3, 3, invalid_action=mode)
        obs, info = env.reset(seed=3)
        while info["action_mask"].all():
            obs, _, _, _, info = env.step(first_legal(info))
        bad = int(np.flatnonzero(~info["action_mask"])[0])
        if expect == "terminated":
            obs2, reward, terminated, _, _ = env.step(bad)
            assert terminated and reward == 0 and (obs2 == obs).all()
        else:
            with pytest.raises(IllegalActionError, match="is illegal here; legal moves"):
                env.step(bad)


def test_the_spawn_rule_spawns_a_tile_after_an_illegal_move_too():
    """invalid_action="spawn" (seed 003's rule): moves drawn among all four, as its random agent does; every turn
    ends on a board the slow reference's turn can make, the game ends when no move can change the board, and an
    illegal move counts as one, with reward 0."""
    env = Game2048Env(3, 3, invalid_action="spawn")
    rng = np.random.default_rng(7)
    spawned_after_illegal = 0
    for episode in range(15):
        obs, info = env.reset(seed=episode)
        terminated = False
        while not terminated:
            grid, a = obs.tolist(), int(rng.integers(4))
            outcomes, want_reward, legal = naive.turn(grid, a, 0.1, spawn_after_illegal=True)
            before = info
            obs, reward, terminated, truncated, info = env.step(a)
            assert obs.tolist() in [g for g, _ in outcomes] and reward == want_reward and not truncated
            assert terminated == (not any(naive.legal(obs.tolist())))
            assert info["illegal_moves"] == before["illegal_moves"] + (not legal)
            assert info["moves"] == before["moves"] + legal and info["age"] == naive.age(obs.tolist())
            spawned_after_illegal += not legal and obs.tolist() != grid
    assert spawned_after_illegal > 0


def test_goal_tile_ends_episode():
    env = Game2048Env(3, 3, goal_tile=16)
    rng = np.random.default_rng(1)
    reached = 0
    for episode in range(30):
        obs, info = env.reset(seed=episode)
        terminated = False
        while not terminated:
            legal = np.flatnonzero(info["action_mask"])
            obs, _, terminated, _, info = env.step(int(rng.choice(legal)))
        if info["max_tile"] >= 16:
            reached += 1
            assert info["max_tile"] == 16
        else:
            assert not info["action_mask"].any()
    assert reached > 0


def test_onehot_observation_matches_exponents():
    a = Game2048Env(3, 3, obs_mode="onehot")
    b = Game2048Env(3, 3)
    oa, _ = a.reset(seed=5)
    ob, _ = b.reset(seed=5)
    for t in range(50):
        assert oa.shape == (11, 3, 3) and oa.sum(axis=0).min() == 1
        assert (oa.argmax(axis=0) == ob).all()
        oa, _, ta, _, ia = a.step(t % 4)
        ob, _, tb, _, ib = b.step(t % 4)
        if ta:
            break


def test_render_modes():
    env = Game2048Env(3, 3, render_mode="ansi")
    env.reset(seed=0)
    text = env.render()
    assert len(text.strip().splitlines()) == 3 and "2" in text
    env = Game2048Env(4, 3, render_mode="rgb_array")
    env.reset(seed=0)
    img = env.render()
    assert img.dtype == np.uint8 and img.shape == (4 * 70 + 6, 3 * 70 + 6, 3)
    assert len({tuple(p) for p in img.reshape(-1, 3)}) > 3  # background, empty cells, tiles and digits


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"rows": 1}, "rows=1 is out of range"),
        ({"cols": 9}, "cols=9 is out of range"),
        ({"p4": -0.1}, "p4 must be a probability"),
        ({"goal_tile": 100}, "goal_tile must be a power of two"),
        ({"rows": 2, "cols": 2, "goal_tile": 64}, "from 8 to 32"),
        ({"invalid_action": "ignore"}, "invalid_action must be one of"),
        ({"obs_mode": "image"}, "obs_mode must be one of"),
        ({"render_mode": "human"}, "render_mode must be one of"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Game2048Env(**kwargs)


def test_bad_actions_and_order():
    env = Game2048Env(3, 3)
    with pytest.raises(RuntimeError, match="reset"):
        env.step(0)
    env.reset(seed=0)
    for bad in (4, -1, 1.5):
        with pytest.raises(ValueError, match="0..3"):
            env.step(bad)
    with pytest.raises(TypeError, match="0..3"):
        env.step("up")


def test_spawn_statistics_chi_square():
    """Spawned cell uniform among the afterstate's empty cells; tile 4 with probability p4 (fixed seed)."""
    p4 = 0.1
    env = Game2048Env(3, 3, p4=p4)
    obs, info = env.reset(seed=123)
    rank_counts: dict[int, np.ndarray] = {}
    fours = twos = 0
    rng = np.random.default_rng(7)
    while twos + fours < 40000:
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, _, terminated, _, info = env.step(action)
        after = info["afterstate"].ravel()
        empties = np.flatnonzero(after == 0)
        spawned = int(np.flatnonzero(obs.ravel() != after)[0])
        counts = rank_counts.setdefault(len(empties), np.zeros(len(empties)))
        counts[int(np.searchsorted(empties, spawned))] += 1
        if obs.ravel()[spawned] == 2:
            fours += 1
        else:
            twos += 1
        if terminated:
            obs, info = env.reset()
    for e, counts in rank_counts.items():
        if e > 1 and counts.sum() > 20 * e:
            assert chi2_pvalue(counts, np.full(e, counts.sum() / e)) > 1e-3, (e, counts)
    n = twos + fours
    assert chi2_pvalue([twos, fours], [n * (1 - p4), n * p4]) > 1e-3


@pytest.mark.parametrize("start_p4", [0.0, 0.3, 1.0])
def test_the_start_tiles_follow_start_p4_and_the_spawns_p4(start_p4):
    """The start boards of 4,000 resets on 2x3 follow the reference's start distribution at ``start_p4`` (chi
    squared); spawns after the start keep ``p4`` (here 1: every spawn a 4, so start and spawns are told apart)."""
    rows, cols = 2, 3
    env = Game2048Env(rows, cols, p4=1.0, start_p4=start_p4)
    want = naive.start_distribution(rows, cols, start_p4)
    seen = dict.fromkeys(want, 0)
    obs, info = env.reset(seed=11)
    for _ in range(4000):
        board = naive.pack([list(map(int, row)) for row in obs])
        assert board in want, obs  # a start the reference's distribution allows
        seen[board] += 1
        _, _, _, _, step_info = env.step(first_legal(info))
        after = step_info["afterstate"]
        assert step_info["age"] == int(np.where(after > 0, 1 << after.astype(np.int64), 0).sum()) + 4
        obs, info = env.reset()
    support = [b for b in want if want[b] > 0]
    counts = np.array([seen[b] for b in support])
    assert counts.sum() == 4000
    assert chi2_pvalue(counts, 4000 * np.array([want[b] for b in support])) > 1e-3
    if start_p4 == 0.0:  # the two-2 starts of Kaneko & Yamashita's 4x3 optimum
        assert all(seen[b] == 0 for b in want if want[b] == 0)
    with pytest.raises(ValueError, match=r"start_p4 must be a probability in \[0, 1\], got 1.5"):
        Game2048Env(rows, cols, start_p4=1.5)


def test_same_seed_same_game_and_golden_trajectory():
    with open(FIXTURE) as f:
        stored = json.load(f)
    replay = play_golden()
    assert replay == stored
    # The stored game obeys the reference rules, so the fixture is not just whatever the code did.
    for before, action, reward, after, nxt in zip(
        stored["boards"][:-1],
        stored["actions"],
        stored["rewards"],
        stored["afterstates"],
        stored["boards"][1:],
        strict=True,
    ):
        ref_after, ref_reward = naive.move([before[i : i + 3] for i in (0, 3, 6)], action)
        assert sum(ref_after, []) == after and ref_reward == reward
        assert sum(1 for x, y in zip(after, nxt, strict=True) if x != y) == 1
    assert not any(naive.legal([stored["boards"][-1][i : i + 3] for i in (0, 3, 6)]))
    assert stored["score"] == sum(stored["rewards"])


def test_reset_without_seed_continues_the_stream():
    a, b = Game2048Env(3, 3), Game2048Env(3, 3)
    a.reset(seed=11)
    b.reset(seed=11)
    starts_a = [a.reset()[0].tolist() for _ in range(20)]
    starts_b = [b.reset()[0].tolist() for _ in range(20)]
    assert starts_a == starts_b and len({str(s) for s in starts_a}) > 1


def test_4x3_without_a_table_warns_once_and_plays_bare():
    from oracle import wrapper

    wrapper._WARNED_NO_TABLE.discard((4, 3))
    expected = r"no optimal-value table.*2\.4-2\.5 TiB.*projected at [0-9.]+ h.*--backend ray.*oracle_table="
    with pytest.warns(UserWarning, match=expected):
        env = gym.make("Solved2048-4x3", oracle=True)
    assert not isinstance(env.env.env, wrapper.OracleWrapper) and env.reset(seed=0)[0].shape == (4, 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message=".*is out of date")  # Gymnasium's notice that v2 exists
        gym.make("Solved2048-4x3-v1")  # once per process (the versioned id: "error" also hits gymnasium's notice)
