"""Communication ledger: every message a federated method sends, counted.

A federated model keeps one :class:`CommLedger` in ``comm_``. Each message is recorded with its
round, sender, receiver, number of elements (floats or field elements) and number of bits, so the
papers' communication claims can be checked by summing the ledger. The channels of
:mod:`fedcore.federation.protocol` record the messages they carry, measured from the message
objects themselves.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .._validation import check_int

__all__ = ["CommLedger", "LedgerEntry", "SERVER"]

SERVER = "server"


@dataclass(frozen=True)
class LedgerEntry:
    """One message as the ledger counts it: ``sender`` and ``receiver`` are party ids (ints) or
    ``"server"``. (The messages themselves are :class:`fedcore.federation.protocol.Message`
    objects.)"""

    round: int
    sender: object
    receiver: object
    kind: str
    n_elements: int
    n_bits: int

    @property
    def direction(self) -> Literal["up", "down", "peer"]:
        """"up" (party to server), "down" (server to party) or "peer"."""
        if self.receiver == SERVER and self.sender != SERVER:
            return "up"
        if self.sender == SERVER and self.receiver != SERVER:
            return "down"
        return "peer"


Message = LedgerEntry  # the name before 0.2; files saved by fedcore.persistence may name it


def _nonnegative(value, name):
    """``value`` as a non-negative int (:func:`check_int`, with a fast path for a plain int: the
    channels record every message)."""
    if type(value) is int and value >= 0:
        return value
    return check_int(value, name, min_value=0)


class CommLedger:
    """Append-only record of the messages of a federated run.

    Examples
    --------
    >>> ledger = CommLedger()
    >>> ledger.record(0, sender=3, receiver="server", kind="syndromes", n_elements=40,
    ...               bits_per_element=61)
    >>> ledger.summary()["up"]
    {'messages': 1, 'elements': 40, 'bits': 2440}
    """

    def __init__(self) -> None:
        self.messages: list[LedgerEntry] = []

    def record(self, round: int, *, sender: int | str, receiver: int | str, kind: str,
               n_elements: int, bits_per_element: int = 64, n_bits: int | None = None) -> None:
        """Record one message; ``n_bits`` defaults to ``n_elements * bits_per_element``."""
        round = _nonnegative(round, "round")
        n_elements = _nonnegative(n_elements, "n_elements")
        bits_per_element = _nonnegative(bits_per_element, "bits_per_element")
        bits = n_elements * bits_per_element if n_bits is None else _nonnegative(n_bits, "n_bits")
        self.messages.append(LedgerEntry(round, sender, receiver, str(kind), n_elements, bits))

    def _add(self, round, sender, receiver, kind, n_elements, n_bits):
        """:meth:`record` of counts the caller computed (non-negative ints; the channels
        measure every message)."""
        self.messages.append(LedgerEntry(_nonnegative(round, "round"), sender, receiver, kind,
                                         n_elements, n_bits))

    def extend(self, other: CommLedger) -> None:
        """Append every message of ``other`` (another ledger)."""
        if not isinstance(other, CommLedger):
            raise TypeError(f"Argument 'other' must be a CommLedger, got {type(other).__name__}")
        self.messages.extend(other.messages)

    @property
    def n_rounds(self) -> int:
        """Number of distinct rounds in which anything was sent."""
        return len({m.round for m in self.messages})

    @property
    def n_messages(self) -> int:
        return len(self.messages)

    @property
    def n_elements(self) -> int:
        return sum(m.n_elements for m in self.messages)

    @property
    def n_bits(self) -> int:
        return sum(m.n_bits for m in self.messages)

    def summary(self) -> dict[str, int | dict[str, int]]:
        """Totals per direction ("up", "down", "peer") and overall, as plain dicts."""
        out = {"rounds": self.n_rounds}
        for direction in ("up", "down", "peer"):
            ms = [m for m in self.messages if m.direction == direction]
            out[direction] = {"messages": len(ms), "elements": sum(m.n_elements for m in ms),
                              "bits": sum(m.n_bits for m in ms)}
        return out

    def by_party(self) -> dict[int | str, dict[str, int]]:
        """Totals per non-server party: {party: {"sent_bits", "received_bits", "messages"}}."""
        out = {}
        for m in self.messages:
            for party, key in ((m.sender, "sent_bits"), (m.receiver, "received_bits")):
                if party == SERVER:
                    continue
                entry = out.setdefault(party, {"sent_bits": 0, "received_bits": 0, "messages": 0})
                entry[key] += m.n_bits
                entry["messages"] += 1
        return out

    def __repr__(self):
        return (f"CommLedger(rounds={self.n_rounds}, messages={self.n_messages}, "
                f"elements={self.n_elements}, bits={self.n_bits})")
