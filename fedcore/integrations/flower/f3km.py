"""DisBCDKM ([F3KM] Alg. 3) and F3KM ([F3KM] Alg. 4/5) on Flower: one node per party of a vertical
federation.

Each node holds one party's feature block (and its sensitive attributes, if any), read from its
own context, never sent by the server: node config ``data-path`` (an ``.npz`` with the block
``X`` and optional ``groups``, shape (n,) or (n, A)), else the synthetic federation of
:func:`vertical_from_settings`, of which the node keeps block ``partition-id``. The node's
computations are the methods of :class:`fedcore.algorithms.f3km.party.CDParty`; the server's
decisions are :class:`fedcore.algorithms.f3km.server.SweepServer`, :func:`run_bcd` and
:func:`run_admm` of the same module, driven through :class:`_NodeParties`, which turns each of
their calls into one message per node. With the same ``random_state`` the labels equal those of
``BCDKM.fit`` / ``FairKMeans.fit`` on the same ``VerticalFederation``, and so does the
:class:`~fedcore.federation.CommLedger`.

Messages (``train.<action>``; a failure on any node raises
:class:`~fedcore.integrations.flower.FlowerRoundError` naming it, and nothing is published):

``setup``       each node reports its party index, rows, features, groups and centred total sum
                of squares (shapes and a constant of the data; not in the ledger)
``seed``        one per k-means++ center ([F3KM] Alg. 3/4 line 1): the row index down, the party's
                squared distances of every row to that row up; the server samples as
                :func:`fedcore.kmeans_plusplus` does (:func:`vertical_kmeans_plusplus`)
``init``        the labels down; the party sets up its statistics ([F3KM] Alg. 5 line 2) and
                Theta at U = 0 ([F3KM] eq. (31)) and sends its SSE part (F3KM: and violation and
                allowance part)
``objectives``  rows lo..hi down; [F3KM] eq. (17) / (27)-(28) for them up ([F3KM] Alg. 5
                lines 4-6)
``change``      proposed labels of a block down; the party's part of the change of
                [F3KM] eq. (24) up
``duals``       F3KM: the next penalty down; Theta_h, U_h by [F3KM] eqs. (31)-(32)
                ([F3KM] Alg. 5 lines 10-12); violation ([F3KM] eq. (33)), SSE part and allowance
                part up
``report``      BCDKM: the SSE part after a sweep, for ``objective_history_`` (not in the ledger,
                as in one process)
``close``       each party's block of the centers and part of the SSE (and balance, bounds) for
                publication (not in the ledger)

The server's decisions (apply a block's moves, [F3KM] eqs. (19)/(30), or split it) travel with
the next message, so a decision costs no message of its own. The node side (data, handlers) is in
:mod:`._f3km_node`.
"""
from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..._validation import check_int, check_random_state
from ...algorithms.f3km.server import (SweepServer, combine_balance, run_admm, run_bcd,
                                      vertical_kmeans_plusplus)
from ...algorithms.f3km.cdkm import (BCDKM, resolve_block_size, check_n_clusters,
                                fitted_attributes, join_blocks)
from ...algorithms.f3km.fair import (FairKMeans, check_fair_params, check_has_groups,
                                      check_stop, group_bounds)
from ...federation.ledger import CommLedger
from ...metrics.fairness import check_fairness_bounds
from ._common import (DEFAULT_TIMEOUT, FlowerApps, arrays_record, exchange, read_arrays,
                      require_flwr, settings, vertical_from_settings, wait_for_nodes)
from ._f3km_node import (HANDLERS, handle_change, handle_close, handle_duals, handle_init,
                         handle_objectives, handle_report, handle_seed, handle_setup)

__all__ = ["F3KMFlowerResult", "bcdkm_apps", "fair_kmeans_apps", "load_f3km_result",
           "vertical_from_settings",
           "make_client_app", "run_server", "HANDLERS", "DEFAULTS", "handle_setup",
           "handle_seed", "handle_init", "handle_objectives", "handle_change", "handle_duals",
           "handle_report", "handle_close", "server_app", "client_app"]

#: Settings of the apps (run config keys; node config ``partition-id``, ``num-partitions`` and
#: ``data-path`` come from each node). ``method``: "bcdkm" or "fair-kmeans"; the estimator's
#: parameters: ``n-clusters``, ``block-size`` ("auto" or an int), ``max-iter`` (the estimator's
#: default when absent), ``random-seed``, and for F3KM ``delta``, ``rho``, ``rho-schedule``,
#: ``violation``, ``tol``, ``alpha`` / ``beta`` (comma-separated, "" for the delta bounds).
#: ``num-partitions`` (required): the parties, i.e. the nodes the server waits for. Data keys:
#: see :func:`vertical_from_settings`.
DEFAULTS = {
    "method": "bcdkm", "n-clusters": 3, "block-size": "auto", "random-seed": 0, "delta": 0.2,
    "rho": 1.0, "rho-schedule": "sqrt", "violation": 1.0, "tol": 1e-4, "alpha": "", "beta": "",
    "stop": "fedcore",
    "timeout": DEFAULT_TIMEOUT, "output-path": "",
    "dataset": "fair-blobs", "n-samples": 300, "n-features": 10, "data-clusters": 3,
    "groups-per-attribute": "2,3", "bias": 0.5, "data-seed": 0, "attribute-parties": "",
}


def _float_list(value, name):
    if isinstance(value, str):
        items = [v for v in value.replace(" ", "").split(",") if v]
        try:
            return [float(v) for v in items] or None
        except ValueError:
            raise ValueError(f"Setting {name!r} must be comma-separated numbers, "
                             f"got {value!r}") from None
    return None if value is None else [float(v) for v in np.ravel(value)]


def _bound_handler(handler, defaults, msg, context):
    return handler(msg, context, defaults)


def make_client_app(data=None, handlers=None):
    """A ClientApp serving :data:`HANDLERS` (``handlers`` replaces some of them) with ``data``
    as the data settings (overridden by each node's run and node config)."""
    flwr = require_flwr()
    defaults = dict(DEFAULTS, **(data or {}))
    app = flwr.clientapp.ClientApp()
    for action, handler in dict(HANDLERS, **(handlers or {})).items():
        app.train(action)(functools.partial(_bound_handler, handler, defaults))
    return app


# --------------------------------------------------------------------------------------------
# Server side
# --------------------------------------------------------------------------------------------

class _NodeParties:
    """The parties of a Flower run as the server sees them: the methods of
    :class:`~fedcore.algorithms.f3km.party.LocalParties`, each one message per node (or none,
    where the answer is already at hand); replies are combined in party order."""

    def __init__(self, grid, nodes, infos, timeout):
        self.grid = grid
        self.nodes = nodes          # node id of each party, in party order
        self.infos = infos          # setup replies, in party order
        self.timeout = timeout
        self.n_messages = 0
        self.sweep = 0
        self._ops = []              # decisions not yet sent: (kind, lo, hi), labels
        self._op_labels = []
        self._held = None           # (lo, hi) of the proposals the parties hold
        self._phi = None
        self._phi_lo = 0
        self._explained = None      # SSE parts, valid until a move is applied
        self._tolerance = (0.0, [0.0] * len(nodes))
        self._penalty = (0.0, 1.0)  # (rho, fair_scale) the parties hold
        self.fair = False
        self.bounds = None          # explicit bounds per party, sent with ``init``

    def __len__(self):
        return len(self.nodes)

    @classmethod
    def connect(cls, grid, nodes, timeout, config):
        """Send ``setup`` to every node; order the nodes by party index and check the parties
        agree on the rows and on their number."""
        from flwr.app import ConfigRecord, RecordDict
        replies = exchange(grid, {node: RecordDict({"config": ConfigRecord(config)})
                                  for node in nodes}, "train.setup", "setup", timeout)
        infos = {node: dict(content["config"]) for node, content in replies.items()}
        n_parties = len(nodes)
        ids = sorted(int(info["party"]) for info in infos.values())
        if ids != list(range(n_parties)):
            raise ValueError(f"The nodes' partition ids must be 0..{n_parties - 1}, one per node, "
                             f"got {ids}")
        ordered = sorted(infos.items(), key=lambda item: int(item[1]["party"]))
        for node, info in ordered:
            if int(info["num-partitions"]) != n_parties:
                raise ValueError(f"Node {node} belongs to a federation of "
                                 f"{info['num-partitions']} parties, the server waits for "
                                 f"{n_parties} nodes")
            if int(info["n-samples"]) != int(ordered[0][1]["n-samples"]):
                raise ValueError(f"Party {info['party']} (node {node}) holds "
                                 f"{info['n-samples']} rows, party 0 holds "
                                 f"{ordered[0][1]['n-samples']}")
        return cls(grid, [node for node, _ in ordered], [info for _, info in ordered], timeout)

    def _send(self, action, stage, config=None, arrays=None, per_party_arrays=None):
        """One message to every node, with the pending decisions; the replies in party order."""
        from flwr.app import ConfigRecord, RecordDict
        arrays = dict(arrays or {})
        if self._ops:
            arrays["ops"] = np.array(self._ops, dtype=np.int64).reshape(-1, 3)
            arrays["op-labels"] = (np.concatenate(self._op_labels) if self._op_labels
                                   else np.zeros(0, dtype=np.int64))
        contents = {}
        for j, node in enumerate(self.nodes):
            content = RecordDict({"config": ConfigRecord(dict(config or {}))})
            party_arrays = dict(arrays, **(per_party_arrays[j] if per_party_arrays else {}))
            if party_arrays:
                content["arrays"] = arrays_record(**party_arrays)
            contents[node] = content
        replies = exchange(self.grid, contents, f"train.{action}", stage, self.timeout)
        self.n_messages += 1
        self._ops, self._op_labels = [], []
        return [replies[node] for node in self.nodes]

    @staticmethod
    def _configs(replies, key):
        return [float(content["config"][key]) for content in replies]

    def distances(self, t, row):
        """D^2 of every row to row ``row``: the parties' partial sums, added in party order."""
        replies = self._send("seed", f"k-means++ center {t}", {"center": t, "row": row})
        total = np.zeros(int(self.infos[0]["n-samples"]))
        for content in replies:
            total += read_arrays(content["arrays"])["distances"]
        return total

    def initialize(self, labels, rho, fair_scale):
        per_party = None
        if self.bounds is not None:
            per_party = [{name: b for name, b in zip(("alpha", "beta"), pair) if b is not None}
                         for pair in self.bounds]
        replies = self._send("init", "initial labels", {"rho": rho, "fair-scale": fair_scale},
                             {"labels": labels}, per_party)
        self._penalty = (rho, fair_scale)
        self._explained = self._configs(replies, "sse-part")
        if not self.fair:
            zeros = [0.0] * len(self.nodes)
            self._tolerance = (rho, zeros)
            return self._explained, zeros, zeros
        self._tolerance = (rho, self._configs(replies, "tolerance"))
        return self._explained, self._configs(replies, "violation"), self._tolerance[1]

    def begin_sweep(self, rho):
        self.sweep += 1
        if rho != self._tolerance[0]:
            raise RuntimeError(f"Parties reported their allowance at rho={self._tolerance[0]}, "
                               f"the sweep runs at rho={rho}")
        return self._tolerance[1]

    def begin_objectives(self, lo, hi, rho, fair_scale):
        if (rho, fair_scale) != self._penalty:
            raise RuntimeError(f"Parties hold rho, fair_scale = {self._penalty}, the server "
                               f"asks for {(rho, fair_scale)}")
        replies = self._send("objectives", f"sweep {self.sweep} rows {lo}:{hi}",
                             {"lo": lo, "hi": hi, "sweep": self.sweep})
        self._phi = [read_arrays(content["arrays"])["objectives"] for content in replies]
        self._phi_lo = lo

    def add_objectives(self, lo, hi, out):
        a, b = lo - self._phi_lo, hi - self._phi_lo
        for phi in self._phi:  # summed in party order
            out[:hi - lo] += phi[a:b]

    def changes(self, lo, hi, new_labels, offset, rho, fair_scale):
        proposals = np.ascontiguousarray(new_labels[offset:offset + hi - lo])
        replies = self._send("change", f"sweep {self.sweep} change {lo}:{hi}",
                             {"lo": lo, "hi": hi, "sweep": self.sweep}, {"proposals": proposals})
        self._held = (lo, hi)
        return self._configs(replies, "change")

    def apply(self, lo, hi, new_labels, offset):
        if self._held == (lo, hi):
            self._ops.append((1, lo, hi))
        else:
            self._ops.append((2, lo, hi))
            self._op_labels.append(np.array(new_labels[offset:offset + hi - lo], dtype=np.int64))
        self._held = None
        self._explained = None

    def discard(self):
        self._ops.append((0, 0, 0))
        self._held = None

    def explained(self):
        if self._explained is None:
            replies = self._send("report", f"sweep {self.sweep} report")
            self._explained = self._configs(replies, "sse-part")
        return self._explained

    def update_duals(self, rho, rho_next):
        if rho != self._penalty[0]:
            raise RuntimeError(f"Parties hold rho={self._penalty[0]}, the server updates the "
                               f"duals at rho={rho}")
        replies = self._send("duals", f"sweep {self.sweep} duals", {"rho-next": rho_next})
        self._penalty = (rho_next, self._penalty[1])
        self._explained = self._configs(replies, "sse-part")
        self._tolerance = (rho_next, self._configs(replies, "tolerance"))
        return self._configs(replies, "violation"), self._explained, self._tolerance[1]

    def close(self):
        """Each party's center block, SSE part, balance part (or None) and bounds."""
        replies = self._send("close", "close")
        out = []
        for content in replies:
            arrays = read_arrays(content["arrays"])
            out.append((arrays["centers"], float(content["config"]["sse-part"]),
                        arrays.get("balance"), arrays["alpha"], arrays["beta"]))
        return out


class F3KMFlowerResult:
    """What the server publishes after its last round: the fitted attributes of
    :class:`~fedcore.algorithms.f3km.cdkm.BCDKM` / :class:`~fedcore.algorithms.f3km.fair.FairKMeans`
    (``labels_``, ``cluster_centers_``, ``inertia_``, ``n_iter_``, ``objective_history_``,
    ``n_ranges_``, ``comm_``; F3KM adds ``balance_``, ``violation_``, ``violation_history_``,
    ``alpha_``, ``beta_``), plus ``center_blocks_`` (each party's columns of the centers),
    ``node_ids_`` (the node of each party) and ``n_messages_`` (messages per node, setup and
    close included)."""

    def __init__(self, **attributes: Any) -> None:
        self.__dict__.update(attributes)

    def __repr__(self):
        return (f"F3KMFlowerResult(n_parties={len(self.node_ids_)}, n_iter_={self.n_iter_}, "
                f"inertia_={self.inertia_!r})")


def _explicit_bounds(estimator, group_sizes):
    """The explicit ``alpha`` / ``beta`` split by party (None entries where not given)."""
    L = sum(group_sizes)
    alpha = None if estimator.alpha is None else check_fairness_bounds(estimator.alpha, "alpha", L)
    beta = None if estimator.beta is None else check_fairness_bounds(estimator.beta, "beta", L)
    if alpha is None and beta is None:
        return None
    if alpha is not None and beta is not None:
        group_bounds(np.zeros(L), 0.0, alpha, beta)  # beta <= alpha; with one of them given,
        # each party checks its groups against its own delta bounds
    edges = np.cumsum([0] + list(group_sizes))
    return [tuple(None if b is None else b[edges[j]:edges[j + 1]] for b in (alpha, beta))
            for j in range(len(group_sizes))]


def run_server(grid, estimator, n_nodes, timeout=DEFAULT_TIMEOUT):
    """DisBCDKM (``estimator`` a :class:`BCDKM`) or F3KM (a :class:`FairKMeans`) over the nodes
    of ``grid``; returns the :class:`F3KMFlowerResult`.

    Raises :class:`FlowerRoundError` if a round fails, ``ValueError`` for invalid parameters or
    parties that disagree on the rows.
    """
    fair = isinstance(estimator, FairKMeans)
    if not fair and not isinstance(estimator, BCDKM):
        raise TypeError(f"Argument 'estimator' must be a BCDKM or a FairKMeans, "
                        f"got {type(estimator).__name__}")
    k = check_int(estimator.n_clusters, "n_clusters", min_value=1)
    max_iter = check_int(estimator.max_iter, "max_iter", min_value=1)
    block_size = estimator._fit_params()["block_size"] if not fair else estimator.block_size
    if fair:
        delta, rho, lam, max_iter, tol = check_fair_params(
            estimator.delta, estimator.rho, estimator.rho_schedule, estimator.violation,
            estimator.max_iter, estimator.tol)
        stop = check_stop(estimator.stop)
    rng = check_random_state(estimator.random_state)
    nodes = wait_for_nodes(grid, n_nodes, timeout)
    setup = {"n-clusters": k, "fair": fair}
    if fair:
        setup["delta"] = delta
    parties = _NodeParties.connect(grid, nodes, timeout, setup)
    n = int(parties.infos[0]["n-samples"])
    check_n_clusters(k, n)
    nb = resolve_block_size(block_size, n)
    bounds = None
    if fair:
        sizes = [int(info["n-groups"]) for info in parties.infos]
        check_has_groups(sum(sizes))
        bounds = _explicit_bounds(estimator, sizes)
    total_sumsq = sum(float(info["total-sumsq"]) for info in parties.infos)

    ledger = CommLedger()
    rows, labels = vertical_kmeans_plusplus(n, k, rng, parties.distances)
    server = SweepServer(parties, labels, k, nb, total_sumsq, ledger, fair=fair)
    parties.fair, parties.bounds = fair, bounds
    if fair:
        history, viol_hist, n_iter, ranges = run_admm(server, parties, rho,
                                                      estimator.rho_schedule, lam, tol, max_iter,
                                                      stop=stop)
    else:
        history, n_iter, ranges = run_bcd(server, parties, max_iter)
    closing = parties.close()
    centers, inertia = join_blocks([c[0] for c in closing], [c[1] for c in closing])
    result = {"labels": labels, "centers": centers, "inertia": inertia, "n_iter": n_iter,
              "objective_history": history, "n_ranges": ranges, "comm": ledger,
              "dtype": np.dtype(str(parties.infos[0]["dtype"]))}
    if fair:
        result.update({"balance": combine_balance([c[2] for c in closing], k),
                       "violation": float(viol_hist[-1]), "violation_history": viol_hist,
                       "alpha": np.concatenate([c[3] for c in closing]),
                       "beta": np.concatenate([c[4] for c in closing])})
    return F3KMFlowerResult(**fitted_attributes(result),
                            center_blocks_=[c[0].astype(result["dtype"], copy=False)
                                            for c in closing],
                            node_ids_=list(parties.nodes), n_messages_=parties.n_messages)


def _save_result(path, result):
    """The published model as an ``.npz``: every array attribute, the scalars, the center
    blocks (``center_block_<j>``) and the ledger's totals."""
    out = {}
    for name, value in vars(result).items():
        key = name.rstrip("_")
        if name == "comm_":
            summary = value.summary()
            out["comm_rounds"] = np.int64(summary["rounds"])
            for direction in ("up", "down", "peer"):
                for field, total in summary[direction].items():
                    out[f"comm_{direction}_{field}"] = np.int64(total)
        elif name == "center_blocks_":
            for j, block in enumerate(value):
                out[f"center_block_{j}"] = block
        elif name == "node_ids_":
            out[key] = np.asarray(value, dtype=np.uint64)
        else:
            out[key] = np.asarray(value)
    np.savez(path, **out)


def load_f3km_result(path: str | os.PathLike[str]) -> F3KMFlowerResult:
    """The :class:`F3KMFlowerResult` that a deployment wrote to ``path``: the arrays and scalars,
    ``center_blocks_``, and ``comm_`` as the ledger's totals (a dict like
    :meth:`~fedcore.federation.CommLedger.summary`'s)."""
    with np.load(path) as saved:
        data = {key: saved[key] for key in saved.files}
    blocks = sorted((int(key.rsplit("_", 1)[1]), data.pop(key)) for key in list(data)
                    if key.startswith("center_block_"))
    comm = {"rounds": int(data.pop("comm_rounds"))}
    for direction in ("up", "down", "peer"):
        comm[direction] = {field: int(data.pop(f"comm_{direction}_{field}"))
                           for field in ("messages", "elements", "bits")}
    attributes = {key + "_": (value.item() if value.ndim == 0 else value)
                  for key, value in data.items()}
    attributes["node_ids_"] = [int(i) for i in attributes["node_ids_"]]
    return F3KMFlowerResult(**attributes, center_blocks_=[b for _, b in blocks], comm_=comm)


def _estimator_from_settings(cfg):
    method = str(cfg.get("method", "bcdkm"))
    block = cfg.get("block-size", "auto")
    block = block if block == "auto" else int(block)
    common = {"block_size": block, "random_state": int(cfg.get("random-seed", 0))}
    if "max-iter" in cfg:
        common["max_iter"] = int(cfg["max-iter"])
    k = int(cfg.get("n-clusters", 3))
    if method == "bcdkm":
        return BCDKM(k, **common)
    if method == "fair-kmeans":
        return FairKMeans(k, delta=float(cfg["delta"]), rho=float(cfg["rho"]),
                          rho_schedule=str(cfg["rho-schedule"]),
                          violation=float(cfg["violation"]), tol=float(cfg["tol"]),
                          alpha=_float_list(cfg.get("alpha", ""), "alpha"),
                          beta=_float_list(cfg.get("beta", ""), "beta"),
                          stop=str(cfg["stop"]), **common)
    raise ValueError(f"Setting 'method' must be 'bcdkm' or 'fair-kmeans', got {method!r}")


def _apps(estimator, data, timeout, handlers, method=None):
    flwr = require_flwr()
    defaults = dict(DEFAULTS, **(data or {}))
    server_app = flwr.serverapp.ServerApp()
    apps = FlowerApps(server_app, make_client_app(data, handlers))

    @server_app.main()
    def _main(grid, context):
        cfg = settings(defaults, context)
        if method is not None:
            cfg["method"] = method
        model = estimator if estimator is not None else _estimator_from_settings(cfg)
        n_nodes = apps.n_nodes or int(cfg.get("num-partitions", 0))
        if n_nodes < 1:
            raise ValueError("Setting 'num-partitions' (the parties, nodes to wait for) is "
                             f"required, got {cfg.get('num-partitions')!r}")
        result = run_server(grid, model, n_nodes, float(cfg.get("timeout", timeout)))
        if cfg.get("output-path"):
            _save_result(str(cfg["output-path"]), result)
        apps.publish(result)

    return apps


def bcdkm_apps(estimator: BCDKM | None = None, data: Mapping[str, Any] | None = None, *,
               timeout: float = DEFAULT_TIMEOUT,
               handlers: Mapping[str, Any] | None = None) -> FlowerApps:
    """A ServerApp and a ClientApp running DisBCDKM ([F3KM] Alg. 3) with ``estimator`` (a
    :class:`~fedcore.algorithms.f3km.cdkm.BCDKM` or CDKM; None: from the run config's settings).

    Parameters
    ----------
    estimator : BCDKM or None
        Its parameters drive the server; an int ``random_state`` reproduces
        ``estimator.fit(vfed)`` on the same federation.
    data : dict or None
        The nodes' data settings (:func:`vertical_from_settings`), overriding :data:`DEFAULTS`
        and overridden by each node's run and node config (e.g. its ``data-path``).
    timeout : float, seconds a round may take
    handlers : dict or None, ClientApp handlers replacing some of :data:`HANDLERS`

    Returns
    -------
    FlowerApps, whose ``result`` is an :class:`F3KMFlowerResult` after a successful run.
    """
    if estimator is not None and (not isinstance(estimator, BCDKM) or
                                  isinstance(estimator, FairKMeans)):
        raise TypeError(f"Argument 'estimator' must be a BCDKM, got {type(estimator).__name__}")
    return _apps(estimator, data, timeout, handlers, "bcdkm")


def fair_kmeans_apps(estimator: FairKMeans | None = None, data: Mapping[str, Any] | None = None,
                     *, timeout: float = DEFAULT_TIMEOUT,
                     handlers: Mapping[str, Any] | None = None) -> FlowerApps:
    """A ServerApp and a ClientApp running F3KM ([F3KM] Alg. 4 on the server, [F3KM] Alg. 5 on
    each node) with ``estimator`` (a :class:`~fedcore.algorithms.f3km.fair.FairKMeans`; None:
    from the run config).

    Parameters and result as in :func:`bcdkm_apps`; each node's sensitive attributes come from
    its data (``attribute-parties`` or its ``data-path`` file's ``groups``).
    """
    if estimator is not None and not isinstance(estimator, FairKMeans):
        raise TypeError(f"Argument 'estimator' must be a FairKMeans, "
                        f"got {type(estimator).__name__}")
    return _apps(estimator, data, timeout, handlers, "fair-kmeans")


_DEPLOYED = None


def __getattr__(name):
    """``server_app`` and ``client_app`` for ``flwr run`` deployments: every setting from the run
    config (:data:`DEFAULTS`; ``method`` picks DisBCDKM or F3KM); the server waits for
    ``num-partitions`` nodes and writes the model to ``output-path`` (.npz,
    :func:`load_f3km_result` reads it back). Built on first access,
    so importing this module needs no Flower run."""
    global _DEPLOYED
    if name in ("server_app", "client_app"):
        if _DEPLOYED is None:
            _DEPLOYED = _apps(None, None, DEFAULT_TIMEOUT, None)
        return getattr(_DEPLOYED, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
