"""fedcore: federated clustering with exact unlearning, secure aggregation and coresets."""
from .federation import CommLedger

__version__ = "0.1.0"

__all__ = ["CommLedger", "__version__"]
