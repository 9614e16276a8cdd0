"""Node side of the F3KM Flower apps: a party's data and its ClientApp message handlers.

Each handler is one step of the client side of [F3KM] Alg. 5 (see :mod:`.f3km` for the messages): it
loads the node's :class:`~fedcore.algorithms.f3km.party.CDParty` from ``context.state`` (pickled,
never sent), applies the server's pending decisions, computes, stores the party back and replies.
Handlers take ``(msg, context, defaults)``: ``defaults`` are the data settings the app was built
with, overridden by the node's run and node config.
"""
from __future__ import annotations

import pickle

import numpy as np

from ..._validation import check_array, check_int
from ...algorithms.f3km.party import CDParty, encode_party_groups, final_center_block
from ...algorithms.f3km.fair import group_bounds
from ._common import arrays_record, read_arrays, settings, vertical_from_settings

__all__ = ["HANDLERS", "handle_setup", "handle_seed", "handle_init",
           "handle_objectives", "handle_change", "handle_duals", "handle_report",
           "handle_close"]

_STATE = "fedcore-f3km"


def _local_block(cfg):
    """This node's ``(X, sensitive attributes, party index, number of parties)``."""
    pid = check_int(cfg.get("partition-id"), "partition-id", min_value=0)
    n_parties = check_int(cfg.get("num-partitions"), "num-partitions", min_value=pid + 1)
    if cfg.get("data-path"):
        with np.load(str(cfg["data-path"])) as data:
            X = check_array(data["X"], "X")
            attributes = []
            if "groups" in data:
                g = np.asarray(data["groups"])
                attributes = [g] if g.ndim == 1 else list(g.T)
        return X, attributes, pid, n_parties
    fed = vertical_from_settings(cfg)
    return fed.party(pid), fed.groups(pid), pid, n_parties


class _Node:
    """A node's party between messages (kept pickled in ``context.state``, on the node): the
    :class:`CDParty`, the seed rows, the proposals of the last change request, the penalty and
    fairness scale of the current sweep."""

    def __init__(self, party, pid, fair, eta, delta):
        self.party = party
        self.pid = pid
        self.fair = fair
        self.eta = eta
        self.delta = delta
        self.seed_rows = []
        self.held = None
        self.rho = 0.0
        self.fair_scale = 1.0

    def run_decisions(self, arrays):
        """The server's decisions since the last message, in order: apply the held proposals of
        a block (1), apply the given labels (2), or drop the held proposals (0)."""
        if "ops" not in arrays:
            return
        given = arrays["op-labels"]
        used = 0
        for kind, lo, hi in arrays["ops"]:
            if kind == 0:
                self.held = None
                continue
            if kind == 1:
                if self.held is None or self.held[:2] != (lo, hi):
                    raise RuntimeError(f"Decision to apply rows {lo}:{hi} without matching "
                                       f"proposals on party {self.pid}")
                new = self.held[2]
                self.held = None
            else:
                new = given[used:used + hi - lo]
                used += hi - lo
            self.party.apply_moves(lo, hi, new, 0)
            self.party.labels[lo:hi] = new


def _load(context):
    return pickle.loads(context.state[_STATE]["node"])


def _save(context, node):
    from flwr.app import ConfigRecord
    context.state[_STATE] = ConfigRecord({"node": pickle.dumps(node)})


def _request(msg):
    content = msg.content
    config = dict(content["config"]) if "config" in content else {}
    arrays = read_arrays(content["arrays"]) if "arrays" in content else {}
    return config, arrays


def _reply(msg, config=None, arrays=None):
    from flwr.app import ConfigRecord, Message, RecordDict
    content = RecordDict()
    content["config"] = ConfigRecord(config or {})
    if arrays:
        content["arrays"] = arrays_record(**arrays)
    return Message(content, reply_to=msg)


def _step(msg, context):
    """The node's state and the request, with the server's pending decisions applied."""
    node = _load(context)
    config, arrays = _request(msg)
    node.run_decisions(arrays)
    return node, config, arrays


def handle_setup(msg, context, defaults=None):
    """Load this node's block, build its party, report its shape (``train.setup``)."""
    cfg = settings(defaults or {}, context)
    config, _ = _request(msg)
    X, attributes, pid, n_parties = _local_block(cfg)
    n = X.shape[0]
    k = int(config["n-clusters"])
    if config["fair"]:
        codes, L, eta = encode_party_groups(attributes, n)
    else:
        codes, L, eta = None, 0, np.zeros(0)
    party = CDParty(X, k, np.zeros(n, dtype=np.int64), codes, L)
    _save(context, _Node(party, pid, bool(config["fair"]), eta, float(config.get("delta", 0.2))))
    return _reply(msg, {"party": pid, "num-partitions": n_parties, "n-samples": n,
                        "n-features": int(X.shape[1]), "n-groups": L,
                        "total-sumsq": party.total_sumsq, "dtype": X.dtype.name})


def handle_seed(msg, context, defaults=None):
    """Squared distances of every row to the new k-means++ center on this party's columns
    (``train.seed``, [F3KM] Alg. 3/4 line 1)."""
    node, config, _ = _step(msg, context)
    row = int(config["row"])
    node.seed_rows.append(row)
    out = node.party.seed_distances(row)
    _save(context, node)
    return _reply(msg, arrays={"distances": out})


def handle_init(msg, context, defaults=None):
    """Take the initial labels, set up the statistics ([F3KM] Alg. 5 line 2) and Theta at U = 0
    ([F3KM] eq. (31)); report the SSE part, violation and allowance part (``train.init``)."""
    node, config, arrays = _step(msg, context)
    p = node.party
    p.labels[:] = arrays["labels"]
    if p.n_groups:
        p.alpha, p.beta = group_bounds(node.eta, node.delta, arrays.get("alpha"),
                                       arrays.get("beta"))
    node.rho = float(config["rho"])
    node.fair_scale = float(config["fair-scale"])
    p.init_statistics()
    p.update_dual(0.0)
    _save(context, node)
    if not node.fair:
        return _reply(msg, {"sse-part": p.explained()})
    return _reply(msg, {"sse-part": p.explained(), "violation": p.violation(),
                        "tolerance": p.tolerance_part(node.rho)})


def handle_objectives(msg, context, defaults=None):
    """[F3KM] eq. (17) / (27)-(28) of rows lo..hi on this party's columns (``train.objectives``,
    [F3KM] Alg. 5 lines 4-6)."""
    node, config, _ = _step(msg, context)
    lo, hi = int(config["lo"]), int(config["hi"])
    p = node.party
    p.prepare_objectives(node.rho, node.fair_scale)
    out = np.zeros((hi - lo, p.k))
    p.add_row_objectives(lo, hi, out)
    _save(context, node)
    return _reply(msg, arrays={"objectives": out})


def handle_change(msg, context, defaults=None):
    """This party's part of the change of [F3KM] eq. (24) if a block's proposed labels were applied;
    the proposals are held until the server decides (``train.change``)."""
    node, config, arrays = _step(msg, context)
    lo, hi = int(config["lo"]), int(config["hi"])
    proposals = np.ascontiguousarray(arrays["proposals"], dtype=np.int64)
    part = node.party.move_change(lo, hi, proposals, 0, node.rho, node.fair_scale)
    node.held = (lo, hi, proposals)
    _save(context, node)
    return _reply(msg, {"change": float(part)})


def handle_duals(msg, context, defaults=None):
    """Theta_h by [F3KM] eq. (31), U_h by [F3KM] eq. (32) ([F3KM] Alg. 5 lines 10-12); report the
    violation ([F3KM] eq. (33)), the SSE part and the allowance part at the next penalty
    (``train.duals``)."""
    node, config, _ = _step(msg, context)
    p = node.party
    p.update_dual(node.rho)
    node.rho = float(config["rho-next"])
    _save(context, node)
    return _reply(msg, {"violation": p.violation(), "sse-part": p.explained(),
                        "tolerance": p.tolerance_part(node.rho)})


def handle_report(msg, context, defaults=None):
    """The SSE part after a sweep (``train.report``)."""
    node, _, _ = _step(msg, context)
    _save(context, node)
    return _reply(msg, {"sse-part": node.party.explained()})


def handle_close(msg, context, defaults=None):
    """This party's block of the final centers, SSE part, balance part and bounds
    (``train.close``)."""
    node, _, _ = _step(msg, context)
    p = node.party
    block, sse_part, counts = final_center_block(p.X, p.labels, p.k,
                                                 np.asarray(node.seed_rows, dtype=np.int64))
    arrays = {"centers": block, "alpha": p.alpha, "beta": p.beta}
    if p.n_groups:
        arrays["balance"] = p.balance_part(counts, node.eta)
    _save(context, node)
    return _reply(msg, {"sse-part": sse_part}, arrays)


#: ClientApp handlers by action (message type ``train.<action>``); each takes
#: ``(msg, context, defaults)``.
HANDLERS = {"setup": handle_setup, "seed": handle_seed, "init": handle_init,
            "objectives": handle_objectives, "change": handle_change, "duals": handle_duals,
            "report": handle_report, "close": handle_close}
