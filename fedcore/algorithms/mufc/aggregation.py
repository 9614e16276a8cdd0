"""Summing clients' sparse count vectors: in plaintext, or securely with SCMA (MUFC Alg. 2)."""
from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey
from numpy.typing import ArrayLike

from .rows import add_sparse

__all__ = ["PlainAggregator", "SCMAAggregator", "sum_sparse"]


def sum_sparse(vectors: Sequence[tuple[ArrayLike, ArrayLike]],
               ) -> tuple[np.ndarray, np.ndarray]:
    """Sum of sparse vectors given as (bins (m, d) int64, counts (m,) int64); sorted, no zeros."""
    bins = np.concatenate([b for b, _ in vectors])
    counts = np.concatenate([c for _, c in vectors])
    uniq, inverse = np.unique(bins, axis=0, return_inverse=True)
    total = np.bincount(inverse.ravel(), weights=counts, minlength=uniq.shape[0])
    total = np.rint(total).astype(np.int64)
    keep = total != 0
    return uniq[keep], total[keep]


class PlainAggregator:
    """Clients send their (bin, count) pairs in the clear; the server adds them (its half)."""

    def __init__(self, n_clients: int, client_clusters: int, n_bins: int, n_dims: int,
                 rng: np.random.Generator) -> None:
        self.n_dims = n_dims

    def combine(self, messages: Mapping[int, tuple[np.ndarray, np.ndarray]],
                round_number: int) -> tuple[np.ndarray, np.ndarray]:
        """Server side: ``messages`` {client: (bins, counts)} -> (bins, counts) of the sum (the
        channel that carried them counted them)."""
        return sum_sparse(list(messages.values()))


class SCMAAggregator:
    """Secure aggregation by SCMA (MUFC Alg. 2): the server sees masked syndromes only.

    One :class:`~fedcore.SCMASetup` for the federation: capacity ``client_clusters * n_clients``
    nonzero bins (every client sends at most K' bins), index space ``[0, n_bins)^d``. Each round
    (fit, then every removal request) every participant encodes its vector with fresh masks
    (the client roles, :mod:`fedcore.algorithms.mufc.roles`); this is the server's half. In one
    process ``setup`` also simulates the clients' keys (dealt to the roles).
    """

    def __init__(self, n_clients: int, client_clusters: int, n_bins: int, n_dims: int,
                 rng: np.random.Generator, *, dropout_threshold: int | None = None) -> None:
        from ...secagg import SCMASetup, SCMAServer
        self.setup = SCMASetup(n_clients, client_clusters * n_clients, n_dims=n_dims,
                               bins=n_bins, random_state=rng,
                               dropout_threshold=dropout_threshold)
        self.server = SCMAServer(self.setup.public())
        self._max_changes = 2 * client_clusters  # one client re-seeding changes <= 2 K' bins
        self._last = None  # (aggregate syndromes, bins, counts) of the previous round

    def _decode(self, total, round):
        """Decode the sum; after the first round, decode only its change when that is sparse.

        Both sums are what the server learns anyway, so decoding their difference reveals
        nothing more; it costs O(K' * message) instead of a full decode (Berlekamp-Massey on the
        first 2 * 2K' syndromes). A change too large to decode this way (e.g. whole clients
        leaving) falls back to the full decode.
        """
        from ...secagg import SCMADecodeError
        bins = counts = None
        if self._last is not None:
            previous, old_bins, old_counts = self._last
            try:
                change_bins, change = self.server.decode_change(
                    total, previous, max_changes=self._max_changes, round=round)
                change_bins = np.asarray(change_bins, np.int64).reshape(-1, old_bins.shape[1])
                summed = add_sparse(old_bins, old_counts, change_bins, change)
                bins, counts = summed if summed is not None else sum_sparse(
                    [(old_bins, old_counts), (change_bins, change)])
                if (counts < 0).any():
                    bins = None
            except SCMADecodeError:
                bins = None
        if bins is None:
            bins, counts = self.server.decode_sum(total, round=round)
            bins = np.asarray(bins, dtype=np.int64).reshape(-1, self.setup.n_dims)
        self._last = (total, bins, counts)
        return bins, counts

    def combine(self, messages: Mapping[int, ArrayLike], round: int, *,
                dropped: Collection[int] = (),
                unmask_shares: Mapping[int, Mapping[int, bytes]] | None = None,
                public_keys: Mapping[int, X25519PublicKey | bytes] | None = None,
                ) -> tuple[np.ndarray, np.ndarray]:
        """Server side: masked messages {client: uint64 message} -> (bins, counts) of the sum
        (the channel that carried them counted them).

        ``dropped``: participants whose message did not arrive (dropout tolerance): their masks
        are rebuilt from the survivors' ``unmask_shares`` ({survivor: {dropped: share}}) and the
        round ``public_keys``, and their vectors are not in the sum.
        """
        participants = sorted(set(messages) | set(dropped))
        total = self.server.aggregate(messages, round=round, participants=participants,
                                      dropped=sorted(dropped) or None,
                                      unmask_shares=unmask_shares, public_keys=public_keys)
        bins, counts = self._decode(total, round)
        return (np.asarray(bins, dtype=np.int64).reshape(-1, self.setup.n_dims),
                np.asarray(counts, dtype=np.int64))
