"""The server role of MUFC ([MUFC] Alg. 1 and 4).

:class:`MUFCServer` runs a fit and its removal requests over a channel to
:class:`~fedcore.algorithms.mufc.roles.MUFCClient` roles (:meth:`MUFCServer.run`,
:meth:`MUFCServer.run_removal`, :meth:`MUFCServer.run_client_removal`; the messages are those of
:mod:`fedcore.algorithms.mufc.roles`): the in-process :class:`~fedcore.MUFC` estimator runs it
over an :class:`~fedcore.federation.protocol.InProcessChannel`, the Flower apps
(:mod:`fedcore.integrations.flower.mufc`) over a
:class:`~fedcore.integrations.flower.roles.FlowerChannel`, with the same messages, ledger and
model.
"""
from __future__ import annotations

import json
import time
from collections.abc import Mapping

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import check_int
from ...federation.protocol import Channel, expect, seed_fields
from .estimators import MUFC, MUFCRemovalReport
from .roles import (KeySharesRequest, MUFCHello, MUFCJoin, MUFCPrepare, MUFCPrepared, MUFCReady,
                    MUFCRound, MUFCSetup, PlainVector, RoundKey, RoundKeyRequest, SCMAVector,
                    SealedShares, SimulatedKeys, UnmaskRequest, UnmaskShares)

__all__ = ["MUFCServer"]


class MUFCServer:
    """MUFC's server role: the set-up of a fit (grid, SCMA, each client's seed), the rounds,
    the aggregation (with SCMA's dropout recovery) and the server's clustering.

    Parameters
    ----------
    estimator : MUFC
        Its parameters drive the server; it receives the fitted attributes
        (``cluster_centers_``, ``aggregate_``, ``comm_``, ``n_rounds_``) and holds no clients.
    deployed : bool, default=False
        The clients agree SCMA's keys by X25519 (Flower nodes; with ``dropout_threshold`` also
        fresh round keys every round); False: an in-process run, whose keys the server's setup
        deals (:class:`~fedcore.algorithms.mufc.roles.SimulatedKeys`).

    Attributes
    ----------
    sizes : dict, points of each participant (from the hello, less what was removed)
    dropped : list of int, clients that dropped out of a round (dropout tolerance), in order
    """

    def __init__(self, estimator: MUFC, *, deployed: bool = False) -> None:
        estimator._resolve_params()  # checked; a fitted estimator keeps the K, K' it was fit with
        self.model = estimator
        self.deployed = deployed
        self.public_keys = np.empty((0, 32), dtype=np.uint8)
        self.sizes = {}
        self.dropped = []

    # ------------------------------------------------------------------ rounds
    @property
    def participants(self) -> list[int]:
        """Clients taking part in the next round, increasing."""
        return list(self.model._active)

    def next_round(self) -> int:
        """Open the round of a removal request; returns its number."""
        self.model.n_rounds_ += 1
        return self.model.n_rounds_

    def check_removal(self, client_id: int, ids: ArrayLike) -> np.ndarray:
        """The ids of a request to remove points of client ``client_id`` ([MUFC] Alg. 4,
        cross-silo), checked against :attr:`sizes`: a participant, integer ids without repeats,
        enough points left for ``n_clusters``. Nothing changes."""
        l = check_int(client_id, "client_id", min_value=0)
        return self.model._check_removal(l, ids, self.sizes)

    def check_client_removal(self, client_ids: ArrayLike, sizes: Mapping[int, int]) -> list[int]:
        """The ids of a request to remove clients ([MUFC] Alg. 4, cross-device), checked: known
        participants, not all of them, the rest holding enough points (``sizes``: {participant:
        points}). Nothing changes."""
        return self.model._check_client_removal(client_ids, sizes)[0]

    def publish(self, bins: np.ndarray, counts: np.ndarray, recluster: bool,
                timings: dict[str, float], n_removed: int,
                retrained: bool | None = None) -> MUFCRemovalReport:
        """Keep the round's sum and re-cluster it when asked ([MUFC] Alg. 1 lines 6-7);
        returns the round's :class:`~fedcore.MUFCRemovalReport`."""
        self.model._publish(bins, counts, recluster, timings)
        return MUFCRemovalReport(retrained, recluster, int(n_removed), timings)

    # ------------------------------------------------------------ over a channel
    def run(self, channel: Channel, *, keys: SimulatedKeys | None = None) -> MUFCRemovalReport:
        """Fit over ``channel`` ([MUFC] Alg. 1): hello, set-up, round 0, clustering. Returns the
        fit's report; the estimator's ``comm_`` is ``channel.ledger``. ``keys``: the in-process
        key dealer, given the SCMA setup before the clients are set up."""
        m = self.model
        m._k, m._kp = m._resolve_params()
        agree = m.bounds is None and m._QUANTIZES  # SimplifiedFC needs no grid
        replies = channel.broadcast(MUFCHello(agree, bool(m.secure)), round_number=0)
        joins = [expect(replies[l], MUFCJoin, "server") for l in range(channel.n_clients)]
        widths = sorted({j.n_features for j in joins})
        if len(widths) != 1:
            raise ValueError(f"The clients' data have different numbers of features: {widths}")
        sizes = np.array([j.n_samples for j in joins])
        self.sizes = {l: int(n) for l, n in enumerate(sizes)}
        boxes = [(j.low, j.high) for j in joins] if agree else None
        if self.deployed and m.secure:
            self.public_keys = np.stack([np.asarray(j.public_key, dtype=np.uint8)
                                         for j in joins])
        rngs = m._start(sizes, widths[0], boxes)
        m.comm_ = channel.ledger
        if keys is not None and m.secure:
            keys.setup = m._aggregator.setup
        replies = channel.exchange({l: self.setup_message(l, rng) for l, rng in enumerate(rngs)},
                                   round_number=0)
        timings = {"client_unlearn": max(expect(r, MUFCReady, "server").seconds
                                         for r in replies.values())}
        bins, counts, round_timings, _ = self._round(channel, 0)
        del round_timings["client_unlearn"]  # the fit's unlearning is the clients' seeding
        timings.update(round_timings)
        return self.publish(bins, counts, True, timings, 0, True)

    def setup_message(self, client_id: int, rng: np.random.Generator) -> MUFCSetup:
        """What client ``client_id`` needs to seed and encode, sent once before round 0: its
        settings, the seed of its random generator ``rng``
        (:func:`~fedcore.federation.protocol.seed_fields`), the grid (none for SimplifiedFC,
        which sends its centers) and SCMA's public parameters."""
        m, q = self.model, self.model._quantizer
        entropy, spawn_key = seed_fields(rng)
        none = np.empty(0)
        grid = (q.low, float(q.scale), float(q.gamma), none if q.phase is None else q.phase) \
            if m._QUANTIZES else (none, 1.0, 1.0, none)
        scma = json.dumps(m._aggregator.setup.public_config()) if m.secure else ""
        return MUFCSetup(int(client_id), int(m._kp), m._client_refine(), entropy, spawn_key,
                         m._QUANTIZES, *grid, m.secure, scma, self.public_keys)

    def run_removal(self, channel: Channel, client_id: int, ids: np.ndarray) -> MUFCRemovalReport:
        """One removal request over ``channel`` ([MUFC] Alg. 4, cross-silo): client
        ``client_id`` removes ``ids`` (checked by the caller) by [MUFC] Alg. 3, every
        participant re-sends with fresh masks, the server decodes and re-clusters."""
        m = self.model
        r = self.next_round()
        bins, counts, timings, retrained = self._round(channel, r, client_id, ids)
        recluster = m.server_update != "lazy" or bool(retrained)
        if client_id in self.sizes:  # (a client that dropped in this round left entirely)
            self.sizes[client_id] -= len(ids)
        return self.publish(bins, counts, recluster, timings, len(ids), retrained)

    def run_client_removal(self, channel: Channel, client_ids: list[int],
                           n_removed: int) -> MUFCRemovalReport:
        """Take the checked ``client_ids`` (holding ``n_removed`` points) out of the
        participants ([MUFC] Alg. 4, cross-device); the others re-send, the server decodes and
        re-clusters."""
        m = self.model
        m._active = [l for l in m._active if l not in set(client_ids)]
        for l in client_ids:
            self.sizes.pop(l, None)
        r = self.next_round()
        bins, counts, timings, _ = self._round(channel, r)
        del timings["client_unlearn"]  # nobody unlearns: the clients' vectors leave the sum
        return self.publish(bins, counts, True, timings, n_removed, False)

    def _round(self, channel, r, client_id=None, ids=None):
        """One aggregation round of the participants: ``(bins, counts, timings, retrained)``.

        With dropout tolerance between deployed clients ([SecAgg]), the participants first agree
        fresh round keys and exchange sealed shares of them (relayed by the server), and a round
        in which some drop is decoded from the survivors' messages and unmask shares, as long as
        ``dropout_threshold`` of them answer; the dropped clients leave the participants.
        """
        m = self.model
        participants = np.asarray(self.participants, dtype=np.int64)
        order = [int(l) for l in participants]
        no_ids = np.empty(0, dtype=np.int64)
        tolerant = m.secure and m.dropout_threshold is not None and self.deployed
        shares = {l: np.empty((0, 0), dtype=np.uint8) for l in order}
        round_keys = None
        if tolerant:
            replies = channel.exchange({l: RoundKeyRequest(r) for l in order}, round_number=r)
            keys = np.stack([expect(replies[l], RoundKey, "server").key for l in order])
            round_keys = {l: bytes(key) for l, key in zip(order, keys)}
            sealed = channel.exchange({l: KeySharesRequest(r, participants, keys)
                                       for l in order}, round_number=r)
            boxes = [expect(sealed[u], SealedShares, "server").boxes for u in order]
            for j, v in enumerate(order):  # client i's boxes: the others in increasing order
                if len(order) > 1:
                    shares[v] = np.stack([boxes[i][j - (j > i)] for i in range(len(order))
                                          if i != j])
        requests = {l: MUFCRound(r, participants, ids if l == client_id else no_ids, shares[l])
                    for l in order}
        dropped, unmask = [], None
        if tolerant:
            replies, failed = channel.exchange_tolerant(
                requests, r, at_least=m.dropout_threshold, what="dropout_threshold")
            dropped = sorted(failed)
            if dropped:
                survivors = [l for l in order if l not in failed]
                asked = channel.exchange({l: UnmaskRequest(r, np.asarray(dropped))
                                          for l in survivors}, round_number=r)
                unmask = {l: dict(zip(dropped, (bytes(row) for row in expect(
                    asked[l], UnmaskShares, "server").shares))) for l in survivors}
        else:
            replies = channel.exchange(requests, round_number=r)
        vectors = {}
        for l, reply in replies.items():
            if m.secure:  # bare field elements: their masks bind them (secagg.SCMAServer)
                vectors[l] = expect(reply, SCMAVector, "server").message
            else:
                reply = expect(reply, PlainVector, "server")
                vectors[l] = (reply.bins, reply.counts)
        timings = {"client_unlearn": max(r_.seconds_unlearn for r_ in replies.values()),
                   "client_encode": max(r_.seconds_encode for r_ in replies.values())}
        t0 = time.perf_counter()
        if dropped:
            bins, counts = m._aggregator.combine(vectors, r, dropped=dropped,
                                                 unmask_shares=unmask, public_keys=round_keys)
            m._active = [l for l in m._active if l not in set(dropped)]
            for l in dropped:
                self.sizes.pop(l, None)
            self.dropped += dropped
        else:
            bins, counts = m._aggregator.combine(vectors, r)
        timings["server_decode"] = time.perf_counter() - t0
        if m.secure and not tolerant:  # the next round's masks, offline (between requests)
            ready = channel.exchange({int(l): MUFCPrepare(r + 1, participants)
                                      for l in participants}, round_number=r)
            timings["masks_offline"] = sum(expect(p, MUFCPrepared, "server").seconds
                                           for p in ready.values())
        retrained = None if client_id not in replies else \
            bool(replies[client_id].retrained == 1)
        return bins, counts, timings, retrained
