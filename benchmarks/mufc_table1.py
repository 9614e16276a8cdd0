"""Reproduce [MUFC] Table 1 on synthetic stand-ins with the seven shapes of [MUFC] Appendix M.

    python benchmarks/mufc_table1.py                       # all shapes, 5 seeds, 20 removals
    python benchmarks/mufc_table1.py --shapes gaussian tmi --seeds 2 --removals 10 --insecure

Per shape: loss ratios (federated objective of [MUFC] Def. 3.1 over the best of n_init k-means++
runs) of MUFC, K-FED and DC-KM as mean +/- std over seeds, plus MUFC's centralized objective
([MUFC] eq. (1), each point to its nearest server center) over the same reference; for MUFC, the
median modeled latency of single random removals in exact mode (slowest client + server, the model
of [MUFC] Section 6) and in lazy mode (the measurement of [MUFC] Table 1), the median in-process
wall time of a whole removal round (all clients re-sending; "wall ms") and of the next round's
masks, generated offline between requests ("masks ms", every client's pairwise streams, one client
after another here), the complete-retraining latency in the same model (a fresh fit,
``server_update="retrain"``), and both speed-ups. The geometric mean of the speed-ups over shapes
closes the table.
"""
import argparse
import time

import numpy as np

import fedcore
from fedcore.cli.mainjob import _induced_inertia, _pick_removal, _refederate, _remaining
from fedcore.algorithms.baselines.dckmeans import DCKMeans
from fedcore.algorithms.baselines.kfed import KFed
from fedcore.algorithms.mufc import MUFC


def one_seed(name, seed, n_removals, secure, client_clusters):
    X, y, n_clients = fedcore.datasets.load_mufc_standin(name, random_state=seed)
    k = int(y.max()) + 1
    kp = min(client_clusters, k)
    fed = fedcore.partition(X, n_clients, "noniid", labels=y, clusters_per_client=kp,
                            random_state=seed)
    n_init = 3 if X.shape[1] > 500 else 10
    ref = fedcore.KMeans(k, n_init=n_init, random_state=seed).fit(X).inertia_
    out = {}
    exact = MUFC(k, client_clusters=kp, secure=secure, random_state=seed).fit(fed)
    out["MUFC"] = exact.federated_inertia() / ref
    out["MUFC eq.1"] = exact.inertia(X) / ref
    kfed = KFed(k, client_clusters=kp, random_state=seed).fit(fed)
    out["K-FED"] = _induced_inertia(fed, kfed.client_centers_, kfed.cluster_centers_) / ref
    out["DC-KM"] = DCKMeans(k, client_clusters=kp, random_state=seed).fit(fed) \
        .federated_inertia() / ref
    lazy = MUFC(k, client_clusters=kp, secure=secure, server_update="lazy",
                random_state=seed).fit(fed)
    rng = np.random.default_rng(seed)
    lat, lat_lazy, wall, offline = [], [], [], []
    for _ in range(n_removals):
        client, ids = _pick_removal(exact, "random", 1, rng)
        t0 = time.perf_counter()
        report = exact.remove(client, ids)
        lat.append(report.modeled_latency)
        offline.append(report.timings.get("masks_offline", 0.0))
        wall.append(time.perf_counter() - t0 - offline[-1])
        lat_lazy.append(lazy.remove(client, ids).modeled_latency)
    Xr, owners, ids = _remaining(exact)
    refed = _refederate(Xr, owners, ids, exact._active)
    retrain = np.median([MUFC(k, client_clusters=kp, secure=secure, server_update="retrain",
                              random_state=seed + r + 1).fit(refed).fit_report_.modeled_latency
                         for r in range(3)])
    out.update(lat=np.median(lat), lat_lazy=np.median(lat_lazy), wall=np.median(wall),
               offline=np.median(offline), retrain=retrain)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", default=list(fedcore.datasets.MUFC_SHAPES))
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--removals", type=int, default=20)
    parser.add_argument("--client-clusters", type=int, default=5)
    parser.add_argument("--insecure", action="store_true")
    args = parser.parse_args()
    print(f"{'shape':>9} | {'MUFC':>11} {'MUFC eq.1':>11} {'K-FED':>11} {'DC-KM':>11} | "
          f"{'exact ms':>8} "
          f"{'lazy ms':>8} {'wall ms':>8} {'masks ms':>8} {'retrain ms':>10} | {'x exact':>7} "
          f"{'x lazy':>7}")
    speed, speed_lazy = [], []
    for name in args.shapes:
        runs = [one_seed(name, s, args.removals, not args.insecure, args.client_clusters)
                for s in range(args.seeds)]
        cell = {m: f"{np.mean([r[m] for r in runs]):.2f}+-{np.std([r[m] for r in runs]):.2f}"
                for m in ("MUFC", "MUFC eq.1", "K-FED", "DC-KM")}
        med = {m: float(np.median([r[m] for r in runs]))
               for m in ("lat", "lat_lazy", "wall", "offline", "retrain")}
        speed.append(med["retrain"] / med["lat"])
        speed_lazy.append(med["retrain"] / med["lat_lazy"])
        print(f"{name:>9} | {cell['MUFC']:>11} {cell['MUFC eq.1']:>11} {cell['K-FED']:>11} "
              f"{cell['DC-KM']:>11} | "
              f"{med['lat'] * 1e3:8.2f} {med['lat_lazy'] * 1e3:8.3f} {med['wall'] * 1e3:8.2f} "
              f"{med['offline'] * 1e3:8.1f} {med['retrain'] * 1e3:10.2f} | {speed[-1]:7.1f} "
              f"{speed_lazy[-1]:7.1f}",
              flush=True)
    print(f"geometric-mean speed-up: exact {np.exp(np.mean(np.log(speed))):.1f}x, "
          f"lazy {np.exp(np.mean(np.log(speed_lazy))):.1f}x")


if __name__ == "__main__":
    main()
