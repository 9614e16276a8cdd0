"""Server side of DisBCDKM ([F3KM] Alg. 3) and F3KM ([F3KM] Alg. 4): sums over parties and every
decision.

The server holds the indicator matrix F (as ``labels``) and the cluster sizes, never a party's
columns. It talks to the parties through an object with the methods of
:class:`~fedcore.algorithms.f3km.party.LocalParties` (in one process) or of the Flower server's
node proxy (:mod:`fedcore.integrations.flower.f3km`); the decisions below are the same code in
both cases, and so is the :class:`~fedcore.federation.CommLedger` they record.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Literal, Protocol

import numpy as np

from ...federation.ledger import SERVER, CommLedger
from ...kernels.cd import kmeans as K
from ...kernels.kmeans.seeding import chunk_sums, n_chunks, pick_index, pick_product
from ..kmeans.seeding import pick_unchosen

__all__ = ["SweepServer", "run_bcd", "run_admm", "penalty", "combine_balance",
           "vertical_kmeans_plusplus", "RTOL", "STOP_RULES"]

# Decisions ignore objective differences below RTOL times the scale of the row objectives
# (a rounding allowance; see fedcore.kernels.cd.kmeans).
RTOL = 1e-9


class _Parties(Protocol):
    """What the server calls on the parties: :class:`~fedcore.algorithms.f3km.party.LocalParties`
    or the Flower server's node proxy (typing only)."""

    def __len__(self) -> int: ...

    def initialize(self, labels: np.ndarray, rho: float, fair_scale: float,
                   ) -> tuple[list[float], list[float], list[float]]: ...

    def begin_sweep(self, rho: float) -> list[float]: ...

    def begin_objectives(self, lo: int, hi: int, rho: float, fair_scale: float) -> None: ...

    def add_objectives(self, lo: int, hi: int, out: np.ndarray) -> None: ...

    def changes(self, lo: int, hi: int, new_labels: np.ndarray, offset: int, rho: float,
                fair_scale: float) -> list[float]: ...

    def apply(self, lo: int, hi: int, new_labels: np.ndarray, offset: int) -> None: ...

    def discard(self) -> None: ...

    def explained(self) -> list[float]: ...

    def update_duals(self, rho: float, rho_next: float,
                     ) -> tuple[list[float], list[float], list[float]]: ...


class SweepServer:
    """Runs BCD sweeps over parties ([F3KM] Alg. 3 lines 4-9, [F3KM] Alg. 4 lines 5-10).

    Parameters
    ----------
    parties : LocalParties or a node proxy with the same methods
    labels : int64 ndarray of shape (n,), F; updated in place
    k, block_size : int
    total_sumsq : float, T = sum of the parties' centred sums of squares
    ledger : CommLedger or None (then nothing is recorded)
    fair : bool, whether the parties run F3KM (changes what the ledger counts)
    """

    def __init__(self, parties: _Parties, labels: np.ndarray, k: int, block_size: int,
                 total_sumsq: float, ledger: CommLedger | None = None,
                 fair: bool = False) -> None:
        self.parties = parties
        self.labels = labels
        self.k = k
        self.n = labels.shape[0]
        self.block_size = block_size
        self.total_sumsq = total_sumsq
        self.ledger = ledger
        self.fair = fair
        self.round = 0
        self.counts = np.bincount(labels, minlength=k).astype(np.int64)
        rows = min(block_size, K.SEGMENT_ROWS)
        self.phi = np.empty((rows, k))
        self.new_labels = np.empty(block_size, dtype=np.int64)

    def sse(self, explained: Iterable[float]) -> float:
        """SSE from the parties' explained parts: total sum of squares minus their sum."""
        return max(0.0, self.total_sumsq - sum(explained))

    def tolerance(self, rho: float, fair_scale: float) -> float:
        fair = 0.0
        for part in self.parties.begin_sweep(rho):
            fair += part
        return RTOL * (self.total_sumsq / self.n + fair_scale / self.n * self.k * fair)

    def sweep(self, rho: float = 0.0, fair_scale: float = 1.0) -> tuple[int, int]:
        """One sweep; returns (rows moved, ranges evaluated)."""
        tol = self.tolerance(rho, fair_scale)
        if self.ledger is None and len(self.parties) == 1 and hasattr(self.parties,
                                                                      "sweep_in_one_kernel"):
            moved, ranges = self.parties.sweep_in_one_kernel(rho, fair_scale, self.block_size,
                                                             tol, self.phi, self.new_labels)
            self.counts[:] = np.bincount(self.labels, minlength=self.k)
            return moved, ranges
        return self._federated_sweep(tol, float(rho), float(fair_scale))

    def record(self, kind: str, up: int | None = None, down: int | None = None) -> None:
        """Record one message each way per party, in the current round."""
        if self.ledger is None:
            return
        for j in range(len(self.parties)):
            if down is not None:
                self.ledger.record(self.round, sender=SERVER, receiver=j, kind=kind,
                                   n_elements=down)
            if up is not None:
                self.ledger.record(self.round, sender=j, receiver=SERVER, kind=kind,
                                   n_elements=up)

    def _federated_sweep(self, tol, rho, fair_scale):
        """[F3KM] Alg. 3 / Alg. 4 lines 6-10, range by range, with the block rules of
        ``bcd_sweep``."""
        labels = self.labels
        new_labels = self.new_labels
        tentative = np.empty(self.k, dtype=np.int64)
        moved = ranges = version = 0
        for block_lo in range(0, self.n, self.block_size):
            stack = [(block_lo, min(self.n, block_lo + self.block_size), -1)]
            while stack:
                lo, hi, made_at = stack.pop()
                offset = lo - block_lo
                if made_at == version:  # proposals still valid (see bcd_sweep)
                    n_moves = int(np.count_nonzero(
                        new_labels[offset:offset + hi - lo] != labels[lo:hi]))
                    if n_moves == 0:  # nothing to evaluate or send: not a round
                        continue
                ranges += 1
                self.round += 1
                if made_at != version:
                    n_moves = self._evaluate(lo, hi, block_lo, tentative, tol, rho, fair_scale)
                if n_moves == 0:
                    continue
                self.record("proposed labels", down=hi - lo)
                if n_moves > 1:
                    change = 0.0
                    for part in self.parties.changes(lo, hi, new_labels, offset, rho,
                                                     fair_scale):
                        change += part  # summed in party order
                    self.record("objective change", up=1, down=1)
                    if not change < -tol:
                        self.parties.discard()
                        mid = (lo + hi) // 2
                        stack.append((mid, hi, version))
                        stack.append((lo, mid, version))
                        continue
                self.parties.apply(lo, hi, new_labels, offset)
                new = new_labels[offset:offset + hi - lo]
                np.subtract.at(self.counts, labels[lo:hi], 1)
                np.add.at(self.counts, new, 1)
                labels[lo:hi] = new
                moved += n_moves
                version += 1
        return moved, ranges

    def _evaluate(self, lo, hi, block_lo, tentative, tol, rho, fair_scale):
        """Parties send [F3KM] eq. (17)/(27)-(28) for rows lo..hi; the server sums them
        ([F3KM] eq. (18)/(29)) and proposes labels."""
        phi = self.phi
        self.parties.begin_objectives(lo, hi, rho, fair_scale)
        tentative[:] = self.counts
        n_moves = 0
        for seg_lo in range(lo, hi, phi.shape[0]):
            seg_hi = min(hi, seg_lo + phi.shape[0])
            phi[:seg_hi - seg_lo] = 0.0
            self.parties.add_objectives(seg_lo, seg_hi, phi)
            n_moves += K.choose_moves(phi, seg_lo, seg_hi, self.labels, tentative, tol,
                                      self.new_labels, seg_lo - block_lo)
        self.record("compute objectives", down=2, up=(hi - lo) * self.k)
        return n_moves

    def record_initialization(self) -> None:
        """Messages of a vertical k-means++ ([F3KM] Alg. 3 line 1) and of the statistics set-up: the
        labels go down; each party answers with its SSE part (and, for F3KM, its violation and
        rounding-allowance part)."""
        if self.ledger is None:
            return
        for _ in range(self.k):
            self.round += 1
            self.record("k-means++ center", down=1, up=self.n)
        self.round += 1
        self.record("initial labels", down=self.n, up=3 if self.fair else 1)


def run_bcd(server: SweepServer, parties: _Parties,
            max_iter: int) -> tuple[np.ndarray, int, int]:
    """BCDKM / DisBCDKM sweeps ([F3KM] Alg. 2/3 lines 4-9) until a sweep moves no row or
    ``max_iter``.

    Returns ``(objective history, sweeps run, ranges evaluated)``.
    """
    server.record_initialization()
    explained, _, _ = parties.initialize(server.labels, 0.0, 1.0)
    history = [server.sse(explained)]
    n_iter = ranges = 0
    for n_iter in range(1, max_iter + 1):
        moved, r = server.sweep()
        ranges += r
        history.append(server.sse(parties.explained()))
        if moved == 0:
            break
    return np.array(history), n_iter, ranges


def penalty(rho: float, schedule: Literal["sqrt", "constant"], t: int) -> float:
    """``rho_t``: ``rho * sqrt(t)`` ("sqrt") or ``rho`` ("constant")."""
    return rho * math.sqrt(t) if schedule == "sqrt" else rho


STOP_RULES = ("fedcore", "paper")


def run_admm(server: SweepServer, parties: _Parties, rho: float,
             rho_schedule: Literal["sqrt", "constant"], violation: float, tol: float,
             max_iter: int, stop: Literal["fedcore", "paper"] = "fedcore",
             ) -> tuple[np.ndarray, np.ndarray, int, int]:
    """F3KM's ADMM ([F3KM] Alg. 4 lines 5-12): a BCD sweep on the Lagrangian ([F3KM] eq. (24))
    with Theta and U fixed, then Theta by [F3KM] eq. (31) and U by [F3KM] eq. (32), until the
    stopping rule holds after an iteration, or ``max_iter`` iterations.

    ``stop="fedcore"``: the additive violation ([F3KM] eq. (33)) is at most ``violation`` and the
    objective stagnates (no row moved, or a relative SSE change of at most ``tol``).
    ``stop="paper"``: the additive violation is at most ``violation`` ([F3KM] eq. (33) as the
    stopping criterion of [F3KM] Section 4.2.3); ``tol`` plays no part.

    Returns ``(sse history, violation history, iterations, ranges evaluated)``.
    """
    if stop not in STOP_RULES:
        raise ValueError(f"Argument 'stop' must be 'fedcore' or 'paper', got {stop!r}")
    # The k-means part of [F3KM] eq. (24) enters as SSE / T (T = total sum of squares: the
    # fraction of variance left unexplained), so rho and U mean the same at any n and in any units.
    fair_scale = server.total_sumsq if server.total_sumsq > 0 else 1.0
    server.record_initialization()
    explained, violations, _ = parties.initialize(server.labels, penalty(rho, rho_schedule, 1),
                                                  fair_scale)
    sse_hist = [server.sse(explained)]
    viol_hist = [max(violations)]
    n_iter = ranges = 0
    for n_iter in range(1, max_iter + 1):
        rho_t = penalty(rho, rho_schedule, n_iter)
        moved, r = server.sweep(rho_t, fair_scale)
        ranges += r
        violations, explained = parties.update_duals(
            rho_t, penalty(rho, rho_schedule, n_iter + 1))[:2]
        if server.ledger is not None:
            server.round += 1
            server.record("update Theta, U; report violation, SSE and allowance parts",
                          down=1, up=3)
        sse_hist.append(server.sse(explained))
        viol_hist.append(max(violations))
        if stop == "paper":
            if viol_hist[-1] <= violation:
                break
            continue
        stagnant = moved == 0 or abs(sse_hist[-2] - sse_hist[-1]) <= tol * sse_hist[-2]
        if viol_hist[-1] <= violation and stagnant:
            break
    return np.array(sse_hist), np.array(viol_hist), n_iter, ranges


def combine_balance(parts: Iterable[np.ndarray | None], k: int) -> np.ndarray:
    """Balance of each cluster from the parties' parts (None for a party without groups): the
    smallest over parties, NaN for an empty cluster."""
    bal = np.full(k, np.inf)
    for part in parts:
        if part is None:
            continue
        for j in range(k):
            bal[j] = np.nan if np.isnan(part[j]) else min(bal[j], part[j])
    return bal


def vertical_kmeans_plusplus(n: int, k: int, rng: np.random.Generator,
                             distances: Callable[[int, int], np.ndarray], max_pending: int = 32,
                             max_rejections: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """k-means++ seeding ([F3KM] Alg. 3/4 line 1) when no one holds whole rows.

    ``distances(t, row)`` returns the squared distances of all rows to row ``row`` (the parties'
    partial sums, added in party order): one round per center, row index down, n values up.
    The server makes the same draws, from the same uniforms of ``rng``, as
    :func:`fedcore.algorithms.kmeans.seeding.seed_lazy` on the joined rows: it keeps the
    stale D^2 bounds that algorithm samples from (refreshed at the same moments) beside the
    exact D^2, which here is always at hand. With one party the distances, and so the rows and
    labels, are the same bits; with several, the per-party partial sums round differently, so a
    draw or a nearest seed can differ only where two values tie to within rounding.

    Returns ``(rows int64 (k,), labels int64 (n,) nearest seed, lowest index on ties)``.
    """
    weights = np.ones(n)
    rows = np.empty(k, dtype=np.int64)
    labels = np.full(n, -1, dtype=np.int64)
    mind = np.full(n, np.inf)       # exact D^2 to the centers so far
    bounds = np.full(n, np.inf)     # D^2 at the last refresh: upper bounds on mind
    sums = np.empty(n_chunks(n))    # chunk sums of weights * bounds
    fresh = 0

    def refresh(stop):
        nonlocal fresh
        if stop > fresh:
            bounds[:] = mind
            chunk_sums(weights * bounds, sums)
            fresh = stop

    for t in range(k):
        if t == 0:
            chunk_sums(weights, sums)
            row = pick_index(weights, sums, rng.random())
        else:
            rejections = 0
            while True:
                if sums.max() == 0.0:  # every D^2 is 0: by weight among rows not yet chosen
                    row = pick_unchosen(weights, rows[:t], rng.random())
                    break
                if fresh == t:
                    row = pick_product(weights, bounds, sums, rng.random())
                    break
                u, v = rng.random(2)
                row = pick_product(weights, bounds, sums, u)
                if v * bounds[row] < mind[row]:  # accept with probability mind / bound
                    break
                rejections += 1
                if rejections >= max_rejections:
                    refresh(t)
        rows[t] = row
        column = distances(t, int(row))
        closer = column < mind
        mind[closer] = column[closer]
        labels[closer] = t
        if fresh == 0 or t + 1 - fresh >= max_pending:
            refresh(t + 1)
    return rows, labels
