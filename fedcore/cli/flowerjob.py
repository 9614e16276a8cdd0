"""``fedcore run --engine flower``: the MUFC main job on Flower's simulation engine."""
import sys
import time

import numpy as np

from .report import compile_notice, table
from ..algorithms.mufc.estimators import MUFC
from ..metrics import loss_ratio

__all__ = ["plan_removals", "run_mufc_flower_job"]


def plan_removals(sizes_by_client, n_removals, batch_size, keep, rng):
    """``n_removals`` random requests ``(client, ids)`` drawn up front: a random client that can
    lose ``batch_size`` points and keep ``keep``, then random points it still holds.

    ``sizes_by_client``: {client: ids it holds}. Raises ``ValueError`` when no client can lose
    another batch.
    """
    held = {l: list(ids) for l, ids in sizes_by_client.items()}
    plan = []
    for _ in range(n_removals):
        eligible = sorted(l for l, ids in held.items() if len(ids) - batch_size >= keep)
        if not eligible:
            raise ValueError("No client can lose another batch and keep client_clusters points")
        client = int(rng.choice(eligible))
        picks = rng.choice(len(held[client]), size=batch_size, replace=False)
        ids = [held[client][i] for i in picks]
        for i in sorted(picks, reverse=True):
            del held[client][i]
        plan.append((client, [int(i) for i in ids]))
    return plan


def run_mufc_flower_job(dataset="gaussian", n_clients=None, n_clusters=None, client_clusters=5,
                        n_removals=100, batch_size=1, secure=True, seed=0, out=None):
    """Fit MUFC on Flower's simulation engine (one node per client), serve random removal
    requests as further rounds, check the model against the in-process run, print a table."""
    from .. import datasets
    from ..integrations.flower import federation_from_settings
    from ..integrations.flower.mufc import mufc_apps
    compile_notice()
    X, y, paper_clients = datasets.load_mufc_standin(dataset, random_state=seed)
    n_clients = paper_clients if n_clients is None else n_clients
    k = int(y.max()) + 1 if n_clusters is None else n_clusters
    kp = min(client_clusters, k)
    data = {"dataset": dataset, "partition": "noniid", "clusters-per-client": kp,
            "data-seed": seed}
    fed = federation_from_settings(dict(data, **{"num-partitions": n_clients}))
    plan = plan_removals({l: ids for l, (_, ids) in enumerate(fed)}, n_removals, batch_size, kp,
                         np.random.default_rng(seed))
    estimator = MUFC(k, client_clusters=kp, secure=secure, random_state=seed)
    t0 = time.perf_counter()
    result = mufc_apps(estimator, data, removals=plan).simulate(n_clients)
    wall = time.perf_counter() - t0

    reference = MUFC(**estimator.get_params()).fit(fed)
    for client, ids in plan:
        reference.remove(client, ids)
    same = np.array_equal(result.cluster_centers_, reference.cluster_centers_) and all(
        np.array_equal(a, b) for a, b in zip(result.aggregate_, reference.aggregate_))
    rounds = np.array([r.timings["round_wall"] for r in result.reports_[1:]]) if plan else \
        np.array([np.nan])
    modeled = np.array([r.modeled_latency for r in result.reports_[1:]]) if plan else \
        np.array([np.nan])
    Xr = np.concatenate([reference.client_model(l).remaining()[0]
                         for l in reference.client_ids_])
    rows = [("dataset", f"{dataset} stand-in (n={X.shape[0]}, d={X.shape[1]}, K={k}, "
                        f"L={n_clients}, K'={kp}, non-iid)"),
            ("engine", f"Flower simulation (Ray backend), {n_clients} nodes"),
            ("aggregation", "SCMA (secure)" if secure else "plaintext sum"),
            ("rounds", f"{result.n_rounds_ + 1} (fit + {len(plan)} removal requests)"),
            ("received by the server", f"{result.comm_.n_messages} messages, "
                                       f"{result.comm_.n_bits / 8e6:.2f} MB"),
            ("fit round wall time", f"{result.reports_[0].timings['round_wall']:.2f} s"),
            ("removal round wall time p50", f"{np.median(rounds) * 1e3:.1f} ms"),
            ("modeled latency p50 (slowest client + server)",
             f"{np.median(modeled) * 1e3:.2f} ms"),
            ("loss ratio MUFC after removals",
             f"{loss_ratio(reference.federated_inertia(), Xr, k, random_state=seed):.3f}"),
            ("same model as the in-process run", "yes" if same else "NO"),
            ("total wall time", f"{wall:.1f} s")]
    print(table(rows), file=out or sys.stdout)
    if not same:
        raise RuntimeError("The Flower run and the in-process run differ")
    return rows
