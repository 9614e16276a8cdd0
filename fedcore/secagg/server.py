"""SCMA server: sum the masked messages and decode the aggregate exactly (Alg. 2 line 3)."""
from collections.abc import Mapping

import numpy as np
from numba.typed import List as TypedList

from .._validation import check_int
from ..kernels.field.arithmetic import batch_inverse, mul_into, sub_into, sum_messages
from ..kernels.field.reed_solomon import (berlekamp_massey, find_roots, forney_magnitudes, power_sums,
                                    solve_transposed_vandermonde)
from ._errors import SCMADecodeError
from .setup import SCMASetup

__all__ = ["SCMAServer"]

_STACK_LIMIT = 1 << 20  # message entries per round up to which messages are stacked


class SCMAServer:
    """The SCMA server: adds the clients' messages and decodes the sum of their vectors.

    Parameters
    ----------
    setup : SCMASetup
        Public parameters; the server never uses the pairwise seeds, so ``setup.public()`` (a
        copy without them) is enough.

    Notes
    -----
    Decoding a shard (Alg. 2 line 3, Appendix J):

    1. Berlekamp-Massey on the 2 t_s count syndromes gives the locator Lambda of linear
       complexity L; L > t_s means more nonzero bins than the capacity.
    2. The roots of x**L Lambda(1/x) are the points X_j; the polynomial must split into L
       distinct roots in F_p.
    3. Forney's formula gives the counts q_j, cross-checked against the Bjorck-Pereyra solution
       of the Vandermonde system; each count must lie in [1, max_count].
    4. The c check syndromes S_{2t_s+1..2t_s+c} must equal those of the decoded vector.
    5. In direct index spaces X_j - 1 must be a bin; in hashed ones the coordinate channels are
       solved for q_j u_jk with the known points (Vandermonde), divided by q_j, unpacked, and
       must hash back to X_j. With shards, every X_j must belong to its shard.

    Within capacity the decoded vector is the exact sum (the syndromes determine it uniquely,
    Appendix J). Otherwise an :class:`SCMADecodeError` is raised; a wrong vector passes every
    check only with probability about ``setup.false_accept_bound`` = G (t_s / p)**c or less.

    Examples
    --------
    The example of Fig. 2 of the MUFC paper: K = 2 clusters per client, L = 2 clients, B**d = 4
    quantisation bins, n = 12 points, p = 13. The clients send 2KL = 8 syndromes each.

    >>> from fedcore.secagg import SCMASetup, SCMAClient, SCMAServer
    >>> setup = SCMASetup(n_clients=2, capacity=4, prime=13, index_space=4,
    ...                   check_syndromes=0, max_count=12, random_state=0)
    >>> setup.message_length, setup.bits_per_element
    (8, 4)
    >>> client_1, client_2 = SCMAClient(0, setup), SCMAClient(1, setup)
    >>> m1 = client_1.encode([0, 2], [3, 2], round=0)   # q(1) = (3, 0, 2, 0)
    >>> m2 = client_2.encode([1, 2], [4, 3], round=0)   # q(2) = (0, 4, 3, 0)
    >>> bool(m1.max() < 13 and m2.max() < 13)           # masked: uniform on F_13
    True
    >>> indices, counts = SCMAServer(setup).decode([m1, m2], round=0)
    >>> indices.tolist(), counts.tolist()                # q = q(1) + q(2) = (3, 4, 5, 0)
    ([0, 1, 2], [3, 4, 5])
    """

    def __init__(self, setup):
        if not isinstance(setup, SCMASetup):
            raise TypeError(f"Argument 'setup' must be an SCMASetup, got {type(setup).__name__}")
        self.setup = setup

    # ------------------------------------------------------------------ aggregation
    def _collect(self, messages, participants, round):
        if isinstance(messages, Mapping):
            if messages.keys() != set(participants):  # participants are valid ids already
                self._check_senders(messages, participants, round)
            items = [(k, messages[k]) for k in participants]
        else:
            messages = list(messages)
            if len(messages) != len(participants):
                raise ValueError(f"Argument 'messages' must hold one message per participant "
                                 f"({len(participants)}: {list(participants)}), got "
                                 f"{len(messages)}; pass a dict {{client_id: message}} to "
                                 "name them")
            items = list(zip(participants, messages))
        arrays = [self._message_array(cid, msg) for cid, msg in items]
        if len({a.dtype for a in arrays}) > 1:  # one dtype for the sum; uint64 >= 2**63 wraps
            arrays = [a.astype(np.int64) for a in arrays]  # to negatives, refused by the sum
        return self._sum(arrays, [cid for cid, _ in items])

    def _check_senders(self, messages, participants, round):
        """Raise the error naming what is wrong with the ids of a dict of messages."""
        keys = {check_int(k, "messages", min_value=0, max_value=self.setup.n_clients - 1)
                for k in messages}
        missing = sorted(set(participants) - keys)
        extra = sorted(keys - set(participants))
        if missing:
            raise ValueError(f"Argument 'messages' lacks the messages of participant(s) "
                             f"{missing} for round {round}; clients that dropped out must be "
                             "left out of 'participants' and the survivors must encode a new "
                             "round with that participant set")
        if extra:
            raise ValueError(f"Argument 'messages' has messages from client(s) {extra} that "
                             f"are not participants of round {round} ({list(participants)})")

    def _message_array(self, cid, msg):
        """Client ``cid``'s message as a contiguous 1-D int64 or uint64 array (no copy when it is
        one already); shape and dtype checked."""
        arr = np.asarray(msg)
        if arr.shape != (self.setup.message_length,):
            raise ValueError(f"The message of client {cid} must have shape "
                             f"({self.setup.message_length},), got {arr.shape}")
        if arr.dtype.kind not in "iu":
            raise TypeError(f"The message of client {cid} must hold integers, got dtype "
                            f"{arr.dtype}")
        if arr.dtype in (np.int64, np.uint64) and arr.flags.c_contiguous:
            return arr
        return np.ascontiguousarray(arr, dtype=np.int64)

    def _sum(self, arrays, senders):
        """Sum mod p of the messages (1-D int64 or uint64 arrays of one dtype); every entry must
        lie in [0, p). Small rounds are stacked (one copy, cheaper than a typed list); large ones
        are read in place."""
        total = np.empty(self.setup.message_length, dtype=np.int64)
        small = len(arrays) * self.setup.message_length <= _STACK_LIMIT
        bad = sum_messages(np.array(arrays) if small else TypedList(arrays), self.setup.prime,
                           total)
        if bad >= 0:
            raise ValueError(f"The message of client {senders[bad]} has entries outside "
                             f"[0, {self.setup.prime})")
        return total

    def aggregate(self, messages, *, round, participants=None, ledger=None):
        """Sum of the participants' messages mod p (the unmasked syndromes of the sum), int64."""
        s = self.setup
        round = check_int(round, "round", min_value=0)
        participants = s.check_participants(participants)
        total = self._collect(messages, participants, round)
        if ledger is not None:
            for cid in participants:
                s.record_message(ledger, round, cid)
        return total

    # ------------------------------------------------------------------ decoding
    def decode(self, messages, *, round, participants=None, ledger=None):
        """Decode the exact sum of the participants' vectors.

        Parameters
        ----------
        messages : mapping {client_id: message} or sequence of messages
            One message (from ``SCMAClient.encode``) per participant; a sequence is matched to
            the participants in increasing id order.
        round : int
            The round the messages were encoded for (used in errors and the ledger).
        participants : sequence of int, optional
            The participant set the clients encoded with (default all clients).
        ledger : CommLedger, optional
            If given, every received message is recorded in it.

        Returns
        -------
        bins : ndarray of shape (m,) or (m, n_dims), int64
            Nonzero bins of the sum, sorted (lexicographically for coordinates).
        counts : ndarray of shape (m,), int64
            Their counts, in [1, max_count].

        Raises
        ------
        SCMADecodeError
            If the sum cannot be decoded exactly (see the class notes); never a wrong sum.
        ValueError, TypeError
            For missing, extra or malformed messages.
        """
        total = self.aggregate(messages, round=round, participants=participants, ledger=ledger)
        return self.decode_sum(total, round=round)

    def decode_sum(self, total, *, round=0):
        """Decode an aggregate (the output of ``aggregate``); see ``decode``."""
        s = self.setup
        total = np.asarray(total, dtype=np.int64)
        if total.shape != (s.message_length,):
            raise ValueError(f"Argument 'total' must have shape ({s.message_length},), got "
                             f"{total.shape}")
        return self._decode_shards(total, lambda block, shard: self._decode_shard(
            block, shard, round))

    def _decode_shards(self, vector, decode_one):
        """Decode ``vector`` shard by shard with ``decode_one(block, shard) -> (bins, counts,
        points)``; returns all bins and counts in the setup's canonical order."""
        s = self.setup
        parts = [decode_one(vector[shard * s.shard_length:(shard + 1) * s.shard_length], shard)
                 for shard in range(s.n_shards)]
        bins = np.concatenate([b for b, _, _ in parts], axis=0)
        counts = np.concatenate([c for _, c, _ in parts])
        order = s.sort_order(bins, np.concatenate([x for _, _, x in parts]))
        return bins[order], counts[order]

    def decode_change(self, total, previous_total, *, max_changes, round=0):
        """Decode the change between two aggregates: the few bins whose count changed.

        The difference of two rounds' aggregates (``aggregate`` outputs; masks cancel in each) is
        the syndrome vector of ``q' - q``, which is sparse when the sum changed little (one bin for
        a point removed from a client, at most 2 K' when a client re-seeds). Berlekamp-Massey then
        needs only the first ``2 * max_changes`` syndromes of each shard, so this costs
        O(max_changes * message rows) instead of a full decode. The decoded change must reproduce
        every count syndrome and check syndrome of the difference (so it is the unique sparse
        solution, Appendix J), and in hashed spaces its coordinates must hash back to its points.

        Parameters
        ----------
        total, previous_total : ndarray of shape (setup.message_length,)
            Aggregates (``aggregate``) of two rounds, for any participant sets.
        max_changes : int
            Largest number of changed bins per shard to look for.

        Returns
        -------
        bins : ndarray of shape (m,) or (m, n_dims), int64, sorted
        changes : ndarray of shape (m,), int64, nonzero signed count changes (residues above
            p / 2 are negative)

        Raises
        ------
        SCMADecodeError
            If the change is not sparse enough or is inconsistent; decode the full sum instead.
        """
        s = self.setup
        max_changes = check_int(max_changes, "max_changes", min_value=1)
        total = np.asarray(total, dtype=np.int64)
        previous_total = np.asarray(previous_total, dtype=np.int64)
        for name, arr in (("total", total), ("previous_total", previous_total)):
            if arr.shape != (s.message_length,):
                raise ValueError(f"Argument {name!r} must have shape ({s.message_length},), got "
                                 f"{arr.shape}")
        delta = total.copy()
        sub_into(delta, previous_total, s.prime)
        limit = min(max_changes, s.shard_capacity)
        bins, counts = self._decode_shards(delta, lambda block, shard: self._decode_shard_change(
            block, shard, round, limit))
        return bins, np.where(counts > s.prime // 2, counts - s.prime, counts)

    def _decode_shard_change(self, block, shard, round, m):
        s = self.setup
        p = s.prime
        syn = np.ascontiguousarray(block[:s.count_length])
        lam = np.zeros(2 * m + 1, dtype=np.int64)
        L = berlekamp_massey(syn[:2 * m].copy(), lam, p)
        if L > m:
            raise self._fail(shard, round, f"the change has more than {m} bins")
        if L == 0:
            if syn.any():
                raise self._fail(shard, round, "the change is not sparse (zero locator, nonzero "
                                 "syndromes)")
            return self._empty()
        points = np.zeros(L, dtype=np.int64)
        if lam[L] == 0 or find_roots(lam[:L + 1][::-1].copy(), points, 0x5CA7 + shard, p) != L:
            raise self._fail(shard, round, "the locator of the change does not split")
        counts = np.zeros(L, dtype=np.int64)
        if forney_magnitudes(syn, lam, L, points, counts, p) >= 0 or not counts.all():
            raise self._fail(shard, round, "Forney's formula met a repeated or zero root")
        again = np.zeros((1, s.count_length), dtype=np.int64)
        power_sums(points, counts.reshape(1, L), 0, again, p)
        if not np.array_equal(again[0], syn):
            raise self._fail(shard, round, "the decoded change does not reproduce the syndromes")
        if s.hashed:
            bins = self._coordinates(block, points, counts, shard, round)
        else:
            bins, ok = s.bins_of_points(points)
            if not ok.all():
                raise self._fail(shard, round, "a changed point is not a bin of the index space")
        if s.n_shards > 1 and (s.shard_of(points) != shard).any():
            raise self._fail(shard, round, "a changed point does not belong to this shard")
        return bins, counts, points

    def _fail(self, shard, round, reason):
        where = f"shard {shard} of {self.setup.n_shards}, " if self.setup.n_shards > 1 else ""
        return SCMADecodeError(f"SCMA decoding failed ({where}round {round}): {reason}")

    def _empty(self):
        s = self.setup
        shape = (0, s.n_dims) if s.coordinates else (0,)
        return np.zeros(shape, dtype=np.int64), np.zeros(0, dtype=np.int64), \
            np.zeros(0, dtype=np.int64)

    def _decode_shard(self, block, shard, round):
        s = self.setup
        p, t_s, c = s.prime, s.shard_capacity, s.check_syndromes
        syn = np.ascontiguousarray(block[:s.count_length])
        lam = np.zeros(2 * t_s + 1, dtype=np.int64)
        L = berlekamp_massey(syn[:2 * t_s].copy(), lam, p)  # Alg. 2 line 3: locator g(x)
        if L > t_s:
            raise self._fail(shard, round, f"the sum has more than {t_s} nonzero bins in this "
                             f"shard (linear complexity {L} of the syndromes); increase the "
                             "capacity" + (" or re-key the shards" if s.n_shards > 1 else ""))
        if L == 0:
            if syn.any():
                raise self._fail(shard, round, "the syndromes of an empty sum are not all zero")
            return self._empty()
        if lam[L] == 0:
            raise self._fail(shard, round, "the locator polynomial has degree below its linear "
                             "complexity (inconsistent syndromes)")
        points = np.zeros(L, dtype=np.int64)
        n_roots = find_roots(lam[:L + 1][::-1].copy(), points, 0x5CA7 + shard, p)
        if n_roots != L:
            raise self._fail(shard, round, f"the locator of degree {L} does not split into {L} "
                             "distinct roots in F_p (more nonzero bins than the capacity, or "
                             "corrupted messages)")
        counts = np.zeros(L, dtype=np.int64)
        if forney_magnitudes(syn, lam, L, points, counts, p) >= 0:
            raise self._fail(shard, round, "Forney's formula met a repeated or zero root")
        check = syn[:L].reshape(L, 1).copy()
        if solve_transposed_vandermonde(points, check, p) >= 0 or \
                not np.array_equal(check[:, 0], counts):
            raise self._fail(shard, round, "the Vandermonde solution disagrees with Forney's "
                             "formula")
        bad = (counts < 1) | (counts > s.max_count)
        if bad.any():
            raise self._fail(shard, round, f"decoded count {int(counts[bad][0])} lies outside "
                             f"[1, max_count={s.max_count}]")
        if c:
            again = np.zeros((1, c), dtype=np.int64)
            power_sums(points, counts.reshape(1, L), 2 * t_s, again, p)
            if not np.array_equal(again[0], syn[2 * t_s:]):
                raise self._fail(shard, round, "the check syndromes do not match the decoded "
                                 "vector (more nonzero bins than the capacity, or corrupted "
                                 "messages)")
        if s.hashed:
            bins = self._coordinates(block, points, counts, shard, round)
        else:
            bins, ok = s.bins_of_points(points)
            if not ok.all():
                raise self._fail(shard, round, f"decoded point {int(points[~ok][0])} is not a bin "
                                 f"of the index space (bins 0..{s.space_size - 1} are points "
                                 f"1..{s.space_size})")
        if s.n_shards > 1 and (s.shard_of(points) != shard).any():
            raise self._fail(shard, round, "a decoded point does not belong to this shard")
        return bins, counts, points

    def _coordinates(self, block, points, counts, shard, round):
        """Coordinates from the chunk channels: y_jk = q_j u_jk by Vandermonde, then u = y / q."""
        s = self.setup
        p, t_s, L = s.prime, s.shard_capacity, points.shape[0]
        chan = block[s.count_length:s.shard_length].reshape(s.n_chunks, t_s)
        y = np.ascontiguousarray(chan[:, :L].T)  # (L, n_chunks): first L syndromes per channel
        if solve_transposed_vandermonde(points, y, p) >= 0:
            raise self._fail(shard, round, "repeated points in the coordinate channels")
        inv_q = np.empty(L, dtype=np.int64)
        batch_inverse(counts, inv_q, p)
        mul_into(y, np.repeat(inv_q, s.n_chunks).reshape(L, s.n_chunks), p)
        bins, ok = s.unpack(y)
        if not ok.all():
            raise self._fail(shard, round, "a decoded coordinate is out of range (a hash "
                             "collision between bins of different clients, or corrupted "
                             "messages); retry with SCMASetup.rekeyed()")
        if not np.array_equal(s.hash_chunks(y), points):
            raise self._fail(shard, round, "a decoded bin does not hash to its point (a hash "
                             "collision between bins of different clients, or corrupted "
                             "messages); retry with SCMASetup.rekeyed()")
        return bins

    def __repr__(self):
        return f"SCMAServer(setup={self.setup!r})"
