"""The main job: MUFC on a federated dataset, removals, and the comparison table."""
import sys
import time

import numpy as np

from .. import datasets
from ..algorithms.baselines.dckmeans import DCKMeans
from ..algorithms.mufc.estimators import MUFC
from ..federation import partition
from ..metrics import loss_ratio
from .report import progress, table

__all__ = ["run_mufc_job"]


def _remaining(model):
    """Points the MUFC clients still hold, stacked, with (client, id) of each."""
    parts = [(l, *model._clients[l].remaining()) for l in model._active]
    X = np.concatenate([X_l for _, X_l, _ in parts])
    owners = np.concatenate([np.full(ids.shape[0], l) for l, _, ids in parts])
    ids = np.concatenate([ids for _, _, ids in parts])
    return X, owners, ids


def _pick_removal(model, mode, batch, rng):
    """(client, ids): random points of a random client, or the adversarial choice: the points
    that contribute most to the objective (largest squared distance to the nearest server center,
    as in the MUFC paper's Fig. 3(e))."""
    X, owners, ids = _remaining(model)
    sizes = {l: model._clients[l].n_samples_ for l in model._active}
    eligible = [l for l in model._active if sizes[l] - batch >= model._kp]
    if not eligible:
        raise ValueError("No client can lose another batch and keep client_clusters points")
    if mode == "adversarial":
        d2 = ((X[:, None, :] - model.cluster_centers_[None]) ** 2).sum(axis=2).min(axis=1)
        d2[~np.isin(owners, eligible)] = -np.inf
        client = int(owners[np.argmax(d2)])
        mine = owners == client
        order = np.argsort(-d2[mine], kind="stable")[:batch]
        return client, ids[mine][order]
    client = int(rng.choice(eligible))
    return client, rng.choice(ids[owners == client], size=batch, replace=False)


def run_mufc_job(dataset="gaussian", n_clients=None, n_clusters=None, client_clusters=5,
                 n_removals=100, batch_size=1, removal="random", secure=True, seed=0,
                 n_retrain_samples=5, plot=None, out=None):
    """Fit MUFC, K-FED and DC-KM on a federated stand-in, remove points, print the table.

    Latencies follow the MUFC paper's model (slowest client + server). Complete retraining is a
    fresh MUFC fit on the remaining data, timed ``n_retrain_samples`` times along the removals.
    Returns the table rows.
    """
    X, y, paper_clients = datasets.load_mufc_standin(dataset, random_state=seed)
    n_clients = paper_clients if n_clients is None else n_clients
    k = int(y.max()) + 1 if n_clusters is None else n_clusters
    kp = min(client_clusters, k)
    fed = partition(X, n_clients, "noniid", labels=y, clusters_per_client=kp, random_state=seed)
    rng = np.random.default_rng(seed)

    def make_mufc(s, server_update="exact"):
        return MUFC(k, client_clusters=kp, secure=secure, server_update=server_update,
                    random_state=s)

    model = make_mufc(seed).fit(fed)
    ratios = {"MUFC": loss_ratio(model.federated_inertia(), X, k, random_state=seed)}
    dckm = DCKMeans(k, client_clusters=kp, random_state=seed).fit(fed)
    ratios["DC-KM"] = loss_ratio(dckm.federated_inertia(), X, k, random_state=seed)
    kfed = _kfed(k, kp, seed)
    if kfed is not None:
        kfed.fit(fed)
        ratios["K-FED"] = loss_ratio(_induced_inertia(fed, kfed.client_centers_,
                                                      kfed.cluster_centers_), X, k,
                                     random_state=seed)

    reports, dc_times, retrain = [], [], []
    every = max(1, n_removals // max(1, n_retrain_samples))
    for r in range(n_removals):
        client, ids = _pick_removal(model, removal, batch_size, rng)
        reports.append(model.remove(client, ids))
        t0 = time.perf_counter()
        dckm.remove(client, ids)
        dc_times.append(time.perf_counter() - t0)
        if r % every == 0:
            Xr, owners, idr = _remaining(model)
            refed = _refederate(Xr, owners, idr, model._active)
            # A complete retrain: the fastest fresh fit (no coupling records kept).
            retrain.append(make_mufc(seed + r + 1, "retrain").fit(refed)
                           .fit_report_.modeled_latency)
        progress(r + 1, n_removals, "removals")
    Xr, _, _ = _remaining(model)
    rows = _rows(dataset, X, k, kp, n_clients, secure, ratios, model, Xr, reports, dc_times,
                 retrain, removal, batch_size, seed)
    print(table(rows), file=out or sys.stdout)
    if plot:
        _plot(plot, reports, dc_times, retrain)
    return rows


def _kfed(k, kp, seed):
    try:
        from ..algorithms.baselines.kfed import KFed
    except ImportError:  # K-FED ships with the FeCA family
        return None
    return KFed(k, client_clusters=kp, random_state=seed)


def _induced_inertia(fed, client_centers, server_centers):
    """Federated objective (Def. 3.1) when local labels are the nearest local centers."""
    from ..algorithms.kmeans.lloyd import assign
    from ..metrics import federated_inertia
    clients = [(X_l, assign(X_l, C_l)[0], C_l) for (X_l, _), C_l in zip(fed, client_centers)]
    return federated_inertia(clients, server_centers)


def _refederate(X, owners, ids, active):
    from ..federation import HorizontalFederation
    return HorizontalFederation([X[owners == l] for l in active],
                                [ids[owners == l] for l in active])


def _rows(dataset, X, k, kp, n_clients, secure, ratios, model, Xr, reports, dc_times, retrain,
          removal, batch_size, seed):
    lat = np.array([r.modeled_latency for r in reports]) if reports else np.array([np.nan])
    med_retrain = float(np.median(retrain)) if retrain else float("nan")
    after = loss_ratio(model.federated_inertia(), Xr, k, random_state=seed)
    rows = [("dataset", f"{dataset} stand-in (n={X.shape[0]}, d={X.shape[1]}, K={k}, "
                        f"L={n_clients}, K'={kp}, non-iid)"),
            ("aggregation", "SCMA (secure)" if secure else "plaintext sum")]
    rows += [(f"loss ratio {name}", f"{value:.3f}") for name, value in ratios.items()]
    rows += [("removals", f"{len(reports)} {removal}, batch {batch_size}"),
             ("client retrains", str(sum(r.client_retrained for r in reports))),
             ("unlearning latency p50 / p99", f"{np.median(lat) * 1e3:.2f} / "
                                              f"{np.percentile(lat, 99) * 1e3:.2f} ms"),
             ("DC-KM removal p50", f"{np.median(dc_times) * 1e3:.2f} ms" if dc_times else "-"),
             ("complete retrain (median)", f"{med_retrain * 1e3:.2f} ms"),
             ("speed-up vs retrain", f"{med_retrain / np.median(lat):.1f}x"),
             ("loss ratio MUFC after removals", f"{after:.3f}")]
    return rows


def _plot(path, reports, dc_times, retrain):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError("--plot needs matplotlib: pip install 'fedcore[plot]'") from None
    steps = np.arange(1, len(reports) + 1)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(steps, np.cumsum([r.modeled_latency for r in reports]), label="MUFC (exact)")
    ax.plot(steps, np.cumsum(dc_times), label="DC-KM")
    if retrain:
        ax.plot(steps, steps * float(np.median(retrain)), label="complete retrain")
    ax.set_xlabel("removal requests")
    ax.set_ylabel("accumulated removal time (s)")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
