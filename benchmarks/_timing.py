"""Timing helper shared by the ``compare_*.py`` scripts (run them from the repository root)."""
import time

import numpy as np


def median_time(fn, repeats, warm=True):
    """Median wall time of ``repeats`` calls of ``fn`` (after one untimed call when ``warm``)."""
    if warm:
        fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))
