"""Dataset generators and loaders."""
from .synthetic import load_gaussian, make_gaussian_mixture

__all__ = ["load_gaussian", "make_gaussian_mixture"]
