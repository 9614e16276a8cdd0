"""The PCG64 mask generator of SCMA: seeded, NOT cryptographic, for simulations only.

``SCMASetup(..., mask_generator="pcg64")`` selects it; the default is the cryptographic ChaCha20
generator (``fedcore.secagg._streams``). Masks follow [MUFC] Alg. 2 line 2 (sum_l z_i^(l) = 0 mod
p): every pair of clients {l, l'} has a 128-bit seed s_{l,l'} drawn from the setup's
``random_state``; for round r the pair expands it into a stream PRG(s_{l,l'}, r) of uniform
elements of F_p; client l adds the stream for every participant l' > l and subtracts it for
l' < l, so the masks cancel in the sum over all participants and nowhere else.

The stream is NumPy's PCG64 seeded by ``SeedSequence(entropy=s, spawn_key=(nonce, r))`` and is
read through ``random_raw`` (the generator's raw 64-bit output, stable across NumPy versions).
Uniform values on [0, p) come from rejection sampling: the top ``p.bit_length()`` bits of each
word are kept when they are below p, so there is no modulo bias. Every mask is a function of the
setup's ``random_state``, and PCG64's output can be predicted from a few of its words: whoever
knows the seed, or enough of a stream, knows the masks. Use it to make simulations reproducible
message for message, never to protect data. It is not faster than the ChaCha20 generator: every
pair and round seeds a new PCG64 (about 16 us per stream at 2000 words), while an in-process
ChaCha20 round keeps each pair's cipher context.
"""
import numpy as np

from ..kernels.field.arithmetic import add_into, sub_into

__all__ = ["uniform_field_elements", "pair_stream", "zero_sum_mask", "add_pair_streams"]


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


def add_pair_streams(pairs, plus_rows, minus_rows, round, length, p, pair_seed, nonce, out):
    """Add each pair's stream of a round to row ``plus_rows[i]`` of ``out`` and subtract it from
    row ``minus_rows[i]`` (-1: no such row); ``pair_seed(a, b)`` gives the pairs' seeds."""
    for (a, b), plus, minus in zip(pairs, plus_rows, minus_rows):
        stream = uniform_field_elements(pair_stream(pair_seed(a, b), nonce, round), length, p)
        if plus >= 0:
            add_into(out[plus], stream, p)
        if minus >= 0:
            sub_into(out[minus], stream, p)
    return out
