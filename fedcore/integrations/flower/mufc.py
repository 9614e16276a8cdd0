"""MUFC on Flower: secure federated k-means with exact unlearning across Flower nodes.

MUFC's roles (:mod:`fedcore.algorithms.mufc.roles`) run on Flower through the generic adapter
(:mod:`fedcore.integrations.flower.roles`): the server is a
:class:`fedcore.algorithms.mufc.server.MUFCServer` over a
:class:`~fedcore.integrations.flower.roles.FlowerChannel`, and each node is one
:class:`~fedcore.algorithms.mufc.roles.MUFCClient` on its own data (never sent by the server),
kept in the node's state between messages. The messages, and so the ledger, are those of the
in-process fit; with the same seed a Flower run returns the model of ``MUFC.fit`` / ``remove`` /
``remove_clients`` bit for bit.

Keys. Unlike the in-process run, whose SCMA keys the server's setup simulates, the nodes agree
keys as deployed clients: each makes an X25519 key pair (OS entropy) and sends its public key
with its hello reply; the server relays every public key in the set-up message, and the clients
derive pairwise mask keys by X25519 and HKDF (the server relays public keys only, so it cannot
rebuild any mask; ``docs/security.md``). With ``dropout_threshold`` each round starts with fresh
round keys and sealed Shamir shares of them (messages "round-key", "key-shares"); a node that
fails during the round is dropped, the survivors' shares ("unmask") rebuild its masks and the
sum of the survivors is decoded exactly, as long as ``dropout_threshold`` of them answered.
A failure anywhere else raises :class:`~fedcore.integrations.flower.FlowerRoundError` and
publishes nothing.

Flower's SecAgg+ sums dense vectors modulo 2**k (and only on Flower's legacy API), so MUFC's
sparse counts travel as SCMA messages. Key agreement follows the honest-but-curious server model
of secure aggregation: the server relays public keys unauthenticated; a deployment that must
resist an active server authenticates node keys (e.g. Flower node authentication).
"""
from __future__ import annotations

import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import check_array
from ...algorithms.kmeans.lloyd import assign
from ...algorithms.mufc.estimators import MUFC
from ...algorithms.mufc.roles import MUFCClient
from ...algorithms.mufc.server import MUFCServer
from ._common import DEFAULT_TIMEOUT, FlowerApps, require_flwr, settings
from .roles import FlowerChannel, client_handler

__all__ = ["MUFCFlowerResult", "mufc_apps", "load_mufc_result", "parse_removals", "run_server",
           "DEFAULTS", "server_app", "client_app"]

#: Settings of the MUFC apps (run config keys); data keys: ``_common.federation_from_settings``.
DEFAULTS = {
    "n-clusters": 10, "client-clusters": 5, "gamma": "auto", "secure": True,
    "server-data": "weighted", "server-n-init": 10, "random-phase": False,
    "server-update": "exact", "random-seed": 0, "removals": "", "timeout": DEFAULT_TIMEOUT,
    "output-path": "", "dataset": "gaussian", "partition": "noniid", "clusters-per-client": 5,
    "data-seed": 0, "dropout-threshold": 0, "client-refine": False,
}



@dataclass
class MUFCFlowerResult:
    """What the MUFC server publishes after its last round.

    Attributes
    ----------
    cluster_centers_ : ndarray (n_clusters, n_features)
    aggregate_ : (bins (m, d) int64, counts (m,) int64), the decoded sum of the last round
    comm_ : CommLedger, every message the server received
    reports_ : list of MUFCRemovalReport, the fit (round 0) then one per removal request; timings
        of clients are the slowest node's, as the nodes report them; ``round_wall`` is the
        server's wall time of the whole round (messages included; the fit's includes the hello).
        ``client_retrained`` is what the client holding the points reported (None if it
        dropped out of the round).
    n_rounds_ : int
    node_ids_ : list of int, the Flower node of each client id
    dropped_clients_ : list of int, clients that dropped out during a round (dropout tolerance)
    """

    cluster_centers_: np.ndarray
    aggregate_: tuple
    comm_: object
    reports_: list = field(default_factory=list)
    n_rounds_: int = 0
    node_ids_: list = field(default_factory=list)
    dropped_clients_: list = field(default_factory=list)

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Nearest server center of each row."""
        return assign(check_array(X, "X"), self.cluster_centers_)[0]


# ---------------------------------------------------------------------------- settings
def _estimator(cfg):
    gamma = cfg["gamma"] if cfg["gamma"] == "auto" else float(cfg["gamma"])
    return MUFC(int(cfg["n-clusters"]), client_clusters=int(cfg["client-clusters"]), gamma=gamma,
                secure=bool(cfg["secure"]), server_data=str(cfg["server-data"]),
                server_n_init=int(cfg["server-n-init"]), random_phase=bool(cfg["random-phase"]),
                server_update=str(cfg["server-update"]),
                dropout_threshold=int(cfg["dropout-threshold"]) or None,
                client_refine=_flag(cfg.get("client-refine", False), "client-refine"),
                random_state=None if int(cfg["random-seed"]) < 0 else int(cfg["random-seed"]))


def _flag(value, key):
    """A boolean setting: a bool, or "true" / "false" in any case (run configs hold strings)."""
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ValueError(f"Setting {key!r} must be true or false, got {value!r}")


def parse_removals(text):
    """Removal requests from a run-config string: whitespace-separated ``client:id`` (remove
    point ``id`` of ``client``; ``client:id,id`` several points in one request) or ``client:*``
    (remove the client). Returns a list of ``(client, ids or None)``."""
    out = []
    for token in str(text).split():
        client, _, ids = token.partition(":")
        if not client.isdigit() or not ids:
            raise ValueError(f"Setting 'removals': cannot read {token!r}; use client:id[,id...] "
                             "or client:*")
        out.append((int(client), None if ids == "*" else [int(i) for i in ids.split(",")]))
    return out


def _client(X, ids, partition_id):
    """The node's client role: its partition, its own keys (deployed)."""
    return MUFCClient(X, partition_id, ids)


def run_server(grid: Any, model: MUFC, n_nodes: int,
               removals: Sequence[tuple[int, Sequence[int] | None]] = (),
               timeout: float = DEFAULT_TIMEOUT) -> MUFCFlowerResult:
    """Fit ``model`` (a :class:`fedcore.MUFC`) across ``n_nodes`` Flower nodes, then serve the
    removal requests ``[(client, ids or None), ...]``. Returns a :class:`MUFCFlowerResult`."""
    t0 = time.perf_counter()
    channel = FlowerChannel(grid, n_nodes, timeout)
    server = MUFCServer(model, deployed=True)
    reports = [server.run(channel)]
    reports[0].timings["round_wall"] = time.perf_counter() - t0
    for client, ids in removals:
        t0 = time.perf_counter()
        if ids is None:
            gone = server.check_client_removal([int(client)], server.sizes)
            report = server.run_client_removal(channel, gone,
                                               sum(server.sizes[l] for l in gone))
        else:
            report = server.run_removal(channel, int(client), server.check_removal(client, ids))
        report.timings["round_wall"] = time.perf_counter() - t0
        reports.append(report)
    return MUFCFlowerResult(model.cluster_centers_, model.aggregate_, model.comm_, reports,
                            model.n_rounds_, list(channel.nodes), list(server.dropped))


def _save_result(path, result):
    bins, counts = result.aggregate_
    np.savez(path, cluster_centers=result.cluster_centers_, bins=bins, counts=counts,
             node_ids=np.asarray(result.node_ids_, dtype=np.uint64),
             n_rounds=np.int64(result.n_rounds_),
             modeled_latency=np.array([r.modeled_latency for r in result.reports_]))


def load_mufc_result(path: str | os.PathLike[str]) -> MUFCFlowerResult:
    """The model a deployed MUFC server wrote to ``output-path``: a :class:`MUFCFlowerResult`
    with centers, aggregate, rounds and node ids (``comm_`` None, ``reports_`` empty; the
    modeled latency of each round is in the file as ``modeled_latency``)."""
    with np.load(path) as f:
        return MUFCFlowerResult(f["cluster_centers"], (f["bins"], f["counts"]), None, [],
                                int(f["n_rounds"]), [int(n) for n in f["node_ids"]])


def mufc_apps(estimator: MUFC | None = None, data: Mapping[str, Any] | None = None, *,
              removals: Sequence[tuple[int, Sequence[int] | None]] = (),
              timeout: float = DEFAULT_TIMEOUT) -> FlowerApps:
    """A ServerApp and a ClientApp running ``estimator`` (a :class:`fedcore.MUFC`).

    Parameters
    ----------
    estimator : MUFC or None
        Its parameters drive the server (None: built from the run config's settings,
        :data:`DEFAULTS`). Use an int ``random_state`` to reproduce an in-process fit.
    data : dict or None
        Client data settings (``dataset``, ``partition``, ``clusters-per-client``, ``data-seed``,
        or a node's ``data-path``), overriding :data:`DEFAULTS` and overridden by each node's
        run/node config.
    removals : sequence of (client id, ids or None)
        Removal requests served after the fit, one round each (None removes the client); the
        run config's ``removals`` string is used when empty (:func:`parse_removals`).
    timeout : float, seconds a round may take

    Returns
    -------
    FlowerApps, whose ``result`` is a :class:`MUFCFlowerResult` after a successful run.
    """
    flwr = require_flwr()
    defaults = dict(DEFAULTS, **(data or {}))
    server_app, client_app = flwr.serverapp.ServerApp(), flwr.clientapp.ClientApp()
    apps = FlowerApps(server_app, client_app)

    @server_app.main()
    def _main(grid, context):
        cfg = settings(defaults, context)
        model = estimator.__class__(**estimator.get_params()) if estimator is not None \
            else _estimator(cfg)
        n_nodes = apps.n_nodes or int(cfg.get("num-partitions", 0))
        if n_nodes < 1:
            raise ValueError("Setting 'num-partitions' (clients = nodes to wait for) is "
                             f"required, got {cfg.get('num-partitions')!r}")
        requests = list(removals) or parse_removals(cfg["removals"])
        result = run_server(grid, model, n_nodes, requests, float(cfg.get("timeout", timeout)))
        if cfg.get("output-path"):
            path = os.path.abspath(os.path.expanduser(str(cfg["output-path"])))
            _save_result(path, result)
            from flwr.common import log
            log(logging.INFO, "MUFC: %d center(s) after %d round(s) with %d client(s), "
                "written to %s", result.cluster_centers_.shape[0], result.n_rounds_ + 1,
                n_nodes, path)
        apps.publish(result)

    client_app.train()(client_handler(_client, defaults))
    return apps


_DEPLOYED = None


def __getattr__(name):
    """``server_app`` and ``client_app`` for ``flwr run`` deployments (every setting from the run
    config, see :data:`DEFAULTS`; the server waits for ``num-partitions`` nodes and writes the
    model to ``output-path``, read it with :func:`load_mufc_result`). Built on first access, so
    importing this module needs no Flower run."""
    global _DEPLOYED
    if name in ("server_app", "client_app"):
        if _DEPLOYED is None:
            _DEPLOYED = mufc_apps()
        return getattr(_DEPLOYED, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
