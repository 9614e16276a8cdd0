"""Extra memory of ``fedcore.KMeans.fit`` beyond the data, as a fraction of the data.

    python benchmarks/peak_memory.py                      # the shapes of the core-speed issue
    python benchmarks/peak_memory.py --n 500000 --d 10 --k 10 --dtype float32

Each shape runs in a fresh process: the kernels are compiled (or loaded from the cache) on a small
array of the same dtype first, then X is drawn in place (no float64 temporary for float32) and the
process's peak resident set size (``ru_maxrss``) is read before and after ``KMeans(k,
max_iter=10).fit(X)``. The difference is what the fit added to the peak: its working memory
(labels, distances, bounds, per-chunk buffers, the float64 centers) and anything it copied.
"""
import argparse
import json
import resource
import subprocess
import sys

SHAPES = [(2_000_000, 20, 50, "float64"), (1_000_000, 40, 64, "float32")]

CHILD = """
import json, resource, sys
import numpy as np
import fedcore
n, d, k, dtype = json.loads(sys.argv[1])
rng = np.random.default_rng(0)
warm = rng.random((50_000, d), dtype=dtype)
fedcore.KMeans(k, max_iter=2, random_state=0).fit(warm)
del warm
X = rng.random((n, d), dtype=dtype)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
fedcore.KMeans(k, max_iter=10, random_state=0).fit(X)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"data_mb": X.nbytes / 2**20, "before_mb": before / 1024, "after_mb": after / 1024}))
"""


def measure(n, d, k, dtype):
    out = subprocess.run([sys.executable, "-c", CHILD, json.dumps([n, d, k, dtype])],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int)
    parser.add_argument("--d", type=int)
    parser.add_argument("--k", type=int)
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float64")
    args = parser.parse_args(argv)
    shapes = SHAPES if args.n is None else [(args.n, args.d, args.k, args.dtype)]
    print(f"{'n':>9} {'d':>4} {'k':>5} {'dtype':>7} {'data_MB':>8} {'extra_MB':>9} {'extra/data':>10}")
    for n, d, k, dtype in shapes:
        r = measure(n, d, k, dtype)
        extra = max(0.0, r["after_mb"] - r["before_mb"])
        print(f"{n:>9} {d:>4} {k:>5} {dtype:>7} {r['data_mb']:>8.0f} {extra:>9.1f} "
              f"{extra / r['data_mb']:>10.3f}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
