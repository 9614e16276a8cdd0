"""Federation containers, partitioners and the communication ledger (the protocol of client and
server roles is :mod:`fedcore.federation.protocol`)."""
import warnings

from .horizontal import HorizontalFederation, partition
from .ledger import SERVER, CommLedger, LedgerEntry
from .vertical import VerticalFederation

__all__ = ["CommLedger", "HorizontalFederation", "LedgerEntry", "SERVER", "VerticalFederation",
           "partition"]


def __getattr__(name):
    if name == "Message":  # the ledger's entry before it was named LedgerEntry
        warnings.warn("fedcore.federation.Message is now fedcore.federation.LedgerEntry (the "
                      "protocol's messages are fedcore.federation.protocol.Message)",
                      DeprecationWarning, stacklevel=2)
        return LedgerEntry
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
