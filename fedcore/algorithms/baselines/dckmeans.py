"""DC-k-means ([DCKM]) on a federation: a two-level divide-and-conquer tree."""
from __future__ import annotations

import sys
import time
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import check_ids, check_int, check_random_state
from ...federation.horizontal import HorizontalFederation
from ...federation.ledger import SERVER, CommLedger
from ..base import BaseEstimator, all_or_nothing, check_is_fitted
from ..clients import check_federation
from ..kmeans.lloyd import KMeans
from ..mufc.estimators import MUFCRemovalReport

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["DCKMeans"]


class DCKMeans(BaseEstimator):
    """Divide-and-conquer k-means with deletion, tree height 2, leaves = clients.

    Each client runs full k-means (k-means++ and Lloyd) with ``client_clusters`` centers and sends
    its centers; the server runs k-means on their union. As in the adaptation of
    [MUFC] Appendix M.2, client centers get unit weights unless ``weighted=True`` (cluster sizes).
    Deleting a point re-runs its client and the server (the deletion of [DCKM] for DC-k-means:
    only the leaf and the path to the root are recomputed).

    Attributes
    ----------
    cluster_centers_ : ndarray (n_clusters, n_features)
    client_centers_ : list of ndarray (client_clusters, n_features)
    comm_ : CommLedger
    """

    def __init__(self, n_clusters: int = 8, *, client_clusters: int | None = None,
                 weighted: bool = False, n_init: int = 1,
                 random_state: np.random.Generator | int | None = None) -> None:
        self.n_clusters = n_clusters
        self.client_clusters = client_clusters
        self.weighted = weighted
        self.n_init = n_init
        self.random_state = random_state

    def fit(self, federation: HorizontalFederation | Sequence[ArrayLike], y: object = None) -> Self:
        """Fit on a :class:`~fedcore.HorizontalFederation` (or a list of client arrays)."""
        k = check_int(self.n_clusters, "n_clusters", min_value=1)
        kp = k if self.client_clusters is None else check_int(
            self.client_clusters, "client_clusters", min_value=1)
        check_int(self.n_init, "n_init", min_value=1)
        federation = check_federation(federation, kp, "n_clusters" if
                                      self.client_clusters is None else "client_clusters")
        if federation.n_clients * kp < k:
            raise ValueError(f"Argument 'n_clusters'={k} exceeds the {federation.n_clients * kp} "
                             f"centers the clients send ({federation.n_clients} clients x "
                             f"client_clusters={kp})")
        rng = check_random_state(self.random_state)
        self._k, self._kp, self._rng = k, kp, rng  # validated: only now does the model change
        self.comm_ = CommLedger()
        self._round = 0
        self._data = {}
        self._models = {}
        for l, (X_l, ids_l) in enumerate(federation):
            self._data[l] = (X_l.copy(), ids_l.copy())
            self._fit_client(l)
        self._fit_server()
        self.n_features_in_ = federation.n_features
        return self

    def _fit_client(self, l):
        X_l, _ = self._data[l]
        self._models[l] = KMeans(self._kp, n_init=self.n_init, random_state=self._rng).fit(X_l)
        self.comm_.record(self._round, sender=l, receiver=SERVER, kind="centers+sizes",
                          n_elements=self._kp * (X_l.shape[1] + 1))

    def _fit_server(self):
        centers = np.concatenate([m.cluster_centers_ for m in self._models.values()])
        weights = None
        if self.weighted:
            weights = np.concatenate([np.bincount(m.labels_, minlength=self._kp)
                                      for m in self._models.values()]).astype(np.float64)
        if np.count_nonzero(weights if weights is not None else np.ones(len(centers))) < self._k:
            raise ValueError(f"Argument 'n_clusters'={self._k} exceeds the clients' non-empty "
                             "centers")
        server = KMeans(self._k, n_init=self.n_init, random_state=self._rng)
        self.cluster_centers_ = server.fit(centers, sample_weight=weights).cluster_centers_
        self.client_centers_ = [m.cluster_centers_ for m in self._models.values()]

    def remove(self, client_id: int, ids: ArrayLike) -> MUFCRemovalReport:
        """Delete points (global ids) from one client: refit that client and the server."""
        check_is_fitted(self, "_models")
        client_id = check_int(client_id, "client_id", min_value=0)
        if client_id not in self._data:
            raise ValueError(f"Argument 'client_id' must be a current client, got {client_id!r}")
        X_l, ids_l = self._data[client_id]
        ids = check_ids(ids, "ids")
        keep = ~np.isin(ids_l, ids)
        missing = np.setdiff1d(ids, ids_l)
        if missing.size:
            raise ValueError(f"Argument 'ids' contains id {int(missing[0])}, not held by client "
                             f"{client_id}")
        if keep.sum() < self._kp:
            raise ValueError(f"Argument 'ids': removing {ids.size} point(s) would leave client "
                             f"{client_id} with fewer than client_clusters = {self._kp} points")
        # Atomic: the client's data and model, the server and the ledger change together or not
        # at all (the models are replaced, never mutated: shallow copies suffice).
        with all_or_nothing(self, deep=("_rng",),
                            shallow=("_data", "_models", "_round", "cluster_centers_",
                                     "client_centers_")):
            self._data[client_id] = (X_l[keep], ids_l[keep])
            self._round += 1
            t0 = time.perf_counter()
            self._fit_client(client_id)
            t1 = time.perf_counter()
            self._fit_server()
            t2 = time.perf_counter()
        return MUFCRemovalReport(True, True, int(ids.size),
                                 {"client_unlearn": t1 - t0, "server_cluster": t2 - t1})

    def federated_inertia(self) -> float:
        """Federated objective ([MUFC] eq. (2)) with induced global clusters ([MUFC] Def. 3.1)."""
        from ...metrics import federated_inertia
        check_is_fitted(self, "cluster_centers_")
        clients = [(self._data[l][0], self._models[l].labels_, self._models[l].cluster_centers_)
                   for l in self._models]
        return federated_inertia(clients, self.cluster_centers_)
