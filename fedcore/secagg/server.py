"""SCMA server: sum the masked messages and decode the aggregate exactly ([MUFC] Alg. 2 line 3)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PublicKey
from numba.typed import List as TypedList
from numpy.typing import ArrayLike

from .._validation import check_int
from ..federation import CommLedger
from ..kernels.field.arithmetic import batch_inverse, mul_into, sub_into, sum_messages
from ..kernels.field.reed_solomon import (berlekamp_massey, find_roots, forney_magnitudes,
                                          power_sums, solve_transposed_vandermonde)
from . import _keys, _shamir, _streams
from ._errors import SCMADecodeError, SCMAMessageError
from .setup import SCMASetup, _splitmix64

__all__ = ["SCMAServer"]

_STACK_LIMIT = 1 << 20  # message entries per round up to which messages are stacked
_FINGERPRINT_BITS = 96  # entropy of the elements a fingerprint reads (masked: uniform)


class SCMAServer:
    """The SCMA server: adds the clients' messages and decodes the sum of their vectors.

    Parameters
    ----------
    setup : SCMASetup
        Public parameters; the server never uses client keys, so ``setup.public()`` (a copy
        without them) or ``SCMASetup.from_public_config`` is enough.

    Notes
    -----
    Before adding, the server checks every message ([SecAgg]-style round binding): the header of
    an :class:`~fedcore.secagg.SCMAMessage` must name this setup, this round, the sender it is
    given for and the round's participants; no sender may appear twice; no message may repeat
    another one or one already received in an earlier round (when a round has at least two
    participants, masked messages are uniform, so equal leading elements mean a copy); and a
    round is aggregated at most once per server. Refusals raise :class:`SCMAMessageError` naming
    the client and the mismatch. Bare arrays (no header) pass the header checks, but their masks
    bind them to the setup, round and sender all the same: a misplaced message makes the decode
    fail, it never yields a sum.

    Dropout tolerance (``setup.dropout_threshold`` = t): when clients agreed the masks of a round
    but some never sent their message, ``decode(..., participants=P, dropped=D,
    unmask_shares=...)`` takes the survivors' Shamir shares of the dropped clients' round keys,
    rebuilds each key from t of them (checked against its public key), recomputes the dropped
    clients' pair streams with every survivor and subtracts them, so the round completes with
    the exact sum of the survivors' vectors. At most |P| - t participants may drop.

    Decoding a shard (Alg. 2 line 3, Appendix J):

    1. Berlekamp-Massey on the 2 t_s count syndromes gives the locator Lambda of linear
       complexity L; L > t_s means more nonzero bins than the capacity.
    2. The roots of x**L Lambda(1/x) are the points X_j; the polynomial must split into L
       distinct roots in F_p.
    3. Forney's formula gives the counts q_j, cross-checked against the Bjorck-Pereyra solution
       of the Vandermonde system; each count must lie in [1, n_senders * max_count].
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
    ...                   check_syndromes=0, max_count=6, random_state=0)
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

    def __init__(self, setup: SCMASetup) -> None:
        if not isinstance(setup, SCMASetup):
            raise TypeError(f"Argument 'setup' must be an SCMASetup, got {type(setup).__name__}")
        self.setup = setup
        self._aggregated_rounds = set()
        # 64-bit fingerprints of the masked messages received (sorted), with (round, client)
        self._seen = np.zeros(0, dtype=np.uint64)
        self._seen_from = np.zeros((0, 2), dtype=np.int64)

    def round_state(self) -> list[tuple[object, tuple[str, ...], tuple[str, ...]]]:
        """What aggregating a round changes in this server: its aggregated rounds and the
        messages it has seen (replay checks).

        Returns ``[(object, deep, shallow)]``: the objects a round changes and the names of their
        attributes to restore, ``deep`` ones by copy, ``shallow`` ones by reference (see
        :func:`fedcore.algorithms.base.all_or_nothing`), for a caller that must undo a failed
        round (MUFC's removals are transactions)."""
        return [(self, ("_aggregated_rounds", "_seen", "_seen_from"), ())]

    @property
    def aggregated_rounds(self) -> frozenset[int]:
        """The rounds this server has aggregated (each is refused a second time)."""
        return frozenset(self._aggregated_rounds)

    # ------------------------------------------------------------------ aggregation
    def _collect(self, messages, senders, participants, round):
        """Checked messages of the senders, summed mod p; returns (total, fingerprints)."""
        if not isinstance(messages, Mapping) and (
                isinstance(messages, (str, bytes)) or not hasattr(messages, "__iter__")):
            raise TypeError("Argument 'messages' must be a mapping {client_id: message} or a "
                            f"sequence of messages, got {type(messages).__name__}")
        if isinstance(messages, Mapping):
            if messages.keys() != set(senders):  # senders are valid ids already
                self._check_senders(messages, senders, participants, round)
            items = [(k, messages[k]) for k in senders]
        else:
            messages = list(messages)
            self._check_duplicate_headers(messages, round)
            if len(messages) != len(senders):
                raise ValueError(f"Argument 'messages' must hold one message per participant "
                                 f"that sent ({len(senders)}: {list(senders)}), got "
                                 f"{len(messages)}; "
                                 "pass a dict {client_id: message} to name them")
            items = list(zip(senders, messages))
        arrays = [self._message_array(cid, msg) for cid, msg in items]
        for cid, msg in items:
            self._check_header(cid, msg, round, participants)
        prints = self._check_repeats(arrays, [cid for cid, _ in items], round, participants)
        if len({a.dtype for a in arrays}) > 1:  # one dtype for the sum; uint64 >= 2**63 wraps
            arrays = [a.astype(np.int64) for a in arrays]  # to negatives, refused by the sum
        return self._sum(arrays, [cid for cid, _ in items]), prints

    def _check_senders(self, messages, senders, participants, round):
        """Raise the error naming what is wrong with the ids of a dict of messages."""
        keys = {check_int(k, "messages", min_value=0, max_value=self.setup.n_clients - 1)
                for k in messages}
        missing = sorted(set(senders) - keys)
        extra = sorted(keys - set(senders))
        if missing:
            how = ("name them in 'dropped' with the survivors' 'unmask_shares'"
                   if self.setup.dropout_threshold is not None else
                   "clients that dropped out must be left out of 'participants' and the "
                   "survivors must encode a new round with that participant set (or use a setup "
                   "with dropout_threshold)")
            raise ValueError(f"Argument 'messages' lacks the messages of participant(s) "
                             f"{missing} for round {round}; {how}")
        if extra:
            what = "are named in 'dropped'" if set(extra) <= set(participants) else \
                "are not participants"
            raise ValueError(f"Argument 'messages' has messages from client(s) {extra} that "
                             f"{what} of round {round} ({list(participants)})")

    @staticmethod
    def _header(msg):
        header = getattr(msg, "_header", None)
        return header if isinstance(header, dict) else None

    def _check_duplicate_headers(self, messages, round):
        seen = {}
        for i, msg in enumerate(messages):
            header = self._header(msg)
            if header is None:
                continue
            cid = header["client_id"]
            if cid in seen:
                raise SCMAMessageError(f"Client {cid} sent more than one message (messages "
                                       f"{seen[cid]} and {i} of round {round}); a sender counts "
                                       "once")
            seen[cid] = i

    def _check_header(self, cid, msg, round, participants):
        header = self._header(msg)
        if header is None:
            return
        s = self.setup
        if header["setup_id"] != s.setup_id:
            raise SCMAMessageError(f"The message of client {cid} belongs to another SCMA setup "
                                   f"(setup_id {header['setup_id']}; this server decodes setup "
                                   f"{s.setup_id}); its masks cannot cancel here")
        if header["round"] != round:
            raise SCMAMessageError(f"The message of client {cid} was encoded for round "
                                   f"{header['round']}, not round {round} (a stale, replayed or "
                                   "misrouted message)")
        if header["client_id"] != cid:
            raise SCMAMessageError(f"The message given for client {cid} was encoded by client "
                                   f"{header['client_id']}")
        if tuple(header["participants"]) != tuple(participants):
            raise SCMAMessageError(f"Client {cid} encoded round {round} for participants "
                                   f"{list(header['participants'])}, not {list(participants)}; "
                                   "the masks cancel only over the set they were made for")

    def _fingerprint_length(self):
        """Leading elements a fingerprint reads: enough for 96 bits of a uniform message, or 0
        when the whole message holds fewer (then equal messages are not rare enough to mean a
        copy, and no fingerprint is taken)."""
        s = self.setup
        k = int(np.ceil(_FINGERPRINT_BITS / np.log2(s.prime)))
        return k if k <= s.message_length else 0

    @staticmethod
    def _fingerprints(arrays, k):
        """64-bit fingerprint of each message: SplitMix64 chain over its first k elements."""
        heads = np.array([a[:k] for a in arrays])
        h = np.zeros(len(arrays), dtype=np.uint64)
        with np.errstate(over="ignore"):
            for col in heads.astype(np.uint64).T:
                h = _splitmix64(h ^ col)
        return h

    def _check_repeats(self, arrays, senders, round, participants):
        """Refuse a message equal to another of the round or to one of an earlier round.

        Only rounds with two or more participants are checked: their messages are masked, hence
        uniform, and equal fingerprints of 96 bits or more of them mean a copy (false alarm about
        2**-64 per pair of messages). Fields and messages too small for 96 bits are not checked
        (their headers still are)."""
        k = self._fingerprint_length()
        if len(participants) < 2 or not arrays or not k:
            return None
        prints = self._fingerprints(arrays, k)
        order = np.argsort(prints, kind="stable")
        same = np.flatnonzero(prints[order][1:] == prints[order][:-1])
        if same.size:
            i, j = sorted((int(order[same[0]]), int(order[same[0] + 1])))
            raise SCMAMessageError(f"The messages of clients {senders[i]} and {senders[j]} for "
                                   f"round {round} are identical (a duplicated message)")
        at = np.minimum(np.searchsorted(self._seen, prints), max(self._seen.shape[0] - 1, 0))
        old = np.flatnonzero(self._seen[at] == prints) if self._seen.size else at[:0]
        if old.size:
            i = int(old[0])
            r0, c0 = self._seen_from[at[i]]
            raise SCMAMessageError(f"The message of client {senders[i]} for round {round} "
                                   f"replays a message received in round {r0} (from client "
                                   f"{c0})")
        return prints, np.array([(round, c) for c in senders], dtype=np.int64)

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
        if not arrays:
            total[:] = 0
            return total
        small = len(arrays) * self.setup.message_length <= _STACK_LIMIT
        bad = sum_messages(np.array(arrays) if small else TypedList(arrays), self.setup.prime,
                           total)
        if bad >= 0:
            raise ValueError(f"The message of client {senders[bad]} has entries outside "
                             f"[0, {self.setup.prime})")
        return total

    def _check_dropped(self, dropped, participants, round):
        if dropped is None:
            return ()
        if isinstance(dropped, (str, bytes)) or not hasattr(dropped, "__iter__"):
            raise TypeError("Argument 'dropped' must be a sequence of client ids, got "
                            f"{type(dropped).__name__}")
        s = self.setup
        out = tuple(sorted({check_int(c, "dropped", min_value=0, max_value=s.n_clients - 1)
                            for c in dropped}))
        if not out:
            return ()
        outside = [c for c in out if c not in participants]
        if outside:
            raise ValueError(f"Argument 'dropped' names client(s) {outside} that are not "
                             f"participants of round {round} ({list(participants)})")
        t = s.dropout_threshold
        if t is None:
            raise SCMADecodeError(f"Round {round}: client(s) {list(out)} dropped, but this setup "
                                  "has no dropout tolerance (dropout_threshold=None), so their "
                                  "masks cannot be removed; the remaining clients must encode a "
                                  "new round without them")
        alive = len(participants) - len(out)
        if alive < t:
            raise SCMADecodeError(f"Round {round}: {len(out)} of the {len(participants)} "
                                  f"participants dropped ({list(out)}); their masks can be "
                                  f"removed only if at least dropout_threshold={t} participants "
                                  f"survive, {alive} did (at most {len(participants) - t} may "
                                  "drop). The remaining clients must encode a new round.")
        return out

    def aggregate(self, messages: Mapping[int, ArrayLike] | Iterable[ArrayLike], *, round: int,
                  participants: Iterable[int] | None = None,
                  dropped: Iterable[int] | None = None,
                  unmask_shares: Mapping[int, Mapping[int, bytes]] | None = None,
                  public_keys: Mapping[int, X25519PublicKey | bytes] | None = None,
                  ledger: CommLedger | None = None) -> np.ndarray:
        """Sum of the senders' messages mod p with every mask removed (the syndromes of the sum
        of their vectors), int64. Arguments as in :meth:`decode`."""
        return self._aggregate(messages, round, participants, dropped, unmask_shares,
                               public_keys, ledger)[0]

    def _aggregate(self, messages, round, participants, dropped, unmask_shares, public_keys,
                   ledger):
        s = self.setup
        round = check_int(round, "round", min_value=0)
        participants = s.check_participants(participants)
        dropped = self._check_dropped(dropped, participants, round)
        senders = tuple(c for c in participants if c not in dropped) if dropped else participants
        if round in self._aggregated_rounds:
            raise SCMAMessageError(f"Round {round} was already aggregated by this server; a "
                                   "round is aggregated once (replayed messages are refused), "
                                   "so encode a new round")
        total, prints = self._collect(messages, senders, participants, round)
        if dropped:
            self._remove_dropped_masks(total, round, participants, senders, dropped,
                                       unmask_shares, public_keys, ledger)
        elif unmask_shares:
            raise ValueError("Argument 'unmask_shares' is given but no client is 'dropped'")
        self._aggregated_rounds.add(round)
        if prints is not None:
            order = np.argsort(prints[0], kind="stable")
            at = np.searchsorted(self._seen, prints[0][order])
            self._seen = np.insert(self._seen, at, prints[0][order])
            self._seen_from = np.insert(self._seen_from, at, prints[1][order], axis=0)
        if ledger is not None:
            for cid in senders:
                s.record_message(ledger, round, cid)
        return total, len(senders)

    # ------------------------------------------------------------------ dropout recovery
    def _round_public_keys(self, round, participants, public_keys):
        if public_keys is None:
            public_keys = self.setup._directory.get(round)
            if public_keys is None:
                raise ValueError(f"Argument 'public_keys' (the round-{round} public keys of the "
                                 "participants, as relayed to them) is needed to remove the "
                                 "dropped clients' masks")
        keys = {check_int(k, "public_keys", min_value=0, max_value=self.setup.n_clients - 1):
                _keys.public_key_bytes(v) for k, v in dict(public_keys).items()}
        missing = [c for c in participants if c not in keys]
        if missing:
            raise ValueError(f"Argument 'public_keys' lacks the round-{round} public key of "
                             f"client(s) {missing}")
        return keys

    def _collect_shares(self, unmask_shares, senders, dropped, round):
        """{dropped client: [(holder, share values)]} from {holder: {dropped client: share}}."""
        if not isinstance(unmask_shares, Mapping):
            raise TypeError("Argument 'unmask_shares' must map each answering survivor to "
                            "{dropped client: share}, got "
                            f"{type(unmask_shares).__name__}")
        out = {u: [] for u in dropped}
        for holder in sorted(unmask_shares, key=int):
            h = check_int(holder, "unmask_shares", min_value=0,
                          max_value=self.setup.n_clients - 1)
            if h not in senders:
                raise ValueError(f"Argument 'unmask_shares' holds shares from client {h}, which is "
                                 f"not a surviving participant of round {round}")
            given = unmask_shares[holder]
            if not isinstance(given, Mapping):
                raise TypeError(f"Argument 'unmask_shares': the shares of client {h} must be a "
                                "mapping {dropped client: share}")
            for u, share in given.items():
                u = check_int(u, "unmask_shares", min_value=0, max_value=self.setup.n_clients - 1)
                if u not in out:
                    raise ValueError(f"Argument 'unmask_shares': client {h} sent a share of "
                                     f"client {u}'s round key, but {u} is not dropped; shares of a "
                                     "live client's key are never used (they would unmask its "
                                     "message)")
                out[u].append((h, _shamir.share_values(share)))
        return out

    def _remove_dropped_masks(self, total, round, participants, senders, dropped, unmask_shares,
                              public_keys, ledger):
        """Rebuild the dropped clients' round keys from t shares each and subtract their pair
        streams with every survivor from ``total`` (in place)."""
        s = self.setup
        t = s.dropout_threshold
        if unmask_shares is None:
            raise ValueError(f"Argument 'unmask_shares' is needed: the survivors' shares of the "
                             f"round keys of the dropped client(s) {list(dropped)}")
        pks = self._round_public_keys(round, participants, public_keys)
        shares = self._collect_shares(unmask_shares, senders, dropped, round)
        private = {}
        for u in dropped:
            got = shares[u]
            if len(got) < t:
                raise SCMADecodeError(f"Round {round}: {len(got)} survivor(s) sent a share of "
                                      f"dropped client {u}'s round key; dropout_threshold={t} "
                                      "shares are needed to remove its masks")
            key = _shamir.reconstruct([h for h, _ in got[:t]], [v for _, v in got[:t]])
            if key is None or _keys.public_key_of(key) != pks[u]:
                raise SCMADecodeError(f"Round {round}: the shares of dropped client {u}'s round "
                                      "key do not rebuild the key of its public key (a corrupted "
                                      "or misattributed share)")
            private[u] = _keys.private_key_object(key)
        pairs, keys, plus, minus = [], [], [], []
        for u in dropped:
            for v in senders:
                a, b = min(u, v), max(u, v)
                pairs.append((a, b))
                secret = _keys.shared_secret(private[u], pks[v])
                keys.append(_keys.mask_key(secret, s.setup_id, a, b, round))
                plus.append(0 if v == a else -1)   # survivor v added the stream when v < u
                minus.append(0 if v == b else -1)  # and subtracted it when v > u
        correction = np.zeros((1, s.message_length), dtype=np.int64)
        _streams.zero_sum_masks(pairs, keys, round, s.message_length, s.prime,
                                np.array(plus, dtype=np.int64), np.array(minus, dtype=np.int64),
                                correction)
        sub_into(total, correction[0], s.prime)
        if ledger is not None:
            for holder, given in unmask_shares.items():
                ledger.record(round, sender=int(holder), receiver="server",
                              kind="scma_unmask_shares",
                              n_elements=_shamir.N_CHUNKS * len(given),
                              bits_per_element=_shamir.SHARE_PRIME.bit_length())

    # ------------------------------------------------------------------ decoding
    def decode(self, messages: Mapping[int, ArrayLike] | Iterable[ArrayLike], *, round: int,
               participants: Iterable[int] | None = None,
               dropped: Iterable[int] | None = None,
               unmask_shares: Mapping[int, Mapping[int, bytes]] | None = None,
               public_keys: Mapping[int, X25519PublicKey | bytes] | None = None,
               ledger: CommLedger | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Decode the exact sum of the senders' vectors.

        Parameters
        ----------
        messages : mapping {client_id: message} or sequence of messages
            One message (from ``SCMAClient.encode``) per participant that sent (all participants
            but the ``dropped`` ones); a sequence is matched to them in increasing id order.
        round : int
            The round the messages were encoded for. A server aggregates each round once.
        participants : sequence of int, optional
            The participant set the clients encoded with (default all clients).
        dropped : sequence of int, optional
            Participants whose messages never arrived after the round's masks were agreed
            (dropout tolerance only; at most ``len(participants) - setup.dropout_threshold``).
        unmask_shares : mapping {survivor: {dropped client: share}}, optional
            The survivors' answers to ``SCMAClient.reveal_key_shares(round, dropped)``; at least
            ``setup.dropout_threshold`` shares per dropped client.
        public_keys : mapping {client: 32-byte X25519 public key}, optional
            The round public keys of the participants (as relayed in the round); default: the
            setup's directory (in-process simulation).
        ledger : CommLedger, optional
            If given, every received message (and unmask shares) is recorded in it.

        Returns
        -------
        bins : ndarray of shape (m,) or (m, n_dims), int64
            Nonzero bins of the sum, sorted (lexicographically for coordinates).
        counts : ndarray of shape (m,), int64
            Their counts, in [1, n_senders * max_count].

        Raises
        ------
        SCMADecodeError
            If the sum cannot be decoded exactly (see the class notes), or more participants
            dropped than the threshold allows; never a wrong sum.
        SCMAMessageError
            (a subclass) for a message of another setup, round, sender or participant set, a
            duplicated or replayed message, or a round aggregated before.
        ValueError, TypeError
            For missing, extra or malformed messages or shares.
        """
        total, n_senders = self._aggregate(messages, round, participants, dropped,
                                           unmask_shares, public_keys, ledger)
        return self.decode_sum(total, round=round, n_senders=n_senders)

    def decode_sum(self, total: ArrayLike, *, round: int = 0,
                   n_senders: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Decode an aggregate (the output of ``aggregate``); see ``decode``. Decoded counts must
        lie in [1, n_senders * max_count] (default n_senders: ``setup.n_clients``)."""
        s = self.setup
        total = np.asarray(total, dtype=np.int64)
        if total.shape != (s.message_length,):
            raise ValueError(f"Argument 'total' must have shape ({s.message_length},), got "
                             f"{total.shape}")
        n_senders = s.n_clients if n_senders is None else check_int(
            n_senders, "n_senders", min_value=1, max_value=s.n_clients)
        bound = n_senders * s.max_count
        return self._decode_shards(total, lambda block, shard: self._decode_shard(
            block, shard, round, bound))

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

    def decode_change(self, total: ArrayLike, previous_total: ArrayLike, *, max_changes: int,
                      round: int = 0) -> tuple[np.ndarray, np.ndarray]:
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

    def _decode_shard(self, block, shard, round, bound):
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
        bad = (counts < 1) | (counts > bound)
        if bad.any():
            raise self._fail(shard, round, f"decoded count {int(counts[bad][0])} lies outside "
                             f"[1, {bound}] (senders * max_count={s.max_count}; corrupted "
                             "messages or more nonzero bins than the capacity)")
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
