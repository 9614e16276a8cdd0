"""Weighted Lloyd k-means (seeding in :mod:`fedcore.algorithms.kmeans.seeding`)."""
from __future__ import annotations

import contextlib
import sys
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

import numba
import numpy as np
from numpy.typing import ArrayLike

from ..._validation import (check_array, check_fitted_array, check_fitted_centers, check_int,
                           check_random_state, check_sample_weight, check_scalar,
                           check_weighted_range, max_abs, weight_names)
from ...kernels.kmeans.distances import (LANES_MAX_FEATURES, assign_nearest,
                                         pairwise_sq_distances)
from ...kernels.kmeans.lloyd import lloyd_run, one_blas_thread, uses_screen
from ...kernels.parallel import use_parallel
from ...kernels.summaries import mean_variance
from ..base import BaseEstimator, check_is_fitted
from .seeding import check_n_clusters_for_weights, _seed_rows, check_n_local_trials

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["KMeans", "assign"]


# assign runs one screened E-step of Lloyd's kernel where Lloyd would screen, for at least this
# many rows, and features x centers of at least this much or rows wider than the exact scan's lanes
# take (LANES_MAX_FEATURES). The kernels alone, 1e5 uniform float64 rows, median of 7 to 9 calls,
# the exact scan against the screened E-step: k = 10, d = 32, 40, 48: 1.7, 2.4, 3.2 against 3.2,
# 3.6, 4.0 ms; d = 56, 64: 5.9, 10.8 against 4.5, 5.5 ms; d = 48, k = 4: 2.6 against 3.6 ms; d =
# 40, k = 100: 9.1 against 6.0 ms; d = 100, k = 10: 16.4 against 8.9 ms (rows one at a time); d =
# 784, k = 10 and 100 (float32): 122 and 270 against 40 and 83 ms. 784 features, k = 10, by rows:
# 16 rows 0.036 against 0.061 ms, 64 rows 0.143 against 0.090 ms. Measured again with the fused
# screen (up to 64 features; 1e5 uniform float64 rows unless stated; same labels and distances
# asserted), median of 15 calls, screened against exact, speed-ups: d x k from 512 to 1024 mostly
# loses (d = 32, k = 16 and 32: 0.64, 0.62; d = 64, k = 8: 0.55; d = 40, k = 16: 0.73; d = 24, k =
# 24: 0.67; d = 10, k = 64 and 100: 0.85, 0.89; it lost at the BLAS screen too, d68c90f: 0.55,
# 0.64, 0.56) but for 2 features (k = 256 to 1000: 1.28-1.71) and d = 16, k = 64 float32 (1.10);
# from 1536 it wins or ties: d = 24, k = 64: 1.26; d = 48, k = 32: 0.93; d = 2, k = 800: 2.38; d =
# 20, k = 100 float32: 1.60; d = 32, k = 64: 1.21; d = 64, k = 32: 1.47; d = 50, k = 48: 1.44; d =
# 64, k = 64 float32: 3.16.
_ASSIGN_SCREEN_MIN_WORK = 1536
_ASSIGN_SCREEN_MIN_ROWS = 64


def assign(X: np.ndarray, centers: ArrayLike,
           scale: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, sq_distances)`` of each row of validated ``X`` to its nearest center (lowest
    index on ties; exact distances).

    Where Lloyd screens and the work pays (``_ASSIGN_SCREEN_*``), one E-step of Lloyd's kernel (a
    product, by BLAS beyond 64 features, then exact distances to the candidates it leaves: the
    same labels and distances; BLAS held to one thread meanwhile, process-wide); else the exact
    scan
    (:func:`~fedcore.kernels.kmeans.distances.assign_nearest`).

    ``scale``: :func:`~fedcore._validation.max_abs` of X when the caller has it (else the screen
    takes one more pass over X; 14 ms at 1e5 x 784). The kernels read ``X[i, f]`` for every
    feature of ``centers`` and trust the centers' values: a width mismatch, no center or a
    non-finite one is refused here, before they run."""
    if X.ndim != 2 or np.ndim(centers) != 2 or X.shape[1] != np.shape(centers)[1]:
        raise ValueError(f"Argument 'X' has shape {X.shape}, but the centers have "
                         f"{np.shape(centers)[-1]} features")
    n, d = X.shape
    centers = np.array(centers, dtype=np.float64, order="C")
    k = centers.shape[0]
    if k < 1 or not np.isfinite(centers).all():
        raise ValueError(f"Argument 'centers' must be at least one row of finite values, got "
                         f"shape {centers.shape} (finite: {bool(np.isfinite(centers).all())})")
    labels = np.empty(n, dtype=np.int64)
    distances = np.empty(n)
    if (n >= _ASSIGN_SCREEN_MIN_ROWS and uses_screen(d, k)
            and (d * k >= _ASSIGN_SCREEN_MIN_WORK or d > LANES_MAX_FEATURES)):
        margin, single = bound_settings(X, centers, scale)
        lloyd_run(X, np.ones(n), centers, 0, 0.0, margin, labels, distances, single=single)
        return labels, distances
    assign_nearest(X, np.ascontiguousarray(centers.T), labels, distances)
    return labels, distances


def absolute_tolerance(X, tol):
    """Absolute tolerance: ``tol`` times the mean per-feature variance of X, unweighted, as in
    scikit-learn (computed in float64, in one pass per moment, without a copy of X)."""
    if tol == 0:
        return 0.0
    return float(mean_variance(X) * tol)


def weighted_lloyd(X, weights, centers, max_iter, tol, scale=None):
    """Weighted Lloyd from ``centers`` (float64, copied).
    Returns (centers, labels, inertia, n_iter).

    Runs :func:`fedcore.kernels.kmeans.lloyd.lloyd_run`: exact distance bounds skip rows whose
    nearest center cannot change and a screen (a product and a rounding bound) rules out far
    centers, with results equal to
    plain Lloyd bit for bit; empty clusters take the farthest rows; stops on unchanged labels, a
    squared center shift <= ``tol`` (absolute) or ``max_iter``. ``scale``: :func:`max_abs` of X,
    when the caller has it (else one more pass over X).
    """
    n, d = X.shape
    centers = np.array(centers, dtype=np.float64, order="C")
    labels = np.empty(n, dtype=np.int64)
    distances = np.empty(n)
    margin, single = bound_settings(X, centers, scale)
    inertia, n_iter = lloyd_run(X, weights, centers, max_iter, tol, margin, labels, distances,
                                single=single)
    return centers, labels, float(inertia), int(n_iter)


def _margin(X, centers=None):
    """Slack of Lloyd's bound tests: distances are at most 2 sqrt(d) max|coordinate|; rounding in
    the bounds is far below 1e-9 of that. ``centers`` None: they are rows of X."""
    scale = max_abs(X)
    if centers is not None:
        scale = max(scale, float(np.abs(centers).max()))
    return _slack(scale, X.shape[1])


def _slack(scale, n_features):
    """:func:`_margin` from the largest absolute coordinate of the data and the centers."""
    return 1e-9 * 2.0 * np.sqrt(n_features) * scale


# The float32 screen's products stay finite for coordinates of this magnitude (which bounds them
# after the shift by the centers' mean too, and for rows read directly from X); larger data is
# screened in float64.
_SINGLE_SCREEN_RANGE = 2.0 ** 50


def bound_settings(X, centers, scale=None):
    """``(margin, single)`` of a Lloyd run on X from ``centers``: :func:`_margin` and whether its
    BLAS screen may run in float32 (see :func:`fedcore.kernels.kmeans.lloyd.make_screen`).
    ``scale``: :func:`max_abs` of X when the caller has it (else one pass over X)."""
    scale = max(max_abs(X) if scale is None else scale, float(np.abs(centers).max()))
    return _slack(scale, X.shape[1]), 2.0 * scale < _SINGLE_SCREEN_RANGE


_POOL = None
# Below this many features seeding is mostly interpreter work, which threads would only contend
# for; the seeds are then drawn before the concurrent Lloyd runs (same results).
_CONCURRENT_SEEDING_MIN_FEATURES = 32


def _lloyd_restarts(X, weights, starts, max_iter, tol, n_clusters, scale):
    """Lloyd from each start, in order of ``starts`` (initial centers, or callables that seed
    them with their own random stream). ``scale``: :func:`max_abs` of X.

    Small problems (too few rows for parallel kernels,
    :func:`~fedcore.kernels.parallel.use_parallel`) run their restarts concurrently on Numba's
    thread count (the kernels release the GIL), seeding included from
    ``_CONCURRENT_SEEDING_MIN_FEATURES`` features on; large ones run one after
    another with parallel kernels. The results do not depend on the schedule. Concurrent restarts
    that screen with BLAS hold BLAS to one thread meanwhile.
    """
    global _POOL

    def run(start):
        return weighted_lloyd(X, weights, start() if callable(start) else start, max_iter, tol,
                              scale)

    threads = numba.get_num_threads()
    if len(starts) == 1 or use_parallel(X.shape[0], X.size) or threads == 1:
        return [run(s) for s in starts]
    if X.shape[1] < _CONCURRENT_SEEDING_MIN_FEATURES:  # seeding is interpreter-bound: do it here
        starts = [s() if callable(s) else s for s in starts]
    if _POOL is None or _POOL._max_workers != threads:
        _POOL = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="fedcore-lloyd")
    with one_blas_thread() if uses_screen(X.shape[1], n_clusters) else contextlib.nullcontext():
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
    Distances are exact sums of squared differences (no expanded form), in float64. Rows whose
    label the bounds of [Hamerly] prove keep it, with no distance computed until the last E-step;
    from 32 features (and 2 clusters), or from 8 clusters, 2 features and d * k >= 384, the others
    are screened with a float32 product (formed in vector lanes up to 64 features, by BLAS beyond)
    and a rigorous rounding bound, and exact distances are computed to the few candidates only:
    same results as the plain scan.

    Examples
    --------
    >>> import numpy as np, fedcore
    >>> X = np.array([[0.0], [1.0], [10.0], [11.0]])
    >>> km = fedcore.KMeans(2, random_state=0).fit(X)
    >>> sorted(km.cluster_centers_.ravel().tolist())
    [0.5, 10.5]
    """

    def __init__(self, n_clusters: int = 8, *, init: Literal["k-means++"] | ArrayLike = "k-means++",
                 n_init: int = 1, max_iter: int = 300, tol: float = 1e-4,
                 random_state: np.random.Generator | int | None = None,
                 n_local_trials: Literal["auto"] | int | None = None) -> None:
        self.n_clusters = n_clusters
        self.init = init
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state
        self.n_local_trials = n_local_trials

    def fit(self, X: ArrayLike, y: object = None, sample_weight: ArrayLike | None = None) -> Self:
        X, scale = check_array(X, "X", distance_range=True, return_max_abs=True)
        weights = check_sample_weight(sample_weight, X.shape[0])
        k = check_n_clusters_for_weights(self.n_clusters, weights)
        check_weighted_range(X, float(weights.sum()), weight_names(sample_weight))
        n_init = check_int(self.n_init, "n_init", min_value=1)
        max_iter = check_int(self.max_iter, "max_iter", min_value=1)
        tol = absolute_tolerance(X, check_scalar(self.tol, "tol", min_value=0.0))
        n_local_trials = check_n_local_trials(self.n_local_trials, k)
        rng = check_random_state(self.random_state)
        inits = list(self._initial_centers(X, weights, k, n_init, rng, n_local_trials))
        results = _lloyd_restarts(X, weights, inits, max_iter, tol, k, scale)
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
                raise ValueError("Argument 'init' must be 'k-means++' or an array, got "
                                 f"{self.init!r}")
            if n_init == 1:  # the stream of kmeans_plusplus(random_state=rng)
                yield X[_seed_rows(X, weights, rng, k, n_local_trials)]
                return
            # One child stream per restart, so restarts can seed concurrently.
            for seed in rng.integers(2**63, size=n_init):
                child = np.random.default_rng(int(seed))
                yield lambda g=child: X[_seed_rows(X, weights, g, k, n_local_trials)]
            return
        init = check_array(self.init, "init", dtype=("float64",), distance_range=True)
        if init.shape != (k, X.shape[1]):
            raise ValueError(f"Argument 'init' must have shape ({k}, {X.shape[1]}), "
                             f"got {init.shape}")
        if n_init != 1:
            warnings.warn(f"Explicit initial centers given: running 1 initialization instead of "
                          f"n_init={n_init}.", RuntimeWarning, stacklevel=3)
        yield init

    def fit_predict(self, X: ArrayLike, y: object = None,
                    sample_weight: ArrayLike | None = None) -> np.ndarray:
        return self.fit(X, sample_weight=sample_weight).labels_

    def _check_X(self, X, return_max_abs=False):
        check_is_fitted(self, "cluster_centers_")
        return check_fitted_array(X, self.n_features_in_, type(self).__name__,
                                  return_max_abs=return_max_abs)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Index of the nearest center for each row (lowest index on ties)."""
        X, scale = self._check_X(X, return_max_abs=True)
        return assign(X, self.cluster_centers_, scale)[0]

    def transform(self, X: ArrayLike) -> np.ndarray:
        """Euclidean (not squared) distances to every center, shape (n_samples, n_clusters)."""
        X = self._check_X(X)
        out = np.empty((X.shape[0], self.cluster_centers_.shape[0]))
        pairwise_sq_distances(X, self._centers_t(), out)
        return np.sqrt(out, out=out)

    def fit_transform(self, X: ArrayLike, y: object = None,
                      sample_weight: ArrayLike | None = None) -> np.ndarray:
        return self.fit(X, sample_weight=sample_weight).transform(X)

    def score(self, X: ArrayLike, y: object = None,
              sample_weight: ArrayLike | None = None) -> float:
        """Opposite of the weighted inertia of X against the fitted centers."""
        X, scale = self._check_X(X, return_max_abs=True)
        weights = check_sample_weight(sample_weight, X.shape[0])
        check_weighted_range([X, self.cluster_centers_], float(weights.sum()),
                             weight_names(sample_weight))
        return -float(weights @ assign(X, self.cluster_centers_, scale)[1])

    def _centers_t(self):
        return check_fitted_centers(self.cluster_centers_, self.n_features_in_,
                                    type(self).__name__)
