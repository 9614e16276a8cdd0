"""Coordinate-descent k-means: CDKM, BCDKM and DisBCDKM ([F3KM] Alg. 1, 2 and 3).

The fits run the protocol roles of :mod:`fedcore.algorithms.f3km.party` (one
:class:`~fedcore.algorithms.f3km.party.F3KMParty` per party, each holding a block of columns, its
cached statistics and, for F3KM, its protected groups) and
:class:`~fedcore.algorithms.f3km.server.F3KMServer` (sums of the parties' objectives,
[F3KM] eq. (18), and every decision) over an
:class:`~fedcore.federation.protocol.InProcessChannel`; the Flower apps
(:mod:`fedcore.integrations.flower.f3km`) run the same roles on nodes. One party with all columns
is the single-machine case: it runs whole sweeps inside one kernel
(:func:`fedcore.kernels.cd.kmeans.bcd_sweep`) and keeps no ledger; several parties (a
``VerticalFederation``) run the same kernels range by range, every message counted by the channel
in a :class:`~fedcore.federation.CommLedger`.
"""
from __future__ import annotations

import sys
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import (check_array, check_fitted_array, check_fitted_centers, check_int,
                           check_random_state, check_weighted_range)
from ...federation.protocol import InProcessChannel
from ...federation.vertical import VerticalFederation
from ...kernels.kmeans.distances import assign_nearest
from ..base import BaseEstimator, check_is_fitted
from .party import F3KMParty
from .server import F3KMServer, check_n_clusters, resolve_block_size
from ..kmeans.seeding import seed_lazy

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["CDKM", "BCDKM", "bcd_kmeans"]


def _check_data(X):
    """Return (parties' arrays, the federation or None).

    The cached statistics hold squared norms of cluster sums, up to ``n**2`` times a squared
    distance: data whose such sums could overflow are refused."""
    if isinstance(X, VerticalFederation):
        arrays = [X.party(j) for j in range(X.n_parties)]
        check_weighted_range(arrays, float(X.n_samples) ** 2, n_features=X.n_features)
        return arrays, X
    X = check_array(X, "X", distance_range=True)
    check_weighted_range(X, float(X.shape[0]) ** 2)
    return [X], None


def _initial_labels(X, k, rng):
    """k-means++ seeding ([F3KM] Alg. 1-4 line 1) and the nearest-seed labels of a single
    machine's rows ``X``; a federation seeds by vertical k-means++ over the channel
    (:class:`~fedcore.algorithms.f3km.server.F3KMServer`).

    Returns ``(labels, rows)``: the seeds are rows ``rows`` of the data.
    """
    rows, labels, _ = seed_lazy(X, np.ones(X.shape[0]), rng, k)
    return np.ascontiguousarray(labels, dtype=np.int64), rows


def run_in_process(server, arrays, fed, k, rng, encoded=None):
    """``server.run`` over an :class:`~fedcore.federation.protocol.InProcessChannel` of one
    :class:`~fedcore.algorithms.f3km.party.F3KMParty` per party (``encoded``: each party's
    sensitive attributes as :func:`~fedcore.algorithms.f3km.party.encode_party_groups` returns
    them); a single machine (``fed`` None) is seeded on its rows here."""
    initial = _initial_labels(arrays[0], k, rng) if fed is None else None
    encoded = [None] * len(arrays) if encoded is None else encoded
    roles = [F3KMParty(A, None, j, encoded=e, _checked=True)
             for j, (A, e) in enumerate(zip(arrays, encoded))]
    return server.run(InProcessChannel(roles, n_jobs=1), initial)


def bcd_kmeans(X: ArrayLike | VerticalFederation, n_clusters: int, *,
               block_size: int | Literal["auto"] = "auto", max_iter: int = 300,
               random_state: np.random.Generator | int | None = None) -> dict[str, Any]:
    """BCDKM ([F3KM] Alg. 2) on an array, or DisBCDKM ([F3KM] Alg. 3) on a ``VerticalFederation``.

    Returns a dict with ``labels``, ``centers``, ``inertia``, ``n_iter``, ``objective_history``,
    ``n_ranges`` and ``comm`` (a ``CommLedger``, or None for an array). See :class:`BCDKM`.
    """
    arrays, fed = _check_data(X)
    k = check_int(n_clusters, "n_clusters", min_value=1)
    max_iter = check_int(max_iter, "max_iter", min_value=1)
    rng = check_random_state(random_state)
    n = arrays[0].shape[0]
    nb = resolve_block_size(block_size, n)
    check_n_clusters(k, n)
    server = F3KMServer(k, nb, max_iter, rng, keep_ledger=fed is not None)
    return run_in_process(server, arrays, fed, k, rng)


# Fitted attributes of BCDKM and FairKMeans: result key -> attribute name
_ATTRIBUTES = {"labels": "labels_", "centers": "cluster_centers_", "inertia": "inertia_",
               "n_iter": "n_iter_", "objective_history": "objective_history_",
               "n_ranges": "n_ranges_", "balance": "balance_", "violation": "violation_",
               "violation_history": "violation_history_", "alpha": "alpha_", "beta": "beta_",
               "comm": "comm_"}


def fitted_attributes(result):
    """``{attribute name: value}`` of a sweep result dict (of :func:`bcd_kmeans`,
    :func:`~fedcore.algorithms.f3km.fair.fair_kmeans` or a Flower run): the centers in the data's
    dtype, ``comm_`` only for federated fits."""
    out = {}
    for key, name in _ATTRIBUTES.items():
        if key in result and result[key] is not None:
            out[name] = result[key]
    out["cluster_centers_"] = result["centers"].astype(result["dtype"], copy=False)
    out["n_features_in_"] = out["cluster_centers_"].shape[1]
    return out


def _store_bcd_result(estimator, result):
    """Set the fitted attributes of BCDKM and FairKMeans from a sweep result dict."""
    for name, value in fitted_attributes(result).items():
        setattr(estimator, name, value)
    if result["comm"] is None and hasattr(estimator, "comm_"):
        del estimator.comm_
    return estimator


class BCDKM(BaseEstimator):
    """Block coordinate descent k-means (BCDKM, [F3KM] Alg. 2); DisBCDKM ([F3KM] Alg. 3) on a
    federation.

    k-means++ seeds the indicator matrix (each row labelled by its nearest seed), then sweeps run
    over blocks of ``block_size`` consecutive rows until a sweep changes no label or ``max_iter``
    sweeps. Within a block every row is evaluated against the same cached statistics
    ([F3KM] eq. (9)), then the block's rows move together ([F3KM] eq. (10)) and the statistics are
    updated incrementally ([F3KM] eq. (11)); blocks follow one another in row order.
    ``block_size=1`` is CDKM ([F3KM] Alg. 1).

    ``fit`` takes an array or a :class:`~fedcore.VerticalFederation`. On a federation each party
    computes [F3KM] eq. (17) on its own columns, the server sums them ([F3KM] eq. (18)) and sends
    back the block's labels, and each party updates its statistics by [F3KM] eq. (19): the labels
    equal those of the single-machine fit for the same seed, and ``comm_`` records the rounds (one
    per evaluated block per sweep, plus ``n_clusters + 1`` for the initialization).

    Choices where [F3KM] is silent (tested): a row alone in its cluster never moves and a
    block's moves never empty a cluster (the later leaver stays); a row moves only when another
    cluster beats its own by more than a rounding allowance (1e-9 of the objective scale), to the
    lowest-index such cluster; if a block's moves together do not lower the objective, the block is
    split in two halves, processed in order (a Jacobi step can raise [F3KM] eq. (4); the split
    keeps every sweep monotone and reduces to CDKM in the worst case). Each extra half costs one
    round on a federation. On a federation the seeding is vertical k-means++: one round per
    center, the parties' partial squared distances summed by the server, which makes the draws of
    k-means++ on the joined rows (the same rows unless two distances tie within rounding). The
    same fit runs with one Flower node per party:
    :func:`fedcore.integrations.flower.f3km.bcdkm_apps`.

    Parameters
    ----------
    n_clusters : int, default=8
    block_size : int or "auto", default="auto"
        Rows per block n_b; "auto" is ceil(n / 4), the recommendation of [F3KM] Section 5.3.1.
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
    inertia_ : float, SSE of the partition ([F3KM] eq. (1)), recomputed exactly from the labels
    n_iter_ : int, sweeps run
    objective_history_ : ndarray of shape (n_iter_ + 1,)
        SSE after the seeding and after each sweep, from the cached statistics: the total sum of
        squares minus the part the clusters explain, so its absolute error is about 1e-16 times
        the total sum of squares (rounding noise when the data's spread exceeds the SSE by some
        15 orders of magnitude; ``inertia_`` is exact).
    n_ranges_ : int, blocks and half-blocks evaluated over all sweeps
    comm_ : CommLedger (only after fitting a federation)
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from fedcore.algorithms.f3km.cdkm import BCDKM
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [10.0, 10.0], [10.0, 11.0]])
    >>> model = BCDKM(2, block_size=2, random_state=0).fit(X)
    >>> bool(model.labels_[0] == model.labels_[1] != model.labels_[2] == model.labels_[3])
    True
    >>> round(model.inertia_, 6)
    1.0
    """

    def __init__(self, n_clusters: int = 8, *, block_size: int | Literal["auto"] = "auto",
                 max_iter: int = 300,
                 random_state: np.random.Generator | int | None = None) -> None:
        self.n_clusters = n_clusters
        self.block_size = block_size
        self.max_iter = max_iter
        self.random_state = random_state

    def _fit_params(self):
        return {"block_size": self.block_size}

    def fit(self, X: ArrayLike | VerticalFederation, y: object = None) -> Self:
        """Fit on an array of shape (n_samples, n_features) or a ``VerticalFederation``."""
        result = bcd_kmeans(X, self.n_clusters, max_iter=self.max_iter,
                            random_state=self.random_state, **self._fit_params())
        return _store_bcd_result(self, result)

    def fit_predict(self, X: ArrayLike | VerticalFederation,
                    y: object = None) -> np.ndarray:
        return self.fit(X).labels_

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Nearest fitted center of each row (lowest index on ties)."""
        check_is_fitted(self, "cluster_centers_")
        X = check_fitted_array(X, self.n_features_in_, type(self).__name__)
        labels = np.empty(X.shape[0], dtype=np.int64)
        centers_t = check_fitted_centers(self.cluster_centers_, self.n_features_in_,
                                         type(self).__name__)
        assign_nearest(X, centers_t, labels, np.empty(X.shape[0]))
        return labels


class CDKM(BCDKM):
    """Coordinate descent k-means ([CDKM]; [F3KM] Alg. 1): BCDKM with blocks of one row.

    Each row in turn moves to the cluster that lowers [F3KM] eq. (4) most ([F3KM] eqs. (9)-(10)),
    and the cached statistics follow by [F3KM] eq. (11). A sweep never increases the SSE. See
    :class:`BCDKM` for the attributes and the federated fit (one round per row and sweep).

    Parameters
    ----------
    n_clusters : int, default=8
    max_iter : int, default=300
    random_state : None, int or numpy.random.Generator

    Examples
    --------
    >>> import numpy as np
    >>> from fedcore.algorithms.f3km.cdkm import CDKM
    >>> X = np.array([[0.0], [1.0], [10.0], [11.0]])
    >>> sorted(CDKM(2, random_state=0).fit(X).cluster_centers_.ravel().tolist())
    [0.5, 10.5]
    """

    def __init__(self, n_clusters: int = 8, *, max_iter: int = 300,
                 random_state: np.random.Generator | int | None = None) -> None:
        self.n_clusters = n_clusters
        self.max_iter = max_iter
        self.random_state = random_state

    def _fit_params(self):
        return {"block_size": 1}
