"""Errors of the SCMA protocol."""

__all__ = ["SCMADecodeError", "SCMAMessageError"]


class SCMADecodeError(ValueError):
    """The server could not decode the aggregate exactly; the message says why.

    Raised instead of ever returning a wrong sum: more nonzero bins than the capacity (of a shard),
    a locator polynomial that does not split into distinct roots, counts outside
    [1, n_senders * max_count], failing check syndromes, a coordinate that does not hash back to
    its point (a hash collision or a corrupted message), or too many dropped clients to remove
    their masks. Over-capacity and hash-collision failures can be resolved by a new round with a
    larger capacity or a setup with fresh hash keys (``SCMASetup.rekeyed``).
    """


class SCMAMessageError(SCMADecodeError):
    """A client message (or a round of messages) was refused before decoding.

    The message belongs to another setup, was encoded for another round or participant set,
    repeats another message or sender, replays a message of an earlier round, or its round was
    already aggregated by this server. The message names the client and the mismatch.
    """
