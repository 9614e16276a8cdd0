"""Published data sets shipped with fedcore (files under ``fedcore/datasets/data/``).

``load_s_sets``
    The S-sets S1..S4 ([SSets]) of [FeCA] Table 1: 5000 points in 2-D, 15 labelled clusters,
    overlap growing from S1 to S4.
``load_celltype``
    Celltype ([Celltype]) as used in [MUFC] Table 1: 12009 x 10 in [0, 1], 4 cell types, split among
    100 clients by the [MUFC] authors' non-iid partition, with their optimal k-means objective.

Every call reads the files again, so the arrays returned are the caller's own: modifying them
never changes what later calls return. Provenance, citations and licences of the files are in
``fedcore/datasets/data/README.md``.
"""
from __future__ import annotations

import gzip
import io
from importlib import resources
from typing import NamedTuple

import numpy as np

from .balls import check_s_level

__all__ = ["CelltypeData", "load_celltype", "load_s_sets"]

S_SETS_N_SAMPLES = 5000
S_SETS_N_CLUSTERS = 15


def _data_bytes(*parts):
    """The bytes of the bundled file ``data/<parts...>`` of this package."""
    return resources.files(__package__).joinpath("data", *parts).read_bytes()


def _read_gz_text(*parts, dtype):
    with gzip.GzipFile(fileobj=io.BytesIO(_data_bytes(*parts))) as f:
        return np.loadtxt(f, dtype=dtype, ndmin=1)


def load_s_sets(level: int | str = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The published S-sets S1, S2, S3 or S4 with their ground-truth partition.

    The S-sets [SSets] of P. Franti and O. Virmajoki ("Iterative shrinking method for clustering
    problems", Pattern Recognition 39(5), 2006), the first benchmark of [FeCA] Table 1: 5000
    points in 2-D with integer coordinates in about ``[0, 10^6]``, 15 Gaussian-like clusters of
    300 to 350 points, overlapping more and more from S1 to S4. Files as redistributed in
    M. Gagolewski's benchmark suite clustering-data-v1 (SoftwareX 20, 2022), labels from the
    S-sets' authors. For an S-sets-like generator with known generating means, see
    :func:`fedcore.datasets.make_s_sets`.

    Parameters
    ----------
    level : int in {1, 2, 3, 4} or str in {"S1", "S2", "S3", "S4"} (any case), default=1

    Returns
    -------
    X : ndarray of shape (5000, 2), float64, the points in the published row order and units
    y : ndarray of shape (5000,), int64 in 0..14, the published label minus one (the files number
        clusters 1..15), so that ``centers[y]`` is each point's labelled center
    centers : ndarray of shape (15, 2), float64, the mean of each labelled cluster in label order
        (the published sets carry no other centers); on this scale [FeCA]'s "l2-distance
        x 10^4" is ``fedcore.metrics.center_distance(found, centers) / 1e4``

    Raises
    ------
    ValueError
        ``level`` is not one of 1, 2, 3, 4, "S1".."S4".
    TypeError
        ``level`` is neither an int nor a str.

    Examples
    --------
    >>> X, y, centers = load_s_sets("S1")
    >>> X.shape, centers.shape, int(y.min()), int(y.max()), int(np.bincount(y).min())
    ((5000, 2), (15, 2), 0, 14, 300)
    """
    level = check_s_level(level)
    X = _read_gz_text("sipu", f"s{level}.data.gz", dtype=np.float64)
    y = _read_gz_text("sipu", f"s{level}.labels0.gz", dtype=np.int64) - 1
    if X.shape != (S_SETS_N_SAMPLES, 2) or y.shape != (S_SETS_N_SAMPLES,) or \
            y.min() != 0 or y.max() != S_SETS_N_CLUSTERS - 1:
        raise RuntimeError(f"The bundled S{level} files are damaged: X {X.shape}, y {y.shape}")
    counts = np.bincount(y, minlength=S_SETS_N_CLUSTERS)
    sums = np.zeros((S_SETS_N_CLUSTERS, 2))
    np.add.at(sums, y, X)
    centers = sums / counts[:, None]
    return np.ascontiguousarray(X), y, centers


class CelltypeData(NamedTuple):
    """Celltype ([Celltype]) as published with [MUFC]: points, cell types, clients and the optimal
    objective.

    Attributes
    ----------
    X : ndarray of shape (12009, 10), float64 in [0, 1]
    labels : ndarray of shape (12009,), int64 in 0..3, the cell type of each row
    client : ndarray of shape (12009,), int64 in 0..99, the client holding each row: [MUFC]'s own
        non-iid split (60 to 1134 rows a client; 86 clients hold all 4 cell types, 14 hold 3).
        Rows are grouped by client in increasing client order
    optimal_inertia : float, the [MUFC] authors' precomputed optimal k-means objective on ``X``
        with 4 clusters (phi_c*, 188.0809...), the denominator of [MUFC] Table 1's loss ratio
    n_clusters : int, 4
    """

    X: np.ndarray
    labels: np.ndarray
    client: np.ndarray
    optimal_inertia: float
    n_clusters: int


def load_celltype() -> CelltypeData:
    """Celltype ([Celltype]) with the [MUFC] authors' client split, as used in [MUFC] Table 1.

    The processed Celltype file published with the reference code of [MUFC] (C. Pan, J. Sima,
    S. Prakash, V. Rana, O. Milenkovic, "Machine Unlearning of Federated Clusters", ICLR 2023),
    whose data come from the DC-k-means benchmark of [DCKM] (A. Ginart, M. Guan, G. Valiant, J. Zou,
    "Making AI Forget You: Data Deletion in Machine Learning", NeurIPS 2019). On this split
    [MUFC] Table 1 reports loss ratios (federated objective with induced global clusters,
    :func:`fedcore.metrics.federated_inertia`, over ``optimal_inertia``) of 1.14 +- 0.03 for
    MUFC, 1.72 +- 0.24 for K-FED and 1.46 +- 0.01 for DC-KM.

    Build the federation with
    ``HorizontalFederation.from_labels(data.X, data.client, labels=data.labels)``: client ``l``
    then holds the rows with ``client == l``, point ids are row numbers.

    Returns
    -------
    CelltypeData
        A named tuple ``(X, labels, client, optimal_inertia, n_clusters)``; the arrays are fresh
        copies at every call.

    Examples
    --------
    >>> data = load_celltype()
    >>> data.X.shape, data.n_clusters, int(data.client.max()) + 1, round(data.optimal_inertia, 4)
    ((12009, 10), 4, 100, 188.0809)
    """
    with np.load(io.BytesIO(_data_bytes("mufc", "celltype.npz")), allow_pickle=False) as f:
        X = np.ascontiguousarray(f["X"], dtype=np.float64)
        labels = np.asarray(f["label"], dtype=np.int64)
        client = np.asarray(f["client"], dtype=np.int64)
        optimal_inertia = float(f["optimal_inertia"])
        n_clusters = int(f["n_clusters"])
    if X.ndim != 2 or labels.shape != (X.shape[0],) or client.shape != (X.shape[0],):
        raise RuntimeError(f"The bundled Celltype file is damaged: X {X.shape}, labels "
                           f"{labels.shape}, client {client.shape}")
    return CelltypeData(X, labels, client, optimal_inertia, n_clusters)
