"""DeepFeCA: federated representation learning by FeCA and DeepCluster on FedAvg ([FeCA] Section 5,
[FeCA] Alg. 6).

Each round ``t = 1..T`` of [FeCA] Alg. 6:

1. the server broadcasts the encoder weights ``theta_bar`` (:class:`DeepFeCAWeights`, one flat
   float32 vector); each client loads them, extracts the features ``f_theta_bar(x)`` of its data
   and answers :class:`DeepFeCAReady` (empty, not counted);
2. the clients and the server run one aggregation method on those features ([FeCA] Alg. 6
   line 4): FeCA ([FeCA] Alg. 1, the roles :class:`~fedcore.algorithms.feca.FeCAClient` and
   :class:`~fedcore.algorithms.feca.FeCAServer`), or for the comparison of [FeCA] Table 3 the
   server roles of M-Avg, k-FED or one round of FFCM v1 / v2, unchanged: their messages travel
   over the same channel, counted in the same round;
3. the server broadcasts the ``k`` aggregated centroids ``C*`` (:class:`DeepFeCACentroids`,
   [FeCA] Alg. 6 line 5); each client labels its points by their nearest centroid (line 7),
   trains the encoder with a fresh linear head on those pseudo-labels (line 8) and sends its
   weights and its number of points back (:class:`DeepFeCAUpdate`);
4. the server averages the weights by client size (FedAvg, [FeCA] Alg. 6 line 10, :func:`fedavg`).

After round ``T`` one more round of steps 1-2 (round ``T + 1``) clusters the features of the final
encoder, so that ``cluster_centers_`` and ``encoder_`` belong together ([FeCA] Alg. 6 returns
the encoder only). Setup (round 0, not counted): the server sends each client its seed and the
training settings (:class:`DeepFeCASetup`); each client answers with its width
(:class:`DeepFeCAShape`), from which the server builds the default encoder.

PyTorch is imported inside the functions that need it (``pip install "fedcore[deep]"``); the
default encoders are in :mod:`fedcore.algorithms.feca.encoders`.
"""
from __future__ import annotations

import copy
import math
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import check_fitted_array, check_int, check_random_state, check_scalar
from ...federation.horizontal import HorizontalFederation
from ...federation.ledger import CommLedger
from ...federation.protocol import (Channel, InProcessChannel, Message, ProtocolError, diagnostic,
                                    expect)
from ..kmeans.lloyd import assign
from ..base import FederatedEstimator, check_is_fitted
from ..baselines.ffcm import FFCMClient, FFCMGlobalCenters, FFCMServer, FFCMSetup
from ..baselines.kfed import KFedServer
from ..baselines.match_averaging import MatchAveragingServer
from ..clients import (HorizontalClient, LocalKMeansClient, LocalKMeansSetup, check_federation,
                       client_seeds)
from .feca import FeCAClient, FeCAServer, FeCASetup, FewerGroupsWarning

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["DeepFeCA", "DeepFeCAResult", "deep_feca", "check_deep_feca_params",
           "DeepFeCAServer", "DeepFeCAClient", "DeepFeCASetup", "DeepFeCAShape",
           "DeepFeCAWeights", "DeepFeCAReady", "DeepFeCACentroids", "DeepFeCAUpdate",
           "AGGREGATIONS", "fedavg", "pseudo_labels", "flatten_weights", "load_weights",
           "encode_features", "local_training"]

AGGREGATIONS = ("feca", "mavg", "ffcm1", "ffcm2", "kfed")
MOMENTUM = 0.9  # SGD momentum of the local training (DeepCluster's)
_ENCODE_ROWS = 1024  # rows per forward pass when extracting features (fixed: same bits always)


def require_torch() -> Any:
    """Import torch, or raise an ImportError that says how to install it."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError('DeepFeCA needs PyTorch, an optional dependency of fedcore: '
                          'pip install "fedcore[deep]"') from exc
    return torch


# --------------------------------------------------------------------------------------------
# Weights as one flat vector, FedAvg, features, pseudo-labels, local training
# --------------------------------------------------------------------------------------------

def flatten_weights(module: Any) -> np.ndarray:
    """The state of ``module`` as ONE flat float32 vector: every tensor of
    ``module.state_dict()`` (parameters and buffers), in that order, flattened and concatenated.

    Parameters
    ----------
    module : torch.nn.Module

    Returns
    -------
    ndarray of shape (n_weights,), float32
        Floating tensors are cast to float32; integer buffers (e.g. BatchNorm's
        ``num_batches_tracked``) travel as float32 too and are rounded back by
        :func:`load_weights`.
    """
    parts = [t.detach().cpu().reshape(-1).to(dtype=_torch_float32()).numpy()
             for t in module.state_dict().values()]
    if not parts:
        return np.empty(0, dtype=np.float32)
    return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)


def _torch_float32():
    return require_torch().float32


def load_weights(module: Any, weights: ArrayLike) -> Any:
    """Load a vector written by :func:`flatten_weights` into ``module`` (in place).

    Raises ``ValueError`` when the length does not match ``module``'s state; each tensor keeps its
    dtype (integer buffers are rounded).
    """
    torch = require_torch()
    weights = np.asarray(weights)
    state = module.state_dict()
    n = sum(int(t.numel()) for t in state.values())
    if weights.ndim != 1 or weights.shape[0] != n:
        raise ValueError(f"The encoder holds {n} weights, got a vector of shape {weights.shape}")
    new, offset = {}, 0
    for name, t in state.items():
        chunk = torch.from_numpy(np.array(weights[offset:offset + t.numel()], dtype=np.float32))
        offset += t.numel()
        if not t.is_floating_point():
            chunk = torch.round(chunk)
        new[name] = chunk.reshape(t.shape).to(dtype=t.dtype)
    module.load_state_dict(new)
    return module


def fedavg(client_weights: Sequence[ArrayLike], n_samples: Sequence[int]) -> np.ndarray:
    """FedAvg, [FeCA] Alg. 6 line 10: ``theta_bar = sum_m |D_m| / |D| * theta_m``.

    Parameters
    ----------
    client_weights : list of ndarray of shape (n_weights,), float32, the clients' vectors
    n_samples : list of int, ``|D_m|`` of each client

    Returns
    -------
    ndarray of shape (n_weights,), float32
        ``(sum_m n_m * theta_m) / sum_m n_m`` computed in float64, summed in client order, then
        rounded to float32.
    """
    total = 0
    acc = None
    for w, n in zip(client_weights, n_samples, strict=True):
        term = float(n) * np.asarray(w, dtype=np.float64)
        acc = term if acc is None else acc + term
        total += int(n)
    if acc is None or total <= 0:
        raise ValueError("FedAvg needs at least one client with points")
    return (acc / float(total)).astype(np.float32)


def encode_features(encoder: Any, X: ArrayLike) -> np.ndarray:
    """``f_theta(X)``: the encoder's features of the rows of ``X``, in evaluation mode without
    gradients, ``1024`` rows per forward pass.

    Parameters
    ----------
    encoder : torch.nn.Module, see :class:`DeepFeCA` for the contract
    X : ndarray of shape (n_samples, n_features), cast to float32

    Returns
    -------
    ndarray of shape (n_samples, feature_dim), float64 (the float32 features, exactly)
    """
    torch = require_torch()
    X = np.ascontiguousarray(X, dtype=np.float32)
    was_training = encoder.training
    encoder.eval()
    out = []
    try:
        with torch.no_grad():
            for start in range(0, X.shape[0], _ENCODE_ROWS):
                out.append(encoder(torch.from_numpy(X[start:start + _ENCODE_ROWS])).numpy())
    finally:
        encoder.train(was_training)
    F = np.concatenate(out) if out else np.empty((0, 0), dtype=np.float32)
    return np.ascontiguousarray(F, dtype=np.float64)


def pseudo_labels(features: ArrayLike, centers: ArrayLike) -> np.ndarray:
    """[FeCA] Alg. 6 line 7: ``y_n = argmin_j ||f(x_n) - c_j||_2`` (lowest ``j`` on ties).

    Parameters
    ----------
    features : ndarray of shape (n_samples, feature_dim), float64
    centers : ndarray of shape (n_centers, feature_dim), ``C*``

    Returns
    -------
    ndarray of shape (n_samples,), int64 in ``[0, n_centers)``
    """
    return assign(np.ascontiguousarray(features, dtype=np.float64), centers)[0]


def local_training(encoder: Any, X: ArrayLike, labels: ArrayLike, n_clusters: int, *,
                   epochs: int, lr: float, batch_size: int, seed: int) -> float:
    """[FeCA] Alg. 6 line 8 on one client: train the encoder with a new linear head on the
    pseudo-labels, in place; returns the mean cross-entropy of the last epoch.

    Parameters
    ----------
    encoder : torch.nn.Module, trained in place (left in evaluation mode)
    X : ndarray of shape (n_samples, n_features)
    labels : ndarray of shape (n_samples,), pseudo-labels in ``[0, n_clusters)``
    n_clusters : int, outputs of the head
    epochs, lr, batch_size : the local schedule (see :class:`DeepFeCA`)
    seed : int, seeds the head, the shuffling and any randomness of the encoder

    Notes
    -----
    - The head is ``Linear(feature_dim, n_clusters)`` with PyTorch's default initialization
      drawn from a ``torch.Generator`` seeded with ``seed``; it is new every round and never
      sent ([FeCA] Alg. 6 line 10 averages ``theta`` only; see :class:`DeepFeCA`).
    - SGD with momentum 0.9, a new optimizer every round (FedAvg keeps no optimizer state).
    - The cross-entropy weights each pseudo-class by ``n / (n_present * n_j)`` (``n_j`` points in
      class ``j``), the loss of sampling uniformly over the pseudo-classes by which DeepCluster
      avoids the trivial solution where one large cluster absorbs the others (Caron et al. 2018,
      Section 3.3), at a fixed number of steps.
    - Each epoch visits the points in the order of ``torch.randperm`` drawn from the seeded
      generator, in batches of ``batch_size`` (the last may be smaller).
    - Runs under ``torch.use_deterministic_algorithms(True)`` inside a forked global generator
      seeded from ``seed`` (dropout and other layers that draw from it are reproducible too);
      the previous setting and the caller's generator are restored. Same seed, same weights bit
      for bit, for one PyTorch build and thread count.
    """
    torch = require_torch()
    nn = torch.nn
    X_t = torch.from_numpy(np.ascontiguousarray(X, dtype=np.float32))
    y_t = torch.from_numpy(np.ascontiguousarray(labels, dtype=np.int64))
    n = X_t.shape[0]
    generator = torch.Generator().manual_seed(int(seed))
    counts = np.bincount(np.asarray(labels), minlength=n_clusters).astype(np.float64)
    present = counts > 0
    class_weights = np.zeros(n_clusters)
    class_weights[present] = n / (present.sum() * counts[present])
    class_weights = torch.from_numpy(class_weights.astype(np.float32))
    previous = (torch.are_deterministic_algorithms_enabled(),
                torch.is_deterministic_algorithms_warn_only_enabled())
    torch.use_deterministic_algorithms(True)
    try:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(int(torch.randint(0, 2**62, (1,), generator=generator)))
            encoder.eval()
            with torch.no_grad():
                feature_dim = int(encoder(X_t[:1]).shape[1])
            head = nn.Linear(feature_dim, n_clusters)
            bound = 1.0 / math.sqrt(feature_dim)
            with torch.no_grad():
                # PyTorch's default Linear initialization, from the seeded generator.
                head.weight.uniform_(-bound, bound, generator=generator)
                head.bias.uniform_(-bound, bound, generator=generator)
            params = list(encoder.parameters()) + list(head.parameters())
            optimizer = torch.optim.SGD(params, lr=lr, momentum=MOMENTUM)
            # Weighted mean: sum_i w_(y_i) CE_i / sum_i w_(y_i) over the batch.
            loss_fn = nn.CrossEntropyLoss(weight=class_weights)
            encoder.train()
            last = 0.0
            for _ in range(epochs):
                order = torch.randperm(n, generator=generator)
                total = 0.0
                for start in range(0, n, batch_size):
                    idx = order[start:start + batch_size]
                    loss = loss_fn(head(encoder(X_t[idx])), y_t[idx])
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    total += float(loss.detach()) * idx.shape[0]
                last = total / n
    finally:
        torch.use_deterministic_algorithms(previous[0], warn_only=previous[1])
        encoder.eval()
    return last


# --------------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------------

def check_deep_feca_params(n_clusters: int, encoder: Any = None, rounds: int = 10,
                           local_epochs: int = 5, lr: float = 0.05, batch_size: int = 32,
                           client_clusters: int | None = None,
                           aggregation: str = "feca") -> dict[str, Any]:
    """Validate DeepFeCA's parameters once; returns them as a dict, with ``min_client_points``
    (the points every client needs: ``client_clusters`` as the aggregation resolves it, 1 for
    FFCM) added. Raises ``TypeError`` / ``ValueError`` naming the argument."""
    k = check_int(n_clusters, "n_clusters", min_value=1)
    torch = require_torch()  # before anything runs: a clear ImportError without PyTorch
    if encoder is not None:
        if not isinstance(encoder, torch.nn.Module):
            raise TypeError(f"Argument 'encoder' must be a torch.nn.Module or None, got "
                            f"{type(encoder).__name__}")
    if not isinstance(aggregation, str) or aggregation not in AGGREGATIONS:
        raise ValueError(f"Argument 'aggregation' must be one of {AGGREGATIONS}, got "
                         f"{aggregation!r}")
    if aggregation.startswith("ffcm") and client_clusters is not None:
        raise ValueError(f"Argument 'client_clusters' must be None with aggregation="
                         f"{aggregation!r}: FFCM's clients fit n_clusters centers, got "
                         f"{client_clusters!r}")
    params = {"n_clusters": k, "encoder": encoder,
              "rounds": check_int(rounds, "rounds", min_value=1),
              "local_epochs": check_int(local_epochs, "local_epochs", min_value=1),
              "lr": check_scalar(lr, "lr", min_value=0.0, include_min=False),
              "batch_size": check_int(batch_size, "batch_size", min_value=1),
              "client_clusters": client_clusters, "aggregation": aggregation}
    server = aggregation_server(aggregation, k, client_clusters, 0)  # checks client_clusters
    params["min_client_points"] = {"feca": lambda s: s.params["client_clusters"],
                                   "mavg": lambda s: s.client_clusters,
                                   "kfed": lambda s: s.client_clusters}.get(
        aggregation, lambda s: 1)(server)
    return params


def aggregation_server(aggregation: str, n_clusters: int, client_clusters: int | None,
                       seed: int) -> Any:
    """The server role that runs [FeCA] Alg. 6 line 4 on the clients' features: FeCA's
    (:class:`~fedcore.algorithms.feca.FeCAServer`), M-Avg's
    (:class:`~fedcore.algorithms.baselines.MatchAveragingServer`), k-FED's
    (:class:`~fedcore.algorithms.baselines.KFedServer`) or one round of FFCM v1 / v2
    (:class:`~fedcore.algorithms.baselines.FFCMServer`), with their default settings and
    ``random_state=seed``."""
    if aggregation == "feca":
        return FeCAServer(n_clusters, client_clusters=client_clusters, random_state=seed)
    if aggregation == "mavg":
        return MatchAveragingServer(n_clusters, client_clusters=client_clusters,
                                    random_state=seed)
    if aggregation == "kfed":
        return KFedServer(n_clusters, client_clusters=client_clusters, random_state=seed)
    return FFCMServer(n_clusters, version=int(aggregation[-1]), n_rounds=1, random_state=seed)


def _aggregation_client(aggregation, features, client_id):
    if aggregation == "feca":
        return FeCAClient(features, client_id)
    if aggregation in ("mavg", "kfed"):
        return LocalKMeansClient(features, client_id)
    return FFCMClient(features, client_id)


_AGGREGATION_MESSAGES = (FeCASetup, LocalKMeansSetup, FFCMSetup, FFCMGlobalCenters)


def _round_seed(seed, round_number):
    """The client's seed of one round, derived from its setup seed (nothing more is sent)."""
    state = np.random.SeedSequence([int(seed), int(round_number)]).generate_state(1, np.uint64)
    return int(state[0] >> np.uint64(1))


# --------------------------------------------------------------------------------------------
# Protocol: messages and roles
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class DeepFeCASetup(Message):
    """Server to client, round 0: the client's seed, the aggregation method and the local
    training settings of [FeCA] Alg. 6 line 8 (setup, not counted)."""

    counted = False
    seed: int
    n_clusters: int
    aggregation: str
    local_epochs: int
    lr: float
    batch_size: int


@dataclass(frozen=True, eq=False)
class DeepFeCAShape(Message):
    """Client to server, round 0: the width of the client's rows, from which the server builds
    the default encoder (setup, not counted)."""

    counted = False
    n_features: int


@dataclass(frozen=True, eq=False)
class DeepFeCAWeights(Message):
    """Server to client, each round: ``theta_bar`` as one flat float32 vector
    (:func:`flatten_weights`), [FeCA] Alg. 6 lines 4-5."""

    kind = "encoder weights"
    weights: np.ndarray


@dataclass(frozen=True, eq=False)
class DeepFeCAReady(Message):
    """Client to server: the features of ``theta_bar`` are computed (empty: not counted)."""


@dataclass(frozen=True, eq=False)
class DeepFeCACentroids(Message):
    """Server to client, each round: the aggregated centroids ``C*``, [FeCA] Alg. 6 line 5."""

    kind = "global centroids"
    centers: np.ndarray


@dataclass(frozen=True, eq=False)
class DeepFeCAUpdate(Message):
    """Client to server, each round: the trained ``theta_m`` ([FeCA] Alg. 6 line 8) and
    ``|D_m|`` for FedAvg (line 10); ``loss``, the last epoch's mean cross-entropy, is a report."""

    kind = "encoder update"
    weights: np.ndarray
    n_samples: int
    loss: float = diagnostic()


class DeepFeCAClient(HorizontalClient):
    """DeepFeCA's client role: holds one client's data and its copy of the encoder.

    Answers :class:`DeepFeCASetup` with :class:`DeepFeCAShape`, :class:`DeepFeCAWeights` with
    :class:`DeepFeCAReady` (after extracting its features), the aggregation method's messages
    through that method's client role on the features (a new one each round), and
    :class:`DeepFeCACentroids` with :class:`DeepFeCAUpdate` (pseudo-labels and local training).
    Its state pickles (the Flower adapter keeps it between messages); it holds no torch
    generator: each round's seed is derived from the setup seed and the round's number.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features), the client's data (checked here)
    client_id : int, used in error messages
    encoder : torch.nn.Module or None, the architecture (a copy is trained); None: the default
        encoder for the data's width (:func:`~fedcore.algorithms.feca.encoders.default_encoder`)

    Attributes
    ----------
    labels : ndarray of int64 or None, the pseudo-labels of the last round ([FeCA] Alg. 6 line 7)
    features : ndarray of float64 or None, ``f_theta_bar(X)`` of the current round
    """

    def __init__(self, X: ArrayLike, client_id: int = 0, encoder: Any = None) -> None:
        super().__init__(X, client_id)
        self.X = self.X.astype(np.float32, copy=False)  # what the encoder reads
        self.prototype = encoder
        self.setup = None
        self.model = None
        self.round_number = 0
        self.features = None
        self.labels = None
        self.inner = None

    def handle(self, message: Message) -> Message:
        role = f"DeepFeCA client {self.client_id}"
        if self.setup is None:
            self.setup = expect(message, DeepFeCASetup, role)
            self.model = _new_encoder(self.prototype, self.X.shape[1], seed=0)
            return DeepFeCAShape(n_features=int(self.X.shape[1]))
        if isinstance(message, DeepFeCAWeights):
            try:
                load_weights(self.model, message.weights)
            except ValueError as exc:
                raise ProtocolError(f"{role}: {exc}") from None
            self.round_number += 1
            self.features = encode_features(self.model, self.X)
            if not np.isfinite(self.features).all():
                raise ValueError(f"{role}: the encoder gives non-finite features (the training "
                                 "diverged: lower 'lr')")
            self.inner = _aggregation_client(self.setup.aggregation, self.features,
                                             self.client_id)
            return DeepFeCAReady()
        if isinstance(message, _AGGREGATION_MESSAGES) and self.inner is not None:
            return self.inner.handle(message)
        m = expect(message, DeepFeCACentroids, role)
        if self.features is None:
            raise ProtocolError(f"{role} received centroids before the encoder's weights")
        if m.centers.ndim != 2 or m.centers.shape[1] != self.features.shape[1] \
                or not 1 <= m.centers.shape[0] <= self.setup.n_clusters:
            raise ProtocolError(f"{role}: centroids of shape {m.centers.shape} do not fit "
                                f"features of width {self.features.shape[1]} and "
                                f"n_clusters={self.setup.n_clusters}")
        s = self.setup
        self.labels = pseudo_labels(self.features, m.centers)
        loss = local_training(self.model, self.X, self.labels, s.n_clusters,
                              epochs=s.local_epochs, lr=s.lr, batch_size=s.batch_size,
                              seed=_round_seed(s.seed, self.round_number))
        self.features = self.inner = None
        return DeepFeCAUpdate(flatten_weights(self.model), int(self.X.shape[0]), float(loss))


def _new_encoder(prototype, n_features, seed):
    """A copy of ``prototype`` (as given), or the default encoder for ``n_features`` initialized
    from ``seed``; float32, evaluation mode."""
    if prototype is None:
        from .encoders import default_encoder
        return default_encoder(n_features, seed=seed)
    return copy.deepcopy(prototype).float().eval()


def _check_encoder(encoder, n_features):
    """Run ``encoder`` on two zero rows; ``ValueError`` unless it gives (2, feature_dim)."""
    torch = require_torch()
    try:
        with torch.no_grad():
            out = encoder(torch.zeros((2, n_features), dtype=torch.float32))
    except Exception as exc:
        raise ValueError(f"Argument 'encoder' must map (batch, {n_features}) float32 tensors to "
                         f"(batch, feature_dim); it failed on (2, {n_features}): "
                         f"{type(exc).__name__}: {exc}") from None
    if not isinstance(out, torch.Tensor) or out.ndim != 2 or out.shape[0] != 2 \
            or out.shape[1] < 1 or not out.is_floating_point():
        shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
        raise ValueError(f"Argument 'encoder' must map (batch, {n_features}) float32 tensors to "
                         f"(batch, feature_dim) floats, got {shape} for a batch of 2")
    return int(out.shape[1])


class _RoundChannel(Channel):
    """The channel the aggregation's server role runs over in round ``round_number`` of DeepFeCA:
    its messages go through DeepFeCA's channel, counted in DeepFeCA's ledger under that
    round."""

    def __init__(self, channel, round_number):
        self.channel = channel
        self.round_number = round_number
        self.n_clients = channel.n_clients
        self.ledger = channel.ledger

    def exchange(self, requests, *_, **__):
        # The aggregation's own round numbers (given positionally or by keyword) are replaced
        # by DeepFeCA's round.
        return self.channel.exchange(requests, self.round_number)


class DeepFeCAResult(NamedTuple):
    """Everything :func:`deep_feca` computes (see :class:`DeepFeCA` for each field)."""

    cluster_centers: np.ndarray
    encoder: object
    history: list
    n_groups: object
    comm: CommLedger
    n_features_in: int


class DeepFeCAServer:
    """DeepFeCA's server role: setup, ``rounds`` rounds of [FeCA] Alg. 6, then the clustering of
    the final features (round ``rounds + 1``).

    Takes the parameters of :class:`DeepFeCA` and checks them (:func:`check_deep_feca_params`,
    kept in ``params``). From ``random_state``: one seed per client
    (:func:`~fedcore.algorithms.clients.client_seeds`), the seed of the default encoder's
    initialization, then one seed per round for the aggregation's server role.
    """

    def __init__(self, n_clusters: int, *, encoder: Any = None, rounds: int = 10,
                 local_epochs: int = 5, lr: float = 0.05, batch_size: int = 32,
                 client_clusters: int | None = None,
                 aggregation: Literal["feca", "mavg", "ffcm1", "ffcm2", "kfed"] = "feca",
                 random_state: np.random.Generator | int | None = None) -> None:
        self.params = check_deep_feca_params(n_clusters, encoder, rounds, local_epochs, lr,
                                             batch_size, client_clusters, aggregation)
        self.random_state = random_state

    def run(self, channel: Channel) -> DeepFeCAResult:
        """Run [FeCA] Alg. 6 over ``channel``; returns a :class:`DeepFeCAResult`."""
        p = self.params
        rng = check_random_state(self.random_state)
        seeds = client_seeds(rng, channel.n_clients)
        replies = channel.exchange({l: DeepFeCASetup(
            seed=seed, n_clusters=p["n_clusters"], aggregation=p["aggregation"],
            local_epochs=p["local_epochs"], lr=p["lr"], batch_size=p["batch_size"])
            for l, seed in enumerate(seeds)}, 0)
        widths = {expect(replies[l], DeepFeCAShape, "DeepFeCA server").n_features
                  for l in range(channel.n_clients)}
        if len(widths) != 1:
            raise ValueError(f"DeepFeCA clients hold rows of different widths {sorted(widths)}")
        n_features = widths.pop()
        init_seed = int(rng.integers(0, np.iinfo(np.int64).max))
        model = _new_encoder(p["encoder"], n_features, seed=init_seed)
        _check_encoder(model, n_features)
        weights = flatten_weights(model)
        history = []
        for t in range(1, p["rounds"] + 1):
            centers, n_groups = self._cluster(channel, weights, t, rng)
            replies = channel.broadcast(DeepFeCACentroids(centers), t)
            updates = [expect(replies[l], DeepFeCAUpdate, "DeepFeCA server")
                       for l in range(channel.n_clients)]
            for l, u in enumerate(updates):
                if u.weights.shape != weights.shape or not np.isfinite(u.weights).all():
                    raise ValueError(f"DeepFeCA client {l} sent encoder weights of shape "
                                     f"{u.weights.shape} (expected {weights.shape}, finite): "
                                     "if they are not finite, the training diverged; lower "
                                     "'lr'")
            new = fedavg([u.weights for u in updates], [u.n_samples for u in updates])
            sizes = np.array([u.n_samples for u in updates], dtype=np.float64)
            history.append({
                "round": t, "n_centers": int(centers.shape[0]), "n_groups": n_groups,
                "loss": float(sizes @ np.array([u.loss for u in updates]) / sizes.sum()),
                "weight_change": float(np.linalg.norm(new.astype(np.float64) - weights))})
            weights = new
        centers, n_groups = self._cluster(channel, weights, p["rounds"] + 1, rng)
        load_weights(model, weights)
        model.eval()
        if centers.shape[0] < p["n_clusters"]:
            warnings.warn(f"DeepFeCA's final aggregation ({p['aggregation']}) gave "
                          f"{centers.shape[0]} center(s), fewer than n_clusters="
                          f"{p['n_clusters']}: cluster_centers_ is not padded (FeCA paper, "
                          "Appendix E)", FewerGroupsWarning, stacklevel=3)
        return DeepFeCAResult(centers, model, history, n_groups, channel.ledger, n_features)

    def _cluster(self, channel, weights, t, rng):
        """[FeCA] Alg. 6 line 4 in round ``t``: weights down, then the aggregation's roles on
        the clients' features. Returns ``(C*, n_groups or None)``."""
        p = self.params
        seed = int(rng.integers(0, np.iinfo(np.int64).max))
        replies = channel.broadcast(DeepFeCAWeights(weights), t)
        for l in range(channel.n_clients):
            expect(replies[l], DeepFeCAReady, "DeepFeCA server")
        server = aggregation_server(p["aggregation"], p["n_clusters"], p["client_clusters"], seed)
        with warnings.catch_warnings():
            # Fewer groups than k in an intermediate round only means fewer pseudo-classes;
            # history_ records it, and the final round warns.
            warnings.simplefilter("ignore", FewerGroupsWarning)
            result = server.run(_RoundChannel(channel, t))
        centers = np.ascontiguousarray(result.cluster_centers, dtype=np.float64)
        return centers, (int(result.n_groups) if p["aggregation"] == "feca" else None)


def deep_feca(federation: HorizontalFederation | Sequence[ArrayLike], n_clusters: int, *,
              encoder: Any = None, rounds: int = 10, local_epochs: int = 5, lr: float = 0.05,
              batch_size: int = 32, client_clusters: int | None = None,
              aggregation: Literal["feca", "mavg", "ffcm1", "ffcm2", "kfed"] = "feca",
              random_state: np.random.Generator | int | None = None) -> DeepFeCAResult:
    """Run DeepFeCA ([FeCA] Alg. 6) on a horizontal federation; see :class:`DeepFeCA` for the
    parameters. Returns a :class:`DeepFeCAResult`.

    The roles :class:`DeepFeCAClient` (one per client, answering one after the other: PyTorch
    parallelizes inside each client) and :class:`DeepFeCAServer` run in this process; nothing is
    returned unless every round succeeded.
    """
    server = DeepFeCAServer(n_clusters, encoder=encoder, rounds=rounds,
                            local_epochs=local_epochs, lr=lr, batch_size=batch_size,
                            client_clusters=client_clusters, aggregation=aggregation,
                            random_state=random_state)
    fed = check_federation(federation, server.params["min_client_points"],
                           name="client_clusters" if client_clusters is not None
                           else "n_clusters")
    clients = [DeepFeCAClient(fed.client(l)[0], l, encoder) for l in range(fed.n_clients)]
    return server.run(InProcessChannel(clients, n_jobs=1))


class DeepFeCA(FederatedEstimator):
    """DeepFeCA ([FeCA] Alg. 6): federated representation learning, DeepCluster on FedAvg with
    FeCA's centroids as pseudo-labels.

    Every round the clients cluster the features of the shared encoder and the server aggregates
    the centroids with FeCA ([FeCA] Alg. 6 line 4); each client labels its points by the nearest
    aggregated centroid (line 7), trains the encoder with a linear head on those labels for
    ``local_epochs`` epochs (line 8), and the server averages the encoders by client size
    (FedAvg, line 10). The module :mod:`fedcore.algorithms.feca.deep` describes the messages.
    Needs PyTorch (``pip install "fedcore[deep]"``); runs on the CPU.

    Parameters
    ----------
    n_clusters : int
        ``k``: the centroids of [FeCA] Alg. 6 line 4, and the outputs of the linear head.
    encoder : torch.nn.Module, default=None
        ``f_theta``: maps a float32 tensor of shape ``(batch, n_features)`` (flat rows of the
        data) to a float32 tensor ``(batch, feature_dim)``; it must be deterministic in
        evaluation mode and may hold buffers (they are averaged with the parameters; integer
        buffers are rounded). Its weights are the initial ``theta_bar`` ([FeCA] Alg. 6 line 2);
        it is copied, never modified. None: a small CNN for rows of width 64 (8x8 images) or
        784 (28x28), an MLP otherwise, both with 64 l2-normalized features, initialized from
        ``random_state`` (:mod:`fedcore.algorithms.feca.encoders`).
    rounds : int, default=10
        ``T``, the rounds of [FeCA] Alg. 6 (the paper trains 150 on CIFAR).
    local_epochs : int, default=5
        Epochs of local training per round, [FeCA] Section 6.2's value.
    lr : float, default=0.05
        Learning rate of the clients' SGD (momentum 0.9): DeepCluster's (Caron et al. 2018), on
        which [FeCA] Section 6.2 builds; with l2-normalized features and a fresh head each
        round, the loss is well scaled for it.
    batch_size : int, default=32
        Local mini-batch size. [FeCA] Section 6.2 uses 128 with 5,000 images per client; the
        clients of small federations hold a few hundred points, and 32 still gives each epoch
        several steps there.
    client_clusters : int, default=None
        The clients' k-means centroids in line 4: ``K'`` of FeCA (None: ``n_clusters``), M-Avg
        (None: ``n_clusters``; at least ``n_clusters``) and k-FED (None:
        ``ceil(sqrt(n_clusters))``); must be None for FFCM. Every client needs at least this
        many points.
    aggregation : {"feca", "mavg", "ffcm1", "ffcm2", "kfed"}, default="feca"
        The method of line 4: FeCA ([FeCA] Alg. 1, DeepFeCA itself), or the baselines of
        [FeCA] Table 3, each run by its own server and client roles with their defaults:
        M-Avg ([MAvg]), one round of FFCM v1 or v2 ([FFCM], "Rd=1" as in Table 3), k-FED
        ([KFED]).
    random_state : None, int or numpy.random.Generator
        Seeds everything: one seed per client (its k-means, head, shuffling), the default
        encoder's initialization, and the aggregation's server each round. Same seed, same
        encoder weights bit for bit (for one PyTorch build and thread count).

    Attributes
    ----------
    cluster_centers_ : ndarray of shape (n_found, feature_dim)
        ``C*`` of the final encoder's features (one more line 4 after the last round), largest
        group first for FeCA; ``n_found < n_clusters`` when FeCA forms fewer groups (a
        :class:`~fedcore.algorithms.feca.FewerGroupsWarning` is issued).
    encoder_ : torch.nn.Module
        The trained ``theta_bar`` (evaluation mode, float32, CPU).
    history_ : list of dict
        One per round ``t``: "round", "n_centers" (rows of ``C*``, the pseudo-classes),
        "n_groups" (groups FeCA formed; None for the other aggregations), "loss" (the clients'
        last-epoch cross-entropy, averaged by size) and "weight_change" (the l2 norm of the
        change of ``theta_bar`` made by FedAvg).
    n_groups_ : int or None
        Groups formed by FeCA in the final clustering; None for the other aggregations.
    comm_ : CommLedger
        Rounds ``1..rounds``: per client, the weights down (``n_weights`` float32), the
        aggregation's messages (FeCA: ``m_l * (feature_dim + 1)`` floats up), ``C*`` down
        (``n_centers * feature_dim`` floats) and the trained weights and ``|D_m|`` up
        (``n_weights + 1``); round ``rounds + 1``: the weights down and the aggregation's
        messages. The linear head is never sent.
    n_features_in_ : int
        Width of the input rows.

    Notes
    -----
    The linear head. [FeCA] Alg. 6 line 8 trains ``theta_bar`` "together with a linear
    classifier" and line 10 averages ``theta`` only: the head is not part of the averaged or
    returned model. Since ``C*`` is a new clustering every round (its row order means nothing
    from one round to the next), a head kept across rounds would start from classes that no
    longer exist; each client therefore draws a new head every round (seeded), as DeepCluster
    re-initializes its classifier after every clustering. The head is never sent.

    Pseudo-labels are the nearest rows of ``C*`` (line 7); the loss weights the pseudo-classes
    equally (:func:`local_training`), DeepCluster's guard against one cluster absorbing the
    others.

    ``predict`` labels by the nearest row of ``cluster_centers_`` in feature space. Models with
    an encoder cannot be saved by :meth:`save` (a torch module is not data); save
    ``encoder_.state_dict()`` with ``torch.save`` and ``cluster_centers_`` with NumPy.

    Examples
    --------
    >>> import pytest; torch = pytest.importorskip("torch")  # fedcore's doctests need PyTorch
    >>> import numpy as np, fedcore
    >>> X, y, _ = fedcore.datasets.make_gaussian_mixture(300, 6, 3, random_state=0)
    >>> fed = fedcore.partition(X, 3, "iid", random_state=0)
    >>> model = DeepFeCA(3, rounds=2, local_epochs=1, random_state=0).fit(fed)
    >>> model.transform(X).shape, model.cluster_centers_.shape, model.comm_.n_rounds
    ((300, 64), (3, 64), 3)
    >>> bool(fedcore.metrics.nmi(y, model.predict(X)) > 0.5)
    True
    """

    server_class = DeepFeCAServer
    client_class = DeepFeCAClient

    def __init__(self, n_clusters: int, *, encoder: Any = None, rounds: int = 10,
                 local_epochs: int = 5, lr: float = 0.05, batch_size: int = 32,
                 client_clusters: int | None = None,
                 aggregation: Literal["feca", "mavg", "ffcm1", "ffcm2", "kfed"] = "feca",
                 random_state: np.random.Generator | int | None = None) -> None:
        self.n_clusters = n_clusters
        self.encoder = encoder
        self.rounds = rounds
        self.local_epochs = local_epochs
        self.lr = lr
        self.batch_size = batch_size
        self.client_clusters = client_clusters
        self.aggregation = aggregation
        self.random_state = random_state

    def fit(self, federation: HorizontalFederation | Sequence[ArrayLike],
            y: object = None) -> Self:
        """Run [FeCA] Alg. 6 on ``federation`` (a HorizontalFederation or a list of client
        arrays); a failed fit leaves the model as it was."""
        return self._store(deep_feca(federation, **self.get_params()))

    def fit_over(self, channel: Channel) -> Self:
        """Fit by running :meth:`server_role` over ``channel`` (e.g. a Flower run); returns
        self."""
        return self._store(self.server_role().run(channel))

    def _store(self, result):
        # Set only once the run has succeeded: a failed fit leaves the model as it was.
        for name, value in result._asdict().items():
            setattr(self, name + "_", value)
        return self

    def check_state(self) -> None:
        """Refuse (``ValueError``) fitted centers that are not a finite 2-D array (they live in
        the encoder's feature space, not in the input's)."""
        centers = getattr(self, "cluster_centers_", None)
        if centers is not None and not (isinstance(centers, np.ndarray) and centers.ndim == 2
                                        and centers.shape[0] >= 1
                                        and bool(np.isfinite(centers).all())):
            raise ValueError("The state of this DeepFeCA is inconsistent: cluster_centers_")

    def client_role(self, X: ArrayLike, client_id: int = 0, *,
                    ids: ArrayLike | None = None) -> DeepFeCAClient:
        """A :class:`DeepFeCAClient` holding ``X`` (and a copy of ``encoder``); ``ids`` plays no
        part (see :meth:`FederatedEstimator.client_role`)."""
        return DeepFeCAClient(X, client_id, self.encoder)

    def transform(self, X: ArrayLike) -> np.ndarray:
        """The features ``f_theta_bar(X)`` of the trained encoder.

        Parameters
        ----------
        X : array-like of shape (n_samples, ``n_features_in_``)

        Returns
        -------
        ndarray of shape (n_samples, feature_dim), float64
        """
        check_is_fitted(self, "encoder_")
        X = check_fitted_array(X, self.n_features_in_, type(self).__name__)
        return encode_features(self.encoder_, X)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Index of the nearest row of ``cluster_centers_`` to the features of each row of X
        (lowest on ties)."""
        return pseudo_labels(self.transform(X), self.cluster_centers_)
