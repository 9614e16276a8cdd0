"""The key material of every client, held by an in-process ``SCMASetup`` (simulation).

A deployed client holds only its own keys (``SCMAClient(..., private_key=...)``); an in-process
setup plays every client at once. It draws the clients' X25519 keys from OS entropy on first use,
agrees every pair's key once, and expands each pair's stream once per round: all at once
(``SCMASetup.round_masks``), or as the setup's clients ask for their masks (:class:`PendingRound`:
a client's request expands its pairs with the clients that have not asked yet, into both members'
masks). A round of L clients thus expands L (L - 1) / 2 streams instead of L (L - 1), and no
request costs more than the client's own L - 1 streams, as in a deployment.
"""
from collections import OrderedDict

import numpy as np

from . import _keys, _shamir

__all__ = ["KeyDirectory", "Simulation", "RoundKeys", "RoundPlan", "PendingRound"]

_ROUNDS_KEPT = 16  # rounds whose per-round keys and shares a simulation keeps


class KeyDirectory:
    """Public keys of the clients' per-round key pairs, as the server relays them; shared by a
    setup and its public copies (public information only)."""

    def __init__(self):
        self.rounds = OrderedDict()

    def publish(self, round, public_keys):
        self.rounds[int(round)] = dict(public_keys)
        while len(self.rounds) > _ROUNDS_KEPT:
            self.rounds.popitem(last=False)

    def get(self, round):
        return self.rounds.get(int(round))


class RoundKeys:
    """One round's key pairs of every client, their Shamir shares and the pair keys."""

    def __init__(self, n_clients, threshold):
        pairs = [_keys.generate_key_pair() for _ in range(n_clients)]
        self.private = [sk for sk, _ in pairs]
        self.public = {c: pk for c, (_, pk) in enumerate(pairs)}
        # shares[u, h] = share of client u's round key held by client h
        self.shares = _shamir.deal(self.private, threshold, range(n_clients))
        self.pair_keys = {}
        self._objects = {}

    def private_object(self, client):
        if client not in self._objects:
            self._objects[client] = _keys.private_key_object(self.private[client])
        return self._objects[client]

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("pair_keys", "_objects")}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.pair_keys = {}
        self._objects = {}


class Simulation:
    """Key material and mask cache of an in-process setup (see the module docstring)."""

    def __init__(self, n_clients):
        self.n_clients = n_clients
        self.identity = None        # raw private keys of the clients (static masks)
        self.identity_public = None
        self.rounds = OrderedDict()  # round -> RoundKeys (per-round keys, dropout tolerance)
        self._clear_caches()

    _CACHES = ("pair_keys", "_objects", "pending", "_plan", "contexts")

    def _clear_caches(self):
        self.pair_keys = {}         # (a, b) -> 32-byte mask key (static masks)
        self._objects = {}          # client -> X25519PrivateKey
        self.pending = None         # PendingRound: the round whose masks are being taken
        self._plan = None           # RoundPlan of the last participant set
        self.contexts = {}          # pair key -> (ChaCha20 context, next round) (static masks)

    def __getstate__(self):
        """The keys, without the caches (pair keys and masks are functions of the keys and are
        made again when needed): copies and pickles stay small and equal."""
        return {k: v for k, v in self.__dict__.items() if k not in self._CACHES}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._clear_caches()

    # ------------------------------------------------------------------ static keys
    def _ensure_identity(self):
        if self.identity is None:
            pairs = [_keys.generate_key_pair() for _ in range(self.n_clients)]
            self.identity = [sk for sk, _ in pairs]
            self.identity_public = [pk for _, pk in pairs]

    def secret(self, a, b):
        """X25519 shared secret of clients a and b (their identity keys)."""
        self._ensure_identity()
        if a not in self._objects:
            self._objects[a] = _keys.private_key_object(self.identity[a])
        return _keys.shared_secret(self._objects[a], self.identity_public[b])

    def pair_key(self, setup_id, a, b):
        key = self.pair_keys.get((a, b))
        if key is None:
            key = self.pair_keys[(a, b)] = _keys.mask_key(self.secret(a, b), setup_id, a, b)
        return key

    def plan(self, participants):
        """The :class:`RoundPlan` of a participant set (the last one is kept)."""
        if self._plan is None or self._plan.participants != participants:
            self._plan = RoundPlan(participants)
        return self._plan

    # ------------------------------------------------------------------ per-round keys
    def round_keys(self, round, threshold, directory):
        keys = self.rounds.get(round)
        if keys is None:
            keys = self.rounds[round] = RoundKeys(self.n_clients, threshold)
            while len(self.rounds) > _ROUNDS_KEPT:
                self.rounds.popitem(last=False)
            if directory is not None:
                directory.publish(round, keys.public)
        return keys

    def round_pair_key(self, setup_id, round, threshold, directory, a, b):
        keys = self.round_keys(round, threshold, directory)
        key = keys.pair_keys.get((a, b))
        if key is None:
            secret = _keys.shared_secret(keys.private_object(a), keys.public[b])
            key = keys.pair_keys[(a, b)] = _keys.mask_key(secret, setup_id, a, b, round)
        return key

    def held_shares(self, round, holder, dropped):
        """{u: 40-byte share of u's round key held by ``holder``} for u in ``dropped``."""
        keys = self.rounds.get(round)
        if keys is None:
            raise ValueError(f"No key shares of round {round} are held (the simulation keeps the "
                             f"key material of its last {_ROUNDS_KEPT} rounds with masks)")
        return {u: _shamir.share_bytes(keys.shares[u, holder]) for u in dropped}

    # ------------------------------------------------------------------ pending round
    def pending_round(self, round, participants, length):
        """The :class:`PendingRound` of (round, participants), started if no round is pending or
        the pending one is older; None when the request is out of order (a newer round, or this
        round with other participants, is pending)."""
        key = (round, participants)
        pending = self.pending
        if pending is not None and pending.key == key:
            return pending
        if pending is None or pending.key[0] < round:
            self.pending = PendingRound(key, len(participants), length)
            return self.pending
        return None


class RoundPlan:
    """The pairs of a participant set: pair k = (a, b), a < b, its plus and minus rows (positions
    of a and b among the participants), and for each row the pairs it belongs to."""

    def __init__(self, participants):
        self.participants = participants
        self.index = {c: i for i, c in enumerate(participants)}
        n = len(participants)
        rows_a, rows_b = np.triu_indices(n, k=1)
        self.plus = rows_a.astype(np.int64)
        self.minus = rows_b.astype(np.int64)
        self.pairs = [(participants[i], participants[j]) for i, j in zip(rows_a.tolist(),
                                                                         rows_b.tolist())]
        members = np.concatenate([self.plus, self.minus])
        order = np.argsort(members, kind="stable")
        bounds = np.searchsorted(members[order], np.arange(n + 1))
        ids = np.concatenate([np.arange(self.plus.shape[0])] * 2)[order]
        self.of_row = [ids[bounds[i]:bounds[i + 1]] for i in range(n)]
        self.keys = [None] * len(self.pairs)  # setup-wide pair keys, filled on first use

    def keys_of(self, selection, key_of, cache):
        """Keys of the selected pairs (``key_of(a, b)``; kept in the plan when ``cache``)."""
        if not cache:
            return [key_of(*self.pairs[k]) for k in selection]
        keys = self.keys
        for k in selection:
            if keys[k] is None:
                keys[k] = key_of(*self.pairs[k])
        return [keys[k] for k in selection]


class PendingRound:
    """The masks of one round being taken client by client. A client's request expands its pairs
    with clients that have not asked yet, adding each stream to both members' rows; its own row
    is then complete. Every pair's stream is generated once per round, and a client's request
    costs at most its own L - 1 streams."""

    def __init__(self, key, n_rows, length):
        self.key = key
        self.masks = np.zeros((n_rows, length), dtype=np.int64)
        self.done = np.zeros(n_rows, dtype=bool)
