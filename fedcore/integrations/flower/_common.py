"""Plumbing shared by fedcore's Flower apps: rounds that fail loudly, records, local data.

Every fedcore app talks to its nodes through :func:`exchange`: one message per node, and either a
reply from every node or a :class:`FlowerRoundError` naming the nodes that failed or timed out.
Servers publish a model only after their last round succeeded, so a failure never leaves a
partial model behind.

Settings are flat ``UserConfig`` dictionaries (Flower's run and node configs): an app's defaults,
overridden by the run config (``[tool.flwr.app.config]`` or ``flwr run --run-config``), overridden
by the node config (``--node-config``, or ``partition-id`` / ``num-partitions`` in simulation).
"""
from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..._validation import check_int
from ...federation.horizontal import HorizontalFederation
from ...federation.vertical import VerticalFederation

__all__ = ["FlowerRoundError", "FlowerApps", "exchange", "wait_for_nodes", "arrays_record",
           "read_arrays", "settings", "local_partition", "federation_from_settings",
           "vertical_from_settings", "simulate"]

DEFAULT_TIMEOUT = 600.0  # seconds a round may take before the missing nodes are reported


def require_flwr():
    """Import flwr, or raise an ImportError that says how to install it."""
    try:
        import flwr  # noqa: F401
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError("fedcore's Flower apps need the optional dependency flwr: "
                          "pip install 'fedcore[flower]'") from exc
    return flwr


class FlowerRoundError(RuntimeError):
    """A round could not complete: some nodes replied with an error or not at all.

    Attributes
    ----------
    stage : str, the round that failed (message type and round number)
    failures : dict {node_id: reason}; the reason is the node's error, or "no reply within
        <timeout> s"
    """

    def __init__(self, stage: str, failures: Mapping[Any, str]) -> None:
        self.stage = stage
        self.failures = dict(failures)
        lines = "; ".join(f"node {node}: {reason}"
                          for node, reason in sorted(self.failures.items()))
        super().__init__(f"Round {stage!r} failed on {len(self.failures)} node(s), no model was "
                         f"published. {lines}")


def _short(reason, limit=400):
    """The last line of a node's error: the exception's message, without the wrapping that
    Flower's simulation engine adds (``...occurred. Message: <text>'>``)."""
    lines = [line for line in (reason or "").strip().splitlines() if line.strip()]
    tail = lines[-1].strip() if lines else "unknown error"
    if tail.endswith("'>"):
        tail = tail[:-2]
    _, marker, message = tail.rpartition("occurred. Message: ")
    tail = message if marker else tail
    return tail if len(tail) <= limit else tail[:limit] + "..."


def wait_for_nodes(grid, n_nodes, timeout=DEFAULT_TIMEOUT):
    """Node ids of the run, sorted, once ``n_nodes`` nodes are connected.

    Raises ``FlowerRoundError`` (stage "connect") when fewer connect within ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        nodes = sorted(grid.get_node_ids())
        if len(nodes) >= n_nodes:
            return nodes[:n_nodes] if len(nodes) > n_nodes else nodes
        if time.monotonic() > deadline:
            raise FlowerRoundError("connect", {"-": f"{len(nodes)} of {n_nodes} node(s) "
                                                    f"connected within {timeout} s"})
        time.sleep(0.02)


def exchange(grid, contents, message_type, stage, timeout=DEFAULT_TIMEOUT, *,
             allow_failures=False):
    """Send ``contents[node]`` (a RecordDict) to every node and return ``{node: reply content}``.

    Raises :class:`FlowerRoundError` naming every node whose reply is an error or is missing
    after ``timeout`` seconds; no reply of the round is returned in that case. With
    ``allow_failures`` it returns ``(replies, {node: reason})`` instead, for protocols that
    tolerate nodes dropping out.
    """
    from flwr.app import Message
    messages = [Message(content, dst_node_id=node, message_type=message_type,
                        group_id=str(stage), ttl=timeout) for node, content in contents.items()]
    replies = grid.send_and_receive(messages, timeout=timeout)
    # A reply belongs to the node its message went to (the grid numbers the messages as it
    # sends them; a reply names the message it answers), else to its source. A message whose time
    # to live ran out before its node replied comes back as an error from the link itself, not
    # from the node: it counts as that node's missing reply.
    sent = {m.metadata.message_id: m.metadata.dst_node_id for m in messages
            if m.metadata.message_id}
    late = f"no reply within {timeout} s"
    got, failures = {}, {}
    for reply in replies:
        source = reply.metadata.src_node_id
        node = sent.get(reply.metadata.reply_to_message_id, source)
        if reply.has_error():
            reason = _short(reply.error.reason)
            failures[node] = reason if source == node else f"{late} ({reason})"
        else:
            got[node] = reply.content
    for node in contents:
        if node not in got and node not in failures:
            failures[node] = late
    if allow_failures:
        return got, failures
    if failures:
        raise FlowerRoundError(f"{message_type} {stage}", failures)
    return got


def arrays_record(**arrays):
    """An ``ArrayRecord`` holding the given NumPy arrays under their names (dtypes kept)."""
    from flwr.app import Array, ArrayRecord
    return ArrayRecord({name: Array(np.ascontiguousarray(a)) for name, a in arrays.items()})


def read_arrays(record):
    """``{name: ndarray}`` of an ``ArrayRecord`` written by :func:`arrays_record`."""
    return {name: array.numpy() for name, array in record.items()}


def settings(defaults, context):
    """Defaults, then the run config, then the node config (later ones win)."""
    out = dict(defaults)
    out.update(dict(context.run_config))
    out.update(dict(context.node_config))
    return out


def _dataset(cfg):
    """``(X, y, seed)`` of the settings' ``dataset`` and ``data-seed``."""
    from ... import datasets
    seed = int(cfg.get("data-seed", 0))
    name = str(cfg.get("dataset", "gaussian"))
    if name in ("s1", "s2", "s3", "s4"):
        X, y, _ = datasets.make_s_sets(int(name[1]), random_state=seed)
    else:
        X, y, _ = datasets.load_mufc_standin(name, random_state=seed)
    return X, y, seed


def _int_list(value, name):
    """A list of ints from a list or a comma-separated string (run configs hold scalars only)."""
    if isinstance(value, str):
        items = [v for v in value.replace(" ", "").split(",") if v]
        try:
            return [int(v) for v in items]
        except ValueError:
            raise ValueError(f"Setting {name!r} must be comma-separated integers, "
                             f"got {value!r}") from None
    return [int(v) for v in value]


def vertical_from_settings(cfg: Mapping[str, Any]) -> VerticalFederation:
    """The vertical federation that ``cfg`` describes, built identically on every node.

    Keys: ``dataset``: "fair-blobs" (default; :func:`fedcore.datasets.make_fair_blobs` with
    ``n-samples``, ``n-features``, ``data-clusters``, ``groups-per-attribute`` (e.g. "2,3"),
    ``bias`` and ``data-seed``; ``attribute-parties``, e.g. "0,1", names the party holding each
    sensitive attribute, "" puts attribute a on party a mod num-partitions), or a dataset of
    :func:`federation_from_settings` ("gaussian", "s1" .. "s4", with ``data-seed``; no sensitive
    attributes). ``num-partitions``: the parties. The columns go to the parties in consecutive
    blocks, party j holding block j: of widths ``splits`` (e.g. "4,3,3") when given, else
    ``num-partitions`` nearly equal blocks.
    """
    n_parties = check_int(cfg.get("num-partitions"), "num-partitions", min_value=1)
    splits = _int_list(cfg.get("splits") or [], "splits")
    if splits and len(splits) != n_parties:
        raise ValueError(f"Setting 'splits' must give one width per party (num-partitions = "
                         f"{n_parties}), got {cfg['splits']!r}")
    name = str(cfg.get("dataset", "fair-blobs"))
    if name != "fair-blobs":
        X, _, _ = _dataset(cfg)
        return VerticalFederation.from_columns(X, splits or n_parties)
    from ...datasets import make_fair_blobs
    d = check_int(cfg.get("n-features", 10), "n-features", min_value=1)
    if d < n_parties:
        raise ValueError(f"Setting 'n-features' must be >= num-partitions = {n_parties} (one "
                         f"column per party at least), got {d}")
    sizes = _int_list(cfg.get("groups-per-attribute", "2,3"), "groups-per-attribute")
    data = make_fair_blobs(int(cfg.get("n-samples", 300)), d, int(cfg.get("data-clusters", 3)),
                           groups_per_attribute=sizes, bias=float(cfg.get("bias", 0.5)),
                           random_state=int(cfg.get("data-seed", 0)))
    holders = _int_list(cfg.get("attribute-parties", ""), "attribute-parties") or \
        [a % n_parties for a in range(len(sizes))]
    if len(holders) != len(sizes):
        raise ValueError(f"Setting 'attribute-parties' must name one party per sensitive "
                         f"attribute ({len(sizes)}), got {holders}")
    groups = [[] for _ in range(n_parties)]
    for a, j in enumerate(holders):
        if not 0 <= j < n_parties:
            raise ValueError(f"Setting 'attribute-parties' must hold party indices in "
                             f"[0, {n_parties}), got {j}")
        groups[j].append(data.groups[a])
    return VerticalFederation.from_columns(data.X, splits or n_parties,
                                           groups=[g if g else None for g in groups])


def federation_from_settings(cfg: Mapping[str, Any]) -> HorizontalFederation:
    """The horizontal federation that ``cfg`` describes, built identically on every node.

    Keys: ``dataset`` (a :data:`fedcore.datasets.MUFC_SHAPES` name, e.g. "gaussian", or "s1" ..
    "s4" for :func:`fedcore.datasets.make_s_sets`),
    ``num-partitions`` (clients), ``partition`` ("iid", "noniid" or "dirichlet"),
    ``clusters-per-client`` (noniid), ``alpha`` (dirichlet), ``data-seed``.
    """
    from ...federation import partition
    X, y, seed = _dataset(cfg)
    scheme = str(cfg.get("partition", "iid"))
    kwargs = {}
    if scheme == "noniid":
        kwargs["clusters_per_client"] = int(cfg.get("clusters-per-client", 5))
    if scheme == "dirichlet":
        kwargs["alpha"] = float(cfg.get("alpha", 0.3))
    return partition(X, int(cfg["num-partitions"]), scheme, labels=y, random_state=seed,
                     **kwargs)


def local_partition(cfg):
    """This node's data: ``(X, ids, partition_id, n_partitions)``.

    With ``splits`` in the settings the federation is vertical: the node holds the column block
    ``partition-id`` of :func:`vertical_from_settings` (every row, ids ``0..n-1``). With
    ``data-path`` in the node config, the node reads an ``.npz`` file holding ``X`` and
    optionally ``ids`` (default ``0..n-1``); ``partition-id`` and ``num-partitions`` still say
    which client it is. Otherwise the node builds :func:`federation_from_settings` and keeps its
    own partition. The server never sends data.
    """
    pid, n_parts = int(cfg["partition-id"]), int(cfg["num-partitions"])
    if cfg.get("splits"):  # a vertical federation: this node holds one block of columns
        X = vertical_from_settings(cfg).party(pid)
        return X, np.arange(X.shape[0], dtype=np.int64), pid, n_parts
    if cfg.get("data-path"):
        with np.load(str(cfg["data-path"])) as data:
            X = np.asarray(data["X"], dtype=np.float64)
            ids = np.asarray(data["ids"], dtype=np.int64) if "ids" in data else \
                np.arange(X.shape[0], dtype=np.int64)
        return X, ids, pid, n_parts
    X, ids = federation_from_settings(cfg).client(pid)
    return X, ids, pid, n_parts


class FlowerApps:
    """A ``ServerApp`` and a ``ClientApp`` of one fedcore method, and the model the server
    publishes once every round has succeeded (``result``, None before or after a failure).

    ``n_nodes`` is the number of nodes the server waits for: set by :meth:`simulate`, else the
    ``num-partitions`` setting of the run config.
    """

    def __init__(self, server_app: Any, client_app: Any) -> None:
        self.server_app = server_app
        self.client_app = client_app
        self.result = None
        self.n_nodes = None

    def publish(self, result: Any) -> None:
        """Keep ``result`` as the run's published model."""
        self.result = result

    def simulate(self, n_nodes: int, *, backend_config: Mapping[str, Any] | None = None,
                 verbose: bool = False) -> Any:
        """Run both apps with Flower's simulation engine (Ray backend) on ``n_nodes`` nodes and
        return the published result; a failed round raises :class:`FlowerRoundError`."""
        self.result = None
        self.n_nodes = int(n_nodes)
        simulate(self.server_app, self.client_app, n_nodes, backend_config=backend_config,
                 verbose=verbose)
        if self.result is None:
            raise RuntimeError("The Flower run ended without publishing a model")
        return self.result


def simulate(server_app: Any, client_app: Any, n_nodes: int, *,
             backend_config: Mapping[str, Any] | None = None, verbose: bool = False) -> None:
    """``flwr.simulation.run_simulation`` with the Ray backend, one CPU per ClientApp actor.

    Exceptions raised in the ServerApp (e.g. :class:`FlowerRoundError`) propagate to the caller.
    """
    require_flwr()
    from flwr.simulation import run_simulation
    config = {"client_resources": {"num_cpus": 1, "num_gpus": 0.0}}
    if not verbose:  # actors' logs stay in Ray's log files; errors still reach the server
        config["init_args"] = {"log_to_driver": False, "logging_level": logging.ERROR}
    if backend_config:
        config.update(backend_config)
    flwr_logger = logging.getLogger("flwr")
    level = flwr_logger.level
    if not verbose:
        flwr_logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            run_simulation(server_app, client_app, num_supernodes=int(n_nodes),
                           backend_name="ray", backend_config=config, verbose_logging=verbose)
    finally:
        flwr_logger.setLevel(level)
