"""Federation containers, partitioners and the communication ledger."""
from .horizontal import HorizontalFederation, partition
from .ledger import SERVER, CommLedger, Message
from .vertical import VerticalFederation

__all__ = ["CommLedger", "HorizontalFederation", "Message", "SERVER", "VerticalFederation",
           "partition"]
