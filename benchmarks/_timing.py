"""Timing helper shared by the ``compare_*.py`` scripts (run them from the repository root)."""
import os
import time

import numpy as np

# Untimed calls before the timed ones last at least this long. A multithreaded BLAS keeps its
# worker threads spinning for about 0.1 s after a call (OpenBLAS), and a library timed inside
# that window pays for the previous library's threads (a 1e5 x 2 k-means++ seeding right after
# numpy's matmul: 1.5 -> 20 ms). Each library is therefore timed after 0.2 s of its own calls.
WARM_SECONDS = 0.2


def median_time(fn, repeats, warm=True):
    """Median wall time of ``repeats`` calls of ``fn``, after untimed calls for at least
    ``WARM_SECONDS`` (at least one) when ``warm``."""
    if warm:
        start = time.perf_counter()
        fn()
        while time.perf_counter() - start < WARM_SECONDS:
            fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def fedcore_source():
    """Which fedcore a script measures: Python puts the script's folder on the path, not the
    working directory, so ``python benchmarks/compare_sklearn.py`` imports the installed fedcore
    (an editable install: that checkout) even when run from another checkout; compare two
    checkouts with ``PYTHONPATH=<checkout>``."""
    import fedcore
    return f"fedcore from {os.path.dirname(os.path.dirname(os.path.abspath(fedcore.__file__)))}"
