"""Uniform quantization of client centroids onto a grid in the unit cube (MUFC Appendix H)."""
from __future__ import annotations

import sys

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import check_array, check_scalar
from .rows import match_rows

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["Quantizer", "UniformPoints"]


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


class UniformPoints:
    """The server's uniform data (MUFC Alg. 1 line 6, ``server_data="uniform"``), kept from round
    to round so that a re-fit can be coupled with the previous one.

    ``keys`` int64 (m, d + 1): each point's bin coordinates and its slot in the bin (unique);
    ``points`` float64 (m, d). :meth:`draw` samples ``counts[j]`` points uniformly in the cell of
    bin ``j``; :meth:`update` turns the points of the previous aggregate into points of a new one:
    a bin whose count fell keeps a uniformly random subset of its points (drawn with fresh
    uniforms, independently of the points and of anything computed from them), a bin whose count
    rose keeps its points and gets new uniform ones, a bin that emptied loses them. The points of
    a bin are i.i.d. uniform in its cell and exchangeable, so the updated points have exactly the
    law of a fresh :meth:`draw` on the new counts, and which points were kept is independent of
    any k-means++ run on the old points: the coupled re-fit of
    :class:`~fedcore.algorithms.mufc.coupled.CoupledKMeans` on them is then distributed exactly
    as a fresh fit.
    """

    def __init__(self, keys: np.ndarray, points: np.ndarray) -> None:
        self.keys = keys
        self.points = points

    @classmethod
    def draw(cls, quantizer: Quantizer, bins: np.ndarray, counts: np.ndarray,
             rng: np.random.Generator) -> UniformPoints:
        """``counts[j]`` fresh points in bin ``j`` (slots ``0 .. counts[j] - 1``), stacked."""
        counts = np.asarray(counts, dtype=np.int64)
        points = quantizer.sample(bins, counts, rng)
        return cls(_keys(bins, counts, np.zeros(counts.shape[0], dtype=np.int64)), points)

    def update(self, quantizer: Quantizer, bins: np.ndarray, counts: np.ndarray,
               rng: np.random.Generator) -> UniformPoints:
        """The points of the aggregate ``(bins, counts)`` coupled with these (see the class)."""
        bins = np.asarray(bins, dtype=np.int64)
        counts = np.asarray(counts, dtype=np.int64)
        d = bins.shape[1]
        bin_of = match_rows(bins, self.keys[:, :d])   # each old point's new bin, -1: emptied
        had = np.bincount(bin_of[bin_of >= 0], minlength=bins.shape[0])
        keep = bin_of >= 0
        fell = np.flatnonzero(counts < had)
        if fell.shape[0]:
            # In each bin whose count fell, keep the counts[j] points of lowest uniform priority.
            rows = np.flatnonzero(np.isin(bin_of, fell))
            order = rows[np.lexsort((rng.random(rows.shape[0]), bin_of[rows]))]
            group = bin_of[order]
            rank = np.arange(order.shape[0]) - np.searchsorted(group, group)
            keep[order[rank >= counts[group]]] = False
        add = np.maximum(counts - had, 0)
        grown = np.flatnonzero(add)
        next_slot = np.zeros(bins.shape[0], dtype=np.int64)
        np.maximum.at(next_slot, bin_of[keep], self.keys[keep, d] + 1)
        new = quantizer.sample(bins[grown], add[grown], rng)
        return UniformPoints(np.concatenate([self.keys[keep],
                                             _keys(bins[grown], add[grown], next_slot[grown])]),
                             np.concatenate([self.points[keep], new]))


def _keys(bins, counts, first_slot):
    """Keys of ``counts[j]`` points in bin ``j`` with slots ``first_slot[j], ...``."""
    reps = np.repeat(np.arange(bins.shape[0]), counts)
    start = np.repeat(np.cumsum(counts) - counts, counts)
    slots = first_slot[reps] + np.arange(reps.shape[0]) - start
    return np.column_stack([np.asarray(bins, dtype=np.int64)[reps], slots]).astype(np.int64)
