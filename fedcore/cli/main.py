"""The ``fedcore`` command."""
import argparse
import sys
import time

import numpy as np

from .report import compile_notice, progress, table

__all__ = ["main"]


def run_unlearning(n_removals=100, seed=0, n_clusters=10, refine=False, out=None):
    """Fit UnlearnableKMeans on the embedded Gaussian set, remove random points one at a time.

    Each removal is timed against a complete retrain (a fresh fit on the remaining points).
    Returns the table rows (also printed to ``out``).
    """
    from .. import datasets
    from ..algorithms import UnlearnableKMeans
    from ..metrics import inertia

    compile_notice()
    X, _, _ = datasets.load_gaussian()
    rng = np.random.default_rng(seed)
    model = UnlearnableKMeans(n_clusters, refine=refine, random_state=seed).fit(X)
    UnlearnableKMeans(n_clusters, refine=refine, random_state=seed).fit(X[:100])  # warm caches
    removal_times, retrain_times, retrains = [], [], 0
    alive = np.ones(X.shape[0], dtype=bool)
    with progress(n_removals, "removals") as bar:
        for r in range(n_removals):
            point = int(rng.choice(model.sample_ids_))
            t0 = time.perf_counter()
            retrains += model.remove(point).retrained
            removal_times.append(time.perf_counter() - t0)
            alive[point] = False
            t0 = time.perf_counter()
            UnlearnableKMeans(n_clusters, refine=refine, random_state=seed + r + 1).fit(X[alive])
            retrain_times.append(time.perf_counter() - t0)
            bar.update()
    rows = [
        ("dataset", f"Gaussian (n={X.shape[0]}, d={X.shape[1]}, K={n_clusters})"),
        ("method", "UnlearnableKMeans" + (" + Lloyd" if refine else "")),
        ("removals", str(n_removals)),
        ("retrains", str(retrains)),
    ]
    if removal_times:
        med_rm, med_rt = float(np.median(removal_times)), float(np.median(retrain_times))
        rows += [("median unlearning time", f"{med_rm * 1e3:.3f} ms"),
                 ("median full-retrain time", f"{med_rt * 1e3:.3f} ms"),
                 ("speed-up", f"{med_rt / med_rm:.1f}x")]
    else:  # nothing to time
        rows += [("median unlearning time", "-"), ("median full-retrain time", "-"),
                 ("speed-up", "-")]
    rows.append(("objective (remaining data)",
                 f"{inertia(X[alive], model.cluster_centers_):.4f}"))
    print(table(rows), file=out or sys.stdout)
    return rows


def main(argv=None):
    from .mainjob import DATASETS, STANDINS, check_options, run_mufc_job
    from .owndata import add_parsers, run_command

    parser = argparse.ArgumentParser(
        prog="fedcore", description="fedcore command line: the main job (run) and federated "
        "clustering of your own data (mufc, feca, f3km, coreset; remove unlearns points)")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="the main job: MUFC with exact unlearning on a federated "
                                     "data set (default: real Celltype, the [MUFC] split)")
    # Defaults of None tell "not given" from "given": options that do not apply are refused.
    run.add_argument("--dataset", choices=DATASETS, default=None,
                     help="celltype (default): the real Celltype data with the [MUFC] authors' "
                          "100-client split; celltype-standin, gaussian, postures, covtype, "
                          "femnist, tcga, tmi: synthetic sets with [MUFC]'s shapes "
                          "(--engine flower: stand-ins only, default gaussian)")
    run.add_argument("--n-clients", type=int, default=None,
                     help="L, stand-ins only (default: the paper's)")
    run.add_argument("--n-clusters", type=int, default=None, help="K (default: the dataset's)")
    run.add_argument("--client-clusters", type=int, default=None,
                     help="K', centers each client seeds (default: K on celltype, else 5; "
                          "stand-ins: also the most true clusters a client holds)")
    run.add_argument("--n-removals", type=int, default=None,
                     help="removal requests (default 100)")
    run.add_argument("--batch-size", type=int, default=None,
                     help="points per request (default 1)")
    run.add_argument("--removal", choices=["random", "adversarial"], default=None,
                     help="which points to remove (default random)")
    run.add_argument("--insecure", action="store_true", help="plaintext sum instead of SCMA")
    run.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    run.add_argument("--plot", metavar="FILE", help="save accumulated removal time (PNG)")
    run.add_argument("--engine", choices=["local", "flower"], default="local",
                     help="local (default): in process; flower: one Flower node per client on "
                          "Flower's simulation engine (needs the 'flower' extra)")
    run.add_argument("--centralized", action="store_true",
                     help="run centralized exact-unlearning k-means++ on the embedded Gaussian "
                          "set instead of MUFC")
    own = add_parsers(sub)
    args = parser.parse_args(argv)
    if args.command != "run":
        return run_command(args, own[args.command])
    for name in ("n_removals", "batch_size", "client_clusters", "n_clients", "n_clusters"):
        value = getattr(args, name)
        if value is not None and value < (0 if name == "n_removals" else 1):
            run.error(f"argument --{name.replace('_', '-')}: invalid value {value}")
    _refuse(run, args)
    n_removals = 100 if args.n_removals is None else args.n_removals
    batch_size = args.batch_size or 1
    if args.engine == "flower":
        from .flowerjob import run_mufc_flower_job
        dataset = STANDINS[args.dataset or "gaussian"]   # the generator's name
        client_clusters = 5 if args.client_clusters is None else args.client_clusters
        run_mufc_flower_job(dataset, args.n_clients, args.n_clusters, client_clusters,
                            n_removals, batch_size, not args.insecure, args.seed)
        return 0
    if args.centralized:
        run_unlearning(n_removals, args.seed, args.n_clusters or 10)
        return 0
    dataset = args.dataset or "celltype"
    problem = check_options(dataset, args.n_clients, args.n_clusters, args.client_clusters)
    if problem:
        run.error(problem)
    run_mufc_job(dataset, args.n_clients, args.n_clusters, args.client_clusters, n_removals,
                 batch_size, args.removal or "random", not args.insecure, args.seed,
                 plot=args.plot)
    return 0


def _refuse(run, args):
    """Exit with a one-line error (code 2) when an option does not apply to the chosen run."""
    if args.centralized:
        mode = "--centralized (k-means++ on the embedded Gaussian set, on one machine)"
        given = {"--engine flower": args.engine == "flower",
                 "--dataset": args.dataset is not None, "--n-clients": args.n_clients is not None,
                 "--client-clusters": args.client_clusters is not None,
                 "--batch-size": args.batch_size is not None,
                 "--removal": args.removal is not None,
                 "--insecure": args.insecure, "--plot": args.plot is not None}
    elif args.engine == "flower":
        mode = "--engine flower (MUFC with random removals on a stand-in)"
        given = {"--dataset celltype": args.dataset == "celltype",
                 "--removal adversarial": args.removal == "adversarial",
                 "--plot": args.plot is not None}
    else:
        return
    for option, is_given in given.items():
        if is_given:
            run.error(f"argument {option}: not allowed with {mode}")


if __name__ == "__main__":
    sys.exit(main())
