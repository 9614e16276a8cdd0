"""Centralised k-means: k-means++ seeding (vanilla and greedy) and weighted Lloyd."""
from .lloyd import KMeans, assign
from .seeding import kmeans_plusplus

__all__ = ["KMeans", "assign", "kmeans_plusplus"]
