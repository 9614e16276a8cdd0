"""Clustering metrics."""
import numpy as np

from .._validation import check_array, check_sample_weight
from ..kernels.distances import assign_nearest

__all__ = ["inertia"]


def inertia(X, centers, sample_weight=None):
    """k-means objective (MUFC eq. (1)): weighted sum of squared distances to the nearest center.

    Examples
    --------
    >>> inertia([[0.0], [2.0]], [[0.0], [3.0]])
    1.0
    """
    X = check_array(X, "X")
    centers = check_array(centers, "centers", dtype=("float64",))
    if centers.shape[1] != X.shape[1]:
        raise ValueError(f"Argument 'centers' must have {X.shape[1]} features (as X), "
                         f"got {centers.shape[1]}")
    weights = check_sample_weight(sample_weight, X.shape[0])
    labels = np.empty(X.shape[0], dtype=np.int64)
    distances = np.empty(X.shape[0])
    assign_nearest(X, np.ascontiguousarray(centers.T), labels, distances)
    return float(weights @ distances)
