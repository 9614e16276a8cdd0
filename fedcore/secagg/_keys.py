"""Key agreement of SCMA: X25519 key pairs, HKDF-SHA256 pair keys, sealed key shares.

Every key is 32 raw bytes (``cryptography``'s X25519 raw encoding). Private keys are drawn by
``X25519PrivateKey.generate()``, i.e. from the operating system's entropy, never from a seeded
generator.

* The shared secret of clients a and b is X25519(sk_a, pk_b) = X25519(sk_b, pk_a).
* Their mask key is HKDF-SHA256 (RFC 5869, no salt) of that secret with the info string
  ``b"fedcore/scma/v1/mask-key" || setup_id || a || b [|| round]`` (8-byte big-endian integers,
  a < b; the round only for per-round keys, see ``SCMASetup``'s ``dropout_threshold``), so a key
  is bound to one setup, one pair and, with dropout tolerance, one round.
* With dropout tolerance the Shamir shares of a client's round key travel through the server
  sealed by ChaCha20-Poly1305 under HKDF(X25519(identity keys), ``.../share-key || setup_id || a ||
  b``), nonce ``round || sender`` and the header as associated data, so the server relays them
  without reading them.
"""
import hashlib

__all__ = ["KEY_BYTES", "generate_key_pair", "private_key_bytes", "public_key_bytes",
           "private_key_object", "public_key_of", "shared_secret", "mask_key", "secret_of_seed",
           "seal_share", "open_share"]

KEY_BYTES = 32
_LABEL = b"fedcore/scma/v1/"


def _x25519():
    from cryptography.hazmat.primitives.asymmetric import x25519
    return x25519


def generate_key_pair():
    """A fresh X25519 key pair ``(private, public)`` as 32 raw bytes each, from OS entropy."""
    key = _x25519().X25519PrivateKey.generate()
    return key.private_bytes_raw(), key.public_key().public_bytes_raw()


def private_key_bytes(key, name="private_key"):
    """32 raw bytes of an X25519 private key given as bytes or ``X25519PrivateKey``."""
    x = _x25519()
    if isinstance(key, x.X25519PrivateKey):
        return key.private_bytes_raw()
    if isinstance(key, (bytes, bytearray, memoryview)) and len(bytes(key)) == KEY_BYTES:
        return bytes(key)
    raise TypeError(f"Argument {name!r} must be an X25519PrivateKey or {KEY_BYTES} raw bytes, "
                    f"got {type(key).__name__}")


def public_key_bytes(key, name="public_keys"):
    """32 raw bytes of an X25519 public key given as bytes or ``X25519PublicKey``."""
    x = _x25519()
    if isinstance(key, x.X25519PublicKey):
        return key.public_bytes_raw()
    if isinstance(key, (bytes, bytearray, memoryview)) and len(bytes(key)) == KEY_BYTES:
        return bytes(key)
    raise TypeError(f"Argument {name!r} must hold X25519PublicKeys or {KEY_BYTES} raw bytes, got "
                    f"{type(key).__name__}")


def private_key_object(raw):
    """The ``X25519PrivateKey`` of 32 raw bytes (derives the public key: about 30 us)."""
    return _x25519().X25519PrivateKey.from_private_bytes(raw)


def public_key_of(private_raw):
    """The raw public key of a raw private key."""
    return private_key_object(private_raw).public_key().public_bytes_raw()


def shared_secret(private, public_raw):
    """X25519 of a private key (object or raw bytes) and a raw public key."""
    if isinstance(private, (bytes, bytearray)):
        private = private_key_object(bytes(private))
    return private.exchange(_x25519().X25519PublicKey.from_public_bytes(public_raw))


def _hkdf(secret, info):
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.kdf.hkdf import HKDF
    return HKDF(algorithm=hashes.SHA256(), length=KEY_BYTES, salt=None, info=info).derive(secret)


def _info(kind, setup_id, a, b, round=None):
    a, b = min(a, b), max(a, b)
    out = _LABEL + kind + int(setup_id).to_bytes(8, "big") + int(a).to_bytes(8, "big") \
        + int(b).to_bytes(8, "big")
    return out if round is None else out + int(round).to_bytes(8, "big")


def mask_key(secret, setup_id, a, b, round=None):
    """The 32-byte mask key of the pair {a, b}: HKDF-SHA256(secret, info(setup, pair[, round]))."""
    return _hkdf(bytes(secret), _info(b"mask-key", setup_id, a, b, round))


def secret_of_seed(seed):
    """A legacy integer pair seed (< 2**256) as the 32-byte secret HKDF is applied to."""
    seed = int(seed)
    if not 0 <= seed < 1 << 256:
        raise ValueError(f"Pair seeds must be integers in [0, 2**256), got {seed}")
    return seed.to_bytes(KEY_BYTES, "little")


def _share_aead(identity_private, peer_public, setup_id, a, b):
    from cryptography.hazmat.primitives.ciphers.aead import ChaCha20Poly1305
    secret = shared_secret(identity_private, peer_public)
    return ChaCha20Poly1305(_hkdf(secret, _info(b"share-key", setup_id, a, b)))


def _share_header(setup_id, round, sender, receiver):
    nonce = int(round).to_bytes(8, "big") + int(sender).to_bytes(4, "big")
    aad = _LABEL + b"key-share" + hashlib.sha256(
        b"%d/%d/%d/%d" % (setup_id, round, sender, receiver)).digest()
    return nonce, aad


def seal_share(share, identity_private, peer_public, setup_id, round, sender, receiver):
    """Encrypt and authenticate ``share`` (bytes) from ``sender`` for ``receiver``."""
    nonce, aad = _share_header(setup_id, round, sender, receiver)
    aead = _share_aead(identity_private, peer_public, setup_id, sender, receiver)
    return aead.encrypt(nonce, bytes(share), aad)


def open_share(sealed, identity_private, peer_public, setup_id, round, sender, receiver):
    """Decrypt a sealed share; raises ``ValueError`` naming the sender if it does not verify."""
    from cryptography.exceptions import InvalidTag
    nonce, aad = _share_header(setup_id, round, sender, receiver)
    aead = _share_aead(identity_private, peer_public, setup_id, sender, receiver)
    try:
        return aead.decrypt(nonce, bytes(sealed), aad)
    except InvalidTag:
        raise ValueError(f"The key share sent by client {sender} to client {receiver} for round "
                         f"{round} does not verify (corrupted, or sealed for another setup, "
                         "round or receiver)") from None
