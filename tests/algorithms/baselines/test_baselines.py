"""Baselines of the FeCA paper: Match Averaging and FFCM (fuzzy c-means kernel against the slow
reference, round structure, communication, determinism). No statistical tests."""
import itertools

import numba
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fedcore
from fedcore.algorithms.baselines.ffcm import FFCM, fcm_statistics, fuzzy_c_means
from fedcore.algorithms.baselines.match_averaging import MatchAveraging, match_average_centers
from fedcore.datasets.balls import make_stochastic_ball
from tests.reference.feca_reference import fcm_statistics_reference


def _federation(seed=0, n_clients=4, k=3, scheme="iid"):
    X, y, theta = make_stochastic_ball(n_clients * 75, 2, k, radius=1.0, separation=30.0,
                                       random_state=seed)
    fed = fedcore.partition(X, n_clients, scheme, labels=y, alpha=1.0, random_state=seed)
    return fed, theta


# ------------------------------------------------------------------------------------------
# Match Averaging
# ------------------------------------------------------------------------------------------

@settings(max_examples=40)
@given(seed=st.integers(0, 2**31 - 1), k=st.integers(1, 6), n_clients=st.integers(1, 5))
def test_matching_undoes_permutations(seed, k, n_clients):
    """Noisy, permuted copies of one set: the matching finds the permutations (Hungarian, minimum
    total l2; the noise is far below half the smallest gap), and the average is the mean copy."""
    rng = np.random.default_rng(seed)
    base = rng.permutation(k)[:, None] * np.array([[10.0, 0.0]]) + rng.normal(size=(1, 2))
    copies = [base + rng.uniform(-0.5, 0.5, size=base.shape) for _ in range(n_clients)]
    perms = [rng.permutation(k) for _ in range(n_clients)]
    sent = [c[p] for c, p in zip(copies, perms)]
    centers, matches, n_iter = match_average_centers(sent, sent[0])
    inverse0 = np.argsort(perms[0])
    for p, match in zip(perms, matches):
        assert match.tolist() == inverse0[p].tolist()
    np.testing.assert_allclose(centers, np.mean(copies, axis=0)[perms[0]], rtol=0, atol=1e-12)
    assert n_iter <= 2


def test_matching_is_minimum_total_distance():
    rng = np.random.default_rng(4)
    template = rng.normal(size=(4, 2))
    C = rng.normal(size=(4, 2))
    _, matches, _ = match_average_centers([C], template, max_iter=1)
    cost = np.sqrt(((C[:, None] - template[None]) ** 2).sum(axis=2))
    best = min(sum(cost[i, p[i]] for i in range(4)) for p in itertools.permutations(range(4)))
    assert np.isclose(sum(cost[i, matches[0][i]] for i in range(4)), best, rtol=1e-12)


def test_match_averaging_estimator():
    fed, theta = _federation()
    model = MatchAveraging(3, random_state=0)
    assert model.fit(fed) is model
    assert fedcore.metrics.center_distance(model.cluster_centers_, theta) < 1.0
    assert model.comm_.n_rounds == 1
    assert model.comm_.summary()["up"]["elements"] == fed.n_clients * 3 * 2
    assert 0 <= model.template_client_ < fed.n_clients
    again = MatchAveraging(3, random_state=0, n_jobs=1).fit(fed)
    np.testing.assert_array_equal(again.cluster_centers_, model.cluster_centers_)
    assert model.predict(theta).shape == (3,)
    with pytest.raises(ValueError, match="client_clusters.*>= n_clusters"):
        MatchAveraging(3, client_clusters=2).fit(fed)
    with pytest.raises(ValueError, match="client_clusters.*client"):
        MatchAveraging(3, client_clusters=500).fit(fed)
    with pytest.raises(TypeError, match="n_local_trials.*float"):
        MatchAveraging(3, n_local_trials=2.5).fit(fed)
    assert model.get_params()["n_local_trials"] == "auto"
    vanilla = MatchAveraging(3, n_local_trials=None, random_state=0).fit(fed)
    assert fedcore.metrics.center_distance(vanilla.cluster_centers_, theta) < 1.0


# ------------------------------------------------------------------------------------------
# FFCM
# ------------------------------------------------------------------------------------------

@settings(max_examples=40)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 60), d=st.integers(1, 3),
       k=st.integers(1, 5), m=st.sampled_from([1.5, 2.0, 3.0]),
       dtype=st.sampled_from([np.float32, np.float64]), on_center=st.booleans())
def test_fcm_statistics_matches_reference(seed, n, d, k, m, dtype, on_center):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)).astype(dtype)
    centers = rng.normal(size=(k, d))
    if on_center:  # rows exactly on a center (and two coincident centers when k > 1)
        centers[0] = X[0]
        if k > 1:
            centers[1] = X[0]
    sums, weights = np.empty((k, d)), np.empty(k)
    objective = fcm_statistics(X, centers, m, sums, weights)
    ref_sums, ref_weights, ref_objective = fcm_statistics_reference(X, centers, m)
    np.testing.assert_allclose(sums, ref_sums, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(weights, ref_weights, rtol=1e-9, atol=1e-12)
    assert np.isclose(objective, ref_objective, rtol=1e-9, atol=1e-12)


def test_fcm_statistics_threads_bit_identical():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(9000, 2))
    C = rng.normal(size=(4, 2))
    outs = []
    previous = numba.get_num_threads()
    try:
        for threads in (1, numba.config.NUMBA_NUM_THREADS):
            numba.set_num_threads(threads)
            sums, weights = np.empty((4, 2)), np.empty(4)
            outs.append((fcm_statistics(X, C, 2.0, sums, weights), sums, weights))
    finally:
        numba.set_num_threads(previous)
    assert outs[0][0] == outs[1][0]
    np.testing.assert_array_equal(outs[0][1], outs[1][1])
    np.testing.assert_array_equal(outs[0][2], outs[1][2])


def test_fcm_objective_never_increases():
    """Each center update of fuzzy c-means minimizes J_m over the centers (Bezdek 1981)."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 2)) + rng.integers(0, 3, size=(200, 1)) * 4.0
    C = X[:3].astype(np.float64).copy()
    sums, weights = np.empty((3, 2)), np.empty(3)
    last = np.inf
    for _ in range(15):
        objective = fcm_statistics(X, C, 2.0, sums, weights)
        assert objective <= last * (1 + 1e-12)
        last = objective
        C = sums / weights[:, None]


def test_first_rounds_do_not_depend_on_n_rounds():
    fed, _ = _federation(seed=1)
    for version in (1, 2):
        short = FFCM(3, version=version, n_rounds=2, random_state=3).fit(fed)
        long = FFCM(3, version=version, n_rounds=5, random_state=3).fit(fed)
        for a, b in zip(short.history_, long.history_):
            np.testing.assert_array_equal(a, b)
        np.testing.assert_array_equal(short.cluster_centers_, long.history_[1])


def test_version_1_with_one_client_is_fuzzy_c_means():
    """With one client, weighted averaging returns the client's centers: FFCM v1 is centralized
    fuzzy c-means restarted each round from the previous centers."""
    X, _, _ = make_stochastic_ball(150, 2, 3, separation=10.0, random_state=0)
    model = FFCM(3, version=1, n_rounds=2, random_state=0).fit([X])
    start = model.history_[0]
    # Equal up to the rounding of w * v / w in the weighted average.
    np.testing.assert_allclose(model.cluster_centers_, fuzzy_c_means(X, start)[0], rtol=1e-12)


@pytest.mark.parametrize("version", [1, 2])
def test_ffcm_recovers_separated_centers_and_counts_rounds(version):
    fed, theta = _federation(seed=2)
    model = FFCM(3, version=version, n_rounds=4, random_state=1).fit(fed)
    assert model.cluster_centers_.shape == (3, 2) and len(model.history_) == 4
    M, k, d = fed.n_clients, 3, 2
    assert model.comm_.n_rounds == 5
    summary = model.comm_.summary()
    assert summary["down"]["elements"] == 4 * M * k * d
    assert summary["up"]["elements"] == M * k * d + 4 * M * k * (d + 1)
    again = FFCM(3, version=version, n_rounds=4, random_state=1, n_jobs=1).fit(fed)
    np.testing.assert_array_equal(again.cluster_centers_, model.cluster_centers_)
    # Well-separated balls: the k-means++ start over client centroids finds every ball.
    assert fedcore.metrics.center_distance(model.cluster_centers_, theta) < 1.0


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"version": 3}, ValueError, "version"),
    ({"version": True}, ValueError, "version"),
    ({"fuzziness": 1.0}, ValueError, "fuzziness"),
    ({"n_rounds": 0}, ValueError, "n_rounds"),
    ({"max_iter": 1.5}, TypeError, "max_iter"),
])
def test_ffcm_bad_parameters(kwargs, exc, match):
    fed, _ = _federation()
    with pytest.raises(exc, match=match):
        FFCM(3, **kwargs).fit(fed)


def test_fuzzy_c_means_checks_its_arguments_before_the_kernel():
    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match="'centers' has 2 features, X has 3"):
        fuzzy_c_means(X, np.zeros((2, 2)))
    with pytest.raises(ValueError, match="'centers'"):
        fuzzy_c_means(X, np.full((2, 3), np.nan))
    with pytest.raises(ValueError, match="'X'"):
        fuzzy_c_means(np.full((4, 3), np.inf), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="'fuzziness'"):
        fuzzy_c_means(X, np.zeros((2, 3)), fuzziness=1.0)
    with pytest.raises(ValueError, match="'max_iter'"):
        fuzzy_c_means(X, np.zeros((2, 3)), max_iter=0)
