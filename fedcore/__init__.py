"""fedcore: federated clustering with exact unlearning, secure aggregation and coresets."""
from . import datasets, metrics
from .algorithms import KMeans, RemovalResult, UnlearnableKMeans, kmeans_plusplus
from .federation import CommLedger, HorizontalFederation, VerticalFederation, partition

__version__ = "0.1.0"

__all__ = ["CommLedger", "HorizontalFederation", "KMeans", "RemovalResult", "UnlearnableKMeans",
           "VerticalFederation", "datasets", "kmeans_plusplus", "metrics", "partition",
           "__version__"]
