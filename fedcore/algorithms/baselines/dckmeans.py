"""DC-k-means ([DCKM]) on a federation: a two-level divide-and-conquer tree.

The leaves are the clients (:class:`DCKMClient`), the root is the server (:class:`DCKMServer`).
[DCKM] describes one machine drawing every leaf's randomness and then the root's from one
random stream, leaf after leaf; the server keeps that order by lending its stream to one client
at a time (:mod:`fedcore.federation.protocol`, "Methods with one random stream"), so the results
are those of the single-machine description on every engine.
"""
from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import check_ids, check_int, check_random_state
from ...federation.horizontal import HorizontalFederation
from ...federation.ledger import CommLedger
from ...federation.protocol import (Channel, InProcessChannel, Message, ProtocolError, diagnostic,
                                    expect, generator_from_stream, resume_stream, stream_state)
from ..base import FederatedEstimator, all_or_nothing, check_is_fitted
from ..clients import HorizontalClient, check_federation
from ..kmeans.lloyd import KMeans
from ..mufc.estimators import MUFCRemovalReport

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["DCKMeans", "DCKMServer", "DCKMClient", "DCKMResult", "DCKMRemoval", "DCKMFit",
           "DCKMRemove", "DCKMCenters"]


@dataclass(frozen=True, eq=False)
class DCKMFit(Message):
    """Server to client, before its leaf is computed: the settings of the client's k-means
    (``client_clusters`` centers, ``n_init`` restarts) and the server's random stream, lent to
    the client (:func:`~fedcore.federation.protocol.stream_state`). Setup, not counted."""

    counted = False
    client_clusters: int
    n_init: int
    stream: str


@dataclass(frozen=True, eq=False)
class DCKMRemove(Message):
    """Server to client: delete the points ``ids`` (global ids, int64) and recompute the leaf
    with the lent random ``stream`` (the deletion of [DCKM]). Not counted: the request is the
    data owner's, passed on by the server, not part of DC-KM's communication ([MUFC] Appendix
    M.2 counts what the clients send)."""

    counted = False
    ids: np.ndarray
    stream: str


@dataclass(frozen=True, eq=False)
class DCKMCenters(Message):
    """Client to server: the centers of the client's k-means, shape (client_clusters, d), in the
    dtype of its data (float64; float32 data gives float32 centers), and the cluster sizes,
    int64 of shape (client_clusters,); ``stream`` (diagnostic, not counted) is the state the
    lent random stream reached. Counted as ``client_clusters * (d + 1)`` numbers of 64 bits,
    as [MUFC] Appendix M.2 counts DC-KM's upload."""

    kind = "centers+sizes"
    element_bits = 64  # centers and sizes are counted as 64-bit numbers (see above)
    centers: np.ndarray
    sizes: np.ndarray
    stream: str = diagnostic()


class DCKMResult(NamedTuple):
    """DC-KM's server after a fit or a removal: the global centers, the centers each client
    sent and the run's ledger."""

    cluster_centers: np.ndarray
    client_centers: list
    comm: CommLedger


class DCKMRemoval(NamedTuple):
    """One removal at the server: the new :class:`DCKMResult` and the seconds of its two steps
    (``"client_unlearn"``, the client's leaf; ``"server_cluster"``, the root)."""

    result: DCKMResult
    timings: dict


class DCKMClient(HorizontalClient):
    """DC-KM's client role, a leaf of the tree: k-means with ``client_clusters`` centers on its
    data, run with the random stream the server lends (:class:`DCKMFit`), and again after a
    deletion (:class:`DCKMRemove`); answers with :class:`DCKMCenters`.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), the client's data (copied)
    client_id : int
    ids : array-like of shape (n_samples,), the global ids of the rows; None means
        ``arange(n_samples)``

    Attributes
    ----------
    X, ids : the client's current data and ids. A deletion replaces them (and ``centers``,
        ``labels``) with new arrays, never writes into them.
    centers, labels : the client's k-means, after the first message
    """

    def __init__(self, X: ArrayLike, client_id: int = 0, ids: ArrayLike | None = None, *,
                 _checked: bool = False) -> None:
        super().__init__(X, client_id, _checked=_checked)
        self.X = self.X.copy()
        n = self.X.shape[0]
        self.ids = np.arange(n, dtype=np.int64) if ids is None else \
            (np.array(ids) if _checked else check_ids(ids, f"ids of client {self.client_id}")
             .copy())
        if self.ids.shape[0] != n:
            raise ValueError(f"Argument 'ids' of client {self.client_id} holds "
                             f"{self.ids.shape[0]} ids for {n} rows")

    def handle(self, message: Message) -> DCKMCenters:
        if isinstance(message, DCKMRemove):
            return self.remove(message)
        m = expect(message, DCKMFit, f"client {self.client_id}")
        self.check_size(m.client_clusters)
        self.client_clusters, self.n_init = m.client_clusters, m.n_init
        return self._leaf(self.X, self.ids, m.stream)

    def remove(self, message: DCKMRemove) -> DCKMCenters:
        """Delete ``message.ids`` and recompute the leaf; refuses ids this client does not hold
        and a deletion that leaves fewer than ``client_clusters`` points (nothing changes)."""
        if not hasattr(self, "client_clusters"):
            raise ProtocolError(f"client {self.client_id} received a DCKMRemove before its "
                                "DCKMFit")
        ids = check_ids(message.ids, "ids")
        missing = np.setdiff1d(ids, self.ids)
        if missing.size:
            raise ValueError(f"Argument 'ids' contains id {int(missing[0])}, not held by client "
                             f"{self.client_id}")
        keep = ~np.isin(self.ids, ids)
        if keep.sum() < self.client_clusters:
            raise ValueError(f"Argument 'ids': removing {ids.size} point(s) would leave client "
                             f"{self.client_id} with fewer than client_clusters = "
                             f"{self.client_clusters} points")
        return self._leaf(self.X[keep], self.ids[keep], message.stream)

    def _leaf(self, X, ids, stream):
        rng = generator_from_stream(stream)
        model = KMeans(self.client_clusters, n_init=self.n_init, random_state=rng).fit(X)
        sizes = np.bincount(model.labels_, minlength=self.client_clusters).astype(np.int64)
        self.X, self.ids, self.centers, self.labels = X, ids, model.cluster_centers_, model.labels_
        return DCKMCenters(self.centers, sizes, stream_state(rng))


class DCKMServer:
    """DC-KM's server role, the root of the tree (the clients are :class:`DCKMClient`).

    :meth:`run` lends the random stream to each client in turn (a :class:`DCKMFit`, answered
    with :class:`DCKMCenters`), then runs k-means on the union of the centers received, with
    unit weights or, if ``weighted``, the cluster sizes ([MUFC] Appendix M.2), drawing from the
    stream where the last client left it. :meth:`remove` recomputes one leaf and the root.

    Takes the parameters of :class:`DCKMeans` and checks them; :meth:`run` sets the attributes.

    Attributes
    ----------
    rng : numpy.random.Generator, the stream (``random_state`` itself when it is a Generator)
    round : int, the ledger round of the last leaf computed (0 for the fit, +1 per removal)
    centers, sizes : list of ndarray, what each client sent last
    """

    def __init__(self, n_clusters: int = 8, *, client_clusters: int | None = None,
                 weighted: bool = False, n_init: int = 1,
                 random_state: np.random.Generator | int | None = None) -> None:
        self.n_clusters = check_int(n_clusters, "n_clusters", min_value=1)
        self.client_clusters = self.n_clusters if client_clusters is None else check_int(
            client_clusters, "client_clusters", min_value=1)
        self.n_init = check_int(n_init, "n_init", min_value=1)
        self.weighted = weighted
        self.random_state = random_state

    def run(self, channel: Channel) -> DCKMResult:
        """Fit over ``channel``: every client's leaf in client order, then the root."""
        k, kp = self.n_clusters, self.client_clusters
        if channel.n_clients * kp < k:
            raise ValueError(f"Argument 'n_clusters'={k} exceeds the {channel.n_clients * kp} "
                             f"centers the clients send ({channel.n_clients} clients x "
                             f"client_clusters={kp})")
        self.rng = check_random_state(self.random_state)
        self.round = 0
        replies = [self._lend(channel, l, DCKMFit, client_clusters=kp, n_init=self.n_init)
                   for l in range(channel.n_clients)]
        self.centers = [reply.centers for reply in replies]
        self.sizes = [reply.sizes for reply in replies]
        return self._root(channel.ledger)

    def remove(self, channel: Channel, client_id: int, ids: np.ndarray) -> DCKMRemoval:
        """Delete the points ``ids`` (int64 global ids) of client ``client_id``: its leaf, in a
        new round, then the root ([DCKM]: only the path from the leaf to the root changes).
        Atomic: if a step raises, the server role is left as it was (:meth:`atomic`)."""
        with self.atomic():
            t0 = time.perf_counter()
            self.round += 1
            reply = self._lend(channel, client_id, DCKMRemove, ids=ids)
            self.centers = [reply.centers if l == client_id else c
                            for l, c in enumerate(self.centers)]
            self.sizes = [reply.sizes if l == client_id else s for l, s in enumerate(self.sizes)]
            t1 = time.perf_counter()
            result = self._root(channel.ledger)
            t2 = time.perf_counter()
        return DCKMRemoval(result, {"client_unlearn": t1 - t0, "server_cluster": t2 - t1})

    def atomic(self) -> AbstractContextManager[None]:
        """A block that, if it raises, leaves the server's state as it was: the stream (restored
        in place), the round and what the clients sent (see
        :func:`~fedcore.algorithms.base.all_or_nothing`)."""
        return all_or_nothing(self, deep=("rng",), shallow=("round", "centers", "sizes"))

    def _lend(self, channel, l, request_type, **settings):
        """Lend the stream to client ``l`` and continue it where the client's draws ended."""
        request = request_type(stream=stream_state(self.rng), **settings)
        reply = expect(channel.exchange({l: request}, self.round)[l], DCKMCenters, "server")
        resume_stream(self.rng, reply.stream)
        return reply

    def _root(self, ledger):
        centers = np.concatenate(self.centers)
        weights = np.concatenate(self.sizes).astype(np.float64) if self.weighted else None
        if np.count_nonzero(weights if weights is not None else np.ones(len(centers))) < \
                self.n_clusters:
            raise ValueError(f"Argument 'n_clusters'={self.n_clusters} exceeds the clients' "
                             "non-empty centers")
        server = KMeans(self.n_clusters, n_init=self.n_init, random_state=self.rng)
        return DCKMResult(server.fit(centers, sample_weight=weights).cluster_centers_,
                          list(self.centers), ledger)


class DCKMeans(FederatedEstimator):
    """Divide-and-conquer k-means with deletion, tree height 2, leaves = clients.

    Each client runs full k-means (k-means++ and Lloyd) with ``client_clusters`` centers and sends
    its centers; the server runs k-means on their union. As in the adaptation of
    [MUFC] Appendix M.2, client centers get unit weights unless ``weighted=True`` (cluster sizes).
    Deleting a point re-runs its client and the server (the deletion of [DCKM] for DC-k-means:
    only the leaf and the path to the root are recomputed).

    The roles are :class:`DCKMServer` and :class:`DCKMClient`; ``fit`` runs them in this process,
    :meth:`fit_over` over any channel (e.g. Flower nodes, which cannot then take removals).

    Attributes
    ----------
    cluster_centers_ : ndarray (n_clusters, n_features)
    client_centers_ : list of ndarray (client_clusters, n_features)
    comm_ : CommLedger
    """

    server_class = DCKMServer
    client_class = DCKMClient

    def __init__(self, n_clusters: int = 8, *, client_clusters: int | None = None,
                 weighted: bool = False, n_init: int = 1,
                 random_state: np.random.Generator | int | None = None) -> None:
        self.n_clusters = n_clusters
        self.client_clusters = client_clusters
        self.weighted = weighted
        self.n_init = n_init
        self.random_state = random_state

    def client_role(self, X: ArrayLike, client_id: int = 0, *,
                    ids: ArrayLike | None = None) -> DCKMClient:
        """A new :class:`DCKMClient` holding ``X`` and its global point ``ids``."""
        return DCKMClient(X, client_id, ids)

    def fit(self, federation: HorizontalFederation | Sequence[ArrayLike], y: object = None) -> Self:
        """Fit on a :class:`~fedcore.HorizontalFederation` (or a list of client arrays)."""
        server = self.server_role()
        federation = check_federation(federation, server.client_clusters, "n_clusters" if
                                      self.client_clusters is None else "client_clusters")
        channel = InProcessChannel([DCKMClient(X_l, l, ids_l, _checked=True)
                                    for l, (X_l, ids_l) in enumerate(federation)], n_jobs=1)
        self._store_result(server.run(channel))  # validated: only now does the model change
        self._server, self._channel = server, channel
        return self

    def fit_over(self, channel: Channel) -> Self:
        """Fit by running the server role over ``channel``; the clients stay where the channel
        reaches them, so the model takes no removals (refit with ``fit`` for that)."""
        result = self.server_role().run(channel)
        for name in ("_server", "_channel"):
            self.__dict__.pop(name, None)
        return self._store_result(result)

    def remove(self, client_id: int, ids: ArrayLike) -> MUFCRemovalReport:
        """Delete points (global ids) from one client: refit that client and the server."""
        check_is_fitted(self, "_channel")
        client_id = check_int(client_id, "client_id", min_value=0)
        if client_id >= self._channel.n_clients:
            raise ValueError(f"Argument 'client_id' must be a current client, got {client_id!r}")
        ids = check_ids(ids, "ids")
        # Atomic: the client's data and leaf, the server (its stream included) and the ledger
        # change together or not at all.
        with all_or_nothing(self, shallow=("cluster_centers_", "client_centers_")), \
                self._server.atomic(), \
                all_or_nothing(self._channel.clients[client_id],
                               shallow=("X", "ids", "centers", "labels")):
            removal = self._server.remove(self._channel, client_id, ids)
            self._store_result(removal.result)
        return MUFCRemovalReport(True, True, int(ids.size), removal.timings)

    def check_state(self) -> None:
        """Refuse an inconsistent fitted state (see
        :meth:`fedcore.algorithms.base.BaseEstimator.check_state`); a model saved before DC-KM
        ran on client roles (its clients' data in ``_data``, their k-means in ``_models``) gets
        its roles, so that it takes removals as before."""
        super().check_state()
        if "_models" in self.__dict__ and "_channel" not in self.__dict__:
            self._give_roles()
        if "_channel" in self.__dict__:
            clients = self._channel.clients
            if not (isinstance(self._channel, InProcessChannel) and clients
                    and all(isinstance(c, DCKMClient) for c in clients)
                    and isinstance(self._server, DCKMServer)
                    and len(self._server.centers) == len(clients)):
                raise ValueError("The state of this DCKMeans is inconsistent: its client roles")

    def _give_roles(self):
        server = self.server_role()
        server.rng, server.round = self._rng, self._round
        clients = []
        for l in sorted(self._data):
            X, ids = self._data[l]
            client = DCKMClient(X, l, ids, _checked=True)
            model = self._models[l]
            client.client_clusters, client.n_init = self._kp, self.n_init
            client.centers, client.labels = model.cluster_centers_, model.labels_
            clients.append(client)
        server.centers = [c.centers for c in clients]
        server.sizes = [np.bincount(c.labels, minlength=self._kp).astype(np.int64)
                        for c in clients]
        self._server = server
        self._channel = InProcessChannel(clients, n_jobs=1, ledger=self.comm_)
        for name in ("_data", "_models", "_rng", "_round", "_k", "_kp"):
            self.__dict__.pop(name, None)

    def federated_inertia(self) -> float:
        """Federated objective ([MUFC] eq. (2)) with induced global clusters ([MUFC] Def. 3.1)."""
        from ...metrics import federated_inertia
        check_is_fitted(self, "_channel")
        clients = [(c.X, c.labels, c.centers) for c in self._channel.clients]
        return federated_inertia(clients, self.cluster_centers_)
