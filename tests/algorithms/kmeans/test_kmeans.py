"""fedcore.KMeans: scikit-learn compatibility, agreement with scikit-learn's Lloyd and with the
slow reference (same ``tol`` and ``n_iter_`` rules), the predict/transform/score API, and empty
clusters. No statistical tests (no false alarms beyond stated floating-point tolerances).
"""
import contextlib
import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.cluster import KMeans as SklearnKMeans
from sklearn.utils.estimator_checks import parametrize_with_checks

import fedcore
from fedcore.kernels.parallel import single_threaded_kernels
from tests.reference.kmeans_reference import (assign_reference, kmeans_lloyd_reference,
                                              kmeanspp_reference, sq_distance_matrix_reference)


def _blobs(seed, n=400, d=4, n_blobs=6, scale=5.0, dtype=np.float64):
    rng = np.random.default_rng(seed)
    means = rng.normal(scale=scale, size=(n_blobs, d))
    return (means[rng.integers(0, n_blobs, size=n)] + rng.normal(size=(n, d))).astype(dtype)


def _pp_init(X, k, seed, w=None):
    rows, _, _ = kmeanspp_reference(X, w, np.random.default_rng(seed).random(k), 4096)
    return X[rows].astype(np.float64)


# ------------------------------------------------------------------------------------------
# scikit-learn's estimator checks
# ------------------------------------------------------------------------------------------

def _expected_failed_checks(estimator):
    return {
        # As for scikit-learn's own KMeans: k-means++ with a fixed seed on the shuffled weighted
        # rows and on the repeated rows maps the same uniforms to different rows, so the seeds
        # (and the label permutation) differ. Weights equal repetitions in distribution, and
        # exactly from fixed initial centers (test_lloyd.py::test_kmeans_integer_weights_...).
        "check_sample_weight_equivalence_on_dense_data":
            "k-means++ draws differ between weighted and repeated rows for one seed",
    }


@parametrize_with_checks([fedcore.KMeans(n_clusters=3, random_state=0),
                          fedcore.KMeans(n_clusters=3, random_state=0, n_local_trials="auto")],
                         expected_failed_checks=_expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    check(estimator)


# ------------------------------------------------------------------------------------------
# Against scikit-learn and the reference
# ------------------------------------------------------------------------------------------

@settings(max_examples=25)
@given(seed=st.integers(0, 2**31 - 1), k=st.integers(1, 8), max_iter=st.sampled_from([1, 3, 300]),
       dtype=st.sampled_from([np.float32, np.float64]), weighted=st.booleans())
def test_inertia_within_one_percent_of_sklearn(seed, k, max_iter, dtype, weighted):
    X = _blobs(seed, dtype=dtype)
    w = np.random.default_rng(seed + 1).random(X.shape[0]) * 2 + 0.1 if weighted else None
    init = _pp_init(X, k, seed, w)
    ours = fedcore.KMeans(k, init=init, n_init=1, max_iter=max_iter, tol=0.0).fit(
        X, sample_weight=w)
    theirs = SklearnKMeans(k, init=init.astype(dtype), n_init=1, max_iter=max_iter, tol=0.0,
                           algorithm="lloyd").fit(X, sample_weight=w)
    assert abs(ours.inertia_ - theirs.inertia_) <= 0.01 * theirs.inertia_
    assert np.isfinite(ours.cluster_centers_).all()


@pytest.mark.parametrize("tol", [0.0, 1e-4, 1e-2])
@pytest.mark.parametrize("seed", range(4))
def test_matches_reference_lloyd(tol, seed):
    # Same labels, centers, inertia and n_iter_ as the reference loop with scikit-learn's rules.
    X = _blobs(seed, n=300, d=3)
    k = 4 + seed % 3
    init = _pp_init(X, k, seed)
    ref_centers, ref_labels, ref_inertia, ref_n_iter = kmeans_lloyd_reference(
        X, None, init, max_iter=300, tol=tol)
    km = fedcore.KMeans(k, init=init, n_init=1, max_iter=300, tol=tol).fit(X)
    assert km.n_iter_ == ref_n_iter
    np.testing.assert_array_equal(km.labels_, ref_labels)
    np.testing.assert_allclose(km.cluster_centers_, ref_centers, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(km.inertia_, ref_inertia, rtol=1e-10)
    sk = SklearnKMeans(k, init=init, n_init=1, max_iter=300, tol=tol, algorithm="lloyd").fit(X)
    assert km.n_iter_ == sk.n_iter_


def _weighted_tight_blob(seed):
    """A tight heavy blob among wide light ones: weighted variance << unweighted variance."""
    rng = np.random.default_rng(seed)
    means = rng.normal(scale=8.0, size=(5, 2))
    blob = rng.integers(0, 5, size=300)
    X = means[blob] + rng.normal(size=(300, 2)) * np.where(blob == 0, 0.05, 1.5)[:, None]
    return X, np.where(blob == 0, 100.0, 0.05)


@pytest.mark.parametrize("seed", [0, 4, 7, 13, 20])
def test_weighted_tol_is_relative_to_unweighted_variance(seed):
    # scikit-learn's tol: tol * mean(np.var(X, axis=0)), the variance of X ignoring sample_weight.
    # Here the weighted variance is 40-200x smaller, so a loop using it stops later than
    # scikit-learn (for these seeds the two rules give different n_iter_).
    X, w = _weighted_tight_blob(seed)
    init = _pp_init(X, 4, seed)
    ref = kmeans_lloyd_reference(X, w, init, max_iter=300, tol=1e-3)
    sk = SklearnKMeans(4, init=init, n_init=1, max_iter=300, tol=1e-3, algorithm="lloyd").fit(
        X, sample_weight=w)
    km = fedcore.KMeans(4, init=init, n_init=1, max_iter=300, tol=1e-3).fit(X, sample_weight=w)
    assert ref[3] == sk.n_iter_  # the reference encodes scikit-learn's rule
    assert km.n_iter_ == sk.n_iter_
    np.testing.assert_allclose(km.cluster_centers_, sk.cluster_centers_, rtol=1e-9, atol=1e-9)


@st.composite
def _tie_heavy_problems(draw):
    """Small data with many exact ties (small integers) or arbitrary floats; init at data rows."""
    n = draw(st.integers(2, 60))
    d = draw(st.integers(1, 3))
    if draw(st.booleans()):
        X = draw(hnp.arrays(np.float64, (n, d), elements=st.integers(-3, 3).map(float)))
    else:
        X = draw(hnp.arrays(np.float64, (n, d), elements=st.one_of(
            st.sampled_from([0.0, 1.0, -1.0, 0.5]),
            st.floats(-1e3, 1e3, allow_subnormal=False))))
    k = draw(st.integers(1, min(n, 5)))
    rows = draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k, unique=True))
    w = draw(st.one_of(st.none(), hnp.arrays(np.float64, n, elements=st.sampled_from(
        [0.5, 1.0, 2.0, 3.0]))))
    return X, w, X[rows].copy(), draw(st.sampled_from([1, 2, 5, 100])), \
        draw(st.sampled_from([0.0, 1e-4]))


@settings(max_examples=80)
@given(problem=_tie_heavy_problems())
def test_lloyd_loop_equals_reference_with_ties(problem):
    # Whatever shortcuts the Lloyd loop takes (bounds, pruning), labels (lowest index on ties),
    # n_iter_ and centers must be those of plain Lloyd. Empty clusters are excluded (their
    # relocation rule is fedcore's own).
    X, w, init, max_iter, tol = problem
    try:
        ref_centers, ref_labels, ref_inertia, ref_n_iter = kmeans_lloyd_reference(
            X, w, init, max_iter=max_iter, tol=tol)
    except AssertionError:
        assume(False)
    assume(np.array_equal(np.bincount(ref_labels, minlength=len(init)) > 0,
                          np.ones(len(init), bool)))
    km = fedcore.KMeans(len(init), init=init, n_init=1, max_iter=max_iter, tol=tol).fit(
        X, sample_weight=w)
    assert km.n_iter_ == ref_n_iter
    np.testing.assert_array_equal(km.labels_, ref_labels)
    np.testing.assert_allclose(km.cluster_centers_, ref_centers, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(km.inertia_, ref_inertia, rtol=1e-9, atol=1e-300)


def test_max_iter_bounds_n_iter():
    X = _blobs(1)
    init = _pp_init(X, 6, 1)
    for max_iter in (1, 2, 5):
        km = fedcore.KMeans(6, init=init, n_init=1, max_iter=max_iter, tol=0.0).fit(X)
        ref = kmeans_lloyd_reference(X, None, init, max_iter=max_iter, tol=0.0)
        assert km.n_iter_ == ref[3] <= max_iter
        np.testing.assert_allclose(km.cluster_centers_, ref[0], rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------------------------
# The estimator API
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_api_consistency(dtype):
    X = _blobs(2, dtype=dtype)
    km = fedcore.KMeans(5, random_state=0, tol=0.0).fit(X)
    assert km.cluster_centers_.shape == (5, 4)
    assert km.labels_.shape == (400,) and km.labels_.dtype.kind == "i"
    assert km.n_features_in_ == 4
    assert isinstance(km.n_iter_, int) and 1 <= km.n_iter_ <= 300
    assert isinstance(km.inertia_, float)
    centers = km.cluster_centers_
    labels, dist = assign_reference(X, centers)
    np.testing.assert_array_equal(km.labels_, labels)  # converged: labels are nearest centers
    np.testing.assert_allclose(km.inertia_, dist.sum(), rtol=1e-10)
    np.testing.assert_array_equal(km.predict(X), labels)
    np.testing.assert_array_equal(fedcore.KMeans(5, random_state=0, tol=0.0).fit_predict(X),
                                  km.labels_)
    transformed = km.transform(X)
    assert transformed.shape == (400, 5)
    np.testing.assert_allclose(transformed, np.sqrt(sq_distance_matrix_reference(X, centers)),
                               rtol=1e-12)
    np.testing.assert_allclose(km.score(X), -km.inertia_, rtol=1e-10)
    Y = _blobs(3, n=50, dtype=dtype)
    np.testing.assert_array_equal(km.predict(Y), assign_reference(Y, centers)[0])
    np.testing.assert_allclose(km.score(Y), -assign_reference(Y, centers)[1].sum(), rtol=1e-10)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("d, k, scale, screened", [(40, 2, 1.0, False), (56, 10, 1.0, False),
                                                   (56, 30, 1.0, True), (100, 3, 1.0, True),
                                                   (784, 5, 1e3, True), (64, 24, 1e16, True)])
def test_assign_screened_equals_the_exact_scan(monkeypatch, dtype, d, k, scale, screened):
    """Rows are assigned through one screened E-step where it pays (at 1e16 the coordinates leave
    the float32 screen's range: a float64 screen), else by the exact scan: the labels (lowest
    index on ties) and squared distances of the reference, bit for bit, either way."""
    from fedcore.algorithms.kmeans import lloyd as km
    calls = []
    real = km.lloyd_run

    def spy(*args, **kwargs):
        calls.append(kwargs["single"])
        return real(*args, **kwargs)

    monkeypatch.setattr(km, "lloyd_run", spy)
    rng = np.random.default_rng(d)
    n = 3 * 4096 + 11
    X = (rng.integers(-2, 3, size=(n, d)) * scale).astype(dtype)  # ties everywhere
    centers = X[rng.choice(n, size=k, replace=False)].astype(np.float64)
    centers[-1] = centers[0]
    # Each parallel specialisation of Lloyd's loop costs the suite 15-30 s of compile: the
    # float32 screen of float32 rows (the default) runs parallel here, the others on one thread
    # (the serial variant, which the Lloyd tests compile too; both give the same bits).
    parallel = dtype == np.float32 and scale < 1e15
    with contextlib.nullcontext() if parallel else single_threaded_kernels():
        labels, dist = km.assign(X, centers)
    assert calls == ([scale < 1e15] if screened else [])
    expected, expected_dist = assign_reference(X, centers)
    np.testing.assert_array_equal(labels, expected)
    np.testing.assert_array_equal(dist.view(np.int64), expected_dist.view(np.int64))


def test_assign_refuses_no_center_and_non_finite_centers():
    """assign checks the centers it hands to the kernels: none, or a NaN or inf, is refused with
    the argument's name; a fitted model whose centers were altered cannot predict."""
    from fedcore.algorithms.kmeans.lloyd import assign
    X = np.random.default_rng(0).random((200, 70))
    for centers in (np.empty((0, 70)), np.full((3, 70), np.nan), np.full((3, 70), np.inf)):
        with pytest.raises(ValueError, match="'centers'"):
            assign(X, centers)
    km = fedcore.KMeans(3, random_state=0).fit(X)
    km.cluster_centers_[1, 5] = np.nan
    with pytest.raises(ValueError, match="finite"):
        km.predict(X)


def test_same_seed_same_model_and_n_init():
    X = _blobs(4)
    a = fedcore.KMeans(6, n_init=3, random_state=7).fit(X)
    b = fedcore.KMeans(6, n_init=3, random_state=7).fit(X)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    np.testing.assert_array_equal(a.labels_, b.labels_)
    assert a.inertia_ == b.inertia_


def test_get_set_params():
    km = fedcore.KMeans(4, max_iter=7)
    params = km.get_params()
    assert params["n_clusters"] == 4 and params["max_iter"] == 7 and params["init"] == "k-means++"
    assert params["n_local_trials"] is None
    assert km.set_params(tol=0.5) is km and km.tol == 0.5
    assert km.set_params(n_local_trials="auto").n_local_trials == "auto"
    assert "n_local_trials='auto'" in repr(km)


# ------------------------------------------------------------------------------------------
# Empty clusters
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_duplicate_initial_centers_no_nan(dtype):
    X = _blobs(5, dtype=dtype)
    init = np.array([X[0], X[0], X[0], X[10]], dtype=np.float64)  # clusters 1, 2 start empty
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no 0/0
        km = fedcore.KMeans(4, init=init, n_init=1).fit(X)
    assert np.isfinite(km.cluster_centers_).all() and np.isfinite(km.inertia_)
    assert set(km.labels_.tolist()) <= set(range(4))
    # Relocation gives the empty clusters points of their own: four distinct centers, all used.
    assert len(np.unique(km.cluster_centers_, axis=0)) == 4
    assert len(np.unique(km.labels_)) == 4
    # Deterministic rule: same result again.
    again = fedcore.KMeans(4, init=init, n_init=1).fit(X)
    np.testing.assert_array_equal(km.cluster_centers_, again.cluster_centers_)
    # Lloyd steps and relocations never increase the inertia of the initial assignment.
    assert km.inertia_ <= assign_reference(X, init)[1].sum() * (1 + 1e-12)


def test_more_clusters_than_distinct_points_no_nan():
    X = np.repeat(np.array([[0.0, 0.0], [1.0, 1.0], [5.0, 0.0]]), 4, axis=0)
    km = fedcore.KMeans(5, random_state=0).fit(X)
    assert np.isfinite(km.cluster_centers_).all()
    assert km.inertia_ == 0.0
    assert set(km.labels_.tolist()) <= set(range(5))


def test_zero_weight_rows_do_not_pull_centers():
    X = _blobs(6, n=200)
    w = np.ones(200)
    w[:50] = 0.0
    init = _pp_init(X, 4, 0, w)
    a = fedcore.KMeans(4, init=init, n_init=1, tol=0.0).fit(X, sample_weight=w)
    b = fedcore.KMeans(4, init=init, n_init=1, tol=0.0).fit(X[50:])
    np.testing.assert_allclose(a.cluster_centers_, b.cluster_centers_, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(a.labels_[50:], b.labels_)


def test_concurrent_restarts_equal_sequential_restarts():
    import numba
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs two Numba threads to run restarts concurrently")
    rng = np.random.default_rng(4)
    X = rng.normal(size=(600, 4))
    w = rng.integers(1, 5, size=600).astype(float)
    fits = []
    for threads in (1, 2):
        previous = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            fits.append(fedcore.KMeans(6, n_init=7, random_state=3).fit(X, sample_weight=w))
        finally:
            numba.set_num_threads(previous)
    np.testing.assert_array_equal(fits[0].cluster_centers_, fits[1].cluster_centers_)
    np.testing.assert_array_equal(fits[0].labels_, fits[1].labels_)
    assert fits[0].inertia_ == fits[1].inertia_ and fits[0].n_iter_ == fits[1].n_iter_
