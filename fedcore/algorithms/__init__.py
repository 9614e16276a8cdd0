"""Estimators and the plain functions behind them, one package per method family.

- :mod:`.kmeans`: centralised k-means++ seeding and weighted Lloyd, the core every method uses.
- :mod:`.mufc`: [MUFC] federated k-means with SCMA and exact unlearning.
- :mod:`.vfl`: [VFLC] vertical coresets, ridge regression and DistDim ([DistDim]).
- :mod:`.f3km`: [F3KM] coordinate-descent k-means and fair k-means.
- :mod:`.feca`: [FeCA] one-shot federated centroid aggregation, and DeepFeCA on it.
- :mod:`.baselines`: k-FED [KFED], DC-k-means [DCKM], Match Averaging [MAvg] and FFCM [FFCM].
- :mod:`.base` (the estimator contract) and :mod:`.clients` (the client side shared by the
  one-shot horizontal methods).
"""
from .baselines import FFCM, DCKMeans, KFed, MatchAveraging
from .f3km import BCDKM, CDKM, FairKMeans, FairLP
from .feca import DeepFeCA, FeCA
from .kmeans import KMeans, kmeans_plusplus
from .mufc import MUFC, MUFCRemovalReport, RemovalResult, SimplifiedFC, UnlearnableKMeans
from .vfl import (Coreset, DistDim, VerticalCoreset, VerticalRidge, uniform_coreset, vkmc_coreset,
                  vrlr_coreset)

__all__ = ["BCDKM", "CDKM", "Coreset", "DCKMeans", "DeepFeCA", "DistDim", "FFCM", "FairKMeans",
           "FairLP", "FeCA", "KFed", "KMeans", "MUFC", "MUFCRemovalReport", "MatchAveraging",
           "RemovalResult", "SimplifiedFC", "UnlearnableKMeans", "VerticalCoreset",
           "VerticalRidge", "kmeans_plusplus", "uniform_coreset", "vkmc_coreset", "vrlr_coreset"]
