"""The ``fedcore`` command: the main job (:mod:`.mainjob`) and its Flower run (:mod:`.flowerjob`)."""
from .main import main

__all__ = ["main"]
