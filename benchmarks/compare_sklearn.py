"""Regression guard of fedcore's core k-means speed: time it against scikit-learn and faiss.

    python benchmarks/compare_sklearn.py --quick        # the sensitive rows, < 60 s on 2 cores
    python benchmarks/compare_sklearn.py                # the full grid (hours; skips X > 4 GB)
    python benchmarks/compare_sklearn.py --what lloyd --n 100000 --d 10 50 --k 100 --dtype float32
    python benchmarks/compare_sklearn.py --what seeding --data normal --csv seeding.csv

Run it from the repository root before and after every kernel change (the first run after a
change also compiles the changed kernels, in the warm-up: never in a timing). Grid: n, d, k, data
(``uniform`` in the unit cube, the worst case for Lloyd's pruning; ``blobs``, k Gaussian clusters
of std 0.05 from ``fedcore.datasets.make_gaussian_mixture``; ``normal``, standard normal) and
dtype; ``--n --d --k --data --dtype`` restrict it (each takes several values).

* lloyd: ``fedcore.KMeans(k, init=C, max_iter=it, tol=0).fit`` against scikit-learn's
  ``KMeans(algorithm="lloyd", n_init=1)`` and, on float32, ``faiss.Kmeans`` (all points, no
  subsampling, ``train(X, init_centroids=C)``), all from the same k-means++ centers C. faiss
  never stops early, so it runs as many iterations as fedcore did (``it`` unless fedcore
  converged first). gflops counts a plain Lloyd, ``2 n k d (n_iter + 1) / time``; pct_gemm puts it
  against the machine's large GEMM rate in the same dtype, measured at the start.
* seeding: ``fedcore.kmeans_plusplus`` against scikit-learn's vanilla ``_kmeans_plusplus``
  (``n_local_trials=1``) and, with ``n_local_trials="auto"``, its greedy ``kmeans_plusplus``.

Each time is the median of ``--repeats`` runs after one untimed run; the kernels are compiled on
tiny data first. Ratios are peer time / fedcore time: > 1 means fedcore is faster.
"""
import argparse
import csv
import itertools
import os
import sys

import numba
import numpy as np
from sklearn.cluster import KMeans as SKKMeans
from sklearn.cluster import kmeans_plusplus as sk_greedy
from sklearn.cluster._kmeans import _kmeans_plusplus as sk_kmeans_plusplus
from sklearn.utils.extmath import row_norms
from threadpoolctl import threadpool_info

import fedcore
from _timing import fedcore_source, median_time

try:
    import faiss
except ImportError:  # no faiss column
    faiss = None

GRID = {"n": [100_000, 500_000, 1_000_000], "d": [2, 10, 50, 784], "k": [10, 100, 1000],
        "data": ["uniform", "blobs"], "dtype": ["float64", "float32"]}
QUICK = [  # (section, data, n, d, k, dtype): the rows most sensitive to kernel changes
    ("lloyd", "uniform", 100_000, 50, 100, "float64"),  # BLAS-screened E-step, little pruning
    ("lloyd", "blobs", 100_000, 50, 100, "float64"),    # the bounds prune most rows
    ("lloyd", "uniform", 500_000, 10, 10, "float64"),   # small-d kernel, memory bound
    ("lloyd", "uniform", 100_000, 50, 100, "float32"),  # float32, with faiss
    ("seeding", "normal", 100_000, 50, 100, "float64"),  # vanilla and greedy
]
MAX_BYTES = 4e9
ENV = ["OMP_WAIT_POLICY", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE",
       "OPENBLAS_L2_SIZE", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS", "NUMBA_THREADING_LAYER",
       "FEDCORE_CHUNK_SIZE", "FEDCORE_NUMBA_CACHE"]
KEYS = ["data", "n", "d", "k", "dtype"]
LLOYD = [("fedcore_ms", 10, ".1f"), ("iter", 4, "d"), ("gflops", 6, ".1f"), ("pct_gemm", 8, ".0f"),
         ("sklearn_ms", 10, ".1f"), ("vs_sklearn", 10, ".2f"), ("faiss_ms", 8, ".1f"),
         ("vs_faiss", 8, ".2f")]
SEEDING = [("variant", 7, "s"), ("fedcore_ms", 10, ".1f"), ("sklearn_ms", 10, ".1f"),
           ("vs_sklearn", 10, ".2f")]
COLUMNS = [("data", 7, "s"), ("n", 8, "d"), ("d", 4, "d"), ("k", 5, "d"), ("dtype", 7, "s")]


def make_data(kind, n, d, k, dtype):
    rng = np.random.default_rng(0)
    if kind == "uniform":
        return rng.random((n, d), dtype=dtype)
    if kind == "normal":
        return rng.standard_normal((n, d), dtype=dtype)
    X = fedcore.datasets.make_gaussian_mixture(n, d, k, cluster_std=0.05, random_state=0)[0]
    return X.astype(dtype, copy=False)


def time_row(runs, repeats):
    """Time the callables of ``runs`` (name -> callable, "fedcore" first; None for a peer that does
    not run on this row) in order. Returns the row's fields: ``<name>_ms``, the median in ms, and
    ``vs_<peer>``, peer time / fedcore time (None where the peer did not run)."""
    ms = {name: None if fn is None else 1e3 * median_time(fn, repeats) for name, fn in runs.items()}
    row = {f"{name}_ms": t for name, t in ms.items()}
    row.update({f"vs_{name}": None if t is None else t / ms["fedcore"]
                for name, t in ms.items() if name != "fedcore"})
    return row


def sk_vanilla(X, k):
    return sk_kmeans_plusplus(X, k, row_norms(X, squared=True), np.ones(X.shape[0], X.dtype),
                              np.random.RandomState(0), n_local_trials=1)


def faiss_fit(X, C, n_iter):
    km = faiss.Kmeans(X.shape[1], C.shape[0], niter=n_iter, max_points_per_centroid=X.shape[0],
                      min_points_per_centroid=1, seed=0, verbose=False)
    km.train(X, init_centroids=C)
    return km


def lloyd_rows(X, k, args):
    C, _ = fedcore.kmeans_plusplus(X, k, random_state=0)
    fc = fedcore.KMeans(k, init=C, max_iter=args.lloyd_iter, tol=0.0)
    sk = SKKMeans(k, init=C, n_init=1, max_iter=args.lloyd_iter, tol=0.0, algorithm="lloyd")
    use_faiss = args.faiss and X.dtype == np.float32
    # fedcore runs first: faiss (which never stops early) then runs as many iterations as it did
    row = time_row({"fedcore": lambda: fc.fit(X), "sklearn": lambda: sk.fit(X),
                    "faiss": (lambda: faiss_fit(X, C, fc.n_iter_)) if use_faiss else None},
                   args.repeats)
    notes = [] if fc.n_iter_ == sk.n_iter_ else \
        [f"iterations differ: fedcore {fc.n_iter_}, scikit-learn {sk.n_iter_}"]
    if use_faiss and fc.n_iter_ < args.lloyd_iter:
        notes.append(f"fedcore converged after {fc.n_iter_} iterations: faiss ran as many")
    gflops = 2.0 * X.shape[0] * k * X.shape[1] * (fc.n_iter_ + 1) / row["fedcore_ms"] / 1e6
    row.update(iter=fc.n_iter_, gflops=gflops, pct_gemm=100 * gflops / args.gemm[X.dtype.name])
    return [row], notes


def seeding_rows(X, k, args):
    vanilla = time_row({"fedcore": lambda: fedcore.kmeans_plusplus(X, k, random_state=0),
                        "sklearn": lambda: sk_vanilla(X, k)}, args.repeats)
    greedy = time_row({"fedcore": lambda: fedcore.kmeans_plusplus(X, k, random_state=0,
                                                                  n_local_trials="auto"),
                       "sklearn": lambda: sk_greedy(X, k, random_state=0)}, args.repeats)
    return [dict(vanilla, variant="vanilla"), dict(greedy, variant="greedy")], []


class Report:
    """Fixed-width tables on stdout (flushed per row), the same rows in an optional CSV, and the
    ratios for the summary."""

    def __init__(self, csv_path):
        self.ratios = {}
        fields = ["section"] + KEYS + list(dict.fromkeys(c[0] for c in LLOYD + SEEDING))
        self.file = open(csv_path, "w", newline="") if csv_path else None
        self.csv = self.file and csv.DictWriter(self.file, fields)
        if self.csv:
            self.csv.writeheader()

    def header(self, section, columns):
        print(f"\n{section}\n" + " ".join(f"{name:>{w}}" for name, w, _ in COLUMNS + columns),
              flush=True)

    def row(self, section, columns, row):
        print(" ".join("-".rjust(w) if row.get(name) is None else format(row[name], f">{w}{f}")
                       for name, w, f in COLUMNS + columns), flush=True)
        for name in ("vs_sklearn", "vs_faiss"):
            if row.get(name) is not None:
                self.ratios.setdefault((section, row.get("variant"), name), []).append(row[name])
        if self.csv:
            self.csv.writerow(dict(row, section=section))
            self.file.flush()

    def summary(self):
        for (section, variant, name), r in self.ratios.items():
            print(f"summary {section}{'' if variant is None else ' ' + variant} {name}: "
                  f"min {min(r):.2f}, median {np.median(r):.2f} over {len(r)} rows", flush=True)
        if self.file:
            self.file.close()


def warm_up(use_faiss):
    """Compile fedcore's kernels (both dtypes; small-d and BLAS-screened many-feature paths; one
    chunk and several) and check that faiss starts from the centers it is given."""
    for dtype, n, (d, k) in itertools.product(["float64", "float32"], [500, 10_000],
                                              [(3, 3), (64, 40)]):
        X = make_data("uniform", n, d, k, dtype)
        fedcore.kmeans_plusplus(X, k, random_state=0, n_local_trials="auto")
        C, _ = fedcore.kmeans_plusplus(X, k, random_state=0)
        fc = fedcore.KMeans(k, init=C, max_iter=1, tol=0.0).fit(X)
        if use_faiss and dtype == "float32":
            assert np.allclose(faiss_fit(X, C, 1).centroids, fc.cluster_centers_, atol=1e-4), \
                "faiss.Kmeans.train ignored init_centroids"


def gemm_rates(size):
    """GFLOP/s of numpy's size x size matrix product per dtype (median of 3 after a warm-up)."""
    rates = {}
    for dtype in ("float64", "float32"):
        A, B = np.random.default_rng(0).random((2, size, size), dtype=dtype)
        rates[dtype] = 2.0 * size**3 / median_time(lambda: A @ B, 3) / 1e9
    return rates


def describe_machine(args):
    print(f"{os.cpu_count()} CPUs, load average {args.load:.2f} at start; numba "
          f"{numba.threading_layer()} layer, {numba.get_num_threads()} threads")
    print(fedcore_source())
    if args.load > os.cpu_count() - 0.5:
        print("warning: the machine is busy: OpenMP threads that spin while they wait slow every "
              "parallel kernel down, unevenly; rerun when it is idle or with "
              "OMP_WAIT_POLICY=passive")
    env = [f"{name}={os.environ[name]}" for name in ENV if name in os.environ]
    if env:
        print("environment: " + " ".join(env))
    if "OPENBLAS_CORETYPE" in os.environ:
        print("warning: OPENBLAS_CORETYPE forces the kernels of every OpenBLAS below (numpy's, "
              "scikit-learn's, faiss's and fedcore's screen's); the ratios hold for those kernels "
              "only. Unset it, with OPENBLAS_L2_SIZE, to time the kernels each library detects")
    libs = threadpool_info()
    for lib in libs:
        print(f"  {lib['user_api']}: {lib['internal_api']} {lib.get('version') or ''} "
              f"{lib.get('architecture', '')} {lib['num_threads']} threads "
              f"({os.path.basename(lib['filepath'])})")
    kernels = {lib["architecture"] for lib in libs if lib.get("architecture")}
    if len(kernels) > 1:
        print(f"warning: the BLAS libraries run different kernels ({', '.join(sorted(kernels))}): "
              "an older OpenBLAS (faiss-cpu bundles its own) may not know this CPU and fall back "
              "to an older core's kernels, which slows that library's column")
    print(f"numpy {args.gemm_size}^3 matmul (reference limit): " +
          ", ".join(f"{dtype} {rate:.1f} GFLOP/s" for dtype, rate in args.gemm.items()),
          flush=True)


def shapes(args, section):
    """Grid rows of ``section`` in generation order (one data array serves every k of a shape,
    except for blobs)."""
    if args.quick:
        return [row[1:] for row in QUICK if row[0] == section]
    return [(kind, n, d, k, dtype) for kind, n, d, dtype, k in
            itertools.product(args.data, args.n, args.d, args.dtype, args.k)]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("n", "d", "k"):
        parser.add_argument(f"--{name}", type=int, nargs="+", default=GRID[name])
    parser.add_argument("--data", nargs="+", choices=["uniform", "blobs", "normal"],
                        default=GRID["data"])
    parser.add_argument("--dtype", nargs="+", choices=GRID["dtype"], default=GRID["dtype"])
    parser.add_argument("--repeats", type=int, default=3, help="timed runs per median (default 3)")
    parser.add_argument("--lloyd-iter", type=int, default=10, help="Lloyd max_iter (default 10)")
    parser.add_argument("--what", nargs="+", choices=["lloyd", "seeding"],
                        default=["lloyd", "seeding"])
    parser.add_argument("--no-faiss", action="store_true", help="skip the faiss column")
    parser.add_argument("--quick", action="store_true",
                        help="only the rows in QUICK (ignores --n --d --k --data --dtype)")
    parser.add_argument("--csv", metavar="PATH", help="also write the rows to this CSV file")
    args = parser.parse_args(argv)

    args.load = os.getloadavg()[0]
    args.faiss = faiss is not None and not args.no_faiss
    warm_up(args.faiss)
    args.gemm_size = 2048 if args.quick else 4096
    args.gemm = gemm_rates(args.gemm_size)
    describe_machine(args)
    report = Report(args.csv)
    for section in args.what:
        rows, columns = (lloyd_rows, LLOYD) if section == "lloyd" else (seeding_rows, SEEDING)
        report.header(section, columns)
        X, last = None, None
        for kind, n, d, k, dtype in shapes(args, section):
            size = n * d * np.dtype(dtype).itemsize
            if size > MAX_BYTES:
                print(f"skipped {kind} {n} x {d} k={k} {dtype}: X would take {size / 1e9:.1f} GB "
                      f"> {MAX_BYTES / 1e9:.0f} GB", flush=True)
                continue
            key = (kind, n, d, dtype, k if kind == "blobs" else None)
            if key != last:
                X = None  # free the previous array before making the next
                X, last = make_data(kind, n, d, k, dtype), key
            results, notes = rows(X, k, args)
            for row in results:
                report.row(section, columns, dict(row, data=kind, n=n, d=d, k=k, dtype=dtype))
            for note in notes:
                print(f"  note: {note}", flush=True)
    print(f"\nload average {os.getloadavg()[0]:.2f}")
    report.summary()


if __name__ == "__main__":
    sys.exit(main())
