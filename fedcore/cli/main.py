"""The ``fedcore`` command."""
import argparse
import sys
import time

import numpy as np

from .report import progress, table

__all__ = ["main"]


def run_unlearning(n_removals=100, seed=0, n_clusters=10, refine=False, out=None):
    """Fit UnlearnableKMeans on the embedded Gaussian set, remove random points one at a time.

    Each removal is timed against a complete retrain (a fresh fit on the remaining points).
    Returns the table rows (also printed to ``out``).
    """
    from .. import datasets
    from ..algorithms import UnlearnableKMeans
    from ..metrics import inertia

    X, _, _ = datasets.load_gaussian()
    rng = np.random.default_rng(seed)
    model = UnlearnableKMeans(n_clusters, refine=refine, random_state=seed).fit(X)
    UnlearnableKMeans(n_clusters, refine=refine, random_state=seed).fit(X[:100])  # warm caches
    removal_times, retrain_times, retrains = [], [], 0
    alive = np.ones(X.shape[0], dtype=bool)
    for r in range(n_removals):
        point = int(rng.choice(model.sample_ids_))
        t0 = time.perf_counter()
        retrains += model.remove(point).retrained
        removal_times.append(time.perf_counter() - t0)
        alive[point] = False
        t0 = time.perf_counter()
        UnlearnableKMeans(n_clusters, refine=refine, random_state=seed + r + 1).fit(X[alive])
        retrain_times.append(time.perf_counter() - t0)
        progress(r + 1, n_removals, "removals")
    med_rm = float(np.median(removal_times)) if removal_times else float("nan")
    med_rt = float(np.median(retrain_times)) if retrain_times else float("nan")
    rows = [
        ("dataset", f"Gaussian (n={X.shape[0]}, d={X.shape[1]}, K={n_clusters})"),
        ("method", "UnlearnableKMeans" + (" + Lloyd" if refine else "")),
        ("removals", str(n_removals)),
        ("retrains", str(retrains)),
        ("median unlearning time", f"{med_rm * 1e3:.3f} ms"),
        ("median full-retrain time", f"{med_rt * 1e3:.3f} ms"),
        ("speed-up", f"{med_rt / med_rm:.1f}x"),
        ("objective (remaining data)", f"{inertia(X[alive], model.cluster_centers_):.4f}"),
    ]
    print(table(rows), file=out or sys.stdout)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="fedcore", description="fedcore command line")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="the main job: MUFC with exact unlearning on a federated "
                                     "dataset (default: the embedded Gaussian set)")
    run.add_argument("--dataset", default="gaussian",
                     help="MUFC paper shape: gaussian (default), celltype, postures, covtype, "
                          "femnist, tcga, tmi (synthetic stand-ins)")
    run.add_argument("--n-clients", type=int, default=None, help="L (default: the paper's)")
    run.add_argument("--n-clusters", type=int, default=None, help="K (default: the dataset's)")
    run.add_argument("--client-clusters", type=int, default=5, help="K' (default 5)")
    run.add_argument("--n-removals", type=int, default=100, help="removal requests (default 100)")
    run.add_argument("--batch-size", type=int, default=1, help="points per request (default 1)")
    run.add_argument("--removal", choices=["random", "adversarial"], default="random")
    run.add_argument("--insecure", action="store_true", help="plaintext sum instead of SCMA")
    run.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    run.add_argument("--plot", metavar="FILE", help="save accumulated removal time (PNG)")
    run.add_argument("--engine", choices=["local", "flower"], default="local",
                     help="local (default): in process; flower: one Flower node per client on "
                          "Flower's simulation engine (needs the 'flower' extra)")
    run.add_argument("--centralized", action="store_true",
                     help="run centralized exact-unlearning k-means++ instead of MUFC")
    args = parser.parse_args(argv)
    for name in ("n_removals", "batch_size", "client_clusters"):
        value = getattr(args, name)
        if value < (0 if name == "n_removals" else 1):
            parser.error(f"argument --{name.replace('_', '-')}: invalid value {value}")
    if args.engine == "flower":
        if args.centralized or args.removal != "random" or args.plot:
            parser.error("--engine flower runs MUFC with random removals; it does not take "
                         "--centralized, --removal adversarial or --plot")
        from .flowerjob import run_mufc_flower_job
        run_mufc_flower_job(args.dataset, args.n_clients, args.n_clusters, args.client_clusters,
                            args.n_removals, args.batch_size, not args.insecure, args.seed)
        return 0
    if args.centralized:
        run_unlearning(args.n_removals, args.seed, args.n_clusters or 10)
        return 0
    from .mainjob import run_mufc_job
    run_mufc_job(args.dataset, args.n_clients, args.n_clusters, args.client_clusters,
                 args.n_removals, args.batch_size, args.removal, not args.insecure, args.seed,
                 plot=args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
