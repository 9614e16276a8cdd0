"""Pairwise zero-sum masks for SCMA (MUFC paper, Alg. 2 line 2: sum_l z_i^(l) = 0 mod p).

Every pair of clients {l, l'} shares a 128-bit seed s_{l,l'} (agreed by key exchange in a real
deployment). For round r the pair expands it into a stream PRG(s_{l,l'}, r) of uniform elements of
F_p; client l adds the stream for every participant l' > l and subtracts it for l' < l, so the
masks cancel in the sum over all participants and nowhere else.

The stream is NumPy's PCG64 seeded by ``SeedSequence(entropy=s, spawn_key=(nonce, r))`` and is
read through ``random_raw`` (the generator's raw 64-bit output, stable across NumPy versions).
Uniform values on [0, p) come from rejection sampling: the top ``p.bit_length()`` bits of each
word are kept when they are below p, so there is no modulo bias. PCG64 is a statistical generator,
not a cryptographic one: a deployment that needs computational privacy substitutes a
cryptographic PRG (e.g. AES-CTR) with the same interface.
"""
import numpy as np

from ..kernels.field.arithmetic import add_into, sub_into

__all__ = ["uniform_field_elements", "pair_stream", "zero_sum_mask"]


def pair_stream(pair_seed, nonce, round):
    """The bit generator of the pair with seed ``pair_seed`` (int < 2**128) for one round."""
    return np.random.PCG64(np.random.SeedSequence(entropy=int(pair_seed),
                                                  spawn_key=(int(nonce), int(round))))


def uniform_field_elements(bit_generator, n, p):
    """n independent uniform elements of [0, p) as int64, by rejection sampling.

    Each 64-bit word gives one candidate, its top b = p.bit_length() bits; candidates >= p are
    discarded (acceptance probability p / 2**b > 1/2). The number of words drawn depends only on
    (n, p) and the stream, so both members of a pair obtain identical vectors.
    """
    bits = int(p).bit_length()
    shift = np.uint64(64 - bits)
    up = np.uint64(p)
    accept = p / float(1 << bits)
    out = np.empty(n, dtype=np.int64)
    filled = 0
    while filled < n:
        need = n - filled
        raw = bit_generator.random_raw(int(need / accept * 1.01) + 64) >> shift
        ok = raw[raw < up][:need]
        out[filled:filled + ok.shape[0]] = ok.view(np.int64)
        filled += ok.shape[0]
    return out


def zero_sum_mask(client_id, participants, round, length, p, pair_seed, nonce):
    """Client ``client_id``'s mask: sum over l' > l of PRG(s_{l,l'}) minus sum over l' < l.

    Parameters
    ----------
    client_id : int
    participants : sequence of int
        The clients of this round (must contain ``client_id``).
    round : int
    length : int
        Message length in field elements.
    p : int
    pair_seed : callable
        ``pair_seed(a, b)`` returns the seed shared by clients a < b.
    nonce : int
        Setup nonce (fresh hash keys give fresh masks).

    Returns
    -------
    mask : ndarray of shape (length,), int64
    """
    mask = np.zeros(length, dtype=np.int64)
    for other in participants:
        if other == client_id:
            continue
        lo, hi = min(client_id, other), max(client_id, other)
        stream = uniform_field_elements(pair_stream(pair_seed(lo, hi), nonce, round), length, p)
        if other > client_id:
            add_into(mask, stream, p)
        else:
            sub_into(mask, stream, p)
    return mask
