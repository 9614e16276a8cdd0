"""asv benchmarks: k-means++ seeding, Lloyd k-means and exact removal.

Every ``setup`` warms the kernels on tiny data first, so compile time never lands in a timing.
Lloyd runs a fixed amount of work (``max_iter`` iterations, ``tol=0``).
"""
import numpy as np

import fedcore

GRID = ([10_000, 100_000, 1_000_000], [10, 50], [10, 100], ["float64", "float32"])
GRID_NAMES = ["n", "d", "k", "dtype"]


def _warm():
    for dtype in (np.float64, np.float32):
        X = np.random.default_rng(0).random((300, 3)).astype(dtype)
        fedcore.kmeans_plusplus(X, 3, random_state=0)
        fedcore.KMeans(3, random_state=0, max_iter=2).fit(X)
        fedcore.UnlearnableKMeans(3, random_state=0).fit(X).remove([0, 1])


def _data(n, d, k, dtype):
    X, _, _ = fedcore.datasets.make_gaussian_mixture(n, d, k, cluster_std=0.05, random_state=0)
    return X.astype(dtype)


class KMeansPlusPlus:
    params = GRID
    param_names = GRID_NAMES
    timeout = 600

    def setup(self, n, d, k, dtype):
        _warm()
        self.X = _data(n, d, k, dtype)

    def time_kmeans_plusplus(self, n, d, k, dtype):
        fedcore.kmeans_plusplus(self.X, k, random_state=0)

    def peakmem_kmeans_plusplus(self, n, d, k, dtype):
        fedcore.kmeans_plusplus(self.X, k, random_state=0)


class LloydFit:
    params = GRID
    param_names = GRID_NAMES
    timeout = 600

    def setup(self, n, d, k, dtype):
        _warm()
        self.X = _data(n, d, k, dtype)
        self.init, _ = fedcore.kmeans_plusplus(self.X, k, random_state=0)
        self.model = fedcore.KMeans(k, init=self.init, max_iter=10, tol=0.0)

    def time_fit(self, n, d, k, dtype):
        self.model.fit(self.X)

    def peakmem_fit(self, n, d, k, dtype):
        self.model.fit(self.X)

    def track_inertia_per_point(self, n, d, k, dtype):
        return self.model.fit(self.X).inertia_ / n


class UnlearnableRemove:
    params = ([100_000, 1_000_000], [10, 50], [10, 100])
    param_names = ["n", "d", "k"]
    timeout = 600

    def setup(self, n, d, k):
        _warm()
        X = _data(n, d, k, "float64")
        self.model = fedcore.UnlearnableKMeans(k, random_state=0).fit(X)
        centers = set(self.model.center_ids_.tolist())
        rng = np.random.default_rng(1)
        self.ids = iter([i for i in rng.permutation(n)[:5000].tolist() if i not in centers])

    def time_remove_non_center(self, n, d, k):
        self.model.remove(next(self.ids))

    def time_remove_first_center(self, n, d, k):
        self.model.remove(self.model.center_ids_[0])

    def peakmem_fit(self, n, d, k):
        fedcore.UnlearnableKMeans(k, random_state=0).fit(_data(n, d, k, "float64"))


def _server_points(d, k):
    """500 weighted points, like MUFC's occupied bins and their counts."""
    X, _, _ = fedcore.datasets.make_gaussian_mixture(500, d, k, cluster_std=0.1, random_state=0)
    return X, np.random.default_rng(0).integers(1, 120, size=500).astype(np.float64)


class ServerRestarts:
    """MUFC's server clustering: KMeans(n_init=10) on ~500 weighted points (occupied bins), at
    the Gaussian (d = 10, k = 10) and FEMNIST (d = 784, k = 62) shapes of [MUFC] Appendix M; the
    large one screens centers with BLAS and runs restarts concurrently."""
    params = ([(10, 10), (784, 62)],)
    param_names = ["d_k"]
    timeout = 600

    def setup(self, d_k):
        _warm()
        self.X, self.w = _server_points(*d_k)
        self.k = d_k[1]
        fedcore.KMeans(self.k, n_init=2, random_state=0).fit(self.X, sample_weight=self.w)

    def time_fit_n_init_10(self, d_k):
        fedcore.KMeans(self.k, n_init=10, random_state=0).fit(self.X, sample_weight=self.w)


class ServerRefit:
    """MUFC's exact server update after a one-point removal (``server_update="exact"``): the 10
    restarts of :class:`ServerRestarts` re-fitted by coupling with their previous runs. Each
    timed call changes one weight by one (alternately down and back up)."""
    params = ([(10, 10), (784, 62)],)
    param_names = ["d_k"]
    timeout = 600

    def setup(self, d_k):
        from fedcore.algorithms.mufc.coupled import CoupledKMeans
        _warm()
        X, w = _server_points(*d_k)
        k = d_k[1]
        self.X, self.keys = X, np.arange(500)
        w2 = w.copy()
        w2[17] -= 1
        self.weights, self.turn = (w, w2), 0
        self.rng = np.random.default_rng(0)
        self.model = CoupledKMeans(k, n_init=10).fit(self.keys, X, w, self.rng)
        self.time_refit_one_removal(d_k)

    def time_refit_one_removal(self, d_k):
        self.turn ^= 1
        self.model.refit(self.keys, self.X, self.weights[self.turn], self.rng)
