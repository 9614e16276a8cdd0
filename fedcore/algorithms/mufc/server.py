"""The server role of MUFC for engines that run the clients elsewhere (Flower).

:class:`MUFCServer` is the server half of [MUFC] Alg. 1 and 4 as a public API: the set-up of a
fit (quantization grid, SCMA parameters, each client's random seed), the aggregation of the
clients' messages of a round (with SCMA's dropout recovery), the server's clustering, and the
bookkeeping of the participants. It runs exactly the code of the in-process
:class:`~fedcore.MUFC` estimator, whose fitted attributes it fills, so an engine that drives a
``MUFCServer`` and clients that follow :func:`client_setup` reproduce ``MUFC.fit`` / ``remove`` /
``remove_clients`` bit for bit.
"""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey
from numpy.typing import ArrayLike

from ...federation.protocol import seed_fields
from .estimators import MUFC, MUFCRemovalReport

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
        rngs = self.model._start(sizes, n_features, boxes, with_clients=False)
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
