"""k-means++ seeding with exact removal of points (MUFC Alg. 3, Lemma 5.1)."""
from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import (check_array, check_ids, check_int, check_random_state,
                           check_scalar, check_weighted_range)
from ..base import BaseEstimator, check_is_fitted
from ..kmeans.lloyd import weighted_lloyd, absolute_tolerance
from ..kmeans.seeding import check_n_clusters_for_weights, seed_lazy

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["UnlearnableKMeans", "RemovalResult"]


@dataclass(frozen=True)
class RemovalResult:
    """Outcome of one removal request.

    ``retrained`` is True when a center was removed and centers from ``restart_position`` (0-based
    index ``i`` of Alg. 3 line 5) on were redrawn; ``restart_position`` is None otherwise.
    """

    retrained: bool
    restart_position: object
    n_removed: int


class UnlearnableKMeans(BaseEstimator):
    """k-means++ seeding that forgets points exactly (MUFC Alg. 3).

    ``fit`` draws ``n_clusters`` centers by k-means++ (first uniformly, then by D^2 sampling, with
    the degenerate rule of :func:`fedcore.kmeans_plusplus`) and assigns every point to its first
    nearest center in seeding order. ``remove(ids)`` deletes points by id:

    * no removed point is a center: centers stay (Alg. 3 line 3); only cluster sizes and
      bookkeeping change, O(|R|) work and no pass over the data;
    * the first removed center is center ``i``: centers ``0..i-1`` stay and centers ``i..K-1`` are
      redrawn by D^2 sampling on the remaining points with fresh randomness (Alg. 3 lines 5-14),
      then every point is reassigned, O(n K d).

    Exactness (Lemma 5.1, Appendix E): the ordered centers after ``fit(X)`` then ``remove(R)`` have
    exactly the distribution of ``fit(X \\ R)``. The degenerate rule keeps this true with
    duplicates: conditioned on not being removed, "by weight among unchosen points" restricted to
    the remaining points is again that rule.

    Parameters
    ----------
    n_clusters : int
    refine : bool, default=False
        Run weighted Lloyd from the seeds after fitting and after every removal. The refined model
        is a deterministic function of the (exactly unlearned) seeds and the remaining data, so it
        is exact too; the price is a Lloyd run, O(n K d T), on every removal, even one that hits
        no center.
    max_iter, tol : Lloyd's settings when ``refine=True`` (see :class:`fedcore.KMeans`).
    random_state : None, int or numpy.random.Generator
        The generator is kept: removals draw fresh uniforms from it.

    Attributes
    ----------
    cluster_centers_ : ndarray (n_clusters, n_features), seeds (true data points, seeding order),
        or Lloyd's centers when ``refine=True``
    seeds_ : ndarray (n_clusters, n_features), the k-means++ centers
    center_ids_ : ndarray (n_clusters,), int64 ids of the seeds
    labels_ : ndarray (n_samples_,), cluster of each remaining point, in original row order
    sample_ids_ : ndarray (n_samples_,), ids of the remaining points, in original row order
    cluster_sizes_ : ndarray (n_clusters,), int64
    n_samples_ : int, number of remaining points
    """

    #: What :meth:`remove` changes, for callers that make it part of a larger transaction
    #: (:func:`fedcore.algorithms.base.all_or_nothing`): mutated in place, then replaced.
    REMOVAL_DEEP = ("_weights", "_slot", "_rng", "cluster_sizes_")
    REMOVAL_SHALLOW = ("n_samples_", "_rows", "_labels", "seeds_", "center_ids_",
                       "cluster_centers_")

    def __init__(self, n_clusters: int = 8, *, refine: bool = False, max_iter: int = 300,
                 tol: float = 1e-4, random_state: np.random.Generator | int | None = None) -> None:
        self.n_clusters = n_clusters
        self.refine = refine
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def fit(self, X: ArrayLike, sample_ids: ArrayLike | None = None,
            y: object = None) -> Self:
        X = check_array(X, "X", copy=True, distance_range=True)
        n = X.shape[0]
        check_weighted_range(X, float(n))
        ids = np.arange(n, dtype=np.int64) if sample_ids is None else check_ids(sample_ids,
                                                                                 "sample_ids")
        if ids.shape[0] != n:
            raise ValueError(f"Argument 'sample_ids' must have length {n} (rows of X), "
                             f"got {ids.shape[0]}")
        weights = np.ones(n)
        k = check_n_clusters_for_weights(self.n_clusters, weights)
        max_iter = check_int(self.max_iter, "max_iter", min_value=1)
        check_scalar(self.tol, "tol", min_value=0.0)
        rng = check_random_state(self.random_state)
        # Validated: only now does the model change (a refused fit leaves a fitted model as is).
        self._weights, self._k, self._max_iter, self._rng = weights, k, max_iter, rng
        self._X = X
        self._ids = ids
        self._order = np.argsort(ids, kind="stable")
        self._sorted_ids = ids[self._order]
        self._slot = np.full(n, -1, dtype=np.int64)
        self._rows = np.empty(0, dtype=np.int64)
        self.n_samples_ = n
        self.n_features_in_ = X.shape[1]
        self._seed(())
        return self

    def _seed(self, prefix):
        """Redraw centers after ``prefix`` (Alg. 3 lines 11-14) and reassign every point."""
        rows, labels, _ = seed_lazy(self._X, self._weights, self._rng, self._k, prefix)
        self._commit(self._state(rows, labels))

    def _state(self, rows, labels):
        """The fitted attributes for centers ``rows`` and seeding ``labels``, computed without
        changing the model (Lloyd's refinement included), as a dict for :meth:`_commit`."""
        seeds = self._X[rows].copy()
        state = {"_rows": rows, "seeds_": seeds, "center_ids_": self._ids[rows],
                 "cluster_centers_": seeds, "_labels": labels}
        if self.refine:
            tol = absolute_tolerance(self._X, self.tol)
            centers, labels, _, _ = weighted_lloyd(self._X, self._weights, seeds,
                                                   self._max_iter, tol)
            state.update(cluster_centers_=centers.astype(self._X.dtype, copy=False),
                         _labels=labels)
        alive = self._weights > 0.0
        state["cluster_sizes_"] = np.bincount(state["_labels"][alive],
                                              minlength=self._k).astype(np.int64)
        return state

    def _commit(self, state):
        """Make ``state`` (from :meth:`_state`) the model's; cannot fail."""
        self._slot[self._rows] = -1
        self._slot[state["_rows"]] = np.arange(self._k)
        self.__dict__.update(state)

    @property
    def labels_(self) -> np.ndarray:
        check_is_fitted(self, "_labels")
        return self._labels[self._weights > 0.0]

    @property
    def sample_ids_(self) -> np.ndarray:
        check_is_fitted(self, "_ids")
        return self._ids[self._weights > 0.0]

    def check_state(self) -> None:
        """Refuse (``ValueError``) a fitted state whose arrays disagree in shape, dtype or range
        (what :meth:`remove` and the seeding kernels index with); see
        :meth:`fedcore.algorithms.base.BaseEstimator.check_state`."""
        if not hasattr(self, "_X"):
            return
        name = type(self).__name__
        X = self._X
        ok = (isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype in (np.float32, np.float64)
              and X.shape[0] >= 1 and bool(np.isfinite(X).all()))
        n = X.shape[0] if ok else 0
        k = self._k if type(getattr(self, "_k", None)) is int else 0
        ok = ok and k >= 1 and self.n_features_in_ == X.shape[1]
        shapes = {"_weights": ((n,), np.float64), "_ids": ((n,), np.int64),
                  "_order": ((n,), np.int64), "_sorted_ids": ((n,), np.int64),
                  "_slot": ((n,), np.int64), "_labels": ((n,), np.int64),
                  "_rows": ((k,), np.int64), "center_ids_": ((k,), np.int64),
                  "seeds_": ((k, X.shape[1] if ok else 0), X.dtype),
                  "cluster_centers_": ((k, X.shape[1] if ok else 0), X.dtype),
                  "cluster_sizes_": ((k,), np.int64)}
        for attr, (shape, dtype) in shapes.items():
            a = getattr(self, attr, None)
            ok = ok and isinstance(a, np.ndarray) and a.shape == shape and a.dtype == dtype
        if ok:
            w, rows, order = self._weights, self._rows, self._order
            ok = (bool(np.isin(w, (0.0, 1.0)).all()) and self.n_samples_ == int((w > 0).sum())
                  and bool(((self._labels >= 0) & (self._labels < k)).all())
                  and bool(((self._slot >= -1) & (self._slot < k)).all())
                  and bool(((rows >= 0) & (rows < n)).all())
                  and np.array_equal(self._slot[rows], np.arange(k))
                  and int((self._slot >= 0).sum()) == k
                  and np.array_equal(np.sort(order), np.arange(n))
                  and np.array_equal(self._sorted_ids, self._ids[order])
                  and bool((np.diff(self._sorted_ids) > 0).all())
                  and np.array_equal(self.center_ids_, self._ids[rows])
                  and bool(np.isfinite(self.cluster_centers_).all()))
        if not ok:
            raise ValueError(f"The state of this {name} is inconsistent (its arrays disagree in "
                             "shape, type or range): it was not fitted by fedcore, or was "
                             "altered")

    def remaining(self) -> tuple[np.ndarray, np.ndarray]:
        """``(X, ids)`` of the points not removed, in original row order (the model's own copy)."""
        check_is_fitted(self, "_X")
        alive = self._weights > 0.0
        return self._X[alive], self._ids[alive]

    def _rows_of(self, ids):
        pos = np.searchsorted(self._sorted_ids, ids)
        pos = np.minimum(pos, self._sorted_ids.shape[0] - 1)
        unknown = self._sorted_ids[pos] != ids
        if unknown.any():
            raise ValueError(f"Argument 'ids' contains unknown id {int(ids[unknown][0])}")
        rows = self._order[pos]
        gone = self._weights[rows] == 0.0
        if gone.any():
            raise ValueError(f"Argument 'ids' contains id {int(ids[gone][0])}, which was "
                             "already removed")
        return rows

    def remove(self, ids: ArrayLike) -> RemovalResult:
        """Remove points by id, exactly (Alg. 3). Atomic: on error nothing changes.

        Parameters
        ----------
        ids : int or array-like of int, ids given to ``fit`` (default: row numbers)

        Returns
        -------
        RemovalResult
        """
        check_is_fitted(self, "_labels")
        ids = check_ids(ids, "ids")
        rows = self._rows_of(ids)
        if self.n_samples_ - rows.shape[0] < self._k:
            raise ValueError(f"Argument 'ids': removing {rows.shape[0]} point(s) would leave "
                             f"{self.n_samples_ - rows.shape[0]} < n_clusters = {self._k}")
        hit = self._slot[rows]
        hit = hit[hit >= 0]
        weights, stream = self._weights[rows].copy(), self._rng.bit_generator.state
        self._weights[rows] = 0.0
        try:  # the new state is computed first, then committed: a failure changes nothing
            if hit.size == 0:
                if self.refine:
                    self._commit(self._state(self._rows, self._labels))
                else:
                    np.subtract.at(self.cluster_sizes_, self._labels[rows], 1)
                restart = None
            else:
                restart = int(hit.min())
                self._seed(self._rows[:restart])
        except BaseException:
            self._weights[rows] = weights
            self._rng.bit_generator.state = stream
            raise
        self.n_samples_ -= rows.shape[0]
        return RemovalResult(restart is not None, restart, int(rows.shape[0]))
