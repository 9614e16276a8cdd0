"""FeCA on Flower: its protocol roles on Flower nodes, one round.

The server role :class:`~fedcore.algorithms.feca.FeCAServer` sends every node a
:class:`~fedcore.algorithms.feca.FeCASetup` (the client settings of [FeCA] Alg. 1 and the
client's seed); each node's :class:`~fedcore.algorithms.feca.FeCAClient` runs ClientUpdate and
RadiusAssign ([FeCA] Alg. 2-4) on its own data and replies with its centroids and radii; the server
runs ServerAggregation ([FeCA] Alg. 5). These are the roles :func:`fedcore.algorithms.feca.feca`
runs in one process, carried by the generic adapter :mod:`fedcore.integrations.flower.roles`, so
the same seeds give the same centers, bit for bit, and the same one-round
:class:`~fedcore.federation.CommLedger`.

Two ways in:

- :func:`feca_apps` builds a ServerApp and a ClientApp from a :class:`~fedcore.FeCA` estimator
  and a data description (the keys of
  :func:`~fedcore.integrations.flower._common.federation_from_settings`); ``.simulate(n)`` runs
  them with Flower's simulation engine and returns the fitted model.
- :data:`server_app` and :data:`client_app` serve ``flwr run`` deployments
  (``fedcore.integrations.flower.feca:server_app`` / ``:client_app``). Every setting comes from
  the run config (:data:`RUN_CONFIG_KEYS`); the server writes the model to ``output-path``, an
  ``.npz`` file that :func:`load_feca_result` reads back.
"""
from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..._validation import check_int, check_scalar
from ...algorithms.feca import FeCA, FeCAClient, check_feca_params
from ...federation.ledger import SERVER, CommLedger
from ._common import DEFAULT_TIMEOUT, FlowerApps, require_flwr, settings
from .roles import MESSAGE_TYPE, FlowerChannel, client_handler, estimator_apps

__all__ = ["feca_apps", "run_feca_server", "client_train", "estimator_from_config",
           "save_feca_result", "load_feca_result", "server_main", "server_app", "client_app",
           "RUN_CONFIG_KEYS", "MESSAGE_TYPE"]

RUN_CONFIG_KEYS = {
    "n-clusters": "FeCA n_clusters (required)",
    "client-clusters": "FeCA client_clusters; 0 or absent means n_clusters",
    "radius": 'RadiusAssign variant, "empirical" (default) or "theoretical"',
    "init": 'client Lloyd seeding, "k-means++" (default) or "random"',
    "n-local-trials": 'k-means++ candidates per center on the clients: "auto" (default, greedy '
                      'k-means++ with 2 + floor(ln client-clusters)) or an int >= 1 (1: vanilla)',
    "n-init": "Lloyd runs per client (default 1)",
    "max-iter": "Lloyd iterations per run (default 300)",
    "tol": "Lloyd tolerance (default 1e-4)",
    "remove-one-fit-many": "whether the clients remove one-fit-many centroids (ClientUpdate, "
                           "[FeCA] Alg. 2): true (default) or false, the ablation of [FeCA] "
                           "Appendix C.3",
    "random-seed": "integer seed of the per-client seeds; absent or -1 means fresh entropy",
    "num-partitions": "number of clients; the server waits for this many nodes (required)",
    "timeout": f"seconds for the nodes to connect and for the round (default {DEFAULT_TIMEOUT})",
    "output-path": "the .npz file the server writes the model to (required)",
}
"""Run-config keys of :data:`server_app`; the data keys of
:func:`~fedcore.integrations.flower._common.local_partition` are read by the nodes."""

_ESTIMATOR_KEYS = ("n_clusters", "client_clusters", "radius", "init", "n_init", "max_iter", "tol",
                   "n_local_trials", "remove_one_fit_many")


def _feca_client(X, ids, client_id):
    return FeCAClient(X, client_id)


client_train = client_handler(_feca_client)
"""The deployment ClientApp's ``train`` handler: a :class:`~fedcore.algorithms.feca.FeCAClient`
on the node's partition (see :func:`~fedcore.integrations.flower.roles.client_handler`)."""


def run_feca_server(grid, estimator, n_clients, timeout=DEFAULT_TIMEOUT):
    """[FeCA] Alg. 1 at the server of a Flower run: returns a new fitted :class:`~fedcore.FeCA`.

    Fits a new FeCA with the estimator's parameters over a
    :class:`~fedcore.integrations.flower.roles.FlowerChannel` to ``n_clients`` nodes
    (:meth:`~fedcore.FeCA.fit_over`), drawing one seed per client from ``estimator.random_state``
    as :func:`~fedcore.algorithms.feca.feca` does. Raises :class:`FlowerRoundError` when a node
    fails, does not reply within ``timeout`` seconds or claims a partition id another node
    claims; nothing is returned then. ``estimator.n_jobs`` plays no part (each node is one
    client).
    """
    model = FeCA(**estimator.get_params())
    model.server_role()  # checks the parameters before any node starts
    channel = FlowerChannel(grid, check_int(n_clients, "n_clients", min_value=1), timeout)
    return model.fit_over(channel)


def feca_apps(estimator: FeCA, data: Mapping[str, Any], *,
              timeout: float = DEFAULT_TIMEOUT) -> FlowerApps:
    """A ServerApp and a ClientApp that fit a :class:`~fedcore.FeCA` on Flower nodes, in one
    round: :func:`~fedcore.integrations.flower.roles.estimator_apps` (see there for ``data``,
    ``timeout`` and the result) for a FeCA estimator."""
    if not isinstance(estimator, FeCA):
        raise TypeError(f"Argument 'estimator' must be a FeCA, got {type(estimator).__name__}")
    return estimator_apps(estimator, data, timeout=timeout)


# --------------------------------------------------------------------------------------------
# Deployment: settings from the run config, model to an .npz file
# --------------------------------------------------------------------------------------------

def _required(cfg, key):
    if key not in cfg or cfg[key] in ("", None):
        raise ValueError(f"Run config key {key!r} is required ({RUN_CONFIG_KEYS[key]})")
    return cfg[key]


def _local_trials_setting(value):
    """``n-local-trials`` as FeCA takes it: "auto" stays a string, a count becomes an int (the
    run config may give it as an integer or as its digits)."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return value


def _bool_setting(value):
    """A boolean setting as FeCA takes it: "true" / "false" (any case) become bools, anything
    else is passed on for :func:`~fedcore.algorithms.feca.check_feca_params` to check."""
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return value


def estimator_from_config(cfg):
    """The :class:`~fedcore.FeCA` that a run config describes (keys: :data:`RUN_CONFIG_KEYS`)."""
    client_clusters = int(cfg.get("client-clusters", 0))
    seed = int(cfg.get("random-seed", -1))
    estimator = FeCA(int(_required(cfg, "n-clusters")),
                     client_clusters=client_clusters if client_clusters > 0 else None,
                     radius=str(cfg.get("radius", "empirical")),
                     init=str(cfg.get("init", "k-means++")), n_init=int(cfg.get("n-init", 1)),
                     max_iter=int(cfg.get("max-iter", 300)), tol=float(cfg.get("tol", 1e-4)),
                     n_local_trials=_local_trials_setting(cfg.get("n-local-trials", "auto")),
                     remove_one_fit_many=_bool_setting(cfg.get("remove-one-fit-many", True)),
                     random_state=seed if seed >= 0 else None)
    check_feca_params(**{key: getattr(estimator, key) for key in _ESTIMATOR_KEYS})
    return estimator


def server_main(grid, context):
    """The deployment ServerApp's main: settings from the run config, model to ``output-path``.

    Everything is checked before the round, so a bad setting costs no node any work; the file is
    written only after the round succeeded.
    """
    cfg = settings({}, context)
    estimator = estimator_from_config(cfg)
    n_clients = int(_required(cfg, "num-partitions"))
    path = os.path.abspath(os.path.expanduser(str(_required(cfg, "output-path"))))
    if not os.path.isdir(os.path.dirname(path)):
        raise ValueError(f"Run config key 'output-path' names a file in a missing directory: "
                         f"{path}")
    timeout = check_scalar(float(cfg.get("timeout", DEFAULT_TIMEOUT)), "timeout",
                           min_value=0.0, include_min=False)
    model = run_feca_server(grid, estimator, n_clients, timeout)
    save_feca_result(model, path)
    from flwr.common import log
    log(logging.INFO, "FeCA: %d center(s) from %d group(s) of the centroids of %d client(s), "
        "written to %s", model.cluster_centers_.shape[0], model.n_groups_, n_clients, path)


def _ragged(arrays, dtype, width=None):
    """Concatenation of ``arrays`` and their lengths (so empty lists keep their shape)."""
    sizes = np.array([a.shape[0] for a in arrays], dtype=np.int64)
    shape = (0,) if width is None else (0, width)
    flat = np.concatenate(arrays).astype(dtype) if arrays else np.empty(shape, dtype=dtype)
    return flat, sizes


def save_feca_result(model, path):
    """Write a fitted :class:`~fedcore.FeCA` to ``path`` (an ``.npz`` file, name kept as given).

    Client lists are stored concatenated with their lengths; :func:`load_feca_result` undoes it.
    """
    d = model.cluster_centers_.shape[1]
    centers, center_sizes = _ragged(model.client_centers_, np.float64, d)
    radii, _ = _ragged(model.client_radii_, np.float64)
    removed, removed_sizes = _ragged(model.client_removed_, np.int64)
    groups, group_sizes = _ragged(model.groups_, np.int64, 2)
    params = {key: value for key, value in model.get_params().items()
              if value is None or isinstance(value, (int, float, str))}
    comm = model.comm_.messages
    with open(path, "wb") as f:
        np.savez(f, cluster_centers=model.cluster_centers_, n_groups=model.n_groups_,
                 client_centers=centers, client_center_sizes=center_sizes, client_radii=radii,
                 client_removed=removed, client_removed_sizes=removed_sizes, groups=groups,
                 group_sizes=group_sizes, params=json.dumps(params),
                 comm_senders=np.array([m.sender for m in comm], dtype=np.int64),
                 comm_elements=np.array([m.n_elements for m in comm], dtype=np.int64),
                 comm_bits=np.array([m.n_bits for m in comm], dtype=np.int64))


def load_feca_result(path: str | os.PathLike[str]) -> FeCA:
    """The fitted :class:`~fedcore.FeCA` that :func:`save_feca_result` wrote (``random_state``
    is kept when it was None or an int)."""
    with np.load(path) as f:
        a = {key: f[key] for key in f.files}

    def split(flat, sizes):
        return list(np.split(flat, np.cumsum(sizes)[:-1])) if sizes.size else []

    model = FeCA(**json.loads(str(a["params"])))
    model.cluster_centers_ = a["cluster_centers"]
    model.client_centers_ = split(a["client_centers"], a["client_center_sizes"])
    model.client_radii_ = split(a["client_radii"], a["client_center_sizes"])
    model.client_removed_ = split(a["client_removed"], a["client_removed_sizes"])
    model.groups_ = split(a["groups"], a["group_sizes"])
    model.n_groups_ = int(a["n_groups"])
    model.comm_ = CommLedger()
    for sender, n_elements, n_bits in zip(a["comm_senders"], a["comm_elements"], a["comm_bits"]):
        model.comm_.record(0, sender=int(sender), receiver=SERVER, kind="centroids+radii",
                           n_elements=int(n_elements), n_bits=int(n_bits))
    model.n_features_in_ = model.cluster_centers_.shape[1]
    return model


def _deployment_apps():
    require_flwr()
    from flwr.clientapp import ClientApp
    from flwr.serverapp import ServerApp
    server, client = ServerApp(), ClientApp()
    server.main()(server_main)
    client.train()(client_train)
    return server, client


def __getattr__(name):
    # server_app and client_app are built on first access, so that importing this module (for
    # feca_apps, or by pytest's doctest collection) does not need flwr. Flower loads them with
    # getattr, and finds their names in __all__ when it checks the module without importing it.
    if name in ("server_app", "client_app"):
        global server_app, client_app
        server_app, client_app = _deployment_apps()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
