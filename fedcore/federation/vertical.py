"""Vertical federations: parties hold different feature blocks of the same rows."""
from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_array, check_int

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["VerticalFederation"]


class VerticalFederation:
    """Column blocks of one data matrix, one block per party; labels live on the last party.

    Parameters
    ----------
    blocks : list of arrays of shape (n_samples, d_j)
    y : array-like of shape (n_samples,), optional, held by the last party
    groups : None, or a list with one entry per party: None (no sensitive attribute), a 1-D
        categorical array, or a list of such arrays (several attributes on one party)

    Attributes
    ----------
    n_parties, n_samples, n_features : int
    splits : list of int, features per party
    y : ndarray or None

    Examples
    --------
    >>> import numpy as np
    >>> vfed = VerticalFederation.from_columns(np.arange(12.0).reshape(2, 6), splits=[2, 4])
    >>> vfed.n_parties, vfed.splits, vfed.party(1).shape
    (2, [2, 4], (2, 4))
    """

    def __init__(self, blocks: Sequence[ArrayLike] | np.ndarray, y: ArrayLike | None = None,
                 groups: Sequence[ArrayLike | Sequence[ArrayLike] | None] | None = None) -> None:
        if isinstance(blocks, np.ndarray) and blocks.ndim >= 1:
            blocks = list(blocks)
        if not isinstance(blocks, (list, tuple)):
            raise TypeError("Argument 'blocks' must be a list with one array per party, got "
                            f"{type(blocks).__name__}")
        if len(blocks) == 0:
            raise ValueError("Argument 'blocks': a vertical federation needs at least one party, "
                             "got 0")
        blocks = [check_array(B, f"blocks[{j}]", allow_nonfinite=True)
                  for j, B in enumerate(blocks)]
        n = blocks[0].shape[0]
        for j, B in enumerate(blocks):
            if B.shape[0] != n:
                raise ValueError(f"Argument 'blocks': party {j} holds {B.shape[0]} rows, party 0 "
                                 f"holds {n}")
        width = sum(B.shape[1] for B in blocks)
        # Finite, and rows of the joined width have finite squared distances.
        self._blocks = [check_array(B, f"blocks[{j}]", distance_range=True, n_features=width)
                        for j, B in enumerate(blocks)]
        self.n_parties = len(self._blocks)
        self.n_samples = int(n)
        self.splits = [B.shape[1] for B in self._blocks]
        self.n_features = int(sum(self.splits))
        self.y = None if y is None else np.asarray(y)
        if self.y is not None and self.y.shape != (n,):
            raise ValueError(f"Argument 'y' must have shape ({n},), got {self.y.shape}")
        self._groups = self._check_groups(groups)

    def _check_groups(self, groups):
        if groups is None:
            return [[] for _ in range(self.n_parties)]
        if not isinstance(groups, (list, tuple)):
            raise TypeError("Argument 'groups' must be a list with one entry per party, got "
                            f"{type(groups).__name__}")
        if len(groups) != self.n_parties:
            raise ValueError(f"Argument 'groups' must have one entry per party "
                             f"({self.n_parties}), got {len(groups)}")
        out = []
        for j, g in enumerate(groups):
            if g is not None and np.ndim(g) == 0:
                raise TypeError(f"Argument 'groups': the entry of party {j} must be None, an "
                                f"array or a list of arrays, got {type(g).__name__}")
            attrs = [] if g is None else ([g] if np.ndim(g) == 1 else list(g))
            for a in attrs:
                if np.shape(a) != (self.n_samples,):
                    raise ValueError(f"Argument 'groups': a sensitive attribute of party {j} "
                                     f"must have shape ({self.n_samples},), got {np.shape(a)}")
            out.append([np.asarray(a) for a in attrs])
        return out

    @classmethod
    def from_columns(cls, X: ArrayLike, splits: int | Sequence[int],
                     y: ArrayLike | None = None,
                     groups: Sequence[ArrayLike | Sequence[ArrayLike] | None] | None = None,
                     ) -> Self:
        """Split the columns of ``X``: ``splits`` is a list of block widths or a party count."""
        X = check_array(X, "X", distance_range=True)
        d = X.shape[1]
        if np.ndim(splits) == 0:
            n_parties = check_int(splits, "splits", min_value=1, max_value=d)
            widths = [len(b) for b in np.array_split(np.arange(d), n_parties)]
        else:
            widths = [check_int(w, "splits", min_value=1) for w in splits]
            if sum(widths) != d:
                raise ValueError(f"Argument 'splits' must sum to n_features = {d}, "
                                 f"got {list(splits)} (sum {sum(widths)})")
        edges = np.cumsum([0] + widths)
        blocks = [X[:, edges[j]:edges[j + 1]] for j in range(len(widths))]
        return cls(blocks, y=y, groups=groups)

    def party(self, j: int) -> np.ndarray:
        """Feature block of party ``j``, shape (n_samples, splits[j])."""
        j = check_int(j, "party", min_value=0, max_value=self.n_parties - 1)
        return self._blocks[j]

    def groups(self, j: int) -> list[np.ndarray]:
        """List of the sensitive attributes party ``j`` holds (possibly empty)."""
        j = check_int(j, "party", min_value=0, max_value=self.n_parties - 1)
        return self._groups[j]

    def columns(self, j: int) -> slice:
        """The slice of global feature indices held by party ``j``."""
        j = check_int(j, "party", min_value=0, max_value=self.n_parties - 1)
        start = int(sum(self.splits[:j]))
        return slice(start, start + self.splits[j])

    def to_array(self) -> np.ndarray:
        """All blocks side by side, shape (n_samples, n_features)."""
        return np.hstack(self._blocks)

    def __iter__(self):
        return iter(self._blocks)

    def __len__(self):
        return self.n_parties

    def __repr__(self):
        return (f"VerticalFederation(n_parties={self.n_parties}, n_samples={self.n_samples}, "
                f"splits={self.splits})")
