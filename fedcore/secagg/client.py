"""SCMA client: masked power-sum syndromes of one sparse vector (MUFC paper, Alg. 2 line 2)."""
import numpy as np

from .._validation import check_int
from ..kernels.field.arithmetic import add_into, mul_into
from ..kernels.field.reed_solomon import power_sums
from ._prg import zero_sum_mask
from .setup import SCMASetup

__all__ = ["SCMAClient"]


class SCMAClient:
    """One client of SCMA.

    Parameters
    ----------
    client_id : int
        This client's id in [0, setup.n_clients).
    setup : SCMASetup
        Shared public parameters; the client uses only its own pairwise seeds.
    pair_seeds : mapping {other client id: int seed < 2**128}, optional
        The seeds this client shares with each other client, as agreed by a key exchange in a
        deployment (e.g. ``fedcore.integrations.flower``); then ``setup`` may be public
        (``setup.public()``). Default: the setup's simulated seeds.

    Notes
    -----
    The message of a round is, shard by shard, the syndromes
    S_i = sum_j q_j X_j**(i-1) (i = 1 .. 2 t_s + c) of the client's counts q_j at the points X_j
    of its bins, followed in hashed index spaces by ``n_chunks`` coordinate channels
    sum_j (q_j u_jk) X_j**(i-1) (i = 1 .. t_s), all plus the client's zero-sum mask
    (``fedcore.secagg._prg``). With at least two participants every message is uniform on
    F_p**message_length whatever the input, and the messages of a round are jointly uniform given
    their sum. A client refuses to encode twice for the same round, because two messages under the
    same mask would reveal their difference to the server.
    """

    def __init__(self, client_id, setup, pair_seeds=None):
        if not isinstance(setup, SCMASetup):
            raise TypeError(f"Argument 'setup' must be an SCMASetup, got {type(setup).__name__}")
        self.setup = setup
        self.client_id = check_int(client_id, "client_id", min_value=0,
                                   max_value=setup.n_clients - 1)
        self._pair_seeds = None if pair_seeds is None else \
            {int(k): int(v) for k, v in dict(pair_seeds).items()}
        self._used_rounds = set()
        self._prepared = {}

    def _pair_seed(self, a, b):
        if self._pair_seeds is None:
            return self.setup.pair_seed(a, b)
        other = b if a == self.client_id else a
        if other not in self._pair_seeds:
            raise ValueError(f"Client {self.client_id} shares no seed with client {other}; "
                             "argument 'pair_seeds' must cover every other participant")
        return self._pair_seeds[other]

    def mask(self, round, participants=None):
        """This client's zero-sum mask for a round (int64 of length ``setup.message_length``)."""
        s = self.setup
        round = check_int(round, "round", min_value=0)
        participants = s.check_participants(participants, self.client_id)
        return zero_sum_mask(self.client_id, participants, round, s.message_length, s.prime,
                             self._pair_seed, s.nonce)

    def precompute_mask(self, round, participants=None):
        """Generate the mask of a future round now (offline), so ``encode`` only computes
        syndromes. ``encode`` must then be called with the same participants."""
        round = check_int(round, "round", min_value=0)
        if round in self._used_rounds:
            raise ValueError(self._reuse_message(round))
        participants = self.setup.check_participants(participants, self.client_id)
        self._prepared[round] = (participants, self.mask(round, participants))

    def _reuse_message(self, round):
        return (f"Client {self.client_id} already encoded a message for round {round}; a second "
                "message under the same mask would reveal the difference of the two vectors to "
                "the server. Use a new round number.")

    def syndromes(self, indices, counts):
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

    def encode(self, indices, counts, *, round, participants=None, ledger=None):
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
            exactly this set, so the server must decode with the same participants.
        ledger : CommLedger, optional
            If given, the message is recorded in it (``setup.message_length`` elements of
            ``setup.bits_per_element`` bits).

        Returns
        -------
        message : ndarray of shape (setup.message_length,), uint64
            Field elements in [0, p).
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
        mask = prepared[1] if prepared is not None else self.mask(round, participants)
        add_into(msg, mask, s.prime)
        self._used_rounds.add(round)
        if ledger is not None:
            s.record_message(ledger, round, self.client_id)
        return msg.view(np.uint64)

    def __repr__(self):
        return f"SCMAClient(client_id={self.client_id}, setup={self.setup!r})"
