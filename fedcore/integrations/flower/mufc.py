"""MUFC on Flower: secure federated k-means with exact unlearning across Flower nodes.

The server is a :class:`fedcore.algorithms.mufc.server.MUFCServer` (the server half of a
:class:`fedcore.MUFC` estimator that holds no clients): it sets up the quantizer and SCMA, decodes
and clusters with exactly the code of the in-process fit. Each node is one client: it reads its own
data (never sent by the server), runs :class:`fedcore.UnlearnableKMeans` and sends the vector of
:func:`fedcore.algorithms.mufc.quantize.client_vector` SCMA-encoded. With the same seed a Flower
run returns the model of ``MUFC.fit`` / ``remove`` / ``remove_clients`` bit for bit.

Rounds (one Flower message per node each; a failure anywhere raises
:class:`~fedcore.integrations.flower.FlowerRoundError` and publishes nothing):

``hello`` (``query``)
    Each node reports its partition id (= client id), its number of points, its X25519 public
    key and, unless the server was given ``bounds``, its per-feature minimum and maximum (MUFC's
    agreed bounds; this reveals each client's box and size to the server, as documented on
    :class:`fedcore.MUFC`).
``round 0`` (``train``)
    The server sends every client its random seed, the quantization grid, SCMA's public
    parameters and every participant's public key. Clients agree pairwise mask keys by X25519
    key exchange and HKDF (the server relays public keys only, so it cannot rebuild any mask;
    ``docs/security.md``), seed
    (MUFC Alg. 1 lines 2-4) and reply one masked message (uint64 ``ArrayRecord``). The server
    decodes the sum (Alg. 2) and clusters it (Alg. 1 lines 6-7).
``round r >= 1``
    One removal request (Alg. 4): the node holding the points runs Alg. 3; every participant
    re-sends with fresh masks; the server decodes the change of the sum and re-clusters with
    fresh randomness. Removing a client takes it out of the participants instead.

Flower's SecAgg+ sums dense vectors modulo 2**k (and only on Flower's legacy API), so MUFC's
sparse counts travel as SCMA messages. Key agreement follows the honest-but-curious server model
of secure aggregation: the server relays public keys unauthenticated; a deployment that must
resist an active server authenticates node keys (e.g. Flower node authentication).
"""
from __future__ import annotations

import logging
import os
import pickle
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from ..._validation import check_array
from ...algorithms.kmeans.lloyd import assign
from ...algorithms.mufc.estimators import MUFC
from ...algorithms.mufc.quantize import Quantizer, client_vector
from ...algorithms.mufc.server import MUFCServer
from ...algorithms.mufc.unlearning import UnlearnableKMeans
from ...federation.ledger import SERVER
from ...federation.protocol import generator_from_seed
from ...secagg import generate_key_pair
from ._common import (DEFAULT_TIMEOUT, FlowerApps, FlowerRoundError, arrays_record, exchange,
                      local_partition, read_arrays, require_flwr, settings, wait_for_nodes)

__all__ = ["MUFCFlowerResult", "mufc_apps", "load_mufc_result", "parse_removals", "handle_hello",
           "handle_query", "handle_round", "DEFAULTS", "server_app", "client_app"]

#: Settings of the MUFC apps (run config keys); data keys: ``_common.federation_from_settings``.
DEFAULTS = {
    "n-clusters": 10, "client-clusters": 5, "gamma": "auto", "secure": True,
    "server-data": "weighted", "server-n-init": 10, "random-phase": False,
    "server-update": "exact", "random-seed": 0, "removals": "", "timeout": DEFAULT_TIMEOUT,
    "output-path": "", "dataset": "gaussian", "partition": "noniid", "clusters-per-client": 5,
    "data-seed": 0, "dropout-threshold": 0, "client-refine": False,
}

_STATE = "fedcore-mufc"


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
        ``client_retrained`` is None when the server does not learn it (exact mode).
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


# ---------------------------------------------------------------------------- client side
class _Client:
    """A node's MUFC client between messages (kept pickled in ``context.state``, on the node)."""

    def __init__(self, X, ids, partition_id):
        self.X, self.ids, self.partition_id = X, ids, partition_id
        self.key, self.public_key = generate_key_pair()  # X25519, from OS entropy
        self.model = self.quantizer = self.encoder = None

    def start(self, config, arrays, keys):
        """Round 0: seeding with the server-given generator, grid and SCMA parameters."""
        from ...secagg import SCMAClient, SCMASetup
        self.quantizer = Quantizer(arrays["low"], float(config["scale"]), float(config["gamma"]),
                                   arrays["phase"] if bool(config["has-phase"]) else None)
        rng = generator_from_seed(config["entropy"], config["spawn-key"])
        self.model = UnlearnableKMeans(int(config["client-clusters"]),
                                       refine=bool(config.get("client-refine", False)),
                                       random_state=rng)
        self.model.fit(self.X, sample_ids=self.ids)
        if bool(config["secure"]):
            setup = SCMASetup.from_public_config(
                {k[6:]: (None if v == "none" else v) for k, v in config.items()
                 if k.startswith("setup-")})
            me = int(config["client-id"])
            # Pair keys by X25519 agreement with the relayed public keys, through HKDF
            # (fedcore.secagg): the server never holds a mask key.
            self.encoder = SCMAClient(me, setup, private_key=self.key,
                                      public_keys={int(o): bytes(pk) for o, pk in keys.items()
                                                   if int(o) != me})

    def message(self, round, participants):
        bins, counts = client_vector(self.quantizer, self.model)
        if self.encoder is None:
            return arrays_record(bins=bins, counts=counts)
        return arrays_record(message=self.encoder.encode(bins, counts, round=round,
                                                         participants=participants))


def _load(context):
    return pickle.loads(context.state[_STATE]["client"])


def _save(context, client):
    from flwr.app import ConfigRecord
    context.state[_STATE] = ConfigRecord({"client": pickle.dumps(client)})


def handle_hello(msg, context, defaults=None):
    """``query`` handler: load this node's data, make its key pair, report size and bounds.

    ``defaults``: data settings under the node's run and node config (default :data:`DEFAULTS`).
    """
    from flwr.app import ConfigRecord, Message, RecordDict
    X, ids, pid, _ = local_partition(settings(dict(DEFAULTS, **(defaults or {})), context))
    client = _Client(X, ids, pid)
    _save(context, client)
    info = ConfigRecord({"partition-id": pid, "n-samples": int(X.shape[0]),
                         "n-features": int(X.shape[1]),
                         "public-key": client.public_key})
    content = RecordDict({"info": info})
    if bool(msg.content["config"]["agree-bounds"]):
        content["bounds"] = arrays_record(low=X.min(axis=0), high=X.max(axis=0))
    return Message(content, reply_to=msg)


def handle_query(msg, context, defaults=None):
    """``query`` handler: the ``hello``, and with dropout tolerance the key steps of a round.

    ``config["step"]``: ``"hello"`` (default, :func:`handle_hello`); ``"setup"`` (round 0's
    seeding before the keys of round 0 are agreed); ``"round-key"`` (this client's fresh round
    public key); ``"key-shares"`` (Shamir shares of its round key, sealed for each participant);
    ``"unmask"`` (its shares of the round keys of the clients that dropped). See
    :class:`fedcore.SCMAClient` and ``docs/security.md``.
    """
    from flwr.app import ConfigRecord, Message, RecordDict
    config = msg.content["config"]
    step = str(config.get("step", "hello"))
    if step == "hello":
        return handle_hello(msg, context, defaults)
    client = _load(context)
    round = int(config.get("round", 0))
    if step == "setup":
        client.start(config, read_arrays(msg.content["grid"]), dict(msg.content["keys"]))
        reply = {"ok": True}
    elif step == "round-key":
        reply = {"key": client.encoder.round_public_key(round)}
    elif step == "key-shares":
        keys = {int(c): bytes(k) for c, k in msg.content["round-keys"].items()}
        reply = {str(v): box for v, box in client.encoder.key_shares(round, keys).items()}
    elif step == "unmask":
        dropped = [int(u) for u in config["dropped"]]
        reply = {str(u): s for u, s in client.encoder.reveal_key_shares(round, dropped).items()}
    else:
        raise ValueError(f"Unknown MUFC query step {step!r}")
    _save(context, client)
    return Message(RecordDict({"reply": ConfigRecord(reply)}), reply_to=msg)


def handle_round(msg, context, defaults=None):
    """``train`` handler: round 0 seeds; later rounds apply this node's removal request, if any;
    every round replies the (masked) vector and the node's timings."""
    from flwr.app import ConfigRecord, Message, RecordDict
    client = _load(context)
    config = msg.content["config"]
    round, participants = int(config["round"]), [int(p) for p in config["participants"]]
    timing = {}
    t0 = time.perf_counter()
    retrained = False
    if "grid" in msg.content:  # round 0 (without dropout tolerance: no setup query before)
        client.start(config, read_arrays(msg.content["grid"]), dict(msg.content["keys"]))
    elif "remove" in msg.content:
        retrained = client.model.remove(read_arrays(msg.content["remove"])["ids"]).retrained
    timing["client_unlearn"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    if "shares" in msg.content:  # the round keys' shares the other participants sealed for it
        client.encoder.receive_key_shares(
            round, {int(u): bytes(box) for u, box in msg.content["shares"].items()})
    content = RecordDict({"vector": client.message(round, participants)})
    timing["client_encode"] = time.perf_counter() - t0
    _save(context, client)
    status = {"seconds-unlearn": timing["client_unlearn"],
              "seconds-encode": timing["client_encode"]}
    if "remove" in msg.content and config["report-retrain"]:
        status["retrained"] = bool(retrained)  # lazy servers need it (MUFC's measurement)
    content["status"] = ConfigRecord(status)
    return Message(content, reply_to=msg)


# ---------------------------------------------------------------------------- server side
class _Server:
    """Drives the rounds on ``grid`` with the server half of a :class:`fedcore.MUFC`."""

    def __init__(self, grid, model, timeout):
        self.grid, self.model, self.timeout = grid, model, timeout
        self.server = MUFCServer(model)
        self.tolerant = model.secure and model.dropout_threshold is not None
        self.dropped_ = []  # clients that dropped out, in order

    def hello(self, nodes):
        from flwr.app import ConfigRecord, RecordDict
        ask = ConfigRecord({"agree-bounds": self.model.bounds is None})
        replies = exchange(self.grid, {n: RecordDict({"config": ask}) for n in nodes}, "query",
                           "hello", self.timeout)
        by_client = {}
        for node, content in replies.items():
            by_client.setdefault(int(content["info"]["partition-id"]), []).append(node)
        bad = {n: f"partition-id {c} is duplicated or outside 0..{len(nodes) - 1}"
               for c, ns in by_client.items() for n in ns
               if len(ns) > 1 or not 0 <= c < len(nodes)}
        if bad:
            raise FlowerRoundError("query hello", bad)
        self.node_of = [by_client[l][0] for l in range(len(nodes))]
        info = [replies[n]["info"] for n in self.node_of]
        dims = {int(i["n-features"]) for i in info}
        if len(dims) != 1:
            raise FlowerRoundError("query hello", {n: f"{int(i['n-features'])} features"
                                                   for n, i in zip(self.node_of, info)})
        self.sizes = {l: int(i["n-samples"]) for l, i in enumerate(info)}
        self.keys = {str(l): bytes(i["public-key"]) for l, i in enumerate(info)}
        boxes = None
        if self.model.bounds is None:
            arrays = [read_arrays(replies[n]["bounds"]) for n in self.node_of]
            boxes = [(a["low"], a["high"]) for a in arrays]
        return [self.sizes[l] for l in range(len(nodes))], dims.pop(), boxes

    def fit_round(self, setups):
        """Round 0: every client's set-up (:meth:`MUFCServer.client_setup`), then its message."""
        from flwr.app import ConfigRecord, RecordDict
        keys = ConfigRecord(self.keys)
        contents = {}
        for setup, node in zip(setups, self.node_of):
            config = {"client-id": setup["client_id"],
                      "client-clusters": setup["client_clusters"],
                      "client-refine": bool(setup["client_refine"]),
                      "secure": setup["scma"] is not None, "scale": setup["scale"],
                      "gamma": setup["gamma"], "has-phase": setup["phase"] is not None,
                      "entropy": setup["entropy"], "spawn-key": list(setup["spawn_key"])}
            config.update({f"setup-{k}": ("none" if v is None else v)
                           for k, v in (setup["scma"] or {}).items()})
            grid_arrays = arrays_record(low=setup["low"], phase=setup["phase"])
            contents[node] = RecordDict({"config": self._round_config(0, config),
                                         "grid": grid_arrays, "keys": keys})
        if self.tolerant:  # seed first: round 0's keys are agreed before its messages
            for content in contents.values():
                content["config"]["step"] = "setup"
            exchange(self.grid, contents, "query", "setup", self.timeout)
            contents = {node: RecordDict({"config": self._round_config(0)})
                        for node in self.node_of}
        bins, counts, recluster, _, timings = self._collect(contents, 0, recluster=True)
        return bins, counts, recluster, True, timings  # every client seeded

    def _round_config(self, round, extra=None):
        from flwr.app import ConfigRecord
        config = {"round": round, "participants": self.server.participants,
                  "report-retrain": self.model.server_update == "lazy"}
        config.update(extra or {})
        return ConfigRecord(config)

    def _query(self, clients, step, round, extra=None, records=None):
        """One ``query`` step of the key agreement to ``clients``; {client: reply record}."""
        from flwr.app import ConfigRecord, RecordDict
        contents = {}
        for l in clients:
            content = RecordDict({"config": ConfigRecord(dict(extra or {}, step=step,
                                                              round=round))})
            for name, record in (records or {}).get(l, {}).items():
                content[name] = record
            contents[self.node_of[l]] = content
        replies = exchange(self.grid, contents, "query", f"{step} {round}", self.timeout)
        client_of = {node: l for l, node in enumerate(self.node_of)}
        out = {client_of[node]: content["reply"] for node, content in replies.items()}
        for l, reply in out.items():
            self.model.comm_.record(round, sender=l, receiver=SERVER, kind=step,
                                    n_elements=sum(len(bytes(v)) for v in reply.values()
                                                   if isinstance(v, bytes)),
                                    bits_per_element=8)
        return out

    def _agree_round_keys(self, round, contents):
        """Dropout tolerance, before the round's messages: every participant's fresh round
        key, then the Shamir shares of it, sealed per holder and relayed with the train
        messages (``contents``, changed in place). Returns the round public keys."""
        from flwr.app import ConfigRecord
        participants = self.server.participants
        keys = {l: bytes(r["key"]) for l, r in self._query(participants, "round-key",
                                                             round).items()}
        key_record = ConfigRecord({str(l): k for l, k in keys.items()})
        sealed = self._query(participants, "key-shares", round,
                             records={l: {"round-keys": key_record} for l in participants})
        for v in participants:
            held = {str(u): bytes(sealed[u][str(v)]) for u in participants if u != v}
            contents[self.node_of[v]]["shares"] = ConfigRecord(held)
        return keys

    def _collect(self, contents, round, recluster, removal=None):
        """Send one round, combine the replies as the in-process server does, re-cluster.

        With dropout tolerance, nodes that fail during the round are dropped: as long as
        ``dropout_threshold`` participants answered, their shares rebuild the dropped clients'
        masks, the sum of the survivors is decoded exactly and the dropped clients leave the
        federation; with fewer, the round fails and nothing is published.
        """
        m = self.model
        stage = f"round {round}"
        dropped, unmask, round_keys = [], None, None
        client_of = {node: l for l, node in enumerate(self.node_of)}
        if self.tolerant:
            round_keys = self._agree_round_keys(round, contents)
            replies, failures = exchange(self.grid, contents, "train", stage, self.timeout,
                                         allow_failures=True)
            dropped = sorted(client_of[node] for node in failures)
            survivors = [l for l in self.server.participants if l not in dropped]
            if dropped and len(survivors) < m.dropout_threshold:
                raise FlowerRoundError(
                    f"train {stage}: {len(survivors)} participant(s) answered, fewer than "
                    f"dropout_threshold = {m.dropout_threshold}", failures)
            if dropped:
                unmask = {l: {int(u): bytes(s) for u, s in reply.items()} for l, reply in
                          self._query(survivors, "unmask", round,
                                      extra={"dropped": dropped}).items()}
        else:
            replies = exchange(self.grid, contents, "train", stage, self.timeout)
        vectors, status = {}, {}
        for node, content in replies.items():
            arrays = read_arrays(content["vector"])
            l = client_of[node]
            vectors[l] = arrays["message"] if m.secure else (arrays["bins"], arrays["counts"])
            status[l] = content["status"]
        timings = {"client_unlearn": max(float(s["seconds-unlearn"]) for s in status.values()),
                   "client_encode": max(float(s["seconds-encode"]) for s in status.values())}
        retrained = None
        if removal is not None and removal in status and "retrained" in status[removal]:
            retrained = bool(status[removal]["retrained"])
            recluster = recluster or retrained
        t0 = time.perf_counter()
        bins, counts = self.server.combine(vectors, round, dropped=dropped,
                                           unmask_shares=unmask, public_keys=round_keys)
        for l in dropped:
            self.sizes.pop(l, None)
        timings["server_decode"] = time.perf_counter() - t0
        self.dropped_ += dropped
        return bins, counts, recluster, retrained, timings

    def removal_round(self, client, ids):
        from flwr.app import RecordDict
        m = self.model
        r = self.server.next_round()
        if ids is None:
            gone = self.server.remove_clients([client], self.sizes)
            n_removed = sum(self.sizes.pop(l) for l in gone)
            contents = {self.node_of[l]: RecordDict({"config": self._round_config(r)})
                        for l in self.server.participants}
            result = self._collect(contents, r, recluster=True)
        else:
            if client not in self.server.participants:
                raise ValueError(f"Removal request for unknown or removed client {client}")
            contents = {}
            for l in self.server.participants:
                content = RecordDict({"config": self._round_config(r)})
                if l == client:
                    content["remove"] = arrays_record(ids=np.asarray(ids, dtype=np.int64))
                contents[self.node_of[l]] = content
            n_removed = len(ids)
            result = self._collect(contents, r, recluster=m.server_update != "lazy",
                                   removal=client)
            if client in self.sizes:  # (a client that dropped in this round left entirely)
                self.sizes[client] -= n_removed
        return self._publish(result, n_removed)

    def _publish(self, result, n_removed):
        bins, counts, recluster, retrained, timings = result
        return self.server.publish(bins, counts, recluster, timings, n_removed, retrained)


def run_server(grid, model, n_nodes, removals=(), timeout=DEFAULT_TIMEOUT):
    """Fit ``model`` (a :class:`fedcore.MUFC`) across ``n_nodes`` Flower nodes, then serve the
    removal requests ``[(client, ids or None), ...]``. Returns a :class:`MUFCFlowerResult`."""
    server = _Server(grid, model, timeout)
    nodes = wait_for_nodes(grid, n_nodes, timeout)
    t0 = time.perf_counter()
    sizes, n_features, boxes = server.hello(nodes)
    setups = server.server.setup(sizes, n_features, boxes)
    reports = [server._publish(server.fit_round(setups), 0)]
    reports[0].timings["round_wall"] = time.perf_counter() - t0
    for client, ids in removals:
        t0 = time.perf_counter()
        reports.append(server.removal_round(int(client), ids))
        reports[-1].timings["round_wall"] = time.perf_counter() - t0
    return MUFCFlowerResult(model.cluster_centers_, model.aggregate_, model.comm_, reports,
                            model.n_rounds_, list(server.node_of), list(server.dropped_))


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

    client_app.query()(lambda msg, context: handle_query(msg, context, defaults))
    client_app.train()(lambda msg, context: handle_round(msg, context, defaults))
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
