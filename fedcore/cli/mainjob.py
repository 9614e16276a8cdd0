"""The main job: MUFC on a federated dataset, removals, and the comparison table."""
import sys
import time

import numpy as np

from .. import datasets
from ..algorithms.baselines.dckmeans import DCKMeans
from ..algorithms.baselines.kfed import KFed
from ..algorithms.kmeans.lloyd import KMeans
from ..algorithms.mufc.estimators import MUFC
from ..federation import HorizontalFederation, partition
from .report import compile_notice, progress, table

__all__ = ["DATASETS", "PAPER_LOSS_RATIOS", "check_options", "run_mufc_job", "remaining_points",
           "pick_removal", "warm_up", "induced_inertia", "refederate"]


def remaining_points(model):
    """Points the MUFC clients still hold, stacked, with (client, id) of each."""
    parts = [(l, *model.client_model(l).remaining()) for l in model.client_ids_]
    X = np.concatenate([X_l for _, X_l, _ in parts])
    owners = np.concatenate([np.full(ids.shape[0], l) for l, _, ids in parts])
    ids = np.concatenate([ids for _, _, ids in parts])
    return X, owners, ids


def pick_removal(model, mode, batch, rng):
    """(client, ids): random points of a random client, or the adversarial choice: the points
    that contribute most to the objective (largest squared distance to the nearest server center,
    as in the MUFC paper's Fig. 3(e))."""
    X, owners, ids = remaining_points(model)
    sizes = {l: model.client_model(l).n_samples_ for l in model.client_ids_}
    eligible = [l for l in model.client_ids_ if sizes[l] - batch >= model.client_clusters_]
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


# The data sets of ``fedcore run``: the real Celltype split, then synthetic stand-ins with the
# shapes of [MUFC] Appendix M ("gaussian" is that appendix's recipe, drawn from the seed).
REAL_DATASETS = ("celltype",)
STANDINS = {"celltype-standin": "celltype", "gaussian": "gaussian", "postures": "postures",
            "covtype": "covtype", "femnist": "femnist", "tcga": "tcga", "tmi": "tmi"}
DATASETS = REAL_DATASETS + tuple(STANDINS)

# [MUFC] Table 1 loss ratios (mean +- std over 5 runs) for the data it shares with fedcore run:
# Celltype with the authors' split, and the Gaussian set (same recipe, fedcore's own draw).
PAPER_LOSS_RATIOS = {
    "celltype": {"MUFC": "1.14 +- 0.03", "K-FED": "1.72 +- 0.24", "DC-KM": "1.46 +- 0.01"},
    "gaussian": {"MUFC": "1.25 +- 0.02", "K-FED": "1.25 +- 0.01", "DC-KM": "1.02 +- 0.00"},
}
REFERENCE_N_INIT = 10   # k-means++ + Lloyd runs behind phi* when no optimum is published


def check_options(dataset, n_clients=None, n_clusters=None, client_clusters=None):
    """Why these options do not go together (one line naming the option), or None."""
    if dataset not in DATASETS:
        return f"argument --dataset: must be one of {', '.join(DATASETS)}, got {dataset!r}"
    if dataset in REAL_DATASETS:
        data = datasets.load_celltype()
        if n_clients is not None:
            return (f"argument --n-clients: not allowed with the real split (--dataset "
                    f"{dataset}, the default), which has its own {int(data.client.max()) + 1} "
                    f"clients")
        if n_clusters is not None and n_clusters != data.n_clusters:
            return (f"argument --n-clusters: the real split (--dataset {dataset}, the default) "
                    f"has K = {data.n_clusters}, the K of its optimum phi*; got {n_clusters}")
        smallest = int(np.bincount(data.client).min())
        if client_clusters is not None and not 1 <= client_clusters <= smallest:
            return (f"argument --client-clusters: must be in 1..{smallest} (the smallest client's "
                    f"size) with the real split (--dataset {dataset}), got {client_clusters}")
    return None


def _load(dataset, n_clients, n_clusters, client_clusters, seed):
    """The federation and what the table says about it.

    Returns ``(fed, X, k, kp, phi, reference, description)``: ``phi`` is the optimum of the
    centralised k-means objective that loss ratios divide by, ``reference`` says where it comes
    from.
    """
    if dataset in REAL_DATASETS:
        data = datasets.load_celltype()
        fed = HorizontalFederation.from_labels(data.X, data.client, labels=data.labels)
        k = data.n_clusters
        kp = k if client_clusters is None else client_clusters
        phi = data.optimal_inertia
        reference = (f"phi* = {phi:.2f}, the [MUFC] authors' precomputed optimum of the "
                     f"centralised k-means objective")
        description = (f"Celltype, the [MUFC] authors' non-iid split (n={data.X.shape[0]}, "
                       f"d={data.X.shape[1]}, K={k}, L={fed.n_clients}, at most "
                       f"{_max_labels_per_client(data)} cell types a client)")
        return fed, data.X, k, kp, phi, reference, description
    X, y, paper_clients = datasets.load_mufc_standin(STANDINS[dataset], random_state=seed)
    n_clients = paper_clients if n_clients is None else n_clients
    k = int(y.max()) + 1 if n_clusters is None else n_clusters
    kp = min(5 if client_clusters is None else client_clusters, k)
    fed = partition(X, n_clients, "noniid", labels=y, clusters_per_client=kp, random_state=seed)
    phi = KMeans(k, n_init=REFERENCE_N_INIT, random_state=seed).fit(X).inertia_
    reference = (f"phi* = {phi:.2f}, the best of {REFERENCE_N_INIT} centralised k-means++ + "
                 f"Lloyd runs on all points")
    kind = "[MUFC] Appendix M recipe" if dataset == "gaussian" else "synthetic stand-in"
    description = (f"{dataset} ({kind}, seed {seed}; n={X.shape[0]}, d={X.shape[1]}, K={k}, "
                   f"L={n_clients}, non-iid: at most {kp} true clusters a client)")
    return fed, X, k, kp, phi, reference, description


def _max_labels_per_client(data):
    """The most cell types one client of the split holds."""
    return max(np.unique(data.labels[data.client == c]).size for c in np.unique(data.client))


def run_mufc_job(dataset="celltype", n_clients=None, n_clusters=None, client_clusters=None,
                 n_removals=100, batch_size=1, removal="random", secure=True, seed=0,
                 n_retrain_samples=5, plot=None, out=None, server_n_init=10):
    """Fit MUFC, K-FED and DC-KM on a federated data set, remove points, print the table.

    ``dataset``: "celltype" (default), the real Celltype data with the [MUFC] authors' client
    split (:func:`fedcore.datasets.load_celltype`); clients seed ``client_clusters`` centers
    (default K = 4) and loss ratios divide by the authors' precomputed optimum phi*. Otherwise a
    synthetic set with the shape of one of [MUFC]'s (``STANDINS``), split non-iid over
    ``n_clients`` (default the paper's L) with at most ``client_clusters`` (default 5) true
    clusters a client; phi* is then the best of 10 centralised k-means++ + Lloyd runs. Loss
    ratio: the federated objective with induced clusters ([MUFC] Def. 3.1) over phi*, printed
    beside [MUFC] Table 1 where the paper has a number for the data set.

    Latencies follow [MUFC]'s model (slowest client + server). Complete retraining is a fresh
    MUFC fit on the remaining data, timed ``n_retrain_samples`` times along the removals;
    ``server_n_init`` is MUFC's number of k-means++ restarts at the server. Returns the table
    rows: ``(name, value)`` or, for loss ratios, ``(name, fedcore's, the paper's)``.
    """
    problem = check_options(dataset, n_clients, n_clusters, client_clusters)
    if problem:
        raise ValueError(problem)
    compile_notice()   # before loading: building the federation runs compiled kernels
    fed, X, k, kp, phi, reference, description = _load(dataset, n_clients, n_clusters,
                                                        client_clusters, seed)
    rng = np.random.default_rng(seed)

    def make_mufc(s, server_update="exact"):
        return MUFC(k, client_clusters=kp, secure=secure, server_update=server_update,
                    server_n_init=server_n_init, random_state=s)

    warm_up(make_mufc, fed, k, kp, seed)
    model = make_mufc(seed).fit(fed)
    dckm = DCKMeans(k, client_clusters=kp, random_state=seed).fit(fed)
    kfed = KFed(k, client_clusters=kp, random_state=seed).fit(fed)
    ratios = {"MUFC": model.federated_inertia() / phi,
              "K-FED": induced_inertia(fed, kfed.client_centers_, kfed.cluster_centers_) / phi,
              "DC-KM": dckm.federated_inertia() / phi}

    reports, dc_times, retrain = [], [], []
    every = max(1, n_removals // max(1, n_retrain_samples))
    with progress(n_removals, "removals") as bar:
        for r in range(n_removals):
            client, ids = pick_removal(model, removal, batch_size, rng)
            reports.append(model.remove(client, ids))
            t0 = time.perf_counter()
            dckm.remove(client, ids)
            dc_times.append(time.perf_counter() - t0)
            if r % every == 0:
                Xr, owners, idr = remaining_points(model)
                refed = refederate(Xr, owners, idr, model.client_ids_)
                # A complete retrain: the fastest fresh fit (no coupling records kept).
                retrain.append(make_mufc(seed + r + 1, "retrain").fit(refed)
                               .fit_report_.modeled_latency)
            bar.update()
    after = None
    if reports:
        Xr, _, _ = remaining_points(model)
        after = model.federated_inertia() / KMeans(k, n_init=REFERENCE_N_INIT,
                                                   random_state=seed).fit(Xr).inertia_
    rows = [("dataset", description), ("client seeds K'", str(kp)),
            ("aggregation", "SCMA (secure)" if secure else "plaintext sum"),
            ("loss ratio measured against", reference),
            ("loss ratio", "fedcore", "[MUFC] Table 1")]
    paper = PAPER_LOSS_RATIOS.get(dataset, {})
    rows += [(f"loss ratio {name}", f"{value:.3f}", paper.get(name, "-"))
             for name, value in ratios.items()]
    rows += _removal_rows(reports, dc_times, retrain, removal, batch_size, after)
    print(table(rows), file=out or sys.stdout)
    if plot:
        _plot(plot, reports, dc_times, retrain)
    return rows


def warm_up(make_mufc, fed, k, kp, seed):
    """Fit and unlearn once on a few clients, so that no timing below counts compilation.

    Numba compiles a kernel at its first call (then caches it on disk): on a fresh machine the
    first client retrain or coupled server update would otherwise take seconds.
    """
    few = [fed.client(l) for l in range(min(fed.n_clients, max(4, 2 * -(-k // kp))))]
    small = HorizontalFederation([X_l for X_l, _ in few], [ids for _, ids in few])
    model = make_mufc(seed).fit(small)
    client = model.client_model(0)
    kept = np.setdiff1d(client.sample_ids_, client.center_ids_)
    if kept.size and client.n_samples_ > kp:
        model.remove(0, kept[:1])               # no client retrain
    if model.client_model(0).n_samples_ > kp:
        model.remove(0, model.client_model(0).center_ids_[:1])   # the client re-seeds
    make_mufc(seed, "retrain").fit(small)
    dckm = DCKMeans(k, client_clusters=kp, random_state=seed).fit(small)
    dckm.remove(0, small.client(0)[1][:1])
    KFed(k, client_clusters=kp, random_state=seed).fit(small)


def induced_inertia(fed, client_centers, server_centers):
    """Federated objective (Def. 3.1) when local labels are the nearest local centers."""
    from ..algorithms.kmeans.lloyd import assign
    from ..metrics import federated_inertia
    clients = [(X_l, assign(X_l, C_l)[0], C_l) for (X_l, _), C_l in zip(fed, client_centers)]
    return federated_inertia(clients, server_centers)


def refederate(X, owners, ids, active):
    """The federation of the ``active`` clients' rows of ``X`` (``owners``: client of each row)."""
    return HorizontalFederation([X[owners == l] for l in active],
                                [ids[owners == l] for l in active])


def _removal_rows(reports, dc_times, retrain, removal, batch_size, after):
    """The removal part of the table; "-" where there is nothing to measure (no removals)."""
    def ms(seconds):
        return f"{seconds * 1e3:.2f} ms"

    rows = [("removals", f"{len(reports)} {removal}, batch {batch_size}"),
            ("client retrains", str(sum(r.client_retrained for r in reports)))]
    if not reports:
        return rows + [(name, "-") for name in (
            "unlearning latency p50 / p99", "DC-KM removal p50", "complete retrain (median)",
            "speed-up vs retrain", "loss ratio MUFC after removals")]
    lat = np.array([r.modeled_latency for r in reports])
    med_retrain = float(np.median(retrain))
    return rows + [
        ("unlearning latency p50 / p99",
         f"{np.median(lat) * 1e3:.2f} / {np.percentile(lat, 99) * 1e3:.2f} ms"),
        ("DC-KM removal p50", ms(np.median(dc_times))),
        ("complete retrain (median)", ms(med_retrain)),
        ("speed-up vs retrain", f"{med_retrain / np.median(lat):.1f}x"),
        ("loss ratio MUFC after removals",
         f"{after:.3f} (phi*: best of {REFERENCE_N_INIT} k-means runs on the remaining points)")]


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
