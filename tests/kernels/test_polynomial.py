"""Polynomial kernels against the pure-Python references (lists of Python ints)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedcore.kernels.field import polynomial as P
from fedcore.kernels.field import polynomial_mod as PM
from tests.reference import field_reference as R

PRIMES = [13, 101, 65537, 2**31 - 1, 2**61 - 1, 2**62 - 57]


def arr(values):
    return np.array(values, dtype=np.int64)


def ints(a):
    return [int(v) for v in a]


@st.composite
def poly(draw, p, min_size=1, max_size=80):
    n = draw(st.integers(min_size, max_size))
    return draw(st.lists(st.integers(0, p - 1), min_size=n, max_size=n))


@st.composite
def prime_and_polys(draw, k=2, max_size=80):
    p = draw(st.sampled_from(PRIMES))
    return (p,) + tuple(draw(poly(p, max_size=max_size)) for _ in range(k))


# Sizes from 1 to 150 cross the Karatsuba threshold (32) and odd splits; the longer operand is
# cut into blocks when lengths differ.
@given(prime_and_polys(2, max_size=150))
def test_mul_matches_reference(args):
    p, a, b = args
    out = np.zeros(len(a) + len(b) - 1, dtype=np.int64)
    P.poly_mul(arr(a), arr(b), out, p)
    assert ints(out) == R.poly_mul(a, b, p)


@pytest.mark.parametrize("p", PRIMES)
@pytest.mark.parametrize("n", [31, 32, 33, 64, 65, 127, 200])
def test_mul_equal_and_square_worst_case(p, n):
    # all coefficients p - 1: the largest 128-bit partial sums in the schoolbook base case
    from fedcore.kernels.field import field_context
    ctx = field_context(p)
    a = np.full(n, p - 1, dtype=np.int64)
    rng = np.random.default_rng(n)
    b = rng.integers(0, p, n, dtype=np.int64)
    ws = np.empty(P.karatsuba_workspace(n), dtype=np.int64)
    out = np.empty(2 * n - 1, dtype=np.int64)
    P.mul_equal(a, b, n, out, ws, False, ctx)
    assert ints(out) == R.poly_mul(ints(a), ints(b), p)
    P.mul_equal(a, a, n, out, ws, True, ctx)
    assert ints(out) == R.poly_mul(ints(a), ints(a), p)
    P.mul_equal(b, b, n, out, ws, True, ctx)
    assert ints(out) == R.poly_mul(ints(b), ints(b), p)


@given(prime_and_polys(2))
def test_divmod_matches_reference(args):
    p, a, b = args
    if not any(b):
        with pytest.raises(ZeroDivisionError):
            P.poly_divmod(arr(a), arr(b), np.zeros(len(a)), np.zeros(len(b)), p)
        return
    q = np.zeros(max(len(a), 1), dtype=np.int64)
    r = np.zeros(max(len(b), 1), dtype=np.int64)
    dq, dr = P.poly_divmod(arr(a), arr(b), q, r, p)
    qr, rr = R.poly_divmod(a, b, p)
    assert R.poly_trim(ints(q)) == qr and R.poly_trim(ints(r)) == rr
    assert dq == len(qr) - 1 and dr == len(rr) - 1


@given(prime_and_polys(3, max_size=30))
def test_gcd_matches_reference_with_planted_common_factor(args):
    p, a, b, c = args
    a, b = R.poly_mul(a, c, p), R.poly_mul(b, c, p)
    out = np.zeros(max(len(a), len(b)), dtype=np.int64)
    d = P.poly_gcd(arr(a), arr(b), out, p)
    expect = R.poly_gcd(a, b, p)
    assert d == len(expect) - 1
    assert ints(out[:d + 1]) == expect


@given(st.sampled_from(PRIMES), st.integers(1, 300), st.data())
def test_series_inverse(p, n, data):
    g = data.draw(st.lists(st.integers(0, p - 1), min_size=n, max_size=n))
    g[0] = g[0] or 1
    out = np.zeros(n, dtype=np.int64)
    PM.series_inverse(arr(g), n, out, p)
    assert R.poly_mul(g, ints(out), p)[:n] == [1] + [0] * (n - 1)


@settings(max_examples=25)
@given(st.sampled_from(PRIMES), st.integers(1, 80), st.integers(0, 2**10), st.data())
def test_powmod_matches_reference(p, d, e, data):
    # degrees up to 80 cross the Newton reduction threshold (64)
    f = data.draw(st.lists(st.integers(0, p - 1), min_size=d, max_size=d)) + \
        [data.draw(st.integers(1, p - 1))]
    base = data.draw(poly(p, max_size=2 * d + 2))
    out = np.zeros(d, dtype=np.int64)
    PM.poly_powmod(arr(base), e, arr(f), out, p)
    assert R.poly_trim(ints(out)) == R.poly_powmod(base, e, f, p)


@pytest.mark.parametrize("p", [13, 101, 2**31 - 1, 2**61 - 1])
@pytest.mark.parametrize("d", [3, 70, 200])
def test_powmod_fermat_on_split_polynomial(p, d):
    # For f with distinct roots in F_p, x**p = x mod f (Fermat), with p up to 2**61 - 1 and
    # degrees on both sides of the Newton threshold.
    d = min(d, p - 1)
    rng = np.random.default_rng(d)
    roots = rng.choice(p - 1, size=d, replace=False).astype(np.int64) + 1 if p < 10**6 else \
        np.unique(rng.integers(1, p, d, dtype=np.int64))
    f = np.zeros(len(roots) + 1, dtype=np.int64)
    P.poly_from_roots(roots, f, p)
    out = np.zeros(len(roots), dtype=np.int64)
    PM.poly_powmod(arr([0, 1]), p, f, out, p)
    assert R.poly_trim(ints(out)) == ([0, 1] if len(roots) > 1 else [(p - int(f[0])) % p])


@given(st.sampled_from(PRIMES), st.lists(st.integers(0, 2**62), max_size=150))
def test_from_roots(p, roots):
    roots = [r % p for r in roots]
    out = np.zeros(len(roots) + 1, dtype=np.int64)
    P.poly_from_roots(arr(roots), out, p)
    assert ints(out) == R.poly_from_roots(roots, p)


@given(prime_and_polys(1), st.lists(st.integers(0, 2**62), max_size=13))
def test_eval(args, points):
    p, c = args
    points = [x % p for x in points]
    out = np.zeros(len(points), dtype=np.int64)
    P.poly_eval(arr(c), arr(points), out, p)
    assert ints(out) == [R.poly_eval(c, x, p) for x in points]
    rows = np.array([c, c[::-1]], dtype=np.int64)
    for x in points[:2]:
        vals = np.zeros(2, dtype=np.int64)
        P.poly_eval_rows(rows, x, vals, p)
        assert ints(vals) == [R.poly_eval(c, x, p), R.poly_eval(c[::-1], x, p)]
