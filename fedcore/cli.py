"""The ``fedcore`` command."""
import argparse
import sys
import time

import numpy as np

__all__ = ["main"]


def _progress(i, total, label, stream=sys.stderr):
    """A one-line progress bar on a terminal; silent when stderr is not a terminal."""
    if not stream.isatty():
        return
    width = 30
    done = int(width * i / total) if total else width
    stream.write(f"\r{label} [{'#' * done}{'.' * (width - done)}] {i}/{total}")
    if i == total:
        stream.write("\n")
    stream.flush()


def _table(rows):
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)


def run_unlearning(n_removals=100, seed=0, n_clusters=10, refine=False, out=sys.stdout):
    """Fit UnlearnableKMeans on the embedded Gaussian set, remove random points one at a time.

    Each removal is timed against a complete retrain (a fresh fit on the remaining points).
    Returns the table rows (also printed to ``out``).
    """
    from . import datasets
    from .algorithms import UnlearnableKMeans
    from .metrics import inertia

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
        _progress(r + 1, n_removals, "removals")
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
    print(_table(rows), file=out)
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="fedcore", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the main job on the embedded Gaussian dataset")
    run.add_argument("--n-removals", type=int, default=100, help="points to remove (default 100)")
    run.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    run.add_argument("--n-clusters", type=int, default=10, help="clusters (default 10)")
    run.add_argument("--refine", action="store_true", help="run Lloyd after seeding")
    args = parser.parse_args(argv)
    if args.n_removals < 0:
        parser.error(f"argument --n-removals must be >= 0, got {args.n_removals}")
    run_unlearning(args.n_removals, args.seed, args.n_clusters, args.refine)
    return 0


if __name__ == "__main__":
    sys.exit(main())
