"""Matching rows of integer arrays (MUFC's bin coordinates) between two sets."""
from __future__ import annotations

import numpy as np

__all__ = ["match_rows"]

_HASH = np.random.default_rng(20261121).integers(1, 2**63, size=64, dtype=np.uint64) | np.uint64(1)


def _row_hashes(keys):
    """uint64 hash of each integer row (wrapping arithmetic); collisions are checked by callers."""
    mult = np.resize(_HASH, keys.shape[1]) * np.arange(1, keys.shape[1] + 1, dtype=np.uint64)
    return (keys.astype(np.uint64) * mult).sum(axis=1, dtype=np.uint64)


def match_rows(old_keys: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """For each row of ``keys`` (int64 (n, q)), its row in ``old_keys`` (m, q) or -1; rows of
    ``old_keys`` are unique. Hashing with every match verified; ``np.unique`` on a collision."""
    if old_keys.shape[0] == 0:
        return np.full(keys.shape[0], -1)
    h_old, h_new = _row_hashes(old_keys), _row_hashes(keys)
    order = np.argsort(h_old)
    h_sorted = h_old[order]
    pos = np.minimum(np.searchsorted(h_sorted, h_new), old_keys.shape[0] - 1)
    rows = np.where(h_sorted[pos] == h_new, order[pos], -1)
    hit = rows >= 0
    if np.array_equal(old_keys[rows[hit]], keys[hit]) and not (h_sorted[1:] == h_sorted[:-1]).any():
        return rows
    _, inverse = np.unique(np.concatenate([old_keys, keys]), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    first = np.full(inverse.max() + 1, -1)
    first[inverse[:old_keys.shape[0]]] = np.arange(old_keys.shape[0])
    return first[inverse[old_keys.shape[0]:]]


def add_sparse(bins, counts, change_bins, change):
    """``sum_sparse`` of the sorted sparse vector (bins, counts) and a change, in place of it
    when every changed bin is already occupied (the usual case of an unlearning round): O(m d)
    instead of a sort. None otherwise (the caller sums in full)."""
    rows = match_rows(bins, change_bins)
    if (rows < 0).any():
        return None
    counts = counts.copy()
    np.add.at(counts, rows, change)
    keep = counts != 0
    return bins[keep], counts[keep]
