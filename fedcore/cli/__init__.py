"""The ``fedcore`` command: the main job (:mod:`.mainjob`), its Flower run (:mod:`.flowerjob`)."""
from .main import main

__all__ = ["main"]
