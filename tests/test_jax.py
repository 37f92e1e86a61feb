"""The JAX game (env2048.jax) against the numba kernels: the conformance file (tests/fixtures/game-conformance.npz,
written by ``python -m env2048.conformance``) and fresh random pairs, bit for bit; the chance step against the
spawn kernel; whole games replayed move for move and spawn for spawn; the pgx-style and gymnax envs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")
import jax.numpy as jnp  # noqa: E402

from env2048 import jax as g2048  # noqa: E402
from env2048.conformance import SHAPES, legal_masks, load_fixture, move_cases, random_boards  # noqa: E402
from env2048.grid import spawn_inplace  # noqa: E402

FIXTURE = Path(__file__).parent / "fixtures" / "game-conformance.npz"


@pytest.fixture(scope="module")
def fixture():
    return load_fixture(FIXTURE)


#: One jitted function for every batch, so that each shape compiles once (batches of :data:`BATCH` pairs).
MOVES = jax.jit(jax.vmap(g2048.afterstate))
BATCH = 2000
#: Every move of each board at once.
ALL_MOVES = jax.jit(jax.vmap(g2048.afterstates))


def jax_moves(boards: np.ndarray, actions: np.ndarray):
    """``(after, reward, moved)`` of the JAX game on a batch (a multiple of :data:`BATCH` pairs), as NumPy
    arrays."""
    parts = [
        MOVES(jnp.asarray(boards[i : i + BATCH], jnp.int32), jnp.asarray(actions[i : i + BATCH]))
        for i in range(0, len(boards), BATCH)
    ]
    return tuple(np.concatenate([np.asarray(part[k]) for part in parts]) for k in range(3))


@pytest.mark.slow
def test_the_conformance_file_is_what_the_numba_kernels_make(fixture, tmp_path):
    """The kept file is reproducible: written again from its seed, it holds the same arrays."""
    from env2048.conformance import write_fixture

    again = load_fixture(write_fixture(tmp_path / "again.npz"))
    for kind in ("pairs", "games"):
        for shape, arrays in fixture[kind].items():
            for key, value in arrays.items():
                assert np.array_equal(again[kind][shape][key], value), (kind, shape, key)


@pytest.mark.slow
@pytest.mark.parametrize("shape", [f"{r}x{c}" for r, c in SHAPES])
def test_moves_equal_the_numba_kernels_on_the_conformance_pairs(fixture, shape):
    pairs = fixture["pairs"][shape]
    after, reward, moved = jax_moves(pairs["boards"], pairs["actions"])
    assert np.array_equal(after, pairs["after"]) and np.array_equal(reward, pairs["reward"])
    assert np.array_equal(moved, pairs["legal"])
    masks = np.asarray(jax.vmap(g2048.legal_action_mask)(jnp.asarray(pairs["boards"], jnp.int32)))
    assert np.array_equal(masks, legal_masks(pairs["boards"]))
    every = ALL_MOVES(jnp.asarray(pairs["boards"], jnp.int32))  # all four moves: the pair's action among them
    taken = [np.asarray(x)[np.arange(len(pairs["actions"])), pairs["actions"]] for x in every]
    assert np.array_equal(taken[0], pairs["after"]) and np.array_equal(taken[1], pairs["reward"])
    assert np.array_equal(taken[2], pairs["legal"]) and np.array_equal(np.asarray(every[2]), masks)


@pytest.mark.slow
def test_moves_equal_the_numba_kernels_on_fresh_random_pairs():
    """20,000 new pairs on each of seven shapes, exponents up to 29 (python -m experiments.bench.jax_conformance
    runs a million)."""
    rng = np.random.default_rng(12345)
    for rows, cols in SHAPES:
        cases = move_cases(rng, rows, cols, 20_000, top=29)
        after, reward, moved = jax_moves(cases["boards"], cases["actions"])
        assert np.array_equal(after, cases["after"]) and np.array_equal(reward, cases["reward"])
        assert np.array_equal(moved, cases["legal"])


@pytest.mark.slow
def test_chance_outcomes_are_the_spawn_kernels_distribution():
    """Outcome 2*cell + k has (1 - p4)/e or p4/e on each of the e empty cells, and 0 elsewhere; and the spawn
    kernel, given the uniform that picks the j-th empty cell and the tile's uniform, places exactly what outcome
    j's cell and k say."""
    rng = np.random.default_rng(7)
    place = jax.jit(g2048.apply_chance)
    for rows, cols in SHAPES:
        boards = random_boards(rng, rows, cols, 200)
        for p4 in (0.1, 0.25):
            outcomes = jax.jit(jax.vmap(lambda b, p=p4: g2048.chance_outcomes(b, p)))
            probs = np.asarray(outcomes(jnp.asarray(boards, jnp.int32)))
            for board, row in zip(boards, probs, strict=True):
                empty = np.flatnonzero(board.reshape(-1) == 0)
                want = np.zeros(2 * rows * cols, np.float32)
                if empty.size:
                    want[2 * empty] = np.float32((1 - p4) / empty.size)
                    want[2 * empty + 1] = np.float32(p4 / empty.size)
                assert np.array_equal(row, want)
        for board in boards[:20]:
            empty = np.flatnonzero(board.reshape(-1) == 0)
            for j, cell in enumerate(empty):
                for k, u_tile in ((0, 0.5), (1, 0.05)):
                    spawned = board.reshape(1, -1).copy()
                    spawn_inplace(spawned, 0, (j + 0.5) / empty.size, u_tile, 0.1)
                    ours = place(jnp.asarray(board, jnp.int32), 2 * cell + k)
                    assert np.array_equal(np.asarray(ours).reshape(1, -1), spawned)


@pytest.mark.slow
@pytest.mark.parametrize("shape", [f"{r}x{c}" for r, c in SHAPES])
def test_games_replay_move_for_move_and_spawn_for_spawn(fixture, shape):
    """Each game of the file (150 per shape, 1,050 in all) replayed by the pgx-style env's step_chance from its
    start: every board, reward and end as the numba env's."""
    games = fixture["games"][shape]
    rows, cols = (int(x) for x in shape.split("x"))
    env = g2048.make(rows, cols)

    def replay(start, actions, outcomes):
        state = env.state_of(start)

        def one(state, step):
            action, outcome = step
            state = env.step_chance(state, jnp.maximum(action, 0), outcome)
            return state, (state.board, state.rewards[0], state.terminated)

        return jax.lax.scan(one, state, (actions.astype(jnp.int32), outcomes))[1]

    boards, rewards, ended = jax.jit(jax.vmap(replay))(games["start"], games["actions"], games["outcomes"])
    assert np.array_equal(np.asarray(boards), games["boards"])
    assert np.array_equal(np.asarray(rewards), games["rewards"].astype(np.float32))
    assert np.array_equal(np.asarray(ended), games["terminated"])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["L3-256", "442-256", "t-512"])
def test_endgames_replay_move_for_move_and_spawn_for_spawn(fixture, name):
    """Each endgame game of the file (150 per endgame of suite v2) replayed by the pattern env: every board,
    reward and end as :class:`env2048.endgame.Endgame2048Env`'s."""
    games = fixture["endgames"][name]
    pattern, target = name.split("-")
    env = g2048.make(4, 4, target=int(target), pattern=pattern)

    def replay(start, actions, outcomes):
        def one(state, step):
            action, outcome = step
            state = env.step_chance(state, jnp.maximum(action, 0), outcome)
            return state, (state.board, state.rewards[0], state.terminated)

        return jax.lax.scan(one, env.state_of(start), (actions.astype(jnp.int32), outcomes))[1]

    boards, rewards, ended = jax.jit(jax.vmap(replay))(games["start"], games["actions"], games["outcomes"])
    assert np.array_equal(np.asarray(boards), games["boards"])
    assert np.array_equal(np.asarray(rewards), games["rewards"].astype(np.float32))
    assert np.array_equal(np.asarray(ended), games["terminated"])


def test_endgame_outcomes_equal_the_rules_reference():
    """Random boards holding each v2 endgame's fixed tiles, their free cells up to one past the target, every
    move: the JAX afterstate and its verdict (illegal, play, success, failure) as the packed kernel and
    env2048.rules' slow reference give them; each verdict occurs."""
    from env2048 import board as B
    from env2048.pattern import load_pattern
    from env2048.rules import reference_outcome

    rng = np.random.default_rng(3)
    seen = set()
    for name, target in (("L3", 256), ("442", 256), ("t", 512)):
        pattern = load_pattern(name, target)
        env = g2048.make(4, 4, target=target, pattern=pattern)
        top = target.bit_length() - 1
        fixed = B.unpack(np.uint64(pattern.fixed_board), 4, 4).reshape(-1)
        free = np.array(pattern.free_cells)
        boards = np.tile(fixed, (3000, 1))
        tiles = np.where(rng.random((3000, free.size)) < 0.3, 0, rng.integers(1, top + 2, (3000, free.size)))
        boards[:, free] = np.where(rng.random((3000, 1)) < 0.5, np.minimum(tiles, top - 1), tiles)
        boards = boards.reshape(-1, 4, 4).astype(np.uint8)
        actions = rng.integers(0, 4, 3000)

        def judged(board, action, rules=env.rules):
            after = g2048.afterstate(board, action)[0]
            return after, g2048.outcome(board, after, rules)

        after, verdict = (np.asarray(x) for x in jax.jit(jax.vmap(judged))(boards.astype(np.int32), actions))
        ids = B.pack(boards)
        moved = np.empty_like(ids)
        for a in range(4):
            moved[actions == a] = B.move(ids[actions == a], a, 4, 4)[0]
        assert np.array_equal(B.pack(after.astype(np.uint8)), moved)
        for i in range(len(boards)):
            assert verdict[i] == reference_outcome(int(ids[i]), int(moved[i]), pattern.rules)
        seen |= set(verdict.tolist())
    assert seen == {g2048.game.ILLEGAL, g2048.game.PLAY, g2048.game.SUCCESS, g2048.game.FAILURE}


@pytest.mark.slow
def test_the_env_follows_suite_v2s_rules():
    """Two tiles at the start; an illegal move ends the game with reward 0; a finished game does not move; the
    goal game pays 1 for the move that makes its tile and ends there; jit and vmap; bad arguments refused."""
    env = g2048.make(2, 2)
    step = jax.jit(env.step)
    starts = jax.jit(jax.vmap(env.init))(jax.random.split(jax.random.key(0), 64))
    assert (np.count_nonzero(np.asarray(starts.board).reshape(64, -1), axis=1) == 2).all()
    state = jax.tree.map(lambda x: x[3], starts)
    illegal = int(np.flatnonzero(~np.asarray(state.legal_action_mask))[0])
    over = step(state, illegal, jax.random.key(4))
    assert bool(over.terminated) and float(over.rewards[0]) == 0.0 and np.array_equal(over.board, state.board)
    again = step(over, 0, jax.random.key(5))
    assert np.array_equal(again.board, over.board) and int(again.step_count) == int(over.step_count)

    goal = g2048.make(2, 2, target=8)
    board = jnp.array([[2, 2], [0, 0]], jnp.int32)
    state = goal.state_of(board)
    made = jax.jit(goal.step)(state, g2048.game.LEFT, jax.random.key(6))
    assert float(made.rewards[0]) == 1.0 and bool(made.terminated) and int(made.score) == 8
    plain = step(state, g2048.game.LEFT, jax.random.key(6))
    assert float(plain.rewards[0]) == 8.0 and not bool(plain.terminated)
    assert env.version == g2048.VERSION == 1 and env.observation_shape == (2, 2, 6)
    with pytest.raises(ValueError, match="target must be a tile 2"):
        g2048.make(3, 3, target=100)
    with pytest.raises(ValueError, match="is played on 4x4, not 3x3"):
        g2048.make(3, 3, target=256, pattern="L3")

    # start_p4: the start tiles' own chance of a 4 (0: two 2-tiles), the spawns' still p4 (here 1)
    twos = g2048.make(4, 3, p4=1.0, start_p4=0.0)
    starts = jax.jit(jax.vmap(twos.init))(jax.random.split(jax.random.key(7), 256))
    boards = np.asarray(starts.board).reshape(256, -1)
    assert (np.sort(boards, axis=1)[:, -2:] == 1).all() and (np.count_nonzero(boards, axis=1) == 2).all()
    first = jax.tree.map(lambda x: x[0], starts)
    move = int(np.flatnonzero(np.asarray(first.legal_action_mask))[0])
    after = np.asarray(jax.jit(twos.step)(first, move, jax.random.key(8)).board)
    assert np.where(after > 0, 1 << after, 0).sum() == 2 + 2 + 4  # the age after the spawn: it was a 4
    fours = jax.jit(jax.vmap(g2048.make(3, 3, p4=0.0, start_p4=1.0).init))(jax.random.split(jax.random.key(9), 64))
    assert (np.sort(np.asarray(fours.board).reshape(64, -1), axis=1)[:, -2:] == 2).all()
    with pytest.raises(ValueError, match="start_p4 must be a probability"):
        g2048.make(3, 3, start_p4=-0.1)
    with pytest.raises(ValueError, match="start_p4 is for the board games"):
        g2048.make(4, 4, target=256, pattern="L3", start_p4=0.0)


@pytest.mark.slow
def test_the_gymnax_env_runs_gymnax_code_unchanged():
    """Random legal play through gymnax's own step (auto-reset included) under lax.scan: scores add up and games
    end and restart; the spaces are gymnax's."""
    pytest.importorskip("gymnax")
    from env2048.jax.gymnax_env import Game2048Gymnax

    env = Game2048Gymnax(2, 3)
    params = env.default_params
    obs, state = env.reset(jax.random.key(0), params)
    assert obs.shape == env.observation_space(params).shape and env.action_space(params).n == 4

    def play(state, key):
        pick, step_key = jax.random.split(key)
        mask = g2048.legal_action_mask(state.board)
        action = jax.random.categorical(pick, jnp.where(mask, 0.0, -jnp.inf))
        _, state, reward, terminated, _, _ = env.step(step_key, state, action, params)
        return state, (reward, terminated)

    _, (rewards, ended) = jax.lax.scan(play, state, jax.random.split(jax.random.key(1), 500))
    assert int(np.asarray(ended).sum()) >= 10 and float(np.asarray(rewards).sum()) > 0
    assert set(np.unique(np.asarray(rewards) % 4)) == {0.0}  # merge rewards are sums of tiles of 4 or more
