"""k-FED: farthest-point initialization against brute force, recovery on heterogeneous clients,
the estimator contract, communication and errors. No statistical tests."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fedcore
from fedcore.algorithms.baselines.kfed import KFed, farthest_point_init
from fedcore.datasets.balls import make_stochastic_ball


def _farthest_reference(points, start, n_centers):
    chosen = list(start) if len(start) < n_centers else [start[0]]
    pool = list(range(len(points))) if len(start) < n_centers else list(start)
    while len(chosen) < n_centers:
        best, best_d = None, -1.0
        for p in pool:
            dist = min(float(((points[p] - points[c]) ** 2).sum()) for c in chosen)
            if dist > best_d:
                best, best_d = p, dist
        chosen.append(best)
    return chosen


@settings(max_examples=50)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(2, 30), n_start=st.integers(1, 6),
       n_centers=st.integers(1, 10))
def test_farthest_point_init_matches_reference(seed, n, n_start, n_centers):
    rng = np.random.default_rng(seed)
    points = rng.integers(0, 5, size=(n, 2)).astype(np.float64)  # ties are frequent
    n_centers = min(n_centers, n)
    start = rng.choice(n, size=min(n_start, n), replace=False)
    rows = farthest_point_init(points, start, n_centers)
    assert rows.tolist() == _farthest_reference(points, start.tolist(), n_centers)


def _noniid(seed=0, k=6, per_client=2, n_clients=6):
    X, y, theta = make_stochastic_ball(n_clients * 90, 2, k, radius=1.0, separation=40.0,
                                       random_state=seed)
    fed = fedcore.partition(X, n_clients, "noniid", labels=y, clusters_per_client=per_client,
                            random_state=seed)
    return fed, theta


def test_recovers_centers_when_each_client_sees_few_clusters():
    """Each client holds 2 of 6 well-separated balls and fits k' = 2: every local center is a true
    center, so farthest points from any client's pair reach all six and Lloyd keeps them."""
    fed, theta = _noniid()
    model = KFed(6, client_clusters=2, random_state=0).fit(fed)
    assert model.cluster_centers_.shape == (6, 2)
    assert fedcore.metrics.center_distance(model.cluster_centers_, theta) < 1.0
    assert model.comm_.n_rounds == 1
    assert model.comm_.summary()["up"]["elements"] == fed.n_clients * 2 * 2
    assert model.comm_.summary()["down"]["messages"] == 0
    assert 0 <= model.start_client_ < fed.n_clients
    assert sorted(model.predict(theta).tolist()) == list(range(6))


def test_default_client_clusters_is_ceil_sqrt_k():
    fed, _ = _noniid(seed=1)
    model = KFed(6, random_state=0).fit(fed)
    assert all(c.shape == (3, 2) for c in model.client_centers_)  # ceil(sqrt(6)) = 3


def test_more_client_clusters_than_k():
    fed, theta = _noniid(seed=2)
    model = KFed(2, client_clusters=4, random_state=0).fit(fed)
    assert model.cluster_centers_.shape == (2, 2)


def test_same_seed_same_output_for_any_n_jobs():
    fed, _ = _noniid(seed=3)
    a = KFed(6, client_clusters=2, random_state=5, n_jobs=1).fit(fed)
    b = KFed(6, client_clusters=2, random_state=5, n_jobs=2).fit(fed)
    np.testing.assert_array_equal(a.cluster_centers_, b.cluster_centers_)
    assert a.get_params() == {**b.get_params(), "n_jobs": 1}


def test_errors_name_the_argument():
    fed, _ = _noniid()
    with pytest.raises(ValueError, match="client_clusters.*client"):
        KFed(6, client_clusters=1000).fit(fed)
    with pytest.raises(ValueError, match="n_clusters.*exceeds"):
        KFed(20, client_clusters=2).fit([np.arange(8.0).reshape(4, 2)] * 3)
    with pytest.raises(TypeError, match="client_clusters"):
        KFed(6, client_clusters="3").fit(fed)
    with pytest.raises(ValueError, match="'n_local_trials' must be >= 1, got 0"):
        KFed(6, n_local_trials=0).fit(fed)


def test_clients_share_feca_client_kmeans():
    """k-FED's clients run the k-means of FeCA's clients: greedy k-means++ by default."""
    from fedcore.algorithms.clients import client_seeds, client_kmeans
    fed, _ = _noniid(seed=4)
    assert KFed(6).get_params()["n_local_trials"] == "auto"
    for L in ("auto", None):
        model = KFed(6, client_clusters=2, n_local_trials=L, random_state=3).fit(fed)
        seeds = client_seeds(np.random.default_rng(3), fed.n_clients)
        for l in range(fed.n_clients):
            want = client_kmeans(fed.client(l)[0], 2, n_local_trials=L,
                                 random_state=np.random.default_rng(seeds[l]))[0]
            np.testing.assert_array_equal(model.client_centers_[l], want)
