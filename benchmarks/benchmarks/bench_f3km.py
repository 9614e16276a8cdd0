"""asv benchmarks: CDKM / BCDKM sweeps and F3KM (FairKMeans) against Fair-LP.

Every ``setup`` warms the kernels on tiny data first, so compile time never lands in a timing.
CDKM/BCDKM run a fixed number of sweeps; FairKMeans a fixed number of ADMM iterations.
"""

from fedcore.algorithms.f3km.cdkm import BCDKM, CDKM
from fedcore.algorithms.f3km import FairKMeans, FairLP
from fedcore.datasets.fair import make_fair_blobs
from fedcore.metrics.fairness import additive_violation


def _warm():
    w = make_fair_blobs(400, 5, 3, groups_per_attribute=(2, 3), random_state=0)
    CDKM(3, max_iter=2, random_state=0).fit(w.X)
    BCDKM(3, block_size=100, max_iter=2, random_state=0).fit(w.X)
    FairKMeans(3, max_iter=2, random_state=0).fit(w.X, groups=w.groups)
    FairLP(3, random_state=0).fit(w.X[:60], groups=[g[:60] for g in w.groups])


class CoordinateDescent:
    params = ([10_000, 100_000], [10, 50], [3, 10])
    param_names = ["n", "d", "k"]
    timeout = 600

    def setup(self, n, d, k):
        _warm()
        self.X = make_fair_blobs(n, d, k, groups_per_attribute=(2,), random_state=0).X

    def time_cdkm_5_sweeps(self, n, d, k):
        CDKM(k, max_iter=5, random_state=0).fit(self.X)

    def time_bcdkm_quarter_blocks_5_sweeps(self, n, d, k):
        BCDKM(k, block_size="auto", max_iter=5, random_state=0).fit(self.X)

    def track_cdkm_sse_per_point(self, n, d, k):
        return CDKM(k, max_iter=5, random_state=0).fit(self.X).inertia_ / n


class F3KM:
    params = ([50_000, 500_000],)
    param_names = ["n"]
    timeout = 900

    def setup(self, n):
        _warm()
        self.data = make_fair_blobs(n, 53, 3, groups_per_attribute=(5, 5), random_state=0)

    def time_fit_20_iterations(self, n):
        FairKMeans(3, delta=0.5, max_iter=20, random_state=0).fit(self.data.X,
                                                                  groups=self.data.groups)

    def peakmem_fit_20_iterations(self, n):
        FairKMeans(3, delta=0.5, max_iter=20, random_state=0).fit(self.data.X,
                                                                  groups=self.data.groups)

    def track_violation_after_20_iterations(self, n):
        m = FairKMeans(3, delta=0.5, max_iter=20, random_state=0).fit(self.data.X,
                                                                      groups=self.data.groups)
        return m.violation_


class FairLPBaseline:
    params = ([5_000, 50_000],)
    param_names = ["n"]
    timeout = 1800

    def setup(self, n):
        _warm()
        self.data = make_fair_blobs(n, 53, 3, groups_per_attribute=(5, 5), random_state=0)

    def time_fit(self, n):
        FairLP(3, delta=0.5, random_state=0).fit(self.data.X, groups=self.data.groups)

    def track_violation(self, n):
        lp = FairLP(3, delta=0.5, random_state=0).fit(self.data.X, groups=self.data.groups)
        return additive_violation(lp.labels_, self.data.groups, delta=0.5)
