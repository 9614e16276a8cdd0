"""Coordinate-descent k-means: CDKM (Alg. 1), BCDKM (Alg. 2) and DisBCDKM (Alg. 3) of the F3KM paper.

The engine here is shared with :mod:`fedcore.algorithms.fair` (F3KM): a list of parties, each
holding a block of columns, its cached statistics and (optionally) protected groups. One party
with all columns is the single-machine case and runs whole sweeps inside one kernel
(:func:`fedcore.kernels.cd_kmeans.bcd_sweep`); several parties (a ``VerticalFederation``) run the
same kernels range by range, the server summing the parties' objectives (eq. (18)) and every
message recorded in a :class:`~fedcore.federation.CommLedger`.
"""
import math

import numpy as np

from .._validation import check_array, check_int, check_random_state
from ..federation.ledger import SERVER, CommLedger
from ..federation.vertical import VerticalFederation
from ..kernels import cd_kmeans as K
from ..kernels.distances import assign_nearest
from ._base import BaseEstimator, check_is_fitted
from .kmeans import _kmeans_plusplus_lazy

__all__ = ["CDKM", "BCDKM", "bcd_kmeans"]

# Decisions ignore objective differences below RTOL times the scale of the row objectives
# (a rounding allowance; see fedcore.kernels.cd_kmeans).
RTOL = 1e-9


class _Party:
    """One party's columns, cached statistics and protected groups (Alg. 5 line 2)."""

    def __init__(self, X, k, codes=None, n_groups=0):
        self.X = X
        n, d = X.shape
        self.shift = np.empty(d)
        self.column_sumsq = np.empty(d)
        K.column_moments(X, self.shift, self.column_sumsq)
        self.total_sumsq = float(self.column_sumsq.sum())
        self.xx = np.empty(n)
        K.centered_sq_norms(X, self.shift, self.xx)
        self.codes = np.zeros((n, 0), dtype=np.int64) if codes is None else codes
        self.n_groups = int(n_groups)
        self.sums = np.empty((k, d))
        self.counts = np.empty(k, dtype=np.int64)
        self.sqnorms = np.empty(k)
        self.group_counts = np.empty((self.n_groups, k), dtype=np.int64)
        self.theta = np.zeros((self.n_groups, k))
        self.u = np.zeros((self.n_groups, k))

    def init_statistics(self, labels):
        K.cluster_statistics(self.X, self.shift, labels, self.codes, self.sums, self.counts,
                             self.sqnorms, self.group_counts)

    def explained(self):
        """``sum_m |S_m|^2 / n_m`` from the sums (the party's part of T - SSE)."""
        full = self.counts > 0
        return float(((self.sums[full] ** 2).sum(axis=1) / self.counts[full]).sum())


class _Engine:
    """Runs BCD sweeps over parties; records communication when ``ledger`` is given."""

    def __init__(self, parties, labels, k, block_size, ledger=None):
        self.parties = parties
        self.labels = labels
        self.k = k
        self.n = labels.shape[0]
        self.block_size = block_size
        self.ledger = ledger
        self.round = 0
        for p in parties:
            p.init_statistics(labels)
        self.total_sumsq = sum(float(p.column_sumsq.sum()) for p in parties)
        rows = min(block_size, K.SEGMENT_ROWS)
        self.phi = np.empty((rows, k))
        self.new_labels = np.empty(block_size, dtype=np.int64)

    def sse(self):
        """SSE from the cached statistics: total sum of squares minus the explained part."""
        return max(0.0, self.total_sumsq - sum(p.explained() for p in self.parties))

    def tolerance(self, rho, fair_scale):
        scale = self.total_sumsq / self.n
        fair = 0.0
        for p in self.parties:
            if p.n_groups:
                fair += float((rho + np.abs(p.u).max(axis=1)).sum())
        return RTOL * (scale + fair_scale / self.n * self.k * fair)

    def sweep(self, rho=0.0, fair_scale=1.0):
        """One sweep; returns (rows moved, ranges evaluated)."""
        tol = self.tolerance(rho, fair_scale)
        if self.ledger is None and len(self.parties) == 1:
            p = self.parties[0]
            moved, ranges = K.bcd_sweep(p.X, p.shift, p.xx, self.labels, p.sums, p.counts,
                                        p.sqnorms, p.codes, p.group_counts, p.theta, p.u,
                                        float(rho), float(fair_scale), self.block_size, tol,
                                        self.phi, self.new_labels)
            return int(moved), int(ranges)
        return self._federated_sweep(tol, float(rho), float(fair_scale))

    def _record(self, kind, up=None, down=None):
        if self.ledger is None:
            return
        for j in range(len(self.parties)):
            if down is not None:
                self.ledger.record(self.round, sender=SERVER, receiver=j, kind=kind,
                                   n_elements=down)
            if up is not None:
                self.ledger.record(self.round, sender=j, receiver=SERVER, kind=kind,
                                   n_elements=up)

    def _federated_sweep(self, tol, rho, fair_scale):
        """Alg. 3 / Alg. 4 lines 6-10, range by range, with the block rules of ``bcd_sweep``."""
        k = self.k
        labels = self.labels
        new_labels = self.new_labels
        server_counts = self.parties[0].counts
        tentative = np.empty(k, dtype=np.int64)
        tables = [(np.empty((2, k)), np.empty((2, p.n_groups, k))) for p in self.parties]
        moved = ranges = version = 0
        for block_lo in range(0, self.n, self.block_size):
            stack = [(block_lo, min(self.n, block_lo + self.block_size), -1)]
            while stack:
                lo, hi, made_at = stack.pop()
                offset = lo - block_lo
                if made_at == version:  # proposals still valid (see bcd_sweep)
                    n_moves = int(np.count_nonzero(
                        new_labels[offset:offset + hi - lo] != labels[lo:hi]))
                    if n_moves == 0:  # nothing to evaluate or send: not a round
                        continue
                ranges += 1
                self.round += 1
                if made_at != version:
                    n_moves = self._evaluate(lo, hi, block_lo, tables, tentative, server_counts,
                                             tol, rho, fair_scale)
                if n_moves == 0:
                    continue
                self._record("proposed labels", down=hi - lo)
                if n_moves > 1:
                    change = 0.0
                    for p in self.parties:  # summed in party order
                        d = p.X.shape[1]
                        dsums = np.empty((k, d))
                        dcounts = np.empty(k, dtype=np.int64)
                        dgroups = np.empty((p.n_groups, k), dtype=np.int64)
                        K.move_deltas(p.X, p.shift, lo, hi, labels, new_labels, offset, p.codes,
                                      dsums, dcounts, dgroups)
                        part = K.objective_change(p.sums, p.counts, p.sqnorms, dsums, dcounts)
                        if p.n_groups:
                            part += K.fairness_change(p.group_counts, p.counts, dgroups, dcounts,
                                                      p.theta, p.u, rho, fair_scale)
                        change += part
                    self._record("objective change", up=1, down=1)
                    if not change < -tol:
                        mid = (lo + hi) // 2
                        stack.append((mid, hi, version))
                        stack.append((lo, mid, version))
                        continue
                for p in self.parties:
                    K.apply_moves(p.X, p.shift, p.xx, lo, hi, labels, new_labels, offset, p.sums,
                                  p.counts, p.sqnorms, p.codes, p.group_counts)
                labels[lo:hi] = new_labels[offset:offset + hi - lo]
                moved += n_moves
                version += 1
        return moved, ranges

    def _evaluate(self, lo, hi, block_lo, tables, tentative, server_counts, tol, rho, fair_scale):
        """Parties send eq. (17)/(27)-(28) for rows lo..hi; the server sums and proposes labels."""
        phi = self.phi
        for p, (base, corr) in zip(self.parties, tables):
            K.fair_tables(p.group_counts, p.counts, p.theta, p.u, rho, fair_scale, base, corr)
        tentative[:] = server_counts
        n_moves = 0
        for seg_lo in range(lo, hi, phi.shape[0]):
            seg_hi = min(hi, seg_lo + phi.shape[0])
            phi[:seg_hi - seg_lo] = 0.0
            for p, (base, corr) in zip(self.parties, tables):  # summed in party order
                K.bcd_row_objectives(p.X, p.shift, p.xx, seg_lo, seg_hi, self.labels, p.sums,
                                     p.counts, p.sqnorms, p.codes, base, corr, phi)
            n_moves += K.choose_moves(phi, seg_lo, seg_hi, self.labels, tentative, tol,
                                      self.new_labels, seg_lo - block_lo)
        self._record("compute objectives", down=2, up=(hi - lo) * self.k)
        return n_moves

    def record_initialization(self, n_features_split):
        """Messages of a vertical k-means++ (Alg. 3 line 1) and of the statistics set-up."""
        if self.ledger is None:
            return
        for _ in range(self.k):
            self.round += 1
            self._record("k-means++ center", down=1, up=self.n)
        self.round += 1
        self._record("initial labels", down=self.n, up=1)


def _resolve_block_size(block_size, n):
    if isinstance(block_size, str):
        if block_size != "auto":
            raise ValueError(f"Argument 'block_size' must be 'auto' or a positive int, "
                             f"got {block_size!r}")
        return max(1, math.ceil(n / 4))
    size = check_int(block_size, "block_size", min_value=1)
    return min(size, n)


def _check_data(X):
    """Return (parties' arrays, the federation or None)."""
    if isinstance(X, VerticalFederation):
        return [X.party(j) for j in range(X.n_parties)], X
    return [check_array(X, "X")], None


def _initial_labels(arrays, fed, k, rng):
    """k-means++ seeding (Alg. 1-4 line 1) and the nearest-seed labels, on the joined rows."""
    X = fed.to_array() if fed is not None else arrays[0]
    n = X.shape[0]
    if k > n:
        raise ValueError(f"Argument 'n_clusters' must be <= n_samples = {n}, got {k}")
    rows, labels, _ = _kmeans_plusplus_lazy(X, np.ones(n), rng, k)
    seeds = X[rows].astype(np.float64)
    return np.ascontiguousarray(labels, dtype=np.int64), seeds


def _final_centers(arrays, labels, k, seeds):
    """Cluster means (seed of an empty cluster kept) and the exact SSE, one pass per party."""
    centers = seeds.copy()
    counts = None
    start = 0
    sse = 0.0
    for X in arrays:
        d = X.shape[1]
        sums = np.empty((k, d))
        counts = np.empty(k, dtype=np.int64)
        K.partition_sums(X, labels, sums, counts)
        full = counts > 0
        block = centers[:, start:start + d]
        block[full] = sums[full] / counts[full, None]
        sse += float(K.partition_sse(X, labels, np.ascontiguousarray(block)))
        start += d
    return centers, sse, counts


def bcd_kmeans(X, n_clusters, *, block_size="auto", max_iter=300, random_state=None):
    """BCDKM (Alg. 2) on an array, or DisBCDKM (Alg. 3) on a ``VerticalFederation``.

    Returns a dict with ``labels``, ``centers``, ``inertia``, ``n_iter``, ``objective_history``,
    ``n_ranges`` and ``comm`` (a ``CommLedger``, or None for an array). See :class:`BCDKM`.
    """
    arrays, fed = _check_data(X)
    k = check_int(n_clusters, "n_clusters", min_value=1)
    max_iter = check_int(max_iter, "max_iter", min_value=1)
    rng = check_random_state(random_state)
    n = arrays[0].shape[0]
    nb = _resolve_block_size(block_size, n)
    labels, seeds = _initial_labels(arrays, fed, k, rng)
    ledger = CommLedger() if fed is not None else None
    engine = _Engine([_Party(A, k) for A in arrays], labels, k, nb, ledger)
    engine.record_initialization(None)
    history = [engine.sse()]
    n_iter = ranges = 0
    for n_iter in range(1, max_iter + 1):
        moved, r = engine.sweep()
        ranges += r
        history.append(engine.sse())
        if moved == 0:
            break
    centers, sse, _ = _final_centers(arrays, labels, k, seeds)
    return {"labels": labels, "centers": centers, "inertia": sse, "n_iter": n_iter,
            "objective_history": np.array(history), "n_ranges": ranges, "comm": ledger,
            "block_size": nb, "dtype": arrays[0].dtype}


def _store_bcd_result(estimator, result):
    """Fitted attributes shared by BCDKM and FairKMeans from a sweep result dict; ``comm_`` only
    for federated fits."""
    estimator.labels_ = result["labels"]
    estimator.cluster_centers_ = result["centers"].astype(result["dtype"], copy=False)
    estimator.inertia_ = result["inertia"]
    estimator.n_iter_ = result["n_iter"]
    estimator.objective_history_ = result["objective_history"]
    estimator.n_ranges_ = result["n_ranges"]
    estimator.n_features_in_ = estimator.cluster_centers_.shape[1]
    if result["comm"] is not None:
        estimator.comm_ = result["comm"]
    elif hasattr(estimator, "comm_"):
        del estimator.comm_
    return estimator


class BCDKM(BaseEstimator):
    """Block coordinate descent k-means (BCDKM, Alg. 2); DisBCDKM (Alg. 3) on a federation.

    k-means++ seeds the indicator matrix (each row labelled by its nearest seed), then sweeps run
    over blocks of ``block_size`` consecutive rows until a sweep changes no label or ``max_iter``
    sweeps. Within a block every row is evaluated against the same cached statistics (eq. (9)),
    then the block's rows move together (eq. (10)) and the statistics are updated incrementally
    (eq. (11)); blocks follow one another in row order. ``block_size=1`` is CDKM (Alg. 1).

    ``fit`` takes an array or a :class:`~fedcore.VerticalFederation`. On a federation each party
    computes eq. (17) on its own columns, the server sums them (eq. (18)) and sends back the
    block's labels, and each party updates its statistics by eq. (19): the labels equal those of
    the single-machine fit for the same seed, and ``comm_`` records the rounds (one per evaluated
    block per sweep, plus ``n_clusters + 1`` for the initialization).

    Choices where the paper is silent (tested): a row alone in its cluster never moves and a
    block's moves never empty a cluster (the later leaver stays); a row moves only when another
    cluster beats its own by more than a rounding allowance (1e-9 of the objective scale), to the
    lowest-index such cluster; if a block's moves together do not lower the objective, the block is
    split in two halves, processed in order (a Jacobi step can raise eq. (4); the split keeps
    every sweep monotone and reduces to CDKM in the worst case). Each extra half costs one round
    on a federation. The seeding runs on the joined rows (simulated; the ledger records what a
    vertical k-means++ would send).

    Parameters
    ----------
    n_clusters : int, default=8
    block_size : int or "auto", default="auto"
        Rows per block n_b; "auto" is ceil(n / 4), the paper's recommendation (Sec. 5.3.1).
    max_iter : int, default=300
        Maximum number of sweeps.
    random_state : None, int or numpy.random.Generator
        Seeds k-means++ exactly as :func:`fedcore.kmeans_plusplus` with the same value.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,), int64
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
        Cluster means; an empty cluster (only possible with fewer distinct rows than clusters)
        keeps its k-means++ seed.
    inertia_ : float, SSE of the partition (eq. (1)), recomputed exactly from the labels
    n_iter_ : int, sweeps run
    objective_history_ : ndarray of shape (n_iter_ + 1,)
        SSE after the seeding and after each sweep, from the cached statistics.
    n_ranges_ : int, blocks and half-blocks evaluated over all sweeps
    comm_ : CommLedger (only after fitting a federation)
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from fedcore.algorithms.cdkm import BCDKM
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]])
    >>> model = BCDKM(2, block_size=2, random_state=0).fit(X)
    >>> bool(model.labels_[0] == model.labels_[1] != model.labels_[2] == model.labels_[3])
    True
    >>> round(model.inertia_, 6)
    1.0
    """

    def __init__(self, n_clusters=8, *, block_size="auto", max_iter=300, random_state=None):
        self.n_clusters = n_clusters
        self.block_size = block_size
        self.max_iter = max_iter
        self.random_state = random_state

    def _fit_params(self):
        return {"block_size": self.block_size}

    def fit(self, X, y=None):
        """Fit on an array of shape (n_samples, n_features) or a ``VerticalFederation``."""
        result = bcd_kmeans(X, self.n_clusters, max_iter=self.max_iter,
                            random_state=self.random_state, **self._fit_params())
        return _store_bcd_result(self, result)

    def fit_predict(self, X, y=None):
        return self.fit(X).labels_

    def predict(self, X):
        """Nearest fitted center of each row (lowest index on ties)."""
        check_is_fitted(self, "cluster_centers_")
        X = check_array(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is "
                             f"expecting {self.n_features_in_} features as input.")
        labels = np.empty(X.shape[0], dtype=np.int64)
        centers_t = np.ascontiguousarray(self.cluster_centers_.T, dtype=np.float64)
        assign_nearest(X, centers_t, labels, np.empty(X.shape[0]))
        return labels


class CDKM(BCDKM):
    """Coordinate descent k-means (Nie et al. 2021; F3KM paper Alg. 1): BCDKM with blocks of one row.

    Each row in turn moves to the cluster that lowers eq. (4) most (eq. (9)-(10)), and the cached
    statistics follow by eq. (11). A sweep never increases the SSE. See :class:`BCDKM` for the
    attributes and the federated fit (one round per row and sweep).

    Parameters
    ----------
    n_clusters : int, default=8
    max_iter : int, default=300
    random_state : None, int or numpy.random.Generator

    Examples
    --------
    >>> import numpy as np
    >>> from fedcore.algorithms.cdkm import CDKM
    >>> X = np.array([[0.0], [1.0], [10.0], [11.0]])
    >>> sorted(CDKM(2, random_state=0).fit(X).cluster_centers_.ravel().tolist())
    [0.5, 10.5]
    """

    def __init__(self, n_clusters=8, *, max_iter=300, random_state=None):
        self.n_clusters = n_clusters
        self.max_iter = max_iter
        self.random_state = random_state

    def _fit_params(self):
        return {"block_size": 1}
