"""Party side of DisBCDKM ([F3KM] Alg. 3) and F3KM ([F3KM] Alg. 5): what one party computes on its
own columns.

A :class:`CDParty` holds one party's feature block ``X_h``, its protected groups (color matrix
``P_h``), the cached statistics of [F3KM] Alg. 3 line 3 / [F3KM] Alg. 5 line 2, and Theta_h, U_h.
Every method is one step of the client side of [F3KM] Alg. 5 and touches nothing but the party's
own state:

``init_statistics``                      [F3KM] Alg. 5 line 2 ("Initialization")
``prepare_objectives`` + ``add_row_objectives``
                                         [F3KM] eq. (17) / (27)-(28) ("ComputeObj", lines 4-6)
``move_change``                          the party's part of the change of [F3KM] eq. (24) under
                                         a block's proposed moves (block split rule, see BCDKM)
``apply_moves``                          [F3KM] eqs. (19) and (30) ("Update_F", lines 7-9)
``update_dual``                          [F3KM] eqs. (31) and (32) ("UpdateParams", lines 10-12)
``violation``, ``explained``             the party's parts of [F3KM] eq. (33) and of the SSE

The server side (sums over parties, the choice of labels, block rules, the ADMM schedule) lives in
:mod:`fedcore.algorithms.f3km.server`; in one process :class:`LocalParties` calls the parties
directly, in a Flower run each party is a node (:mod:`fedcore.integrations.flower.f3km`).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ...kernels.cd import kmeans as K
from ...kernels.kmeans.distances import pairwise_sq_distances
from ...metrics.fairness import encode_groups

__all__ = ["CDParty", "LocalParties", "encode_party_groups", "final_center_block",
           "tolerance_part", "update_dual"]


def encode_party_groups(attributes: ArrayLike | Sequence[ArrayLike] | None, n: int,
                        ) -> tuple[np.ndarray | None, int, np.ndarray]:
    """One party's sensitive attributes as ``(codes, n_groups, eta)``.

    ``attributes``: None, an empty list, one categorical array of shape (n,) or a list of them.
    ``codes`` int64 (n, A) holds a party-local group index per attribute (None without
    attributes), ``eta`` float64 (n_groups,) the share of each group in the data
    ([F3KM] Section 5.1).
    """
    if attributes is None or (isinstance(attributes, list) and len(attributes) == 0):
        return None, 0, np.zeros(0)
    codes, sizes, _ = encode_groups(attributes, n)
    L = int(sum(sizes))
    eta = np.zeros(L)
    for a in range(codes.shape[1]):
        eta += np.bincount(codes[:, a], minlength=L)
    return codes, L, eta / n


def update_dual(party: CDParty, alpha: np.ndarray, beta: np.ndarray, rho: float) -> None:
    """[F3KM] eq. (31) (Theta: the exact box-constrained minimizer, a clip to [beta, alpha]) and
    [F3KM] eq. (32).

    ``party`` needs ``n_groups``, ``counts``, ``group_counts``, ``theta`` and ``u``; Theta and U of
    empty clusters are left as they are.
    """
    full = party.counts > 0
    if party.n_groups == 0 or not full.any():
        return
    ratio = party.group_counts[:, full] / party.counts[full][None, :]
    u = party.u[:, full]
    with np.errstate(over="ignore"):  # a tiny rho sends u / rho to +-inf; the clip is exact
        target = ratio - u / rho if rho > 0 else ratio
    theta = np.clip(target, beta[:, None], alpha[:, None])
    party.theta[:, full] = theta
    if rho > 0:
        party.u[:, full] = u + rho * (theta - ratio)


def tolerance_part(u: np.ndarray, rho: float) -> float:
    """A party's part of the rounding allowance on the Lagrangian: ``sum_l (rho + max_m |u_lm|)``
    (0 without groups)."""
    if u.shape[0] == 0:
        return 0.0
    return float((rho + np.abs(u).max(axis=1)).sum())


def final_center_block(X: np.ndarray, labels: np.ndarray, k: int,
                       seed_rows: np.ndarray) -> tuple[np.ndarray, float, np.ndarray]:
    """One party's block of the final centers and its part of the SSE ([F3KM] eq. (1)).

    Cluster means of the party's columns; an empty cluster keeps its k-means++ seed
    ``X[seed_rows[m]]``. Returns ``(block float64 (k, d_h), sse part, counts int64 (k,))``.
    """
    d = X.shape[1]
    sums = np.empty((k, d))
    counts = np.empty(k, dtype=np.int64)
    K.partition_sums(X, labels, sums, counts)
    block = X[seed_rows].astype(np.float64)
    full = counts > 0
    block[full] = sums[full] / counts[full, None]
    block = np.ascontiguousarray(block)
    return block, float(K.partition_sse(X, labels, block)), counts


class CDParty:
    """One party's columns, protected groups, cached statistics and Theta_h, U_h ([F3KM] Alg. 5
    line 2).

    Parameters
    ----------
    X : ndarray of shape (n_samples, d_h), float32 or float64, C order
    k : int, number of clusters
    labels : int64 ndarray of shape (n_samples,), the party's view of the indicator matrix F
        (in one process all parties share the server's array; a node keeps its own copy)
    codes : int64 ndarray of shape (n_samples, A) or None, from :func:`encode_party_groups`
    n_groups : int
    alpha, beta : float64 ndarray of shape (n_groups,), bounds of the party's groups
        ([F3KM] eq. (20))
    """

    def __init__(self, X: np.ndarray, k: int, labels: np.ndarray,
                 codes: np.ndarray | None = None, n_groups: int = 0,
                 alpha: np.ndarray | None = None, beta: np.ndarray | None = None) -> None:
        self.X = X
        self.k = k
        self.labels = labels
        n, d = X.shape
        self.shift = np.empty(d)
        self.column_sumsq = np.empty(d)
        K.column_moments(X, self.shift, self.column_sumsq)
        self.total_sumsq = float(self.column_sumsq.sum())
        self.xx = np.empty(n)
        K.centered_sq_norms(X, self.shift, self.xx)
        self.codes = np.zeros((n, 0), dtype=np.int64) if codes is None else codes
        self.n_groups = int(n_groups)
        self.alpha = np.zeros(self.n_groups) if alpha is None else alpha
        self.beta = np.zeros(self.n_groups) if beta is None else beta
        self.sums = np.empty((k, d))
        self.counts = np.empty(k, dtype=np.int64)
        self.sqnorms = np.empty(k)
        self.group_counts = np.empty((self.n_groups, k), dtype=np.int64)
        self.theta = np.zeros((self.n_groups, k))
        self.u = np.zeros((self.n_groups, k))
        self.base = np.empty((2, k))
        self.correction = np.empty((2, self.n_groups, k))

    def init_statistics(self) -> None:
        """``X_h f_m``, ``f_m^T f_m``, ``f_m^T X_h^T X_h f_m`` and ``(p_l^h)^T f_m`` from the labels
        ([F3KM] Alg. 3 line 3, [F3KM] Alg. 5 line 2)."""
        K.cluster_statistics(self.X, self.shift, self.labels, self.codes, self.sums, self.counts,
                             self.sqnorms, self.group_counts)

    def explained(self) -> float:
        """``sum_m |S_m|^2 / n_m`` from the sums (the party's part of T - SSE)."""
        full = self.counts > 0
        return float(((self.sums[full] ** 2).sum(axis=1) / self.counts[full]).sum())

    def violation(self) -> float:
        """Largest additive violation ([F3KM] eq. (33)) of the party's groups, from its cached
        counts."""
        if self.n_groups == 0:
            return 0.0
        n = self.counts.astype(np.float64)
        c = self.group_counts.astype(np.float64)
        over = c - self.alpha[:, None] * n[None, :]
        under = self.beta[:, None] * n[None, :] - c
        return float(max(0.0, over.max(), under.max()))

    def tolerance_part(self, rho: float) -> float:
        return tolerance_part(self.u, rho)

    def update_dual(self, rho: float) -> None:
        """Theta_h by [F3KM] eq. (31), then U_h by [F3KM] eq. (32) ([F3KM] Alg. 5 lines 11-12)."""
        update_dual(self, self.alpha, self.beta, rho)

    def prepare_objectives(self, rho: float, fair_scale: float) -> None:
        """The per-cluster fairness terms of [F3KM] eqs. (27)-(28) for the current statistics."""
        K.fair_tables(self.group_counts, self.counts, self.theta, self.u, rho, fair_scale,
                      self.base, self.correction)

    def add_row_objectives(self, lo: int, hi: int, out: np.ndarray) -> None:
        """ADD the party's [F3KM] eq. (17) / (27)-(28) for rows lo..hi into ``out`` (shape
        (>= hi - lo, k)); :meth:`prepare_objectives` must have run on the current statistics."""
        K.bcd_row_objectives(self.X, self.shift, self.xx, lo, hi, self.labels, self.sums,
                             self.counts, self.sqnorms, self.codes, self.base, self.correction,
                             out)

    def move_change(self, lo: int, hi: int, new_labels: np.ndarray, offset: int, rho: float,
                    fair_scale: float) -> float:
        """The party's part of the change of [F3KM] eq. (24) ([F3KM] eq. (15) plus the fairness
        terms) if rows lo..hi moved to ``new_labels[offset:offset + hi - lo]``."""
        k, d = self.sums.shape
        dsums = np.empty((k, d))
        dcounts = np.empty(k, dtype=np.int64)
        dgroups = np.empty((self.n_groups, k), dtype=np.int64)
        K.move_deltas(self.X, self.shift, lo, hi, self.labels, new_labels, offset, self.codes,
                      dsums, dcounts, dgroups)
        part = K.objective_change(self.sums, self.counts, self.sqnorms, dsums, dcounts)
        if self.n_groups:
            part += K.fairness_change(self.group_counts, self.counts, dgroups, dcounts,
                                      self.theta, self.u, rho, fair_scale)
        return part

    def apply_moves(self, lo: int, hi: int, new_labels: np.ndarray, offset: int) -> None:
        """Eqs. (19) and (30) for rows lo..hi; the labels themselves are committed by the caller."""
        K.apply_moves(self.X, self.shift, self.xx, lo, hi, self.labels, new_labels, offset,
                      self.sums, self.counts, self.sqnorms, self.codes, self.group_counts)

    def seed_distances(self, row: int) -> np.ndarray:
        """Squared distances of the party's rows to row ``row`` on its columns (the party's part
        of a D^2 column of vertical k-means++, [F3KM] Alg. 3 line 1)."""
        out = np.empty((self.X.shape[0], 1))
        center_t = np.ascontiguousarray(self.X[row].astype(np.float64)[:, None])
        pairwise_sq_distances(self.X, center_t, out)
        return out[:, 0]

    def balance_part(self, counts: np.ndarray, eta: np.ndarray) -> np.ndarray:
        """The party's balance of each cluster ([F3KM] Section 5.1): ``min_l min(eta_l / share,
        share / eta_l)`` over its groups (0 for an absent group), NaN for an empty cluster."""
        bal = np.full(self.k, np.inf)
        for j in range(self.k):
            if counts[j] == 0:
                bal[j] = np.nan
                continue
            share = self.group_counts[:, j] / counts[j]
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(share > 0, np.minimum(eta / share, share / eta), 0.0)
            bal[j] = min(bal[j], float(ratio.min()))
        return bal


class LocalParties:
    """The parties of an in-process fit; each call reaches every party directly, in party order.

    The server's :class:`~fedcore.algorithms.f3km.server.SweepServer` drives these calls; a Flower
    server drives the same calls through messages (one per call and node).
    """

    def __init__(self, parties: Sequence[CDParty]) -> None:
        self.parties = parties

    def __len__(self):
        return len(self.parties)

    def initialize(self, labels: np.ndarray, rho: float, fair_scale: float,
                   ) -> tuple[list[float], list[float], list[float]]:
        """Statistics ([F3KM] Alg. 5 line 2) and Theta at U = 0 ([F3KM] eq. (31)); returns the
        parties' SSE parts, violations and allowance parts at ``rho``."""
        for p in self.parties:
            p.init_statistics()
            p.update_dual(0.0)
        return ([p.explained() for p in self.parties], [p.violation() for p in self.parties],
                [p.tolerance_part(rho) for p in self.parties])

    def begin_sweep(self, rho: float) -> list[float]:
        """A sweep starts at penalty ``rho``: the parties' allowance parts at ``rho``."""
        return [p.tolerance_part(rho) for p in self.parties]

    def begin_objectives(self, lo: int, hi: int, rho: float, fair_scale: float) -> None:
        for p in self.parties:
            p.prepare_objectives(rho, fair_scale)

    def add_objectives(self, lo: int, hi: int, out: np.ndarray) -> None:
        for p in self.parties:  # summed in party order
            p.add_row_objectives(lo, hi, out)

    def changes(self, lo: int, hi: int, new_labels: np.ndarray, offset: int, rho: float,
                fair_scale: float) -> list[float]:
        return [p.move_change(lo, hi, new_labels, offset, rho, fair_scale) for p in self.parties]

    def apply(self, lo: int, hi: int, new_labels: np.ndarray, offset: int) -> None:
        for p in self.parties:
            p.apply_moves(lo, hi, new_labels, offset)

    def discard(self) -> None:
        """The proposals of the last change request are not applied (the block is split)."""

    def explained(self) -> list[float]:
        return [p.explained() for p in self.parties]

    def update_duals(self, rho: float, rho_next: float,
                     ) -> tuple[list[float], list[float], list[float]]:
        """Eqs. (31)-(32) at ``rho``; returns violations, SSE parts and allowance parts at
        ``rho_next``."""
        for p in self.parties:
            p.update_dual(rho)
        return ([p.violation() for p in self.parties], [p.explained() for p in self.parties],
                [p.tolerance_part(rho_next) for p in self.parties])

    def sweep_in_one_kernel(self, rho: float, fair_scale: float, block_size: int, tol: float,
                            phi: np.ndarray, new_labels: np.ndarray) -> tuple[int, int]:
        """A whole sweep inside :func:`~fedcore.kernels.cd.kmeans.bcd_sweep` (one party only)."""
        p = self.parties[0]
        moved, ranges = K.bcd_sweep(p.X, p.shift, p.xx, p.labels, p.sums, p.counts, p.sqnorms,
                                    p.codes, p.group_counts, p.theta, p.u, float(rho),
                                    float(fair_scale), block_size, tol, phi, new_labels)
        return int(moved), int(ranges)
