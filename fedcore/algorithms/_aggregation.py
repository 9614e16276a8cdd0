"""Summing clients' sparse count vectors: in plaintext, or securely with SCMA (MUFC Alg. 2)."""
import time

import numpy as np

from ..federation.ledger import SERVER

__all__ = ["PlainAggregator", "SCMAAggregator", "sum_sparse"]


def sum_sparse(vectors):
    """Sum of sparse vectors given as (bins (m, d) int64, counts (m,) int64); sorted, no zeros."""
    bins = np.concatenate([b for b, _ in vectors])
    counts = np.concatenate([c for _, c in vectors])
    uniq, inverse = np.unique(bins, axis=0, return_inverse=True)
    total = np.bincount(inverse.ravel(), weights=counts, minlength=uniq.shape[0])
    total = np.rint(total).astype(np.int64)
    keep = total != 0
    return uniq[keep], total[keep]


class PlainAggregator:
    """Clients send their (bin, count) pairs in the clear; the server adds them."""

    def __init__(self, n_clients, client_clusters, n_bins, n_dims, rng):
        self.n_dims = n_dims

    def aggregate(self, vectors, round, ledger):
        """``vectors``: {client: (bins, counts)}. Returns (bins, counts, timings)."""
        for l, (bins, counts) in vectors.items():
            ledger.record(round, sender=l, receiver=SERVER, kind="bins+counts",
                          n_elements=bins.size + counts.size)
        t0 = time.perf_counter()
        bins, counts = sum_sparse(list(vectors.values()))
        return bins, counts, {"client_encode": 0.0, "server_decode": time.perf_counter() - t0}
