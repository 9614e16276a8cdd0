"""fedcore: federated clustering with exact unlearning, secure aggregation and coresets."""
from . import datasets
from .algorithms import KMeans, RemovalResult, UnlearnableKMeans, kmeans_plusplus
from .federation import CommLedger

__version__ = "0.1.0"

__all__ = ["CommLedger", "KMeans", "RemovalResult", "UnlearnableKMeans", "datasets",
           "kmeans_plusplus", "__version__"]
