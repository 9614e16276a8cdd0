"""Horizontal federations: clients hold disjoint sets of rows with stable global point ids."""
from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from .._validation import (check_array, check_categories, check_ids, check_int,
                           check_random_state, check_scalar)

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["HorizontalFederation", "partition"]


class HorizontalFederation:
    """Clients' data arrays, each row with a stable global point id.

    Build with :meth:`from_arrays` (ids ``0..n-1`` in client order), :meth:`from_labels` (one
    client per value of a client column; ids are the rows) or :func:`partition` (ids are the rows
    of the partitioned array). Clients are never empty.

    Attributes
    ----------
    n_clients, n_samples, n_features : int
    labels : ndarray of shape (n_samples,) or None,
        true labels indexed by point id (evaluation only)

    Examples
    --------
    >>> import numpy as np
    >>> fed = HorizontalFederation.from_arrays([np.zeros((2, 3)), np.ones((1, 3))])
    >>> fed.n_clients, fed.n_samples, fed.n_features
    (2, 3, 3)
    >>> fed.client(1)[1]
    array([2])
    """

    def __init__(self, arrays: Sequence[ArrayLike] | np.ndarray,
                 ids: Sequence[ArrayLike] | np.ndarray, labels: ArrayLike | None = None) -> None:
        arrays = _check_list(arrays, "arrays")
        ids = _check_list(ids, "ids")
        if len(arrays) == 0:
            raise ValueError("Argument 'arrays': a federation needs at least one client, got 0")
        if len(ids) != len(arrays):
            raise ValueError(f"Argument 'ids' must hold one id vector per client "
                             f"({len(arrays)}), got {len(ids)}")
        self._arrays = []
        self._ids = []
        n_features = None
        for l, (X, i) in enumerate(zip(arrays, ids)):
            # Every method on a federation measures squared distances between its rows.
            X = check_array(X, f"arrays[{l}]", min_samples=0, distance_range=True)
            if X.shape[0] == 0:
                raise ValueError(f"Client {l} is empty: argument 'arrays[{l}]' has shape "
                                 f"{X.shape}")
            if n_features is None:
                n_features = X.shape[1]
            elif X.shape[1] != n_features:
                raise ValueError(f"Client {l} has {X.shape[1]} features, client 0 has "
                                 f"{n_features} (argument 'arrays[{l}]')")
            i = check_ids(i, f"ids[{l}]")
            if i.shape[0] != X.shape[0]:
                raise ValueError(f"Client {l}: argument 'ids[{l}]' holds {i.shape[0]} ids for "
                                 f"{X.shape[0]} rows")
            self._arrays.append(X)
            self._ids.append(i)
        all_ids = np.concatenate(self._ids)
        check_ids(all_ids, "ids")  # no id on two clients
        self.n_clients = len(self._arrays)
        self.n_samples = int(all_ids.shape[0])
        self.n_features = int(n_features)
        self.labels = None if labels is None else check_categories(labels, "labels")
        if self.labels is not None and (all_ids.min() < 0 or all_ids.max() >= self.labels.shape[0]):
            raise ValueError("Argument 'labels' must be indexed by point id: ids must lie in "
                             f"[0, {self.labels.shape[0]}), got range [{all_ids.min()}, "
                             f"{all_ids.max()}]")

    @classmethod
    def from_arrays(cls, arrays: Sequence[ArrayLike] | np.ndarray,
                    labels: Sequence[ArrayLike] | None = None) -> Self:
        """Clients from a list of arrays; point ids are ``0..n-1`` in client order.

        ``labels`` (optional) is a list of per-client label arrays, stored by point id.
        """
        arrays = _check_list(arrays, "arrays")
        sizes = [np.shape(X)[0] if np.ndim(X) >= 1 and not hasattr(X, "tocsr") else 0
                 for X in arrays]  # the constructor refuses what is not a 2-D array
        starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        ids = [np.arange(starts[l], starts[l + 1]) for l in range(len(sizes))]
        y = None if labels is None else np.concatenate([np.asarray(v) for v in labels])
        return cls(arrays, ids, labels=y)

    @classmethod
    def from_labels(cls, X: ArrayLike, client_labels: ArrayLike, *,
                    labels: ArrayLike | None = None) -> Self:
        """One client per distinct value of ``client_labels``; point ids are the row numbers of X.

        Client ``l`` holds the rows whose client label is the ``l``-th smallest distinct value
        (``np.unique(client_labels)[l]``), in their order in ``X``. This is how a data set that
        comes with its own split (a column naming the client of each row) becomes a federation,
        e.g. :func:`fedcore.datasets.load_celltype`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        client_labels : array-like of shape (n_samples,)
            The client of each row: ints, strings or any values ``np.unique`` can sort; NaN is
            refused.
        labels : array-like of shape (n_samples,), default=None
            True labels of the rows (evaluation only), stored by point id (= row).

        Examples
        --------
        >>> import numpy as np
        >>> X = np.arange(8.0).reshape(4, 2)
        >>> fed = HorizontalFederation.from_labels(X, ["b", "a", "b", "a"])
        >>> fed.client(0)[1], fed.client(1)[1]
        (array([1, 3]), array([0, 2]))
        """
        X = check_array(X, "X", distance_range=True)
        n = X.shape[0]
        keys = check_categories(client_labels, "client_labels", n)
        _, codes = np.unique(keys, return_inverse=True)
        codes = codes.reshape(-1)
        order = np.argsort(codes, kind="stable").astype(np.int64)  # rows keep their order
        cuts = np.cumsum(np.bincount(codes))[:-1]
        parts = np.split(order, cuts)
        y = None if labels is None else _check_labels(labels, n)
        return cls([X[p] for p in parts], parts, labels=y)

    def client(self, l: int) -> tuple[np.ndarray, np.ndarray]:
        """``(X_l, ids_l)``: client ``l``'s rows and their global point ids."""
        l = check_int(l, "client_id", min_value=0, max_value=self.n_clients - 1)
        return self._arrays[l], self._ids[l]

    def __iter__(self):
        return iter(zip(self._arrays, self._ids))

    def __len__(self):
        return self.n_clients

    @property
    def client_sizes(self) -> np.ndarray:
        return np.array([X.shape[0] for X in self._arrays], dtype=np.int64)

    def to_array(self) -> tuple[np.ndarray, np.ndarray]:
        """``(X, ids)``: all rows stacked in client order."""
        return np.concatenate(self._arrays), np.concatenate(self._ids)

    def client_labels(self, l: int) -> np.ndarray:
        """True labels of client ``l``'s rows (evaluation only)."""
        if self.labels is None:
            raise ValueError("This federation has no labels")
        return self.labels[self.client(l)[1]]

    def __repr__(self):
        return (f"HorizontalFederation(n_clients={self.n_clients}, n_samples={self.n_samples}, "
                f"n_features={self.n_features})")


def partition(X: ArrayLike, n_clients: int,
              scheme: Literal["iid", "noniid", "dirichlet"] = "iid", *,
              labels: ArrayLike | None = None, clusters_per_client: int | None = None,
              alpha: float | None = None, random_state: np.random.Generator | int | None = None,
              ) -> HorizontalFederation:
    """Split the rows of ``X`` among clients; point ids are the row numbers of ``X``.

    Schemes
    -------
    ``"iid"``
        A uniformly random split into ``n_clients`` near-equal parts.
    ``"noniid"``
        [MUFC] Appendix M (after [KFED]): each client holds points of at most
        ``clusters_per_client`` true clusters (``labels``). Every label is given to at least one
        client (so no point is dropped), the remaining slots are random; each label's points are
        split evenly among its clients.
    ``"dirichlet"``
        Label skew ([Dirichlet]): for each label, client shares ~ Dirichlet(alpha). Shares are
        redrawn (up to 100 times) until no client is empty.

    Every point lands on exactly one client and no client is empty; when that is impossible the
    function raises ``ValueError`` saying why. ``labels`` are kept on the federation.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.arange(20.0).reshape(10, 2); y = np.repeat([0, 1], 5)
    >>> fed = partition(X, 2, "noniid", labels=y, clusters_per_client=1, random_state=0)
    >>> sorted(len(set(fed.client_labels(l))) for l in range(2))
    [1, 1]
    """
    X = check_array(X, "X", distance_range=True)
    n = X.shape[0]
    n_clients = check_int(n_clients, "n_clients", min_value=1, max_value=n)
    rng = check_random_state(random_state)
    y = None if labels is None else _check_labels(labels, n)
    if scheme == "iid":
        parts = np.array_split(rng.permutation(n), n_clients)
    elif scheme == "noniid":
        parts = _noniid(y, n_clients, clusters_per_client, rng)
    elif scheme == "dirichlet":
        parts = _dirichlet(y, n_clients, alpha, rng)
    else:
        raise ValueError("Argument 'scheme' must be 'iid', 'noniid' or 'dirichlet', got "
                         f"{scheme!r}")
    parts = [np.sort(p).astype(np.int64) for p in parts]
    return HorizontalFederation([X[p] for p in parts], parts, labels=y)


def _check_labels(labels, n):
    return check_categories(labels, "labels", n)


def _check_list(values, name):
    """``values`` as a list (one entry per client), or raise naming ``name``."""
    if isinstance(values, np.ndarray) and values.ndim >= 1:
        return list(values)
    if not isinstance(values, (list, tuple)):
        raise TypeError(f"Argument {name!r} must be a list with one entry per client, got "
                        f"{type(values).__name__}")
    return list(values)


def _require_labels(y, scheme):
    if y is None:
        raise ValueError(f"Scheme {scheme!r} needs argument 'labels'")


def _noniid(y, n_clients, clusters_per_client, rng):
    _require_labels(y, "noniid")
    classes, y_idx = np.unique(y, return_inverse=True)
    k = classes.shape[0]
    kp = check_int(clusters_per_client, "clusters_per_client", min_value=1)
    kp = min(kp, k)
    if n_clients * kp < k:
        raise ValueError(f"{n_clients} clients x clusters_per_client={kp} cannot cover {k} "
                         "labels without dropping points")
    owners = [set() for _ in range(n_clients)]
    for j, c in enumerate(rng.permutation(k)):  # cover every label first
        owners[j % n_clients].add(int(c))
    for l in range(n_clients):
        free = np.setdiff1d(np.arange(k), sorted(owners[l]))
        extra = rng.choice(free, size=kp - len(owners[l]), replace=False)
        owners[l].update(int(c) for c in extra)
    parts = [[] for _ in range(n_clients)]
    for c in range(k):
        holders = [l for l in range(n_clients) if c in owners[l]]
        members = rng.permutation(np.flatnonzero(y_idx == c))
        for l, chunk in zip(holders, np.array_split(members, len(holders))):
            parts[l].append(chunk)
    parts = [np.concatenate(p) for p in parts]
    empty = [l for l, p in enumerate(parts) if p.shape[0] == 0]
    if empty:
        raise ValueError(f"Scheme 'noniid' left client {empty[0]} empty: its labels have fewer "
                         "points than clients sharing them; use fewer clients")
    return parts


def _dirichlet(y, n_clients, alpha, rng):
    _require_labels(y, "dirichlet")
    alpha = check_scalar(alpha, "alpha", min_value=0.0, include_min=False)
    classes, y_idx = np.unique(y, return_inverse=True)
    for _ in range(100):
        parts = [[] for _ in range(n_clients)]
        for c in range(classes.shape[0]):
            members = rng.permutation(np.flatnonzero(y_idx == c))
            shares = rng.dirichlet(np.full(n_clients, alpha))
            cuts = np.round(np.cumsum(shares)[:-1] * members.shape[0]).astype(np.int64)
            for l, chunk in enumerate(np.split(members, cuts)):
                parts[l].append(chunk)
        parts = [np.concatenate(p) for p in parts]
        if min(p.shape[0] for p in parts) > 0:
            return parts
    raise ValueError(f"Scheme 'dirichlet' with alpha={alpha} left a client empty in 100 draws; "
                     "use fewer clients or a larger alpha")
