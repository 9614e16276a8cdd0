"""Uniform quantization of client centroids onto a grid in the unit cube (MUFC Appendix H)."""
from __future__ import annotations

import sys

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import check_array, check_scalar

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["Quantizer", "client_vector"]


class Quantizer:
    """Map points to grid bins of step ``gamma`` in the unit cube, and bins back to points.

    Data are first mapped into [0, 1]^d by ``u = (x - low) / scale`` with one common ``scale``
    (so the server's Euclidean geometry is the clients' up to a factor). A point goes to the nearest
    grid point ``gamma * c - phase`` per coordinate, ``c = floor((u + phase) / gamma + 1/2)``
    (Appendix H's ``argmin_j |y - gamma j|``; ``phase`` in [0, gamma)^d is the optional random
    shift of its footnote). Bin coordinates are integers in ``[0, n_bins)``.

    Parameters
    ----------
    low : ndarray of shape (d,)
    scale : float > 0
    gamma : float in (0, 1]
    phase : ndarray of shape (d,) in [0, gamma), or None (no shift)
    """

    def __init__(self, low: ArrayLike, scale: float, gamma: float,
                 phase: ArrayLike | None = None) -> None:
        self.low = np.asarray(low, dtype=np.float64)
        self.scale = check_scalar(scale, "scale", min_value=0.0, include_min=False)
        self.gamma = check_scalar(gamma, "gamma", min_value=0.0, max_value=1.0, include_min=False)
        d = self.low.shape[0]
        self.phase = np.zeros(d) if phase is None else np.asarray(phase, dtype=np.float64)
        self.n_bins = int(np.floor(1.0 / self.gamma + 1.5)) + 1

    @classmethod
    def from_bounds(cls, low: ArrayLike, high: ArrayLike, gamma: float,
                    phase: ArrayLike | None = None) -> Self:
        low = check_array(np.atleast_2d(low), "bounds[0]").ravel()
        high = check_array(np.atleast_2d(high), "bounds[1]").ravel()
        if low.shape != high.shape or (high < low).any():
            raise ValueError(f"Argument 'bounds' must be (low, high) with low <= high per feature, "
                             f"got low={low.tolist()}, high={high.tolist()}")
        scale = float((high - low).max())
        return cls(low, scale if scale > 0 else 1.0, gamma, phase)

    def bins(self, points: ArrayLike) -> np.ndarray:
        """Integer bin coordinates, shape (m, d), of points in the original space.

        Raises ``ValueError`` for points outside the bounds (their bin would not exist).
        """
        u = (np.asarray(points, dtype=np.float64) - self.low) / self.scale
        c = np.floor((u + self.phase) / self.gamma + 0.5).astype(np.int64)
        bad = (c < 0) | (c >= self.n_bins)
        if bad.any():
            i = np.argwhere(bad)[0]
            raise ValueError(f"Point {int(i[0])} lies outside the quantization bounds "
                             f"(feature {int(i[1])}, value {points[tuple(i)]!r}); pass wider "
                             "'bounds'")
        return c

    def centers(self, coords: ArrayLike) -> np.ndarray:
        """Representative point (grid point) of each bin, in the original space."""
        return self.low + self.scale * (np.asarray(coords, dtype=np.float64) * self.gamma
                                        - self.phase)

    def sample(self, coords: ArrayLike, counts: ArrayLike,
               rng: np.random.Generator) -> np.ndarray:
        """``counts[j]`` points uniform in the cell of bin ``j`` (MUFC Alg. 1 line 6), stacked."""
        coords = np.asarray(coords, dtype=np.float64)
        reps = np.repeat(np.arange(coords.shape[0]), np.asarray(counts, dtype=np.int64))
        offset = rng.random((reps.shape[0], coords.shape[1])) - 0.5
        return self.low + self.scale * ((coords[reps] + offset) * self.gamma - self.phase)


def client_vector(quantizer: Quantizer, client: object) -> tuple[np.ndarray, np.ndarray]:
    """A client's sparse vector q^(l) ([MUFC] Alg. 1 line 4): (bins, counts) of its quantized
    centers (its seeds, or its Lloyd centers when it refines), counts = cluster sizes, from a
    fitted :class:`~fedcore.algorithms.mufc.unlearning.UnlearnableKMeans` ``client``."""
    bins = quantizer.bins(client.cluster_centers_)
    uniq, inverse = np.unique(bins, axis=0, return_inverse=True)
    counts = np.bincount(inverse.ravel(), weights=client.cluster_sizes_,
                         minlength=uniq.shape[0]).astype(np.int64)
    keep = counts > 0
    return uniq[keep], counts[keep]
