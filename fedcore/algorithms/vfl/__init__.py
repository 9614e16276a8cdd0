"""[VFLC]: coresets over vertically partitioned data, with ridge, lasso, elastic net and DistDim
downstream."""
from .coreset import (VerticalCoreset, dis_sample, uniform_coreset, vkmc_coreset,
                      vkmc_local_scores, vrlr_coreset, vrlr_local_scores)
from .coreset_result import Coreset, gather, robust_coreset_error
from .distdim import DistDim, distdim
from .ridge import VerticalRidge, elastic_net_central, ridge_central, ridge_saga

__all__ = ["Coreset", "DistDim", "VerticalCoreset", "VerticalRidge", "dis_sample", "distdim",
           "elastic_net_central", "gather", "ridge_central", "ridge_saga", "robust_coreset_error",
           "uniform_coreset", "vkmc_coreset", "vkmc_local_scores", "vrlr_coreset",
           "vrlr_local_scores"]
