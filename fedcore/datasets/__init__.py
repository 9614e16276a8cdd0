"""Dataset generators and loaders."""
from .balls import S_SET_LEVELS, make_s_sets, make_stochastic_ball
from .bundled import CelltypeData, load_celltype, load_s_sets
from .fair import FairDataset, load_cps1988, load_wage, make_fair_blobs
from .synthetic import MUFC_SHAPES, load_gaussian, load_mufc_standin, make_gaussian_mixture

__all__ = ["CelltypeData", "FairDataset", "MUFC_SHAPES", "S_SET_LEVELS", "load_celltype",
           "load_cps1988", "load_gaussian", "load_mufc_standin", "load_s_sets", "load_wage",
           "make_fair_blobs", "make_gaussian_mixture", "make_s_sets", "make_stochastic_ball"]
