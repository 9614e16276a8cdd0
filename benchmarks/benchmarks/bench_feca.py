"""asv benchmarks: FeCA end to end, its server aggregation, and the one-shot baselines.

Every ``setup`` warms the kernels on tiny data first, so compile time never lands in a timing.
The headline case is FeCA on M = 100 clients x 10,000 points, d = 50, k = 20 (target: under 2 s);
``track_cpu_seconds`` records the process CPU time of one fit, which a shared machine perturbs
far less than the wall time.
"""
import time

import numpy as np

import fedcore
from fedcore.algorithms.feca import FeCA, server_aggregation
from fedcore.algorithms.baselines.kfed import KFed
from fedcore.algorithms.baselines.match_averaging import MatchAveraging


def _warm():
    for dtype in (np.float64, np.float32):
        X = np.random.default_rng(0).random((400, 3)).astype(dtype)
        fed = [X[:200], X[200:]]
        FeCA(3, random_state=0).fit(fed)
        FeCA(3, radius="theoretical", random_state=0).fit(fed)
        KFed(3, client_clusters=2, random_state=0).fit(fed)
        MatchAveraging(3, random_state=0).fit(fed)


def _federation(n_clients, n_per_client, d, k, dtype="float64"):
    X, _, truth = fedcore.datasets.make_gaussian_mixture(n_clients * n_per_client, d, k,
                                                         cluster_std=0.05, random_state=0)
    X = X.astype(dtype)
    arrays = [X[l * n_per_client:(l + 1) * n_per_client] for l in range(n_clients)]
    return fedcore.HorizontalFederation.from_arrays(arrays), truth


class FeCAFit:
    """FeCA end to end (client Lloyd, [FeCA] Alg. 2-4 on every client, [FeCA] Alg. 5 on the
    server)."""

    params = ([10, 100], [10_000], [50], [20], ["float64", "float32"], [1, None])
    param_names = ["n_clients", "n_per_client", "d", "k", "dtype", "n_jobs"]
    timeout = 600

    def setup(self, n_clients, n_per_client, d, k, dtype, n_jobs):
        _warm()
        self.fed, self.truth = _federation(n_clients, n_per_client, d, k, dtype)
        self.model = FeCA(k, random_state=0, n_jobs=n_jobs)

    def time_fit(self, n_clients, n_per_client, d, k, dtype, n_jobs):
        self.model.fit(self.fed)

    def peakmem_fit(self, n_clients, n_per_client, d, k, dtype, n_jobs):
        self.model.fit(self.fed)

    def track_cpu_seconds(self, n_clients, n_per_client, d, k, dtype, n_jobs):
        start = time.process_time()
        self.model.fit(self.fed)
        return time.process_time() - start

    def track_center_distance(self, n_clients, n_per_client, d, k, dtype, n_jobs):
        return fedcore.metrics.center_distance(self.model.fit(self.fed).cluster_centers_,
                                               self.truth)


class ServerAggregation:
    """[FeCA] Alg. 5 alone on M * k received centroids."""

    params = ([100, 1000], [20], [50])
    param_names = ["n_clients", "k", "d"]

    def setup(self, n_clients, k, d):
        _warm()
        rng = np.random.default_rng(0)
        truth = rng.random((k, d))
        self.centers = [truth + 0.01 * rng.standard_normal((k, d)) for _ in range(n_clients)]
        self.radii = [np.full(k, 0.1) + 0.01 * rng.random(k) for _ in range(n_clients)]
        server_aggregation(self.centers[:2], self.radii[:2], k)

    def time_server_aggregation(self, n_clients, k, d):
        server_aggregation(self.centers, self.radii, k)


class OneShotBaselines:
    """K-FED and M-Avg on the same federation as FeCAFit (10 clients)."""

    params = ([10], [10_000], [50], [20])
    param_names = ["n_clients", "n_per_client", "d", "k"]
    timeout = 600

    def setup(self, n_clients, n_per_client, d, k):
        _warm()
        self.fed, _ = _federation(n_clients, n_per_client, d, k)

    def time_kfed(self, n_clients, n_per_client, d, k):
        KFed(k, random_state=0).fit(self.fed)

    def time_match_averaging(self, n_clients, n_per_client, d, k):
        MatchAveraging(k, random_state=0).fit(self.fed)
