"""Any fedcore method on Flower: its protocol roles, run by one generic pair of apps.

A federated method in fedcore is a server role and client roles that exchange
:class:`~fedcore.federation.protocol.Message` objects through a channel
(:mod:`fedcore.federation.protocol`). This module is the Flower engine for every such method:

- :class:`FlowerChannel` is the server's channel: it addresses clients by their partition id,
  encodes each message as a ``RecordDict`` (arrays in an ``ArrayRecord``, scalars and the message
  type in a ``ConfigRecord``; :func:`encode` / :func:`decode`), sends it with Flower's grid and
  counts what it sends and receives in the run's ledger, measured from the messages exactly as the
  in-process channel does;
- :func:`client_handler` is the node's side: it builds the method's client role from the node's
  own data on the first message, keeps it pickled in ``context.state`` (on the node, never sent)
  between messages, and answers each message with the role's reply;
- :func:`role_apps` pairs them into a ServerApp and a ClientApp, and :func:`estimator_apps` does
  so for any :class:`~fedcore.algorithms.base.FederatedEstimator`.

Which client a node is comes from its node config (``partition-id``, ``num-partitions``). Before
the first round the channel asks every node for it (a transport message, not counted) and refuses
a run where two nodes claim one partition, a partition is out of range or a node runs a different
number of partitions. Only registered message types can be decoded: nothing received is
unpickled.
"""
from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from ..._validation import check_scalar
from ...federation.ledger import CommLedger
from ...federation.protocol import (Channel, ClientRole, Message, ProtocolError, message_type,
                                    type_name)
from ...kernels.parallel import single_threaded_kernels
from ._common import (DEFAULT_TIMEOUT, FlowerApps, FlowerRoundError, arrays_record, exchange,
                      local_partition, read_arrays, require_flwr, settings, wait_for_nodes)

__all__ = ["encode", "decode", "FlowerChannel", "map_partitions", "client_handler", "role_apps",
           "estimator_apps", "MESSAGE_TYPE", "HELLO"]

MESSAGE_TYPE = "train"
HELLO = "fedcore.hello"  # the transport's question "which partition are you?"
_TYPE_KEY = "fedcore-type"
_STATE = "fedcore-role"
_POSTED = "fedcore-posted-"  # records of the messages posted before a request


def encode(message: Message) -> Any:
    """The ``RecordDict`` that carries ``message``: ``"arrays"`` (an ``ArrayRecord`` of its array
    fields, dtypes and shapes kept) and ``"scalars"`` (a ``ConfigRecord`` of its scalar fields and
    its type's wire name)."""
    from flwr.app import ConfigRecord, RecordDict
    if not isinstance(message, Message):
        raise ProtocolError(f"Only fedcore Messages can be sent, got {type(message).__name__}")
    arrays, scalars = {}, {_TYPE_KEY: type_name(type(message))}
    for name, value in message.fields().items():
        if isinstance(value, np.ndarray):
            arrays[name] = value
        elif isinstance(value, (bool, np.bool_)):
            scalars[name] = bool(value)
        elif isinstance(value, (int, np.integer)):
            scalars[name] = int(value)
        elif isinstance(value, (float, np.floating)):
            scalars[name] = float(value)
        elif isinstance(value, str):
            scalars[name] = value
        else:
            raise ProtocolError(f"Field {name!r} of {type(message).__name__} is a "
                                f"{type(value).__name__}; messages hold arrays and scalars")
    return RecordDict({"arrays": arrays_record(**arrays), "scalars": ConfigRecord(scalars)})


def decode(content: Any) -> Message:
    """The :class:`~fedcore.federation.protocol.Message` that :func:`encode` wrote."""
    scalars = dict(content["scalars"])
    cls = message_type(str(scalars.pop(_TYPE_KEY, "")))
    values = dict(read_arrays(content["arrays"]), **scalars)
    names = {f.name for f in dataclasses.fields(cls)}
    if set(values) != names:
        raise ProtocolError(f"A {cls.__name__} needs the fields {sorted(names)}, got "
                            f"{sorted(values)}")
    return cls(**values)


def _hello():
    from flwr.app import ConfigRecord, RecordDict
    return RecordDict({"scalars": ConfigRecord({_TYPE_KEY: HELLO})})


def map_partitions(replies: Mapping[int, Any], n_clients: int) -> list[int]:
    """``[node of partition 0, node of partition 1, ...]`` from the nodes' hello replies
    (``{node: RecordDict}``); raises :class:`FlowerRoundError` naming every node that claims a
    partition another node claims, a partition out of range, or another number of partitions."""
    owner, failures = {}, {}
    for node, content in replies.items():
        scalars = content["scalars"]
        pid, parts = int(scalars["partition-id"]), int(scalars["num-partitions"])
        if parts != n_clients:
            failures[node] = f"num-partitions {parts}, the server runs {n_clients} clients"
        elif not 0 <= pid < n_clients:
            failures[node] = f"partition-id {pid} outside [0, {n_clients})"
        elif pid in owner:
            failures[node] = f"partition-id {pid} also claimed by node {owner[pid]}"
            failures[owner[pid]] = f"partition-id {pid} also claimed by node {node}"
        else:
            owner[pid] = node
    if failures:
        raise FlowerRoundError(f"{MESSAGE_TYPE} hello", failures)
    return [owner[pid] for pid in range(n_clients)]


class FlowerChannel(Channel):
    """A server role's channel to the client roles on Flower nodes (see the module's notes).

    Waits for ``n_clients`` nodes (``timeout`` seconds), asks each for its partition id and maps
    clients to nodes; raises :class:`FlowerRoundError` naming the nodes at fault. Every exchange
    either returns a reply from every addressed client or raises :class:`FlowerRoundError`.

    ``describe(message) -> (action, stage, labels)`` (optional) names an exchange for Flower by
    its first request: message type ``train.<action>`` (``train`` if the action is ""), the stage
    a :class:`FlowerRoundError` reports (default: the round number), and scalar labels put in a
    ``"config"`` record of each request (transport metadata for the nodes' handlers and logs;
    not part of the message, not counted). The ClientApp must then serve each action (see
    :func:`client_handler`). Posted messages (:meth:`post`) are held and delivered with the next
    exchange to the same client, before its request.
    """

    def __init__(self, grid: Any, n_clients: int, timeout: float = DEFAULT_TIMEOUT,
                 ledger: CommLedger | None = None, *,
                 describe: Callable[[Message], tuple[str, str, Mapping[str, Any]]] | None = None,
                 ) -> None:
        self.grid = grid
        self.n_clients = int(n_clients)
        self.timeout = timeout
        self.ledger = CommLedger() if ledger is None else ledger
        self.describe = describe
        self._posted: dict[int, list[Any]] = {}
        nodes = wait_for_nodes(grid, self.n_clients, timeout)
        replies = exchange(grid, {node: _hello() for node in nodes}, MESSAGE_TYPE, "hello",
                           timeout)
        self.nodes = map_partitions(replies, self.n_clients)

    def _send(self, requests, round_number, allow_failures=False):
        """Encode ``requests`` (with the messages posted to their clients) and send them."""
        from flwr.app import ConfigRecord
        message_type, stage, contents = MESSAGE_TYPE, round_number, {}
        for l, m in requests.items():
            content = encode(m)
            for i, posted in enumerate(self._posted.pop(l, [])):
                content[f"{_POSTED}{i}.arrays"] = posted["arrays"]
                content[f"{_POSTED}{i}.scalars"] = posted["scalars"]
            if self.describe is not None:
                action, label, labels = self.describe(m)
                if not contents:
                    message_type = f"{MESSAGE_TYPE}.{action}" if action else MESSAGE_TYPE
                    stage = label
                if labels:
                    content["config"] = ConfigRecord(dict(labels))
            contents[self.nodes[l]] = content
        return exchange(self.grid, contents, message_type, stage, self.timeout,
                        allow_failures=allow_failures)

    def exchange(self, requests: Mapping[int, Message], round_number: int, *,
                 request_round: int | None = None) -> dict[int, Message]:
        requests = dict(requests)
        got = self._send(requests, round_number)
        replies, failures = {}, {}
        for l in requests:
            try:
                replies[l] = decode(got[self.nodes[l]])
            except (ProtocolError, KeyError, TypeError, ValueError) as exc:
                failures[self.nodes[l]] = f"unreadable reply: {exc}"
        if failures:
            raise FlowerRoundError(f"{MESSAGE_TYPE} {round_number}", failures)
        self._count(requests, replies, round_number, request_round)
        return replies

    def exchange_tolerant(self, requests: Mapping[int, Message], round_number: int, *,
                          at_least: int, what: str) -> tuple[dict[int, Message], dict[int, str]]:
        """:meth:`exchange` for a round that survives clients dropping out (SCMA's dropout
        tolerance): ``(replies, failures)``, the replies of the clients that answered and
        ``{client: reason}`` of those that failed or did not answer in time. Raises
        :class:`FlowerRoundError` naming the failed nodes when fewer than ``at_least`` answered
        (``what`` names that bound in the message)."""
        requests = dict(requests)
        got, failed = self._send(requests, round_number, allow_failures=True)
        client_of = {self.nodes[l]: l for l in requests}
        replies = {}
        for node, content in got.items():
            try:
                replies[client_of[node]] = decode(content)
            except (ProtocolError, KeyError, TypeError, ValueError) as exc:
                failed[node] = f"unreadable reply: {exc}"
        if len(replies) < at_least:
            raise FlowerRoundError(f"{MESSAGE_TYPE} {round_number}: {len(replies)} client(s) "
                                   f"answered, fewer than {what} = {at_least}", failed)
        replies = {l: replies[l] for l in requests if l in replies}
        self._count({l: requests[l] for l in replies}, replies, round_number)
        return replies, {client_of[node]: reason for node, reason in failed.items()}

    def post(self, requests: Mapping[int, Message], round_number: int) -> None:
        """One-way messages, counted now in round ``round_number`` and delivered with the next
        exchange to each client (see :meth:`Channel.post`)."""
        requests = dict(requests)
        for l, m in requests.items():
            self._posted.setdefault(l, []).append(encode(m))
        self._count(requests, {}, round_number)


def _posted_messages(content):
    """The messages posted before the request in ``content``, in the order they were posted."""
    out = []
    while f"{_POSTED}{len(out)}.scalars" in content:
        i = len(out)
        out.append(decode({"arrays": content[f"{_POSTED}{i}.arrays"],
                           "scalars": content[f"{_POSTED}{i}.scalars"]}))
    return out


def client_handler(make_client: Callable[..., ClientRole],
                   defaults: Mapping[str, Any] | None = None, *,
                   load: Callable[[Mapping[str, Any]], tuple[Any, ...]] | None = None,
                   ) -> Callable[[Any, Any], Any]:
    """A ClientApp ``train`` handler running the client role that ``make_client`` builds.

    ``make_client(X, ids, client_id)`` is called with the node's partition (see
    :func:`~fedcore.integrations.flower._common.local_partition`) when the first message of a run
    arrives, or ``make_client(*load(settings))`` when a loader is given (a role that needs more
    of the node's data than its rows, e.g. sensitive attributes); ``defaults`` are data settings,
    overridden by the run and node config. Messages posted before the request
    (:meth:`FlowerChannel.post`) are handled first, in order, their replies dropped. The handler
    serves any action (register it under each ``train.<action>`` a channel's ``describe``
    names). An exception reaches the server as an error reply, which it reports in a
    :class:`FlowerRoundError` naming this node.
    """
    defaults = dict(defaults or {})

    def train(msg, context):
        from flwr.app import ConfigRecord, Message as FlowerMessage, RecordDict
        cfg = settings(defaults, context)
        if msg.content["scalars"][_TYPE_KEY] == HELLO:
            reply = RecordDict({"scalars": ConfigRecord({
                "partition-id": int(cfg["partition-id"]),
                "num-partitions": int(cfg["num-partitions"])})})
            return FlowerMessage(reply, reply_to=msg)
        if _STATE in context.state:
            role = pickle.loads(context.state[_STATE]["role"])
        elif load is not None:
            role = make_client(*load(cfg))
        else:
            X, ids, pid, _ = local_partition(cfg)
            role = make_client(X, ids, pid)
        with single_threaded_kernels():
            for posted in _posted_messages(msg.content):
                role.handle(posted)
            answer = role.handle(decode(msg.content))
        context.state[_STATE] = ConfigRecord({"role": pickle.dumps(role)})
        return FlowerMessage(encode(answer), reply_to=msg)

    return train


def role_apps(run: Callable[[FlowerChannel], Any],
              make_client: Callable[[np.ndarray, np.ndarray, int], ClientRole],
              data: Mapping[str, Any], *, timeout: float = DEFAULT_TIMEOUT) -> FlowerApps:
    """A ServerApp and a ClientApp that run one method's roles on Flower nodes.

    Parameters
    ----------
    run : callable ``(channel) -> model``, the server's work over a :class:`FlowerChannel`
        (e.g. ``estimator.fit_over``); its return value is published
    make_client : callable ``(X, ids, client_id) -> client role`` (see :func:`client_handler`)
    data : dict, data settings of the nodes (see :func:`client_handler`); "num-partitions", the
        number of clients, is required here or in the run config
    timeout : float, seconds for the nodes to connect and for each round

    Returns
    -------
    FlowerApps
        ``apps.simulate(n)`` runs them and returns what ``run`` returned; a failed round raises
        :class:`FlowerRoundError` and publishes nothing.
    """
    require_flwr()
    from flwr.clientapp import ClientApp
    from flwr.serverapp import ServerApp
    data = dict(data)
    server_app, client_app = ServerApp(), ClientApp()
    apps = FlowerApps(server_app, client_app)

    @server_app.main()
    def main(grid, context):
        cfg = settings(data, context)
        apps.publish(run(FlowerChannel(grid, int(cfg["num-partitions"]), timeout)))

    client_app.train()(client_handler(make_client, data))
    return apps


def estimator_apps(estimator: Any, data: Mapping[str, Any], *,
                   timeout: float = DEFAULT_TIMEOUT) -> FlowerApps:
    """A ServerApp and a ClientApp that fit a federated estimator on Flower nodes.

    Works for every :class:`~fedcore.algorithms.base.FederatedEstimator` (FeCA, k-FED, M-Avg,
    FFCM, DC-KM, ...): the nodes run its :meth:`client_role` on their own partitions (with their
    global point ids), the server runs a new estimator with the same parameters through
    :meth:`fit_over`.

    Parameters
    ----------
    estimator : FederatedEstimator
        Its parameters (and ``random_state``, drawn from at each run as ``fit`` does) set the run;
        the estimator itself is not modified; ``n_jobs`` plays no part (each node is one client).
    data : dict
        Settings of the nodes' data, overridden by each node's node config: the keys of
        :func:`~fedcore.integrations.flower._common.federation_from_settings` ("dataset",
        "num-partitions", "partition", "alpha", "data-seed", ...) or a node's "data-path".
        "num-partitions", the number of clients, is required.
    timeout : float, default=600
        Seconds for the nodes to connect, and for each round.

    Returns
    -------
    FlowerApps
        ``apps.simulate(n_nodes)`` runs the apps and returns, as ``apps.result``, a new fitted
        estimator equal to ``fit`` on the same federation with the same seed, ledger included.
        A failed round raises :class:`FlowerRoundError` and publishes nothing.
    """
    from ...algorithms.base import FederatedEstimator
    require_flwr()
    if not isinstance(estimator, FederatedEstimator):
        raise TypeError(f"Argument 'estimator' must be a federated estimator (FeCA, KFed, "
                        f"MatchAveraging, FFCM, ...), got {type(estimator).__name__}")
    estimator.server_role()  # checks the parameters before any node starts
    if not isinstance(data, dict):
        raise TypeError(f"Argument 'data' must be a dict of settings, got {type(data).__name__}")
    if "num-partitions" not in data:
        raise ValueError(f"Argument 'data' must give 'num-partitions' (the number of clients), "
                         f"got keys {sorted(data)}")
    timeout = check_scalar(timeout, "timeout", min_value=0.0, include_min=False)
    cls, params = type(estimator), estimator.get_params()
    return role_apps(lambda channel: cls(**params).fit_over(channel),
                     lambda X, ids, client_id: cls(**params).client_role(X, client_id, ids=ids),
                     data, timeout=timeout)
