"""Errors of the SCMA protocol."""

__all__ = ["SCMADecodeError"]


class SCMADecodeError(ValueError):
    """The server could not decode the aggregate exactly; the message says why.

    Raised instead of ever returning a wrong sum: more nonzero bins than the capacity (of a shard),
    a locator polynomial that does not split into distinct roots, counts outside [1, max_count],
    failing check syndromes, or a coordinate that does not hash back to its point (a hash collision
    or a corrupted message). Over-capacity and hash-collision failures can be resolved by a new
    round with a larger capacity or a setup with fresh hash keys (``SCMASetup.rekeyed``).
    """
