"""Reed-Solomon kernels: references, frozen galois vectors, and live galois when installed."""
import json
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedcore.kernels.field import polynomial as P
from fedcore.kernels.field import reed_solomon as RS
from tests.reference import field_reference as R

PRIMES = [13, 101, 65537, 2**31 - 1, 2**61 - 1, 2**62 - 57]
DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data",
                    "scma_galois_vectors.json")

try:
    import galois
except ImportError:  # the frozen vectors in tests/data cover the same checks
    galois = None


def arr(values):
    return np.array(values, dtype=np.int64)


def ints(a):
    return [int(v) for v in a]


@st.composite
def sparse_vector(draw, max_terms=20):
    """(p, points, magnitudes): distinct nonzero points, nonzero magnitudes."""
    p = draw(st.sampled_from(PRIMES))
    m = draw(st.integers(0, min(max_terms, p - 1)))
    points = draw(st.lists(st.integers(1, p - 1), min_size=m, max_size=m, unique=True))
    q = draw(st.lists(st.integers(1, p - 1), min_size=m, max_size=m))
    return p, points, q


def syndromes(points, q, n, p):
    S = np.zeros((1, n), dtype=np.int64)
    RS.power_sums(arr(points), arr([q]).reshape(1, len(q)), 0, S, p)
    return S[0]


@given(sparse_vector(), st.integers(0, 5), st.integers(1, 3), st.integers(0, 30))
def test_power_sums_match_reference(args, start, n_channels, n):
    p, points, q = args
    rows = [[(v * (c + 1)) % p for v in q] for c in range(n_channels)]
    out = np.zeros((n_channels, n), dtype=np.int64)
    RS.power_sums(arr(points), arr(rows).reshape(n_channels, len(points)), start, out, p)
    for c in range(n_channels):
        assert ints(out[c]) == R.power_sums(points, rows[c], start, n, p)


@given(st.sampled_from(PRIMES), st.data())
def test_berlekamp_massey_matches_reference_and_regenerates_input(p, data):
    n = data.draw(st.integers(0, 40))
    s = data.draw(st.lists(st.integers(0, p - 1), min_size=n, max_size=n))
    lam = np.zeros(n + 1, dtype=np.int64)
    L = RS.berlekamp_massey(arr(s), lam, p)
    C, L_ref = R.berlekamp_massey(s, p)
    assert L == L_ref and ints(lam[:L + 1]) == C
    for k in range(L, n):  # the recurrence regenerates the sequence
        assert (s[k] + sum(C[i] * s[k - i] for i in range(1, L + 1))) % p == 0


@given(sparse_vector())
def test_decoding_pipeline_recovers_planted_vector(args):
    # Alg. 2 line 3: BM -> locator, roots -> points, Forney / Vandermonde -> magnitudes.
    p, points, q = args
    m = len(points)
    s = syndromes(points, q, 2 * m + 2, p)
    lam = np.zeros(2 * m + 3, dtype=np.int64)
    L = RS.berlekamp_massey(s, lam, p)
    assert L == m
    roots = np.zeros(max(m, 1), dtype=np.int64)
    assert RS.find_roots(lam[:L + 1][::-1].copy(), roots, 7, p) == m
    assert ints(roots[:m]) == sorted(points)
    expect = [qj for _, qj in sorted(zip(points, q))]
    mags = np.zeros(max(m, 1), dtype=np.int64)
    assert RS.forney_magnitudes(s, lam, L, roots[:m].copy(), mags, p) == -1
    assert ints(mags[:m]) == expect
    if m:
        b = s[:m].reshape(m, 1).copy()
        assert RS.solve_transposed_vandermonde(roots[:m].copy(), b, p) == -1
        assert ints(b[:, 0]) == expect


@settings(max_examples=30)
@given(st.sampled_from(PRIMES), st.integers(1, 12), st.integers(1, 4), st.data())
def test_vandermonde_solver_many_columns_matches_dense_solve(p, m, n_cols, data):
    m = min(m, p - 1)
    x = data.draw(st.lists(st.integers(1, p - 1), min_size=m, max_size=m, unique=True))
    cols = [data.draw(st.lists(st.integers(0, p - 1), min_size=m, max_size=m))
            for _ in range(n_cols)]
    b = arr(cols).T.copy()
    assert RS.solve_transposed_vandermonde(arr(x), b, p) == -1
    for c in range(n_cols):
        assert ints(b[:, c]) == R.solve_transposed_vandermonde(x, cols[c], p)


def test_vandermonde_solver_reports_repeated_nodes():
    b = np.ones((3, 1), dtype=np.int64)
    assert RS.solve_transposed_vandermonde(arr([2, 5, 2]), b, 13) >= 0


def test_split_order_uses_residue_classes_that_exist():
    # r must divide p - 1 (so r-th roots of unity exist); the primes cover r = 6, 5, 4, 2 for
    # small factors and up to 32 for large ones
    assert {p: RS.split_order(p, 6) for p in [13, 11, 17, 23, 101, 65537, 2**61 - 1]} == \
        {13: 6, 11: 5, 17: 4, 23: 2, 101: 5, 65537: 4, 2**61 - 1: 6}
    assert {p: RS.split_order(p, 32) for p in [13, 23, 101, 65537, 2**31 - 1, 2**61 - 1]} == \
        {13: 12, 23: 22, 101: 25, 65537: 32, 2**31 - 1: 31, 2**61 - 1: 31}


@settings(max_examples=60)
@given(st.sampled_from([11, 13, 17, 23, 101]), st.data())
def test_find_roots_small_fields_against_brute_force(p, data):
    # A random polynomial either splits into distinct linear factors (then the roots must be
    # exactly the brute-force roots) or must be rejected; never a partial or wrong answer.
    d = data.draw(st.integers(1, 8))
    f = data.draw(st.lists(st.integers(0, p - 1), min_size=d, max_size=d)) + \
        [data.draw(st.integers(1, p - 1))]
    seed = data.draw(st.integers(0, 2**63 - 1))
    out = np.zeros(d, dtype=np.int64)
    k = RS.find_roots(arr(f), out, seed, p)
    brute = R.find_roots(f, p)
    if len(brute) == d:
        assert k == d and ints(out) == brute
    else:
        assert k == RS.ROOTS_NOT_SPLIT


@pytest.mark.parametrize("p", [13, 17, 23, 101, 65537, 2**31 - 1, 2**61 - 1, 2**62 - 57])
def test_find_roots_planted_including_zero_and_rejections(p):
    rng = np.random.default_rng(p % 997)
    m = min(200, p - 1)  # above 64: many residue classes per split
    roots = np.sort(rng.choice(p, size=m, replace=False)) if p < 10**6 else \
        np.unique(np.concatenate([[0], rng.integers(1, p, m, dtype=np.int64)]))
    f = np.zeros(len(roots) + 1, dtype=np.int64)
    P.poly_from_roots(roots, f, p)
    out = np.zeros(len(roots), dtype=np.int64)
    assert RS.find_roots(f, out, 3, p) == len(roots)
    assert np.array_equal(out, roots)
    # a repeated root, and an irreducible quadratic factor (x**2 - c, c a non-square), are rejected
    sq = np.zeros(2 * len(roots) + 1, dtype=np.int64)
    P.poly_mul(f, f, sq, p)
    assert RS.find_roots(sq, np.zeros(2 * len(roots), dtype=np.int64), 3, p) == RS.ROOTS_NOT_SPLIT
    c = next(c for c in range(2, p) if pow(c, (p - 1) // 2, p) == p - 1)
    irr = np.zeros(len(roots) + 3, dtype=np.int64)
    P.poly_mul(f, arr([p - c, 0, 1]), irr, p)
    assert RS.find_roots(irr, np.zeros(len(roots) + 2, dtype=np.int64), 3, p) == \
        RS.ROOTS_NOT_SPLIT
    assert RS.find_roots(arr([0, 0, 0]), np.zeros(2, dtype=np.int64), 3, p) == RS.ROOTS_NOT_SPLIT
    assert RS.find_roots(arr([5]), np.zeros(1, dtype=np.int64), 3, p) == 0


def test_forney_rejects_a_foreign_root():
    p = 101
    s = syndromes([3, 7], [1, 1], 4, p)
    lam = np.zeros(5, dtype=np.int64)
    L = RS.berlekamp_massey(s, lam, p)
    assert RS.forney_magnitudes(s, lam, L, arr([3, 0]), np.zeros(2, dtype=np.int64), p) >= 0


# ---------------------------------------------------------------- frozen galois vectors
with open(DATA) as _fh:
    VECTORS = json.load(_fh)


def galois_connection(lam, L, n):
    """Our connection polynomial in galois' form: galois stores C in an array as long as the
    sequence, so a coefficient of x**n (possible only when L = n) is dropped; trailing zeros
    are trimmed."""
    return R.poly_trim(ints(lam[:min(L + 1, n)])) or [0]


@pytest.mark.parametrize("case", VECTORS["berlekamp_massey"])
def test_frozen_galois_berlekamp_massey(case):
    p, s = case["p"], case["sequence"]
    lam = np.zeros(len(s) + 1, dtype=np.int64)
    L = RS.berlekamp_massey(arr(s), lam, p)
    assert galois_connection(lam, L, len(s)) == case["connection"]
    if L < len(s):
        assert ints(lam[:L + 1]) == case["connection"] + [0] * (L + 1 - len(case["connection"]))


@pytest.mark.parametrize("case", VECTORS["roots"])
def test_frozen_galois_roots(case):
    p, f = case["p"], case["poly"]
    out = np.zeros(len(f) - 1, dtype=np.int64)
    assert RS.find_roots(arr(f), out, 11, p) == len(case["roots"])
    assert ints(out) == case["roots"]


@pytest.mark.parametrize("case", VECTORS["no_split"])
def test_frozen_galois_non_split_polynomials_are_rejected(case):
    f = case["poly"]
    assert RS.find_roots(arr(f), np.zeros(len(f), dtype=np.int64), 11, case["p"]) == \
        RS.ROOTS_NOT_SPLIT


@pytest.mark.parametrize("case", VECTORS["magnitudes"])
def test_frozen_galois_magnitudes_forney_and_vandermonde(case):
    p, x, s = case["p"], case["points"], case["syndromes"]
    m = len(x)
    lam = np.zeros(len(s) + 1, dtype=np.int64)
    L = RS.berlekamp_massey(arr(s), lam, p)
    assert L == m
    order = np.argsort(x)
    xs = arr(x)[order]
    expect = [case["magnitudes"][i] for i in order]
    out = np.zeros(m, dtype=np.int64)
    assert RS.forney_magnitudes(arr(s), lam, L, xs, out, p) == -1
    assert ints(out) == expect
    b = arr(s[:m]).reshape(m, 1)
    assert RS.solve_transposed_vandermonde(arr(x), b, p) == -1
    assert ints(b[:, 0]) == case["magnitudes"]


# ---------------------------------------------------------------- live galois (test extra)
needs_galois = pytest.mark.skipif(galois is None, reason="galois not installed; the frozen "
                                  "vectors in tests/data/scma_galois_vectors.json cover this")


@needs_galois
@pytest.mark.parametrize("p", [101, 2**31 - 1, 2**61 - 1])
def test_live_galois_berlekamp_massey_and_linear_solve(p):
    GF = galois.GF(p)
    rng = np.random.default_rng(p % 1009)
    for trial in range(6):
        n = int(rng.integers(1, 24))
        s = [int(v) for v in rng.integers(0, p, n, dtype=np.int64)]
        if trial % 2:  # syndromes of a planted vector
            m = n // 2
            x = [int(v) for v in rng.integers(1, p, m, dtype=np.int64)]
            q = [int(v) for v in rng.integers(1, p, m, dtype=np.int64)]
            s = R.power_sums(x, q, 0, n, p)
        if not any(s):
            continue
        expect = galois.berlekamp_massey(GF(s), output="connection").coeffs[::-1]
        lam = np.zeros(n + 1, dtype=np.int64)
        L = RS.berlekamp_massey(arr(s), lam, p)
        assert galois_connection(lam, L, n) == [int(c) for c in expect]
    m = 6
    x = sorted({int(v) for v in rng.integers(1, p, m, dtype=np.int64)})
    m = len(x)
    b = [int(v) for v in rng.integers(0, p, m, dtype=np.int64)]
    V = GF([[pow(xj, i, p) for xj in x] for i in range(m)])
    expect = [int(v) for v in np.linalg.solve(V, GF(b))]
    col = arr(b).reshape(m, 1)
    assert RS.solve_transposed_vandermonde(arr(x), col, p) == -1
    assert ints(col[:, 0]) == expect
    # Forney on the syndromes of the solution reproduces the same magnitudes
    s = R.power_sums(x, expect, 0, 2 * m, p)
    lam = np.zeros(2 * m + 1, dtype=np.int64)
    L = RS.berlekamp_massey(arr(s), lam, p)
    out = np.zeros(m, dtype=np.int64)
    assert RS.forney_magnitudes(arr(s), lam, L, arr(x), out, p) == -1
    assert ints(out) == expect


@needs_galois
def test_live_galois_roots_small_field():
    # galois' root finder is fast only for small fields; larger ones are in the frozen vectors
    p = 101
    GF = galois.GF(p)
    rng = np.random.default_rng(5)
    for _ in range(5):
        d = int(rng.integers(1, 9))
        coeffs = [int(v) for v in rng.integers(0, p, d, dtype=np.int64)] + [1]
        g = sorted(int(r) for r in galois.Poly(coeffs[::-1], field=GF).roots())
        out = np.zeros(d, dtype=np.int64)
        k = RS.find_roots(arr(coeffs), out, 1, p)
        if len(g) == d:
            assert ints(out) == g
        else:
            assert k == RS.ROOTS_NOT_SPLIT
