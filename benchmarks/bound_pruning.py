"""How much of each Lloyd E-step exact distance bounds can skip, at a shape of the speed grid.

    python benchmarks/bound_pruning.py --data uniform --n 100000 --d 784 --k 100 --dtype float32

Lloyd runs from the k-means++ centers that ``compare_sklearn.py`` uses (same data, same seed),
with every E-step's centers recorded. For each E-step after the first, the script takes the
exact distances of fedcore's kernels (``pairwise_sq_distances``, ``half_separation``) and
prints two fractions:

* ``rows``: the rows that [Hamerly]'s test cannot keep with their label even given their
  exact distance to their center (the tightest upper bound). The lower bound is the exact
  distance to the second-nearest center at the previous E-step, less the largest move of
  another center. Each such row must be compared with the other centers.
* ``products``: the (row, other center) pairs that [Elkan]'s lower bound, the exact distance at
  the previous E-step less that center's move, cannot rule out against the row's exact
  distance to its center. These are the products that a method built on these bounds must
  still compute.

Both fractions use the most favourable form of the bounds, so what they leave to compute is
a lower bound on what fedcore's lazy bounds leave. Memory: a few (n, k) float64 arrays; X is
read in its own dtype.
"""
import argparse

import numpy as np

import fedcore
from compare_sklearn import make_data
from fedcore.kernels.kmeans.distances import pairwise_sq_distances
from fedcore.kernels.kmeans.lloyd import half_separation, lloyd_core
from fedcore.kernels.kmeans.lloyd_replay import top_two


def distances(X, centers):
    """(n, k) distances of the rows of X to ``centers``, the exact kernel's."""
    out = np.empty((X.shape[0], centers.shape[0]))
    pairwise_sq_distances(X, np.ascontiguousarray(centers.T), out)
    return np.sqrt(out, out=out)


def unpruned(X, trace):
    """Per E-step after the first, ``(rows, products)``: the fractions described above."""
    out = []
    n, k = X.shape[0], trace.centers.shape[1]
    every = np.arange(n)
    before = distances(X, trace.centers[0])
    for it in range(1, trace.centers.shape[0]):
        now = distances(X, trace.centers[it])
        moves = np.sqrt(((trace.centers[it] - trace.centers[it - 1]) ** 2).sum(axis=1))
        label = trace.labels[it - 1]
        own = now[every, label]
        # Hamerly: second-nearest distance before, less the largest move of any other center.
        others = before.copy()
        others[every, label] = np.inf
        top, top_j, runner = top_two(moves)
        lower = others.min(axis=1) - np.where(label == top_j, runner, top)
        half = half_separation(np.ascontiguousarray(trace.centers[it]), np.empty(k))
        rows = 1.0 - np.mean(own < np.maximum(lower, half[label]))
        # Elkan: one lower bound per (row, center), ruled out where it exceeds the own distance.
        skip = (before - moves[None, :]) > own[:, None]
        skip[every, label] = False
        products = 1.0 - skip.sum() / (n * max(k - 1, 1))
        out.append((rows, products))
        before = now
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=["uniform", "blobs", "normal"], default="uniform")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=784)
    parser.add_argument("--k", type=int, default=100)
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float32")
    parser.add_argument("--lloyd-iter", type=int, default=10, help="Lloyd max_iter (default 10)")
    args = parser.parse_args(argv)
    X = make_data(args.data, args.n, args.d, args.k, args.dtype)
    centers = fedcore.kmeans_plusplus(X, args.k, random_state=0)[0].astype(np.float64)
    labels, dist = np.empty(args.n, dtype=np.int64), np.empty(args.n)
    _, _, trace = lloyd_core(X, np.ones(args.n), centers, args.lloyd_iter, 0.0, 0.0, labels, dist,
                             record=True)
    print(f"{args.data} {args.n} x {args.d}, k = {args.k}, {args.dtype}: left to compute by "
          "the most favourable exact bounds, per E-step after the first")
    print(f"{'E-step':>6} {'rows (Hamerly)':>15} {'products (Elkan)':>17}")
    for it, (rows, products) in enumerate(unpruned(X, trace), start=1):
        print(f"{it:>6} {rows:>15.4f} {products:>17.4f}")


if __name__ == "__main__":
    main()
