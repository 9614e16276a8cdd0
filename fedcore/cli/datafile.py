"""Reading the user's own data for the ``fedcore`` subcommands: CSV, ``.npy`` and ``.npz``.

A file becomes a :class:`Table`: named columns of equal length, row ``i`` of the file being
global point id ``i``. Feature columns must be numeric and finite; the columns that say which
client holds a row, the true labels, sensitive attributes and a regression target may hold any
values. Every problem raises :class:`DataError` with a message naming the option and the column.

* CSV: comma-separated, the first line names the columns; every row has as many fields.
* ``.npy``: a 2-D numeric array, its columns named ``0``, ``1``, ...; or a structured array, its
  columns named by its fields.
* ``.npz``: the array named ``X`` (or the only array) as in ``.npy``; every other 1-D array of
  the same length is one more column, named by its key (for example ``client`` or ``y``).
"""
import csv
import os

import numpy as np

__all__ = ["DataError", "Table", "read_table"]


class DataError(Exception):
    """A problem with the user's data or options, reported as one line by the command."""


class Table:
    """Named columns of one data file, in file order.

    Parameters
    ----------
    path : str, the file read
    columns : dict {name: 1-D ndarray}, all of the same length
    numeric : set of the names whose values all parsed as numbers
    lines : list of int or None, the line of a CSV file each row is on (for messages)
    """

    def __init__(self, path, columns, numeric, lines=None):
        self.path = path
        self.columns = columns
        self.numeric = numeric
        self.lines = lines
        self.n_rows = len(next(iter(columns.values()))) if columns else 0

    @property
    def names(self):
        return list(self.columns)

    def column(self, name, option):
        """The values of column ``name`` (categorical columns: ints, floats or strings)."""
        if name not in self.columns:
            raise DataError(f"argument {option}: no column {name!r} in {self.path} "
                            f"(columns: {_listing(self.names)})")
        values = self.columns[name]
        if values.dtype.kind == "O":
            empty = np.array([v == "" for v in values], dtype=bool)
            if empty.any():
                raise DataError(f"argument {option}: column {name!r} has no value in "
                                f"{_where(self, int(np.argmax(empty)))}; every row needs one")
        if values.dtype.kind == "f":
            bad = ~np.isfinite(values)
            if bad.any():
                row = int(np.argmax(bad))
                raise DataError(f"argument {option}: column {name!r} holds {values[row]} in "
                                f"{_where(self, row)}; every row needs a value")
        return values

    def features(self, exclude):
        """``(X, names)``: every column not in ``exclude`` (a dict {name: option}), as float64.

        Raises :class:`DataError` naming the first column that is not numeric, is empty in a row
        or holds NaN or infinity, or when no column is left.
        """
        names = [name for name in self.columns if name not in exclude]
        if not names:
            raise DataError(f"argument --data: no feature column left in {self.path}: "
                            f"{_listing(list(exclude))} are not features")
        for name in names:
            values = self.columns[name]
            if name not in self.numeric:
                row, value = _first_non_number(values)
                if value == "":
                    raise DataError(f"argument --data: column {name!r} has no value in "
                                    f"{_where(self, row)}; every feature needs a value")
                raise DataError(
                    f"argument --data: column {name!r} is not numeric ({value!r} in "
                    f"{_where(self, row)}); features must be numbers: name it with "
                    f"--client-column, --label-column or --groups, or leave it out with --drop")
            bad = ~np.isfinite(values)
            if bad.any():
                row = int(np.argmax(bad))
                raise DataError(f"argument --data: column {name!r} holds {values[row]} in "
                                f"{_where(self, row)}; features must be finite numbers")
        X = np.column_stack([self.columns[name].astype(np.float64) for name in names])
        return np.ascontiguousarray(X), names


def read_table(path):
    """Read ``path`` (``.csv``, ``.npy`` or ``.npz``, by its extension) as a :class:`Table`."""
    if not os.path.exists(path):
        raise DataError(f"argument --data: no such file: {path}")
    if os.path.isdir(path):
        raise DataError(f"argument --data: {path} is a directory, not a data file")
    ext = os.path.splitext(path)[1].lower()
    if ext == ".npy":
        return _read_npy(path)
    if ext == ".npz":
        return _read_npz(path)
    if ext in (".csv", ".txt"):
        return _read_csv(path)
    raise DataError(f"argument --data: {path}: unknown file type {ext or '(no extension)'!r}; "
                    "allowed: .csv (with a header line), .npy, .npz")


def _read_csv(path):
    rows, lines = [], []        # the non-blank rows and the line each ends on
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.reader(f)
            for row in reader:
                if any(cell.strip() for cell in row):
                    rows.append(row)
                    lines.append(reader.line_num)
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise DataError(f"argument --data: cannot read {path} as CSV: {err}") from None
    if not rows:
        raise DataError(f"argument --data: {path} is empty; a CSV file needs a header line "
                        "naming the columns, then one line per row")
    header = [cell.strip() for cell in rows[0]]
    if len(header) == 1 and any(sep in header[0] for sep in ";\t|"):
        raise DataError(f"argument --data: the header line of {path} is one column "
                        f"{header[0]!r}; fedcore reads comma-separated files")
    for j, name in enumerate(header):
        if not name:
            raise DataError(f"argument --data: column {j + 1} of {path} has no name in the "
                            "header line")
        if header.index(name) != j:
            raise DataError(f"argument --data: {path} names two columns {name!r}")
    body, lines = rows[1:], lines[1:]
    if not body:
        raise DataError(f"argument --data: {path} has a header line but no rows")
    for row, line in zip(body, lines):
        if len(row) != len(header):
            raise DataError(f"argument --data: line {line} of {path} has {len(row)} fields, "
                            f"the header has {len(header)}")
    columns, numeric = {}, set()
    for j, name in enumerate(header):
        cells = [row[j].strip() for row in body]
        try:
            values = np.array(cells, dtype=np.float64)
        except ValueError:
            values = np.array(cells, dtype=object)
        else:
            numeric.add(name)
            if _all_ints(cells) and np.abs(values).max() < 2.0 ** 53:
                values = values.astype(np.int64)    # e.g. client numbers: 2 sorts before 10
        columns[name] = values
    return Table(path, columns, numeric, lines=lines)


def _all_ints(cells):
    """Whether every cell is written as an integer ("1.0" and "nan" are not)."""
    return all(c.lstrip("+-").isdigit() for c in cells)


def _load_npy(path, what):
    try:
        return np.load(path, allow_pickle=False)
    except ValueError as err:
        if "allow_pickle" in str(err):
            raise DataError(f"argument --data: {path} holds Python objects ({what}); fedcore "
                            "reads numeric arrays only (no pickle)") from None
        raise DataError(f"argument --data: cannot read {path}: {err}") from None
    except (OSError, EOFError) as err:
        raise DataError(f"argument --data: cannot read {path}: {err}") from None


def _array_columns(path, X, key):
    """Columns of a data array: by field name (structured) or ``0``, ``1``, ... (2-D)."""
    if X.dtype.names:
        if X.ndim != 1:
            raise DataError(f"argument --data: {key} in {path} must be 1-D, got shape {X.shape}")
        columns = {name: np.asarray(X[name]) for name in X.dtype.names}
        for name, values in columns.items():
            if values.ndim != 1:
                raise DataError(f"argument --data: field {name!r} of {key} in {path} is not "
                                "one value per row")
    else:
        if X.ndim != 2:
            raise DataError(f"argument --data: {key} in {path} must be 2-D (rows x columns), "
                            f"got shape {X.shape}")
        columns = {str(j): X[:, j] for j in range(X.shape[1])}
    if not columns or len(next(iter(columns.values()))) == 0:
        raise DataError(f"argument --data: {key} in {path} has no rows or no columns "
                        f"(shape {X.shape})")
    return columns


def _table_from_columns(path, columns):
    numeric = set()
    for name, values in columns.items():
        if values.dtype.kind in "biu":
            columns[name] = values.astype(np.int64)
            numeric.add(name)
        elif values.dtype.kind == "f":
            columns[name] = values.astype(np.float64)
            numeric.add(name)
        elif values.dtype.kind in "US":
            columns[name] = values.astype(str).astype(object)
        else:
            raise DataError(f"argument --data: column {name!r} of {path} has dtype "
                            f"{values.dtype}; allowed: numbers or strings")
    return Table(path, columns, numeric)


def _read_npy(path):
    X = _load_npy(path, "an object array")
    return _table_from_columns(path, _array_columns(path, X, "the array"))


def _read_npz(path):
    try:
        archive = np.load(path, allow_pickle=False)
    except (ValueError, OSError, EOFError) as err:
        raise DataError(f"argument --data: cannot read {path} as .npz: {err}") from None
    if not hasattr(archive, "files"):
        raise DataError(f"argument --data: {path} is a single array, not an .npz archive; "
                        "name it .npy")
    with archive:
        keys = list(archive.files)
        if "X" in keys:
            key = "X"
        elif len(keys) == 1:
            key = keys[0]
        else:
            raise DataError(f"argument --data: {path} holds {len(keys)} arrays "
                            f"({_listing(keys)}); name the data array X")
        try:
            arrays = {k: archive[k] for k in keys}
        except ValueError as err:
            if "allow_pickle" in str(err):
                raise DataError(f"argument --data: {path} holds Python objects; fedcore reads "
                                "numeric arrays only (no pickle)") from None
            raise DataError(f"argument --data: cannot read {path}: {err}") from None
    columns = _array_columns(path, arrays[key], key)
    n = len(next(iter(columns.values())))
    for k, values in arrays.items():
        if k == key:
            continue
        if values.ndim != 1 or values.shape[0] != n:
            raise DataError(f"argument --data: array {k!r} in {path} has shape {values.shape}; "
                            f"besides {key}, an .npz may hold only columns of {n} values")
        if k in columns:
            raise DataError(f"argument --data: array {k!r} in {path} has the name of a "
                            f"column of {key}")
        columns[k] = values
    return _table_from_columns(path, columns)


def _first_non_number(values):
    for i, value in enumerate(values):
        try:
            float(value)
        except (TypeError, ValueError):
            return i, value
    return 0, values[0]


def _where(table, row):
    """Where row ``row`` is: a line of a CSV file, else a row number."""
    if table.lines is not None:
        return f"line {table.lines[row]} of {table.path}"
    return f"row {row} of {table.path}"


def _listing(names, limit=12):
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")
