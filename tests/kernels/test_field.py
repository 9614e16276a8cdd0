"""Field kernels against Python's exact integers (tests/reference/field_reference.py).

The kernels' ``py_func`` cannot serve as a reference here: the 128-bit product is a Numba
intrinsic that only exists in compiled code, so the pure-Python references play that role.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedcore.kernels.field import arithmetic as F
from tests.reference import field_reference as R

# Small primes the SCMA tests use, a 31-bit, the default Mersenne prime and two primes near 2**62
# whose Barrett constants exercise the top of the supported range.
PRIMES = [3, 13, 101, 65537, 2**31 - 1, 2**31 + 11, 2**32 - 5, 2**61 - 1, 2**62 - 57,
          4611686018427387847]


@st.composite
def prime_and_values(draw, n=2):
    p = draw(st.sampled_from(PRIMES))
    edge = st.sampled_from([0, 1, p - 1, p - 2, p // 2])
    vals = [draw(st.one_of(edge, st.integers(0, p - 1))) for _ in range(n)]
    return p, vals


def test_primes_in_tests_are_prime():
    for p in PRIMES:
        assert F.is_prime(p)


@given(prime_and_values(3))
def test_mulmod_powmod_inverse_match_python_integers(args):
    p, (a, b, e) = args
    assert F.mulmod(a, b, p) == a * b % p
    assert F.mulmod(b, a, p) == a * b % p
    assert F.powmod(a, e, p) == pow(a, e, p)
    if a:
        assert F.inverse(a, p) == R.inverse(a, p)
    else:
        with pytest.raises(ZeroDivisionError):
            F.inverse(a, p)


@given(st.sampled_from(PRIMES), st.integers(0, 2**63 - 1), st.integers(0, 2**62))
def test_powmod_large_exponents(p, e, a):
    a %= p
    assert F.powmod(a, e, p) == pow(a, e, p)


def test_mulmod_exhaustive_small_field():
    p = 13
    for a in range(p):
        for b in range(p):
            assert F.mulmod(a, b, p) == a * b % p


def test_field_context_constants():
    for p in PRIMES:
        ctx = F.field_context(p)
        s = p.bit_length()
        assert ctx == (p, (1 << (2 * s)) // p, s, (1 << 64) % p, ctx[4])
    assert F.field_context(2**61 - 1)[4] == F.KIND_MERSENNE_61
    assert F.field_context(2**31 - 1)[4] == F.KIND_SMALL
    assert F.field_context(2**31 + 11)[4] == F.KIND_GENERIC
    assert F.field_context(2**62 - 57)[4] == F.KIND_GENERIC


@pytest.mark.parametrize("p", PRIMES)
def test_dot_products_worst_case_values_cross_the_accumulation_limit(p):
    # All entries p - 1 maximise every 128-bit partial sum; n = 300 forces several reductions
    # (the limit is 16 terms near 2**62 and 64 for 2**61 - 1).
    ctx = F.field_context(p)
    n = 300
    x = np.full(n, p - 1, dtype=np.int64)
    assert F.dot_forward(x, 0, x, 0, n, ctx) == n * (p - 1) ** 2 % p
    rng = np.random.default_rng(p % 1000)
    a = rng.integers(0, p, n, dtype=np.int64)
    b = rng.integers(0, p, n, dtype=np.int64)
    expect = sum(int(u) * int(v) for u, v in zip(a, b)) % p
    assert F.dot_forward(a, 0, b, 0, n, ctx) == expect
    expect_rev = sum(int(a[i]) * int(b[n - 1 - i]) for i in range(n)) % p
    assert F.dot_reverse(a, 0, b, n - 1, n, ctx) == expect_rev


@given(st.sampled_from(PRIMES), st.lists(st.integers(1, 2**62), min_size=0, max_size=40))
def test_batch_inverse(p, vals):
    a = np.array([v % (p - 1) + 1 for v in vals], dtype=np.int64)
    out = np.empty_like(a)
    F.batch_inverse(a, out, p)
    assert all(int(u) * int(v) % p == 1 for u, v in zip(a, out))
    F.batch_inverse(a, a, p)  # in place
    assert np.array_equal(a, out)


def test_batch_inverse_rejects_zero():
    with pytest.raises(ZeroDivisionError):
        F.batch_inverse(np.array([3, 0, 5], dtype=np.int64), np.empty(3, dtype=np.int64), 13)


@settings(max_examples=30)
@given(st.sampled_from(PRIMES), st.data())
def test_vector_ops(p, data):
    n = data.draw(st.integers(0, 30))
    a = np.array(data.draw(st.lists(st.integers(0, p - 1), min_size=n, max_size=n)), dtype=np.int64)
    b = np.array(data.draw(st.lists(st.integers(0, p - 1), min_size=n, max_size=n)), dtype=np.int64)
    c = data.draw(st.integers(0, p - 1))
    s = a.copy()
    F.add_into(s, b, p)
    assert [int(v) for v in s] == [(int(u) + int(w)) % p for u, w in zip(a, b)]
    F.sub_into(s, b, p)
    assert np.array_equal(s, a)
    F.scale_into(s, c, p)
    assert [int(v) for v in s] == [int(u) * c % p for u in a]


@settings(max_examples=30)
@given(st.sampled_from(PRIMES), st.data())
def test_sum_messages_is_the_sum_mod_p_and_names_the_first_bad_message(p, data):
    from numba.typed import List
    r, m = data.draw(st.integers(1, 20)), data.draw(st.integers(0, 8))
    rows = np.array(data.draw(st.lists(st.integers(0, p - 1), min_size=r * m, max_size=r * m)),
                    dtype=np.int64).reshape(r, m)
    out = np.empty(m, dtype=np.int64)
    assert F.sum_messages(List(list(rows)), p, out) == -1
    assert [int(v) for v in out] == [sum(int(x) for x in rows[:, i]) % p for i in range(m)]
    stacked = np.empty(m, dtype=np.int64)  # the messages stacked as rows of one array
    assert F.sum_messages(rows, p, stacked) == -1
    np.testing.assert_array_equal(stacked, out)
    out_u = np.empty(m, dtype=np.int64)  # uint64 messages, as clients send them: same sums
    assert F.sum_messages(List(list(rows.astype(np.uint64))), p, out_u) == -1
    np.testing.assert_array_equal(out_u, out)
    if m:
        bad_row = data.draw(st.integers(0, r - 1))
        unsigned = rows.astype(np.uint64)
        unsigned[bad_row, 0] = np.uint64(2**63 + 5)  # a negative int64 if cast
        assert F.sum_messages(List(list(unsigned)), p, out_u) == bad_row
        rows[bad_row, data.draw(st.integers(0, m - 1))] = data.draw(st.sampled_from([-1, p]))
        assert F.sum_messages(List(list(rows)), p, out) == bad_row
        rows[bad_row:] = 0
        rows[bad_row, 0] = -5
        assert F.sum_messages(List(list(rows)), p, out) == bad_row


def test_is_prime_matches_trial_division_and_known_pseudoprimes():
    for n in range(-3, 3000):
        assert F.is_prime(n) == R.is_prime(n), n
    # Carmichael numbers and strong pseudoprimes to several small bases are composite.
    for n in [561, 41041, 3215031751, 3825123056546413051, 2**62 - 1, 2**61 + 1]:
        assert not F.is_prime(n)
    assert F.is_prime(2**61 - 1) and F.is_prime(2**31 - 1) and not F.is_prime(2**62 - 1)
