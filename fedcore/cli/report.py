"""What the command line prints: a progress bar on stderr and aligned tables."""
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
