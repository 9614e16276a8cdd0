"""Node side of the F3KM Flower apps: a party's data, and the one ClientApp handler that runs its
:class:`~fedcore.algorithms.f3km.party.F3KMParty` role (the generic
:func:`~fedcore.integrations.flower.roles.client_handler`, with a loader that also reads the
node's sensitive attributes).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..._validation import check_array, check_int
from ...algorithms.f3km.party import F3KMParty
from ._common import vertical_from_settings
from .roles import client_handler

__all__ = ["handle_message", "load_party"]


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


def load_party(cfg: Any) -> tuple[np.ndarray, list[np.ndarray] | None, int]:
    """``(X, sensitive attributes, party index)`` of this node: its ``data-path`` file (``X`` and
    optional ``groups``, shape (n,) or (n, A)) or its block of :func:`vertical_from_settings`;
    the arguments of :class:`~fedcore.algorithms.f3km.party.F3KMParty`."""
    X, attributes, pid, _ = _local_block(cfg)
    return X, attributes, pid


def handle_message(msg: Any, context: Any, defaults: Any = None) -> Any:
    """Answer one server message with this node's
    :class:`~fedcore.algorithms.f3km.party.F3KMParty` (built from its own data on the first
    message, kept pickled in ``context.state`` between messages); ``defaults`` are the data
    settings the app was built with, overridden by the node's run and node config."""
    return client_handler(F3KMParty, defaults, load=load_party)(msg, context)
