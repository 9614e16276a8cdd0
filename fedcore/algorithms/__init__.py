"""Estimators and the plain functions behind them, one module per method family."""
from .cdkm import BCDKM, CDKM
from .coreset import (Coreset, VerticalCoreset, uniform_coreset, vkmc_coreset, vrlr_coreset)
from .dckmeans import DCKMeans
from .distdim import DistDim
from .fair import FairKMeans, FairLP
from .feca import FeCA
from .ffcm import FFCM
from .kfed import KFed
from .kmeans import KMeans, kmeans_plusplus
from .match_averaging import MatchAveraging
from .mufc import MUFC, MUFCRemovalReport, SimplifiedFC
from .ridge import VerticalRidge
from .unlearning import RemovalResult, UnlearnableKMeans

__all__ = ["BCDKM", "CDKM", "Coreset", "DCKMeans", "DistDim", "FFCM", "FairKMeans", "FairLP",
           "FeCA", "KFed", "KMeans", "MUFC", "MUFCRemovalReport", "MatchAveraging",
           "RemovalResult", "SimplifiedFC", "UnlearnableKMeans", "VerticalCoreset",
           "VerticalRidge", "kmeans_plusplus", "uniform_coreset", "vkmc_coreset", "vrlr_coreset"]
