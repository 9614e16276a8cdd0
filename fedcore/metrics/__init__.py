"""Clustering metrics: objectives, fairness, and agreement with ground truth.

One module per concern; everything public is re-exported here (``fedcore.metrics.inertia``...).
"""
from ._kmeans import *  # noqa: F401,F403
from ._kmeans import __all__ as _kmeans_all
from .external import *  # noqa: F401,F403
from .fairness import *  # noqa: F401,F403

__all__ = list(_kmeans_all) + ["center_distance", "purity", "nmi"] + list(fairness.__all__)
