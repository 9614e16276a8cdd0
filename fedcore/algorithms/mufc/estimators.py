"""MUFC: federated k-means with secure aggregation and exact unlearning (MUFC Alg. 1 and 4)."""
from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import (check_array, check_fitted_array, check_ids, check_int,
                             check_random_state, check_scalar)
from ...federation.horizontal import HorizontalFederation
from ...federation.ledger import CommLedger
from ...federation.protocol import InProcessChannel
from . import aggregation as _aggregation
from ..base import BaseEstimator, all_or_nothing, check_is_fitted
from ..clients import check_federation
from .coupled import CoupledKMeans
from .quantize import Quantizer
from .roles import MUFCClient, SimulatedKeys
from ..kmeans.lloyd import KMeans, assign
from .unlearning import UnlearnableKMeans

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["MUFC", "MUFCRemovalReport", "SimplifiedFC"]


@dataclass
class MUFCRemovalReport:
    """What one removal request did, and how long each stage took (seconds).

    ``modeled_latency`` counts as the MUFC paper does: clients work in parallel, so it is the
    slowest client's work (the affected client's Alg. 3 and every client's encoding) plus the
    server's work (decoding and clustering).
    """

    client_retrained: bool
    server_recomputed: bool
    n_removed: int
    timings: dict = field(default_factory=dict)

    @property
    def modeled_latency(self) -> float:
        t = self.timings
        return max(t.get("client_unlearn", 0.0) + t.get("client_encode", 0.0),
                   t.get("client_encode", 0.0)) + t.get("server_decode", 0.0) + \
            t.get("server_cluster", 0.0)


class MUFC(BaseEstimator):
    """Machine-unlearnable federated k-means (MUFC Alg. 1; unlearning by Alg. 4).

    Clients run k-means++ seeding with exact removal (:class:`UnlearnableKMeans`, Alg. 3) with
    ``client_clusters`` centers, quantize their centers onto a grid of step ``gamma`` and send the
    sparse vector of cluster sizes per bin (Alg. 1 lines 2-4). The server learns only the sum of
    these vectors (SCMA, Alg. 2, when ``secure=True``; a plaintext sum otherwise, with identical
    results) and clusters it (lines 6-7).

    Parameters
    ----------
    n_clusters : int, K
    client_clusters : int or None, K' (default K)
    gamma : "auto" or float in (0, 1]
        Grid step in the unit cube; "auto" is ``1 / sqrt(n)`` (Theorem 4.1's choice).
    secure : bool, default=True
        Aggregate with SCMA (the server sees masked syndromes only) or as a plaintext sum.
    dropout_threshold : None or int, default=None
        With ``secure=True``: SCMA's dropout tolerance ([SecAgg]; see ``docs/security.md``).
        Clients Shamir-share fresh round keys with threshold t, so a round still decodes exactly
        when clients drop after the masks were agreed, as long as t participants answer; the
        dropped clients leave the federation (their vectors leave the sum). In process no client
        drops; on Flower (:mod:`fedcore.integrations.flower.mufc`) a node that fails during a
        round is such a drop. None: no tolerance (a drop fails the round).
    server_data : "weighted" or "uniform"
        "weighted": weighted k-means++ and Lloyd on the occupied bins' grid points with their
        counts as weights. "uniform": ``q_j`` points drawn uniformly in bin ``j`` (the paper's
        experiments, Appendix H), then k-means++ and Lloyd.
    server_n_init : int, k-means++ restarts at the server (best inertia kept)
    bounds : None or (low, high) arrays of shape (d,)
        Box that contains every client's data, used to map data into the unit cube. None: the
        federation agrees on it, each client sending its per-feature minimum and maximum (this
        reveals each client's bounding box to the party that combines them; pass public bounds to
        avoid it).
    random_phase : bool, default=False
        Shift the grid by a uniform random phase (Appendix H footnote).
    server_update : "exact", "retrain" or "lazy"
        "exact" (default) and "retrain": after every removal the server re-clusters the new
        aggregate with fresh randomness, so the model is distributed exactly as a fit on the
        remaining data. "retrain" runs ``server_n_init`` new k-means++ and Lloyd runs; "exact"
        couples each run with its previous one instead
        (:class:`~fedcore.algorithms.mufc.coupled.CoupledKMeans`): each seed is kept with
        probability ``min(1, Q/P)`` of its new and old D^2 probabilities, else it and the later
        seeds are redrawn, which gives exactly k-means++'s distribution on the new aggregate;
        Lloyd from kept seeds is replayed from the previous run's bounds, same bits as a new run.
        A one-point removal then costs the server O(n + k d) per Lloyd iteration plus the rows
        of the clusters it touches, instead of a new fit; the server keeps each restart's Lloyd
        trace, O(n_iter (n + k d)) memory. With ``server_data="uniform"`` "exact" re-fits as
        "retrain" does (a fresh sample in the bins, fresh restarts), which is exact in
        distribution: there every sampled point is a row, so a coupled re-fit would replay full
        Lloyd passes (the replay recomputes only touched rows within one chunk of rows) and
        cost more than a fresh fit (measured on the real Celltype split, K = 4: 50 ms against
        31 ms per removal; on [MUFC]'s Gaussian set: 430 ms against 237 ms). "lazy": the server
        keeps its centers when no client re-seeded (the paper's measurement); not exact.
    client_refine : bool, default=False
        Complete client training ([MUFC] Appendix M.3, Table 2): each client runs Lloyd's
        algorithm from its k-means++ seeds (:class:`UnlearnableKMeans` with ``refine=True``) and
        sends its refined centers' bins with their cluster sizes. Still exact: after a removal the
        client re-runs Lloyd from its exactly unlearned seeds, so every removal costs the affected
        client a Lloyd run (as DC-KM's clients), not only the removals that hit a seed.
    random_state : None, int or numpy.random.Generator

    Attributes
    ----------
    cluster_centers_ : ndarray (n_clusters, n_features), server centers
    client_centers_ : list of ndarray (client_clusters, n_features), each client's centers (its
        seeds, or its Lloyd centers with ``client_refine=True``)
    aggregate_ : tuple (bins (m, d) int64, counts (m,) int64), the decoded sum, sorted
    comm_ : CommLedger
    n_rounds_ : int, aggregation rounds so far (fit is round 0)
    fit_report_ : MUFCRemovalReport, stage timings of the fit; its ``modeled_latency`` is the
        complete-retraining latency in the paper's model (slowest client + server)
    """

    _QUANTIZES = True  # the clients send their centers' grid bins (MUFCSetup.quantize)

    def __init__(self, n_clusters: int = 8, *, client_clusters: int | None = None,
                 gamma: Literal["auto"] | float = "auto", secure: bool = True,
                 server_data: Literal["weighted", "uniform"] = "weighted",
                 server_n_init: int = 10, bounds: tuple[ArrayLike, ArrayLike] | None = None,
                 random_phase: bool = False,
                 server_update: Literal["exact", "retrain", "lazy"] = "exact",
                 dropout_threshold: int | None = None, client_refine: bool = False,
                 random_state: np.random.Generator | int | None = None) -> None:
        self.n_clusters = n_clusters
        self.client_clusters = client_clusters
        self.gamma = gamma
        self.secure = secure
        self.server_data = server_data
        self.server_n_init = server_n_init
        self.bounds = bounds
        self.random_phase = random_phase
        self.server_update = server_update
        self.dropout_threshold = dropout_threshold
        self.client_refine = client_refine
        self.random_state = random_state

    # ------------------------------------------------------------------ fit
    def fit(self, federation: HorizontalFederation | Sequence[ArrayLike],
            y: object = None) -> Self:
        """Run Alg. 1 on a :class:`~fedcore.HorizontalFederation` (or a list of client
        arrays)."""
        k, kp = self._resolve_params()
        federation = check_federation(federation, kp, self._kp_name())
        self._check_dropout_threshold(federation.n_clients)
        boxes = [(X_l.min(axis=0), X_l.max(axis=0)) for X_l, _ in federation]
        if self.bounds is not None:
            _check_bounds_contain(self.bounds, boxes)
            boxes = None  # public bounds: the clients send no box
        if self.gamma != "auto":
            check_scalar(self.gamma, "gamma", min_value=0.0, max_value=1.0, include_min=False)
        check_random_state(self.random_state)
        self._k, self._kp = k, kp  # validated: only now does the model change
        keys = SimulatedKeys()  # in process the server's setup deals the clients' keys
        roles = [MUFCClient(X_l, l, ids_l, _checked=True, keys=keys)
                 for l, (X_l, ids_l) in enumerate(federation)]
        channel = InProcessChannel(roles, n_jobs=1)  # the simulated keys are shared: in turn
        self.fit_report_ = self._server_role().run(channel, keys=keys)
        self._channel = channel
        self._clients = [role.model for role in roles]  # the clients' models, for reading
        self._after_round()
        return self

    def _server_role(self):
        from .server import MUFCServer
        return MUFCServer(self)

    def _after_round(self):
        self.client_centers_ = [self._clients[l].cluster_centers_ for l in self._active]

    def _start(self, sizes, n_features, boxes):
        """The server's set-up of a fit; returns each client's random generator.

        ``sizes``: points per client; ``boxes``: each client's (min, max) per feature when the
        federation agrees on the bounds (None when ``bounds`` is given).
        """
        sizes = np.asarray(sizes)
        small = np.flatnonzero(sizes < self._kp)
        if small.size:
            l = int(small[0])
            raise ValueError(f"Argument {self._kp_name()!r}={self._kp} exceeds the "
                             f"{int(sizes[l])} point(s) of client {l}: every client needs at "
                             f"least {self._kp_name()} points")
        rng = check_random_state(self.random_state)
        client_rngs = rng.spawn(sizes.shape[0])
        self._server_rng = rng.spawn(1)[0]
        self._coupled = None
        self.comm_ = CommLedger()
        self.n_rounds_ = 0
        self._quantizer = self._make_quantizer(int(sizes.sum()), n_features, boxes, rng)
        self._active = list(range(sizes.shape[0]))
        if self.secure:
            self._aggregator = _aggregation.SCMAAggregator(
                sizes.shape[0], self._kp, self._quantizer.n_bins, n_features, rng.spawn(1)[0],
                dropout_threshold=self._check_dropout_threshold(sizes.shape[0]))
        else:
            self._aggregator = _aggregation.PlainAggregator(
                sizes.shape[0], self._kp, self._quantizer.n_bins, n_features, rng.spawn(1)[0])
        self.n_features_in_ = int(n_features)
        return client_rngs

    def _check_dropout_threshold(self, n_clients):
        """``dropout_threshold`` validated against the number of clients (None or an int)."""
        t = getattr(self, "dropout_threshold", None)
        if t is None:
            return None
        if not self.secure:
            raise ValueError(f"Argument 'dropout_threshold'={t!r} needs secure=True (dropout "
                             "tolerance is part of SCMA)")
        return check_int(t, "dropout_threshold", min_value=1, max_value=n_clients)

    def _client_refine(self):
        """``client_refine`` as a bool (False for models saved before it existed)."""
        return bool(getattr(self, "client_refine", False))

    def _kp_name(self):
        """The argument that sets K': client_clusters, or n_clusters when it is None."""
        return "n_clusters" if self.client_clusters is None else "client_clusters"

    def _resolve_params(self):
        """Validate the parameters; returns ``(K, K')`` (the model is not changed)."""
        k = check_int(self.n_clusters, "n_clusters", min_value=1)
        kp = k if self.client_clusters is None else check_int(
            self.client_clusters, "client_clusters", min_value=1)
        check_int(self.server_n_init, "server_n_init", min_value=1)
        if self.server_data not in ("weighted", "uniform"):
            raise ValueError("Argument 'server_data' must be 'weighted' or 'uniform', got "
                             f"{self.server_data!r}")
        if self.server_update not in ("exact", "retrain", "lazy"):
            raise ValueError("Argument 'server_update' must be 'exact', 'retrain' or 'lazy', got "
                             f"{self.server_update!r}")
        if not isinstance(getattr(self, "client_refine", False), (bool, np.bool_)):
            raise TypeError("Argument 'client_refine' must be True or False, got "
                            f"{self.client_refine!r}")
        return k, kp

    def _make_quantizer(self, n, n_features, boxes, rng):
        gamma = 1.0 / np.sqrt(n) if self.gamma == "auto" else check_scalar(
            self.gamma, "gamma", min_value=0.0, max_value=1.0, include_min=False)
        phase = rng.random(n_features) * gamma if self.random_phase else None
        if self.bounds is not None:
            low, high = self.bounds
        else:  # each client sent its per-feature min and max
            low = np.min([b[0] for b in boxes], axis=0)
            high = np.max([b[1] for b in boxes], axis=0)
        return Quantizer.from_bounds(low, high, gamma, phase)

    def _bin_points(self, bins):
        """The point the server puts at each bin (its grid point, Alg. 1 line 6)."""
        return self._quantizer.centers(bins)

    def _server_view(self, centers):
        """Client centers as the server sees them: their bins' grid points."""
        return self._quantizer.centers(self._quantizer.bins(centers))

    # ------------------------------------------------------- aggregation + server
    def _publish(self, bins, counts, recluster, timings):
        """Server: keep the decoded sum and re-cluster it when asked (Alg. 1 lines 6-7)."""
        self.aggregate_ = (bins, counts)
        if recluster:
            t0 = time.perf_counter()
            self.cluster_centers_ = self._server_cluster(bins, counts)
            timings["server_cluster"] = time.perf_counter() - t0

    def _server_cluster(self, bins, counts):
        """k-means++ and Lloyd on the aggregate (Alg. 1 lines 6-7), fresh randomness each time
        (coupled with the previous runs when ``server_update="exact"``)."""
        rng = self._server_rng
        if self.server_data == "uniform":
            # A fresh sample and fresh restarts, also for server_update="exact" (see the class
            # docstring: coupling does not pay when every sampled point is a row).
            points = self._quantizer.sample(bins, counts, rng)
            weights = None
        else:
            points = self._bin_points(bins)
            weights = counts.astype(np.float64)
            coupled = (self.server_update == "exact" and points.shape[0] >= self._k
                       and np.issubdtype(bins.dtype, np.integer))
            if coupled:
                if self._coupled is None:
                    self._coupled = CoupledKMeans(self._k, self.server_n_init).fit(
                        bins, points, weights, rng)
                else:
                    self._coupled.refit(bins, points, weights, rng)
                return self._coupled.cluster_centers_
            self._coupled = None
            if points.shape[0] < self._k:  # integer weights are multiplicities
                points = np.repeat(points, counts, axis=0)
                weights = None
        model = KMeans(self._k, n_init=self.server_n_init, random_state=rng)
        return model.fit(points, sample_weight=weights).cluster_centers_

    # -------------------------------------------------------------- unlearning
    # What a round changes at the server: restored by :meth:`_transaction` when it fails.
    _ROUND_DEEP = ("_server_rng", "_coupled")
    _ROUND_SHALLOW = ("n_rounds_", "_active", "aggregate_", "cluster_centers_", "client_centers_")

    @contextlib.contextmanager
    def _transaction(self, removing=None):
        """A removal round as one transaction: if it fails, the server (its random stream,
        coupled k-means, aggregator and SCMA setup, restored in place so that the client roles
        still share them), the ledger and every participant's role (and the model of client
        ``removing``) are left bit for bit as they were."""
        with contextlib.ExitStack() as stack:
            stack.enter_context(all_or_nothing(self, self._ROUND_DEEP, self._ROUND_SHALLOW))
            aggregator = self._aggregator
            if self.secure:  # in place: the client roles share the setup with the server
                stack.enter_context(all_or_nothing(aggregator, shallow=("_last",)))
                for obj, deep, shallow in (aggregator.server.round_state()
                                           + aggregator.setup.round_state()):
                    stack.enter_context(all_or_nothing(obj, deep, shallow))
            for l in self._active:
                stack.enter_context(self._channel.clients[l].transaction(l == removing))
            yield

    def remove(self, client_id: int, ids: ArrayLike) -> MUFCRemovalReport:
        """Remove points ``ids`` (global point ids) held by client ``client_id`` ([MUFC] Alg. 4,
        cross-silo).

        The client runs Alg. 3; every participant re-sends with fresh masks (the server cannot
        tell which client changed) and the server re-clusters the new sum with fresh randomness
        (``server_update="exact"`` or ``"retrain"``). Atomic: the request is validated first, and
        a failure at any later step (client, aggregation, server) leaves the model bit for bit
        unchanged. Returns a :class:`MUFCRemovalReport`.
        """
        check_is_fitted(self, "_clients")
        l = check_int(client_id, "client_id", min_value=0, max_value=len(self._clients) - 1)
        ids = self._check_removal(l, ids, {c: self._clients[c].n_samples_ for c in self._active})
        with self._transaction(removing=l):
            report = self._server_role().run_removal(self._channel, l, ids)
            self._after_round()
        return report

    def remove_clients(self, client_ids: ArrayLike) -> MUFCRemovalReport:
        """Remove every point of the given clients ([MUFC] Alg. 4, cross-device): their vectors
        leave the sum (line 5) and the server re-clusters. Removing every client raises. Atomic
        as :meth:`remove`."""
        check_is_fitted(self, "_clients")
        sizes = {l: self._clients[l].n_samples_ for l in self._active}
        ids, _ = self._check_client_removal(client_ids, sizes)
        with self._transaction():
            report = self._server_role().run_client_removal(self._channel, ids,
                                                            sum(sizes[l] for l in ids))
            self._after_round()
        return report

    def _check_removal(self, l, ids, sizes):
        """Validated ids of a request to remove points of participant ``l`` (``sizes``:
        {participant: points}); nothing changes."""
        if l not in self._active:
            raise ValueError(f"Argument 'client_id': client {l} was removed")
        ids = check_ids(ids, "ids")
        left = sum(sizes.values()) - ids.shape[0]
        if left < self._k:
            raise ValueError(f"Argument 'ids': removing {ids.shape[0]} point(s) would leave "
                             f"{left} point(s) in the federation, fewer than n_clusters = "
                             f"{self._k}")
        return ids

    def _check_client_removal(self, client_ids, sizes):
        """Validated (ids to remove, remaining clients); ``sizes``: {active client: points}."""
        ids = check_ids(client_ids, "client_ids").tolist()
        if not ids:
            raise ValueError("Argument 'client_ids' must name at least one client, got none")
        for l in ids:
            if l not in self._active:
                raise ValueError(f"Argument 'client_ids' contains unknown or removed client {l}")
        remaining = [l for l in self._active if l not in set(ids)]
        if not remaining:
            raise ValueError(f"Argument 'client_ids' names every client ({ids}): removing them "
                             "would leave no data")
        if sum(sizes[l] for l in remaining) < self._k:
            raise ValueError(f"Argument 'client_ids': removing clients {ids} would leave fewer "
                             f"points than n_clusters = {self._k}")
        return ids, remaining

    # ------------------------------------------------------------ evaluation
    def predict(self, X: ArrayLike) -> np.ndarray:
        """Nearest server center of each row."""
        check_is_fitted(self, "cluster_centers_")
        X = check_fitted_array(X, self.n_features_in_, type(self).__name__)
        return assign(X, self.cluster_centers_)[0]

    def inertia(self, X: ArrayLike) -> float:
        """Centralized objective of the server centers on X (MUFC eq. (1))."""
        from ...metrics import inertia
        check_is_fitted(self, "cluster_centers_")
        return inertia(check_fitted_array(X, self.n_features_in_, type(self).__name__),
                       self.cluster_centers_)

    def federated_inertia(self) -> float:
        """Federated objective (MUFC eq. (2)) on the points the clients still hold.

        Induced global clusters (Def. 3.1): a point of client ``l``'s local cluster ``j`` goes to
        the server center nearest to the quantized center ``c_j^(l)`` (its bin's grid point).
        """
        from ...metrics import federated_inertia
        check_is_fitted(self, "cluster_centers_")
        clients = []
        for l in self._active:
            client = self._clients[l]
            clients.append((client.remaining()[0], client.labels_,
                            self._server_view(client.cluster_centers_)))
        return federated_inertia(clients, self.cluster_centers_)

    @property
    def n_clients_(self) -> int:
        """Number of clients still in the federation."""
        return len(self._active)

    @property
    def client_ids_(self) -> list[int]:
        """Ids of the clients still in the federation, increasing."""
        check_is_fitted(self, "_active")
        return list(self._active)

    @property
    def client_clusters_(self) -> int:
        """K', the number of centers each client seeds."""
        check_is_fitted(self, "_kp")
        return self._kp

    def check_state(self) -> None:
        """Refuse (``ValueError``) an inconsistent fitted state: the server centers, every
        client's :meth:`UnlearnableKMeans.check_state`, the participants, and the server's
        coupled k-means (see :meth:`fedcore.algorithms.base.BaseEstimator.check_state`)."""
        super().check_state()
        if not hasattr(self, "_clients"):
            return
        name = type(self).__name__
        clients = self._clients
        if not (isinstance(clients, list) and all(isinstance(c, UnlearnableKMeans)
                                                  for c in clients)
                and isinstance(self._active, list)
                and all(type(l) is int and 0 <= l < len(clients) for l in self._active)
                and len(set(self._active)) == len(self._active)):
            raise ValueError(f"The state of this {name} is inconsistent: its clients or "
                             "participants")
        for client in clients:
            client.check_state()
            if client.n_features_in_ != self.n_features_in_:
                raise ValueError(f"The state of this {name} is inconsistent: a client of "
                                 f"{client.n_features_in_} features")
        if self._coupled is not None:
            self._coupled.check_state()
        if "_channel" not in self.__dict__:
            self._give_roles()
        roles = self._channel.clients
        if not (isinstance(self._channel, InProcessChannel) and len(roles) == len(clients)
                and all(isinstance(r, MUFCClient) and r.model is c
                        for r, c in zip(roles, clients))):
            raise ValueError(f"The state of this {name} is inconsistent: its client roles")

    def _give_roles(self):
        """A model saved before MUFC ran on client roles kept each client's vector in
        ``_vectors`` and its encoder in the aggregator: build the roles from them."""
        keys = SimulatedKeys()
        aggregator = self._aggregator
        encoders = getattr(aggregator, "clients", [])
        if self.secure:
            keys.setup = aggregator.setup
        prepared = getattr(aggregator, "_prepared", None)
        roles = []
        for l, model in enumerate(self._clients):
            role = MUFCClient(np.empty((0, model.n_features_in_)), l,
                              np.empty(0, dtype=np.int64), _checked=True, keys=keys)
            role.X = role.ids = None  # as after a set-up: the model holds the points
            role.model, role.vector = model, self.__dict__.get("_vectors", {}).get(l)
            role.quantizer = self._quantizer if self._QUANTIZES else None
            role.encoder = encoders[l] if self.secure else None
            if prepared is not None and l in prepared[1]:
                role.prepared = prepared
            roles.append(role)
        for name in ("clients", "_prepared"):
            aggregator.__dict__.pop(name, None)
        self.__dict__.pop("_vectors", None)
        self._channel = InProcessChannel(roles, n_jobs=1, ledger=self.comm_)

    def client_model(self, client_id: int) -> UnlearnableKMeans:
        """Client ``client_id``'s exact-unlearning k-means++ model
        (:class:`~fedcore.UnlearnableKMeans`: its seeds, labels and remaining points), as the
        data owner sees it. Read it, do not change it: removals go through :meth:`remove`."""
        check_is_fitted(self, "_clients")
        l = check_int(client_id, "client_id", min_value=0, max_value=len(self._clients) - 1)
        if l not in self._active:
            raise ValueError(f"Argument 'client_id': client {l} was removed")
        return self._clients[l]


def _check_bounds_contain(bounds, boxes):
    """Refuse user ``bounds`` that are not (low, high) of the data's width or do not contain
    every client's data (a point outside has no bin: a later re-seed would fail half way)."""
    d = boxes[0][0].shape[0]
    try:
        low, high = (np.asarray(b, dtype=np.float64) for b in bounds)
    except (TypeError, ValueError):
        raise ValueError("Argument 'bounds' must be a pair (low, high) of arrays of shape "
                         f"({d},), got {bounds!r}") from None
    if low.shape != (d,) or high.shape != (d,):
        raise ValueError(f"Argument 'bounds' must be (low, high) of shape ({d},) each, got "
                         f"shapes {low.shape} and {high.shape}")
    for part in (low, high):  # finite, and a box whose width stays finite
        check_array(part, "bounds", ensure_2d=False, distance_range=True)
    for l, (lo, hi) in enumerate(boxes):
        out = np.flatnonzero((lo < low) | (hi > high))
        if out.size:
            j = int(out[0])
            raise ValueError(f"Argument 'bounds' does not contain client {l}'s data: feature "
                             f"{j} ranges over [{float(lo[j])}, {float(hi[j])}], bounds "
                             f"[{float(low[j])}, {float(high[j])}]")


class SimplifiedFC(MUFC):
    """Simplified federated k-means (MUFC Appendix I, Alg. 5): no quantization, no secure sum.

    Clients run exact-unlearning k-means++ seeding and send their centers with the cluster sizes
    in the clear (Alg. 5 line 3); the server runs weighted k-means++ and Lloyd on them (line 5).
    Removal works as in :class:`MUFC`, exactly. Use it where the privacy criterion of MUFC is not
    needed; the server learns every client's centers.
    """

    def __init__(self, n_clusters: int = 8, *, client_clusters: int | None = None,
                 server_n_init: int = 10,
                 server_update: Literal["exact", "retrain", "lazy"] = "exact",
                 random_state: np.random.Generator | int | None = None) -> None:
        super().__init__(n_clusters, client_clusters=client_clusters, secure=False,
                         server_n_init=server_n_init, server_update=server_update,
                         random_state=random_state)

    _QUANTIZES = False  # the clients send their centers (MUFCSetup.quantize)

    def _make_quantizer(self, n, n_features, boxes, rng):
        return _NoQuantizer()

    def _bin_points(self, bins):
        return np.asarray(bins, dtype=np.float64)

    def _server_view(self, centers):
        return centers


class _NoQuantizer:
    n_bins = 0
