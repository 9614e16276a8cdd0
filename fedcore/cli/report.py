"""What the command line prints: progress on stderr (tqdm) and aligned tables."""
import os
import sys

import tqdm

from .._config import NUMBA_CACHE

__all__ = ["compile_notice", "progress", "table"]

LOG_INTERVAL = 5.0   # seconds between progress lines when stderr is not a terminal
_noticed = False


class _Lines(tqdm.tqdm):
    """tqdm for a log (stderr not a terminal): plain lines, at most one every ``mininterval``
    seconds, plus the first and the final state, instead of a bar redrawn in place."""

    def display(self, msg=None, pos=None):
        if msg is not None:   # a request to clear or replace the bar: lines are never cleared
            return False
        self.fp.write(f"{self}\n")
        self.fp.flush()
        return True

    def close(self):
        if not self.disable and self.last_print_n != self.n:
            self.display()   # the final state, even when it came within mininterval
        super().close()


def progress(total, label, stream=None):
    """A tqdm progress bar over ``total`` steps (advance it with ``.update()``; use it as a
    context manager). On a terminal: a bar redrawn in place; otherwise (a CI log, a file) a
    plain line every few seconds, so long non-interactive runs show progress too."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return tqdm.tqdm(total=total, desc=label, file=stream, unit="step")
    return _Lines(total=total, desc=label, file=stream, unit="step", ascii=True, leave=False,
                  mininterval=LOG_INTERVAL)


def _kernels_cached():
    """Whether this user's Numba cache already holds compiled fedcore kernels; True when that
    cannot be told (no notice is better than a wrong one)."""
    try:
        if not NUMBA_CACHE:
            return False
        from .._numba_cache import cache_dir
        root = os.environ.get("NUMBA_CACHE_DIR") or cache_dir()
        if not os.path.isdir(root):
            return False
        return any(name.endswith(".nbi") for _, _, names in os.walk(root) for name in names)
    except Exception:   # detection is a courtesy: never fail a command over it
        return True


def compile_notice(stream=None):
    """Before the first compiled-kernel work of a command: say once on stderr that the kernels
    are being compiled when this user's cache does not hold them yet."""
    global _noticed
    if _noticed:
        return
    _noticed = True
    if not _kernels_cached():
        why = "cached afterwards" if NUMBA_CACHE else "FEDCORE_NUMBA_CACHE=0: not cached"
        print(f"fedcore: compiling kernels on first use ({why}), this takes a minute...",
              file=sys.stderr if stream is None else stream, flush=True)


def table(rows):
    """Rows of two or more cells as aligned columns.

    A cell is padded to its column's width unless it ends its row, so a long last cell (e.g. a
    description) does not widen the columns of shorter rows.
    """
    widths = {}
    for row in rows:
        for j, cell in enumerate(row[:-1]):
            widths[j] = max(widths.get(j, 0), len(cell))
    return "\n".join("  ".join([*(c.ljust(widths[j]) for j, c in enumerate(row[:-1])), row[-1]])
                     for row in rows)
