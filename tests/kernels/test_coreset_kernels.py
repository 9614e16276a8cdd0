"""Coreset kernels against the slow references of ``tests/reference/coreset_reference.py``.

Property tests (Hypothesis) compare each kernel, and its ``py_func``, with the reference:
VKMC sensitivities (Alg. 3 line 12, to 1e-12 relative: cluster costs are chunk-merged sums), the
sorted-uniform sampler (bit for bit: the same row as ``pick_index`` / ``pick_reference`` for every
uniform), the Gram and projected-norm kernels behind VRLR leverages, and one SAGA epoch.
The sampler's frequencies are also checked against the score distribution by a seeded chi-square
at ALPHA = 1e-3 (one test: false-alarm rate 1e-3; the seed is fixed, so the outcome is fixed).
"""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from fedcore import _config
from fedcore.algorithms.vfl.coreset import _sample_rows
from fedcore.kernels import coreset as K
from fedcore.kernels.kmeans.distances import assign_nearest
from fedcore.kernels.kmeans.seeding import chunk_sums, n_chunks, pick_index
from tests.reference.coreset_reference import (sample_with_replacement_reference,
                                               saga_epoch_reference, vkmc_sensitivities_reference)
from tests.reference.kmeans_reference import chi_square_against_exact

CHUNK = _config.CHUNK_SIZE
ALPHA = 1e-3


def _vkmc_kernel(X, centers, alpha, use_py=False):
    n, k = X.shape[0], centers.shape[0]
    labels = np.empty(n, dtype=np.int64)
    dist = np.empty(n)
    assign_nearest(X, np.ascontiguousarray(centers.T), labels, dist)
    costs, sizes, out = np.empty(k), np.empty(k, dtype=np.int64), np.empty(n)
    sums = K.cluster_cost_sums.py_func if use_py else K.cluster_cost_sums
    sens = K.vkmc_sensitivities.py_func if use_py else K.vkmc_sensitivities
    total = sums(labels, dist, costs, sizes)
    sens(labels, dist, costs, sizes, total, alpha, out)
    return out, costs, sizes, total


@st.composite
def party_blocks(draw):
    n = draw(st.integers(1, 60))
    d = draw(st.integers(1, 3))
    k = draw(st.integers(1, 5))
    # Small integer grids make ties, duplicate rows, zero costs and empty clusters common.
    X = draw(hnp.arrays(np.float64, (n, d), elements=st.integers(-3, 3).map(float)))
    centers = draw(hnp.arrays(np.float64, (k, d), elements=st.integers(-3, 3).map(float)))
    alpha = draw(st.sampled_from([0.25, 1.0, 3.0]))
    return X, centers, alpha


@given(party_blocks())
def test_vkmc_sensitivities_match_reference(case):
    X, centers, alpha = case
    expected = np.array(vkmc_sensitivities_reference(X, centers, alpha))
    got, costs, sizes, total = _vkmc_kernel(X, centers, alpha)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0)
    py, _, _, _ = _vkmc_kernel(X, centers, alpha, use_py=True)
    np.testing.assert_array_equal(py, got)
    # Line 12 summed over rows: alpha + alpha + 2 alpha k' (k' non-empty clusters), or 2 alpha k'.
    k_used = int(np.count_nonzero(sizes))
    assert sizes.sum() == X.shape[0]
    expected_total = 2 * alpha * k_used + (2 * alpha if total > 0 else 0.0)
    assert np.isclose(got.sum(), expected_total, rtol=1e-9)


def test_vkmc_sensitivities_chunked_large():
    """Several chunks, against the reference on a block larger than ``CHUNK_SIZE``."""
    rng = np.random.default_rng(5)
    X = rng.random((2 * CHUNK + 37, 2))
    centers = X[:4].copy()
    got, _, _, _ = _vkmc_kernel(X, centers, 1.0)
    expected = np.array(vkmc_sensitivities_reference(X, centers, 1.0))
    np.testing.assert_allclose(got, expected, rtol=1e-11)


# Zeros, exact small integers (boundary ties), wide magnitudes and subnormals (whose totals reach
# pick_index's rounding fallbacks).
value_elements = st.one_of(st.just(0.0), st.integers(1, 4).map(float),
                           st.floats(1e-6, 1e6, allow_subnormal=False),
                           st.sampled_from([5e-324, 1e-320, 2.5e-310]))


@st.composite
def values_and_uniforms(draw):
    n = draw(st.integers(1, 3 * CHUNK // 1000 + 40))
    values = draw(hnp.arrays(np.float64, n, elements=value_elements))
    if not values.sum() > 0:
        values[draw(st.integers(0, n - 1))] = 1.0
    us = draw(st.lists(st.one_of(st.floats(0.0, 1.0, exclude_max=True),
                                 st.sampled_from([0.0, 0.5, float(np.nextafter(1.0, 0.0))])),
                       min_size=0, max_size=30))
    return values, np.array(us, dtype=np.float64)


@given(values_and_uniforms())
def test_sampler_matches_pick_reference(case):
    values, us = case
    got = _sample_rows(values, us)
    expected = sample_with_replacement_reference(values, us, CHUNK)
    assert got.tolist() == expected
    sums = np.empty(n_chunks(values.shape[0]))
    chunk_sums(values, sums)
    assert got.tolist() == [pick_index(values, sums, float(u)) for u in us]
    if us.size:
        srt = np.sort(us)
        py_out = np.empty(us.size, dtype=np.int64)
        K.sample_sorted.py_func(values, sums, srt, py_out)
        assert py_out.tolist() == sample_with_replacement_reference(values, srt, CHUNK)


def test_sampler_many_chunks_matches_pick_index():
    """Uniforms spread over several chunks, with zero runs across chunk boundaries."""
    rng = np.random.default_rng(1)
    values = rng.random(3 * CHUNK + 11)
    values[CHUNK - 5: 2 * CHUNK + 5] = 0.0
    us = rng.random(500)
    sums = np.empty(n_chunks(values.shape[0]))
    chunk_sums(values, sums)
    assert _sample_rows(values, us).tolist() == [pick_index(values, sums, float(u)) for u in us]


def test_sampler_frequencies_chi_square():
    """Draw frequencies match ``values / sum`` (seeded chi-square, false-alarm rate 1e-3)."""
    rng = np.random.default_rng(2024)
    values = np.array([0.0, 1.0, 2.0, 0.5, 4.0, 0.0, 3.0, 0.25, 1.5, 2.75])
    draws = _sample_rows(values, rng.random(20000))
    counts = dict(zip(*np.unique(draws, return_counts=True)))
    exact = {i: v / values.sum() for i, v in enumerate(values) if v > 0}
    p_value, n_bins = chi_square_against_exact({int(k): int(c) for k, c in counts.items()}, exact)
    assert n_bins == 8
    assert p_value > ALPHA


@given(hnp.arrays(np.float64, st.tuples(st.integers(1, 50), st.integers(1, 4)),
                  elements=st.floats(-10, 10, allow_subnormal=False)))
def test_gram_and_projected_norms(A):
    G = np.empty((A.shape[1], A.shape[1]))
    K.gram_matrix(A, G)
    np.testing.assert_allclose(G, A.T @ A, rtol=1e-10, atol=1e-9)
    M = np.arange(1.0, 1.0 + A.shape[1] * 2).reshape(A.shape[1], 2) / 7.0
    out = np.empty(A.shape[0])
    K.projected_sq_norms(A, M, 0.5, out)
    np.testing.assert_allclose(out, ((A @ M) ** 2).sum(axis=1) + 0.5, rtol=1e-10, atol=1e-9)


@settings(max_examples=30)
@given(st.integers(0, 2**32 - 1), st.integers(1, 30),
       st.lists(st.integers(1, 3), min_size=1, max_size=3), st.sampled_from([0.0, 0.05, 2.0]))
def test_saga_epoch_matches_reference(seed, m, widths, l1):
    """Plain SAGA (l1 = 0) and proximal SAGA (the lasso / elastic-net term), bit for bit."""
    rng = np.random.default_rng(seed)
    d = sum(widths)
    X = rng.standard_normal((m, d))
    y = rng.standard_normal(m)
    edges = np.cumsum([0] + widths).astype(np.int64)
    w = rng.random(m) + 0.1
    p = w / w.sum()
    order = rng.integers(0, m, size=2 * m).astype(np.int64)
    theta0, mem0, avg0 = rng.standard_normal(d), rng.standard_normal(m), rng.standard_normal(d)
    expected = saga_epoch_reference(X, y, edges, order, p, theta0, mem0, avg0, 0.01, 0.3, l1)
    for fn in (K.saga_epoch, K.saga_epoch.py_func):
        theta, mem, avg = theta0.copy(), mem0.copy(), avg0.copy()
        fn(X, y, edges, order, p, theta, mem, avg, 0.01, 0.3, l1)
        np.testing.assert_array_equal(theta, expected[0])
        np.testing.assert_array_equal(mem, expected[1])
        np.testing.assert_array_equal(avg, expected[2])
