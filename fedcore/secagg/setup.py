"""Public parameters of SCMA (field, index space, capacity, shards, hash keys, setup identifier)
and, in an in-process simulation, every client's key material."""
from __future__ import annotations

import math
import secrets
import sys
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike
from scipy.stats import binom

from .._validation import check_int, check_random_state, check_scalar
from ..federation import CommLedger
from ..kernels.field.arithmetic import MAX_PRIME, MERSENNE_61, is_prime
from ..kernels.field.polynomial import poly_eval_rows

from . import _prg, _streams
from ._simulation import KeyDirectory, Simulation

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["SCMASetup", "MASK_GENERATORS"]

MASK_GENERATORS = ("chacha20", "pcg64")
"""Mask generators: ``"chacha20"`` (default; X25519 + HKDF-SHA256 pair keys, ChaCha20 streams) and
``"pcg64"`` (seeded, NOT cryptographic, reproducible simulations only)."""

_AUTO_SHARD_LOAD = 256      # expected nonzero bins per shard when sharding is automatic
_AUTO_SHARD_ABOVE = 512     # automatic sharding starts above this capacity


def _splitmix64(x):
    """SplitMix64 finaliser on uint64 arrays (wrapping arithmetic)."""
    z = x + np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def shard_capacity_for(capacity, n_shards, overflow_probability):
    """Smallest per-shard capacity s with n_shards * P[Binomial(capacity, 1/n_shards) > s] <= bound.

    With at most ``capacity`` distinct nonzero bins hashed independently and uniformly to
    ``n_shards`` shards, this union bound is the probability that some shard overflows.
    """
    if n_shards == 1:
        return capacity
    s = int(math.ceil(capacity / n_shards))
    while s < capacity and n_shards * binom.sf(s, capacity, 1.0 / n_shards) > overflow_probability:
        s += 1
    return s


class SCMASetup:
    """Public parameters (and simulated client keys) of secure compressed multiset aggregation.

    SCMA ([MUFC] Section 4.1, Alg. 2) lets ``n_clients`` clients send the server the exact sum of
    their sparse non-negative integer vectors (bins -> counts) while the server learns nothing
    else: each client sends power-sum syndromes S_i = sum_j q_j X_j**(i-1) of its vector, masked
    by pairwise zero-sum noise; the server adds the messages and decodes the sum with
    Berlekamp-Massey, root finding and Forney's formula (Reed-Solomon decoding).

    Masks ([SecAgg] pairwise masking): clients a < b agree a key by X25519 and HKDF-SHA256 (the
    setup identifier and the pair in the HKDF info); their mask stream of round r is the ChaCha20
    keystream under that key with the round in the nonce, read as uniform elements of F_p
    (rejection sampling, no modulo bias); a adds it, b subtracts it. A setup built here holds every
    client's key pair (drawn from OS entropy on first use): it simulates all clients in one
    process and makes a round's masks with each pair's stream generated once
    (:meth:`round_masks`). A deployment gives each client its own key instead
    (``SCMAClient(..., private_key=..., public_keys=...)``) and the server :meth:`public`. The
    decoded sums never depend on the masks, so they are reproducible from ``random_state`` alone.
    See ``docs/security.md`` for the threat model.

    Parameters
    ----------
    n_clients : int
        Number of clients L (ids 0 .. L-1).
    capacity : int
        Largest number t of distinct nonzero bins in the *sum* (the paper takes t = K L).
    prime : int, default 2**61 - 1
        Odd prime p < 2**62 defining the field F_p.
    index_space : int, optional
        Bins are integers in [0, index_space) (index_space <= 2**63). Give either this or
        ``n_dims`` and ``bins``.
    n_dims, bins : int, optional
        Bins are integer coordinates in [0, bins)**n_dims (e.g. quantisation cells).
    check_syndromes : int, default 2
        Extra syndromes c per shard that the decoded vector must reproduce.
    max_count : int, optional
        Largest count of a bin in one client's vector. Clients reject larger counts (and repeated
        bins summing above it); the server rejects decoded counts outside
        [1, n_senders * max_count]. The aggregate bound must stay below the field:
        ``n_clients * max_count < prime``, so no count of the sum can wrap around modulo p; a
        larger value is refused. Default ``(prime - 1) // n_clients``.
    n_shards : int, optional
        Number of shards G. Each bin belongs to one shard by a public keyed hash and each shard
        has its own syndromes, so decoding costs G times a problem of size ``shard_capacity``
        instead of one problem of size t (about linear in t instead of quadratic). Default: 1 up
        to capacity 512, else ceil(capacity / 256).
    overflow_probability : float, default 1e-9
        Bound on the probability that some shard receives more than ``shard_capacity`` of t
        nonzero bins (bins hashed independently of the key). Overflow is detected and raised.
    mask_generator : {"chacha20", "pcg64"}, default "chacha20"
        ``"chacha20"``: cryptographic masks (X25519 key agreement, HKDF-SHA256, ChaCha20
        keystreams; private keys from OS entropy). ``"pcg64"``: NOT cryptographic, simulations
        only: NumPy PCG64 streams seeded from ``random_state``, so every mask is a function of the
        seed (reproducible message for message, the masks of earlier fedcore versions bit for
        bit); no faster than ChaCha20 (a PCG64 stream is seeded afresh for every pair and round).
    dropout_threshold : int, optional
        Dropout tolerance ([SecAgg], simplified to an honest-but-curious server without double
        masking): with t = ``dropout_threshold``, clients draw a fresh X25519 key pair every round
        (the pair keys then also bind the round) and Shamir-share its private key t-of-n among the
        round's participants. If up to n - t participants drop after the masks were agreed, t
        survivors' shares rebuild the dropped clients' round keys and the server removes their
        masks (``SCMAServer.decode(..., dropped=..., unmask_shares=...)``); one more drop is
        refused. Revealing a round key exposes that round's masks only. None (default): no
        tolerance, one key pair per client for the whole setup, every participant must send.
        Needs ``mask_generator="chacha20"``; 1 <= t <= n_clients.
    random_state : None, int or numpy.random.Generator
        Source of the hash keys, the shard key and the setup nonce (and, for ``"pcg64"``, of the
        pairwise seeds). The X25519 private keys never come from it.

    Attributes
    ----------
    hashed : bool
        False when the index space has fewer than p bins: bin j (row-major flat index for
        coordinates) is the evaluation point X = j + 1, as in the paper. True otherwise: a bin
        maps to X = 1 + (h mod (p - 1)), h = b + sum_k u_k a**(k+1) mod p, where u_k are its packed
        coordinate chunks and (a, b) a public random key; the message then also carries
        ``n_chunks`` coordinate channels (syndromes of q_j * u_jk) from which the server
        recovers each bin's coordinates and checks them against the hash.
    n_chunks, coords_per_chunk : int
        Coordinate channels per shard and coordinates packed in each (g = largest integer with
        bins**g <= p; chunk value sum_t c_t bins**t < p). 0 chunks when not hashed. For an integer
        index space above p the index is split into ``coords_per_chunk = 1`` digits of
        p.bit_length() - 1 bits.
    shard_capacity : int
        Per-shard capacity t_s (= capacity without sharding).
    message_length : int
        Field elements per client message, ``n_shards * (2 t_s + c + n_chunks * t_s)``.
    bits_per_element, message_bits : int
        ceil(log2 p) and ``message_length * bits_per_element``. The paper's bound is
        2 t ceil(log2 p') bits with p' >= max(n, bins**n_dims), i.e. 2 t n_dims log2(bins) bits
        for large index spaces; hashing replaces it by about t (2 log2 p + n_dims log2 bins).
    false_accept_bound : float
        Heuristic probability that inconsistent syndromes (over-capacity or corrupted input)
        pass every check: n_shards * (t_s / p)**c. With c = 0 only the structural checks remain.
    collision_bound : float
        Probability bound that two of t distinct bins share an evaluation point
        (t (t - 1) / 2 * 3 n_chunks / (p - 1)); such a collision is detected at decode.
    wraparound_safe : bool
        Always True: n_clients * max_count < p is enforced, so no aggregate count can wrap around
        modulo p (clients reject counts above max_count).
    setup_id : int
        Public 63-bit identifier of this setup (OS entropy; derived from ``random_state`` for
        ``"pcg64"``). Every message carries it, every pair key is bound to it, and a server
        refuses messages of another setup.
    """

    def __init__(self, n_clients: int, capacity: int, *, prime: int = MERSENNE_61,
                 index_space: int | None = None, n_dims: int | None = None,
                 bins: int | None = None, check_syndromes: int = 2, max_count: int | None = None,
                 n_shards: int | None = None, overflow_probability: float = 1e-9,
                 mask_generator: Literal["chacha20", "pcg64"] = "chacha20",
                 dropout_threshold: int | None = None,
                 random_state: np.random.Generator | int | None = None) -> None:
        self._args = {"n_clients": n_clients, "capacity": capacity, "prime": prime,
                      "index_space": index_space, "n_dims": n_dims, "bins": bins,
                      "check_syndromes": check_syndromes, "max_count": max_count,
                      "n_shards": n_shards, "overflow_probability": overflow_probability,
                      "mask_generator": mask_generator, "dropout_threshold": dropout_threshold}
        self.n_clients = check_int(n_clients, "n_clients", min_value=1)
        self.capacity = check_int(capacity, "capacity", min_value=1)
        self.prime = p = check_int(prime, "prime", min_value=3, max_value=MAX_PRIME - 1)
        if not is_prime(p):
            raise ValueError(f"Argument 'prime' must be a prime number, got {p}")
        self.check_syndromes = check_int(check_syndromes, "check_syndromes", min_value=0)
        self.max_count = self._check_max_count(max_count)
        self._check_masks(mask_generator, dropout_threshold)
        self.overflow_probability = check_scalar(overflow_probability, "overflow_probability",
                                                 min_value=0.0, max_value=1.0, include_min=False)
        self._init_space(index_space, n_dims, bins)
        if n_shards is None:
            n_shards = 1 if self.capacity <= _AUTO_SHARD_ABOVE else \
                math.ceil(self.capacity / _AUTO_SHARD_LOAD)
        self.n_shards = check_int(n_shards, "n_shards", min_value=1)
        self.shard_capacity = shard_capacity_for(self.capacity, self.n_shards,
                                                 self.overflow_probability)
        t_s, c = self.shard_capacity, self.check_syndromes
        self.count_length = 2 * t_s + c
        self.shard_length = self.count_length + self.n_chunks * t_s
        self.message_length = self.n_shards * self.shard_length
        self.bits_per_element = (p - 1).bit_length()
        self.message_bits = self.message_length * self.bits_per_element
        self.false_accept_bound = min(1.0, self.n_shards * (t_s / p) ** c)
        self.collision_bound = min(1.0, self.capacity * (self.capacity - 1) / 2
                                   * 3 * self.n_chunks / (p - 1)) if self.hashed else 0.0
        self.wraparound_safe = True  # n_clients * max_count < p (checked above)
        self._directory = KeyDirectory()
        self._rekey(random_state)

    # ------------------------------------------------------------------ construction helpers
    def _check_max_count(self, max_count):
        p, n = self.prime, self.n_clients
        if max_count is None:
            if n >= p:
                raise ValueError(f"Argument 'n_clients' ({n}) must be below prime ({p}): the sum "
                                 "of n_clients counts of at least 1 would wrap around modulo p")
            return (p - 1) // n
        max_count = check_int(max_count, "max_count", min_value=1, max_value=p - 1)
        if n * max_count >= p:
            raise ValueError(f"Argument 'max_count' ({max_count}) bounds each client's counts, so "
                             f"a count of the sum can reach n_clients * max_count = {n} * "
                             f"{max_count} = {n * max_count}, which must be below prime ({p}) to "
                             f"rule out wrap-around modulo p; use max_count <= {(p - 1) // n} or "
                             "a larger prime")
        return max_count

    def _check_masks(self, mask_generator, dropout_threshold):
        if mask_generator not in MASK_GENERATORS:
            raise ValueError(f"Argument 'mask_generator' must be one of {list(MASK_GENERATORS)}, "
                             f"got {mask_generator!r}")
        self.mask_generator = mask_generator
        if dropout_threshold is not None:
            dropout_threshold = check_int(dropout_threshold, "dropout_threshold", min_value=1,
                                          max_value=self.n_clients)
            if mask_generator != "chacha20":
                raise ValueError("Argument 'dropout_threshold' needs mask_generator='chacha20' "
                                 "(dropped clients' masks are rebuilt from their shared X25519 "
                                 f"round keys), got mask_generator={mask_generator!r}")
        self.dropout_threshold = dropout_threshold

    @property
    def per_round_keys(self) -> bool:
        """True when the pair keys are agreed afresh every round (dropout tolerance)."""
        return self.dropout_threshold is not None

    def _init_space(self, index_space, n_dims, bins):
        p = self.prime
        if index_space is not None:
            if n_dims is not None or bins is not None:
                raise ValueError("Give either 'index_space' or 'n_dims' and 'bins', got "
                                 f"index_space={index_space!r}, n_dims={n_dims!r}, bins={bins!r}")
            self.index_space = check_int(index_space, "index_space", min_value=1,
                                         max_value=2**63)
            self.n_dims, self.bins, self.coordinates = None, None, False
            size = self.index_space
            self.hashed = size > p - 1
            if self.hashed:
                self._digit_bits = (p.bit_length() - 1)
                self._radix = 1 << self._digit_bits
                self._n_coords = max(1, -(-(size - 1).bit_length() // self._digit_bits))
                self.coords_per_chunk = 1
        else:
            if n_dims is None or bins is None:
                raise ValueError("Give either 'index_space' or both 'n_dims' and 'bins', got "
                                 f"n_dims={n_dims!r}, bins={bins!r}")
            self.n_dims = check_int(n_dims, "n_dims", min_value=1)
            self.bins = check_int(bins, "bins", min_value=1)
            self.index_space = None
            self.coordinates = True
            size = self.bins ** self.n_dims
            self.hashed = size > p - 1
            if self.hashed:
                if self.bins > p:
                    raise ValueError(f"Argument 'bins' must be <= prime ({p}) for an index space "
                                     f"of {self.bins}**{self.n_dims} >= p bins, got {self.bins}")
                self._radix = self.bins
                self._n_coords = self.n_dims
                g = 1
                while self.bins ** (g + 1) <= p and g < self.n_dims:
                    g += 1
                self.coords_per_chunk = g
        self.space_size = size
        if self.hashed:
            self.n_chunks = -(-self._n_coords // self.coords_per_chunk)
        else:
            self.coords_per_chunk = 0
            self.n_chunks = 0

    def _rekey(self, random_state):
        rng = check_random_state(random_state)
        words = rng.integers(0, 2**63, size=6, dtype=np.int64)
        self._master_seed = (int(words[0]) << 63) | int(words[1])
        self.nonce = int(words[2])
        self.hash_key = (1 + int(words[3]) % (self.prime - 1), int(words[4]) % self.prime)
        self.shard_key = int(words[5])
        if self.mask_generator == "pcg64":  # every value a function of random_state
            ss = np.random.SeedSequence(entropy=self._master_seed, spawn_key=(2**32 - 1,))
            self.setup_id = int(ss.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))
        else:
            self._master_seed = None  # the X25519 keys replace the seeded pairwise seeds
            self.setup_id = secrets.randbits(63)
        self._sim = Simulation(self.n_clients)

    def rekeyed(self, random_state: np.random.Generator | int | None = None) -> SCMASetup:
        """A copy with fresh hash keys, shard key, nonce, setup identifier and client keys (e.g.
        after a hash collision or shard overflow). Clients and server must be rebuilt from it."""
        new = object.__new__(SCMASetup)
        new.__dict__.update(self.__dict__)
        new._directory = KeyDirectory()
        new._rekey(random_state)
        return new

    def public(self) -> SCMASetup:
        """A copy without any client key: what the server holds in a deployment. It shares this
        setup's directory of per-round public keys (which the server relays anyway)."""
        new = object.__new__(SCMASetup)
        new.__dict__.update(self.__dict__)
        new._master_seed = None
        new._sim = None
        return new

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_last_participants"}

    def __setstate__(self, state):
        self.__dict__.update(state)

    @property
    def is_public(self) -> bool:
        """True when this setup holds no client keys (``public()``, ``from_public_config``)."""
        return self._sim is None

    def public_config(self) -> dict[str, int | float | str | None]:
        """The public parameters as a flat dict of ints, floats, strings and None (for transport,
        e.g. in a Flower ``ConfigRecord``): constructor arguments, hash and shard keys, nonce,
        setup identifier. No keys or seeds."""
        out: dict[str, int | float | str | None] = {}
        for k, v in self._args.items():
            if v is None or k == "mask_generator":
                out[k] = v
            else:
                out[k] = float(v) if k == "overflow_probability" else int(v)
        out.update(nonce=int(self.nonce), hash_key_a=int(self.hash_key[0]),
                   hash_key_b=int(self.hash_key[1]), shard_key=int(self.shard_key),
                   setup_id=int(self.setup_id))
        return out

    @classmethod
    def from_public_config(cls, config: Mapping[str, Any]) -> Self:
        """The public setup that :meth:`public_config` describes (equal to ``setup.public()``)."""
        config = dict(config)
        keys = {k: config.pop(k) for k in ("nonce", "hash_key_a", "hash_key_b", "shard_key")}
        setup_id = config.pop("setup_id", None)
        new = cls(**config, random_state=0)
        new._master_seed = None
        new._sim = None
        new.nonce = int(keys["nonce"])
        new.hash_key = (int(keys["hash_key_a"]), int(keys["hash_key_b"]))
        new.shard_key = int(keys["shard_key"])
        if setup_id is None:
            raise ValueError("Argument 'config' lacks 'setup_id' (a public_config of this "
                             "fedcore version is needed)")
        new.setup_id = check_int(setup_id, "setup_id", min_value=0, max_value=2**63 - 1)
        return new

    def _require_keys(self):
        if self._sim is None:
            raise ValueError("This SCMASetup holds public parameters only (from public() or "
                             "from_public_config()); clients need the setup with the simulated "
                             "keys, or their own keys (SCMAClient(..., private_key=..., "
                             "public_keys=...) or pair_seeds=...)")

    def pair_seed(self, a: int, b: int) -> int:
        """Secret shared by clients a and b, as an int (simulates their key agreement).

        ``"chacha20"``: the X25519 shared secret of their key pairs (a 256-bit int; the mask key
        is HKDF-SHA256 of it, so ``SCMAClient(..., pair_seeds=...)`` with these values produces
        the same messages). ``"pcg64"``: the 128-bit seed of the pair's PCG64 streams, drawn
        from ``random_state``. Not available with per-round keys (``dropout_threshold``).
        """
        self._require_keys()
        a, b = min(int(a), int(b)), max(int(a), int(b))
        if self.mask_generator == "pcg64":
            ss = np.random.SeedSequence(entropy=self._master_seed, spawn_key=(a, b))
            w = ss.generate_state(4, dtype=np.uint32)
            return int(w[0]) | (int(w[1]) << 32) | (int(w[2]) << 64) | (int(w[3]) << 96)
        if self.per_round_keys:
            raise ValueError("With dropout_threshold the pair keys change every round; there is "
                             "no pair seed for the whole setup")
        return int.from_bytes(self._sim.secret(a, b), "little")

    # ------------------------------------------------------------------ masks (simulation)
    def _pair_key(self, round, a, b):
        if self.per_round_keys:
            return self._sim.round_pair_key(self.setup_id, round, self.dropout_threshold,
                                            self._directory, a, b)
        return self._sim.pair_key(self.setup_id, a, b)

    def _expand(self, round, plan, selection, plus, minus, out):
        """Add the streams of the pairs ``selection`` (indices into ``plan.pairs``) of a round
        into ``out``: to row ``plus[i]`` and from row ``minus[i]`` (-1: none)."""
        m, p = self.message_length, self.prime
        if len(selection) == 0:
            return out
        if self.mask_generator == "pcg64":
            return _prg.add_pair_streams([plan.pairs[k] for k in selection], plus, minus, round,
                                         m, p, self.pair_seed, self.nonce, out)
        keys = plan.keys_of(selection, lambda a, b: self._pair_key(round, a, b),
                            cache=not self.per_round_keys)
        contexts = None if self.per_round_keys else self._sim.contexts
        return _streams.zero_sum_masks([plan.pairs[k] for k in selection], keys, round, m, p,
                                       plus, minus, out, contexts)

    def round_masks(self, round: int,
                    participants: Iterable[int] | None = None) -> dict[int, np.ndarray]:
        """Every participant's zero-sum mask of a round (simulation): {client: int64 array}.

        Each pair's stream is generated once and added to one member's mask and subtracted from
        the other's, so a round costs L (L - 1) / 2 streams. The masks sum to zero mod p.
        """
        self._require_keys()
        round = check_int(round, "round", min_value=0)
        participants = self.check_participants(participants)
        plan = self._sim.plan(participants)
        out = np.zeros((len(participants), self.message_length), dtype=np.int64)
        self._expand(round, plan, np.arange(len(plan.pairs)), plan.plus, plan.minus, out)
        return {c: out[i] for i, c in enumerate(participants)}

    def client_mask(self, client_id: int, round: int,
                    participants: Iterable[int] | None = None) -> np.ndarray:
        """One client's mask of a round from its own L - 1 streams, as a deployed client makes
        it (simulation keys)."""
        self._require_keys()
        round = check_int(round, "round", min_value=0)
        participants = self.check_participants(participants, client_id)
        return self._own_mask(client_id, round, participants)

    def _own_mask(self, client_id, round, participants):
        plan = self._sim.plan(participants)
        row = plan.index[client_id]
        selection = plan.of_row[row]
        plus = np.where(plan.plus[selection] == row, 0, -1)
        minus = np.where(plan.minus[selection] == row, 0, -1)
        out = np.zeros((1, self.message_length), dtype=np.int64)
        return self._expand(round, plan, selection, plus, minus, out)[0]

    def _take_mask(self, client_id, round, participants):
        """The mask of a client of this setup for a round, expanding only the streams of its
        pairs with the clients that have not asked yet (``_simulation.PendingRound``)."""
        self._require_keys()
        sim = self._sim
        pending = sim.pending_round(round, participants, self.message_length)
        plan = sim.plan(participants)
        row = plan.index[client_id]
        if pending is None or pending.done[row]:  # out of order, or asked twice
            return self._own_mask(client_id, round, participants)
        selection = plan.of_row[row]
        others = np.where(plan.plus[selection] == row, plan.minus[selection],
                          plan.plus[selection])
        selection = selection[~pending.done[others]]
        self._expand(round, plan, selection, plan.plus[selection], plan.minus[selection],
                     pending.masks)
        pending.done[row] = True
        if pending.done.all():
            sim.pending = None
        return pending.masks[row]

    def round_public_keys(self, round: int) -> dict[int, bytes] | None:
        """{client: 32-byte X25519 public key} of a round's key pairs (per-round keys only):
        public information the server relays; None if the round's keys were not made here."""
        if not self.per_round_keys:
            raise ValueError("Round public keys exist only with dropout_threshold (per-round keys)")
        round = check_int(round, "round", min_value=0)
        if self._sim is not None:
            self._sim.round_keys(round, self.dropout_threshold, self._directory)
        return self._directory.get(round)

    def round_state(self) -> list[tuple[object, tuple[str, ...], tuple[str, ...]]]:
        """What encoding a round changes in this setup (its simulated keys' caches, the round
        keys it relayed) and leaves shared with its public copies and clients, in place.

        Returns ``[(object, deep, shallow)]``: the objects a round changes and the names of their
        attributes to restore, ``deep`` ones by copy, ``shallow`` ones by reference (see
        :func:`fedcore.algorithms.base.all_or_nothing`), for a caller that must undo a failed
        round (MUFC's removals are transactions)."""
        return [(self, ("_sim",), ("_last_participants",)),
                (self._directory, ("rounds",), ())]

    def __repr__(self):
        space = (f"index_space={self.index_space}" if not self.coordinates
                 else f"n_dims={self.n_dims}, bins={self.bins}")
        extra = "" if self.mask_generator == "chacha20" else \
            f", mask_generator={self.mask_generator!r}"
        if self.dropout_threshold is not None:
            extra += f", dropout_threshold={self.dropout_threshold}"
        return (f"SCMASetup(n_clients={self.n_clients}, capacity={self.capacity}, "
                f"prime={self.prime}, {space}, n_shards={self.n_shards}, "
                f"shard_capacity={self.shard_capacity}, message_length={self.message_length}"
                f"{extra})")

    # ------------------------------------------------------------------ ledger
    def record_message(self, ledger: CommLedger, round: int, client_id: int) -> None:
        """Record one client message (elements and bits) in a ``CommLedger``."""
        ledger.record(round, sender=int(client_id), receiver="server", kind="scma_syndromes",
                      n_elements=self.message_length, bits_per_element=self.bits_per_element)

    # ------------------------------------------------------------------ validation
    def check_participants(self, participants: Iterable[int] | None,
                           client_id: int | None = None) -> tuple[int, ...]:
        """Sorted tuple of distinct participant ids (all clients when None)."""
        if participants is None:
            return tuple(range(self.n_clients))
        last = self.__dict__.get("_last_participants")
        if last is not None and type(participants) in (tuple, list) and \
                len(participants) == len(last) and tuple(participants) == last and \
                set(map(type, participants)) == {int}:  # the set checked last time
            if client_id is not None and client_id not in last:
                raise ValueError(f"Argument 'participants' must contain the encoding client "
                                 f"{client_id}, got {list(last)}")
            return last
        if isinstance(participants, (str, bytes)) or not hasattr(participants, "__iter__"):
            raise TypeError("Argument 'participants' must be a sequence of client ids, got "
                            f"{type(participants).__name__}")
        n = self.n_clients
        ids = [v if type(v) is int and 0 <= v < n  # plain valid ids need no conversion
               else check_int(v, "participants", min_value=0, max_value=n - 1)
               for v in participants]
        out = tuple(sorted(set(ids)))
        if len(out) != len(ids):
            raise ValueError(f"Argument 'participants' repeats a client id: {list(participants)}")
        if not out:
            raise ValueError("Argument 'participants' must name at least one client, got []")
        self._last_participants = out
        if client_id is not None and client_id not in out:
            raise ValueError(f"Argument 'participants' must contain the encoding client "
                             f"{client_id}, got {list(out)}")
        return out

    def canonical_bins(self, bins: ArrayLike, counts: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Validate a client vector; return (bins, counts) with repeats merged and zeros dropped.

        ``bins`` is an int64 array of shape (K,) (index space) or (K, n_dims) (coordinates).
        """
        counts_arr = np.asarray(counts)
        if counts_arr.ndim != 1:
            raise ValueError(f"Argument 'counts' must be 1-D, got shape {counts_arr.shape}")
        if counts_arr.size and counts_arr.dtype.kind not in "iu":
            raise TypeError(f"Argument 'counts' must hold integers, got dtype {counts_arr.dtype}")
        k = counts_arr.shape[0]
        arr = np.asarray(bins)
        shape = (k, self.n_dims) if self.coordinates else (k,)
        name = "coordinates" if self.coordinates else "indices"
        if arr.size == 0 and k == 0:
            arr = np.zeros(shape, dtype=np.int64)
        if arr.shape != shape:
            raise ValueError(f"Argument 'indices' must have shape {shape} ({name} of the "
                             f"{k} counts), got {arr.shape}")
        if arr.size and arr.dtype.kind not in "iu":
            raise TypeError(f"Argument 'indices' must hold integers, got dtype {arr.dtype}")
        if arr.dtype.kind == "u" and arr.size and arr.max() > np.iinfo(np.int64).max:
            raise ValueError(f"Argument 'indices' has a value above 2**63 - 1: {arr.max()}")
        arr = arr.astype(np.int64)
        if (counts_arr < 0).any():
            i = int(np.argmax(counts_arr < 0))
            raise ValueError(f"Argument 'counts' must be non-negative, got {counts_arr[i]} at "
                             f"index {i}")
        upper = self.bins if self.coordinates else self.index_space
        if arr.size and (arr.min() < 0 or arr.max() >= upper):
            bad = np.argwhere((arr < 0) | (arr >= upper))[0]
            raise ValueError(f"Argument 'indices' must lie in [0, {upper}), got "
                             f"{arr[tuple(bad)]} at index {tuple(int(b) for b in bad)}")
        big = counts_arr > self.max_count
        if big.any():
            i = int(np.argmax(big))
            raise ValueError(f"Argument 'counts' must be <= max_count={self.max_count}, got "
                             f"{counts_arr[i]} at index {i}")
        keep = counts_arr != 0
        arr, cnt = arr[keep], counts_arr[keep].astype(np.int64)
        if arr.shape[0] > 1:
            first = {}  # bin (as bytes) -> position of its first occurrence
            for i in range(arr.shape[0]):
                first.setdefault(arr[i].tobytes(), i)
            if len(first) < arr.shape[0]:
                merged = {}
                for i in range(arr.shape[0]):
                    key = arr[i].tobytes()
                    merged[key] = merged.get(key, 0) + int(cnt[i])
                if max(merged.values()) > self.max_count:
                    raise ValueError(f"Argument 'counts': a repeated bin sums to "
                                     f"{max(merged.values())} > max_count={self.max_count}")
                keep = sorted(first.values())
                arr = arr[keep]
                cnt = np.array([merged[arr[i].tobytes()] for i in range(len(keep))],
                               dtype=np.int64)
        if arr.shape[0] > self.capacity:
            raise ValueError(f"The client vector has {arr.shape[0]} nonzero bins, more than the "
                             f"capacity {self.capacity} of the sum")
        return arr, cnt

    # ------------------------------------------------------------------ bins <-> points
    def pack(self, bins: np.ndarray) -> np.ndarray:
        """Coordinate chunks u of shape (K, n_chunks), int64 in [0, p) (hashed spaces only)."""
        k = bins.shape[0]
        if not self.coordinates:
            digits = np.empty((k, self._n_coords), dtype=np.int64)
            mask = np.int64(self._radix - 1)
            for i in range(self._n_coords):
                digits[:, i] = (bins >> np.int64(i * self._digit_bits)) & mask
            return digits
        g, n = self.coords_per_chunk, self.n_chunks
        padded = np.zeros((k, n * g), dtype=np.int64)
        padded[:, :self.n_dims] = bins
        weights = np.array([self.bins ** t for t in range(g)], dtype=np.int64)
        return padded.reshape(k, n, g) @ weights

    def unpack(self, chunks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inverse of ``pack``; returns (bins, ok) where ok flags rows whose chunks are in range."""
        m = chunks.shape[0]
        if not self.coordinates:
            w = self._digit_bits
            top_bits = (self.index_space - 1).bit_length() - w * (self._n_coords - 1)
            ok = (chunks < self._radix).all(axis=1) & ((chunks[:, -1] >> np.int64(top_bits)) == 0)
            c = np.where(ok[:, None], chunks, 0)
            idx = np.zeros(m, dtype=np.int64)
            for i in range(self._n_coords):
                idx |= c[:, i] << np.int64(i * w)
            if self.index_space < 2**63:
                ok &= idx < self.index_space
            return np.where(ok, idx, 0), ok
        g, n, d, B = self.coords_per_chunk, self.n_chunks, self.n_dims, self.bins
        coords = np.zeros((m, n * g), dtype=np.int64)
        rest = chunks.copy()
        for t in range(g):
            coords[:, t::g] = rest % B
            rest //= B
        ok = (rest == 0).all(axis=1) & (coords[:, d:] == 0).all(axis=1)
        return coords[:, :d], ok

    def points_of(self, bins: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """Evaluation points X (int64 in [1, p)) and chunks (or None) of validated bins."""
        if not self.hashed:
            if self.coordinates:
                flat = np.zeros(bins.shape[0], dtype=np.int64)
                for t in range(self.n_dims):
                    flat = flat * self.bins + bins[:, t]
            else:
                flat = bins
            return flat + 1, None
        chunks = self.pack(bins)
        return self.hash_chunks(chunks), chunks

    def hash_chunks(self, chunks: np.ndarray) -> np.ndarray:
        """X = 1 + (h mod (p - 1)) with h = b + sum_k u_k a**(k+1) mod p (universal hash)."""
        a, b = self.hash_key
        rows = np.empty((chunks.shape[0], self.n_chunks + 1), dtype=np.int64)
        rows[:, 0] = b
        rows[:, 1:] = chunks
        h = np.empty(chunks.shape[0], dtype=np.int64)
        poly_eval_rows(rows, a, h, self.prime)
        return 1 + h % (self.prime - 1)

    def bins_of_points(self, points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bins of decoded points in direct (non-hashed) mode, and a validity mask."""
        flat = points - 1
        ok = (flat >= 0) & (flat < self.space_size)
        flat = np.where(ok, flat, 0)
        if not self.coordinates:
            return flat, ok
        coords = np.empty((flat.shape[0], self.n_dims), dtype=np.int64)
        for t in range(self.n_dims - 1, -1, -1):
            coords[:, t] = flat % self.bins
            flat = flat // self.bins
        return coords, ok

    def sort_order(self, bins: np.ndarray, points: np.ndarray) -> np.ndarray:
        """Permutation sorting decoded bins (lexicographically for coordinates)."""
        if not self.coordinates:
            return np.argsort(bins, kind="stable")
        if not self.hashed:
            return np.argsort(points, kind="stable")  # row-major flat index + 1
        # Big-endian chunks (first coordinate most significant) order like the coordinate rows;
        # sort on the shortest prefix of chunk columns that already separates all rows.
        g, n, B = self.coords_per_chunk, self.n_chunks, self.bins
        padded = np.zeros((bins.shape[0], n * g), dtype=np.int64)
        padded[:, :self.n_dims] = bins
        keys = padded.reshape(-1, n, g) @ np.array([B ** (g - 1 - t) for t in range(g)],
                                                    dtype=np.int64)
        width = 1
        while True:
            order = np.lexsort(keys[:, :width].T[::-1])
            srt = keys[order, :width]
            if width >= n or not (srt[1:] == srt[:-1]).all(axis=1).any():
                return np.lexsort(keys.T[::-1]) if width >= n else order
            width *= 2

    def shard_of(self, points: np.ndarray) -> np.ndarray:
        """Shard of each evaluation point: SplitMix64(X xor shard_key) mod n_shards."""
        if self.n_shards == 1:
            return np.zeros(points.shape[0], dtype=np.int64)
        z = _splitmix64(points.astype(np.uint64) ^ np.uint64(self.shard_key))
        return (z % np.uint64(self.n_shards)).astype(np.int64)

