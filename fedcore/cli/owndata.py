"""The ``fedcore`` subcommands on the user's own data: mufc, feca, f3km, coreset and remove.

Each fitting command reads one file (:mod:`.datafile`), builds a federation from it, fits, prints
a table on stdout, saves the model with ``model.save`` (``--output``) and writes the results as
JSON (``--json``). Global point ids are the 0-based row numbers of the file, so that
``fedcore remove --model FILE --ids ...`` can unlearn rows of it later. Bad options, unreadable
files and the library's refusals end the command with one line on stderr and exit code 2.
"""
import argparse
import contextlib
import json
import math
import os
import re
import sys
import time
import warnings

import numpy as np

from .datafile import DataError, read_table
from .report import compile_notice, progress, table

__all__ = ["COMMANDS", "add_parsers", "run_command"]

COMMANDS = ("mufc", "feca", "f3km", "coreset", "remove")

_HELP = {
    "mufc": "MUFC federated k-means with exact unlearning on your data (horizontal clients)",
    "feca": "FeCA one-shot federated k-means on your data (horizontal clients)",
    "f3km": "F3KM fair k-means (--groups), or DisBCDKM / F3KM over column groups (--vertical)",
    "coreset": "a vertical-FL coreset (VKMC for k-means, VRLR for ridge regression) and the "
               "model fitted on it",
    "remove": "unlearn points (row numbers of the data file) from a saved MUFC or "
              "UnlearnableKMeans model, exactly",
}

_DESCRIPTION = {
    "mufc": "Fit MUFC on a data file. Each row is one point; its id is its 0-based row number. "
            "The clients are given by a column (--client-column) or drawn (--partition).",
    "feca": "Fit FeCA on a data file. Each row is one point; the clients are given by a column "
            "(--client-column) or drawn (--partition).",
    "f3km": "Fair k-means (F3KM) on a data file with sensitive attribute columns (--groups). "
            "With --vertical the feature columns are split among parties (--parties or "
            "--splits): F3KM across parties with --groups (the last party holds the "
            "attributes), DisBCDKM without.",
    "coreset": "Build a vertical-FL coreset: the feature columns are split among parties "
               "(--parties or --splits). --kind vkmc: a k-means coreset, then k-means on it; "
               "--kind vrlr: a ridge regression coreset for --target (the last party holds it), "
               "then ridge regression on it.",
    "remove": "Remove points from a model saved by fedcore mufc --output (or by model.save of a "
              "MUFC or UnlearnableKMeans in Python), exactly: the result is distributed as a fit "
              "without them. The client holding each id is found from the model.",
}

# Why an option of another subcommand does not apply to one.
_WHY = {
    "mufc": "MUFC clusters horizontal clients",
    "feca": "FeCA clusters horizontal clients",
    "f3km": "f3km fits the whole table, or its column groups with --vertical",
    "coreset": "a coreset splits the feature columns among parties",
}

# dest: (flags, add_argument keywords, commands it applies to)
_OPTIONS = [
    ("data", ("--data",), dict(metavar="PATH", help="the data: CSV with a header line, .npy, "
                               "or .npz (the array named X, or the only array; other 1-D "
                               "arrays of the same length are extra columns). Columns of an "
                               "array are named 0, 1, ..."), COMMANDS[:4]),
    ("client_column", ("--client-column",), dict(metavar="NAME", help="the column naming the "
                                                 "client that holds each row (not a feature)"),
     ("mufc", "feca")),
    ("partition", ("--partition",), dict(choices=("iid", "dirichlet", "noniid"),
                                         help="draw the clients instead: iid; dirichlet "
                                              "(label skew, --alpha); noniid (at most "
                                              "--clusters-per-client labels a client); "
                                              "dirichlet and noniid need --label-column"),
     ("mufc", "feca")),
    ("n_clients", ("--n-clients",), dict(metavar="L", type="positive", help="number of clients "
                                         "with --partition"), ("mufc", "feca")),
    ("alpha", ("--alpha",), dict(type="positive_float", help="Dirichlet concentration with "
                                 "--partition dirichlet (default 0.5; smaller: more skew)"),
     ("mufc", "feca")),
    ("clusters_per_client", ("--clusters-per-client",),
     dict(metavar="N", type="positive", help="labels a client holds at most with --partition "
          "noniid (default 2)"), ("mufc", "feca")),
    ("label_column", ("--label-column",), dict(metavar="NAME", help="the column of true labels "
                                               "(not a feature; purity and NMI are reported); "
                                               "--partition noniid and dirichlet split by it"),
     ("mufc", "feca", "f3km", "coreset")),
    ("groups", ("--groups",), dict(metavar="COL", nargs="+", action="extend",
                                   help="sensitive attribute columns (not features): fair "
                                        "k-means keeps every group's share in every cluster "
                                        "near its share in the data"), ("f3km",)),
    ("vertical", ("--vertical",), dict(action="store_const", const=True,
                                       help="split the feature columns among parties (give "
                                            "--parties or --splits)"), ("f3km",)),
    ("parties", ("--parties",), dict(metavar="N", type="positive", help="split the feature "
                                     "columns into N near-equal groups, in file order"),
     ("f3km", "coreset")),
    ("splits", ("--splits",), dict(metavar="a,b,...", type="splits", help="the number of "
                                   "feature columns of each party, in file order"),
     ("f3km", "coreset")),
    ("kind", ("--kind",), dict(choices=("vkmc", "vrlr"), help="vkmc (default): k-means coreset; "
                               "vrlr: ridge regression coreset (needs --target)"), ("coreset",)),
    ("size", ("--size",), dict(metavar="M", type="positive", help="coreset size (rows drawn, "
                               "with replacement)"), ("coreset",)),
    ("target", ("--target",), dict(metavar="COL", help="the regression target column of "
                                   "--kind vrlr (not a feature)"), ("coreset",)),
    ("ridge_alpha", ("--ridge-alpha",), dict(metavar="A", type="nonnegative_float",
                                             help="ridge penalty A |theta|^2 of --kind vrlr "
                                                  "(default 1.0)"), ("coreset",)),
    ("n_clusters", ("--n-clusters",), dict(metavar="K", type="positive", help="number of "
                                           "clusters"), ("mufc", "feca", "f3km", "coreset")),
    ("client_clusters", ("--client-clusters",), dict(metavar="K'", type="positive",
                                                     help="centers each client computes "
                                                          "(default K)"), ("mufc", "feca")),
    ("insecure", ("--insecure",), dict(action="store_const", const=True,
                                       help="plaintext sum instead of SCMA secure aggregation "
                                            "(same result)"), ("mufc",)),
    ("radius", ("--radius",), dict(choices=("empirical", "theoretical"),
                                   help="FeCA's radius rule (default empirical)"), ("feca",)),
    ("delta", ("--delta",), dict(type="fraction", help="fairness slack in [0, 1): every group's "
                                 "share in a cluster within [(1-delta), 1/(1-delta)] times its "
                                 "share in the data (default 0.2)"), ("f3km",)),
    ("block_size", ("--block-size",), dict(metavar="N", type="positive", help="rows per block "
                                           "of a coordinate-descent sweep (default n/4)"),
     ("f3km",)),
    ("drop", ("--drop",), dict(metavar="COL", nargs="+", action="extend",
                               help="columns that are not features (ids, free text...)"),
     COMMANDS[:4]),
    ("seed", ("--seed",), dict(type=int, help="random seed (default 0)"), COMMANDS[:4]),
    ("output", ("--output",), dict(metavar="PATH", help="save the fitted model (.npz; read it "
                                   "with fedcore.load)"), COMMANDS[:4]),
    ("json", ("--json",), dict(metavar="PATH", help="write the results as JSON: centers, sizes, "
                               "objective, communication, timings"), COMMANDS[:4]),
]


def _positive(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text!r}")
    return value


def _float(text, low, high=None, include_low=True):
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    ok = math.isfinite(value) and (value >= low if include_low else value > low) and \
        (high is None or value < high)
    if not ok:
        bound = f"{'>=' if include_low else '>'} {low}" + ("" if high is None else
                                                             f" and < {high}")
        raise argparse.ArgumentTypeError(f"must be a number {bound}, got {text!r}")
    return value


def _splits(text):
    try:
        widths = [int(w) for w in text.split(",")]
    except ValueError:
        widths = []
    if not widths or min(widths) < 1:
        raise argparse.ArgumentTypeError(f"must be feature column counts >= 1 separated by "
                                         f"commas, such as 2,3,1; got {text!r}")
    return widths


_TYPES = {"positive": _positive, "splits": _splits,
          "positive_float": lambda t: _float(t, 0.0, include_low=False),
          "nonnegative_float": lambda t: _float(t, 0.0),
          "fraction": lambda t: _float(t, 0.0, 1.0)}


def add_parsers(sub):
    """Add the own-data subcommands to the subparsers ``sub``; returns {command: parser}.

    Every fitting command accepts every option of the others (hidden from its help) so that an
    option that does not apply is refused with the reason instead of "unrecognized".
    """
    parsers = {}
    for command in COMMANDS[:4]:
        p = sub.add_parser(command, help=_HELP[command], description=_DESCRIPTION[command])
        for dest, flags, kwargs, applies in _OPTIONS:
            kwargs = dict(kwargs)
            if isinstance(kwargs.get("type"), str):
                kwargs["type"] = _TYPES[kwargs["type"]]
            if command not in applies:
                kwargs["help"] = argparse.SUPPRESS
            p.add_argument(*flags, dest=dest, default=None, required=dest == "data", **kwargs)
        parsers[command] = p
    p = sub.add_parser("remove", help=_HELP["remove"], description=_DESCRIPTION["remove"])
    p.add_argument("--model", required=True, metavar="PATH", help="the saved model (.npz)")
    p.add_argument("--ids", required=True, nargs="+", type=int, metavar="ID",
                   help="the points to remove: 0-based row numbers of the data file")
    p.add_argument("--output", metavar="PATH", help="save the model here (default: overwrite "
                                                    "--model)")
    p.add_argument("--json", metavar="PATH", help="write what was done as JSON")
    parsers["remove"] = p
    return parsers


def run_command(args, parser):
    """Run the own-data subcommand ``args.command``; returns the exit code (0).

    Problems with the data, the files or the options the library refuses exit with code 2 and
    one line ``fedcore <command>: error: <message>`` on stderr.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            if args.command == "remove":
                result = _remove(args, parser)
            else:
                _check_options(args, parser)
                result = _fit(args)
        except DataError as err:
            _print_warnings(parser, caught)
            parser.exit(2, f"{parser.prog}: error: {err}\n")
    _print_warnings(parser, caught)
    print(table(result["rows"]))
    return 0


def _print_warnings(parser, caught):
    for w in caught:
        print(f"{parser.prog}: warning: {w.message}", file=sys.stderr)


# --------------------------------------------------------------------------- options
def _flag(dest):
    return next(flags[0] for d, flags, _, _ in _OPTIONS if d == dest)


def _check_options(args, parser):
    """Refuse (exit 2, one line) what is missing, conflicting or does not apply."""
    command = args.command

    def refuse(dest, why):
        parser.error(f"argument {_flag(dest)}: not allowed {why}")

    for dest, _, _, applies in _OPTIONS:
        if getattr(args, dest) is not None and command not in applies:
            refuse(dest, f"with fedcore {command} ({_WHY[command]})")
    if command in ("mufc", "feca"):
        _check_horizontal(args, parser, refuse)
    elif command == "f3km":
        if args.parties is not None and args.splits is not None:
            refuse("splits", "with --parties (give one of them)")
        if args.vertical and args.parties is None and args.splits is None:
            parser.error("argument --vertical: give the parties' columns with --parties N or "
                         "--splits a,b,...")
        if args.groups is None and not _is_vertical(args):
            parser.error("argument --groups: required without --vertical (the sensitive "
                         "attribute columns of fair k-means; --vertical without --groups runs "
                         "DisBCDKM)")
        if args.groups is None and args.delta is not None:
            refuse("delta", "without --groups (DisBCDKM has no fairness constraint)")
    else:   # coreset
        if args.parties is not None and args.splits is not None:
            refuse("splits", "with --parties (give one of them)")
        if args.parties is None and args.splits is None:
            parser.error("one of the arguments --parties --splits is required (a coreset "
                         "splits the feature columns among parties)")
        if args.size is None:
            parser.error("the following arguments are required: --size")
        if (args.kind or "vkmc") == "vkmc":
            for dest in ("target", "ridge_alpha"):
                if getattr(args, dest) is not None:
                    refuse(dest, "with --kind vkmc (only with --kind vrlr)")
        else:
            for dest in ("n_clusters", "label_column"):
                if getattr(args, dest) is not None:
                    refuse(dest, "with --kind vrlr (a regression coreset has no clusters)")
            if args.target is None:
                parser.error("argument --target: required with --kind vrlr (the column to "
                             "regress on)")
    if args.n_clusters is None and not (command == "coreset" and args.kind == "vrlr"):
        parser.error("the following arguments are required: --n-clusters")
    for dest in ("output", "json"):
        path = getattr(args, dest)
        if path is not None:
            folder = os.path.dirname(os.path.abspath(path))
            if not os.path.isdir(folder):
                parser.error(f"argument {_flag(dest)}: no such directory: {folder}")
            if os.path.isdir(path):
                parser.error(f"argument {_flag(dest)}: {path} is a directory")


def _check_horizontal(args, parser, refuse):
    if args.client_column is not None and args.partition is not None:
        refuse("partition", "with --client-column (the column already says which client "
                            "holds each row)")
    if args.client_column is None and args.partition is None:
        parser.error("one of the arguments --client-column --partition is required (which "
                     "client holds each row)")
    if args.client_column is not None:
        for dest in ("n_clients", "alpha", "clusters_per_client"):
            if getattr(args, dest) is not None:
                refuse(dest, "with --client-column (only with --partition)")
        return
    if args.n_clients is None:
        parser.error(f"argument --n-clients: required with --partition {args.partition}")
    if args.partition in ("noniid", "dirichlet") and args.label_column is None:
        parser.error(f"argument --label-column: required with --partition {args.partition} "
                     "(the split follows the true labels)")
    if args.alpha is not None and args.partition != "dirichlet":
        refuse("alpha", f"with --partition {args.partition} (only with --partition dirichlet)")
    if args.clusters_per_client is not None and args.partition != "noniid":
        refuse("clusters_per_client", f"with --partition {args.partition} (only with "
                                      "--partition noniid)")


def _is_vertical(args):
    return bool(args.vertical) or args.parties is not None or args.splits is not None


# Library argument names -> the options that set them, for the library's messages.
_ARGUMENTS = {"n_clusters": "--n-clusters", "client_clusters": "--client-clusters",
              "n_clients": "--n-clients", "clusters_per_client": "--clusters-per-client",
              "m": "--size", "delta": "--delta", "block_size": "--block-size",
              "splits": "--splits", "labels": "--label-column", "client_labels": "--client-column",
              "groups": "--groups", "X": "--data", "ids": "--ids", "client_id": "--ids",
              "random_state": "--seed"}


@contextlib.contextmanager
def _library(extra=None, prefix=""):
    """Report the library's ValueError / TypeError as a :class:`DataError`, naming the option."""
    names = dict(_ARGUMENTS, **(extra or {}))
    try:
        yield
    except (ValueError, TypeError) as err:
        raise DataError(prefix + _option_message(str(err), names)) from None


def _option_message(message, names):
    """The library's "Argument 'n_clusters' must ..." as "argument --n-clusters: must ..."."""
    head = re.match(r"Arguments? '(\w+)'(=\S+)? ?", message)
    if head and head.group(1) in names:
        value = (head.group(2) or "=")[1:]
        return f"argument {names[head.group(1)]}: {value + ' ' if value else ''}" + \
            message[head.end():]
    return re.sub(r"[Aa]rgument '(\w+)'", lambda m: f"argument {names[m.group(1)]}"
                  if m.group(1) in names else m.group(0), message)


# --------------------------------------------------------------------------- fitting
def _fit(args):
    import fedcore

    t_start = time.perf_counter()
    seed = 0 if args.seed is None else args.seed
    data = read_table(args.data)
    special = {}
    for dest in ("client_column", "label_column", "target", "groups", "drop"):
        value = getattr(args, dest)
        for name in ([] if value is None else [value] if isinstance(value, str) else value):
            if name not in data.columns:
                data.column(name, _flag(dest))      # raises: no such column
            if name in special:
                raise DataError(f"argument {_flag(dest)}: column {name!r} is already given "
                                f"to {special[name]}")
            special[name] = _flag(dest)
    X, features = data.features(special)
    labels = None if args.label_column is None else data.column(args.label_column,
                                                                "--label-column")
    t_read = time.perf_counter() - t_start
    result = {"command": args.command, "seed": seed,
              "data": {"path": args.data, "n_samples": int(X.shape[0]),
                       "n_features": int(X.shape[1]), "features": features}}
    fit = {"mufc": _fit_horizontal, "feca": _fit_horizontal, "f3km": _fit_f3km,
           "coreset": _fit_coreset}[args.command]
    compile_notice()
    t0 = time.perf_counter()
    model, rows = fit(args, data, X, features, labels, seed, result)
    result["timings"] = {"read_s": t_read, "fit_s": time.perf_counter() - t0}
    head = [("data", f"{args.data}: {X.shape[0]} rows, {X.shape[1]} feature columns "
                     f"({_names(features)})")]
    rows = head + rows
    if labels is not None and "labels_pred" in result:
        pred = result.pop("labels_pred")
        result["evaluation"] = {"label_column": args.label_column,
                                "purity": fedcore.metrics.purity(labels, pred),
                                "nmi": fedcore.metrics.nmi(labels, pred)}
        rows.append((f"against {args.label_column}",
                     f"purity {_num(result['evaluation']['purity'], 4)}, "
                     f"NMI {_num(result['evaluation']['nmi'], 4)}"))
    result.pop("labels_pred", None)
    rows.append(("fit time", f"{result['timings']['fit_s']:.2f} s (reading the file "
                             f"{t_read:.2f} s)"))
    result["output"] = args.output
    if args.output is not None:
        t0 = time.perf_counter()
        _save(model, args.output, "--output")
        result["timings"]["save_s"] = time.perf_counter() - t0
        rows.append(("model", f"saved to {args.output} ({type(model).__name__}; "
                              "read it with fedcore.load)"))
    result["timings"]["total_s"] = time.perf_counter() - t_start
    if args.json is not None:
        _write_json(result, args.json)
        rows.append(("results", f"written to {args.json}"))
    result["rows"] = rows
    return result


def _fitting(label, fit):
    """``fit()`` as one step of progress on stderr."""
    with progress(1, label) as bar:
        out = fit()
        bar.update()
    return out


def _fit_horizontal(args, data, X, features, labels, seed, result):
    import fedcore
    from ..metrics import inertia

    k = args.n_clusters
    kp = k if args.client_clusters is None else args.client_clusters
    if args.client_column is not None:
        owners = data.column(args.client_column, "--client-column")
        names, sizes = np.unique(owners, return_counts=True)
        _check_client_sizes(args, [f"{_plain(v)!r} (column {args.client_column!r})"
                                   for v in names], sizes, kp)
        with _library():
            fed = fedcore.HorizontalFederation.from_labels(X, owners, labels=labels)
        split = f"by column {args.client_column!r}"
        clients = [_plain(v) for v in names]
    else:
        scheme = args.partition
        extra = {}
        if scheme == "noniid":
            extra["clusters_per_client"] = args.clusters_per_client or 2
        if scheme == "dirichlet":
            extra["alpha"] = 0.5 if args.alpha is None else args.alpha
        with _library({"alpha": "--alpha"}):
            fed = fedcore.partition(X, args.n_clients, scheme, labels=labels,
                                    random_state=seed, **extra)
        split = f"drawn by --partition {scheme}" + "".join(
            f" --{k_.replace('_', '-')} {v}" for k_, v in extra.items())
        clients = list(range(fed.n_clients))
        _check_client_sizes(args, [str(l) for l in clients], fed.client_sizes, kp)
    sizes = fed.client_sizes
    result["federation"] = {"kind": "horizontal", "split": split, "n_clients": fed.n_clients,
                            "clients": clients, "client_sizes": sizes}
    if args.command == "mufc":
        secure = not args.insecure
        model = fedcore.MUFC(k, client_clusters=kp, secure=secure, random_state=seed)
        method = f"MUFC, K = {k}, K' = {kp}, {'SCMA (secure)' if secure else 'plaintext sum'}"
    else:
        radius = args.radius or "empirical"
        model = fedcore.FeCA(k, client_clusters=kp, radius=radius, random_state=seed)
        method = f"FeCA, K = {k}, K' = {kp}, radius {radius}"
    with _library():
        _fitting(f"fitting {type(model).__name__}", lambda: model.fit(fed))
        pred = model.predict(X)
        objective = {"inertia": inertia(X, model.cluster_centers_)}
        if args.command == "mufc":
            objective["federated_inertia"] = model.federated_inertia()
    centers = model.cluster_centers_
    result.update(method=type(model).__name__, params=model.get_params(),
                  n_clusters=int(centers.shape[0]), centers=centers,
                  sizes=np.bincount(pred, minlength=centers.shape[0]), objective=objective,
                  comm=_comm(model.comm_), labels_pred=pred)
    if args.command == "mufc":
        result["modeled_latency_s"] = model.fit_report_.modeled_latency
    rows = [("federation", f"{fed.n_clients} clients {split} ({_range(sizes)} rows a client)"),
            ("method", method)]
    if centers.shape[0] < k:
        rows.append(("centers found", f"{centers.shape[0]} of K = {k}"))
    obj = f"inertia {_num(objective['inertia'])} (every row to its nearest center)"
    if "federated_inertia" in objective:
        obj += f"; federated {_num(objective['federated_inertia'])}"
    rows += [("objective", obj), ("cluster sizes", _sizes(result["sizes"])),
             ("communication", _comm_text(model.comm_))]
    return model, rows


def _check_client_sizes(args, names, sizes, kp):
    """Refuse a client with fewer rows than the K' centers it computes."""
    small = np.flatnonzero(sizes < kp)
    if small.size:
        i = int(small[0])
        option = "--client-clusters" if args.client_clusters is not None else "--n-clusters"
        raise DataError(f"argument {option}: client {names[i]} holds {int(sizes[i])} row(s), "
                        f"fewer than the K' = {kp} centers a client computes; give "
                        f"--client-clusters {int(sizes.min())} or less")


def _vertical(args, X, features, y=None, groups=None):
    """The VerticalFederation of --parties / --splits, and its parties' column names."""
    import fedcore

    d = X.shape[1]
    if args.splits is not None:
        if sum(args.splits) != d:
            raise DataError(f"argument --splits: the parties' column counts sum to "
                            f"{sum(args.splits)}, but the data has {d} feature columns "
                            f"({_names(features)})")
        splits = list(args.splits)
    else:
        if args.parties > d:
            raise DataError(f"argument --parties: {args.parties} parties need at least "
                            f"{args.parties} feature columns, the data has {d}")
        splits = [len(b) for b in np.array_split(np.arange(d), args.parties)]
    party_groups = None
    if groups is not None:
        party_groups = [None] * (len(splits) - 1) + [groups]
    with _library():
        vfed = fedcore.VerticalFederation.from_columns(X, splits, y=y, groups=party_groups)
    edges = np.cumsum([0] + splits)
    parties = [features[edges[j]:edges[j + 1]] for j in range(len(splits))]
    return vfed, parties


def _fit_f3km(args, data, X, features, labels, seed, result):
    import fedcore

    k = args.n_clusters
    block = "auto" if args.block_size is None else args.block_size
    groups = None
    if args.groups is not None:
        groups = [data.column(name, "--groups") for name in args.groups]
    delta = 0.2 if args.delta is None else args.delta
    rows = []
    if _is_vertical(args):
        vfed, parties = _vertical(args, X, features, groups=groups)
        result["federation"] = {"kind": "vertical", "n_parties": vfed.n_parties,
                                "splits": vfed.splits, "parties": parties}
        rows.append(("federation", f"{vfed.n_parties} parties {_splits_text(parties)}"
                     + ("" if groups is None else f"; the last also {_names(args.groups)}")))
        if groups is None:
            model = fedcore.BCDKM(k, block_size=block, random_state=seed)
            method = f"DisBCDKM, K = {k}"
        else:
            model = fedcore.FairKMeans(k, delta=delta, block_size=block, random_state=seed)
            method = f"F3KM (federated fair k-means), K = {k}, delta = {delta}"
        with _library():
            _fitting(f"fitting {type(model).__name__}", lambda: model.fit(vfed))
    else:
        result["federation"] = None
        rows.append(("federation", "none: one table on one machine (--vertical splits the "
                                   "columns among parties)"))
        model = fedcore.FairKMeans(k, delta=delta, block_size=block, random_state=seed)
        method = f"F3KM fair k-means, K = {k}, delta = {delta}"
        with _library():
            _fitting("fitting FairKMeans", lambda: model.fit(X, groups=groups))
    centers = model.cluster_centers_
    objective = {"sse": model.inertia_}
    obj = f"SSE {_num(model.inertia_)}"
    if groups is not None:
        objective.update(violation=model.violation_, balance=model.balance_)
        obj += (f"; fairness violation {_num(model.violation_)}, balance "
                f"{' '.join(_num(b, 3) for b in model.balance_)}")
    comm = getattr(model, "comm_", None)
    result.update(method=type(model).__name__, params=model.get_params(),
                  n_clusters=int(centers.shape[0]), centers=centers,
                  sizes=np.bincount(model.labels_, minlength=centers.shape[0]),
                  objective=objective, comm=None if comm is None else _comm(comm),
                  n_iter=model.n_iter_, labels_pred=model.labels_)
    if groups is not None:
        result["groups"] = args.groups
    rows += [("method", method), ("objective", obj),
             ("cluster sizes", _sizes(result["sizes"])),
             ("communication", "none (one machine)" if comm is None else _comm_text(comm))]
    return model, rows


def _fit_coreset(args, data, X, features, labels, seed, result):
    import fedcore
    from ..algorithms.vfl import gather
    from ..metrics import inertia

    kind = args.kind or "vkmc"
    y = None
    if kind == "vrlr":
        if args.target not in data.numeric:
            raise DataError(f"argument --target: column {args.target!r} is not numeric; "
                            "VRLR regresses on a number")
        y = data.column(args.target, "--target").astype(np.float64)
    vfed, parties = _vertical(args, X, features, y=y)
    result["federation"] = {"kind": "vertical", "n_parties": vfed.n_parties,
                            "splits": vfed.splits, "parties": parties}
    rows = [("federation", f"{vfed.n_parties} parties {_splits_text(parties)}"
             + ("" if y is None else f"; the last also {args.target!r}"))]
    m = args.size
    names = {"m": "--size", "alpha": "--ridge-alpha"}
    if kind == "vkmc":
        k = args.n_clusters
        with _library(names):
            core = _fitting("building the VKMC coreset",
                            lambda: fedcore.vkmc_coreset(vfed, m, k, random_state=seed))
            Xc, _, weights, comm = gather(vfed, core)
            model = fedcore.KMeans(k, n_init=10, random_state=seed)
            _fitting("k-means on the coreset",
                     lambda: model.fit(Xc, sample_weight=weights))
            pred = model.predict(X)
            full = inertia(X, model.cluster_centers_)
        centers = model.cluster_centers_
        objective = {"inertia": full, "coreset_inertia": model.inertia_}
        result.update(method="KMeans", params=model.get_params(),
                      n_clusters=int(centers.shape[0]), centers=centers,
                      sizes=np.bincount(pred, minlength=centers.shape[0]),
                      objective=objective, labels_pred=pred)
        solved = (f"k-means (K = {k}, best of 10 k-means++ + Lloyd runs) on the coreset's "
                  "rows, uploaded by the parties")
        rows_obj = [("objective", f"inertia on all rows {_num(full)}; on the weighted "
                                  f"coreset {_num(model.inertia_)}"),
                    ("cluster sizes", _sizes(result["sizes"]))]
    else:
        alpha = 1.0 if args.ridge_alpha is None else args.ridge_alpha
        with _library(names):
            core = _fitting("building the VRLR coreset",
                            lambda: fedcore.vrlr_coreset(vfed, m, random_state=seed))
            model = fedcore.VerticalRidge(alpha=alpha)
            _fitting("ridge regression on the coreset", lambda: model.fit(vfed, core))
            comm = model.comm_
            residual = X @ model.coef_ - y
        loss = float(residual @ residual + alpha * model.coef_ @ model.coef_)
        mse = float(residual @ residual / X.shape[0])
        objective = {"ridge_loss": loss, "mse": mse}
        result.update(method="VerticalRidge", params=model.get_params(), target=args.target,
                      coef=model.coef_, objective=objective)
        solved = f"ridge regression (penalty {alpha} |theta|^2) on the coreset, solved centrally"
        rows_obj = [("objective", f"ridge loss on all rows {_num(loss)} (mean squared error "
                                  f"{_num(mse)})"),
                    ("coefficients", " ".join(_num(c, 4) for c in model.coef_))]
    compressed = core.compress()
    result["coreset"] = {"kind": kind, "size": len(core),
                         "distinct_rows": int(compressed.indices.shape[0]),
                         "indices": compressed.indices, "weights": compressed.weights,
                         "comm": _comm(core.comm)}
    result["comm"] = _comm(comm)
    rows += [("coreset", f"{kind.upper()}, {len(core)} draws, {compressed.indices.shape[0]} "
                         f"distinct rows, weights summing to {_num(core.weights.sum())}"),
             ("fitted on it", solved)] + rows_obj
    rows.append(("communication", _comm_text(comm) + " (coreset and upload)"))
    return model, rows


# --------------------------------------------------------------------------- remove
def _remove(args, parser):
    import fedcore
    from ..algorithms import MUFC, UnlearnableKMeans

    t_start = time.perf_counter()
    for path, option in ((args.model, "--model"), (args.output, "--output"),
                         (args.json, "--json")):
        if path is None:
            continue
        if option == "--model" and not os.path.isfile(path):
            parser.error(f"argument --model: no such file: {path}")
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            parser.error(f"argument {option}: no such directory: {folder}")
    ids = list(args.ids)
    seen = set()
    for i in ids:
        if i in seen:
            parser.error(f"argument --ids: id {i} is given twice")
        seen.add(i)
    with _library(prefix="argument --model: "):
        model = fedcore.load(args.model)
    name = type(model).__name__
    if not isinstance(model, (MUFC, UnlearnableKMeans)):
        raise DataError(f"argument --model: {args.model} holds a {name} model, which cannot "
                        "unlearn points; fedcore remove takes a MUFC model (fedcore mufc "
                        "--output) or an UnlearnableKMeans model")
    if not hasattr(model, "cluster_centers_"):
        raise DataError(f"argument --model: the {name} model in {args.model} is not fitted")
    t_load = time.perf_counter() - t_start
    if isinstance(model, MUFC):
        requests, rows = _remove_mufc(model, ids, args.model)
    else:
        requests, rows = _remove_unlearnable(model, ids, args.model)
    out = args.output or args.model
    t0 = time.perf_counter()
    _save(model, out, "--output")
    t_save = time.perf_counter() - t0
    left = _points_left(model)
    rows += [("points left", str(left)), ("saved to", out)]
    result = {"command": "remove", "model": args.model, "class": name, "ids": ids,
              "requests": requests, "n_samples_left": left, "centers": model.cluster_centers_,
              "output": out,
              "timings": {"load_s": t_load, "remove_s": sum(r["wall_time_s"] for r in requests),
                          "save_s": t_save, "total_s": time.perf_counter() - t_start}}
    if args.json is not None:
        _write_json(result, args.json)
        rows.append(("results", f"written to {args.json}"))
    result["rows"] = rows
    return result


def _points_left(model):
    if hasattr(model, "aggregate_"):
        return int(model.aggregate_[1].sum())
    return int(model.n_samples_)


def _missing(ids, held, path):
    missing = [i for i in ids if i not in held]
    if missing:
        shown = " ".join(str(i) for i in missing[:10]) + (" ..." if len(missing) > 10 else "")
        raise DataError(f"argument --ids: {shown} {'is' if len(missing) == 1 else 'are'} not "
                        f"among the points of the model in {path} (ids are 0-based row numbers "
                        f"of the data file; an id already removed is gone)")


def _remove_mufc(model, ids, path):
    """One ``MUFC.remove`` request per client holding some of ``ids``, clients in order."""
    owner = {}
    for l in model.client_ids_:
        for i in model.client_model(l).sample_ids_.tolist():
            owner[i] = l
    _missing(ids, owner, path)
    k = model.cluster_centers_.shape[0]
    left = _points_left(model) - len(ids)
    if left < k:
        raise DataError(f"argument --ids: removing {len(ids)} point(s) would leave {left} in "
                        f"the federation, fewer than the model's {k} clusters")
    by_client = {}
    for i in ids:
        by_client.setdefault(owner[i], []).append(i)
    for l, batch in by_client.items():
        client = model.client_model(l)
        kp = client.cluster_centers_.shape[0]
        if client.n_samples_ - len(batch) < kp:
            raise DataError(f"argument --ids: client {l} holds {client.n_samples_} point(s); "
                            f"removing {len(batch)} would leave fewer than its K' = {kp} "
                            "centers")
    requests = []
    head = (f"{path} (MUFC, K = {k}, {model.n_clients_} clients, {_points_left(model)} "
            "points)")
    rows = [("model", head), ("request", "client", "points", "client re-seeded",
                              "latency (slowest client + server)")]
    clients = sorted(by_client)
    compile_notice()
    with progress(len(clients), "removal requests") as bar:
        for r, l in enumerate(clients):
            batch = by_client[l]
            t0 = time.perf_counter()
            with _library():
                report = model.remove(l, batch)
            wall = time.perf_counter() - t0
            bar.update()
            requests.append({"client": l, "ids": batch,
                             "client_retrained": report.client_retrained,
                             "server_recomputed": report.server_recomputed,
                             "modeled_latency_s": report.modeled_latency, "wall_time_s": wall})
            rows.append((str(r + 1), str(l), str(len(batch)),
                         "yes" if report.client_retrained else "no",
                         f"{report.modeled_latency * 1e3:.2f} ms"))
    rows.append(("server", "re-clustered the new sum after every request (exact unlearning)"
                 if all(r["server_recomputed"] for r in requests) else
                 "kept its centers where no client re-seeded"))
    rows.append(("note", "the first request's latency includes loading the compiled kernels "
                         "(once a process)"))
    return requests, rows


def _remove_unlearnable(model, ids, path):
    _missing(ids, set(model.sample_ids_.tolist()), path)
    k = model.cluster_centers_.shape[0]
    if model.n_samples_ - len(ids) < k:
        raise DataError(f"argument --ids: removing {len(ids)} point(s) would leave "
                        f"{model.n_samples_ - len(ids)}, fewer than the model's {k} clusters")
    rows = [("model", f"{path} (UnlearnableKMeans, K = {k}, {model.n_samples_} points)")]
    compile_notice()
    t0 = time.perf_counter()
    with _library():
        outcome = model.remove(ids)
    wall = time.perf_counter() - t0
    if outcome.retrained:
        what = (f"yes: a removed point was center {outcome.restart_position}; centers "
                f"{outcome.restart_position} to {k - 1} redrawn")
    else:
        what = "no: no removed point was a center (centers kept)"
    rows += [("removed", f"{outcome.n_removed} point(s)"), ("retrained", what),
             ("latency", f"{wall * 1e3:.2f} ms")]
    requests = [{"ids": ids, "retrained": outcome.retrained,
                 "restart_position": outcome.restart_position, "wall_time_s": wall}]
    return requests, rows


# --------------------------------------------------------------------------- output
def _save(model, path, option):
    try:
        with _library(prefix=f"argument {option}: "):
            model.save(path)
    except OSError as err:
        raise DataError(f"argument {option}: cannot write {path}: {err.strerror or err}") \
            from None


def _write_json(result, path):
    try:
        with open(path, "w") as f:
            json.dump(_plain(result), f, indent=2, allow_nan=False)
            f.write("\n")
    except OSError as err:
        raise DataError(f"argument --json: cannot write {path}: {err.strerror or err}") \
            from None


def _plain(value):
    """``value`` as JSON: lists for arrays, Python numbers, null for NaN and infinity."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items() if k != "rows"}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return [_plain(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return str(value)


def _comm(ledger):
    summary = ledger.summary()
    summary["bits"] = int(ledger.n_bits)
    summary["messages"] = int(ledger.n_messages)
    return summary


def _comm_text(ledger):
    s = ledger.summary()
    parts = [f"{s['rounds']} round{'s' if s['rounds'] != 1 else ''}"]
    for direction in ("up", "down", "peer"):
        d = s[direction]
        if d["messages"]:
            parts.append(f"{direction} {d['messages']} messages, {_bits(d['bits'])}")
    return "; ".join(parts)


def _bits(bits):
    for unit, size in (("MB", 8e6), ("kB", 8e3)):
        if bits >= size:
            return f"{bits / size:.1f} {unit}"
    return f"{bits} bits"


def _num(x, digits=6):
    """A number for a table: "-" when not finite (never "nan")."""
    x = float(x)
    return f"{x:.{digits}g}" if math.isfinite(x) else "-"


def _sizes(sizes):
    return " ".join(str(int(s)) for s in sizes)


def _range(sizes):
    lo, hi = int(np.min(sizes)), int(np.max(sizes))
    return str(lo) if lo == hi else f"{lo} to {hi}"


def _names(names, limit=8):
    shown = ", ".join(str(n) for n in names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def _splits_text(parties):
    return "(" + "; ".join(f"{j}: {_names(cols, 4)}" for j, cols in enumerate(parties)) + ")"
