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

The party's role in the protocol (:mod:`fedcore.federation.protocol`) is :class:`F3KMParty`: it
holds a :class:`CDParty` and answers the server's messages (below), in one process
(:class:`~fedcore.federation.protocol.InProcessChannel`) and on Flower nodes alike. The server side
(sums over parties, the choice of labels, block rules, the ADMM schedule) lives in
:mod:`fedcore.algorithms.f3km.server`.

Messages, server to party -> party to server (``kind``: the ledger's name; "-" not counted):

=====================  ==========================  ===============================================
request                reply                       kind, payload
=====================  ==========================  ===============================================
:class:`F3KMSetup`     :class:`PartyInfo`          - (settings; the party's shape and total sum of
                                                   squares)
:class:`SeedRow`       :class:`SeedDistances`      "k-means++ center": the row down, n distances up
:class:`InitialLabels` :class:`ExplainedPart` /    "initial labels": n labels down; the SSE part
                       :class:`PartyParts`         up (F3KM: and violation, allowance part)
:class:`RowObjectives` :class:`Objectives`         "compute objectives": lo, hi down;
                                                   (hi - lo) k objectives up
:class:`ProposedLabels` :class:`ObjectiveChange`   "proposed labels": hi - lo labels down;
                                                   "objective change": 1 float up
:class:`Decision`      (posted, no reply)          "objective change": accept or discard, 1 down
:class:`MovedLabels`   (posted, no reply)          "proposed labels": hi - lo labels down, applied
:class:`DualUpdate`    :class:`DualParts`          "update Theta, U; report violation, SSE and
                                                   allowance parts": the next rho down, 3 up
:class:`ExplainedRequest` :class:`SweepExplained`  - (the SSE part after a DisBCDKM sweep)
:class:`FinalReport`   :class:`PartyResult`        - (center block, SSE, balance, bounds)
:class:`LocalSweep`    :class:`SweepDone`          - (one party, no ledger: a whole sweep in one
                                                   kernel)
=====================  ==========================  ===============================================

Posted messages (:meth:`~fedcore.federation.protocol.Channel.post`) are the server's decisions on
a block: they need no reply, and on Flower they travel with the next request.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import check_array, check_int
from ...federation.protocol import Message, ProtocolError, diagnostic
from ...kernels.cd import kmeans as K
from ...kernels.kmeans.distances import pairwise_sq_distances
from ...metrics.fairness import check_fairness_bounds, encode_groups

__all__ = ["CDParty", "F3KMParty", "LocalParties", "encode_party_groups", "final_center_block",
           "group_bounds", "tolerance_part", "update_dual", "F3KMSetup", "PartyInfo", "SeedRow",
           "SeedDistances", "InitialLabels", "ExplainedPart", "PartyParts", "RowObjectives",
           "Objectives", "ProposedLabels", "ObjectiveChange", "Decision", "MovedLabels",
           "DualUpdate", "DualParts", "ExplainedRequest", "SweepExplained", "FinalReport",
           "PartyResult", "LocalSweep", "SweepDone", "Noted"]


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


def group_bounds(eta: np.ndarray, delta: float, alpha: ArrayLike | None = None,
                 beta: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(alpha, beta)`` of [F3KM] eq. (20) for groups with shares ``eta``: ``eta / (1 - delta)``
    and ``eta (1 - delta)`` ([F3KM] Section 5.1) unless given explicitly (one entry per group)."""
    L = eta.shape[0]
    alpha_all = eta / (1.0 - delta) if alpha is None else check_fairness_bounds(alpha, "alpha", L)
    beta_all = eta * (1.0 - delta) if beta is None else check_fairness_bounds(beta, "beta", L)
    if (beta_all > alpha_all).any():
        i = int(np.argmax(beta_all > alpha_all))
        raise ValueError(f"Argument 'beta' must not exceed 'alpha', got beta={beta_all[i]!r} > "
                         f"alpha={alpha_all[i]!r} for group {i}")
    return alpha_all, beta_all


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
    labels : int64 ndarray of shape (n_samples,), the party's own view of the indicator matrix
        F (kept in step with the server's by the decisions it receives)
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
        # one center is light work: the serial kernel (the same bits) wakes no thread team
        pairwise_sq_distances.serial(self.X, center_t, out)
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


# --------------------------------------------------------------------------------------------
# Messages ([F3KM] Alg. 3-5 as client/server exchanges; see the module's table)
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class F3KMSetup(Message):
    """Server to party, before the first round: ``n_clusters``, whether the party runs F3KM
    (``fair``: its sensitive attributes then count) and ``delta`` of its default bounds
    ([F3KM] Section 5.1). Setup: not counted."""

    counted = False
    n_clusters: int
    fair: bool
    delta: float


@dataclass(frozen=True, eq=False)
class PartyInfo(Message):
    """Party to server, the reply to :class:`F3KMSetup`: the party's index, rows, columns and
    protected groups, its centred total sum of squares and its data's dtype (shapes and a
    constant of the data). Setup: not counted."""

    counted = False
    party: int
    n_samples: int
    n_features: int
    n_groups: int
    total_sumsq: float
    dtype: str


@dataclass(frozen=True, eq=False)
class SeedRow(Message):
    """Server to party, [F3KM] Alg. 3/4 line 1: the row of the next k-means++ center.

    Counted: ``row``. Not counted: ``center``, the center's index (for logs)."""

    kind = "k-means++ center"
    row: int
    center: int = diagnostic(default=0)


@dataclass(frozen=True, eq=False)
class SeedDistances(Message):
    """Party to server: the squared distances of every row to the seed row on the party's
    columns (its part of a D^2 column of vertical k-means++), float64 (n,)."""

    kind = "k-means++ center"
    distances: np.ndarray


@dataclass(frozen=True, eq=False)
class InitialLabels(Message):
    """Server to party: the labels of the seeding; the party sets up its statistics
    ([F3KM] Alg. 3 line 3, Alg. 5 line 2) and Theta at U = 0 ([F3KM] eq. (31)).

    Counted: ``labels`` int64 (n,). Not counted (settings): ``rho`` and ``fair_scale`` of the
    first sweep, and ``alpha``, ``beta``, explicit bounds of the party's groups (empty: the delta
    bounds of :func:`group_bounds`).
    """

    kind = "initial labels"
    labels: np.ndarray
    rho: float = diagnostic()
    fair_scale: float = diagnostic()
    alpha: np.ndarray = diagnostic()
    beta: np.ndarray = diagnostic()


@dataclass(frozen=True, eq=False)
class ExplainedPart(Message):
    """Party to server, DisBCDKM's reply to :class:`InitialLabels`: its part of the explained sum
    of squares (``sum_m |S_m|^2 / n_m`` on its columns; the SSE is T minus the sum of parts)."""

    kind = "initial labels"
    explained: float


@dataclass(frozen=True, eq=False)
class PartyParts(Message):
    """Party to server, F3KM's reply to :class:`InitialLabels`: its explained part, its largest
    violation ([F3KM] eq. (33)) and its part of the rounding allowance at the current rho."""

    kind = "initial labels"
    explained: float
    violation: float
    tolerance: float


@dataclass(frozen=True, eq=False)
class RowObjectives(Message):
    """Server to party, [F3KM] Alg. 5 lines 4-6 ("ComputeObj"): rows ``lo .. hi``.

    Counted: ``lo``, ``hi``. Not counted: ``sweep`` (for logs). The party computes at the rho and
    fairness scale it holds (sent with :class:`InitialLabels` and :class:`DualUpdate`)."""

    kind = "compute objectives"
    lo: int
    hi: int
    sweep: int = diagnostic(default=0)


@dataclass(frozen=True, eq=False)
class Objectives(Message):
    """Party to server: [F3KM] eq. (17) / (27)-(28) of rows lo..hi on its columns, float64
    (hi - lo, k); the server sums them in party order ([F3KM] eq. (18) / (29))."""

    kind = "compute objectives"
    values: np.ndarray


@dataclass(frozen=True, eq=False)
class ProposedLabels(Message):
    """Server to party: the labels the server proposes for rows ``lo .. hi`` (several rows move);
    the party replies with its part of the change of [F3KM] eq. (24) and holds the proposals
    until the server's :class:`Decision`.

    Counted: ``labels`` int64 (hi - lo,). Not counted: ``lo``, ``hi`` (the range, known from the
    same round's :class:`RowObjectives` except for the halves of a split block), ``sweep``.
    """

    kind = "proposed labels"
    labels: np.ndarray
    lo: int = diagnostic()
    hi: int = diagnostic()
    sweep: int = diagnostic(default=0)


@dataclass(frozen=True, eq=False)
class ObjectiveChange(Message):
    """Party to server: its part of the change of [F3KM] eq. (24) under the proposals."""

    kind = "objective change"
    change: float


@dataclass(frozen=True, eq=False)
class Decision(Message):
    """Server to party, posted (no reply): apply the held proposals ([F3KM] eqs. (19) and (30),
    Alg. 5 lines 7-9) or drop them (the block is split). Counted: ``accept``."""

    kind = "objective change"
    accept: bool


@dataclass(frozen=True, eq=False)
class MovedLabels(Message):
    """Server to party, posted (no reply): the new labels of rows ``lo .. hi`` where one row
    moves (no change is asked); the party applies them ([F3KM] eqs. (19) and (30)).

    Counted: ``labels`` int64 (hi - lo,). Not counted: ``lo``, ``hi``."""

    kind = "proposed labels"
    labels: np.ndarray
    lo: int = diagnostic()
    hi: int = diagnostic()


@dataclass(frozen=True, eq=False)
class DualUpdate(Message):
    """Server to party, [F3KM] Alg. 5 lines 10-12: update Theta_h by [F3KM] eq. (31) and U_h by
    [F3KM] eq. (32) at the rho the party holds, then hold ``rho_next``.

    Counted: ``rho_next``. Not counted: ``sweep``."""

    kind = "update Theta, U; report violation, SSE and allowance parts"
    rho_next: float
    sweep: int = diagnostic(default=0)


@dataclass(frozen=True, eq=False)
class DualParts(PartyParts):
    """Party to server, the reply to :class:`DualUpdate`: its explained part, violation
    ([F3KM] eq. (33)) and allowance part at ``rho_next``."""

    kind = "update Theta, U; report violation, SSE and allowance parts"


@dataclass(frozen=True, eq=False)
class ExplainedRequest(Message):
    """Server to party after a DisBCDKM sweep that moved rows: the explained part, for
    ``objective_history_``. Not counted (nor is the reply; see :class:`SweepExplained`)."""

    counted = False
    sweep: int = diagnostic(default=0)


@dataclass(frozen=True, eq=False)
class SweepExplained(Message):
    """Party to server: its explained part after a sweep. Not counted: the history is a report
    of the run, which DisBCDKM ([F3KM] Alg. 3) does not send."""

    counted = False
    explained: float


@dataclass(frozen=True, eq=False)
class FinalReport(Message):
    """Server to party after the last round: report the party's block of the centers (an empty
    cluster keeps its k-means++ seed, rows ``seed_rows``). For publication: not counted."""

    counted = False
    seed_rows: np.ndarray


@dataclass(frozen=True, eq=False)
class PartyResult(Message):
    """Party to server: its block of the centers float64 (k, d_h), its SSE part
    ([F3KM] eq. (1)), its balance part ([F3KM] Section 5.1; empty without groups) and the bounds
    of its groups. For publication: not counted."""

    counted = False
    centers: np.ndarray
    sse: float
    balance: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray


@dataclass(frozen=True, eq=False)
class LocalSweep(Message):
    """Server to the only party of a single-machine fit (no ledger kept): run a whole sweep in
    one kernel (:func:`~fedcore.kernels.cd.kmeans.bcd_sweep`, the same decisions as the
    server's range by range). Not counted."""

    counted = False
    rho: float
    fair_scale: float
    block_size: int
    tol: float


@dataclass(frozen=True, eq=False)
class SweepDone(Message):
    """The party's reply to :class:`LocalSweep`: rows moved, ranges evaluated and the labels.
    Not counted."""

    counted = False
    moved: int
    ranges: int
    labels: np.ndarray


@dataclass(frozen=True, eq=False)
class Noted(Message):
    """A party's (dropped) reply to a posted message: nothing."""


_NO_BOUNDS = np.zeros(0)
_NOTED = Noted()  # the reply to every posted message (dropped by the channel)


class F3KMParty:
    """A party's role in DisBCDKM ([F3KM] Alg. 3) and F3KM ([F3KM] Alg. 5): its column block
    ``X`` and sensitive attributes ``groups`` (None, one categorical array of shape (n,) or a
    list of them; they count only when the server's :class:`F3KMSetup` says ``fair``), or
    ``encoded``, the same already encoded by :func:`encode_party_groups`.

    After the set-up it keeps a :class:`CDParty` (statistics, Theta_h, U_h and its own copy of
    the labels), the rho and fairness scale of the current sweep, and the proposals of the last
    :class:`ProposedLabels` until the server decides. ``handle`` answers the messages of the
    module's table; the block is checked at the set-up, and every row range, row and label a
    message carries before a kernel reads it (:class:`ProtocolError` otherwise).
    """

    def __init__(self, X: np.ndarray, groups: ArrayLike | Sequence[ArrayLike] | None = None,
                 party_id: int = 0, *,
                 encoded: tuple[np.ndarray | None, int, np.ndarray] | None = None,
                 _checked: bool = False) -> None:
        # _checked (inside fedcore only): an in-process fit's party, whose block the estimator
        # checked and whose messages come from fedcore's own server in this process.
        self._checked = _checked
        self.X = X
        self.groups = groups
        self.encoded = encoded
        self.party_id = int(party_id)
        self.party: CDParty | None = None
        self.fair = False
        self.eta = np.zeros(0)
        self.delta = 0.2
        self.rho = 0.0
        self.fair_scale = 1.0
        self.held: tuple[int, int, np.ndarray] | None = None
        self._buffers: tuple[np.ndarray, np.ndarray] | None = None

    @classmethod
    def holding(cls, party: CDParty, party_id: int = 0, eta: np.ndarray | None = None,
                ) -> F3KMParty:
        """A role already set up around ``party`` (answering as an F3KM party). The role keeps
        its own labels, as every party does: ``party.labels`` becomes a copy."""
        party.labels = party.labels.copy()
        role = cls(party.X, None, party_id)
        role.party, role.fair = party, True
        role.eta = np.zeros(party.n_groups) if eta is None else eta
        return role

    def handle(self, message: Message) -> Message:
        answer = _ANSWERS.get(type(message))
        if answer is None:
            raise ProtocolError(f"F3KM party {self.party_id} cannot answer a "
                                f"{type(message).__name__}")
        if self.party is None and answer is not F3KMParty._setup:
            raise ProtocolError(f"F3KM party {self.party_id} received a "
                                f"{type(message).__name__} before its F3KMSetup")
        return answer(self, message)

    def _rows(self, lo, hi):
        """``(lo, hi)`` of a server message, checked against the party's rows (the kernels
        index by them)."""
        lo, hi = int(lo), int(hi)
        if not self._checked and not 0 <= lo <= hi <= self.X.shape[0]:
            raise ProtocolError(f"F3KM party {self.party_id} got rows {lo}:{hi} of "
                                f"{self.X.shape[0]}")
        return lo, hi

    def _labels(self, labels, count):
        """Labels of a server message as int64, checked: ``count`` of them, in [0, k)."""
        labels = np.ascontiguousarray(labels, dtype=np.int64)
        if self._checked:
            return labels
        if labels.shape != (count,) or not K.labels_in_range(labels, self.party.k):
            raise ProtocolError(f"F3KM party {self.party_id} got {labels.shape} labels for "
                                f"{count} rows and {self.party.k} clusters")
        return labels

    def _setup(self, m: F3KMSetup) -> PartyInfo:
        if not self._checked:
            self.X = check_array(self.X, f"X of F3KM party {self.party_id}")
        n = self.X.shape[0]
        check_int(m.n_clusters, "n_clusters", min_value=1, max_value=n)
        if not m.fair:
            codes, L, eta = None, 0, np.zeros(0)
        elif self.encoded is not None:
            codes, L, eta = self.encoded
        else:
            codes, L, eta = encode_party_groups(self.groups, n)
        self.party = CDParty(self.X, int(m.n_clusters), np.zeros(n, dtype=np.int64), codes, L)
        self.fair, self.eta, self.delta = bool(m.fair), eta, float(m.delta)
        self.groups = self.encoded = None  # in the party's codes now
        return PartyInfo(self.party_id, n, int(self.X.shape[1]), L, self.party.total_sumsq,
                         self.X.dtype.name)

    def _seed(self, m: SeedRow) -> SeedDistances:
        row = int(m.row)
        if not 0 <= row < self.X.shape[0]:
            raise ProtocolError(f"F3KM party {self.party_id} got seed row {row} of "
                                f"{self.X.shape[0]}")
        return SeedDistances(self.party.seed_distances(row))

    def _init(self, m: InitialLabels) -> ExplainedPart | PartyParts:
        p = self.party
        p.labels[:] = self._labels(m.labels, self.X.shape[0])
        if p.n_groups:
            p.alpha, p.beta = group_bounds(self.eta, self.delta, m.alpha if m.alpha.size else None,
                                           m.beta if m.beta.size else None)
        self.rho, self.fair_scale = float(m.rho), float(m.fair_scale)
        p.init_statistics()
        p.update_dual(0.0)
        if not self.fair:
            return ExplainedPart(p.explained())
        return PartyParts(p.explained(), p.violation(), p.tolerance_part(self.rho))

    def _objectives(self, m: RowObjectives) -> Objectives:
        p = self.party
        lo, hi = self._rows(m.lo, m.hi)
        p.prepare_objectives(self.rho, self.fair_scale)
        out = np.zeros((hi - lo, p.k))
        p.add_row_objectives(lo, hi, out)
        return Objectives(out)

    def _change(self, m: ProposedLabels) -> ObjectiveChange:
        lo, hi = self._rows(m.lo, m.hi)
        proposals = self._labels(m.labels, hi - lo)
        part = self.party.move_change(lo, hi, proposals, 0, self.rho, self.fair_scale)
        self.held = (lo, hi, proposals)
        return ObjectiveChange(float(part))

    def _move(self, lo, hi, labels):
        self.party.apply_moves(lo, hi, labels, 0)
        self.party.labels[lo:hi] = labels

    def _decide(self, m: Decision) -> Noted:
        if m.accept:
            if self.held is None:
                raise ProtocolError(f"F3KM party {self.party_id} was told to apply proposals "
                                    "it does not hold")
            self._move(*self.held)
        self.held = None
        return _NOTED

    def _moved(self, m: MovedLabels) -> Noted:
        lo, hi = self._rows(m.lo, m.hi)
        self._move(lo, hi, self._labels(m.labels, hi - lo))
        return _NOTED

    def _duals(self, m: DualUpdate) -> DualParts:
        p = self.party
        p.update_dual(self.rho)
        self.rho = float(m.rho_next)
        return DualParts(p.explained(), p.violation(), p.tolerance_part(self.rho))

    def _explained(self, m: ExplainedRequest) -> SweepExplained:
        return SweepExplained(self.party.explained())

    def _report(self, m: FinalReport) -> PartyResult:
        p = self.party
        seeds = np.asarray(m.seed_rows, dtype=np.int64)
        if seeds.shape != (p.k,) or not 0 <= seeds.min() <= seeds.max() < self.X.shape[0]:
            raise ProtocolError(f"F3KM party {self.party_id} got seed rows of shape "
                                f"{seeds.shape} for {p.k} clusters and {self.X.shape[0]} rows")
        block, sse, counts = final_center_block(p.X, p.labels, p.k, seeds)
        balance = p.balance_part(counts, self.eta) if p.n_groups else _NO_BOUNDS
        return PartyResult(block, sse, balance, p.alpha, p.beta)

    def _sweep(self, m: LocalSweep) -> SweepDone:
        p, size = self.party, check_int(m.block_size, "block_size", min_value=1)
        if self._buffers is None or self._buffers[1].shape[0] != size:
            self._buffers = (np.empty((min(size, K.SEGMENT_ROWS), p.k)),
                             np.empty(size, dtype=np.int64))
        phi, new_labels = self._buffers
        moved, ranges = K.bcd_sweep(p.X, p.shift, p.xx, p.labels, p.sums, p.counts, p.sqnorms,
                                    p.codes, p.group_counts, p.theta, p.u, float(m.rho),
                                    float(m.fair_scale), size, float(m.tol), phi, new_labels)
        return SweepDone(int(moved), int(ranges), p.labels)


_ANSWERS: dict[type, Callable[[F3KMParty, Any], Message]] = {
    F3KMSetup: F3KMParty._setup, SeedRow: F3KMParty._seed, InitialLabels: F3KMParty._init,
    RowObjectives: F3KMParty._objectives, ProposedLabels: F3KMParty._change,
    Decision: F3KMParty._decide, MovedLabels: F3KMParty._moved, DualUpdate: F3KMParty._duals,
    ExplainedRequest: F3KMParty._explained, FinalReport: F3KMParty._report,
    LocalSweep: F3KMParty._sweep}


def LocalParties(parties: Sequence[CDParty]) -> Any:  # noqa: N802 -- the former class's name
    """Deprecated: the parties of an in-process fit, each call reaching every party in party
    order. Now :class:`~fedcore.algorithms.f3km.server.ChannelParties` over an
    :class:`~fedcore.federation.protocol.InProcessChannel` of :class:`F3KMParty` roles holding
    ``parties`` (set up, answering as F3KM parties), which is what this returns."""
    import warnings
    from ...federation.protocol import InProcessChannel
    from .server import ChannelParties
    warnings.warn("LocalParties is deprecated: use ChannelParties(InProcessChannel([F3KMParty"
                  "...])) (fedcore.algorithms.f3km.server)", DeprecationWarning, stacklevel=2)
    roles = [F3KMParty.holding(p, j) for j, p in enumerate(parties)]
    return ChannelParties(InProcessChannel(roles, n_jobs=1), fair=True,
                          n_samples=parties[0].X.shape[0] if parties else 0)
