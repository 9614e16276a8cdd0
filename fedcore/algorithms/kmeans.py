"""k-means++ seeding and weighted Lloyd k-means."""
import warnings
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from .._validation import (check_array, check_distance_range, check_int, check_random_state,
                           check_sample_weight, check_scalar)
from .._config import CHUNK_SIZE
from ..kernels.distances import assign_nearest, pairwise_sq_distances
from ..kernels.lloyd import lloyd_run
from ..kernels.seeding import (center_gaps, chunk_sums, d2_refresh, d2_update, min_sq_distance,
                               n_chunks, pick_index, pick_product)
from ._base import BaseEstimator, check_is_fitted

__all__ = ["kmeans_plusplus", "KMeans"]


def _kmeans_plusplus(X, weights, uniforms, prefix=()):
    """k-means++ on validated input; one uniform per drawn center. Returns (rows, labels, mind).

    ``prefix`` rows are taken as the first centers without drawing (exact unlearning keeps the
    centers before the first removed one, MUFC Alg. 3 line 9). Then center ``t`` is drawn by D^2
    sampling (Appendix B), ``P(x) = w(x) d^2(x, C) / sum_y w(y) d^2(y, C)``; when that total is 0
    (every remaining row coincides with a center), uniformly by weight among rows not yet chosen.
    Rows of weight 0 are never drawn, which is how removed rows are excluded.

    ``labels`` is the first nearest center in seeding order, ``mind`` the squared distance to it.
    """
    n, d = X.shape
    k = len(prefix) + len(uniforms)
    rows = np.empty(k, dtype=np.int64)
    centers = np.empty((k, d), dtype=np.float64)
    labels = np.full(n, -1, dtype=np.int64)
    mind = np.full(n, np.inf)
    gaps = np.empty(k)
    sums = np.empty(n_chunks(n))
    for t in range(k):
        if t < len(prefix):
            row = int(prefix[t])
        else:
            u = float(uniforms[t - len(prefix)])
            if t == 0:
                chunk_sums(weights, sums)
                row = pick_index(weights, sums, u)
            elif sums.max() > 0.0:
                row = pick_product(weights, mind, sums, u)
            else:  # degenerate rule: by weight among rows not yet chosen
                row = _pick_unchosen(weights, rows[:t], u)
        rows[t] = row
        centers[t] = X[row]
        center_gaps(centers, t, gaps)
        d2_update(X, centers[t], weights, t, gaps, labels, mind, sums)
    return rows, labels, mind


def _kmeans_plusplus_lazy(X, weights, rng, n_clusters, prefix=(), max_pending=32,
                          max_rejections=4):
    """k-means++ with the distribution of :func:`_kmeans_plusplus`, reading ``X`` far less often.

    Returns (rows, labels, mind) as :func:`_kmeans_plusplus`; ``labels`` and ``mind`` are
    bit-identical to what it computes for the same centers.

    D^2 values only shrink as centers are added, so values refreshed when ``s`` centers existed are
    upper bounds ``b_i >= m_i`` on the current ones. A center is drawn by rejection: propose ``i``
    with probability ``w_i b_i / sum w b`` (stale chunk sums, no pass over X), compute ``m_i``
    against the centers added since the refresh only, accept with probability ``m_i / b_i``.
    Accepted draws have probability proportional to ``w_i m_i``: exactly D^2 sampling. After
    ``max_rejections`` rejections in a row, or ``max_pending`` centers since the last refresh, one
    pass over X applies all pending centers (:func:`~fedcore.kernels.seeding.d2_refresh`) and the
    draw is direct. The number of uniforms drawn from ``rng`` depends on the data.
    """
    n, d = X.shape
    rows = np.empty(n_clusters, dtype=np.int64)
    centers = np.empty((n_clusters, d), dtype=np.float64)
    labels = np.full(n, -1, dtype=np.int64)
    mind = np.full(n, np.inf)
    sums = np.empty(n_chunks(n))
    state = {"fresh": 0}

    def refresh(stop):
        start = state["fresh"]
        if stop > start:
            gaps = ((centers[start:stop, None, :] - centers[None, :stop, :]) ** 2).sum(axis=2)
            d2_refresh(X, centers, start, stop, gaps, weights, labels, mind, sums)
            state["fresh"] = stop

    for t in range(n_clusters):
        if t < len(prefix):
            row = int(prefix[t])
        elif t == 0:
            chunk_sums(weights, sums)
            row = pick_index(weights, sums, rng.random())
        else:
            row = _draw_lazy(X, weights, rng, centers, t, state, refresh, mind, sums, rows,
                             max_rejections)
        rows[t] = row
        centers[t] = X[row]
        # The first refresh comes right after the first center (or the whole prefix): before it,
        # neither mind nor sums describe any center, so no draw may read them.
        if (state["fresh"] == 0 and t + 1 >= len(prefix)) or t + 1 - state["fresh"] >= max_pending:
            refresh(t + 1)
    refresh(n_clusters)
    return rows, labels, mind


def _draw_lazy(X, weights, rng, centers, t, state, refresh, mind, sums, rows, max_rejections):
    """Draw center ``t`` by rejection from stale D^2 bounds (see :func:`_kmeans_plusplus_lazy`)."""
    rejections = 0
    while True:
        if sums.max() == 0.0:  # every bound is 0, so every D^2 is 0: the degenerate rule
            return _pick_unchosen(weights, rows[:t], rng.random())
        if state["fresh"] == t:  # bounds are exact: draw directly
            return pick_product(weights, mind, sums, rng.random())
        u, v = rng.random(2)
        row = pick_product(weights, mind, sums, u)
        bound = mind[row]
        if v * bound < min_sq_distance(X, row, centers, state["fresh"], t, bound):
            return row
        rejections += 1
        if rejections >= max_rejections:
            refresh(t)


def _pick_unchosen(weights, chosen, u):
    free = weights.copy()
    free[chosen] = 0.0
    sums = np.empty(n_chunks(free.shape[0]))
    chunk_sums(free, sums)
    return pick_index(free, sums, u)


def _check_n_clusters(n_clusters, weights):
    n_clusters = check_int(n_clusters, "n_clusters", min_value=1)
    if weights.shape[0] and not weights.any():
        raise ValueError("Argument 'sample_weight' is zero for every sample: a zero total weight "
                         "leaves nothing to cluster")
    n_positive = int(np.count_nonzero(weights))
    if n_clusters > n_positive:
        raise ValueError(f"Argument 'n_clusters' must be <= n_samples = {n_positive} (rows with "
                         f"positive sample weight), got {n_clusters}")
    return n_clusters


def kmeans_plusplus(X, n_clusters, *, sample_weight=None, random_state=None):
    """Vanilla k-means++ seeding (Arthur & Vassilvitskii 2007), weighted.

    The first center is drawn by weight, each next one by weighted D^2 sampling; when every
    remaining point has zero D^2 weight (duplicates), the next center is drawn by weight among the
    points not yet chosen. Draws are exact but read X far fewer than ``n_clusters`` times: rejection
    sampling from stale D^2 bounds with occasional multi-center refresh passes (see
    ``_kmeans_plusplus_lazy``). The same seed gives the same centers for any thread count.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    n_clusters : int, 1 <= n_clusters <= number of rows with positive weight
    sample_weight : array-like of shape (n_samples,), default=None (all ones)
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    centers : ndarray of shape (n_clusters, n_features), dtype of X (float32 or float64)
    indices : ndarray of shape (n_clusters,), int64 rows of X, in seeding order

    Examples
    --------
    >>> import numpy as np, fedcore
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]])
    >>> centers, idx = fedcore.kmeans_plusplus(X, 2, random_state=0)
    >>> sorted(int(i) // 2 for i in idx)   # one center from each pair
    [0, 1]
    """
    X = check_distance_range(check_array(X, "X"))
    weights = check_sample_weight(sample_weight, X.shape[0])
    n_clusters = _check_n_clusters(n_clusters, weights)
    rng = check_random_state(random_state)
    rows, _, _ = _kmeans_plusplus_lazy(X, weights, rng, n_clusters)
    return X[rows].copy(), rows


def assign(X, centers):
    """``(labels, sq_distances)`` of each row of validated ``X`` to its nearest center."""
    labels = np.empty(X.shape[0], dtype=np.int64)
    distances = np.empty(X.shape[0])
    assign_nearest(X, np.ascontiguousarray(np.asarray(centers, dtype=np.float64).T), labels,
                   distances)
    return labels, distances


def _tolerance(X, tol):
    """Absolute tolerance: ``tol`` times the mean per-feature variance of X, unweighted, as in
    scikit-learn."""
    if tol == 0:
        return 0.0
    return float(np.mean(np.var(X, axis=0)) * tol)


def _lloyd(X, weights, centers, max_iter, tol):
    """Weighted Lloyd from ``centers`` (float64, copied). Returns (centers, labels, inertia, n_iter).

    Runs :func:`fedcore.kernels.lloyd.lloyd_run`: exact distance bounds skip rows whose nearest
    center cannot change, with results equal to plain Lloyd bit for bit; empty clusters take the
    farthest rows; stops on unchanged labels, a squared center shift <= ``tol`` (absolute) or
    ``max_iter``.
    """
    n, d = X.shape
    centers = np.array(centers, dtype=np.float64, order="C")
    labels = np.empty(n, dtype=np.int64)
    distances = np.empty(n)
    # Distances are at most 2 sqrt(d) max|coordinate|; rounding in the bounds is far below this.
    margin = 1e-9 * 2.0 * np.sqrt(d) * max(float(np.abs(X).max()), float(np.abs(centers).max()))
    inertia, n_iter = lloyd_run(X, weights, centers, max_iter, tol, margin, labels, distances)
    return centers, labels, float(inertia), int(n_iter)


_POOL = None


def _lloyd_restarts(X, weights, inits, max_iter, tol):
    """Lloyd from each initialization, in order of ``inits``.

    Small problems (at most ``CHUNK_SIZE`` rows, where each kernel call runs on one thread) run
    their restarts concurrently on Numba's thread count (the kernels release the GIL); large ones
    run one after another with parallel kernels. The results do not depend on the schedule.
    """
    global _POOL
    threads = numba.get_num_threads()
    if len(inits) == 1 or X.shape[0] > CHUNK_SIZE or threads == 1:
        return [_lloyd(X, weights, c, max_iter, tol) for c in inits]
    if _POOL is None or _POOL._max_workers != threads:
        _POOL = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="fedcore-lloyd")
    return list(_POOL.map(lambda c: _lloyd(X, weights, c, max_iter, tol), inits))


class KMeans(BaseEstimator):
    """Weighted Lloyd k-means from k-means++ (or given) centers.

    Parameters
    ----------
    n_clusters : int, default=8
    init : "k-means++" or array-like of shape (n_clusters, n_features), default="k-means++"
    n_init : int, default=1
        Independent k-means++ starts; the lowest inertia wins. Ignored (one run) with array init.
    max_iter : int, default=300
    tol : float, default=1e-4
        Relative to the mean per-feature variance of X (unweighted), as in scikit-learn.
    random_state : None, int or numpy.random.Generator

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
    labels_ : ndarray of shape (n_samples,), int64
    inertia_ : float, weighted sum of squared distances to the nearest center
    n_iter_ : int
    n_features_in_ : int

    Notes
    -----
    Empty clusters are relocated deterministically: in increasing cluster index, each empty cluster
    takes the positive-weight row farthest from its assigned center (ties: lowest row index).
    Distances are exact sums of squared differences (no expanded form), in float64.

    Examples
    --------
    >>> import numpy as np, fedcore
    >>> X = np.array([[0.0], [1.0], [10.0], [11.0]])
    >>> km = fedcore.KMeans(2, random_state=0).fit(X)
    >>> sorted(km.cluster_centers_.ravel().tolist())
    [0.5, 10.5]
    """

    def __init__(self, n_clusters=8, *, init="k-means++", n_init=1, max_iter=300, tol=1e-4,
                 random_state=None):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def fit(self, X, y=None, sample_weight=None):
        X = check_distance_range(check_array(X, "X"))
        weights = check_sample_weight(sample_weight, X.shape[0])
        k = _check_n_clusters(self.n_clusters, weights)
        n_init = check_int(self.n_init, "n_init", min_value=1)
        max_iter = check_int(self.max_iter, "max_iter", min_value=1)
        tol = _tolerance(X, check_scalar(self.tol, "tol", min_value=0.0))
        rng = check_random_state(self.random_state)
        inits = list(self._initial_centers(X, weights, k, n_init, rng))
        results = _lloyd_restarts(X, weights, inits, max_iter, tol)
        best = min(range(len(results)), key=lambda i: results[i][2])  # first of the lowest
        centers, labels, inertia, n_iter = results[best]
        self.cluster_centers_ = centers.astype(X.dtype, copy=False)
        self.labels_ = labels
        self.inertia_ = float(inertia)
        self.n_iter_ = int(n_iter)
        self.n_features_in_ = X.shape[1]
        return self

    def _initial_centers(self, X, weights, k, n_init, rng):
        if isinstance(self.init, str):
            if self.init != "k-means++":
                raise ValueError(f"Argument 'init' must be 'k-means++' or an array, got {self.init!r}")
            for _ in range(n_init):
                rows, _, _ = _kmeans_plusplus_lazy(X, weights, rng, k)
                yield X[rows]
            return
        init = check_array(self.init, "init", dtype=("float64",))
        if init.shape != (k, X.shape[1]):
            raise ValueError(f"Argument 'init' must have shape ({k}, {X.shape[1]}), "
                             f"got {init.shape}")
        if n_init != 1:
            warnings.warn(f"Explicit initial centers given: running 1 initialization instead of "
                          f"n_init={n_init}.", RuntimeWarning, stacklevel=3)
        yield init

    def fit_predict(self, X, y=None, sample_weight=None):
        return self.fit(X, sample_weight=sample_weight).labels_

    def _check_X(self, X):
        check_is_fitted(self, "cluster_centers_")
        X = check_array(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input.")
        return X

    def predict(self, X):
        """Index of the nearest center for each row (lowest index on ties)."""
        return assign(self._check_X(X), self.cluster_centers_)[0]

    def transform(self, X):
        """Euclidean (not squared) distances to every center, shape (n_samples, n_clusters)."""
        X = self._check_X(X)
        out = np.empty((X.shape[0], self.cluster_centers_.shape[0]))
        pairwise_sq_distances(X, self._centers_t(), out)
        return np.sqrt(out, out=out)

    def fit_transform(self, X, y=None, sample_weight=None):
        return self.fit(X, sample_weight=sample_weight).transform(X)

    def score(self, X, y=None, sample_weight=None):
        """Opposite of the weighted inertia of X against the fitted centers."""
        X = self._check_X(X)
        weights = check_sample_weight(sample_weight, X.shape[0])
        return -float(weights @ assign(X, self.cluster_centers_)[1])

    def _centers_t(self):
        return np.ascontiguousarray(self.cluster_centers_.T, dtype=np.float64)
