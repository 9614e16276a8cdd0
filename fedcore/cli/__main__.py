"""``python -m fedcore.cli``: the ``fedcore`` command."""
import sys

from .main import main

sys.exit(main())
