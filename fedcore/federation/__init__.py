"""Federation containers, partitioners and the communication ledger."""
from .ledger import SERVER, CommLedger, Message

__all__ = ["CommLedger", "Message", "SERVER"]
