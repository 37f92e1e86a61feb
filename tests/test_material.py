"""The material partition's measurement (experiments.scale.material): keys and crossing moves against naive.py,
and the invariants the partition rests on (symmetries and spawns keep the key; a move only merges it)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given

from experiments.scale.material import crossing_moves, measure_age
from solver.distributed.material import material_keys
from solver.spec import SolveSpec

import naive
from conftest import boards, numba_threads


def naive_key(grid, low: int) -> Counter:
    return Counter(v for row in grid for v in row if v >= low)


def key(grid, low: int) -> int:
    rows, cols = len(grid), len(grid[0])
    return int(material_keys(np.array([naive.pack(grid)], np.uint64), rows * cols, low)[0])


@given(boards([(3, 3), (4, 3), (2, 4)], max_exp=11))
def test_keys_and_crossing_moves_match_the_reference(case):
    """The key is the multiset of tiles >= 2**low: the same for every symmetric image and for the board without
    its smaller tiles; a move crosses exactly when it changes the multiset, and it can change it only by merging
    tiles >= 2**(low - 1)."""
    rows, cols, grid = case
    spec = SolveSpec.parse(f"{rows}x{cols}", "score")
    lows = np.array([3, 4, 6], np.int64)
    got = crossing_moves(np.array([naive.pack(grid)], np.uint64), spec.tables, spec.rules, lows)
    for i, low in enumerate(lows):
        assert key(grid, low) == sum(17 ** (e - low) * n for e, n in naive_key(grid, low).items())
        assert key([[v if v >= low else 0 for v in row] for row in grid], low) == key(grid, low)
        assert {key(image, low) for image in naive.symmetries(grid)} == {key(grid, low)}
        legal = crossing = 0
        for a in range(4):
            after, _ = naive.move(grid, a)
            if after == grid:
                continue
            legal += 1
            crossing += naive_key(after, low) != naive_key(grid, low)
            assert (key(after, low) != key(grid, low)) == (naive_key(after, low) != naive_key(grid, low))
            assert all(e >= low - 1 for e in naive_key(grid, low - 1) - naive_key(after, low - 1))
        assert (got[0], got[1][i], int((got[3] > i).sum())) == (legal, crossing, crossing)
        assert np.all(got[4] == 0)  # every crossing move is the one board's


def test_spawns_keep_the_key():
    grid = [[3, 0, 5], [0, 6, 1], [0, 0, 7]]
    assert {key(child, 3) for child, _ in naive.spawn_outcomes(grid, 0.1)} == {key(grid, 3)}


def test_histogram_and_crossing_pairs_match_a_count_by_hand():
    """An age's histogram per key and its crossing pairs, against sets built from naive.py: the distinct
    (afterstate, source key) pairs of the moves that change the key, counted by (source key, target key)."""
    rng = np.random.default_rng(7)
    grids = [[[int(v) for v in row] for row in rng.choice([0, 1, 2, 3, 3, 4, 4, 5], size=(3, 3))] for _ in range(300)]
    states = np.unique(np.array([naive.canonical(g) for g in grids], np.uint64))
    grids = [naive.unpack(int(b), 3, 3) for b in states]
    afterstates = np.unique(
        np.array(
            [naive.canonical(naive.move(g, a)[0]) for g in grids for a in range(4) if naive.move(g, a)[0] != g],
            np.uint64,
        )
    )
    spec = SolveSpec.parse("3x3", "score")
    row = measure_age(states, afterstates, spec, lows=(3, 4))
    for low in (3, 4):
        got = row["by_threshold"][str(1 << low)]
        expected_states = Counter(key(g, low) for g in grids)
        expected_after = Counter(key(naive.unpack(int(b), 3, 3), low) for b in afterstates)
        assert dict(zip(got["keys"], got["states"], strict=True)) == {
            k: expected_states.get(k, 0) for k in expected_states | expected_after
        }
        assert dict(zip(got["keys"], got["afterstates"], strict=True)) == {
            k: expected_after.get(k, 0) for k in expected_states | expected_after
        }
        pairs = set()
        for g in grids:
            for a in range(4):
                after, _ = naive.move(g, a)
                if after != g and key(after, low) != key(g, low):
                    pairs.add((naive.canonical(after), key(g, low), key(after, low)))
        assert pairs, "the boards must make crossing moves for this test to mean anything"
        by_keys = Counter((source, target) for _, source, target in pairs)
        assert {(a, b): n for a, b, n in got["pairs"]} == dict(by_keys)
        assert got["crossing_afterstates"] == len({after for after, _, _ in pairs})


def row(keys, states, afterstates, pairs):
    """One age of a histogram at T = 8, as experiments.scale.material writes it."""
    cell = {"keys": keys, "states": states, "afterstates": afterstates, "pairs": pairs}
    return {"states": sum(states), "afterstates": sum(afterstates), "by_threshold": {"8": cell}}


def test_critical_path_replays_the_drivers_assignment_by_hand():
    """Two ages on two machines, worked by hand: new keys go largest first (by afterstates) to the machine with
    the least work of the age; a crossing pair between machines costs 8 B each way per afterstate and pass; a pair
    into a key no afterstate has (a won game) costs nothing."""
    from experiments.scale.critical_path import calibrate, replay, seconds, summary

    pairs_12 = [[0, 1, 1], [1, 18, 4], [1, 99, 5], [17, 18, 2]]
    ages = {
        10: row([0, 1, 17], [5, 0, 0], [4, 3, 2], [[0, 1, 3], [0, 17, 2]]),
        12: row([0, 1, 17, 18], [3, 2, 2, 0], [1, 1, 1, 6], pairs_12),
    }
    # age 10: key 0 (4) -> machine 0, key 1 (3) -> 1, key 17 (2) -> 1; age 12: machine loads 1 and 2, key 18 -> 0
    first, second = replay(ages, 8, 2)
    assert (first.busiest, first.busiest_states, first.busiest_afterstates, first.largest_column) == (9, 5, 4, 9)
    assert (first.exchange_bytes, first.busiest_nic_bytes) == (5 * 16, 5 * 8)
    assert (second.busiest, second.busiest_states, second.busiest_afterstates, second.largest_column) == (10, 3, 7, 6)
    assert (second.exchange_bytes, second.busiest_nic_bytes) == (7 * 16, 7 * 8)
    assert seconds([first, second], cores=1, rate=1.0, nic_gbps=None)["total_s"] == 19
    # NICs of 5 B/s: 40 and 56 bytes take 8 and 11.2 s after (or under) kernels of 9 and 10 s
    timed = seconds([first, second], cores=1, rate=1.0, nic_gbps=5 * 8 / 1e9)
    assert timed["total_s"] == pytest.approx(9 + 8 + 10 + 11.2) and timed["overlapped_s"] == pytest.approx(9 + 11.2)
    # pipelined: per pass, half a machine's crossing bytes (4 s in age 10, 5.6 s in age 12) less what its own
    # afterstates' work hides (under_exchange seconds each); machine 1 received all its afterstates of age 10
    assert (first.machine_own, second.machine_own) == ((4, 0), (1, 1))
    assert seconds([first, second], 1, 1.0, 5 * 8 / 1e9, under_exchange=(0, 0))["pipelined_s"] == pytest.approx(38.2)
    piped = seconds([first, second], cores=1, rate=1.0, nic_gbps=5 * 8 / 1e9, under_exchange=(0.5, 1.0))
    assert piped["pipelined_s"] == pytest.approx(max(9 + 2 + 0, 5 + 4 + 4) + max(10 + 5.1 + 4.6, 6 + 5.1 + 4.6))
    model = summary([first, second], 2)
    assert model["imbalance"] == 19 * 2 / 30 and model["busiest_own_share"] == 5 / 11
    assert model["busiest_crossing_bytes_per_item"] == (40 + 56) / 30 and model["busiest_handoff_bytes_per_item"] == 0
    one = replay(ages, 8, 1)
    assert [x.busiest for x in one] == [14, 16] and all(x.exchange_bytes == 0 for x in one)
    # a Ray run that took exactly the model's time at the local build's rate has no overhead
    assert calibrate(ages, 8, local_seconds=15.0, ray_seconds=19.0, tolerance=None, split=None)["overhead"] == 1.0


def test_critical_path_counts_a_moved_keys_states_on_its_old_machine():
    """Age 12, worked by hand.  Weights (afterstates + afterstates x states at 12 / afterstates at 10, rounded; the
    age's ratio 6 / 8 for a key new at 12): key 1 gets 1 + 1, key 17 1 + 0, key 33 6 + 4.  Key 33 joins machine 1
    (loads 2 and 1), then key 17 moves to machine 0 (2 and 11: gap 9, key 33's 10 does not fit).  Key 17's state
    of age 12 was expanded on machine 1 before the move: machine 0 holds 5 states + 2 afterstates, machine 1 1 + 6."""
    from experiments.scale.critical_path import replay

    ages = {10: row([1, 17], [1, 1], [4, 4], []), 12: row([1, 17, 33], [5, 1, 0], [1, 1, 6], [])}
    _, second = replay(ages, 8, 2, tolerance=0.0, split=None)
    assert (second.busiest, second.busiest_states, second.busiest_afterstates) == (7, 5, 2)


def test_states_ahead_weigh_each_key_by_its_own_ratio():
    from solver.distributed.material import with_states_ahead

    # key 1: 4 x 6 / 3 = 8 ahead; key 2: 2 x 1 / 1; key 3 had no afterstates before: the age's ratio (7 / 4) x 4
    assert with_states_ahead({1: 4, 2: 2, 3: 4}, {1: 6, 2: 1}, {1: 3, 2: 1}) == {1: 12, 2: 4, 3: 11}
    assert with_states_ahead({1: 4}, {1: 9}, {}) == {1: 8}  # nothing before (the first age, or a resume): ratio 1


def test_critical_path_replays_a_split_column_by_hand():
    """A column of 10 of the age's 12 afterstates on two machines (an even share is 6) splits in two halves, each
    on a machine; the small column joins the first.  Half of the split column's states are spawned by an
    afterstate of the other part (an ID forward and a value back, 8 B each, on both machines' NICs)."""
    from experiments.scale.critical_path import replay

    ages = {10: row([0, 1], [4, 0], [10, 2], [])}
    (whole,) = replay(ages, 8, 2, tolerance=None, split=None)
    assert (whole.busiest, whole.exchange_bytes, whole.busiest_nic_bytes) == (14, 0, 0)
    (split,) = replay(ages, 8, 2, tolerance=None, split=1.05)
    assert (split.busiest, split.busiest_states, split.busiest_afterstates) == (9, 2, 7)
    assert (split.exchange_bytes, split.busiest_nic_bytes) == (2 * 16, 2 * 8)


def test_projection_replays_measured_ages_and_models_later_ones_on_the_last_quarter():
    """project_4x3 on a two-age histogram: measured ages as replayed, and an unmeasured published age given the
    last quarter's afterstates per state, imbalance and bytes per item (here: the last measured age's)."""
    from experiments.scale.critical_path import replay
    from experiments.scale.project_4x3 import check_counts, extend

    ages = {10: row([0, 1], [4, 0], [3, 3], [[0, 1, 2]]), 12: row([0, 1], [2, 4], [2, 6], [[0, 1, 1]])}
    published = np.array([[10, 4], [12, 6], [14, 60]], np.int64)
    assert check_counts(ages, published) == 12
    assert check_counts(ages, published + [0, 1]) == -1
    measured = replay(ages, 8, 2)  # key 0 -> machine 0, key 1 -> machine 1; age 12: machine 1 has 10 of 14
    loads, model = extend(measured, published, 2)
    assert loads[:2] == measured and model["from_age"] == 12
    assert model["imbalance"] == 10 * 2 / 14 and model["afterstates_per_state"] == 8 / 6
    last = loads[2]
    assert (last.age, last.states, last.afterstates) == (14, 60, 80)
    assert last.busiest == round(140 * 10 / 14) and last.exchange_bytes == round(140 * 16 / 14)
    # machine 1 received 1 of its 6 afterstates of age 12 (8 B in, one direction): the share it made is 5 / 6
    assert last.machine_work == pytest.approx((100,)) and last.machine_crossing_bytes == pytest.approx((140 * 8 / 14,))
    assert last.machine_own == pytest.approx((last.busiest_afterstates * 5 / 6,)) and last.machine_handoff_bytes == (0,)


def test_endgame_projection_scales_the_histograms_shares():
    """A projected table on M machines: the busiest machine's share of the work at the rate, and the bytes per
    item, from a replayed histogram's summary."""
    from experiments.scale.critical_path import replay, summary
    from experiments.scale.project_endgame import project_table

    ages = {10: row([0, 1], [4, 0], [3, 3], [[0, 1, 2]])}  # machine 0: 7 of 10, 2 afterstates cross
    models = {2: summary(replay(ages, 8, 2), 2)}
    got = project_table(1e9, 0.5, 0.1, models, cores=10, rate=1e6, overhead=2.0, nic_gbps=None)[2]
    assert np.isclose(got["hours"], 2.0 * 1e9 * 0.7 / 1e7 / 3600)
    assert np.isclose(got["network_tb"], 1e9 * 2 * 16 / 10 / 1e12)


def test_crossing_moves_do_not_depend_on_the_threads():
    rng = np.random.default_rng(3)
    grids = rng.choice([0, 1, 2, 3, 4, 5, 6], size=(5000, 3, 3))
    states = np.unique(np.array([naive.canonical(g.tolist()) for g in grids], np.uint64))
    spec = SolveSpec.parse("3x3", "score")
    lows = np.array([3, 4, 5], np.int64)
    with numba_threads(1):
        one = crossing_moves(states, spec.tables, spec.rules, lows)
    with numba_threads(2):
        two = crossing_moves(states, spec.tables, spec.rules, lows)
    assert one[0] == two[0] and one[1].tolist() == two[1].tolist() and one[1][0] > 0
    for a, b in zip(one[2:], two[2:], strict=True):
        assert np.array_equal(a, b)


def test_rebalancing_moves_the_key_nearest_half_the_gap():
    from solver.distributed.material import Assignment

    assignment = Assignment(2, 3, keys=[1, 2, 3], owners=[0, 0, 1])
    keys, owners = assignment.rebalance({1: 5, 2: 3, 3: 2}, tolerance=0.0)  # loads 8 and 2: gap 6, key 2 is nearest 3
    assert keys.tolist() == [2] and owners.tolist() == [1] and assignment.owners.tolist() == [0, 1, 1]
    keys, _ = assignment.rebalance({1: 5, 2: 3, 3: 2}, tolerance=0.0)  # 5 and 5
    assert keys.size == 0
    assert assignment.rebalance({1: 9, 2: 1, 3: 0}, tolerance=0.5)[0].size == 0  # 9 and 1: key 1 exceeds the gap
    with pytest.raises(ValueError, match="assigned first"):
        assignment.rebalance({4: 1}, tolerance=0.0)
    with pytest.raises(ValueError, match=">= 0"):
        assignment.rebalance({1: 1}, tolerance=-0.1)


def test_a_stand_in_histogram_models_every_published_age_with_the_games_afterstates():
    from experiments.scale.critical_path import replay
    from experiments.scale.project_4x3 import extend

    ages = {10: row([0, 1], [4, 0], [3, 3], [[0, 1, 2]])}
    published = np.array([[10, 5], [12, 15]], np.int64)  # another game: nothing agrees, so nothing is kept
    loads, model = extend(replay(ages, 8, 2), published, 2, fraction=1.0, kept=-1, afterstates_total=40)
    assert [(x.age, x.states, x.afterstates) for x in loads] == [(10, 5, 10), (12, 15, 30)]
    assert model["afterstates_per_state"] == 2.0


def test_distinct_crossings_sort_packed_words_and_wide_boards_alike():
    """The packed one-word sort (on the solver's threads) and the wide boards' lexsort give the same distinct
    (afterstate, source) pairs as a set, in the same order."""
    from experiments.scale.material import distinct_crossings

    rng = np.random.default_rng(3)
    afterstates = rng.integers(0, 1 << 20, 200_000, dtype=np.uint64)  # many repeats, as from many states
    sources = rng.integers(0, 37, afterstates.size).astype(np.int64)
    expected = sorted(set(zip(afterstates.tolist(), sources.tolist(), strict=True)))
    for board_bits in (36, 64):
        after, source = distinct_crossings(afterstates.copy(), sources.copy(), board_bits)
        assert list(zip(after.tolist(), source.tolist(), strict=True)) == expected


def test_histograms_splice_each_from_its_first_age(tmp_path):
    """A later file replaces the earlier files' ages from its own first age on, even an earlier file's ages beyond
    its last (tile:8's deep ages are not the score game's); a file cut short mid-line by a stopped run keeps its
    whole lines."""
    import json

    from experiments.scale.material import load_ages

    first, second = tmp_path / "h8.jsonl", tmp_path / "score.jsonl"
    first.write_text("".join(json.dumps({"age": a, "game": "tile:8"}) + "\n" for a in (4, 6, 8, 10, 12)))
    second.write_text(json.dumps({"age": 8, "game": "score"}) + "\n" + '{"age": 10, "ga')
    ages = load_ages(first, second)
    assert {a: r["game"] for a, r in ages.items()} == {4: "tile:8", 6: "tile:8", 8: "score"}
