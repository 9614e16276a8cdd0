"""A Flower grid without the simulation engine: every message goes straight to a ClientApp in
this process, each node with its own context (node config, state) kept between messages.

Fast tests of the Flower channel and of the apps' server logic; the engine itself is exercised by
the simulation tests.
"""
from types import SimpleNamespace

from flwr.app import Context, RecordDict


class _ErrorReply:
    """A node's error reply, as the grid returns it."""

    def __init__(self, node, reason):
        self.metadata = SimpleNamespace(src_node_id=node, reply_to_message_id="")
        self.error = SimpleNamespace(reason=reason)
        self.content = None

    def has_error(self):
        return True


class LoopbackGrid:
    """``n_nodes`` nodes (ids 100, 101, ...; node ``100 + p`` holds partition ``p``) served by
    ``client_app``; ``sent`` lists ``(message_type, group_id, node, content)`` of every message.

    Server-side Flower messages need a run's task identity: set it with
    :func:`serve_messages` (a pytest ``monkeypatch``) before use.
    """

    def __init__(self, client_app, n_nodes, run_config=None, node_configs=None):
        self.app = client_app
        self.contexts = {}
        for p in range(n_nodes):
            node_config = {"partition-id": p, "num-partitions": n_nodes}
            node_config.update((node_configs or {}).get(p, {}))
            self.contexts[100 + p] = Context(run_id=1, node_id=100 + p, node_config=node_config,
                                             state=RecordDict(),
                                             run_config=dict(run_config or {}))
        self.sent = []

    def get_node_ids(self):
        return list(self.contexts)

    def send_and_receive(self, messages, timeout=None):
        replies = []
        for msg in messages:
            node = msg.metadata.dst_node_id
            self.sent.append((msg.metadata.message_type, msg.metadata.group_id, node,
                              msg.content))
            try:
                replies.append(self.app(msg, self.contexts[node]))
            except Exception as exc:  # noqa: BLE001 -- a node's error becomes its reply
                replies.append(_ErrorReply(node, f"{type(exc).__name__}: {exc}"))
        return replies


def serve_messages(monkeypatch):
    """Let this process build server-side Flower messages (as a ServerApp's run does)."""
    from flwr.supercore.task_identity import TaskIdentity
    for name, value in (("_run_id", 1), ("_node_id", 0), ("_task_id", 0)):
        monkeypatch.setattr(TaskIdentity, name, value)
