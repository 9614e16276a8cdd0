"""DistDim: k-means with distributed dimensions ([DistDim]: Ding, Liu, Huang, Li, NeurIPS 2016).

The vertical k-means baseline of [VFLC]: each party clusters its own columns, the server
clusters the grid of products of local centers, each occupied cell weighted by its occupancy. Runs
on the full data or on a coreset (rows ``coreset.indices`` with weights ``coreset.weights``).
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import (check_fitted_array, check_fitted_centers, check_int,
                            check_random_state, check_scalar)
from ...federation.protocol import (Channel, InProcessChannel, Message, ProtocolError,
                                    diagnostic, expect, generator_from_stream, resume_stream,
                                    stream_state)
from ...federation.vertical import VerticalFederation
from ...kernels.kmeans.distances import assign_nearest
from ..base import BaseEstimator, check_is_fitted
from .coreset import _check_rows, check_vertical_range
from .coreset_result import Coreset, _check_federation, check_coreset, coreset_rows
from ..kmeans.lloyd import KMeans

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["DistDim", "distdim", "DistDimServer", "DistDimParty", "LocalClustering",
           "LocalLabels"]


def _cells(labels, client_clusters):
    """Occupied cells of the product grid: (cell label tuples (c, T), inverse (rows,))."""
    T = labels.shape[1]
    radix = [int(k) for k in client_clusters]
    if float(np.prod(np.array(radix, dtype=np.float64))) < 2.0 ** 62:
        codes = np.zeros(labels.shape[0], dtype=np.int64)
        for j in range(T):
            codes = codes * radix[j] + labels[:, j]
        unique, inverse = np.unique(codes, return_inverse=True)
        cells = np.empty((unique.shape[0], T), dtype=np.int64)
        rest = unique.copy()
        for j in range(T - 1, -1, -1):
            cells[:, j] = rest % radix[j]
            rest //= radix[j]
        return cells, inverse.ravel()
    cells, inverse = np.unique(labels, axis=0, return_inverse=True)
    return cells, inverse.ravel()


@dataclass(frozen=True, eq=False)
class LocalClustering(Message):
    """Server to party, [DistDim] step 1: cluster your columns of the rows used.

    Counted: ``weights``, the coreset's weights when the party cannot know them (empty on full
    data, where every weight is 1, and for equal weights ``n / m``, e.g. uniform sampling,
    which every party knows). Not counted: ``rows`` (the coreset's rows, which every party
    received in the coreset's own round; empty on full data), the k-means settings and the
    lent random stream (setup).
    """

    kind = "weights"
    weights: np.ndarray
    rows: np.ndarray = diagnostic()
    n_clusters: int = diagnostic()
    n_init: int = diagnostic()
    max_iter: int = diagnostic()
    tol: float = diagnostic()
    stream: str = diagnostic(default="")


@dataclass(frozen=True, eq=False)
class LocalLabels(Message):
    """Party to server, [DistDim] step 1: its local centers ``(k'_j, d_j)`` and each used row's
    local label."""

    kind = "labels+centers"
    labels: np.ndarray
    centers: np.ndarray
    stream: str = diagnostic(default="")


class DistDimParty:
    """Party ``j``'s role in DistDim: weighted k-means on its column block ``X`` (checked by the
    caller), on all rows or on a coreset's rows."""

    def __init__(self, X: ArrayLike, party_id: int = 0) -> None:
        self.party_id = check_int(party_id, "party_id", min_value=0)
        self.X = X

    def handle(self, message: Message) -> LocalLabels:
        m = expect(message, LocalClustering, f"party {self.party_id}")
        if m.rows.size == 0:  # full data, unit weights
            X, weights = self.X, np.ones(self.X.shape[0])
        else:
            n = self.X.shape[0]
            X = self.X[_check_rows(m.rows, n, f"party {self.party_id}")]
            if m.weights.size and m.weights.shape != m.rows.shape:
                raise ProtocolError(f"party {self.party_id} got {m.weights.shape[0]} weights "
                                    f"for {m.rows.shape[0]} rows")
            weights = m.weights if m.weights.size else np.full(m.rows.shape[0],
                                                               n / m.rows.shape[0])
        rng = generator_from_stream(m.stream)
        km = KMeans(m.n_clusters, n_init=m.n_init, max_iter=m.max_iter, tol=m.tol,
                    random_state=rng).fit(X, sample_weight=weights)
        return LocalLabels(km.labels_, np.asarray(km.cluster_centers_, dtype=np.float64),
                           stream_state(rng))


class DistDimServer:
    """The server role of DistDim over parties playing :class:`DistDimParty` (parameters
    validated by :class:`DistDim`).

    Parameters
    ----------
    n_clusters : int
    client_clusters : int or list of int (one per party)
    n_samples : int, rows of the federation
    coreset : Coreset or None, the rows and weights to cluster (None: every row, weight 1)
    n_init, max_iter, tol : k-means settings of the parties and the server
    rng : numpy.random.Generator, the run's stream: lent to the parties one after another, then
        the server's k-means
    """

    def __init__(self, n_clusters: int, client_clusters: int | Sequence[int], n_samples: int,
                 coreset: Coreset | None, n_init: int, max_iter: int, tol: float,
                 rng: np.random.Generator) -> None:
        self.n_clusters, self.client_clusters = n_clusters, client_clusters
        self.n_samples, self.coreset = n_samples, coreset
        self.kmeans = {"n_init": n_init, "max_iter": max_iter, "tol": tol}
        self.rng = rng

    def run(self, channel: Channel) -> dict[str, Any]:
        """The fitted attributes of :class:`DistDim`; ``comm_`` lists the coreset's messages,
        then those of ``channel.ledger``."""
        rng, T = self.rng, channel.n_clients
        rows, weights, start, ledger = coreset_rows(self.coreset, self.n_samples)
        n_rows = rows.shape[0]
        local_k = [self.client_clusters] * T if np.ndim(self.client_clusters) == 0 \
            else list(self.client_clusters)
        sent_rows = sent_weights = np.empty(0)
        if self.coreset is not None:
            sent_rows = rows
            if not np.all(weights == self.n_samples / n_rows):  # else every party knows them
                sent_weights = weights
        labels = np.empty((n_rows, T), dtype=np.int64)
        local_centers = []
        for j in range(T):
            request = LocalClustering(sent_weights, sent_rows, int(local_k[j]),
                                      stream=stream_state(rng), **self.kmeans)
            reply = expect(channel.exchange({j: request}, start)[j], LocalLabels, "server")
            if reply.labels.shape != (n_rows,) or reply.centers.shape[0] != local_k[j] or \
                    reply.labels.dtype.kind not in "iu" or (n_rows and not (
                        0 <= reply.labels.min() <= reply.labels.max() < local_k[j])):
                raise ProtocolError(f"Party {j} sent labels of shape {reply.labels.shape} and "
                                    f"centers of shape {reply.centers.shape} for {n_rows} rows "
                                    f"and {local_k[j]} local clusters")
            resume_stream(rng, reply.stream)
            labels[:, j] = reply.labels
            local_centers.append(reply.centers)
        ledger.extend(channel.ledger)
        cells, inverse = _cells(labels, local_k)
        cell_weights = np.bincount(inverse, weights=weights, minlength=cells.shape[0])
        points = np.hstack([local_centers[j][cells[:, j]] for j in range(T)])
        n_positive = int(np.count_nonzero(cell_weights))
        if n_positive < self.n_clusters:
            raise ValueError(f"Argument 'client_clusters' ({self.client_clusters}) leaves "
                             f"{n_positive} occupied grid cells, fewer than n_clusters = "
                             f"{self.n_clusters}")
        server = KMeans(self.n_clusters, random_state=rng, **self.kmeans).fit(
            points, sample_weight=cell_weights)
        return {"cluster_centers_": np.asarray(server.cluster_centers_, dtype=np.float64),
                "labels_": server.labels_[inverse], "local_centers_": local_centers,
                "cell_centers_": points, "cell_weights_": cell_weights, "comm_": ledger}


def distdim(federation: VerticalFederation, n_clusters: int, *,
            client_clusters: int | Sequence[int] | None = None, coreset: Coreset | None = None,
            n_init: int = 1, max_iter: int = 300, tol: float = 1e-4,
            random_state: np.random.Generator | int | None = None) -> dict[str, Any]:
    """DistDim on validated parameters: a dict of the fitted attributes of :class:`DistDim`.

    :class:`DistDimServer` and one :class:`DistDimParty` per party, in this process.
    """
    rng = check_random_state(random_state)
    parties = [DistDimParty(federation.party(j), j) for j in range(federation.n_parties)]
    server = DistDimServer(n_clusters, client_clusters, federation.n_samples, coreset, n_init,
                           max_iter, tol, rng)
    return server.run(InProcessChannel(parties))


class DistDim(BaseEstimator):
    """Vertical k-means by distributed dimensions ([DistDim]), on full data or a coreset.

    1. Party ``j`` runs weighted k-means (k-means++ and Lloyd, :class:`~fedcore.KMeans`) with
       ``client_clusters`` centers on its own columns of the rows used, and sends the server its
       local centers (``k' d_j`` floats) and each row's local label (one integer per row).
    2. A row with local labels ``(l_1, ..., l_T)`` lies in the grid cell whose point is the
       concatenation of ``c^(1)_{l_1}, ..., c^(T)_{l_T}``; the server weights each occupied cell by
       the total weight of its rows and clusters the cells with weighted k-means into
       ``n_clusters`` centers (the final solution, held by the server).

    Communication: one message per party with its label vector of the rows used and its local
    centers (``nT + k' d`` elements on full data; ``mT + k' d`` on a coreset, after the coreset's
    own messages, which ``comm_`` also lists), and on a coreset whose weights the parties cannot
    know (DIS; not uniform sampling) the ``m`` weights to every party.

    Parameters
    ----------
    n_clusters : int, default=8
    client_clusters : int or list of int, default=None (``n_clusters``), local centers per party
    n_init, max_iter, tol : as in :class:`~fedcore.KMeans`, for the local and the server runs
    random_state : None, int or numpy.random.Generator

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_clusters, n_features)
    labels_ : ndarray of shape (n_rows_used,), cluster of each row used (coreset entries in order)
    local_centers_ : list of ndarrays of shape (client_clusters, d_j)
    cell_centers_ : ndarray of shape (n_cells, n_features), occupied grid points
    cell_weights_ : ndarray of shape (n_cells,), their total row weight
    comm_ : CommLedger

    Examples
    --------
    >>> import numpy as np, fedcore
    >>> X, _, _ = fedcore.datasets.make_gaussian_mixture(600, 4, 3, cluster_std=0.02,
    ...                                                  random_state=1)
    >>> vfed = fedcore.VerticalFederation.from_columns(X, splits=[2, 2])
    >>> model = DistDim(3, random_state=0).fit(vfed)
    >>> model.cluster_centers_.shape, model.comm_.n_elements   # 2 label vectors + 2 (3 x 2) centers
    ((3, 4), 1212)
    """

    def __init__(self, n_clusters: int = 8, *, client_clusters: int | Sequence[int] | None = None,
                 n_init: int = 1, max_iter: int = 300, tol: float = 1e-4,
                 random_state: np.random.Generator | int | None = None) -> None:
        self.n_clusters = n_clusters
        self.client_clusters = client_clusters
        self.n_init = n_init
        self.max_iter = max_iter
        self.tol = tol
        self.random_state = random_state

    def fit(self, federation: VerticalFederation, coreset: Coreset | None = None) -> Self:
        """Cluster ``federation`` (all rows), or only the rows of ``coreset`` with its weights."""
        federation = _check_federation(federation)
        if coreset is not None:
            check_coreset(coreset, federation.n_samples)
        check_vertical_range(federation, total_weight=None if coreset is None
                             else float(coreset.weights.sum()))
        n_rows = federation.n_samples if coreset is None else len(coreset)
        k = check_int(self.n_clusters, "n_clusters", min_value=1, max_value=n_rows)
        cc = k if self.client_clusters is None else self.client_clusters
        if np.ndim(cc) == 0:
            cc = check_int(cc, "client_clusters", min_value=1, max_value=n_rows)
        else:
            cc = [check_int(c, "client_clusters", min_value=1, max_value=n_rows) for c in cc]
            if len(cc) != federation.n_parties:
                raise ValueError(f"Argument 'client_clusters' must have one entry per party "
                                 f"({federation.n_parties}), got {len(cc)}")
        fitted = distdim(federation, k, client_clusters=cc, coreset=coreset,
                         n_init=check_int(self.n_init, "n_init", min_value=1),
                         max_iter=check_int(self.max_iter, "max_iter", min_value=1),
                         tol=check_scalar(self.tol, "tol", min_value=0.0),
                         random_state=self.random_state)
        for name, value in fitted.items():
            setattr(self, name, value)
        self.n_features_in_ = federation.n_features
        return self

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Nearest final center of each row of a full-feature array ``X`` (lowest index on ties)."""
        check_is_fitted(self, "cluster_centers_")
        X = check_fitted_array(X, self.n_features_in_, "DistDim")
        labels = np.empty(X.shape[0], dtype=np.int64)
        assign_nearest(X, check_fitted_centers(self.cluster_centers_, self.n_features_in_,
                                               "DistDim"), labels, np.empty(X.shape[0]))
        return labels
