"""asv benchmarks: vertical coresets (DIS, VKMC, VRLR), DistDim and vertical ridge solvers.

Every ``setup`` warms the kernels on tiny data first, so compile time never lands in a timing.
Shapes follow the YearPredictionMSD experiment of [VFLC] Section 6 (d = 90, T = 3 parties of 30
features, k = 10) on a synthetic stand-in. SAGA ([SAGA]) runs a fixed number of epochs
(``tol=0``).
"""
import numpy as np

import fedcore
from fedcore.algorithms.vfl import (VerticalCoreset, gather, uniform_coreset, vkmc_coreset,
                                        vkmc_local_scores, vrlr_coreset)
from fedcore.algorithms.vfl.distdim import DistDim
from fedcore.algorithms.vfl.ridge import VerticalRidge


def _warm():
    X, _, _ = fedcore.datasets.make_gaussian_mixture(300, 6, 3, random_state=0)
    for dtype in (np.float64, np.float32):
        vfed = fedcore.VerticalFederation.from_columns(X.astype(dtype), splits=[2, 2, 2],
                                                       y=X[:, 0].copy())
        cs = vkmc_coreset(vfed, 50, 3, random_state=0)
        vkmc_coreset(vfed, 50, 3, local_max_iter=2, random_state=0)
        vrlr_coreset(vfed, 50, random_state=0)
        DistDim(3, random_state=0).fit(vfed, coreset=cs)
        VerticalRidge(alpha=1.0).fit(vfed, coreset=cs)
        VerticalRidge(alpha=1.0, solver="saga", max_iter=2, random_state=0).fit(vfed, coreset=cs)


def _federation(n, d=90, parties=3, k=10, labels=False):
    X, _, _ = fedcore.datasets.make_gaussian_mixture(n, d, k, cluster_std=0.15,
                                                     weights=0.6 ** np.arange(k), random_state=0)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    y = None
    if labels:
        rng = np.random.default_rng(0)
        y = X @ rng.standard_normal(d) + rng.standard_normal(n)
    splits = [d // parties] * parties
    splits[-1] += d - sum(splits)
    return fedcore.VerticalFederation.from_columns(X, splits=splits, y=y)


class VKMCCoreset:
    params = ([100_000, 515_345], [0, 5])
    param_names = ["n", "local_max_iter"]
    timeout = 900

    def setup(self, n, local_max_iter):
        _warm()
        self.vfed = _federation(n)

    def time_vkmc_coreset(self, n, local_max_iter):
        vkmc_coreset(self.vfed, 1000, 10, local_max_iter=local_max_iter, random_state=0)

    def peakmem_vkmc_coreset(self, n, local_max_iter):
        vkmc_coreset(self.vfed, 1000, 10, local_max_iter=local_max_iter, random_state=0)


class VRLRCoreset:
    params = [100_000, 463_715]
    param_names = ["n"]
    timeout = 900

    def setup(self, n):
        _warm()
        self.vfed = _federation(n, labels=True)

    def time_vrlr_coreset(self, n):
        vrlr_coreset(self.vfed, 1000, random_state=0)


class DIS:
    params = ([100_000, 1_000_000], [1000, 8000], [3, 10])
    param_names = ["n", "m", "parties"]

    def setup(self, n, m, parties):
        _warm()
        self.scores = np.random.default_rng(0).random((parties, n)) ** 3

    def time_dis(self, n, m, parties):
        VerticalCoreset(m, random_state=0).fit(self.scores)


class DownstreamOnCoreset:
    params = [1000, 6000]
    param_names = ["m"]
    timeout = 900

    def setup(self, m):
        _warm()
        self.vfed = _federation(100_000, labels=True)
        self.cs = vkmc_coreset(self.vfed, m, 10, random_state=0)
        self.X, _, self.w, _ = gather(self.vfed, self.cs)

    def time_kmeans_on_coreset(self, m):
        fedcore.KMeans(10, n_init=3, random_state=0).fit(self.X, sample_weight=self.w)

    def time_distdim_on_coreset(self, m):
        DistDim(10, random_state=0).fit(self.vfed, coreset=self.cs)

    def time_ridge_saga_20_epochs(self, m):
        VerticalRidge(alpha=1e4, solver="saga", max_iter=20, tol=0.0,
                      random_state=0).fit(self.vfed, coreset=self.cs)

    def track_kmeans_cost_coreset_over_uniform(self, m):
        """Full-data cost of k-means on the coreset divided by that on a uniform sample."""
        X = self.vfed.to_array()
        costs = []
        for cs in (self.cs, uniform_coreset(self.vfed, m, random_state=0)):
            Xs, _, w, _ = gather(self.vfed, cs)
            km = fedcore.KMeans(10, n_init=3, random_state=0).fit(Xs, sample_weight=w)
            costs.append(fedcore.metrics.inertia(X, km.cluster_centers_))
        return costs[0] / costs[1]


class LocalScores:
    params = [515_345]
    param_names = ["n"]
    timeout = 900

    def setup(self, n):
        _warm()
        self.vfed = _federation(n)

    def time_vkmc_local_scores(self, n):
        vkmc_local_scores(self.vfed, 10, local_max_iter=0, random_state=0)
