"""The server role of MUFC ([MUFC] Alg. 1 and 4).

:class:`MUFCServer` runs a fit and its removal requests over a channel to
:class:`~fedcore.algorithms.mufc.roles.MUFCClient` roles (:meth:`MUFCServer.run`,
:meth:`MUFCServer.run_removal`, :meth:`MUFCServer.run_client_removal`; the messages are those of
:mod:`fedcore.algorithms.mufc.roles`): the in-process :class:`~fedcore.MUFC` estimator runs it
over an :class:`~fedcore.federation.protocol.InProcessChannel`. Its step methods (the set-up of a
fit: quantization grid, SCMA parameters, each client's random seed; the aggregation of a round's
messages, with SCMA's dropout recovery; the server's clustering; the participants) are the same
code for engines that drive the rounds themselves (:mod:`fedcore.integrations.flower.mufc`), so
they reproduce ``MUFC.fit`` / ``remove`` / ``remove_clients`` bit for bit.
"""
from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey
from numpy.typing import ArrayLike

from ...federation.ledger import SERVER, CommLedger
from ...federation.protocol import Channel, expect, seed_fields
from .estimators import MUFC, MUFCRemovalReport
from .roles import (MUFCHello, MUFCJoin, MUFCPrepare, MUFCPrepared, MUFCReady, MUFCRound,
                    MUFCSetup, PlainVector, SCMAVector, SimulatedKeys)

__all__ = ["MUFCServer"]


class MUFCServer:
    """Server half of a MUFC fit whose clients run elsewhere.

    Parameters
    ----------
    estimator : MUFC
        Its parameters drive the server; it receives the fitted attributes
        (``cluster_centers_``, ``aggregate_``, ``comm_``, ``n_rounds_``) and holds no clients.
    """

    def __init__(self, estimator: MUFC) -> None:
        estimator._check_params()
        self.model = estimator

    # ------------------------------------------------------------------ set-up
    def setup(self, sizes: ArrayLike, n_features: int,
              boxes: Sequence[tuple[ArrayLike, ArrayLike]] | None) -> list[dict[str, Any]]:
        """Set up a fit for clients of ``sizes`` points with ``n_features`` features.

        ``boxes``: each client's per-feature ``(min, max)`` when the federation agrees on the
        bounds, None when the estimator was given public ``bounds``. Returns one set-up per
        client (:meth:`client_setup`), in client order.
        """
        rngs = self.model._start(sizes, n_features, boxes)
        if boxes is not None:  # each client sent its per-feature min and max (2 d floats)
            for l in range(len(boxes)):
                self.model.comm_.record(0, sender=l, receiver=SERVER, kind="bounds",
                                        n_elements=2 * int(n_features))
        return [self.client_setup(l, rng) for l, rng in enumerate(rngs)]

    def client_setup(self, client_id: int, rng: np.random.Generator) -> dict[str, Any]:
        """What client ``client_id`` needs to seed and encode (sent once, before round 0):
        ``client_clusters``, ``client_refine``, the grid (``low``, ``scale``, ``gamma``,
        ``phase`` or None), the seed of its random generator (``entropy``, a decimal string,
        and ``spawn_key``: :func:`~fedcore.federation.protocol.seed_fields`) and SCMA's public
        parameters (``scma``, None for a plaintext sum)."""
        m, q = self.model, self.model._quantizer
        entropy, spawn_key = seed_fields(rng)
        scma = m._aggregator.setup.public_config() if m.secure else None
        if not m._QUANTIZES:
            return {"client_id": int(client_id), "client_clusters": int(m._kp),
                    "client_refine": m._client_refine(), "low": None, "scale": 1.0,
                    "gamma": 1.0, "phase": None, "entropy": entropy,
                    "spawn_key": tuple(int(k) for k in spawn_key), "scma": scma}
        return {"client_id": int(client_id), "client_clusters": int(m._kp),
                "client_refine": m._client_refine(), "low": q.low,
                "scale": float(q.scale), "gamma": float(q.gamma), "phase": q.phase,
                "entropy": entropy, "spawn_key": tuple(int(k) for k in spawn_key),
                "scma": scma}

    # ------------------------------------------------------------------ rounds
    @property
    def participants(self) -> list[int]:
        """Clients taking part in the next round, increasing."""
        return list(self.model._active)

    def next_round(self) -> int:
        """Open the round of a removal request; returns its number."""
        self.model.n_rounds_ += 1
        return self.model.n_rounds_

    def remove_clients(self, client_ids: ArrayLike, sizes: Mapping[int, int]) -> list[int]:
        """Take clients out of the participants ([MUFC] Alg. 4, cross-device) after checking
        that the rest hold enough points (``sizes``: {participant: points}); returns the ids."""
        ids, remaining = self.model._check_client_removal(client_ids, sizes)
        self.model._active = remaining
        return ids

    def combine(self, messages: Mapping[int, ArrayLike | tuple[ArrayLike, ArrayLike]],
                round: int, *, dropped: Collection[int] = (),
                unmask_shares: Mapping[int, Mapping[int, bytes]] | None = None,
                public_keys: Mapping[int, X25519PublicKey | bytes] | None = None,
                ) -> tuple[np.ndarray, np.ndarray]:
        """The decoded sum ``(bins, counts)`` of the round's messages ({client: message}:
        SCMA messages, or ``(bins, counts)`` pairs for a plaintext sum), recorded in ``comm_``.

        ``dropped``: participants whose message did not arrive; with SCMA's dropout tolerance
        their masks are rebuilt from the survivors' ``unmask_shares`` and the round
        ``public_keys``, and they leave the participants.
        """
        m = self.model
        if dropped:
            bins, counts = m._aggregator.combine(messages, round, m.comm_, dropped=dropped,
                                                 unmask_shares=unmask_shares,
                                                 public_keys=public_keys)
            m._active = [l for l in m._active if l not in set(dropped)]
            return bins, counts
        return m._aggregator.combine(messages, round, m.comm_)

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
        agree = m.bounds is None and m._QUANTIZES  # SimplifiedFC needs no grid
        replies = channel.broadcast(MUFCHello(agree), round_number=0)
        joins = [expect(replies[l], MUFCJoin, "server") for l in range(channel.n_clients)]
        widths = sorted({j.n_features for j in joins})
        if len(widths) != 1:
            raise ValueError(f"The clients' data have different numbers of features: {widths}")
        sizes = np.array([j.n_samples for j in joins])
        boxes = [(j.low, j.high) for j in joins] if agree else None
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
        """:meth:`client_setup` as the message to client ``client_id``."""
        s = self.client_setup(client_id, rng)
        none = np.empty(0)
        return MUFCSetup(s["client_id"], s["client_clusters"], s["client_refine"], s["entropy"],
                         np.asarray(s["spawn_key"], dtype=np.int64), s["low"] is not None,
                         none if s["low"] is None else s["low"], s["scale"], s["gamma"],
                         none if s["phase"] is None else s["phase"], s["scma"] is not None)

    def run_removal(self, channel: Channel, client_id: int, ids: np.ndarray) -> MUFCRemovalReport:
        """One removal request over ``channel`` ([MUFC] Alg. 4, cross-silo): client
        ``client_id`` removes ``ids`` (checked by the caller) by [MUFC] Alg. 3, every
        participant re-sends with fresh masks, the server decodes and re-clusters."""
        m = self.model
        r = self.next_round()
        bins, counts, timings, retrained = self._round(channel, r, client_id, ids)
        recluster = m.server_update != "lazy" or retrained
        return self.publish(bins, counts, recluster, timings, len(ids), retrained)

    def run_client_removal(self, channel: Channel, client_ids: list[int],
                           n_removed: int) -> MUFCRemovalReport:
        """Take the checked ``client_ids`` (holding ``n_removed`` points) out of the
        participants ([MUFC] Alg. 4, cross-device); the others re-send, the server decodes and
        re-clusters."""
        m = self.model
        m._active = [l for l in m._active if l not in set(client_ids)]
        r = self.next_round()
        bins, counts, timings, _ = self._round(channel, r)
        del timings["client_unlearn"]  # nobody unlearns: the clients' vectors leave the sum
        return self.publish(bins, counts, True, timings, n_removed, False)

    def _round(self, channel, r, client_id=None, ids=None):
        """One aggregation round of the participants: ``(bins, counts, timings, retrained)``."""
        m = self.model
        participants = np.asarray(self.participants, dtype=np.int64)
        no_ids = np.empty(0, dtype=np.int64)
        requests = {int(l): MUFCRound(r, participants, ids if l == client_id else no_ids)
                    for l in participants}
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
        bins, counts = m._aggregator.combine(vectors, r, CommLedger())  # counted by the channel
        timings["server_decode"] = time.perf_counter() - t0
        if m.secure:  # the next round's masks, offline (between requests)
            ready = channel.exchange({int(l): MUFCPrepare(r + 1, participants)
                                      for l in participants}, round_number=r)
            timings["masks_offline"] = sum(expect(p, MUFCPrepared, "server").seconds
                                           for p in ready.values())
        retrained = None if client_id is None else bool(replies[client_id].retrained == 1)
        return bins, counts, timings, retrained
