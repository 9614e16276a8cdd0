"""Estimators and the plain functions behind them."""
from .kmeans import KMeans, kmeans_plusplus
from .unlearning import RemovalResult, UnlearnableKMeans

__all__ = ["KMeans", "kmeans_plusplus", "RemovalResult", "UnlearnableKMeans"]
