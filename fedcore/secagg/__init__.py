"""SCMA: exact secure compressed multiset aggregation over a prime field ([MUFC] Alg. 2).

Clients hold sparse non-negative integer vectors over a possibly huge index space (integers, or
d-dimensional bin coordinates); the server learns their exact sum and nothing else. Each client
sends Reed-Solomon syndromes of its vector masked by pairwise zero-sum noise (X25519 + HKDF-SHA256
pair keys, ChaCha20 streams); the server adds the messages, which cancels the masks, and decodes
the syndromes (Berlekamp-Massey, root finding, Forney's formula). Decoding never returns a wrong
sum: it raises :class:`SCMADecodeError`. Messages are bound to their setup, round and sender
(:class:`SCMAMessage`); optional dropout tolerance follows [SecAgg] (Shamir-shared round keys).
The threat model is in ``docs/security.md``.

>>> from fedcore.secagg import SCMASetup, SCMAClient, SCMAServer
>>> setup = SCMASetup(n_clients=3, capacity=8, n_dims=10, bins=173, random_state=1)
>>> clients = [SCMAClient(l, setup) for l in range(3)]
>>> x = [[5] * 10, [172] * 10]
>>> msgs = [c.encode(x, [l + 1, 1], round=0) for l, c in enumerate(clients)]
>>> bins, counts = SCMAServer(setup).decode(msgs, round=0)
>>> bins[:, 0].tolist(), counts.tolist()
([5, 172], [6, 3])
"""
from ._errors import SCMADecodeError, SCMAMessageError
from ._keys import generate_key_pair
from .client import SCMAClient
from .message import SCMAMessage
from .server import SCMAServer
from .setup import SCMASetup

__all__ = ["SCMASetup", "SCMAClient", "SCMAServer", "SCMAMessage", "SCMADecodeError",
           "SCMAMessageError", "generate_key_pair"]
