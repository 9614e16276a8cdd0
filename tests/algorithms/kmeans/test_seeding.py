"""Chunked D^2 sampling and k-means++ seeding against the slow references.

Bit-exact properties (Hypothesis): the pick kernel returns the reference's row for the same
uniform; ``seed_from_uniforms`` returns the reference's rows, labels and D^2 bit for bit;
``kmeans_plusplus`` reproduces the reference on ``default_rng(seed).random(k)``.

Statistical properties (seeded chi-square against ``exact_kmeanspp_distribution``): each test
compares one empirical distribution of ordered center sequences with the exact one at
``ALPHA = 1e-3``. A correct implementation fails one such test with probability <= 1e-3 over the
choice of seeds; this module runs 10 of them, so the family-wise false-alarm rate is <= 1e-2.
The seeds are fixed, so the outcome is deterministic.
"""
import importlib

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import fedcore
from fedcore import _config
from fedcore.kernels.parallel import single_threaded_kernels
from tests.reference.kmeans_reference import (chi_square_against_exact, chunk_sums_reference,
                                              exact_grouped_kmeanspp_distribution,
                                              exact_kmeanspp_distribution, kmeanspp_reference,
                                              pick_reference)

CHUNK = _config.CHUNK_SIZE
ALPHA = 1e-3


def _seeding():
    return importlib.import_module("fedcore.kernels.kmeans.seeding")


def _kmeans_plusplus_kernel():
    return importlib.import_module("fedcore.algorithms.kmeans.seeding").seed_from_uniforms


def _bits(a):
    """View a float64 array as integers so that comparisons are bit for bit."""
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def _n_chunks(n):
    return max(1, -(-n // CHUNK))


# ------------------------------------------------------------------------------------------
# Strategies
# ------------------------------------------------------------------------------------------

# Uniforms in [0, 1), with the edges and exact chunk/row boundaries over-represented.
uniforms = st.one_of(
    st.floats(0.0, 1.0, exclude_max=True),
    st.sampled_from([0.0, 5e-324, 1e-300, 1e-17, 0.25, 0.5, 0.75, 1.0 - 1e-16,
                     float(np.nextafter(1.0, 0.0))]),
)

# Non-negative values: zeros, exact small integers (boundary ties), subnormals, wide magnitudes.
value_elements = st.one_of(
    st.just(0.0),
    st.sampled_from([1.0, 2.0, 0.5, 3.0]),
    st.floats(0.0, 1e100),
    st.floats(0.0, 1e-305),
)


@st.composite
def short_values(draw):
    v = draw(hnp.arrays(np.float64, st.integers(1, 40), elements=value_elements))
    assume(v.sum() > 0.0)
    return v


@st.composite
def long_values(draw):
    """Arrays spanning 1-3 chunks plus a tail, with whole zero chunks and zero runs."""
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.sampled_from([CHUNK, CHUNK + 1, 2 * CHUNK - 1, 2 * CHUNK + 37, 3 * CHUNK + 5]))
    rng = np.random.default_rng(seed)
    v = rng.random(n) * (rng.random(n) < draw(st.sampled_from([0.01, 0.5, 1.0])))
    for c in range(_n_chunks(n)):
        if draw(st.booleans()):
            v[c * CHUNK:(c + 1) * CHUNK] = 0.0
    if not v.sum() > 0.0:
        v[draw(st.integers(0, n - 1))] = 1.0
    return v


def _kernel_pick(values, u):
    seeding = _seeding()
    values = np.ascontiguousarray(values, dtype=np.float64)
    sums = np.full(_n_chunks(values.shape[0]), np.nan)
    seeding.chunk_sums(values, sums)
    return sums, int(seeding.pick_index(values, sums, u))


# ------------------------------------------------------------------------------------------
# The pick kernel
# ------------------------------------------------------------------------------------------

@given(values=st.one_of(short_values(), long_values()), u=uniforms)
def test_pick_index_equals_reference(values, u):
    sums, row = _kernel_pick(values, u)
    np.testing.assert_array_equal(_bits(sums), _bits(chunk_sums_reference(values, CHUNK)))
    expected = pick_reference(values, u, CHUNK)
    assert row == expected
    assert values[row] > 0.0


@settings(max_examples=25)
@given(values=short_values(), u=uniforms)
def test_pick_index_py_func_equals_reference(values, u):
    # The compiled draw's Python source (pick_index calls it with use_b False).
    seeding = _seeding()
    sums = np.array(chunk_sums_reference(values, CHUNK))
    row = seeding._pick.py_func(values, values, False, sums, u)
    assert int(row) == pick_reference(values, u, CHUNK)


def test_pick_index_boundaries_by_hand():
    # Ones: the running sum passes u * n strictly after row floor(u * n).
    v = np.ones(4)
    for u, expected in [(0.0, 0), (0.24, 0), (0.25, 1), (0.5, 2), (0.75, 3), (0.999, 3)]:
        assert _kernel_pick(v, u)[1] == expected == pick_reference(v, u, CHUNK)
    # Zeros are never picked; the largest u < 1 lands on the last positive row.
    v = np.array([0.0, 2.0, 0.0, 0.0, 1.0, 0.0])
    assert _kernel_pick(v, 0.0)[1] == 1
    assert _kernel_pick(v, float(np.nextafter(1.0, 0.0)))[1] == 4
    # A single positive value deep in the third chunk.
    v = np.zeros(2 * CHUNK + 10)
    v[2 * CHUNK + 3] = 1e-300
    for u in (0.0, 0.5, float(np.nextafter(1.0, 0.0))):
        assert _kernel_pick(v, u)[1] == 2 * CHUNK + 3
    # Subnormal total: u * total rounds up to total, no chunk passes, the last positive chunk is
    # used with t_in = target - total = 0, so its first positive row is returned (contract rule).
    top = float(np.nextafter(1.0, 0.0))
    v = np.zeros(CHUNK + 4)
    v[[3, CHUNK + 1, CHUNK + 2]] = 5e-324
    assert _kernel_pick(v, top)[1] == CHUNK + 1 == pick_reference(v, top, CHUNK)


def test_pick_index_frequencies_follow_values():
    # Sweeping u over a fine grid visits each row in proportion to its value.
    v = np.array([1.0, 0.0, 3.0, 4.0, 0.0, 2.0])
    grid = (np.arange(10000) + 0.5) / 10000
    counts = np.bincount([_kernel_pick(v, float(u))[1] for u in grid], minlength=6)
    np.testing.assert_array_equal(counts, [1000, 0, 3000, 4000, 0, 2000])


# ------------------------------------------------------------------------------------------
# seed_from_uniforms (kernel level) against the reference, bit for bit
# ------------------------------------------------------------------------------------------

coordinate = st.one_of(st.sampled_from([0.0, 1.0, -1.0, 0.5, 3.0]),
                       st.floats(-1e3, 1e3, allow_subnormal=False))


@st.composite
def seeding_problems(draw):
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    n = draw(st.integers(1, 30))
    d = draw(st.integers(1, 12))  # (from 8 features d2_update takes eight rows in vector lanes)
    elements = st.floats(-1e3, 1e3, width=32, allow_subnormal=False) if dtype is np.float32 \
        else coordinate
    X = draw(hnp.arrays(dtype, (n, d), elements=st.one_of(
        st.sampled_from([0.0, 1.0, -1.0, 0.5, 3.0]), elements)))
    if draw(st.booleans()):  # force duplicates
        X[draw(st.integers(0, n - 1))] = X[0]
    if draw(st.booleans()):
        w = draw(hnp.arrays(np.float64, n, elements=st.one_of(
            st.sampled_from([0.0, 1.0, 2.0, 0.5]), st.floats(0.0, 10.0, allow_subnormal=False))))
    else:
        w = np.ones(n)
    n_pos = int(np.count_nonzero(w))
    assume(n_pos >= 1)
    k = draw(st.integers(1, min(n_pos, 6)))
    u = np.array(draw(st.lists(uniforms, min_size=k, max_size=k)), dtype=np.float64)
    return X, w, u


def _check_against_reference(X, w, u):
    rows, labels, mind = _kmeans_plusplus_kernel()(np.ascontiguousarray(X),
                                                   np.ascontiguousarray(w, dtype=np.float64), u)
    ref_rows, ref_labels, ref_mind = kmeanspp_reference(X, w, u, CHUNK)
    np.testing.assert_array_equal(np.asarray(rows), ref_rows)
    np.testing.assert_array_equal(np.asarray(labels), ref_labels)
    np.testing.assert_array_equal(_bits(mind), _bits(ref_mind))
    assert np.asarray(rows).dtype == np.int64 and np.asarray(labels).dtype == np.int64
    assert len(set(np.asarray(rows).tolist())) == len(rows)  # a row is never chosen twice
    assert (w[np.asarray(rows)] > 0).all()


@given(problem=seeding_problems())
def test_kmeans_plusplus_kernel_equals_reference(problem):
    _check_against_reference(*problem)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kmeans_plusplus_kernel_all_identical_points(dtype):
    # Every D^2 is 0 after the first pick: the degenerate rule draws by weight among unchosen rows.
    X = np.full((7, 3), 2.5, dtype=dtype)
    for seed in range(20):
        u = np.random.default_rng(seed).random(5)
        _check_against_reference(X, np.ones(7), u)
        _check_against_reference(X, np.array([0.0, 1.0, 2.0, 0.0, 1.0, 3.0, 1.0]), u)


def test_kmeans_plusplus_kernel_several_chunks():
    # Spans three chunks; few distinct points so the degenerate rule also runs across chunks.
    rng = np.random.default_rng(7)
    n = 2 * CHUNK + 123
    X = rng.normal(size=(n, 3)).astype(np.float32)
    w = rng.integers(0, 3, size=n).astype(np.float64)
    _check_against_reference(X, w, rng.random(5))
    distinct = rng.normal(size=(3, 2))
    Xd = distinct[rng.integers(0, 3, size=n)]
    _check_against_reference(Xd, np.ones(n), rng.random(6))
    # Rows of 9 and 19 features: d2_update takes eight rows at a time in vector lanes, the rest
    # four at a time.
    for d, dtype in ((9, np.float32), (19, np.float64)):
        _check_against_reference(rng.normal(size=(n, d)).astype(dtype), w, rng.random(7))


def test_seeding_gives_its_kernels_read_only_rows():
    # Every seeding entry point hands its kernels a read-only view of X, as Lloyd does: a
    # writeable X compiles only read-only specialisations (shared with a read-only X, and the
    # helpers with Lloyd's), with the same draws; X comes back as writeable as it went in.
    # Fortran-ordered float32 rows: a type no other test gives these kernels.
    from fedcore.algorithms.kmeans.seeding import _kmeans_plusplus_greedy, seed_lazy
    seeding = _seeding()
    rng = np.random.default_rng(6)
    X = np.asfortranarray(rng.normal(size=(300, 12)).astype(np.float32))
    frozen = X.copy(order="F")
    frozen.flags.writeable = False
    kernels = (seeding.d2_update, seeding.greedy_pass)

    def signatures():
        return {sig for kernel in kernels for sig in
                kernel.serial.signatures + kernel.parallel.signatures}

    def seed(rows):
        lazy = seed_lazy(rows, np.ones(300), np.random.default_rng(1), 5)
        u = np.random.default_rng(2).random((4, 3))
        return lazy + _kmeans_plusplus_greedy(rows, np.ones(300), 0.3, u)

    before = signatures()
    first = seed(X)
    added = signatures() - before
    assert added and not any(sig[0].mutable for sig in added), added
    second = seed(frozen)
    assert signatures() == before | added
    for a, b in zip(first, second):
        np.testing.assert_array_equal(a, b)
    assert X.flags.writeable and not frozen.flags.writeable


# ------------------------------------------------------------------------------------------
# Public kmeans_plusplus
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64])
@pytest.mark.parametrize("weighted", [False, True])
def test_kmeans_plusplus_labels_and_distances_equal_reference_for_its_centers(dtype, weighted):
    """The public seeding draws by rejection from stale D^2 bounds (a data-dependent number of
    uniforms), so its rows are checked in distribution below; for the rows it picks, every
    label and squared distance equals the bit-exact reference replay of those same rows."""
    from fedcore.algorithms.kmeans.seeding import seed_from_uniforms, seed_lazy
    rng = np.random.default_rng(11)
    X = (rng.normal(size=(60, 3)) * 10).astype(dtype)
    w = rng.random(60) * 3 if weighted else None
    weights = np.ones(60) if w is None else w
    Xc = fedcore._validation.check_array(X)
    for seed in range(5):
        k = 1 + seed
        centers, indices = fedcore.kmeans_plusplus(X, k, sample_weight=w, random_state=seed)
        assert indices.dtype == np.int64 and indices.shape == (k,)
        assert len(set(indices.tolist())) == k and (weights[indices] > 0).all()
        expected_dtype = np.float32 if dtype == np.float32 else np.float64
        assert centers.dtype == expected_dtype and centers.shape == (k, 3)
        np.testing.assert_array_equal(centers, X[indices].astype(expected_dtype))
        rows, labels, mind = seed_lazy(Xc, weights, np.random.default_rng(seed), k)
        np.testing.assert_array_equal(rows, indices)
        ref_rows, ref_labels, ref_mind = seed_from_uniforms(Xc, weights, np.empty(0), prefix=rows)
        np.testing.assert_array_equal(ref_rows, rows)
        np.testing.assert_array_equal(labels, ref_labels)
        np.testing.assert_array_equal(mind, ref_mind)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("d", [5, 37])
@pytest.mark.parametrize("layout", ["C", "strided"])
def test_refresh_of_many_centers_equals_their_updates_one_by_one(dtype, d, layout):
    """seed_lazy given a prefix applies all its centers in one pass (d2_refresh: blocks of rows
    transposed by transpose_rows, eight at a time where X is C-contiguous); its labels and D^2
    equal, bit for bit, the reference replay that adds them one at a time (d2_update), across
    chunks and a short last block."""
    from fedcore.algorithms.kmeans.seeding import seed_from_uniforms, seed_lazy
    rng = np.random.default_rng(d)
    n = 2 * CHUNK + 77
    data = ((rng.normal(size=(8, 2 * d)) * 4)[rng.integers(0, 8, size=n)]
            + rng.normal(size=(n, 2 * d))).astype(dtype)
    X = np.ascontiguousarray(data[:, :d]) if layout == "C" else data[:, ::2]
    w = rng.random(n) * 2
    prefix = rng.choice(n, size=20, replace=False)
    rows, labels, mind = seed_lazy(X, w, np.random.default_rng(0), 20, prefix=prefix)
    ref_rows, ref_labels, ref_mind = seed_from_uniforms(X, w, np.empty(0), prefix=prefix)
    np.testing.assert_array_equal(rows, prefix)
    np.testing.assert_array_equal(labels, ref_labels)
    np.testing.assert_array_equal(mind.view(np.int64), ref_mind.view(np.int64))


def test_kmeans_plusplus_same_generator_state_same_centers():
    X = np.random.default_rng(3).normal(size=(40, 2))
    _, a = fedcore.kmeans_plusplus(X, 4, random_state=np.random.default_rng(5))
    _, b = fedcore.kmeans_plusplus(X, 4, random_state=5)
    np.testing.assert_array_equal(a, b)
    gen = np.random.default_rng(5)
    fedcore.kmeans_plusplus(X, 4, random_state=gen)
    assert gen.random() != np.random.default_rng(5).random()  # the Generator was advanced


@pytest.mark.parametrize("k", [1, 2, 33, 40, 70])
def test_lazy_seeding_without_finish_draws_the_same(k):
    """``finish=False`` (the public seeding, which needs the rows only) skips the passes that
    would only apply centers after the last draw: same rows, same uniforms taken."""
    from fedcore.algorithms.kmeans.seeding import seed_lazy
    rng = np.random.default_rng(4)
    X = (rng.normal(size=(8, 3)) * 5)[rng.integers(0, 8, size=3000)] + rng.normal(size=(3000, 3))
    w = rng.random(3000)
    for seed in range(3):
        full, short = np.random.default_rng(seed), np.random.default_rng(seed)
        rows, labels, mind = seed_lazy(X, w, full, k)
        rows2, labels2, mind2 = seed_lazy(X, w, short, k, finish=False)
        np.testing.assert_array_equal(rows, rows2)
        assert labels2 is None and mind2 is None and labels.shape == mind.shape == (3000,)
        assert full.random() == short.random()


# ------------------------------------------------------------------------------------------
# Exact distribution: the reference itself, then kmeans_plusplus
# ------------------------------------------------------------------------------------------

TINY_CASES = {
    # name: (X, n_clusters, weights)
    "distinct": (np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [3.0, 3.0], [-1.0, 0.5]]), 3, None),
    "duplicates": (np.array([[0.0], [0.0], [1.0], [1.0], [4.0], [0.0]]), 3, None),
    "weighted": (np.array([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [3.0, 1.0], [3.0, 1.5]]), 2,
                 np.array([1.0, 2.0, 0.5, 0.0, 3.0])),
    "degenerate": (np.array([[0.0], [0.0], [0.0], [1.0]]), 3, None),
    "all_identical_weighted": (np.full((4, 2), 0.25), 3, np.array([1.0, 2.0, 3.0, 0.5])),
}


@pytest.mark.parametrize("name", sorted(TINY_CASES))
def test_exact_distribution_sums_to_one(name):
    X, k, w = TINY_CASES[name]
    dist = exact_kmeanspp_distribution(X, k, w)
    assert sum(dist.values()) == 1
    assert all(p > 0 and len(seq) == k == len(set(seq)) for seq, p in dist.items())
    if w is not None:  # zero-weight rows are never chosen
        assert all(w[list(seq)].min() > 0 for seq in dist)


def test_exact_distribution_by_hand():
    # [0], [0], [0], [1] with k = 3: first uniform; after a 0 the 1 is forced, then the degenerate
    # rule picks one of the two remaining zeros; after the 1, any zero and then either other zero.
    from fractions import Fraction
    dist = exact_kmeanspp_distribution(np.array([[0.0], [0.0], [0.0], [1.0]]), 3)
    assert dist[(0, 3, 1)] == Fraction(1, 8)
    assert dist[(3, 2, 0)] == Fraction(1, 24)
    assert len(dist) == 12
    # Two points at squared distance 4 and one at 1 from point 0: D^2 weights 0:1:4 after row 0.
    dist = exact_kmeanspp_distribution(np.array([[0.0], [1.0], [2.0]]), 2)
    assert dist[(0, 2)] == Fraction(1, 3) * Fraction(4, 5)
    assert dist[(1, 0)] == Fraction(1, 3) * Fraction(1, 2)


@pytest.mark.parametrize("name", ["distinct", "weighted", "degenerate", "all_identical_weighted"])
def test_reference_seeding_matches_exact_distribution(name):
    # Validates the two references against each other (one chi-square each, alpha = 1e-3).
    X, k, w = TINY_CASES[name]
    exact = exact_kmeanspp_distribution(X, k, w)
    counts = {}
    for seed in range(3000):
        rows, _, _ = kmeanspp_reference(X, w, np.random.default_rng(seed).random(k), CHUNK)
        counts[tuple(rows.tolist())] = counts.get(tuple(rows.tolist()), 0) + 1
    impossible = {key: c for key, c in counts.items() if key not in exact}
    assert not impossible, f"outcomes of exact probability 0: {impossible}"
    p, bins = chi_square_against_exact(counts, exact)
    assert bins >= 2
    assert p > ALPHA, f"{name}: p = {p:.2e} with {bins} bins"


@pytest.mark.parametrize("name", sorted(TINY_CASES))
def test_kmeans_plusplus_matches_exact_distribution(name):
    # One chi-square per case (alpha = 1e-3); seeds 10_000.. are disjoint from other tests'.
    X, k, w = TINY_CASES[name]
    exact = exact_kmeanspp_distribution(X, k, w)
    counts = {}
    for seed in range(10_000, 14_000):
        _, idx = fedcore.kmeans_plusplus(X, k, sample_weight=w, random_state=seed)
        counts[tuple(idx.tolist())] = counts.get(tuple(idx.tolist()), 0) + 1
    impossible = {key: c for key, c in counts.items() if key not in exact}
    assert not impossible, f"outcomes of exact probability 0: {impossible}"
    p, bins = chi_square_against_exact(counts, exact)
    assert bins >= 2
    assert p > ALPHA, f"{name}: p = {p:.2e} with {bins} bins"


# ------------------------------------------------------------------------------------------
# Several chunks: many rows at few locations, exact distribution of the location sequence
# ------------------------------------------------------------------------------------------

def _grouped_data(locations, counts, seed):
    """Rows = counts[g] copies of locations[g], shuffled; returns (X, location of each row)."""
    location_of = np.repeat(np.arange(len(counts)), counts)
    np.random.default_rng(seed).shuffle(location_of)
    return np.asarray(locations, dtype=np.float64)[location_of], location_of


@pytest.mark.parametrize("locations, counts, k", [
    ([0.0, 1.0, 3.0], [2, 2, 1], 4),
    ([[0.0, 0.0], [1.0, 2.0]], [3, 2], 4),
    ([0.0, 1.0, 3.0, 7.0], [2, 1, 1, 2], 5),
])
def test_grouped_exact_distribution_equals_row_level(locations, counts, k):
    # Cross-checks the two exact references: summing the row-level distribution over rows of the
    # same location gives the grouped one, exactly.
    X, location_of = _grouped_data(locations, counts, 0)
    by_location = {}
    for seq, p in exact_kmeanspp_distribution(X.reshape(len(X), -1), k).items():
        key = tuple(int(location_of[r]) for r in seq)
        by_location[key] = by_location.get(key, 0) + p
    assert by_location == exact_grouped_kmeanspp_distribution(locations, counts, k)


SEVERAL_CHUNKS = ([[0.0, 0.0], [1.0, 0.0], [0.0, 3.0], [7.0, 7.0]],
                  [CHUNK + 900, CHUNK // 2 + 20, 150, 3], 5)


def test_kmeans_plusplus_several_chunks_matches_exact_distribution():
    # Rows span several chunks; k = 5 > 4 locations, so the degenerate rule runs too.
    # One chi-square, alpha = 1e-3.
    locations, counts, k = SEVERAL_CHUNKS
    X, location_of = _grouped_data(locations, counts, 1)
    assert X.shape[0] > CHUNK
    exact = exact_grouped_kmeanspp_distribution(locations, counts, k)
    tallies = {}
    with single_threaded_kernels():
        for seed in range(20_000, 21_500):
            _, idx = fedcore.kmeans_plusplus(X, k, random_state=seed)
            assert len(set(idx.tolist())) == k
            key = tuple(int(location_of[i]) for i in idx)
            tallies[key] = tallies.get(key, 0) + 1
    impossible = {key: c for key, c in tallies.items() if key not in exact}
    assert not impossible, f"outcomes of exact probability 0: {impossible}"
    p, bins = chi_square_against_exact(tallies, exact)
    assert bins >= 2
    assert p > ALPHA, f"p = {p:.2e} with {bins} bins"
