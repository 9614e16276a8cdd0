"""SCMA client: masked power-sum syndromes of one sparse vector ([MUFC] Alg. 2 line 2)."""
from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from numpy.typing import ArrayLike

from .._validation import check_int
from ..federation import CommLedger
from ..kernels.field.arithmetic import add_into, mul_into
from ..kernels.field.reed_solomon import power_sums
from . import _keys, _shamir, _streams
from ._prg import zero_sum_mask
from .message import SCMAMessage
from .setup import SCMASetup

__all__ = ["SCMAClient"]

_ROUNDS_KEPT = 16  # rounds of per-round key material a deployed client keeps


class RoundSet:
    """A set of round numbers stored as disjoint intervals [lo, hi): consecutive rounds (the usual
    case) take one interval, so copies stay small however many rounds a client encodes."""

    def __init__(self):
        self._lo = []
        self._hi = []

    def __contains__(self, r):
        i = bisect_right(self._lo, r) - 1
        return i >= 0 and r < self._hi[i]

    def add(self, r):
        if r in self:
            return
        i = bisect_right(self._lo, r)  # intervals 0..i-1 start at or below r
        joins_left = i > 0 and self._hi[i - 1] == r
        joins_right = i < len(self._lo) and self._lo[i] == r + 1
        if joins_left and joins_right:
            self._hi[i - 1] = self._hi[i]
            del self._lo[i], self._hi[i]
        elif joins_left:
            self._hi[i - 1] = r + 1
        elif joins_right:
            self._lo[i] = r
        else:
            self._lo.insert(i, r)
            self._hi.insert(i, r + 1)

    def __len__(self):
        return sum(h - l for l, h in zip(self._lo, self._hi))


class SCMAClient:
    """One client of SCMA.

    Parameters
    ----------
    client_id : int
        This client's id in [0, setup.n_clients).
    setup : SCMASetup
        Shared parameters. Built in-process (not :meth:`SCMASetup.public`), it also simulates the
        client's keys: nothing else is needed.
    pair_seeds : mapping {other client id: int}, optional
        Secrets this client shares with each other client, agreed outside fedcore (legacy;
        ``private_key`` is preferred). With ``"chacha20"`` a seed (< 2**256) is the input of the
        pair's HKDF, with ``"pcg64"`` the 128-bit PCG64 seed. Not with ``dropout_threshold``.
    private_key : X25519PrivateKey or 32 bytes, optional
        This client's own X25519 private key (a deployment; e.g. from
        ``fedcore.secagg.generate_key_pair()``, drawn from OS entropy), with ``public_keys``;
        ``setup`` may then be public. Without dropout tolerance it gives the pair keys; with
        ``dropout_threshold`` it seals this client's key shares (masks use per-round keys).
    public_keys : mapping {other client id: X25519PublicKey or 32 bytes}, optional
        The other clients' public keys, relayed by the server.

    Notes
    -----
    The message of a round is, shard by shard, the syndromes
    S_i = sum_j q_j X_j**(i-1) (i = 1 .. 2 t_s + c) of the client's counts q_j at the points X_j
    of its bins, followed in hashed index spaces by ``n_chunks`` coordinate channels
    sum_j (q_j u_jk) X_j**(i-1) (i = 1 .. t_s), all plus the client's zero-sum mask: the sum over
    the other participants l' of +-stream(K_{l,l'}, round) (+ for l' > l). With at least two
    participants every message is uniform on F_p**message_length whatever the input, and the
    messages of a round are jointly uniform given their sum (up to the security of the stream
    cipher). A client refuses to encode twice for the same round, because two messages under the
    same mask would reveal their difference to the server.

    Dropout tolerance (``setup.dropout_threshold``), deployed client, round r:

    1. ``pk = client.round_public_key(r)`` - a fresh key pair; the server collects every
       participant's ``pk`` and sends all of them to every participant;
    2. ``sealed = client.key_shares(r, round_public_keys)`` - Shamir shares of the round key,
       sealed for each participant; the server forwards ``sealed[v]`` to client v, which calls
       ``client.receive_key_shares(r, {sender: sealed})``;
    3. ``client.encode(..., round=r, participants=P)``;
    4. if some participants dropped, each survivor answers
       ``client.reveal_key_shares(r, dropped)`` and the server decodes with
       ``SCMAServer.decode(..., dropped=..., unmask_shares=..., public_keys=round_public_keys)``.

    A simulated client (setup with keys) skips steps 1-2: the setup deals the keys and shares.
    """

    def __init__(self, client_id: int, setup: SCMASetup,
                 pair_seeds: Mapping[int, int] | None = None, *,
                 private_key: X25519PrivateKey | bytes | None = None,
                 public_keys: Mapping[int, X25519PublicKey | bytes] | None = None) -> None:
        if not isinstance(setup, SCMASetup):
            raise TypeError(f"Argument 'setup' must be an SCMASetup, got {type(setup).__name__}")
        self.setup = setup
        self.client_id = check_int(client_id, "client_id", min_value=0,
                                   max_value=setup.n_clients - 1)
        if pair_seeds is not None and private_key is not None:
            raise ValueError("Give either 'pair_seeds' or 'private_key', not both")
        if pair_seeds is not None and setup.per_round_keys:
            raise ValueError("Argument 'pair_seeds' cannot be used with dropout_threshold (pair "
                             "keys are agreed every round); give 'private_key' and 'public_keys'")
        if private_key is not None and setup.mask_generator == "pcg64":
            raise ValueError("Argument 'private_key' needs mask_generator='chacha20'; the pcg64 "
                             "generator is seeded (simulations only)")
        self._pair_seeds = None if pair_seeds is None else \
            {int(k): int(v) for k, v in dict(pair_seeds).items()}
        self._private = None if private_key is None else _keys.private_key_bytes(private_key)
        self._public = None
        if public_keys is not None:
            self._public = {check_int(k, "public_keys", min_value=0,
                                      max_value=setup.n_clients - 1): _keys.public_key_bytes(v)
                            for k, v in dict(public_keys).items()}
        elif private_key is not None:
            raise ValueError("Argument 'public_keys' (the other clients' X25519 public keys) is "
                             "needed with 'private_key'")
        self._pair_keys = {}
        self._rounds = {}  # round -> own round key pair, peers' keys, held shares, pair keys
        self._used_rounds = RoundSet()
        self._prepared = {}

    # ------------------------------------------------------------------ key material
    @property
    def simulated(self) -> bool:
        """True when the setup simulates this client's keys (no own keys or seeds given)."""
        return self._pair_seeds is None and self._private is None

    def _pair_seed(self, a, b):
        if self._pair_seeds is None:
            return self.setup.pair_seed(a, b)
        other = b if a == self.client_id else a
        if other not in self._pair_seeds:
            raise ValueError(f"Client {self.client_id} shares no seed with client {other}; "
                             "argument 'pair_seeds' must cover every other participant")
        return self._pair_seeds[other]

    def _static_key(self, other):
        """Mask key of this client and ``other`` for the whole setup."""
        key = self._pair_keys.get(other)
        if key is None:
            s = self.setup
            if self._pair_seeds is not None:
                secret = _keys.secret_of_seed(self._pair_seed(self.client_id, other))
            else:
                if other not in self._public:
                    raise ValueError(f"Client {self.client_id} has no public key of client "
                                     f"{other}; argument 'public_keys' must cover every other "
                                     "participant")
                secret = _keys.shared_secret(self._private, self._public[other])
            key = self._pair_keys[other] = _keys.mask_key(secret, s.setup_id, self.client_id,
                                                          other)
        return key

    def _round_state(self, round, create=False):
        state = self._rounds.get(round)
        if state is None:
            if not create:
                raise ValueError(f"Client {self.client_id} has no key pair for round {round}; "
                                 "call round_public_key(round) and key_shares(round, ...) first")
            private, public = _keys.generate_key_pair()
            state = self._rounds[round] = {"private": private, "public": public,
                                           "peers": None, "held": {}, "keys": {}}
            while len(self._rounds) > _ROUNDS_KEPT:
                del self._rounds[next(iter(self._rounds))]
        return state

    def _round_key(self, round, other):
        """Mask key of this client and ``other`` for one round (per-round key pairs)."""
        state = self._round_state(round)
        key = state["keys"].get(other)
        if key is None:
            peers = state["peers"]
            if peers is None or other not in peers:
                raise ValueError(f"Client {self.client_id} has no round-{round} public key of "
                                 f"client {other}; pass every participant's key to "
                                 "key_shares(round, round_public_keys)")
            secret = _keys.shared_secret(state["private"], peers[other])
            key = state["keys"][other] = _keys.mask_key(secret, self.setup.setup_id,
                                                        self.client_id, other, round)
        return key

    def _require_deployed_dropout(self, what):
        if not self.setup.per_round_keys:
            raise ValueError(f"{what} needs a setup with dropout_threshold (per-round keys)")
        if self.simulated:
            raise ValueError(f"{what}: a simulated client gets its round keys and shares from "
                             "the setup; only a client with its own private_key exchanges them")

    def round_public_key(self, round: int) -> bytes:
        """The 32-byte public key of this client's fresh key pair for ``round`` (dropout
        tolerance; drawn from OS entropy on first call), to be relayed to the participants."""
        round = check_int(round, "round", min_value=0)
        if not self.setup.per_round_keys:
            raise ValueError("round_public_key needs a setup with dropout_threshold")
        if self.simulated:
            self.setup._require_keys()
            return self.setup.round_public_keys(round)[self.client_id]
        return self._round_state(round, create=True)["public"]

    def key_shares(self, round: int,
                   round_public_keys: Mapping[int, X25519PublicKey | bytes]) -> dict[int, bytes]:
        """Shamir shares (threshold ``setup.dropout_threshold``) of this client's round key, one
        per participant, each sealed for its holder: {holder id: bytes}.

        ``round_public_keys`` ({client: 32 bytes}, this client's included) are the round public
        keys of the round's participants; they are kept for the masks. The server relays
        ``sealed[v]`` to client v; this client's own share is kept here.
        """
        self._require_deployed_dropout("key_shares")
        round = check_int(round, "round", min_value=0)
        state = self._round_state(round)
        peers = {check_int(k, "round_public_keys", min_value=0,
                           max_value=self.setup.n_clients - 1): _keys.public_key_bytes(v)
                 for k, v in dict(round_public_keys).items()}
        if peers.get(self.client_id) != state["public"]:
            raise ValueError(f"Argument 'round_public_keys' must hold client {self.client_id}'s "
                             f"own round-{round} public key")
        state["peers"] = peers
        holders = sorted(peers)
        values = _shamir.deal([state["private"]], self.setup.dropout_threshold, holders)[0]
        sealed = {}
        for i, h in enumerate(holders):
            share = _shamir.share_bytes(values[i])
            if h == self.client_id:
                state["held"][h] = share
                continue
            if self._public is None or h not in self._public:
                raise ValueError(f"Client {self.client_id} has no public key of client {h} to "
                                 "seal its share; argument 'public_keys' must cover every "
                                 "participant")
            sealed[h] = _keys.seal_share(share, self._private, self._public[h],
                                         self.setup.setup_id, round, self.client_id, h)
        return sealed

    def receive_key_shares(self, round: int, sealed: Mapping[int, bytes]) -> None:
        """Open and keep the shares other participants sealed for this client: {sender: bytes}."""
        self._require_deployed_dropout("receive_key_shares")
        round = check_int(round, "round", min_value=0)
        state = self._round_state(round)
        for sender, box in dict(sealed).items():
            sender = check_int(sender, "sealed", min_value=0, max_value=self.setup.n_clients - 1)
            if self._public is None or sender not in self._public:
                raise ValueError(f"Client {self.client_id} has no public key of client {sender}")
            state["held"][sender] = _keys.open_share(box, self._private, self._public[sender],
                                                     self.setup.setup_id, round, sender,
                                                     self.client_id)

    def reveal_key_shares(self, round: int, dropped: Iterable[int]) -> dict[int, bytes]:
        """This client's shares of the round keys of the ``dropped`` clients: {client: 40 bytes},
        for the server to rebuild their masks ([SecAgg] unmasking round).

        Refuses this client's own id (a live client's key would unmask its message). The server
        is trusted to name only clients whose messages did not arrive (honest-but-curious; see
        ``docs/security.md``: without double masking a lying server could unmask a client).
        """
        if not self.setup.per_round_keys:
            raise ValueError("reveal_key_shares needs a setup with dropout_threshold")
        round = check_int(round, "round", min_value=0)
        dropped = sorted({check_int(u, "dropped", min_value=0,
                                    max_value=self.setup.n_clients - 1) for u in dropped})
        if self.client_id in dropped:
            raise ValueError(f"Client {self.client_id} is asked to reveal shares of its own round "
                             "key; a client that is alive never does (it would unmask its "
                             "message)")
        if self.simulated:
            self.setup._require_keys()
            return self.setup._sim.held_shares(round, self.client_id, dropped)
        held = self._round_state(round)["held"]
        missing = [u for u in dropped if u not in held]
        if missing:
            raise ValueError(f"Client {self.client_id} holds no round-{round} share of client(s) "
                             f"{missing}")
        return {u: held[u] for u in dropped}

    # ------------------------------------------------------------------ masks
    def _make_mask(self, round, participants):
        s = self.setup
        me = self.client_id
        if self.simulated:
            return s._take_mask(me, round, participants)
        if s.mask_generator == "pcg64":
            return zero_sum_mask(me, participants, round, s.message_length, s.prime,
                                 self._pair_seed, s.nonce)
        others = [o for o in participants if o != me]
        pairs = [(min(me, o), max(me, o)) for o in others]
        if s.per_round_keys:
            keys = [self._round_key(round, o) for o in others]
        else:
            keys = [self._static_key(o) for o in others]
        plus = np.array([0 if a == me else -1 for a, _ in pairs], dtype=np.int64)
        minus = np.array([0 if b == me else -1 for _, b in pairs], dtype=np.int64)
        out = np.zeros((1, s.message_length), dtype=np.int64)
        return _streams.zero_sum_masks(pairs, keys, round, s.message_length, s.prime, plus,
                                       minus, out)[0]

    def mask(self, round: int, participants: Iterable[int] | None = None) -> np.ndarray:
        """This client's zero-sum mask for a round (int64 of length ``setup.message_length``)."""
        s = self.setup
        round = check_int(round, "round", min_value=0)
        participants = s.check_participants(participants, self.client_id)
        return self._make_mask(round, participants)

    def precompute_mask(self, round: int, participants: Iterable[int] | None = None) -> None:
        """Generate the mask of a future round now (offline), so ``encode`` only computes
        syndromes. ``encode`` must then be called with the same participants."""
        round = check_int(round, "round", min_value=0)
        if round in self._used_rounds:
            raise ValueError(self._reuse_message(round))
        participants = self.setup.check_participants(participants, self.client_id)
        self._prepared[round] = (participants, self._make_mask(round, participants))

    def _reuse_message(self, round):
        return (f"Client {self.client_id} already encoded a message for round {round}; a second "
                "message under the same mask would reveal the difference of the two vectors to "
                "the server. Use a new round number.")

    def syndromes(self, indices: ArrayLike, counts: ArrayLike) -> np.ndarray:
        """Unmasked message (int64) of a validated-on-the-fly vector; see ``encode``."""
        s = self.setup
        bins, cnt = s.canonical_bins(indices, counts)
        points, chunks = s.points_of(bins)
        if np.unique(points).shape[0] != points.shape[0]:
            raise ValueError("Two of this client's bins hash to the same field element (a hash "
                             "collision, probability <= setup.collision_bound); build a new "
                             "setup with SCMASetup.rekeyed()")
        shards = s.shard_of(points)
        msg = np.zeros(s.message_length, dtype=np.int64)
        p, t_s, n_ch = s.prime, s.shard_capacity, s.n_chunks
        for shard in np.unique(shards):
            sel = np.flatnonzero(shards == shard)
            if sel.shape[0] > t_s:
                raise ValueError(f"The client vector has {sel.shape[0]} bins in shard {shard}, "
                                 f"more than the shard capacity {t_s}; use a larger capacity or "
                                 "fewer shards")
            base = int(shard) * s.shard_length
            x = points[sel].copy()
            q = cnt[sel].reshape(1, -1).copy()
            block = msg[base:base + s.count_length].reshape(1, s.count_length)
            power_sums(x, q, 0, block, p)  # Alg. 2 line 2: S_i = sum_j q_j X_j**(i-1)
            if n_ch:
                weights = np.ascontiguousarray(chunks[sel].T)
                mul_into(weights, np.broadcast_to(q, weights.shape).copy(), p)
                coord = msg[base + s.count_length:base + s.shard_length].reshape(n_ch, t_s)
                power_sums(x, weights, 0, coord, p)
        return msg

    def encode(self, indices: ArrayLike, counts: ArrayLike, *, round: int,
               participants: Iterable[int] | None = None,
               ledger: CommLedger | None = None) -> SCMAMessage:
        """Masked message of this client's vector for one round.

        Parameters
        ----------
        indices : array-like of int, shape (K,) or (K, n_dims)
            Bins with nonzero counts: integers in [0, index_space), or coordinates in
            [0, bins)**n_dims. Repeated bins are merged (their counts add up).
        counts : array-like of int, shape (K,)
            Non-negative counts, each (and each merged sum) at most ``setup.max_count``; zero
            counts are ignored. At most ``setup.capacity`` distinct nonzero bins.
        round : int
            Round number; masks are fresh for every round and a round can be encoded only once.
        participants : sequence of int, optional
            Clients taking part in this round (default all); the masks cancel only in the sum over
            exactly this set, so the server must decode with the same participants (and, with
            dropout tolerance, name the ones whose messages are missing as ``dropped``).
        ledger : CommLedger, optional
            If given, the message is recorded in it (``setup.message_length`` elements of
            ``setup.bits_per_element`` bits).

        Returns
        -------
        message : SCMAMessage of shape (setup.message_length,), uint64
            Field elements in [0, p), with the header (setup_id, round, client_id, participants).
        """
        s = self.setup
        round = check_int(round, "round", min_value=0)
        if round in self._used_rounds:
            raise ValueError(self._reuse_message(round))
        participants = s.check_participants(participants, self.client_id)
        msg = self.syndromes(indices, counts)
        prepared = self._prepared.pop(round, None)
        if prepared is not None and prepared[0] != participants:
            raise ValueError(f"The mask of round {round} was precomputed for participants "
                             f"{list(prepared[0])}, not {list(participants)}")
        mask = prepared[1] if prepared is not None else self._make_mask(round, participants)
        add_into(msg, mask, s.prime)
        self._used_rounds.add(round)
        if ledger is not None:
            s.record_message(ledger, round, self.client_id)
        return SCMAMessage(msg.view(np.uint64), setup_id=s.setup_id, round=round,
                           client_id=self.client_id, participants=participants)

    def round_state(self) -> list[tuple[object, tuple[str, ...], tuple[str, ...]]]:
        """What encoding a round changes in this client: its used rounds, round keys, prepared
        masks and cached pair keys.

        Returns ``[(object, deep, shallow)]``: the objects a round changes and the names of their
        attributes to restore, ``deep`` ones by copy, ``shallow`` ones by reference (see
        :func:`fedcore.algorithms.base.all_or_nothing`), for a caller that must undo a failed
        round (MUFC's removals are transactions)."""
        return [(self, ("_used_rounds", "_rounds"), ("_prepared", "_pair_keys"))]

    def __repr__(self):
        return f"SCMAClient(client_id={self.client_id}, setup={self.setup!r})"
