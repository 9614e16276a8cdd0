"""The ``fedcore`` command: the main job (:mod:`.mainjob`), its Flower run (:mod:`.flowerjob`),
the subcommands on the user's own files (:mod:`.owndata`, reading them with :mod:`.datafile`)."""
from .main import main

__all__ = ["main"]
