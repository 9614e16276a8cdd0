"""What the command line prints: a progress bar on stderr and two-column tables."""
import sys

__all__ = ["progress", "table"]


def progress(i, total, label, stream=sys.stderr):
    """A one-line progress bar on a terminal; silent when stderr is not a terminal."""
    if not stream.isatty():
        return
    width = 30
    done = int(width * i / total) if total else width
    stream.write(f"\r{label} [{'#' * done}{'.' * (width - done)}] {i}/{total}")
    if i == total:
        stream.write("\n")
    stream.flush()


def table(rows):
    """(name, value) rows as two aligned columns."""
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)
