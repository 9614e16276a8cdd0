"""asv benchmarks: SCMA kernels (Berlekamp-Massey, root finding) and protocol (encode, decode).

Every ``setup`` warms the kernels on tiny inputs first, so compile time never lands in a timing.
All timings use the default field p = 2**61 - 1 unless the parameter says otherwise; the peer
comparison with galois is ``benchmarks/compare_galois.py``.
"""
import numpy as np

from fedcore.kernels.field import add_into, sub_into
from fedcore.kernels.field.polynomial import poly_from_roots
from fedcore.kernels.field.reed_solomon import berlekamp_massey, find_roots, power_sums
from fedcore.secagg import SCMAClient, SCMASetup, SCMAServer

M61 = 2**61 - 1


def _warm():
    p = 13
    s = np.array([1, 2, 3, 4], dtype=np.int64)
    berlekamp_massey(s, np.zeros(5, dtype=np.int64), p)
    for q in (p, 2**31 - 1, M61):
        f = np.zeros(4, dtype=np.int64)
        poly_from_roots(np.array([1, 2, 3], dtype=np.int64), f, q)
        find_roots(f, np.zeros(3, dtype=np.int64), 1, q)
        berlekamp_massey(s % q, np.zeros(5, dtype=np.int64), q)
    setup = SCMASetup(2, 3, n_dims=3, bins=2**30, random_state=0)
    msgs = [SCMAClient(l, setup).encode([[l, 1, 2]], [1], round=0) for l in range(2)]
    SCMAServer(setup).decode(msgs, round=0)


def _syndromes(p, t, seed=0):
    rng = np.random.default_rng(seed)
    x = np.unique(rng.integers(1, p, t, dtype=np.int64))
    q = rng.integers(1, p, x.shape[0], dtype=np.int64)
    s = np.zeros((1, 2 * t), dtype=np.int64)
    power_sums(x, q.reshape(1, -1), 0, s, p)
    return s[0]


class BerlekampMassey:
    params = ([200, 2000, 20000], [M61, 2**31 - 1])
    param_names = ["two_t", "prime"]
    timeout = 300

    def setup(self, two_t, prime):
        _warm()
        self.s = _syndromes(prime, two_t // 2)
        self.lam = np.zeros(two_t + 1, dtype=np.int64)

    def time_berlekamp_massey(self, two_t, prime):
        berlekamp_massey(self.s, self.lam, prime)


class FindRoots:
    params = ([100, 1000, 10000], [M61, 2**31 - 1])
    param_names = ["degree", "prime"]
    timeout = 600

    def setup(self, degree, prime):
        _warm()
        rng = np.random.default_rng(degree)
        roots = np.unique(rng.integers(1, prime, degree, dtype=np.int64))
        self.f = np.zeros(roots.shape[0] + 1, dtype=np.int64)
        poly_from_roots(roots, self.f, prime)
        self.out = np.zeros(roots.shape[0], dtype=np.int64)

    def time_find_roots(self, degree, prime):
        find_roots(self.f, self.out, 1, prime)


class SCMAProtocol:
    """L = 100 clients with K bins each (t = K L) in the d = 784, B = 192 index space."""

    params = ([10, 62],)
    param_names = ["K"]
    timeout = 600
    L, d, B = 100, 784, 192

    def setup(self, K):
        _warm()
        L, d, B = self.L, self.d, self.B
        self.setup_ = SCMASetup(L, K * L, n_dims=d, bins=B, random_state=0)
        p = self.setup_.prime
        rng = np.random.default_rng(K)
        self.bins = rng.integers(0, B, size=(K * L, d))
        self.counts = rng.integers(1, 1000, K * L)
        clients = [SCMAClient(l, self.setup_) for l in range(L)]
        self.msgs = [clients[l].syndromes(self.bins[l * K:(l + 1) * K],
                                          self.counts[l * K:(l + 1) * K]) for l in range(L)]
        acc = np.zeros(self.setup_.message_length, dtype=np.int64)
        for l in range(L - 1):  # uniform masks summing to zero: the law of real messages
            r = rng.integers(0, p, self.setup_.message_length, dtype=np.int64)
            add_into(self.msgs[l], r, p)
            add_into(acc, r, p)
        sub_into(self.msgs[-1], acc, p)
        self.client = clients[0]

    def time_decode(self, K):
        # A server decodes each round once (replays are refused): a fresh one per call, which
        # costs microseconds.
        SCMAServer(self.setup_).decode(self.msgs, round=0)

    def time_client_syndromes(self, K):
        self.client.syndromes(self.bins[:K], self.counts[:K])

    def track_message_bits(self, K):
        return self.setup_.message_bits

    track_message_bits.unit = "bits"

    def track_message_bits_over_paper_bound(self, K):
        # [MUFC] Appendix C: 2 K L ceil(log2 p') bits with p' >= B**d
        t = K * self.L
        return self.setup_.message_bits / (2 * t * int(np.ceil(self.d * np.log2(self.B))))

    track_message_bits_over_paper_bound.unit = "ratio"
