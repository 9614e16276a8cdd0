"""k-means++ seeding and weighted Lloyd k-means."""
import contextlib
import functools
import numbers
import warnings
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from .._validation import (check_array, check_distance_range, check_int, check_random_state,
                           check_sample_weight, check_scalar)
from .._config import CHUNK_SIZE
from ..kernels.distances import assign_nearest, pairwise_sq_distances
from ..kernels.lloyd import lloyd_run
from ..kernels.seeding import (candidate_potentials, center_gaps, chunk_sums, d2_refresh, d2_update,
                               min_sq_distance, n_chunks, pick_index, pick_product)
from ._base import BaseEstimator, check_is_fitted

__all__ = ["kmeans_plusplus", "KMeans"]


def _kmeans_plusplus(X, weights, uniforms, prefix=(), trace=None):
    """k-means++ on validated input; one uniform per drawn center. Returns (rows, labels, mind).

    ``prefix`` rows are taken as the first centers without drawing (exact unlearning keeps the
    centers before the first removed one, MUFC Alg. 3 line 9). Then center ``t`` is drawn by D^2
    sampling (Appendix B), ``P(x) = w(x) d^2(x, C) / sum_y w(y) d^2(y, C)``; when that total is 0
    (every remaining row coincides with a center), uniformly by weight among rows not yet chosen.
    Rows of weight 0 are never drawn, which is how removed rows are excluded.

    ``labels`` is the first nearest center in seeding order, ``mind`` the squared distance to it.
    ``trace = (totals, d2)``, two float64 (k,) arrays, receives for every center ``t`` the total
    ``sum_y w(y) d^2(y, C)`` it was drawn against (the total weight for ``t = 0``) and its own
    ``d^2(x, C)`` (1 for ``t = 0``): what :mod:`fedcore.algorithms._coupled` needs to redraw
    exactly after the weights change.
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
        if t == 0:
            chunk_sums(weights, sums)
        if t < len(prefix):
            row = int(prefix[t])
        else:
            u = float(uniforms[t - len(prefix)])
            if t == 0:
                row = pick_index(weights, sums, u)
            elif sums.max() > 0.0:
                row = pick_product(weights, mind, sums, u)
            else:  # degenerate rule: by weight among rows not yet chosen
                row = _pick_unchosen(weights, rows[:t], u)
        if trace is not None:
            trace[0][t] = sums.sum()
            trace[1][t] = 1.0 if t == 0 else mind[row]
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


def _kmeans_plusplus_greedy(X, weights, first_uniform, trial_uniforms):
    """Greedy k-means++ on validated input; returns (rows, labels, mind) as
    :func:`_kmeans_plusplus` does.

    ``trial_uniforms`` has shape (n_clusters - 1, L). The first center is drawn by weight with
    ``first_uniform``. Center ``t >= 1`` is the best of ``L`` candidates, candidate ``p`` drawn by
    D^2 sampling with ``trial_uniforms[t - 1, p]`` (the draw of :func:`_kmeans_plusplus`): the one
    whose addition leaves the lowest potential ``sum_i w_i min(d_i^2, |x_i - c|^2)``, ties to the
    first drawn. Candidates may repeat. When every D^2 is 0 all candidates would tie at potential
    0, so the degenerate rule of :func:`_kmeans_plusplus` draws the center with
    ``trial_uniforms[t - 1, 0]`` alone. With ``L = 1`` this is :func:`_kmeans_plusplus`.
    """
    n, d = X.shape
    k = 1 + trial_uniforms.shape[0]
    L = trial_uniforms.shape[1]
    rows = np.empty(k, dtype=np.int64)
    centers = np.empty((k, d), dtype=np.float64)
    labels = np.full(n, -1, dtype=np.int64)
    mind = np.full(n, np.inf)
    gaps = np.empty(k)
    sums = np.empty(n_chunks(n))
    candidate_rows = np.empty(L, dtype=np.int64)
    partials = np.empty((n_chunks(n), L))
    potentials = np.empty(L)
    for t in range(k):
        if t == 0:
            chunk_sums(weights, sums)
            row = pick_index(weights, sums, float(first_uniform))
        elif sums.max() > 0.0:
            for p in range(L):
                candidate_rows[p] = pick_product(weights, mind, sums,
                                                 float(trial_uniforms[t - 1, p]))
            candidates = X[candidate_rows].astype(np.float64)
            # Only for pruning, whose margin covers the rounding of this sum.
            candidate_gaps = ((candidates[:, None, :] - centers[None, :t, :]) ** 2).sum(axis=2)
            candidate_potentials(X, candidates, candidate_gaps, weights, labels, mind, partials,
                                 potentials)
            row = int(candidate_rows[np.argmin(potentials)])  # argmin: first of the lowest
        else:  # degenerate rule: by weight among rows not yet chosen
            row = _pick_unchosen(weights, rows[:t], float(trial_uniforms[t - 1, 0]))
        rows[t] = row
        centers[t] = X[row]
        center_gaps(centers, t, gaps)
        d2_update(X, centers[t], weights, t, gaps, labels, mind, sums)
    return rows, labels, mind


def _seed_rows(X, weights, rng, n_clusters, n_local_trials=1):
    """Rows of k-means++ centers: vanilla (lazy sampler) for ``n_local_trials == 1``, else greedy.

    Greedy seeding takes ``1 + (n_clusters - 1) * n_local_trials`` uniforms from ``rng`` in one
    call; vanilla seeding draws exactly as :func:`_kmeans_plusplus_lazy`.
    """
    if n_local_trials == 1:
        return _kmeans_plusplus_lazy(X, weights, rng, n_clusters)[0]
    u = rng.random(1 + (n_clusters - 1) * n_local_trials)
    trials = u[1:].reshape(n_clusters - 1, n_local_trials)
    return _kmeans_plusplus_greedy(X, weights, u[0], trials)[0]


def check_n_local_trials(n_local_trials, n_clusters):
    """Candidates per center as an int: None -> 1 (vanilla), "auto" -> ``2 + floor(ln k)``
    (scikit-learn's choice), an int >= 1 as given."""
    if n_local_trials is None:
        return 1
    if isinstance(n_local_trials, str):
        if n_local_trials != "auto":
            raise ValueError(f"Argument 'n_local_trials' must be None, 'auto' or an int >= 1, "
                             f"got {n_local_trials!r}")
        return 2 + int(np.log(n_clusters))
    if isinstance(n_local_trials, bool) or not isinstance(n_local_trials, numbers.Integral):
        raise TypeError(f"Argument 'n_local_trials' must be None, 'auto' or an int >= 1, got "
                        f"{type(n_local_trials).__name__} {n_local_trials!r}")
    return check_int(n_local_trials, "n_local_trials", min_value=1)


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


def kmeans_plusplus(X, n_clusters, *, sample_weight=None, random_state=None, n_local_trials=None):
    """k-means++ seeding (Arthur & Vassilvitskii 2007), weighted, vanilla or greedy.

    The first center is drawn by weight, each next one by weighted D^2 sampling; when every
    remaining point has zero D^2 weight (duplicates), the next center is drawn by weight among the
    points not yet chosen. Rows of weight 0 are never drawn. The same seed gives the same centers
    for any thread count.

    Vanilla seeding (``n_local_trials`` None or 1) draws exactly but reads X far fewer than
    ``n_clusters`` times: rejection sampling from stale D^2 bounds with occasional multi-center
    refresh passes (see ``_kmeans_plusplus_lazy``). Greedy seeding (``n_local_trials = L >= 2``,
    scikit-learn's k-means++) draws ``L`` candidates per center by D^2 sampling and keeps the one
    that lowers the potential ``sum_i w_i min(d_i^2, |x_i - c|^2)`` the most (ties: the first
    drawn), at O(n d L) per center.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    n_clusters : int, 1 <= n_clusters <= number of rows with positive weight
    sample_weight : array-like of shape (n_samples,), default=None (all ones)
    random_state : None, int or numpy.random.Generator
    n_local_trials : None, "auto" or int >= 1, default=None
        Candidates per center; None or 1 is vanilla k-means++, "auto" is ``2 + floor(ln k)``
        (scikit-learn's value). Greedy seeding takes ``1 + (n_clusters - 1) * L`` uniforms.

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
    >>> centers, idx = fedcore.kmeans_plusplus(X, 2, random_state=0, n_local_trials="auto")
    >>> sorted(int(i) // 2 for i in idx)
    [0, 1]
    """
    X = check_distance_range(check_array(X, "X"))
    weights = check_sample_weight(sample_weight, X.shape[0])
    n_clusters = _check_n_clusters(n_clusters, weights)
    n_local_trials = check_n_local_trials(n_local_trials, n_clusters)
    rng = check_random_state(random_state)
    rows = _seed_rows(X, weights, rng, n_clusters, n_local_trials)
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


# Screen rows with a BLAS product (same results) from this many features and d * k.
_SCREEN_MIN_FEATURES = 32
_SCREEN_MIN_WORK = 2048


def _screens(n_features, n_clusters):
    """Whether Lloyd screens rows with a BLAS product for this shape."""
    return n_features >= _SCREEN_MIN_FEATURES and n_features * n_clusters >= _SCREEN_MIN_WORK


@functools.lru_cache(maxsize=None)
def _blas_controller():
    """threadpoolctl's controller of the loaded BLAS libraries, or None without threadpoolctl."""
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:
        return None
    return ThreadpoolController()


def _one_blas_thread():
    """Context limiting BLAS to one thread (process-wide) while Lloyd restarts run concurrently,
    through threadpoolctl when it is installed; a no-op otherwise (same results, slower)."""
    controller = _blas_controller()
    if controller is None:
        return contextlib.nullcontext()
    return controller.limit(limits=1, user_api="blas")


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
    screen = _screens(d, centers.shape[0])
    X64 = np.ascontiguousarray(X, dtype=np.float64) if screen else np.empty((0, 0))
    inertia, n_iter = lloyd_run(X, weights, centers, max_iter, tol, _margin(X, centers), labels,
                                distances, X64)
    return centers, labels, float(inertia), int(n_iter)


def _margin(X, centers):
    """Slack of Lloyd's bound tests: distances are at most 2 sqrt(d) max|coordinate|; rounding in
    the bounds is far below 1e-9 of that."""
    scale = max(float(np.abs(X).max()), float(np.abs(centers).max()))
    return 1e-9 * 2.0 * np.sqrt(X.shape[1]) * scale


_POOL = None
# Below this many features seeding is mostly interpreter work, which threads would only contend
# for; the seeds are then drawn before the concurrent Lloyd runs (same results).
_CONCURRENT_SEEDING_MIN_FEATURES = 32


def _lloyd_restarts(X, weights, starts, max_iter, tol, n_clusters):
    """Lloyd from each start, in order of ``starts`` (initial centers, or callables that seed
    them with their own random stream).

    Small problems (at most ``CHUNK_SIZE`` rows, where each kernel call runs on one thread) run
    their restarts concurrently on Numba's thread count (the kernels release the GIL), seeding
    included from ``_CONCURRENT_SEEDING_MIN_FEATURES`` features on; large ones run one after
    another with parallel kernels. The results do not depend on the schedule. Concurrent restarts
    that screen with BLAS (:func:`_screens`) hold BLAS to one thread meanwhile.
    """
    global _POOL

    def run(start):
        return _lloyd(X, weights, start() if callable(start) else start, max_iter, tol)

    threads = numba.get_num_threads()
    if len(starts) == 1 or X.shape[0] > CHUNK_SIZE or threads == 1:
        return [run(s) for s in starts]
    if X.shape[1] < _CONCURRENT_SEEDING_MIN_FEATURES:  # seeding is interpreter-bound: do it here
        starts = [s() if callable(s) else s for s in starts]
    if _POOL is None or _POOL._max_workers != threads:
        _POOL = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="fedcore-lloyd")
    with _one_blas_thread() if _screens(X.shape[1], n_clusters) else contextlib.nullcontext():
        return list(_POOL.map(run, starts))


class KMeans(BaseEstimator):
    """Weighted Lloyd k-means from k-means++ (or given) centers.

    Parameters
    ----------
    n_clusters : int, default=8
    init : "k-means++" or array-like of shape (n_clusters, n_features), default="k-means++"
    n_init : int, default=1
        Independent k-means++ starts; the lowest inertia wins (the first on ties). With
        ``n_init > 1`` each start seeds from its own child generator, seeded by one draw from
        ``random_state``, so small problems seed and run their starts concurrently. Ignored (one
        run) with array init.
    max_iter : int, default=300
    tol : float, default=1e-4
        Relative to the mean per-feature variance of X (unweighted), as in scikit-learn.
    random_state : None, int or numpy.random.Generator
    n_local_trials : None, "auto" or int >= 1, default=None
        k-means++ candidates per center (see :func:`kmeans_plusplus`): None or 1 is vanilla
        k-means++, ``L >= 2`` greedy k-means++ (the best of ``L`` D^2 draws), "auto" is
        ``2 + floor(ln n_clusters)``, the greedy seeding of scikit-learn's ``KMeans``. Ignored
        with array init.

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
    Distances are exact sums of squared differences (no expanded form), in float64. From 32
    features and ``d * k >= 2048``, Lloyd first screens centers with a BLAS product and a
    rigorous rounding bound, then computes exact distances to the candidates only: same results.

    Examples
    --------
    >>> import numpy as np, fedcore
    >>> X = np.array([[0.0], [1.0], [10.0], [11.0]])
    >>> km = fedcore.KMeans(2, random_state=0).fit(X)
    >>> sorted(km.cluster_centers_.ravel().tolist())
    [0.5, 10.5]
    """

    def __init__(self, n_clusters=8, *, init="k-means++", n_init=1, max_iter=300, tol=1e-4,
                 random_state=None, n_local_trials=None):
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.n_local_trials = n_local_trials

    def fit(self, X, y=None, sample_weight=None):
        X = check_distance_range(check_array(X, "X"))
        weights = check_sample_weight(sample_weight, X.shape[0])
        k = _check_n_clusters(self.n_clusters, weights)
        n_init = check_int(self.n_init, "n_init", min_value=1)
        max_iter = check_int(self.max_iter, "max_iter", min_value=1)
        tol = _tolerance(X, check_scalar(self.tol, "tol", min_value=0.0))
        n_local_trials = check_n_local_trials(self.n_local_trials, k)
        rng = check_random_state(self.random_state)
        inits = list(self._initial_centers(X, weights, k, n_init, rng, n_local_trials))
        results = _lloyd_restarts(X, weights, inits, max_iter, tol, k)
        best = min(range(len(results)), key=lambda i: results[i][2])  # first of the lowest
        centers, labels, inertia, n_iter = results[best]
        self.cluster_centers_ = centers.astype(X.dtype, copy=False)
        self.labels_ = labels
        self.inertia_ = float(inertia)
        self.n_iter_ = int(n_iter)
        self.n_features_in_ = X.shape[1]
        return self

    def _initial_centers(self, X, weights, k, n_init, rng, n_local_trials):
        if isinstance(self.init, str):
            if self.init != "k-means++":
                raise ValueError(f"Argument 'init' must be 'k-means++' or an array, got {self.init!r}")
            if n_init == 1:  # the stream of kmeans_plusplus(random_state=rng)
                yield X[_seed_rows(X, weights, rng, k, n_local_trials)]
                return
            # One child stream per restart, so restarts can seed concurrently.
            for seed in rng.integers(2**63, size=n_init):
                child = np.random.default_rng(int(seed))
                yield lambda g=child: X[_seed_rows(X, weights, g, k, n_local_trials)]
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
