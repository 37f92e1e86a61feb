"""Format v2's codes against slow pure-Python references: board ranks, Elias-Fano sets, value codes, bit fields."""

from __future__ import annotations

import itertools

import numba
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from env2048 import board as B
from solver import bits
from solver.bits import pack_fields, popcount64, trailing_zeros64, unpack_fields
from solver.format import elias_fano, quantise, ranking
from solver.format.v2 import encode_boards
from solver.forward import run_forward
from solver.spec import SolveSpec

import naive


def slow_boards_of_age(rows: int, cols: int, age: int) -> list[int]:
    """Every packed ``rows x cols`` board of tile sum ``age`` whose last cell holds no more than any other corner,
    sorted, by brute force over all boards."""
    cells = rows * cols
    corners = {0, cols - 1, cells - cols} - {cells - 1}
    found = []
    top = min(15, age.bit_length() - 1)  # larger tiles exceed the age
    for exps in itertools.product(range(top + 1), repeat=cells):
        if sum(1 << e for e in exps if e) == age and all(exps[-1] <= exps[c] for c in corners):
            found.append(sum(e << (4 * k) for k, e in enumerate(exps)))
    return sorted(found)


@pytest.mark.parametrize(("rows", "cols"), [(2, 2), (2, 3), (3, 3), (4, 3)])
def test_the_orbit_of_the_last_cell_is_the_other_corners(rows, cols):
    cells = rows * cols
    want = {0, cols - 1, cells - cols} - {cells - 1}
    assert ranking.corner_orbit(rows, cols) == sum(1 << c for c in want)


@pytest.mark.parametrize(
    ("rows", "cols", "age"),
    [(2, 2, 4), (2, 2, 20), (2, 2, 64), (2, 2, 1030), (2, 3, 12), (2, 3, 26), (3, 2, 26), (3, 3, 14)],
)
def test_ranks_are_positions_among_the_boards_of_the_age(rows, cols, age):
    everyone = slow_boards_of_age(rows, cols, age)
    cells = rows * cols
    assert ranking.boards_of_age(rows, cols, age) == len(everyone)
    P = ranking.prefix_tables(rows, cols, age)
    ids = np.array(everyone, np.uint64)
    positions = np.arange(len(everyone), dtype=np.uint64)
    np.testing.assert_array_equal(ranking.ranks_of(ids, age // 2, P, cells), positions)
    np.testing.assert_array_equal(ranking.boards_of_ranks(positions, age // 2, P, cells), ids)
    # unranking reuses the previous board's cells where it can: every other rank, and in any order, must not fool it
    some = np.random.default_rng(age).permutation(positions[::2])
    np.testing.assert_array_equal(ranking.boards_of_ranks(some, age // 2, P, cells), ids[some.astype(np.int64)])


@pytest.mark.parametrize(("rows", "cols"), [(2, 2), (2, 3), (3, 3), (4, 3), (4, 4)])
def test_every_canonical_board_has_a_rank(rows, cols):
    """Canonical boards satisfy the corner condition: random canonical boards rank below the universe and back."""
    rng = np.random.default_rng(rows * 10 + cols)
    grids = rng.integers(0, 9, size=(300, rows, cols)) * (rng.random((300, rows, cols)) < 0.7)
    ids = np.unique(B.canonical(B.pack(grids), rows, cols))
    for b in ids:
        age = int(B.age(b, rows, cols))
        P = ranking.prefix_tables(rows, cols, age)
        r = ranking.ranks_of(np.array([b]), age // 2, P, rows * cols)
        assert r[0] < ranking.boards_of_age(rows, cols, age)
        assert ranking.boards_of_ranks(r, age // 2, P, rows * cols)[0] == b


@given(st.lists(st.integers(0, 11), min_size=12, max_size=12))
def test_rank_round_trip_on_4x3_boards(exps):
    b = B.canonical(np.uint64(sum(e << (4 * k) for k, e in enumerate(exps))), 4, 3)
    age = sum(1 << e for e in exps if e)
    P = ranking.prefix_tables(4, 3, age)
    r = ranking.ranks_of(np.array([b], np.uint64), age // 2, P, 12)
    assert r[0] < ranking.boards_of_age(4, 3, age)
    assert ranking.boards_of_ranks(r, age // 2, P, 12)[0] == b


def test_4x3_universes_are_tiny_next_to_packed_ids():
    """Boards of one age (last cell no larger than the other corners): about 1.7e7 at age 100 on 4x3, against
    4.8e7 of any layout (about 5e7) and 2^48 packed IDs."""
    assert 1e7 < ranking.boards_of_age(4, 3, 100) < 2e7


sorted_sets = st.one_of(
    st.just([]),
    st.lists(st.integers(0, 2**64 - 2), min_size=1, max_size=1),
    st.builds(lambda start, n: list(range(start, start + n)), st.integers(0, 1000), st.integers(1, 300)),  # dense
    st.lists(st.integers(2**64 - 5000, 2**64 - 2), max_size=200, unique=True),  # near 2^64
    st.lists(st.integers(0, 2**40), max_size=300, unique=True),
)


@given(sorted_sets, st.lists(st.integers(0, 2**64 - 2), max_size=30))
def test_elias_fano_round_trip_and_queries_match_searchsorted(values, probes):
    ranks = np.array(sorted(set(values)), np.uint64)
    universe = 2**64 - 1
    upper, lower, L = elias_fano.ef_encode(ranks, universe)
    np.testing.assert_array_equal(elias_fano.ef_decode(upper, lower, ranks.size, L), ranks)
    n_bits = elias_fano.upper_bits_for(ranks.size, universe, L)
    samples = elias_fano.zero_samples(upper, n_bits)
    queries = np.array(list(ranks[:50]) + probes + [int(r) + 1 for r in ranks[:20] if r < 2**64 - 2], np.uint64)
    got = elias_fano.ef_find_many(upper, samples, lower, ranks.size, n_bits, L, queries)
    pos = np.searchsorted(ranks, queries)
    padded = np.append(ranks, np.uint64(2**64 - 1))  # never a member: the universe ends below it
    want = np.where((pos < ranks.size) & (padded[pos] == queries), pos, -1)
    np.testing.assert_array_equal(got, want)


def slow_ef_encode(ranks: np.ndarray, universe: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Elias-Fano by its definition, one element at a time: low bits packed, a 1 at ``high + i`` for element i."""
    n = len(ranks)
    L = max(0, (universe // n).bit_length() - 1) if n and universe > n else 0
    lower, upper = 0, 0
    for i, r in enumerate(int(r) for r in ranks):
        lower |= (r & ((1 << L) - 1)) << (i * L)
        upper |= 1 << ((r >> L) + i)

    def words(value: int, bits: int) -> np.ndarray:  # spare word included
        return np.array([(value >> (64 * w)) & (2**64 - 1) for w in range((bits + 63) // 64 + 1)], np.uint64)

    return words(upper, elias_fano.upper_bits_for(n, universe, L)), words(lower, n * L), L


@pytest.mark.parametrize(("words_per_run", "per_block"), [(1, 64), (3, 192)])
def test_elias_fano_codes_in_parallel_blocks(monkeypatch, words_per_run, per_block):
    """Encoded by blocks of elements whose upper bits share words at their edges, decoded by runs of upper words,
    some runs holding no element (a long gap), some many: the words of the definition, and the elements back."""
    monkeypatch.setattr(elias_fano, "DECODE_WORDS", words_per_run)
    monkeypatch.setattr(elias_fano, "ENCODE_ELEMENTS", per_block)
    rng = np.random.default_rng(words_per_run)
    dense = np.arange(10_000, 13_000, dtype=np.uint64)
    sparse = rng.choice(np.arange(1 << 20, 1 << 24, dtype=np.uint64), 500, replace=False)
    for ranks in (np.sort(np.concatenate([dense, sparse])), dense, np.sort(sparse)):
        upper, lower, L = elias_fano.ef_encode(ranks, 1 << 24)
        assert -(-upper.size // words_per_run) >= 3 and -(-ranks.size // per_block) >= 3
        want_upper, want_lower, want_L = slow_ef_encode(ranks, 1 << 24)
        assert L == want_L
        np.testing.assert_array_equal(upper, want_upper)
        np.testing.assert_array_equal(lower, want_lower)
        np.testing.assert_array_equal(elias_fano.ef_decode(upper, lower, ranks.size, L), ranks)


@given(st.integers(1, 5000), st.integers(1, 40), st.randoms(use_true_random=False))
def test_elias_fano_in_small_universes(universe, n, rnd):
    ranks = np.array(sorted(rnd.sample(range(universe), min(n, universe))), np.uint64)
    upper, lower, L = elias_fano.ef_encode(ranks, universe)
    n_bits = elias_fano.upper_bits_for(ranks.size, universe, L)
    samples = elias_fano.zero_samples(upper, n_bits)
    every = np.arange(universe, dtype=np.uint64)
    found = elias_fano.ef_find_many(upper, samples, lower, ranks.size, n_bits, L, every)
    want = np.full(universe, -1)
    want[ranks.astype(np.int64)] = np.arange(ranks.size)
    np.testing.assert_array_equal(found, want)
    assert (upper.size + lower.size) * 64 <= ranks.size * (L + 3) + 4 * 64  # n(L+3) bits + word padding


def test_elias_fano_rejects_unsorted_or_out_of_universe():
    with pytest.raises(ValueError, match="sorted"):
        elias_fano.ef_encode(np.array([3, 2], np.uint64), 10)
    with pytest.raises(ValueError, match="below 10"):
        elias_fano.ef_encode(np.array([3, 10], np.uint64), 10)


@pytest.mark.slow
def test_real_layers_round_trip_and_stay_under_8_bits():
    """2x4 forward layers: coded, decoded back to the same IDs, and every ID found at its position."""
    spec = SolveSpec.parse("2x4")
    total_bits = total = 0

    def on_age(count, states, afterstates):
        nonlocal total_bits, total
        upper, lower, L = encode_boards(count.age, afterstates, spec)
        universe = ranking.boards_of_age(spec.rows, spec.cols, count.age)
        ranks = elias_fano.ef_decode(upper, lower, afterstates.size, L)
        P = ranking.prefix_tables(spec.rows, spec.cols, count.age)
        np.testing.assert_array_equal(ranking.boards_of_ranks(ranks, count.age // 2, P, spec.cells), afterstates)
        n_bits = elias_fano.upper_bits_for(afterstates.size, universe, L)
        found = elias_fano.ef_find_many(
            upper, elias_fano.zero_samples(upper, n_bits), lower, ranks.size, n_bits, L, ranks
        )
        np.testing.assert_array_equal(found, np.arange(ranks.size))
        total_bits += 64 * (upper.size + lower.size)
        total += afterstates.size

    run_forward(spec, on_age=on_age, progress=False)
    assert total > 100_000 and total_bits / total < 8


@given(st.lists(st.one_of(st.just(0.0), st.floats(1e-6, 1e7)), max_size=200))
def test_float_code_relative_error_bound(values):
    v = np.array(values, np.float64)
    words, width, base = quantise.encode_values(v, quantise.FLOAT_CODE)
    back = quantise.decode_values(words, v.size, width, quantise.FLOAT_CODE, base)
    rel, _ = quantise.value_error_bound(quantise.FLOAT_CODE)
    assert rel <= 1e-6
    np.testing.assert_array_equal(back == 0, v == 0)
    assert np.all(np.abs(back - v) <= rel * v)
    order = np.argsort(v, kind="stable")
    assert np.all(np.diff(back[order]) >= 0)  # the code keeps the order of values


@given(st.lists(st.floats(0.0, 1.0), max_size=200))
def test_fixed_code_absolute_error_bound(values):
    v = np.array(values, np.float64)
    words, width, base = quantise.encode_values(v, quantise.FIXED_CODE)
    back = quantise.decode_values(words, v.size, width, quantise.FIXED_CODE, base)
    _, absolute = quantise.value_error_bound(quantise.FIXED_CODE)
    assert absolute <= 1e-9
    assert np.all(np.abs(back - v) <= absolute)
    assert np.all(back[v == 0] == 0) and np.all(back[v == 1] == 1)


@pytest.mark.parametrize(
    ("values", "code", "message"),
    [
        ([-1.0], quantise.FLOAT_CODE, "non-negative"),
        ([np.nan], quantise.FLOAT_CODE, "non-negative"),
        ([1.5], quantise.FIXED_CODE, r"\[0, 1\]"),
        ([0.5], "zip", "unknown value code"),
    ],
)
def test_bad_values_are_refused(values, code, message):
    with pytest.raises(ValueError, match=message):
        quantise.encode_values(np.array(values), code)


@given(st.lists(st.integers(0, 2**64 - 1), max_size=100), st.integers(0, 64))
def test_bit_fields_round_trip(values, width):
    v = np.array([x % (1 << width) if width < 64 else x for x in values], np.uint64)
    words = pack_fields(v, width)
    assert words.size == bits.words_for(v.size * width)
    np.testing.assert_array_equal(unpack_fields(words, v.size, width), v)


@numba.njit
def _popcount_and_trailing_zeros(v):
    """The two bit kernels as numba compiles them inside a kernel (compiled once, for every example below)."""
    return popcount64(v), trailing_zeros64(v)


@given(st.integers(0, 2**64 - 1))
def test_popcount_and_trailing_zeros(x):
    pop, tz = _popcount_and_trailing_zeros(np.uint64(x))
    assert pop == bin(x).count("1")
    assert tz == (64 if x == 0 else (x & -x).bit_length() - 1)


def test_rank_order_is_packed_id_order():
    """The last cell (row r-1, col c-1) is the most significant: ranks sort like the IDs."""
    everyone = slow_boards_of_age(2, 3, 12)
    keys = [tuple(reversed([v for row in naive.unpack(b, 2, 3) for v in row])) for b in everyone]
    assert keys == sorted(keys)


def test_elias_fano_find_refuses_ranks_above_2_to_the_63_in_an_empty_set():
    """A rank of 2**63 or more once became a negative high part and sent the select past the bitvector (a
    segfault the random test above met now and then)."""
    ranks = np.array([], np.uint64)
    upper, lower, low_bits = elias_fano.ef_encode(ranks, 2**64 - 1)
    n_bits = elias_fano.upper_bits_for(0, 2**64 - 1, low_bits)
    queries = np.array([2**64 - 2, 2**63, 5], np.uint64)
    got = elias_fano.ef_find_many(upper, elias_fano.zero_samples(upper, n_bits), lower, 0, n_bits, low_bits, queries)
    assert got.tolist() == [-1, -1, -1]


def test_the_format_modules_old_paths_still_work_with_a_warning():
    """solver.store, solver.table_v2, solver.common and solver.codec moved into solver.format: a name read from
    the old path is the new one, with a DeprecationWarning that names where it went."""
    import importlib

    from solver import format as fmt
    from solver.format import ranking, v2

    for old, name, new in (
        ("solver.store", "Table", fmt.Table),
        ("solver.table_v2", "TableWriterV2", v2.TableWriterV2),
        ("solver.common", "TableError", fmt.TableError),
        ("solver.codec", "ranks_of", ranking.ranks_of),
    ):
        module = importlib.import_module(old)
        with pytest.warns(DeprecationWarning, match=rf"{old}\.{name} moved to solver\.format"):
            assert getattr(module, name) is new
    with pytest.raises(AttributeError, match="module 'solver.codec' has no attribute 'nope'"):
        _ = importlib.import_module("solver.codec").nope
