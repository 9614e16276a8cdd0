"""MUFC's client role and its messages: [MUFC] Alg. 1, 2 and 4 as fedcore's protocol.

The server role is :class:`~fedcore.algorithms.mufc.server.MUFCServer`; the client role is
:class:`MUFCClient`. One fit and its removal requests exchange (``->``: the client's reply):

``MUFCHello`` -> ``MUFCJoin``
    The client's number of points and width, and unless the server has public bounds its
    per-feature minimum and maximum (counted, "bounds": MUFC's agreed bounds).
``MUFCSetup`` -> ``MUFCReady``
    The client's seed, the grid and SCMA's public parameters (setup, not counted); the client
    seeds with exact unlearning ([MUFC] Alg. 1 lines 2-3, :class:`UnlearnableKMeans`) and
    quantizes its centers into its sparse vector (line 4).
``MUFCRound`` -> ``SCMAVector`` (or ``PlainVector`` without secure aggregation)
    Round ``r`` (0: the fit; one per removal request, [MUFC] Alg. 4): the client holding the
    points to remove runs [MUFC] Alg. 3 first; every participant sends its vector, masked for
    the round's participants ([MUFC] Alg. 2; counted: the message's field elements).
``MUFCPrepare`` -> ``MUFCPrepared``
    Between requests: each participant makes the next round's mask offline (not counted; the
    MUFC paper does not count noise generation, and reports measure it apart).

Keys. In one process SCMA's key agreement is simulated: the server's
:class:`~fedcore.secagg.SCMASetup` holds every client's keys (drawn from OS entropy) and deals
them to the client roles through a :class:`SimulatedKeys` holder, the one thing of a MUFC run
that does not travel as a message. Deployed clients (Flower nodes) agree keys by X25519 instead
(:mod:`fedcore.integrations.flower.mufc`). Masks never change a decoded sum, so both give the same
model.
"""
from __future__ import annotations

import contextlib
import copy
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import check_ids
from ...federation.protocol import Message, ProtocolError, diagnostic, expect, generator_from_seed
from ..base import all_or_nothing
from ..clients import HorizontalClient
from .quantize import Quantizer, client_vector
from .unlearning import UnlearnableKMeans

__all__ = ["MUFCHello", "MUFCJoin", "MUFCSetup", "MUFCReady", "MUFCRound", "SCMAVector",
           "PlainVector", "MUFCPrepare", "MUFCPrepared", "RoundKeyRequest", "RoundKey",
           "KeySharesRequest", "SealedShares", "UnmaskRequest", "UnmaskShares", "SimulatedKeys",
           "MUFCClient"]

_NO_IDS = np.empty(0, dtype=np.int64)


@dataclass(frozen=True, eq=False)
class MUFCHello(Message):
    """Server to client, before a fit: report your size, your box when ``agree_bounds`` (the
    federation agrees on the bounds) and, for a ``secure`` fit, your public key (a deployed
    client). Setup, not counted."""

    counted = False
    agree_bounds: bool
    secure: bool


@dataclass(frozen=True, eq=False)
class MUFCJoin(Message):
    """Client to server: its per-feature minimum ``low`` and maximum ``high`` ([MUFC]'s agreed
    bounds; empty when the bounds are public), counted as ``2 d`` numbers of 64 bits ("bounds",
    as MUFC counts them, also for float32 data). Its number of points and width travel
    uncounted (MUFC's count is of the vectors)."""

    kind = "bounds"
    element_bits = 64  # (see above)
    low: np.ndarray
    high: np.ndarray
    n_samples: int = diagnostic()
    n_features: int = diagnostic()
    public_key: np.ndarray = diagnostic()  # uint8 (32,): a deployed client's X25519 key


@dataclass(frozen=True, eq=False)
class MUFCSetup(Message):
    """Server to client, before round 0 (setup, not counted): its ``client_id`` and settings
    (``client_clusters``, ``client_refine``), its random generator's seed (``entropy``,
    ``spawn_key``: :func:`~fedcore.federation.protocol.seed_fields`), the grid (``quantize``;
    ``low``, ``scale``, ``gamma``, ``phase``, empty for no shift) and SCMA's public parameters
    (``secure``; ``scma``: its public configuration as JSON text, ``public_keys``: every
    client's X25519 public key, uint8 (n_clients, 32), for deployed clients; empty when the keys
    are dealt in process)."""

    counted = False
    client_id: int
    client_clusters: int
    client_refine: bool
    entropy: str
    spawn_key: np.ndarray
    quantize: bool
    low: np.ndarray
    scale: float
    gamma: float
    phase: np.ndarray
    secure: bool
    scma: str
    public_keys: np.ndarray


@dataclass(frozen=True, eq=False)
class MUFCReady(Message):
    """Client to server: seeded and quantized, in ``seconds`` (a report, not counted)."""

    seconds: float = diagnostic()


@dataclass(frozen=True, eq=False)
class MUFCRound(Message):
    """Server to participant: send your vector for round ``round_number`` of the
    ``participants`` (int64, increasing), after removing the points ``remove`` (global ids; only
    to the client holding them, empty otherwise). Not counted: the round's control, and the data
    owner's request passed on (MUFC counts what the clients send). With dropout tolerance
    between deployed clients, ``shares`` holds the round-key shares the other participants sealed
    for this one (uint8, one row per sender in increasing order; empty otherwise)."""

    counted = False
    round_number: int
    participants: np.ndarray
    remove: np.ndarray
    shares: np.ndarray


@dataclass(frozen=True, eq=False)
class SCMAVector(Message):
    """Client to server: its masked SCMA message ([MUFC] Alg. 2), ``setup.message_length``
    field elements counted at the field's width (``bits``); the masks bind it to the setup, the
    round, the sender and the participants, so the bare elements travel. The rest is the
    client's report, uncounted (seconds of unlearning and encoding; ``retrained``: 1 or 0 when
    it removed points, -1 otherwise)."""

    kind = "scma_syndromes"
    message: np.ndarray
    bits: int = diagnostic()
    seconds_unlearn: float = diagnostic()
    seconds_encode: float = diagnostic()
    retrained: int = diagnostic()

    def bits_per_element(self, name: str, value: Any) -> int:
        """The field's width (``setup.bits_per_element``)."""
        return self.bits


@dataclass(frozen=True, eq=False)
class PlainVector(Message):
    """Client to server without secure aggregation: its vector in the clear, ``bins`` (int64
    (m, d) grid coordinates; SimplifiedFC: its float64 centers) and ``counts`` (int64), with
    the report of :class:`SCMAVector`."""

    kind = "bins+counts"
    bins: np.ndarray
    counts: np.ndarray
    seconds_unlearn: float = diagnostic()
    seconds_encode: float = diagnostic()
    retrained: int = diagnostic()


@dataclass(frozen=True, eq=False)
class MUFCPrepare(Message):
    """Server to participant, between requests: make the mask of round ``round_number`` for
    ``participants`` now (offline). Not counted."""

    counted = False
    round_number: int
    participants: np.ndarray


@dataclass(frozen=True, eq=False)
class MUFCPrepared(Message):
    """Client to server: the mask is ready, made in ``seconds`` (a report, not counted)."""

    seconds: float = diagnostic()


@dataclass(frozen=True, eq=False)
class RoundKeyRequest(Message):
    """Server to participant, dropout tolerance between deployed clients ([SecAgg]): make a
    fresh key pair for round ``round_number``. Not counted."""

    counted = False
    round_number: int


@dataclass(frozen=True, eq=False)
class RoundKey(Message):
    """Participant to server: its round public key (uint8 (32,)), counted in bytes."""

    kind = "round-key"
    key: np.ndarray


@dataclass(frozen=True, eq=False)
class KeySharesRequest(Message):
    """Server to participant: the round public keys of the ``participants`` (uint8 (P, 32),
    relayed, not counted); seal Shamir shares of your round key for the others."""

    counted = False
    round_number: int
    participants: np.ndarray
    round_keys: np.ndarray


@dataclass(frozen=True, eq=False)
class SealedShares(Message):
    """Participant to server: one sealed share per other participant (uint8 rows, holders in
    increasing order), counted in bytes; the server forwards each row to its holder."""

    kind = "key-shares"
    boxes: np.ndarray


@dataclass(frozen=True, eq=False)
class UnmaskRequest(Message):
    """Server to survivor, after participants dropped out of round ``round_number``: reveal your
    shares of the ``dropped`` clients' round keys. Not counted."""

    counted = False
    round_number: int
    dropped: np.ndarray


@dataclass(frozen=True, eq=False)
class UnmaskShares(Message):
    """Survivor to server: its shares of the dropped clients' round keys (uint8 rows, dropped
    clients in increasing order), counted in bytes."""

    kind = "unmask"
    shares: np.ndarray


class SimulatedKeys:
    """The key dealer of an in-process MUFC run (see the module's notes): the server puts its
    :class:`~fedcore.secagg.SCMASetup`, which simulates every client's keys, in ``setup``; each
    :class:`MUFCClient` holding this dealer encodes with it."""

    def __init__(self) -> None:
        self.setup = None


class MUFCClient(HorizontalClient):
    """MUFC's client role ([MUFC] Alg. 1 lines 2-4, Alg. 2, Alg. 3): holds one client's data,
    answers the messages of the module's notes.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), the client's data
    client_id : int
    ids : array-like of shape (n_samples,), the global ids of its rows (None: ``arange``)
    keys : SimulatedKeys or None, the in-process key dealer (None: the client cannot encode
        securely here; deployed clients agree keys as in :mod:`fedcore.integrations.flower.mufc`)

    Attributes
    ----------
    X, ids : the client's data until the set-up; then None (the model holds its points)
    model : UnlearnableKMeans, after the set-up; its centers are the client's [MUFC] Alg. 1
        centers, removals go through :class:`MUFCRound`
    quantizer : Quantizer or None (SimplifiedFC sends its centers unquantized)
    vector : (bins, counts), the client's current sparse vector
    encoder : SCMAClient or None (plaintext sum)
    """

    def __init__(self, X: ArrayLike, client_id: int = 0, ids: ArrayLike | None = None, *,
                 _checked: bool = False, keys: SimulatedKeys | None = None) -> None:
        super().__init__(X, client_id, _checked=_checked)
        n = self.X.shape[0]
        self.ids = np.arange(n, dtype=np.int64) if ids is None else \
            (np.asarray(ids) if _checked else check_ids(ids, f"ids of client {self.client_id}"))
        if self.ids.shape[0] != n:
            raise ValueError(f"Argument 'ids' of client {self.client_id} holds "
                             f"{self.ids.shape[0]} ids for {n} rows")
        self.keys = keys
        self.private_key = self.public_key = None  # a deployed client's X25519 key pair
        self.model = self.quantizer = self.vector = self.encoder = None
        self.prepared = None  # (round, participants) whose mask is made

    def handle(self, message: Message) -> Message:
        name = f"client {self.client_id}"
        if isinstance(message, MUFCHello):
            boxes = message.agree_bounds
            empty = np.empty(0)
            public = np.empty(0, dtype=np.uint8)
            if message.secure and self.keys is None:  # deployed: a key pair from OS entropy
                from ...secagg import generate_key_pair
                self.private_key, self.public_key = generate_key_pair()
                public = np.frombuffer(self.public_key, dtype=np.uint8).copy()
            return MUFCJoin(self.X.min(axis=0) if boxes else empty,
                            self.X.max(axis=0) if boxes else empty, int(self.X.shape[0]),
                            int(self.X.shape[1]), public)
        if isinstance(message, MUFCSetup):
            return self._setup(message)
        if self.model is None:
            raise ProtocolError(f"{name} is not set up: expected a MUFCSetup first, got "
                                f"{type(message).__name__}")
        if isinstance(message, (RoundKeyRequest, KeySharesRequest, UnmaskRequest)):
            return self._keys_step(message)
        if isinstance(message, MUFCPrepare):
            t0 = time.perf_counter()
            participants = tuple(message.participants.tolist())
            self.encoder.precompute_mask(message.round_number, participants)
            self.prepared = (message.round_number, participants)
            return MUFCPrepared(time.perf_counter() - t0)
        return self._round(expect(message, MUFCRound, name))

    def _setup(self, m):
        t0 = time.perf_counter()
        self.quantizer = Quantizer(m.low, m.scale, m.gamma, m.phase if m.phase.size else None) \
            if m.quantize else None
        rng = generator_from_seed(m.entropy, m.spawn_key)
        self.model = UnlearnableKMeans(m.client_clusters, refine=m.client_refine,
                                       random_state=rng).fit(self.X, sample_ids=self.ids)
        self.X = self.ids = None  # the model holds the client's points from now on
        self.vector = self._vector()
        self.encoder = None
        if m.secure:
            from ...secagg import SCMAClient, SCMASetup
            if self.keys is not None:  # in process: the server's setup deals the keys
                self.encoder = SCMAClient(m.client_id, self.keys.setup)
            else:  # deployed: pair keys by X25519 with the relayed public keys, through HKDF
                setup = SCMASetup.from_public_config(json.loads(m.scma))
                peers = {l: bytes(key) for l, key in enumerate(m.public_keys)
                         if l != m.client_id}
                self.encoder = SCMAClient(m.client_id, setup, private_key=self.private_key,
                                          public_keys=peers)
        return MUFCReady(time.perf_counter() - t0)

    def _vector(self):
        if self.quantizer is not None:
            return client_vector(self.quantizer, self.model)
        keep = self.model.cluster_sizes_ > 0  # SimplifiedFC: its centers, in the clear
        return (self.model.cluster_centers_[keep].astype(np.float64),
                self.model.cluster_sizes_[keep])

    def _round(self, m):
        t0 = time.perf_counter()
        retrained = -1
        if m.remove.size:
            retrained = int(self.model.remove(m.remove).retrained)
            self.vector = self._vector()
        t1 = time.perf_counter()
        bins, counts = self.vector
        if self.encoder is None:
            return PlainVector(bins, counts, t1 - t0, 0.0, retrained)
        participants = tuple(m.participants.tolist())
        if m.shares.size:  # dropout tolerance: the shares sealed for this client
            senders = [p for p in participants if p != self.client_id]
            self.encoder.receive_key_shares(m.round_number, {
                u: bytes(box) for u, box in zip(senders, m.shares)})
        if self.prepared != (m.round_number, participants):  # the participants changed
            self.encoder.precompute_mask(m.round_number, participants)
        message = self.encoder.encode(bins, counts, round=m.round_number,
                                      participants=participants)
        self.prepared = None
        return SCMAVector(np.asarray(message), self.encoder.setup.bits_per_element, t1 - t0,
                          time.perf_counter() - t1, retrained)

    def _keys_step(self, m):
        """Dropout tolerance between deployed clients ([SecAgg]; ``secagg.SCMAClient``)."""
        r = m.round_number
        if isinstance(m, RoundKeyRequest):
            return RoundKey(np.frombuffer(self.encoder.round_public_key(r), dtype=np.uint8).copy())
        if isinstance(m, KeySharesRequest):
            keys = {int(l): bytes(key) for l, key in zip(m.participants, m.round_keys)}
            sealed = self.encoder.key_shares(r, keys)
            return SealedShares(_rows([sealed[h] for h in sorted(sealed)]))
        shares = self.encoder.reveal_key_shares(r, m.dropped.tolist())
        return UnmaskShares(_rows([shares[u] for u in sorted(shares)]))

    @contextlib.contextmanager
    def transaction(self, removing: bool = False) -> Iterator[None]:
        """A block that, if it raises, leaves this role as it was: its vector and mask state,
        its encoder's round state (:meth:`~fedcore.secagg.SCMAClient.round_state`), and with
        ``removing`` its model (:func:`~fedcore.algorithms.base.all_or_nothing`). Cheap: a round
        runs it for every participant."""
        if not removing and self.encoder is None:  # a plaintext round changes nothing here
            yield
            return
        saved = (self.vector, self.prepared)
        encoder = [] if self.encoder is None else [
            (obj, {n: copy.deepcopy(obj.__dict__[n]) for n in deep},
             {n: copy.copy(obj.__dict__[n]) for n in shallow})
            for obj, deep, shallow in self.encoder.round_state()]
        with all_or_nothing(self.model, self.model.REMOVAL_DEEP, self.model.REMOVAL_SHALLOW) \
                if removing else contextlib.nullcontext():
            try:
                yield
            except BaseException:
                self.vector, self.prepared = saved
                for obj, deep, shallow in encoder:
                    obj.__dict__.update(deep)
                    obj.__dict__.update(shallow)
                raise


def _rows(blobs):
    """Equal-length byte strings as the rows of a uint8 array."""
    width = len(blobs[0]) if blobs else 0
    return np.frombuffer(b"".join(blobs), dtype=np.uint8).reshape(len(blobs), width).copy()
