"""Time fedcore's SCMA kernels against galois in one process; print medians and ratios.

    python benchmarks/compare_galois.py            # everything, including galois' slow runs
    python benchmarks/compare_galois.py --quick    # skip the galois runs that take > 10 s

Rows (ratio = galois time / fedcore time, > 1 means fedcore is faster):

* Berlekamp-Massey on 2t syndromes of a t-sparse vector, p = 2**61 - 1 (galois computes in pure
  Python above 2**32) and p = 2**31 - 1 (galois' compiled path);
* root finding of a product of distinct linear factors: fedcore ``find_roots`` (checks
  f | x**p - x, then splits) against galois ``Poly.equal_degree_factors(1)`` (its fastest way to
  the roots; ``Poly.roots()`` is slower still);
* end-to-end SCMA decode of L = 100 clients with K = 10 and K = 62 bins each (t = K L) in the
  d = 784, B = 192 index space (no galois counterpart): summing the 100 messages and decoding.
  The messages are the clients' syndromes plus uniform masks that sum to zero, which is exactly
  the law of real masked messages, without generating 100 * 99 pairwise streams;
* client encode of K = 62 bins (syndromes; mask generated offline, ``precompute_mask``), and the
  message size per client against the bound 2 K L ceil(log2 p') bits (p' >= B**d) of
  [MUFC] Appendix C.

Timings are medians of wall-clock runs after a warm-up call (no compile time). The machine may
be shared: the script prints the load average next to the results.
"""
import argparse
import os
import time

import numpy as np

from fedcore.kernels.field import add_into, sub_into
from fedcore.kernels.field.polynomial import poly_from_roots
from fedcore.kernels.field.reed_solomon import berlekamp_massey, find_roots, power_sums
from fedcore.secagg import SCMAClient, SCMASetup, SCMAServer
from _timing import fedcore_source, median_time

try:
    import galois
except ImportError:  # fedcore-only timings
    galois = None

M61 = 2**61 - 1
M31 = 2**31 - 1


def once(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def planted(p, t, seed):
    """Points, magnitudes and the 2t syndromes of a random t-sparse vector."""
    rng = np.random.default_rng(seed)
    x = np.unique(rng.integers(1, p, t, dtype=np.int64))
    q = rng.integers(1, p, x.shape[0], dtype=np.int64)
    s = np.zeros((1, 2 * t), dtype=np.int64)
    power_sums(x, q.reshape(1, -1), 0, s, p)
    return x, s[0]


def fmt(seconds):
    return "      -   " if seconds is None else f"{seconds * 1e3:10.2f}"


def row(label, ours, theirs, note=""):
    ratio = f"{theirs / ours:9.1f}x" if theirs is not None else "        -"
    print(f"{label:<44} {fmt(ours)} ms {fmt(theirs)} ms {ratio}  {note}")


def bench_bm(p, sizes, galois_sizes, repeats):
    GF = galois.GF(p) if galois else None
    if GF is not None:
        galois.berlekamp_massey(GF([1, 2, 3, 4]), output="connection")  # JIT warm-up
    for n in sizes:
        _, s = planted(p, n // 2, n)
        lam = np.zeros(n + 1, dtype=np.int64)
        ours = median_time(lambda: berlekamp_massey(s, lam, p), repeats if n < 20000 else 3)
        theirs = None
        if GF is not None and n in galois_sizes:
            y = GF(s)
            theirs = once(lambda: galois.berlekamp_massey(y, output="connection"))
            L = berlekamp_massey(s, lam, p)
            expect = galois.berlekamp_massey(y, output="connection").coeffs[::-1]
            assert [int(v) for v in lam[:L + 1]] == [int(v) for v in expect]
        row(f"Berlekamp-Massey 2t={n:<6} p=2^{p.bit_length()}-1", ours, theirs)


def bench_roots(p, degrees, galois_degrees, repeats):
    GF = galois.GF(p) if galois else None
    for d in degrees:
        rng = np.random.default_rng(d)
        roots = np.unique(rng.integers(1, p, d, dtype=np.int64))
        f = np.zeros(roots.shape[0] + 1, dtype=np.int64)
        poly_from_roots(roots, f, p)
        out = np.zeros(roots.shape[0], dtype=np.int64)
        ours = median_time(lambda: find_roots(f, out, 1, p), repeats if d < 10000 else 1)
        assert np.array_equal(out, roots)
        theirs = None
        if GF is not None and d in galois_degrees:
            g = galois.Poly(GF(f[::-1]))
            theirs = once(lambda: g.equal_degree_factors(1))
        row(f"roots degree {d:<6} p=2^{p.bit_length()}-1", ours, theirs,
            "galois: equal_degree_factors(1)" if theirs else "")


def client_vectors(K, L, d, B, seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, B, size=(L * K, d)), rng.integers(1, 1000, L * K)


def bench_decode(K, L=100, d=784, B=192, repeats=3):
    setup = SCMASetup(L, K * L, n_dims=d, bins=B, random_state=0)
    bins, counts = client_vectors(K, L, d, B, K)
    p = setup.prime
    msgs = [SCMAClient(l, setup).syndromes(bins[l * K:(l + 1) * K], counts[l * K:(l + 1) * K])
            for l in range(L)]
    rng = np.random.default_rng(1)
    acc = np.zeros(setup.message_length, dtype=np.int64)
    for l in range(L - 1):  # uniform masks with zero sum
        r = rng.integers(0, p, setup.message_length, dtype=np.int64)
        add_into(msgs[l], r, p)
        add_into(acc, r, p)
    sub_into(msgs[-1], acc, p)
    msgs = [m.view(np.uint64) for m in msgs]
    # A server decodes each round once (replays are refused), so each timing gets a fresh one;
    # making a server costs microseconds.
    ours = median_time(lambda: SCMAServer(setup).decode(msgs, round=0), repeats)
    got_bins, got_counts = SCMAServer(setup).decode(msgs, round=0)
    order = np.lexsort(bins.T[::-1])
    assert np.array_equal(got_bins, bins[order]) and np.array_equal(got_counts, counts[order])
    agg = median_time(lambda: SCMAServer(setup).aggregate(msgs, round=0), repeats)
    row(f"SCMA decode L={L} K={K} t={K * L} d={d} B={B}", ours, None,
        f"(summing 100 messages: {agg * 1e3:.0f} ms; {setup.n_shards} shards of "
        f"capacity {setup.shard_capacity})")
    return setup


def bench_encode(K=62, L=100, d=784, B=192, repeats=20):
    setup = SCMASetup(L, K * L, n_dims=d, bins=B, random_state=0)
    bins, counts = client_vectors(K, L, d, B, 7)
    bins, counts = bins[:K], counts[:K]
    client = SCMAClient(0, setup)
    syn = median_time(lambda: client.syndromes(bins, counts), repeats)
    # Masks are offline work; their cost does not depend on who the peers are, so prepare them
    # for two participants and time only the online encode.
    for r in range(repeats + 1):
        client.precompute_mask(r, participants=[0, 1])
    rounds = iter(range(repeats + 1))

    def encode():
        client.encode(bins, counts, round=next(rounds), participants=[0, 1])

    # One untimed round, then the timed ones: median_time's warm-up would call encode for 0.2 s
    # and run out of precomputed rounds.
    encode()
    enc = median_time(encode, repeats, warm=False)
    mask = once(lambda: SCMAClient(1, setup).mask(0))
    row(f"client syndromes K={K} (t={K * L}, d={d})", syn, None)
    row(f"client encode K={K}, mask precomputed", enc, None, "(adds the mask, returns uint64)")
    row("client mask, 99 pairwise streams (offline)", mask, None, "(App. C: noise generation is "
        "done offline)")
    return setup


def message_sizes(setups):
    print("\nMessage size per client (p = 2^61 - 1, 61-bit elements):")
    for setup in setups:
        t, d, B = setup.capacity, setup.n_dims, setup.bins
        paper_p = int(np.ceil(d * np.log2(B)))  # [MUFC] Section 4.1 needs p >= B**d
        paper = 2 * t * paper_p
        naive = 2 * t * setup.bits_per_element
        print(f"  t={t:<5} elements={setup.message_length:>8} bits={setup.message_bits:>10} "
              f"({setup.message_bits / 8e6:.2f} MB); paper 2KL*ceil(log2 p') with p' >= B^d: "
              f"{paper} bits ({setup.message_bits / paper:.2f}x); 2KL*61 = {naive} bits would "
              f"not identify bins ({setup.message_bits / naive:.1f}x)")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="skip galois runs above ~10 s")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()}; galois {galois.__version__ if galois else 'absent'}")
    print(fedcore_source())
    print(f"{'':<44} {'fedcore':>13} {'galois':>13} {'ratio':>10}")
    bench_bm(M61, [200, 2000, 20000], [200] if args.quick else [200, 2000], args.repeats)
    bench_roots(M61, [100, 1000, 10000], [] if args.quick else [100], args.repeats)
    bench_bm(M31, [2000], [2000], args.repeats)
    bench_roots(M31, [1000], [1000], args.repeats)
    s1 = bench_decode(10)
    s2 = bench_decode(62)
    bench_encode()
    message_sizes([s1, s2])


if __name__ == "__main__":
    main()
