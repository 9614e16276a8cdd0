"""``benchmarks/bound_pruning.py``: its fractions against a loop over rows and (row, center)
pairs with each distance from ``np.linalg.norm`` (whose sums may round differently from the
kernels' sequential ones, hence a tolerance of a few rows)."""
import numpy as np

from fedcore.kernels.kmeans.lloyd import lloyd_core
from tests.scripts import BENCHMARKS, load_script


def _loop_fractions(X, trace):
    n, k = X.shape[0], trace.centers.shape[1]
    out = []
    for it in range(1, trace.centers.shape[0]):
        prev, cur = trace.centers[it - 1], trace.centers[it]
        moves = np.linalg.norm(cur - prev, axis=1)
        half = [0.5 * min(np.linalg.norm(cur[a] - cur[b]) for b in range(k) if b != a)
                for a in range(k)]
        rows = pairs = 0
        for i in range(n):
            a = trace.labels[it - 1][i]
            own = np.linalg.norm(X[i] - cur[a])
            before = [np.linalg.norm(X[i] - prev[j]) for j in range(k)]
            lower = min(before[j] for j in range(k) if j != a) - max(
                moves[j] for j in range(k) if j != a)
            rows += not own < max(lower, half[a])
            pairs += sum(not before[j] - moves[j] > own for j in range(k) if j != a)
        out.append((rows / n, pairs / (n * (k - 1))))
    return out


def test_fractions_equal_a_loop_over_rows_and_pairs(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCHMARKS))  # the script imports compare_sklearn's data
    script = load_script("bound_pruning")
    rng = np.random.default_rng(0)
    n, k = 400, 5
    X = rng.normal(scale=3.0, size=(k, 3))[rng.integers(0, k, n)] + rng.normal(size=(n, 3))
    centers = X[rng.choice(n, k, replace=False)].copy()
    labels, dist = np.empty(n, dtype=np.int64), np.empty(n)
    _, n_iter, trace = lloyd_core(X, np.ones(n), centers, 8, 0.0, 0.0, labels, dist,
                                  record=True)
    assert n_iter >= 3
    got = np.array(script.unpruned(X, trace))
    expected = np.array(_loop_fractions(X, trace))
    assert got.shape == expected.shape == (n_iter, 2)
    np.testing.assert_allclose(got[:, 0], expected[:, 0], atol=3 / n)
    np.testing.assert_allclose(got[:, 1], expected[:, 1], atol=3 / (n * (k - 1)))
    assert expected[-1, 0] < expected[0, 0] <= 1.0  # the bounds prune more as centers settle
