"""The default encoders of :class:`~fedcore.algorithms.feca.DeepFeCA` ([FeCA] Section 5): a small
CNN for 8x8 and 28x28 single-channel images, an MLP for any other width.

PyTorch is imported inside the functions (``import fedcore`` never needs it); the module-level
class :class:`L2Normalize` is built on first access, so it pickles by reference like any layer.

The encoder contract (any ``torch.nn.Module`` given as ``DeepFeCA(encoder=...)`` follows it too):
it maps a float32 tensor of shape ``(batch, n_features)`` (rows of the data, flat) to a float32
tensor of shape ``(batch, feature_dim)``, the features ``f_theta(x)`` of [FeCA] Alg. 6 that the
clients cluster (line 4) and train (line 8).
"""
from __future__ import annotations

from typing import Any

from .deep import require_torch

__all__ = ["FEATURE_DIM", "IMAGE_SIDES", "default_encoder", "mlp_encoder", "small_cnn"]

FEATURE_DIM = 64  # width of the default encoders' features
IMAGE_SIDES = {64: 8, 784: 28}  # rows of these widths are read as square single-channel images


def _l2_normalize_class():
    nn = require_torch().nn

    class L2Normalize(nn.Module):
        """Scales each row to unit l2 norm: features on the unit sphere, as DeepCluster-v2
        clusters them (Caron et al. 2020, the model [FeCA] Section 6.2 trains), so that k-means
        distances and the centroids' radii ([FeCA] Alg. 4) keep one scale from round to round."""

        def forward(self, x):
            return nn.functional.normalize(x, dim=1)

    L2Normalize.__module__ = __name__
    L2Normalize.__qualname__ = "L2Normalize"
    return L2Normalize


def _l2_normalize():
    # L2Normalize subclasses torch.nn.Module: built once, on first access (torch is optional),
    # then kept as a module attribute so that pickle finds the same class by name.
    if "L2Normalize" not in globals():
        globals()["L2Normalize"] = _l2_normalize_class()
    return globals()["L2Normalize"]


def __getattr__(name):
    if name == "L2Normalize":
        return _l2_normalize()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def small_cnn(side: int, feature_dim: int = FEATURE_DIM) -> Any:
    """A small CNN for ``side x side`` single-channel images given as flat rows.

    Parameters
    ----------
    side : {8, 28}
        8 (scikit-learn's digits): two 3x3 convolutions (16 and 32 channels), one 2x2 max-pool;
        28 (MNIST-like): two 3x3 convolutions (16 and 32 channels), each followed by a 2x2
        max-pool. Both end with a linear layer to ``feature_dim`` and :class:`L2Normalize`.
    feature_dim : int, default=64

    Returns
    -------
    torch.nn.Sequential
        Maps ``(batch, side * side)`` float32 to ``(batch, feature_dim)``; no normalization
        layer holds running statistics (federated batch statistics are not what [FeCA] Alg. 6
        averages), so a module's state is its parameters.
    """
    nn = require_torch().nn
    if side == 8:
        body = [nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.Conv2d(16, 32, 3, padding=1),
                nn.ReLU(), nn.MaxPool2d(2)]
        flat = 32 * 4 * 4
    elif side == 28:
        body = [nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2)]
        flat = 32 * 7 * 7
    else:
        raise ValueError(f"Argument 'side' must be 8 or 28, got {side!r}")
    return nn.Sequential(nn.Unflatten(1, (1, side, side)), *body, nn.Flatten(),
                         nn.Linear(flat, feature_dim), _l2_normalize()())


def mlp_encoder(n_features: int, feature_dim: int = FEATURE_DIM, hidden: int = 128) -> Any:
    """An MLP ``n_features -> hidden -> hidden -> feature_dim`` with ReLUs, then
    :class:`L2Normalize`; maps ``(batch, n_features)`` float32 to ``(batch, feature_dim)``."""
    nn = require_torch().nn
    return nn.Sequential(nn.Linear(n_features, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                         nn.ReLU(), nn.Linear(hidden, feature_dim), _l2_normalize()())


def default_encoder(n_features: int, seed: int | None = None) -> Any:
    """The encoder DeepFeCA uses when none is given: :func:`small_cnn` for rows of width 64 (8x8)
    or 784 (28x28), :func:`mlp_encoder` otherwise.

    Parameters
    ----------
    n_features : int, the width of the data rows
    seed : int or None
        Seed of PyTorch's default initialization of the layers, drawn inside a forked random
        state (the caller's global torch generator is left as it was); None leaves the global
        generator to draw it (and advance).

    Returns
    -------
    torch.nn.Module in evaluation mode, float32, on the CPU
    """
    torch = require_torch()
    side = IMAGE_SIDES.get(int(n_features))
    build = (lambda: small_cnn(side)) if side is not None else (lambda: mlp_encoder(n_features))
    if seed is None:
        return build().eval()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(int(seed))
        return build().eval()
