"""Profile fedcore's compiled kernels with Linux ``perf``: name Numba's machine code for it.

    FEDCORE_NUMBA_CACHE=0 perf record -F 5000 -o lloyd.data \\
        python benchmarks/perf_map.py --data uniform --n 100000 --d 50 --k 10 --dtype float32
    perf report -i lloyd.data --no-children --sort sym --time 50%-100%

``perf`` finds no symbols in code that Numba compiled in memory; it reads them from
``/tmp/perf-<pid>.map`` (one ``start size name`` line per function) when that file exists. After
one untimed call, which compiles the kernels, this script writes that file for every function
Numba compiled in the process (their LLVM names, which hold the Python names, e.g.
``..._screen_blockB3v97...``), then runs Lloyd (``lloyd_run``, 10 iterations from the k-means++
centers of ``compare_sklearn.py``) or k-means++ (``--what seeding``) for ``--seconds``. Functions
loaded from Numba's on-disk cache carry no LLVM module to read names from: run with
``FEDCORE_NUMBA_CACHE=0``. ``--time 50%-100%`` leaves out the compilation at the start.
"""
import argparse
import gc
import os
import time

import numpy as np


def write_perf_map(path=None):
    """Write ``path`` (default ``/tmp/perf-<pid>.map``): the start address, size and LLVM name of
    every function Numba compiled in this process; returns how many functions it names. A
    function's size runs to the next named function (at most 1 MiB)."""
    from numba.core.registry import CPUDispatcher
    names = {}
    for obj in gc.get_objects():
        if not isinstance(obj, CPUDispatcher):
            continue
        for result in obj.overloads.values():
            library = result.library
            try:
                module = library._final_module  # absent where loaded from the cache
            except AttributeError:
                continue
            for fn in module.functions:
                if fn.is_declaration:
                    continue
                address = library.get_pointer_to_function(fn.name)
                if address:
                    names[address] = fn.name
    starts = sorted(names)
    path = path or f"/tmp/perf-{os.getpid()}.map"
    with open(path, "w") as out:
        for i, start in enumerate(starts):
            size = min(starts[i + 1] - start, 1 << 20) if i + 1 < len(starts) else 1 << 12
            out.write(f"{start:x} {size:x} {names[start]}\n")
    return len(starts)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--what", choices=["lloyd", "seeding"], default="lloyd")
    parser.add_argument("--data", choices=["uniform", "blobs", "normal"], default="uniform")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=50)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--dtype", choices=["float64", "float32"], default="float32")
    parser.add_argument("--greedy", action="store_true", help="seeding: greedy k-means++")
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args(argv)

    import fedcore
    from compare_sklearn import make_data
    from fedcore.kernels.kmeans.lloyd import lloyd_run
    X = make_data(args.data, args.n, args.d, args.k, args.dtype)
    if args.what == "lloyd":
        initial = fedcore.kmeans_plusplus(X, args.k, random_state=0)[0].astype(np.float64)
        weights = np.ones(args.n)

        def run():
            lloyd_run(X, weights, initial.copy(), 10, 0.0, 0.0, np.empty(args.n, np.int64),
                      np.empty(args.n))
    else:
        trials = "auto" if args.greedy else 1

        def run():
            fedcore.kmeans_plusplus(X, args.k, random_state=0, n_local_trials=trials)
    run()
    print(f"named {write_perf_map()} compiled functions", flush=True)
    times = []
    start = time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        t0 = time.perf_counter()
        run()
        times.append(time.perf_counter() - t0)
    print(f"{len(times)} runs, median {1e3 * np.median(times):.1f} ms")


if __name__ == "__main__":
    main()
