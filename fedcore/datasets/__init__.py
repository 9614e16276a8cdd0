"""Dataset generators and loaders."""
from .synthetic import MUFC_SHAPES, load_gaussian, load_mufc_standin, make_gaussian_mixture

__all__ = ["MUFC_SHAPES", "load_gaussian", "load_mufc_standin", "make_gaussian_mixture"]
