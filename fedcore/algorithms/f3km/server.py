"""Server side of DisBCDKM ([F3KM] Alg. 3) and F3KM ([F3KM] Alg. 4): sums over parties and every
decision.

The server holds the indicator matrix F (as ``labels``) and the cluster sizes, never a party's
columns. Its role in the protocol is :class:`F3KMServer`: it talks to the parties
(:class:`~fedcore.algorithms.f3km.party.F3KMParty` roles) over any
:class:`~fedcore.federation.protocol.Channel` through :class:`ChannelParties`, which turns each call
of :class:`SweepServer`, :func:`run_bcd`, :func:`run_admm` and :func:`vertical_kmeans_plusplus` into
messages (:mod:`fedcore.algorithms.f3km.party`). The decisions below are the same code in one
process (:class:`~fedcore.federation.protocol.InProcessChannel`) and on Flower nodes, and the
channel counts the messages in its :class:`~fedcore.federation.CommLedger`.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, Protocol

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import check_int
from ...federation.protocol import Channel, Message, ProtocolError, expect
from ...federation.ledger import CommLedger
from ...kernels.cd import kmeans as K
from ...kernels.kmeans.seeding import chunk_sums, pick_index, pick_product
from ...kernels.parallel import n_chunks
from ...metrics.fairness import check_fairness_bounds
from ..kmeans.seeding import pick_unchosen
from .party import (Decision, DualParts, DualUpdate,
                    ExplainedPart, ExplainedRequest, F3KMSetup, FinalReport, InitialLabels,
                    LocalSweep, MovedLabels, ObjectiveChange, Objectives, PartyInfo, PartyParts,
                    PartyResult, ProposedLabels, RowObjectives, SeedDistances, SeedRow,
                    SweepDone, SweepExplained, group_bounds)

__all__ = ["SweepServer", "ChannelParties", "F3KMServer", "run_bcd", "run_admm", "penalty",
           "combine_balance", "vertical_kmeans_plusplus", "split_bounds", "RTOL", "STOP_RULES"]

# Decisions ignore objective differences below RTOL times the scale of the row objectives
# (a rounding allowance; see fedcore.kernels.cd.kmeans).
RTOL = 1e-9


class _Parties(Protocol):
    """What the server calls on the parties (:class:`ChannelParties`; typing only)."""

    round: int

    def __len__(self) -> int: ...

    def next_round(self) -> int: ...

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

    def sweep_in_one_kernel(self, rho: float, fair_scale: float, block_size: int, tol: float,
                            labels: np.ndarray) -> tuple[int, int]: ...


def resolve_block_size(block_size: int | str, n: int) -> int:
    """Rows per block: "auto" is ceil(n / 4) ([F3KM] Section 5.3.1), an int is capped at n."""
    if isinstance(block_size, str):
        if block_size != "auto":
            raise ValueError(f"Argument 'block_size' must be 'auto' or a positive int, "
                             f"got {block_size!r}")
        return max(1, math.ceil(n / 4))
    size = check_int(block_size, "block_size", min_value=1)
    return min(size, n)


def check_n_clusters(k: int, n: int) -> None:
    if k > n:
        raise ValueError(f"Argument 'n_clusters' must be <= n_samples = {n}, got {k}")


def check_has_groups(n_groups: int) -> None:
    if n_groups == 0:
        raise ValueError("FairKMeans needs at least one sensitive attribute: argument 'groups' "
                         "(or the federation's groups) holds none")


def join_blocks(blocks: Sequence[np.ndarray], sse_parts: Iterable[float],
                ) -> tuple[np.ndarray, float]:
    """The parties' center blocks side by side and their SSE parts summed in party order."""
    sse = 0.0
    for part in sse_parts:
        sse += part
    return np.hstack(blocks), sse


def split_bounds(alpha: ArrayLike | None, beta: ArrayLike | None, group_sizes: Sequence[int],
                 ) -> list[tuple[np.ndarray | None, np.ndarray | None]] | None:
    """Explicit ``alpha`` / ``beta`` (groups ordered by party) checked and split by party: one
    ``(alpha_j, beta_j)`` per party, None where not given; None when neither is given."""
    L = sum(group_sizes)
    alpha = None if alpha is None else check_fairness_bounds(alpha, "alpha", L)
    beta = None if beta is None else check_fairness_bounds(beta, "beta", L)
    if alpha is None and beta is None:
        return None
    if alpha is not None and beta is not None:
        group_bounds(np.zeros(L), 0.0, alpha, beta)  # beta <= alpha; with one of them given,
        # each party checks its groups against its own delta bounds
    edges = np.cumsum([0] + list(group_sizes))
    return [tuple(None if b is None else b[edges[j]:edges[j + 1]] for b in (alpha, beta))
            for j in range(len(group_sizes))]


_EMPTY = np.zeros(0)


class ChannelParties:
    """The parties as the server's decisions see them, over a channel: each call of
    :class:`SweepServer`, :func:`run_bcd`, :func:`run_admm` and
    :func:`vertical_kmeans_plusplus` becomes one exchange with every party (or none, where the
    answer is already at hand: the allowance parts and SSE parts reported last), or posts the
    server's decision on a block (:meth:`~fedcore.federation.protocol.Channel.post`); replies
    are combined in party order.

    Parameters
    ----------
    channel : Channel to parties playing :class:`~fedcore.algorithms.f3km.party.F3KMParty`
    fair : bool, whether the parties run F3KM (they then report violations and allowances)
    bounds : explicit bounds per party (:func:`split_bounds`), sent with the initial labels
    n_samples : int, rows (set by :meth:`setup`)

    Attributes
    ----------
    round : int, the ledger's current round (the server opens one per range: :meth:`next_round`;
        a seed, the initial labels and a dual update each open their own)
    sweep : int, sweeps begun
    n_exchanges : int, exchanges made (set-up and final report included; posted decisions travel
        with the next exchange)
    """

    def __init__(self, channel: Channel, fair: bool = False,
                 bounds: Sequence[tuple[np.ndarray | None, np.ndarray | None]] | None = None,
                 n_samples: int = 0) -> None:
        self.channel = channel
        self.n_parties = channel.n_clients
        self.fair = fair
        self.bounds = bounds
        self.n_samples = n_samples
        self.round = 0
        self.sweep = 0
        self.n_exchanges = 0
        self._everyone = range(self.n_parties)
        self._held = None            # (lo, hi) of the proposals the parties hold
        self._phi = []
        self._phi_lo = 0
        self._explained = None       # SSE parts, valid until a move is applied
        self._tolerance = (0.0, [0.0] * self.n_parties)
        self._penalty = (0.0, 1.0)   # (rho, fair_scale) the parties hold

    def __len__(self) -> int:
        return self.n_parties

    def next_round(self) -> int:
        """Open the next round of the ledger; returns its number."""
        self.round += 1
        return self.round

    def _ask(self, message: Message, reply: type | tuple[type, ...]) -> list[Any]:
        """``message`` to every party in the current round; the replies in party order."""
        replies = self.channel.exchange(dict.fromkeys(self._everyone, message), self.round)
        self.n_exchanges += 1
        out = []
        for j in self._everyone:
            r = replies[j]
            out.append(r if type(r) is reply else expect(r, reply, "F3KM server"))
        return out

    def _post(self, message: Message) -> None:
        self.channel.post(dict.fromkeys(self._everyone, message), self.round)

    def setup(self, n_clusters: int, fair: bool, delta: float) -> list[PartyInfo]:
        """The settings to every party; their :class:`~fedcore.algorithms.f3km.party.PartyInfo`
        (ValueError if they disagree on the rows or their indices)."""
        infos = self._ask(F3KMSetup(int(n_clusters), bool(fair), float(delta)), PartyInfo)
        for j, info in enumerate(infos):
            if info.party != j:
                raise ValueError(f"Client {j} of the channel says it is party {info.party}")
            if info.n_samples != infos[0].n_samples:
                raise ValueError(f"Party {j} holds {info.n_samples} rows, party 0 holds "
                                 f"{infos[0].n_samples}")
        self.fair = bool(fair)
        self.n_samples = int(infos[0].n_samples)
        return infos

    def distances(self, t: int, row: int) -> np.ndarray:
        """D^2 of every row to row ``row`` (k-means++ center ``t``, a round of its own): the
        parties' partial sums, added in party order."""
        self.next_round()
        total = np.zeros(self.n_samples)
        for reply in self._ask(SeedRow(int(row), int(t)), SeedDistances):
            total += reply.distances
        return total

    def initialize(self, labels: np.ndarray, rho: float, fair_scale: float,
                   ) -> tuple[list[float], list[float], list[float]]:
        """The initial labels (a round of their own): statistics ([F3KM] Alg. 5 line 2) and
        Theta at U = 0 ([F3KM] eq. (31)); returns the parties' SSE parts, violations and
        allowance parts at ``rho`` (zeros for DisBCDKM)."""
        self.next_round()
        requests = {}
        for j in self._everyone:
            alpha, beta = self.bounds[j] if self.bounds is not None else (None, None)
            requests[j] = InitialLabels(labels, float(rho), float(fair_scale),
                                        _EMPTY if alpha is None else alpha,
                                        _EMPTY if beta is None else beta)
        replies = self.channel.exchange(requests, self.round)
        self.n_exchanges += 1
        replies = [expect(replies[j], PartyParts if self.fair else ExplainedPart,
                          "F3KM server") for j in self._everyone]
        self._penalty = (rho, fair_scale)
        self._explained = [r.explained for r in replies]
        if not self.fair:
            zeros = [0.0] * self.n_parties
            self._tolerance = (rho, zeros)
            return self._explained, zeros, zeros
        self._tolerance = (rho, [r.tolerance for r in replies])
        return self._explained, [r.violation for r in replies], self._tolerance[1]

    def begin_sweep(self, rho: float) -> list[float]:
        """A sweep starts at penalty ``rho``: the parties' allowance parts at ``rho``, as they
        reported them last."""
        self.sweep += 1
        if rho != self._tolerance[0]:
            raise ProtocolError(f"Parties reported their allowance at rho={self._tolerance[0]}, "
                                f"the sweep runs at rho={rho}")
        return self._tolerance[1]

    def begin_objectives(self, lo: int, hi: int, rho: float, fair_scale: float) -> None:
        """[F3KM] eq. (17) / (27)-(28) of rows lo..hi from every party (kept for
        :meth:`add_objectives`)."""
        if (rho, fair_scale) != self._penalty:
            raise ProtocolError(f"Parties hold rho, fair_scale = {self._penalty}, the server "
                                f"asks for {(rho, fair_scale)}")
        self._phi = [r.values for r in self._ask(RowObjectives(lo, hi, self.sweep), Objectives)]
        self._phi_lo = lo

    def add_objectives(self, lo: int, hi: int, out: np.ndarray) -> None:
        """ADD the parties' objectives of rows lo..hi (within the range asked last) into
        ``out``, in party order."""
        a, b = lo - self._phi_lo, hi - self._phi_lo
        rows = out[:hi - lo]
        for phi in self._phi:
            rows += phi if a == 0 and b == phi.shape[0] else phi[a:b]

    def changes(self, lo: int, hi: int, new_labels: np.ndarray, offset: int, rho: float,
                fair_scale: float) -> list[float]:
        """Each party's part of the change of [F3KM] eq. (24) if rows lo..hi moved to
        ``new_labels[offset:offset + hi - lo]`` (the parties hold the proposals)."""
        proposals = np.array(new_labels[offset:offset + hi - lo], dtype=np.int64)
        replies = self._ask(ProposedLabels(proposals, lo, hi, self.sweep), ObjectiveChange)
        self._held = (lo, hi)
        return [r.change for r in replies]

    def apply(self, lo: int, hi: int, new_labels: np.ndarray, offset: int) -> None:
        """Rows lo..hi move ([F3KM] eqs. (19), (30)): the held proposals are accepted, or the
        labels are sent (posted: the decision travels with the next request)."""
        if self._held == (lo, hi):
            self._post(Decision(True))
        else:
            self._post(MovedLabels(np.array(new_labels[offset:offset + hi - lo],
                                            dtype=np.int64), lo, hi))
        self._held = None
        self._explained = None

    def discard(self) -> None:
        """The proposals of the last change request are not applied (the block is split)."""
        self._post(Decision(False))
        self._held = None

    def explained(self) -> list[float]:
        """The parties' SSE parts (asked only if a move was applied since they last sent
        them)."""
        if self._explained is None:
            self._explained = [r.explained for r in self._ask(ExplainedRequest(self.sweep),
                                                                SweepExplained)]
        return self._explained

    def update_duals(self, rho: float, rho_next: float,
                     ) -> tuple[list[float], list[float], list[float]]:
        """Eqs. (31)-(32) at ``rho`` (a round of its own); returns violations, SSE parts and
        allowance parts at ``rho_next``."""
        if rho != self._penalty[0]:
            raise ProtocolError(f"Parties hold rho={self._penalty[0]}, the server updates the "
                                f"duals at rho={rho}")
        self.next_round()
        replies = self._ask(DualUpdate(float(rho_next), self.sweep), DualParts)
        self._penalty = (rho_next, self._penalty[1])
        self._explained = [r.explained for r in replies]
        self._tolerance = (rho_next, [r.tolerance for r in replies])
        return [r.violation for r in replies], self._explained, self._tolerance[1]

    def sweep_in_one_kernel(self, rho: float, fair_scale: float, block_size: int, tol: float,
                            labels: np.ndarray) -> tuple[int, int]:
        """A whole sweep inside :func:`~fedcore.kernels.cd.kmeans.bcd_sweep` on the only party
        (a single-machine fit); ``labels`` receives the new labels."""
        (done,) = self._ask(LocalSweep(float(rho), float(fair_scale), int(block_size),
                                       float(tol)), SweepDone)
        labels[:] = done.labels
        self._explained = None
        return done.moved, done.ranges

    def close(self, seed_rows: np.ndarray) -> list[PartyResult]:
        """Each party's block of the centers, SSE part, balance part and bounds."""
        return self._ask(FinalReport(np.asarray(seed_rows, dtype=np.int64)), PartyResult)


class SweepServer:
    """Runs BCD sweeps over parties ([F3KM] Alg. 3 lines 4-9, [F3KM] Alg. 4 lines 5-10).

    Parameters
    ----------
    parties : ChannelParties
    labels : int64 ndarray of shape (n,), F; updated in place
    k, block_size : int
    total_sumsq : float, T = sum of the parties' centred sums of squares
    ledger : CommLedger or None, the channel's ledger when the fit keeps one; None for a
        single-machine fit, whose only party then runs whole sweeps in one kernel

    The ledger's rounds are the parties' (``round``): one per evaluated range.
    """

    def __init__(self, parties: _Parties, labels: np.ndarray, k: int, block_size: int,
                 total_sumsq: float, ledger: CommLedger | None = None) -> None:
        self.parties = parties
        self.labels = labels
        self.k = k
        self.n = labels.shape[0]
        self.block_size = block_size
        self.total_sumsq = total_sumsq
        self.ledger = ledger
        self.counts = np.bincount(labels, minlength=k).astype(np.int64)
        rows = min(block_size, K.SEGMENT_ROWS)
        self.phi = np.empty((rows, k))
        self.new_labels = np.empty(block_size, dtype=np.int64)

    @property
    def round(self) -> int:
        """The ledger's current round (the parties' count)."""
        return self.parties.round

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
        if self.ledger is None and len(self.parties) == 1:
            moved, ranges = self.parties.sweep_in_one_kernel(rho, fair_scale, self.block_size,
                                                             tol, self.labels)
            self.counts[:] = np.bincount(self.labels, minlength=self.k)
            return moved, ranges
        return self._federated_sweep(tol, float(rho), float(fair_scale))

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
                self.parties.next_round()
                if made_at != version:
                    n_moves = self._evaluate(lo, hi, block_lo, tentative, tol, rho, fair_scale)
                if n_moves == 0:
                    continue
                if n_moves > 1:
                    change = 0.0
                    for part in self.parties.changes(lo, hi, new_labels, offset, rho,
                                                     fair_scale):
                        change += part  # summed in party order
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
        return n_moves


def run_bcd(server: SweepServer, parties: _Parties,
            max_iter: int) -> tuple[np.ndarray, int, int]:
    """BCDKM / DisBCDKM sweeps ([F3KM] Alg. 2/3 lines 4-9) until a sweep moves no row or
    ``max_iter``.

    Returns ``(objective history, sweeps run, ranges evaluated)``.
    """
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


class F3KMServer:
    """The server role of DisBCDKM ([F3KM] Alg. 3) and F3KM ([F3KM] Alg. 4) over parties playing
    :class:`~fedcore.algorithms.f3km.party.F3KMParty` (parameters validated by
    :class:`~fedcore.algorithms.f3km.cdkm.BCDKM` / :class:`~fedcore.algorithms.f3km.fair.FairKMeans`
    or the Flower server).

    :meth:`run` sets the parties up (settings down, shapes up; not counted), seeds by vertical
    k-means++ ([F3KM] Alg. 3/4 line 1, :func:`vertical_kmeans_plusplus`: one round per center),
    sends the initial labels (one round), runs the sweeps (:func:`run_bcd`) or the ADMM
    (:func:`run_admm`) and collects each party's block of the centers (not counted).

    Parameters
    ----------
    n_clusters, block_size ("auto" or int), max_iter : as the estimators'
    rng : numpy.random.Generator, the seeding's stream
    fair : bool, F3KM (else DisBCDKM); ``delta``, ``rho``, ``rho_schedule``, ``violation``,
        ``tol``, ``stop``, ``alpha``, ``beta`` as
        :class:`~fedcore.algorithms.f3km.fair.FairKMeans`'s
    keep_ledger : bool, whether the result reports the channel's ledger (False: a single-machine
        fit, whose only party runs whole sweeps in one kernel)
    """

    def __init__(self, n_clusters: int, block_size: int | str, max_iter: int,
                 rng: np.random.Generator, *, fair: bool = False, delta: float = 0.2,
                 rho: float = 1.0, rho_schedule: Literal["sqrt", "constant"] = "sqrt",
                 violation: float = 1.0, tol: float = 1e-4,
                 stop: Literal["fedcore", "paper"] = "fedcore", alpha: ArrayLike | None = None,
                 beta: ArrayLike | None = None, keep_ledger: bool = True) -> None:
        self.n_clusters, self.block_size, self.max_iter = n_clusters, block_size, max_iter
        self.rng, self.fair, self.delta = rng, fair, delta
        self.admm = {"rho": rho, "rho_schedule": rho_schedule, "violation": violation,
                     "tol": tol, "stop": stop}
        self.alpha, self.beta, self.keep_ledger = alpha, beta, keep_ledger
        self.parties: ChannelParties | None = None

    def run(self, channel: Channel,
            initial: tuple[np.ndarray, np.ndarray] | None = None) -> dict[str, Any]:
        """The fit over ``channel``: a dict with ``labels``, ``centers``, ``inertia``, ``n_iter``,
        ``objective_history``, ``n_ranges``, ``block_size``, ``dtype``, ``comm`` (the channel's
        ledger, or None) and ``center_blocks``; F3KM adds ``balance``, ``violation``,
        ``violation_history``, ``alpha`` and ``beta``.

        ``initial``: ``(labels, seed rows)`` of a seeding made elsewhere (the single-machine
        fit seeds on its rows); None seeds by vertical k-means++ over the channel.
        """
        k = self.n_clusters
        parties = self.parties = ChannelParties(channel)
        infos = parties.setup(k, self.fair, self.delta)
        n = parties.n_samples
        check_n_clusters(k, n)
        nb = resolve_block_size(self.block_size, n)
        if self.fair:
            sizes = [info.n_groups for info in infos]
            check_has_groups(sum(sizes))
            parties.bounds = split_bounds(self.alpha, self.beta, sizes)
        total_sumsq = sum(info.total_sumsq for info in infos)
        if initial is None:
            rows, labels = vertical_kmeans_plusplus(n, k, self.rng, parties.distances)
        else:
            labels, rows = initial
        ledger = channel.ledger if self.keep_ledger else None
        server = SweepServer(parties, labels, k, nb, total_sumsq, ledger)
        if self.fair:
            a = self.admm
            history, viol_hist, n_iter, ranges = run_admm(
                server, parties, a["rho"], a["rho_schedule"], a["violation"], a["tol"],
                self.max_iter, a["stop"])
        else:
            history, n_iter, ranges = run_bcd(server, parties, self.max_iter)
        closing = parties.close(rows)
        centers, inertia = join_blocks([c.centers for c in closing], [c.sse for c in closing])
        result = {"labels": labels, "centers": centers, "inertia": inertia, "n_iter": n_iter,
                  "objective_history": history, "n_ranges": ranges, "comm": ledger,
                  "block_size": nb, "dtype": np.dtype(infos[0].dtype),
                  "center_blocks": [c.centers for c in closing]}
        if self.fair:
            result.update({"balance": combine_balance([c.balance if c.balance.size else None
                                                       for c in closing], k),
                           "violation": float(viol_hist[-1]), "violation_history": viol_hist,
                           "alpha": np.concatenate([c.alpha for c in closing]),
                           "beta": np.concatenate([c.beta for c in closing])})
        return result
