"""DisBCDKM ([F3KM] Alg. 3) and F3KM ([F3KM] Alg. 4/5) on Flower: one node per party of a vertical
federation.

Each node holds one party's feature block (and its sensitive attributes, if any), read from its
own context, never sent by the server: node config ``data-path`` (an ``.npz`` with the block
``X`` and optional ``groups``, shape (n,) or (n, A)), else the synthetic federation of
:func:`vertical_from_settings`, of which the node keeps block ``partition-id``. The roles are those
of the in-process fit: the node runs :class:`fedcore.algorithms.f3km.party.F3KMParty` (through
the generic :func:`~fedcore.integrations.flower.roles.client_handler`), the server runs
:class:`fedcore.algorithms.f3km.server.F3KMServer` over a
:class:`~fedcore.integrations.flower.roles.FlowerChannel`. With the same ``random_state`` the
labels equal those of ``BCDKM.fit`` / ``FairKMeans.fit`` on the same ``VerticalFederation``, and
so does the :class:`~fedcore.federation.CommLedger`, which the channel measures from the messages.

Flower messages are ``train.<action>`` (the messages of :mod:`fedcore.algorithms.f3km.party`; a
failure on any node raises :class:`~fedcore.integrations.flower.FlowerRoundError` naming it and
the stage, e.g. ``train.objectives sweep 2 rows 0:150``, and nothing is published):

``setup``       settings down, each node's party index, rows, features, groups and centred total
                sum of squares up (not in the ledger)
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
``report``      DisBCDKM: the SSE part after a sweep, for ``objective_history_`` (not in the
                ledger, as in one process)
``close``       each party's block of the centers and part of the SSE (and balance, bounds) for
                publication (not in the ledger)

The server's decisions (apply a block's moves, [F3KM] eqs. (19)/(30), or split it) are posted
(:meth:`~fedcore.federation.protocol.Channel.post`): they travel with the next message, so a
decision costs no message of its own. Each message's ``"config"`` record also carries its sweep
and rows (``sweep``, ``lo``, ``hi``) for the nodes' handlers and logs.
"""
from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..._validation import check_int, check_random_state
from ...algorithms.f3km.party import (DualUpdate, ExplainedRequest, F3KMSetup, FinalReport,
                                      InitialLabels, ProposedLabels, RowObjectives, SeedRow)
from ...algorithms.f3km.server import F3KMServer
from ...algorithms.f3km.cdkm import BCDKM, fitted_attributes
from ...algorithms.f3km.fair import FairKMeans, check_fair_params, check_stop
from ...federation.protocol import Message
from ._common import (DEFAULT_TIMEOUT, FlowerApps, require_flwr, settings,
                      vertical_from_settings)
from ._f3km_node import handle_message
from .roles import FlowerChannel

__all__ = ["F3KMFlowerResult", "bcdkm_apps", "fair_kmeans_apps", "load_f3km_result",
           "vertical_from_settings",
           "make_client_app", "run_server", "HANDLERS", "DEFAULTS", "ACTIONS", "describe",
           "handle_message", "handle_setup", "handle_seed", "handle_init", "handle_objectives",
           "handle_change", "handle_duals", "handle_report", "handle_close", "server_app",
           "client_app"]

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

#: The Flower actions of the F3KM messages (message type ``train.<action>``), in protocol order.
ACTIONS = ("setup", "seed", "init", "objectives", "change", "duals", "report", "close")


def describe(message: Message) -> tuple[str, str, dict[str, int]]:
    """``(action, stage, labels)`` of an F3KM request for the Flower channel (see
    :class:`~fedcore.integrations.flower.roles.FlowerChannel`): e.g. ``("objectives",
    "sweep 2 rows 0:150", {"sweep": 2, "lo": 0, "hi": 150})``."""
    if isinstance(message, (RowObjectives, ProposedLabels)):
        what = "rows" if isinstance(message, RowObjectives) else "change"
        action = "objectives" if what == "rows" else "change"
        return (action, f"sweep {message.sweep} {what} {message.lo}:{message.hi}",
                {"sweep": message.sweep, "lo": message.lo, "hi": message.hi})
    if isinstance(message, (DualUpdate, ExplainedRequest)):
        action = "duals" if isinstance(message, DualUpdate) else "report"
        return action, f"sweep {message.sweep} {action}", {"sweep": message.sweep}
    if isinstance(message, SeedRow):
        return "seed", f"k-means++ center {message.center}", {}
    names = {F3KMSetup: ("setup", "setup"), InitialLabels: ("init", "initial labels"),
             FinalReport: ("close", "close")}
    action, stage = names.get(type(message), ("", type(message).__name__))
    return action, stage, {}


#: ClientApp handlers by action (message type ``train.<action>``); each takes
#: ``(msg, context, defaults)``. Every action has the same handler: the node's role answers
#: whatever message arrives.
HANDLERS = {action: handle_message for action in ACTIONS}

def _deprecated_handler(name):
    def handler(msg: Any, context: Any, defaults: Any = None) -> Any:
        warnings.warn(f"{name} is deprecated: every F3KM node message goes to handle_message",
                      DeprecationWarning, stacklevel=2)
        return handle_message(msg, context, defaults)
    handler.__name__ = handler.__qualname__ = name
    handler.__doc__ = f"Deprecated: :func:`handle_message` (the node handler of {name[7:]})."
    return handler


# The handlers by action before the F3KM roles, kept for custom ClientApps (they warn).
handle_setup, handle_seed, handle_init, handle_objectives, handle_change, handle_duals, \
    handle_report, handle_close = (_deprecated_handler(f"handle_{action}") for action in (
        "setup", "seed", "init", "objectives", "change", "duals", "report", "close"))


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


def make_client_app(data: Mapping[str, Any] | None = None,
                    handlers: Mapping[str, Any] | None = None) -> Any:
    """A ClientApp serving :data:`HANDLERS` (``handlers`` replaces some of them) with ``data``
    as the data settings (overridden by each node's run and node config); the channel's own
    ``train`` messages (which partition a node holds) go to :func:`handle_message`."""
    flwr = require_flwr()
    defaults = dict(DEFAULTS, **(data or {}))
    app = flwr.clientapp.ClientApp()
    app.train()(functools.partial(_bound_handler, handle_message, defaults))
    for action, handler in dict(HANDLERS, **(handlers or {})).items():
        app.train(action)(functools.partial(_bound_handler, handler, defaults))
    return app


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


def run_server(grid: Any, estimator: BCDKM | FairKMeans, n_nodes: int,
               timeout: float = DEFAULT_TIMEOUT) -> F3KMFlowerResult:
    """DisBCDKM (``estimator`` a :class:`BCDKM`) or F3KM (a :class:`FairKMeans`) over the nodes
    of ``grid``: :class:`~fedcore.algorithms.f3km.server.F3KMServer` over a
    :class:`~fedcore.integrations.flower.roles.FlowerChannel`; returns the
    :class:`F3KMFlowerResult`.

    Raises :class:`FlowerRoundError` if a round fails (or nodes claim the same partition),
    ``ValueError`` for invalid parameters or parties that disagree on the rows.
    """
    fair = isinstance(estimator, FairKMeans)
    if not fair and not isinstance(estimator, BCDKM):
        raise TypeError(f"Argument 'estimator' must be a BCDKM or a FairKMeans, "
                        f"got {type(estimator).__name__}")
    k = check_int(estimator.n_clusters, "n_clusters", min_value=1)
    max_iter = check_int(estimator.max_iter, "max_iter", min_value=1)
    block_size = estimator.get_params().get("block_size", 1)  # CDKM: rows one at a time
    settings_ = {}
    if fair:
        delta, rho, lam, max_iter, tol = check_fair_params(
            estimator.delta, estimator.rho, estimator.rho_schedule, estimator.violation,
            estimator.max_iter, estimator.tol)
        settings_ = {"fair": True, "delta": delta, "rho": rho,
                     "rho_schedule": estimator.rho_schedule, "violation": lam, "tol": tol,
                     "stop": check_stop(estimator.stop), "alpha": estimator.alpha,
                     "beta": estimator.beta}
    rng = check_random_state(estimator.random_state)
    channel = FlowerChannel(grid, n_nodes, timeout, describe=describe)
    server = F3KMServer(k, block_size, max_iter, rng, **settings_)
    result = server.run(channel)
    dtype = result["dtype"]
    return F3KMFlowerResult(**fitted_attributes(result),
                            center_blocks_=[b.astype(dtype, copy=False)
                                            for b in result["center_blocks"]],
                            node_ids_=list(channel.nodes), n_messages_=server.parties.n_exchanges)


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
