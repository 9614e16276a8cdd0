"""Weighted k-means restarts that re-fit exactly, and cheaply, after a small change of the data.

MUFC's server re-clusters the aggregate after every removal with fresh randomness (Alg. 4, line
8), so that its model has the distribution of a fit on the remaining data. A removal changes one
bin count (a client's retrain at most 2K'), so :class:`CoupledKMeans` couples each restart's new
run with its previous one instead of starting over:

* k-means++ seeding, step by step (maximal coupling). Given the same earlier centers, step ``t``
  drew its center ``c`` from ``P_t(x) = w(x) D_t^2(x) / S_t``; on the new weights ``w'`` it must
  draw from ``Q_t(x) = w'(x) D_t^2(x) / S'_t``. Keep ``c`` with probability
  ``min(1, Q_t(c) / P_t(c))``; otherwise draw from the residual ``(Q_t - P_t)^+`` and continue
  with fresh k-means++. Then ``P(center t = x) = min(P_t, Q_t)(x) + (Q_t - P_t)^+(x) = Q_t(x)``:
  the new seeds have exactly the distribution of k-means++ on the new data, given that the old
  ones had it on the old data (the same argument as MUFC Lemma 5.1 for Alg. 3, which is the case
  of one removed point). Only ``S'_t = S_t + sum_r (w'_r - w_r) D_t^2(r)`` over the changed rows
  ``r`` is needed, O(k d) per changed row; the full distributions only on a rejection, a zero
  total or the degenerate rule (``S_t = 0``: by weight among rows not yet chosen).
* Lloyd from unchanged seeds is a deterministic function of the seeds and the data; it is replayed
  from the previous run's E-steps (:func:`fedcore.kernels.kmeans.lloyd.lloyd_core` with a prior),
  which gives the same bits as a fresh run at O(n + k d) per iteration, plus the rows of the
  clusters the change touches, instead of O(n k d).

Rows are identified by unique integer keys (MUFC's bin coordinates, one row of integers each), so
rows keep their identity when bins empty out or appear. The best restart (lowest inertia, first
on ties) is the model.
"""
import functools
from typing import NamedTuple

import numpy as np

from ...kernels.kmeans.distances import pairwise_sq_distances
from ...kernels.kmeans.lloyd import lloyd_core
from ...kernels.kmeans.lloyd_replay import LloydPrior
from .rows import match_rows
from ..kmeans.lloyd import bound_settings, absolute_tolerance
from ..kmeans.seeding import seed_from_uniforms

# Below this fraction of the old total the incremental new total could be mostly rounding: the
# step is then computed in full.
_TOTAL_GUARD = 1e-9


class _Restart(NamedTuple):
    seeds: np.ndarray     # int64 (k,): rows of the seeds in their run's data, in seeding order
    totals: np.ndarray    # float64 (k,): S_t, the D^2 total each seed was drawn against
    trace: object         # Lloyd's E-steps, a fedcore.kernels.kmeans.lloyd_replay.LloydTrace
    centers: np.ndarray
    inertia: float
    n_iter: int


def _lloyd_traced(X, weights, centers, max_iter, tol, margin, prior, single=None):
    """Lloyd as :func:`fedcore.algorithms.kmeans.lloyd.weighted_lloyd`, recording its E-steps and
    replaying ``prior`` (a :class:`~fedcore.kernels.kmeans.lloyd_replay.LloydPrior`). Returns
    (centers, inertia, n_iter, trace).
    ``margin``: :func:`~fedcore.algorithms.kmeans._margin` of X (the centers are rows of X);
    ``single``: the screen's precision (None: from X and the centers)."""
    n = X.shape[0]
    centers = np.array(centers, dtype=np.float64, order="C")
    labels = np.empty(n, dtype=np.int64)
    distances = np.empty(n)
    inertia, n_iter, trace = lloyd_core(X, weights, centers, max_iter, tol, margin, labels,
                                        distances, record=True, prior=prior,
                                        single=bound_settings(X, centers)[1] if single is None
                                        else single)
    return centers, float(inertia), int(n_iter), trace


class _Change:
    """Old and new rows side by side: the new rows, then the old rows that vanished."""

    def __init__(self, old, new):
        (old_keys, old_X, old_w), (keys, X, w) = old, new
        self.prior_rows = match_rows(old_keys, keys)
        self.n_new = keys.shape[0]
        self.side_of_old = np.full(old_keys.shape[0], -1)
        self.side_of_old[self.prior_rows[self.prior_rows >= 0]] = np.flatnonzero(
            self.prior_rows >= 0)
        gone = self.gone = np.flatnonzero(self.side_of_old < 0)
        self.side_of_old[gone] = self.n_new + np.arange(gone.shape[0])
        self._X, self._X_gone = X, old_X[gone]
        self.w_old = np.concatenate([np.where(self.prior_rows >= 0, old_w[self.prior_rows], 0.0),
                                     old_w[gone]])
        self.w_new = np.concatenate([w, np.zeros(gone.shape[0])])
        self.changed = np.flatnonzero(self.w_old != self.w_new)

    @functools.cached_property
    def X(self):
        """Every side-by-side row (built only when a step needs the full distributions)."""
        return np.concatenate([self._X, self._X_gone])

    def rows(self, idx):
        """Side-by-side rows ``idx``, without building :attr:`X`."""
        new = idx < self.n_new
        out = np.empty((idx.shape[0], self._X.shape[1]))
        out[new] = self._X[idx[new]]
        out[~new] = self._X_gone[idx[~new] - self.n_new]
        return out


def _sq_distances(X, centers):
    out = np.empty((X.shape[0], centers.shape[0]))
    pairwise_sq_distances(X, np.ascontiguousarray(centers.T, dtype=np.float64), out)
    return out


def _step_distributions(change, seeds, t):
    """``P_t`` and ``Q_t`` over the side-by-side rows given seeds ``0..t-1`` (positions), and
    ``S'_t``; the degenerate rule where a total is 0."""
    if t == 0:
        d2 = np.ones(change.X.shape[0])
    else:
        d2 = _sq_distances(change.X, change.X[seeds[:t]]).min(axis=1)
    dists = []
    for w in (change.w_old, change.w_new):
        mass = w * d2
        total = mass.sum()
        if total == 0.0:  # degenerate rule: by weight among rows not yet chosen
            mass = w.copy()
            mass[seeds[:t]] = 0.0
        dists.append(mass / mass.sum())
    return dists[0], dists[1], float((change.w_new * d2).sum())


def _residual_draw(P, Q, rng):
    """A row drawn from ``(Q - P)^+`` (from ``Q`` where that is zero to rounding)."""
    residual = np.maximum(Q - P, 0.0)
    cumulative = np.cumsum(residual)
    if cumulative[-1] <= 0.0:
        cumulative = np.cumsum(Q)
    return int(min(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"),
                   cumulative.shape[0] - 1))


def _keep(q, p, rng):
    """Keep a draw of ``P`` with probability ``min(1, q / p)`` (``q = Q(c)``, ``p = P(c)``)."""
    return q >= p or rng.random() * p < q


def _couple_seeds(restart, change, data, rng):
    """New (rows, totals, kept) for one restart; ``kept``: every seed stayed."""
    _, X, w = data
    k = restart.seeds.shape[0]
    seeds = change.side_of_old[restart.seeds]
    totals = restart.totals.copy()
    ch = change.changed
    if ch.shape[0] > 0:
        # D_t^2 of the changed rows for t = 1..k-1: distance to the nearest of seeds 0..t-1.
        prefix = np.minimum.accumulate(_sq_distances(change.rows(ch), change.rows(seeds)), axis=1)
        dw = change.w_new[ch] - change.w_old[ch]
        new_totals = totals + np.concatenate([[dw.sum()], dw @ prefix[:, :-1]])
    else:
        new_totals = totals
    for t in range(k if ch.shape[0] > 0 else 0):
        c = seeds[t]
        if totals[t] > 0.0 and new_totals[t] > _TOTAL_GUARD * totals[t]:
            # Q_t(c) / P_t(c): D_t^2(c) cancels.
            if _keep(change.w_new[c] * totals[t], change.w_old[c] * new_totals[t], rng):
                continue
            P, Q, _ = _step_distributions(change, seeds, t)
        else:
            P, Q, new_totals[t] = _step_distributions(change, seeds, t)
            if _keep(Q[c], P[c], rng):
                continue
        row = _residual_draw(P, Q, rng)
        prefix_rows = np.append(seeds[:t], row)
        rows = seed_from_uniforms(X, w, rng.random(k - t - 1), prefix_rows, totals=totals)[0]
        return rows, totals, False
    return seeds, new_totals, True


class CoupledKMeans:
    """Weighted k-means++ + Lloyd with ``n_init`` restarts (the model of :class:`fedcore.KMeans`
    with vanilla seeding) that :meth:`refit` re-fits exactly after a change of the data.

    ``fit(keys, X, weights, rng)`` then any number of ``refit(keys, X, weights, rng)``: after each,
    the restarts' seeds have exactly the distribution of independent k-means++ runs on the current
    data (see the module docstring), Lloyd from them gives the same bits as a fresh Lloyd, and
    ``cluster_centers_`` is the best restart's. ``keys``: unique int64 row identities, (n,) or
    (n, q); ``weights`` float64 > 0; at least ``n_clusters`` rows. ``n_redrawn_``: restarts whose
    seeds changed in the last call. Memory: each restart keeps Lloyd's labels, bounds, distances
    and centers of every iteration, O(n_iter (n + k d)).
    """

    def __init__(self, n_clusters, n_init=10, max_iter=300, tol=1e-4):
        self.n_clusters = n_clusters
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, keys, X, weights, rng):
        data = self._check(keys, X, weights)
        _, X, weights = data
        seeds = []
        for _ in range(self.n_init):
            totals = np.empty(self.n_clusters)
            rows = seed_from_uniforms(X, weights, rng.random(self.n_clusters), totals=totals)[0]
            seeds.append((rows, totals, None))
        return self._publish(data, self._lloyd_all(data, seeds), self.n_init)

    def refit(self, keys, X, weights, rng):
        data = self._check(keys, X, weights)
        change = _Change(self._data, data)
        seeds = []
        for restart in self._restarts:
            rows, totals, kept = _couple_seeds(restart, change, data, rng)
            prior = LloydPrior(self._data[2], restart.trace, change.prior_rows, change.gone) \
                if kept else None
            seeds.append((rows, totals, prior))
        redrawn = sum(prior is None for *_, prior in seeds)
        return self._publish(data, self._lloyd_all(data, seeds), redrawn)

    def _lloyd_all(self, data, seeds):
        """Lloyd from every restart's seeds (replaying its prior, if any). One after another:
        a replay is too short for threads to pay off (measured at MUFC's shapes)."""
        _, X, w = data
        tol = absolute_tolerance(X, self.tol)
        margin, single = bound_settings(X, X[:1])  # one pass; the centers are rows of X

        def run(seed):
            rows, totals, prior = seed
            centers, inertia, n_iter, trace = _lloyd_traced(
                X, w, X[rows], self.max_iter, tol, margin, prior, single)
            return _Restart(np.asarray(rows), totals, trace, centers, inertia, n_iter)

        return [run(seed) for seed in seeds]

    def check_state(self):
        """``ValueError`` unless the kept data and every restart (seed rows, Lloyd trace,
        centers) agree in shape, type and range: what :meth:`refit`'s replay indexes with."""
        try:
            keys, X, w = self._data
            m, d, k = X.shape[0], X.shape[1], self.n_clusters
            ok = (keys.ndim == 2 and keys.shape[0] == m and keys.dtype == np.int64
                  and X.dtype == np.float64 and w.shape == (m,) and w.dtype == np.float64
                  and bool(np.isfinite(X).all()) and len(self._restarts) >= 1)
            for r in self._restarts:
                t = r.trace
                steps = t.labels.shape[0]
                ok = ok and (r.seeds.shape == (k,) and bool(((r.seeds >= 0) & (r.seeds < m)).all())
                             and r.centers.shape == (k, d) and t.labels.shape == (steps, m)
                             and t.labels.dtype == np.int64
                             and bool(((t.labels >= 0) & (t.labels < k)).all())
                             and t.lower.shape == (steps, m) and t.distances.shape == (steps, m)
                             and t.centers.shape == (steps, k, d) and t.moved.shape == (steps,)
                             and t.lower.dtype == t.distances.dtype == t.centers.dtype
                             == np.float64 and t.moved.dtype == np.bool_)
        except (AttributeError, TypeError, ValueError, IndexError):
            ok = False
        if not ok:
            raise ValueError("The state of the server's coupled k-means is inconsistent (it was "
                             "not fitted by fedcore, or was altered)")

    def _check(self, keys, X, weights):
        keys = np.asarray(keys, dtype=np.int64)
        keys = keys.reshape(keys.shape[0], -1)
        if keys.shape[0] < self.n_clusters:
            raise ValueError(f"CoupledKMeans needs at least {self.n_clusters} rows, "
                             f"got {keys.shape[0]}")
        # Copies: the next refit compares against them, whatever the caller does with its arrays.
        return (keys.copy(), np.array(X, dtype=np.float64, order="C"),
                np.array(weights, dtype=np.float64))

    def _publish(self, data, restarts, redrawn):
        best = min(range(len(restarts)), key=lambda i: restarts[i].inertia)  # first of the lowest
        self._data, self._restarts = data, restarts
        self.cluster_centers_ = restarts[best].centers
        self.inertia_ = restarts[best].inertia
        self.n_iter_ = restarts[best].n_iter
        self.n_redrawn_ = int(redrawn)
        return self
