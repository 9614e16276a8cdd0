"""Time fedcore against scikit-learn in one process and print ratios (peer time / fedcore time).

    python benchmarks/compare_sklearn.py                 # the full grid (several minutes)
    python benchmarks/compare_sklearn.py --n 100000 --repeats 3

Rows: k-means++ seeding against scikit-learn's greedy ``kmeans_plusplus`` and its vanilla variant
(``_kmeans_plusplus`` with ``n_local_trials=1``), ``KMeans(n_init=1).fit`` against scikit-learn's
lloyd at equal iterations (same initial centers, ``tol=0``, fixed ``max_iter``), and the latency of
an exact removal that hits no center. Medians over ``--repeats`` runs; ratio > 1 means fedcore is
faster.
"""
import argparse
import itertools
import time

import numpy as np
from sklearn.cluster import KMeans as SKKMeans
from sklearn.cluster import kmeans_plusplus as sk_kmeans_plusplus
from sklearn.cluster._kmeans import _kmeans_plusplus as sk_vanilla_impl
from sklearn.utils.extmath import row_norms

import fedcore
from _timing import median_time


def sk_vanilla(X, k, seed):
    rs = np.random.RandomState(seed)
    return sk_vanilla_impl(X, k, row_norms(X, squared=True), np.ones(X.shape[0], X.dtype), rs,
                           n_local_trials=1)


def removal_latency(X, k, repeats):
    model = fedcore.UnlearnableKMeans(k, random_state=0).fit(X)
    centers = set(model.center_ids_.tolist())
    rng = np.random.default_rng(1)
    times = []
    while len(times) < max(repeats, 50):
        i = int(rng.integers(X.shape[0]))
        if i in centers or model._weights[i] == 0.0:
            continue
        t0 = time.perf_counter()
        model.remove(i)
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--d", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--k", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--lloyd-iter", type=int, default=10)
    parser.add_argument("--data", choices=["uniform", "blobs"], default="uniform",
                        help="uniform in the cube (worst case for pruning) or k Gaussian blobs")
    args = parser.parse_args()

    warm = np.random.default_rng(0).random((500, 3))
    fedcore.kmeans_plusplus(warm, 3, random_state=0)
    fedcore.KMeans(3, random_state=0).fit(warm)
    fedcore.UnlearnableKMeans(3, random_state=0).fit(warm).remove(0)

    print(f"{'n':>8} {'d':>3} {'k':>4} | {'seed ms':>8} {'vs greedy':>9} {'vs vanilla':>10} | "
          f"{'lloyd ms':>8} {'vs sklearn':>10} | {'removal us':>10}")
    for n, d, k in itertools.product(args.n, args.d, args.k):
        X = np.random.default_rng(0).random((n, d)) if args.data == "uniform" else \
            fedcore.datasets.make_gaussian_mixture(n, d, k, cluster_std=0.05, random_state=0)[0]
        t_fc = median_time(lambda: fedcore.kmeans_plusplus(X, k, random_state=0), args.repeats)
        t_greedy = median_time(lambda: sk_kmeans_plusplus(X, k, random_state=0), args.repeats)
        t_vanilla = median_time(lambda: sk_vanilla(X, k, 0), args.repeats)
        init, _ = fedcore.kmeans_plusplus(X, k, random_state=0)
        fc = fedcore.KMeans(k, init=init, max_iter=args.lloyd_iter, tol=0.0)
        sk = SKKMeans(k, init=init, n_init=1, max_iter=args.lloyd_iter, tol=0.0, algorithm="lloyd")
        t_fc_lloyd = median_time(lambda: fc.fit(X), args.repeats)
        t_sk_lloyd = median_time(lambda: sk.fit(X), args.repeats)
        if fc.n_iter_ != sk.n_iter_:
            print(f"  note: iterations differ (fedcore {fc.n_iter_}, scikit-learn {sk.n_iter_})")
        t_rm = removal_latency(X, k, args.repeats)
        print(f"{n:>8} {d:>3} {k:>4} | {t_fc * 1e3:8.1f} {t_greedy / t_fc:9.2f} "
              f"{t_vanilla / t_fc:10.2f} | {t_fc_lloyd * 1e3:8.1f} {t_sk_lloyd / t_fc_lloyd:10.2f} | "
              f"{t_rm * 1e6:10.1f}", flush=True)


if __name__ == "__main__":
    main()
