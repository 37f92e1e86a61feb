"""Exact labels on the device (oracle.device) against the host Oracle: Q*, V*, regret and the not-in-table flag
on boards of random games, to float32 rounding."""

from __future__ import annotations

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from env2048.conformance import played_boards, played_endgame_boards  # noqa: E402
from oracle import Oracle  # noqa: E402
from oracle.device import DeviceOracle, _find, _key, host_keys, key_layout  # noqa: E402


def check_against_host(host: Oracle, boards: np.ndarray) -> None:
    device = DeviceOracle.from_oracle(host)
    want = host.q_values(boards).reshape(-1, 4)
    got, missing = (np.asarray(x) for x in device.lookup_q(boards))
    assert np.array_equal(np.isnan(got), np.isnan(want)) and not missing.any()
    legal = ~np.isnan(want)
    assert np.allclose(got[legal], want[legal].astype(np.float32), rtol=2**-21, atol=0)
    v = np.asarray(device.value(boards))
    assert np.allclose(
        v, np.where(legal.any(axis=1), np.nanmax(np.where(legal, want, -np.inf), axis=1), 0), rtol=2**-21
    )
    playable = legal.any(axis=1)
    actions = np.argmax(legal, axis=1)  # each board's first legal move
    best = np.nanmax(np.where(legal, want, -np.inf), axis=1)
    r = np.asarray(device.regret(boards, actions))
    atol = 4 * np.finfo(np.float32).eps * np.abs(want[legal]).max()
    assert np.allclose(r[playable], (best - want[np.arange(len(want)), actions])[playable], rtol=0, atol=atol)
    assert np.isnan(r[~playable]).all()


@pytest.mark.slow
def test_the_device_labels_equal_the_host_oracle_on_the_2x3_score_table(table_2x3):
    """100,000 boards of random games (every reachable 2x3 state many times over); a board beyond the table (a
    4096, whose key would need a larger radix) is flagged, not truncated into another board's key."""
    with Oracle.open(table_2x3) as host:
        check_against_host(host, played_boards(2, 3, 100_000, games=250))
        device = DeviceOracle.from_oracle(host)
    q, missing = device.lookup_q(np.array([[[12, 0, 0], [0, 0, 1]]]))
    assert bool(missing[0]) and np.isnan(np.asarray(q)[0, 3])


@pytest.mark.slow
def test_the_device_labels_a_goal_game_and_flags_boards_not_in_the_table(tmp_path):
    """A 2x3 game to 32: a move that makes the goal is worth 1; a board and its mirror image share a key."""
    from solver.build import build
    from solver.spec import SolveSpec

    build(SolveSpec.parse("2x3", "tile:5"), tmp_path / "t.h5", progress=False)
    with Oracle.open(tmp_path / "t.h5") as host:
        boards = played_boards(2, 3, 10_000, games=100, seed=1)
        boards = boards[boards.max(axis=(1, 2)) < 5]
        check_against_host(host, boards)
        device = DeviceOracle.from_oracle(host)
    q, _ = device.lookup_q(np.array([[[4, 4, 0], [0, 0, 0]]]))
    assert float(q[0, 3]) == float(q[0, 1]) == 1.0  # LEFT or RIGHT merges two 16s into the goal 32
    flipped = np.array([[[1, 2, 0], [0, 0, 3]]])
    assert host_keys(flipped, device.layout) == host_keys(flipped[:, ::-1, ::-1], device.layout)


def test_an_endgame_is_labelled_by_its_rules_on_its_free_cells(tmp_path):
    """A 3x3 endgame with a fixed 256 in a corner (its symmetry group: the diagonal mirror) on boards of random
    games: the key ranks the eight free cells; moves that shift the fixed tile are illegal, and one that makes 16
    is worth 1."""
    from env2048.pattern import Pattern
    from solver.build import build
    from solver.spec import SolveSpec

    pattern = Pattern.from_dict({"rows": 3, "cols": 3, "grid": [". . .", ". . .", ". . 256"], "target": 16})
    build(SolveSpec.for_pattern(pattern), tmp_path / "t", progress=False, layout="directory")
    with Oracle.open(tmp_path / "t") as host:
        device = DeviceOracle.from_oracle(host)
        assert device.layout.free == tuple(range(8)) and len(device.layout.perms) == 2
        boards = np.array([[[1, 0, 0], [0, 2, 0], [0, 0, 8]], [[3, 3, 0], [1, 0, 0], [0, 2, 8]]])
        check_against_host(host, np.concatenate([boards, played_endgame_boards(pattern, 5000)]))
    q = np.asarray(device.q_values(boards[1:]))[0]
    assert q[1] == 1.0 and np.isnan(q[0]) and np.isnan(q[3])  # RIGHT makes the 16; UP and LEFT shift the 256


def test_two_word_keys_are_exact_and_searched_in_lexicographic_order():
    """Base-16 ranks of nine cells pass 32 bits: pairs (high, low) on the device equal the host's, and the
    bisection finds each stored key and no other."""
    import jax.numpy as jnp

    from env2048.tables import symmetry_tables

    layout = key_layout(symmetry_tables(3, 3)[0], range(9), 16)
    assert layout.words == 2 and layout.low == 8
    rng = np.random.default_rng(3)
    boards = rng.integers(0, 16, (3000, 3, 3))
    keys = host_keys(boards, layout)
    device = np.array([[int(x) for x in _key(jnp.asarray(b, jnp.int32), layout)] for b in boards[:200]])
    assert np.array_equal(device, keys[:200])
    joined = (keys[:, 0].astype(np.uint64) << np.uint64(32)) | keys[:, 1]
    stored = np.unique(joined[:2000])
    table = jnp.asarray(np.stack([stored >> np.uint64(32), stored & np.uint64(2**32 - 1)], 1).astype(np.uint32))
    find = jax.jit(jax.vmap(lambda h, lo: _find(table, h, lo)))
    at, found = (np.asarray(x) for x in find(jnp.asarray(keys[:, 0]), jnp.asarray(keys[:, 1])))
    assert found[:2000].all() and np.array_equal(stored[at[:2000]], joined[:2000])
    assert np.array_equal(found[2000:], np.isin(joined[2000:], stored))
