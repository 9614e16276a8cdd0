"""Bit-exact fingerprints of fedcore's estimators and public functions, to guard refactors.

    python benchmarks/fingerprints.py record OUT.json [--only SUBSTR]
    python benchmarks/fingerprints.py compare A.json B.json

``record`` runs a table of small seeded configurations (every estimator, the metrics, the dataset
generators, SCMA, the federation containers) and writes, for each configuration
``"<estimator>/<description>"``, a dict of named entries: arrays as the sha256 of their bytes with
dtype and shape, floats as ``repr``, ints exactly, communication ledgers as totals per direction,
round and message kind, removal reports by their public fields (stage timings by name only).
A configuration that raises records the exception's type and message, after the entries it had
already produced, so refusals are fingerprinted too; warnings are recorded by category and text.
``compare`` prints every key whose entries differ or that one recording lacks, then
"N configurations, M identical, K differ, J missing"; it exits with 1 unless all are identical.

Only public names are used: ``fedcore.<name>`` for ``fedcore.__all__`` and the ``__all__`` of
``fedcore.datasets``, ``fedcore.metrics``, ``fedcore.secagg`` and ``fedcore.federation``. The
base data are drawn with NumPy directly, so a change in a dataset generator or partitioner shows
under its own keys only. SCMA is fingerprinted by its decoded sums, never by masked messages.
"""
import argparse
import dataclasses
import hashlib
import json
import sys
import time
import warnings

import numpy as np

import fedcore
from fedcore import datasets, metrics
from fedcore.federation import CommLedger

CONFIGS = {}
SEEDS = range(4)  # seeds of the main grid of every estimator


def add(key, fn, *args, **kwargs):
    """Register configuration ``key``: ``fn(out, *args, **kwargs)`` fills the dict ``out``."""
    assert key not in CONFIGS, key
    CONFIGS[key] = lambda out: fn(out, *args, **kwargs)


def desc(**kw):
    return ",".join(f"{k}={v}" for k, v in kw.items())


# ---------------------------------------------------------------------------- fingerprints
def array_fp(a):
    a = np.asarray(a)
    raw = repr(a.tolist()).encode() if a.dtype.kind == "O" else np.ascontiguousarray(a).tobytes()
    return {"sha256": hashlib.sha256(raw).hexdigest(), "dtype": str(a.dtype),
            "shape": list(a.shape)}


def ledger_fp(ledger):
    """Totals per round and direction, and per message kind and direction: [messages, elements,
    bits] each, keyed in a deterministic order."""
    rounds, kinds = {}, {}
    for m in ledger.messages:
        for table, key in ((rounds, f"{m.round:04d}/{m.direction}"),
                           (kinds, f"{m.kind}/{m.direction}")):
            tot = table.setdefault(key, [0, 0, 0])
            tot[0] += 1
            tot[1] += m.n_elements
            tot[2] += m.n_bits
    return {"summary": ledger.summary(), "per_round": rounds}, kinds


def fp(x):
    """JSON-able exact fingerprint of a value."""
    if isinstance(x, CommLedger):
        return ledger_fp(x)[0]
    if x is None or isinstance(x, str):
        return x
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        return repr(float(x))
    if isinstance(x, np.ndarray):
        return array_fp(x)
    if isinstance(x, dict):
        return {str(k): fp(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [fp(v) for v in x]
    if isinstance(x, slice):
        return [x.start, x.stop, x.step]
    return {"type": type(x).__name__, **{k: fp(v) for k, v in public_fields(x).items()}}


def public_fields(obj):
    """Public fields of a result object, without wall-clock ``timings`` (see :func:`put`)."""
    if dataclasses.is_dataclass(obj):
        fields = {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    else:
        fields = {k: v for k, v in vars(obj).items() if not k.startswith("_")}
    fields.pop("timings", None)
    return fields


def put(out, prefix, name, value):
    """Store ``value`` as entry ``prefix + name``; a ledger as the two entries ``<prefix>ledger``
    and ``<prefix>ledger_kinds``, and a report's stage timings by name in ``<entry>.stages``, so
    that a change in the communication or in the stages measured is attributable."""
    if isinstance(value, CommLedger):
        out[prefix + "ledger"], out[prefix + "ledger_kinds"] = ledger_fp(value)
        return
    out[prefix + name] = value
    if isinstance(getattr(value, "timings", None), dict):
        out[prefix + name + ".stages"] = sorted(value.timings)


def snapshot(out, model, prefix=""):
    """Every public fitted attribute (name ending in ``_``, properties included)."""
    names = {k for k in vars(model) if k.endswith("_") and not k.startswith("_")}
    names |= {k for k in dir(type(model)) if k.endswith("_") and not k.startswith("_")
              and isinstance(getattr(type(model), k), property)}
    for name in sorted(names):
        try:
            value = getattr(model, name)
        except Exception as exc:  # noqa: BLE001 -- a refusing property is fingerprinted too
            value = error_fp(exc)
        put(out, prefix, name, value)


def error_fp(exc):
    return {"error": type(exc).__name__, "message": str(exc)}


# ---------------------------------------------------------------------------- data (NumPy only)
def blobs(n, d, k, seed, *, spread=0.05, dtype=np.float64):
    rng = np.random.default_rng(1000 + seed)
    y = rng.integers(k, size=n)
    X = rng.random((k, d))[y] + spread * rng.standard_normal((n, d))
    return X.astype(dtype), y


def horizontal(X, y, n_clients, seed, noniid=False):
    """Clients from row blocks: random rows (iid) or rows sorted by label (label skew)."""
    order = np.argsort(y, kind="stable") if noniid else \
        np.random.default_rng(2000 + seed).permutation(X.shape[0])
    parts = np.array_split(order, n_clients)
    return fedcore.HorizontalFederation([X[p] for p in parts], parts, labels=y)


def colored(n, seed, n_attributes=2):
    """Sensitive attributes correlated with the blobs' labels."""
    X, y = blobs(n, 4, 3, seed, spread=0.1)
    rng = np.random.default_rng(3000 + seed)
    groups = [np.where(rng.random(n) < 0.7, (y + a) % 2, rng.integers(2, size=n))
              for a in range(n_attributes)]
    return X, y, groups


def regression(n, seed):
    rng = np.random.default_rng(4000 + seed)
    X = rng.standard_normal((n, 5))
    return X, X @ rng.standard_normal(5) + 0.1 * rng.standard_normal(n)


# ---------------------------------------------------------------------------- k-means
def run_kmeans_plusplus(out, seed, trials, dtype, weights=None, k=6, duplicates=False, n=400,
                        d=3):
    X, _ = blobs(n, d, 5, seed, dtype=dtype)
    if duplicates:
        X = np.repeat(X[:4], 20, axis=0)
    w = None if weights is None else np.random.default_rng(seed).random(X.shape[0]) * weights
    out["centers"], out["indices"] = fedcore.kmeans_plusplus(
        X, k, sample_weight=w, random_state=seed, n_local_trials=trials)


def run_kmeans(out, seed, n=600, d=3, k=5, dtype=np.float64, weighted=False, init=None,
               **params):
    X, _ = blobs(n, d, k, seed, dtype=dtype)
    w = np.random.default_rng(seed).random(n) if weighted else None
    if isinstance(init, str):  # "rows": the first k rows
        init = X[:k].astype(np.float64)
    model = fedcore.KMeans(k, random_state=seed, **({} if init is None else {"init": init}),
                           **params)
    model.fit(X, sample_weight=w)
    snapshot(out, model)
    out["params"] = (repr(model), model.get_params())
    out["predict"] = model.predict(X[::7])
    out["transform"] = model.transform(X[::11])
    out["score"] = model.score(X, sample_weight=w)


def pts(*rows):
    """Ids of these rows of the fit, those already removed skipped."""
    return lambda model, ids: np.setdiff1d(ids[list(rows)], np.setdiff1d(ids, model.sample_ids_))


def ctr(*positions):
    return lambda model, ids: model.center_ids_[list(positions)]


def run_unlearnable(out, seed, refine, steps, shuffled_ids=False, k=5, n=300):
    X, _ = blobs(n, 3, k, seed)
    ids = np.random.default_rng(seed).permutation(20 * n)[:n] if shuffled_ids else np.arange(n)
    model = fedcore.UnlearnableKMeans(k, refine=refine, random_state=seed)
    model.fit(X, sample_ids=ids if shuffled_ids else None)
    snapshot(out, model, "fit/")
    for i, step in enumerate(steps):
        out[f"remove{i}/result"] = model.remove(step(model, ids))
        snapshot(out, model, f"remove{i}/")
    out["remaining"] = model.remaining()


# ---------------------------------------------------------------------------- MUFC family
def seed_id(model, fed, l, j):
    """Global id of seed ``j`` of client ``l`` (a data point of that client), all clients
    active."""
    l %= fed.n_clients
    X_l, ids_l = fed.client(l)
    seed = model.client_centers_[l][j]
    return ids_l[np.flatnonzero((X_l == seed).all(axis=1))[:1]]


MUFC_STEPS = (("points", 0, [3, 5]), ("center", -1, 1), ("clients", [0]))


def run_mufc(out, cls, seed, n_clients, steps=MUFC_STEPS, noniid=False, n=800, d=3, k=4,
             **params):
    """Fit, then removal steps: ("points", client, rows of the client), ("center", client,
    seed index) before any client is removed, ("clients", ids or "all")."""
    X, y = blobs(n, d, k, seed)
    fed = horizontal(X, y, n_clients, seed, noniid)
    model = cls(k, random_state=seed, **params).fit(fed)
    snapshot(out, model, "fit/")
    for i, (kind, *args) in enumerate(steps):
        if kind == "points":
            l = args[0] % n_clients
            report = model.remove(l, fed.client(l)[1][args[1]])
        elif kind == "center":
            report = model.remove(args[0] % n_clients, seed_id(model, fed, *args))
        else:
            report = model.remove_clients(list(range(n_clients)) if args[0] == "all" else args[0])
        put(out, f"{i}.{kind}/", "report", report)
        snapshot(out, model, f"{i}.{kind}/")
    out["predict"] = model.predict(X[::5])
    out["inertia"] = model.inertia(X)
    out["federated_inertia"] = model.federated_inertia()


def run_dckmeans(out, seed, weighted, n_init=1, remove=((0, [2, 4]),)):
    X, y = blobs(600, 3, 4, seed)
    fed = horizontal(X, y, 3, seed)
    model = fedcore.DCKMeans(4, client_clusters=5, weighted=weighted, n_init=n_init,
                             random_state=seed).fit(fed)
    snapshot(out, model, "fit/")
    out["fit/federated_inertia"] = model.federated_inertia()
    for i, (l, rows) in enumerate(remove):
        ids = fed.client(l)[1][rows] if l < fed.n_clients else rows
        put(out, f"remove{i}/", "report", model.remove(l, ids))
        snapshot(out, model, f"remove{i}/")
        out[f"remove{i}/federated_inertia"] = model.federated_inertia()


# ---------------------------------------------------------------------------- one-shot baselines
def run_horizontal(out, cls, seed, n_clients=4, noniid=True, as_list=False, n=600, d=2, k=4,
                   **params):
    X, y = blobs(n, d, k, seed, spread=0.03)
    fed = horizontal(X, y, n_clients, seed, noniid)
    model = cls(k, random_state=seed, **params).fit([X_l for X_l, _ in fed] if as_list else fed)
    snapshot(out, model)
    out["predict"] = model.predict(X[::3])


# ---------------------------------------------------------------------------- F3KM family
def run_cd(out, cls, seed, vertical=False, dtype=np.float64, n=240, **params):
    X, _ = blobs(n, 4, 3, seed, spread=0.15, dtype=dtype)
    data = fedcore.VerticalFederation.from_columns(X, [1, 3]) if vertical else X
    model = cls(3, random_state=seed, **params).fit(data)
    snapshot(out, model)
    out["predict"] = model.predict(X[::4])
    out["fit_predict"] = cls(3, random_state=seed, **params).fit_predict(data)


def run_fair(out, cls, seed, vertical=False, n_attributes=2, n=240, **params):
    X, _, groups = colored(n, seed, n_attributes)
    model = cls(3, random_state=seed, **params)
    if vertical:
        model.fit(fedcore.VerticalFederation.from_columns(
            X, [1, 2, 1], groups=[None, groups[0], groups[1:]]))
    else:
        model.fit(X, groups=groups)
    snapshot(out, model)


# ---------------------------------------------------------------------------- vertical FL
def vfed(seed, n=500, labels=False):
    X, y = regression(n, seed) if labels else blobs(n, 5, 4, seed)
    return fedcore.VerticalFederation.from_columns(X, [2, 3], y=y if labels else None)


def coreset_fp(out, cs, prefix="coreset/"):
    for name, value in public_fields(cs).items():
        put(out, prefix, name, value)
    out[prefix + "len"] = len(cs)
    compressed = cs.compress()
    out[prefix + "compress"] = (compressed.indices, compressed.weights)
    out[prefix + "weighted_sum"] = cs.weighted_sum(np.arange(cs.n_samples) ** 1.5)


def run_coreset_class(out):
    ledger = CommLedger()
    ledger.record(0, sender="server", receiver=0, kind="ids", n_elements=4)
    coreset_fp(out, fedcore.Coreset([3, 1, 3, 0], [2.0, 1.0, 2.0, 0.5], ledger, 10,
                                    party_counts=[1, 3], outlier_fraction=0.1))


def run_coreset(out, kind, seed, m=120, **kw):
    if kind == "dis":
        scores = np.random.default_rng(seed).random((3, 400)) ** 3
        model = fedcore.VerticalCoreset(m, random_state=seed, **kw).fit(scores)
        snapshot(out, model)
        return
    if kind == "vkmc":
        cs = fedcore.vkmc_coreset(vfed(seed), m, 4, random_state=seed, **kw)
    elif kind == "vrlr":
        cs = fedcore.vrlr_coreset(vfed(seed, labels=True), m, random_state=seed, **kw)
    else:
        cs = fedcore.uniform_coreset(vfed(seed), m, random_state=seed)
    coreset_fp(out, cs)


def run_distdim(out, seed, coreset=False, **params):
    fed = vfed(seed)
    cs = fedcore.vkmc_coreset(fed, 150, 4, random_state=seed) if coreset else None
    model = fedcore.DistDim(4, random_state=seed, **params).fit(fed, coreset=cs)
    snapshot(out, model)
    out["predict"] = model.predict(fed.to_array()[::5])


def run_ridge(out, seed, coreset=None, **params):
    fed = vfed(seed, labels=True)
    cs = None if coreset is None else \
        getattr(fedcore, f"{coreset}_coreset")(fed, 150, random_state=seed)
    model = fedcore.VerticalRidge(random_state=seed, **params).fit(fed, cs)
    snapshot(out, model)
    out["predict"] = model.predict(fed.to_array()[::5])


# ---------------------------------------------------------------------------- metrics
def run_metric(out, name, seed):
    rng = np.random.default_rng(5000 + seed)
    X, y = blobs(300, 3, 4, seed)
    C = rng.random((4, 3))
    labels = rng.integers(4, size=300)
    groups = [rng.integers(2, size=300), rng.choice(np.array(["a", "b", "c"]), size=300)]
    calls = {
        "inertia": lambda: metrics.inertia(X, C),
        "inertia_weighted": lambda: metrics.inertia(X.astype(np.float32), C, rng.random(300)),
        "federated_inertia": lambda: metrics.federated_inertia(
            [(X[i::3], labels[i::3], C + 0.01 * i) for i in range(3)], C[:3]),
        "loss_ratio": lambda: metrics.loss_ratio(12.5, X, 4, n_init=2, random_state=seed),
        "loss_ratio_candidates": lambda: metrics.loss_ratio(
            12.5, X, 4, candidate_centers=C, n_init=1, random_state=seed),
        "center_distance": lambda: metrics.center_distance(C, C[::-1] + 0.01 * seed),
        "center_distance_partial": lambda: metrics.center_distance(C[:3], rng.random((5, 3))),
        "purity": lambda: metrics.purity(y, labels),
        "nmi": lambda: metrics.nmi(y, labels),
        "nmi_strings": lambda: metrics.nmi(groups[1], labels),
        "sse": lambda: metrics.sse(X, labels),
        "relative_error": lambda: metrics.relative_error(X, labels, y),
        "balance": lambda: metrics.balance(labels, groups, n_clusters=5),
        "additive_violation": lambda: metrics.additive_violation(labels, groups, delta=0.1),
        "additive_violation_bounds": lambda: metrics.additive_violation(
            labels, groups[0], alpha=[0.6, 0.6], beta=[0.4, 0.3]),
        "additive_violation_scalar_beta": lambda: metrics.additive_violation(
            labels, groups[0], beta=0.4),
        "fairness_bounds": lambda: metrics.fairness_bounds(groups, delta=0.3),
    }
    out["value"] = calls[name]()


# ---------------------------------------------------------------------------- datasets
DATASET_CALLS = {
    "make_gaussian_mixture": lambda s: datasets.make_gaussian_mixture(500, 3, 4, random_state=s),
    "make_gaussian_mixture_weights": lambda s: datasets.make_gaussian_mixture(
        500, 2, 3, cluster_std=0.3, weights=[5, 2, 1], random_state=s),
    "make_stochastic_ball": lambda s: datasets.make_stochastic_ball(300, 3, 4, random_state=s),
    "make_stochastic_ball_centers": lambda s: datasets.make_stochastic_ball(
        200, centers=[[0.0, 0.0], [5.0, 0.0]], radius=2.0, random_state=s),
    "make_s_sets": lambda s: [datasets.make_s_sets(level, n_samples=600, random_state=s)
                              for level in (1, 2, "S3", "S4")],
    "make_fair_blobs": lambda s: datasets.make_fair_blobs(400, 3, 3, random_state=s),
    "make_fair_blobs_float32": lambda s: datasets.make_fair_blobs(
        300, 2, 2, groups_per_attribute=(3,), bias=0.0, dtype=np.float32, chunk_size=64,
        random_state=s),
    "load_gaussian": lambda s: datasets.load_gaussian(s),
    "load_mufc_standin": lambda s: datasets.load_mufc_standin("tcga", random_state=s),
}
SEEDLESS_DATASET_CALLS = {
    "load_cps1988": lambda: datasets.load_cps1988(),
    "load_cps1988,scale=False": lambda: datasets.load_cps1988(scale=False),
    "load_wage": lambda: datasets.load_wage(),
    "constants": lambda: (datasets.MUFC_SHAPES, datasets.S_SET_LEVELS),
}


def run_dataset(out, name, seed=None):
    out["value"] = SEEDLESS_DATASET_CALLS[name]() if seed is None else DATASET_CALLS[name](seed)


# ---------------------------------------------------------------------------- SCMA
SCMA_SETUP_FIELDS = ("message_length", "bits_per_element", "n_shards", "shard_capacity",
                     "n_chunks", "hashed", "max_count", "wraparound_safe", "false_accept_bound",
                     "collision_bound", "message_bits")


def scma_vector(rng, space, n_items):
    if "index_space" in space:
        bins = rng.choice(min(space["index_space"], 10**6), size=n_items, replace=False)
    else:
        bins = rng.integers(space["bins"], size=(n_items, space["n_dims"]))
    return bins, rng.integers(1, 40, size=n_items)


def pair_seeds(l, n_clients):
    """Seeds client ``l`` shares with every other client, as a key exchange would agree them."""
    return {o: 10**30 + 1000 * min(l, o) + max(l, o) for o in range(n_clients) if o != l}


def run_scma(out, seed, n_clients, capacity, space, n_items, participants=None,
             precompute=False, public_config=False, rekey=False, agreed_seeds=False,
             refusal=None, **setup_kw):
    """Two rounds; the second changes one bin of the first participant. Only decoded sums,
    decoded changes, the setup's public sizes and the ledger are recorded (no messages)."""
    setup = fedcore.SCMASetup(n_clients, capacity, random_state=seed, **space, **setup_kw)
    setup = setup.rekeyed(seed + 1) if rekey else setup
    out["setup"] = {f: getattr(setup, f) for f in SCMA_SETUP_FIELDS}
    server = fedcore.SCMAServer(fedcore.SCMASetup.from_public_config(setup.public_config())
                                if public_config else setup.public())
    clients = [fedcore.SCMAClient(l, setup, pair_seeds(l, n_clients) if agreed_seeds else None)
               for l in range(n_clients)]
    who = list(range(n_clients)) if participants is None else participants
    rng = np.random.default_rng(6000 + seed)
    vectors = {l: scma_vector(rng, space, n_items) for l in who}
    ledger, totals = CommLedger(), []
    for rnd in range(2):
        if rnd == 1:
            vectors[who[0]][1][0] += 1
        if precompute:
            for l in who:
                clients[l].precompute_mask(rnd, participants)
        messages = {l: clients[l].encode(*vectors[l], round=rnd, participants=participants,
                                         ledger=ledger) for l in who}
        totals.append(server.aggregate(messages, round=rnd, participants=participants,
                                       ledger=ledger))
        out[f"round{rnd}/decoded"] = server.decode_sum(totals[-1], round=rnd)
    out["decode_change"] = server.decode_change(totals[1], totals[0], max_changes=2, round=1)
    put(out, "", "", ledger)
    if refusal == "encode_twice":
        clients[who[0]].encode(*vectors[who[0]], round=1, participants=participants)
    elif refusal == "over_capacity":
        extra = {l: clients[l].encode(*scma_vector(rng, space, capacity), round=2) for l in who}
        server.decode(extra, round=2)
    elif refusal == "max_count":
        clients[who[0]].encode(vectors[who[0]][0][:1], [setup.max_count + 1], round=3)


# ---------------------------------------------------------------------------- federation
def run_partition(out, scheme, seed, n_clients=4, **kw):
    X, y = blobs(300, 2, 5, seed)
    fed = fedcore.partition(X, n_clients, scheme, labels=y, random_state=seed, **kw)
    out["clients"] = list(fed)
    out["client_sizes"] = fed.client_sizes
    out["to_array"] = fed.to_array()
    out["client_labels"] = [fed.client_labels(l) for l in range(fed.n_clients)]
    out["shape"] = (fed.n_clients, fed.n_samples, fed.n_features, repr(fed))


def run_vertical_federation(out, splits, with_groups):
    X, y, groups = colored(50, 0)
    fed = fedcore.VerticalFederation.from_columns(
        X, splits, y=y, groups=[groups[:1], None, groups[1]] if with_groups else None)
    out["parties"] = [fed.party(j) for j in range(fed.n_parties)]
    out["groups"] = [fed.groups(j) for j in range(fed.n_parties)]
    out["columns"] = [fed.columns(j) for j in range(fed.n_parties)]
    out["shape"] = (fed.n_parties, fed.n_samples, fed.n_features, fed.splits, repr(fed))
    out["to_array"] = fed.to_array()


def run_horizontal_federation(out):
    arrays = [np.arange(6.0).reshape(3, 2), np.ones((2, 2))]
    fed = fedcore.HorizontalFederation.from_arrays(arrays, labels=[[0, 1, 1], [2, 2]])
    out["clients"] = list(fed)
    out["client_labels"] = fed.client_labels(1)
    out["repr"] = repr(fed)
    fedcore.HorizontalFederation([np.ones((2, 2)), np.ones((1, 2))], [[0, 1], [1]])


def run_ledger(out):
    ledger = CommLedger()
    ledger.record(0, sender=1, receiver="server", kind="a", n_elements=10)
    ledger.record(1, sender="server", receiver=2, kind="b", n_elements=3, bits_per_element=61)
    ledger.record(1, sender=1, receiver=2, kind="c", n_elements=0, n_bits=7)
    other = CommLedger()
    other.extend(ledger)
    put(out, "", "", other)
    out["by_party"] = other.by_party()
    out["totals"] = (other.n_rounds, other.n_messages, other.n_elements, other.n_bits, repr(other))
    ledger.record(2, sender=1, receiver="server", kind="d", n_elements=-1)


# ---------------------------------------------------------------------------- the table
def build_kmeans():
    f32, f64 = np.float32, np.float64
    for seed in SEEDS:
        for trials in (None, "auto", 3):
            for dtype in (f64, f32):
                add(f"kmeans_plusplus/{desc(seed=seed, trials=trials, dtype=dtype.__name__)}",
                    run_kmeans_plusplus, seed, trials, dtype)
        for trials in (None, "auto"):
            add(f"kmeans_plusplus/{desc(seed=seed, trials=trials, weights='random+zeros')}",
                run_kmeans_plusplus, seed, trials, f64, weights=np.arange(400) % 3)
        for n_init in (1, 4):
            for dtype in (f64, f32):
                add(f"KMeans/{desc(seed=seed, n_init=n_init, dtype=dtype.__name__)}",
                    run_kmeans, seed, n_init=n_init, dtype=dtype)
        add(f"KMeans/seed={seed},sample_weight", run_kmeans, seed, weighted=True)
        add(f"KMeans/seed={seed},greedy", run_kmeans, seed, n_local_trials="auto", n_init=2)
    for trials in (None, 2):
        add(f"kmeans_plusplus/duplicates,trials={trials}", run_kmeans_plusplus, 0, trials, f64,
            k=5, duplicates=True)
    for trials, dtype in ((None, f64), ("auto", f32)):
        add(f"kmeans_plusplus/scale,n=60000,d=8,k=40,trials={trials}", run_kmeans_plusplus, 0,
            trials, dtype, k=40, n=60000, d=8)
    add("kmeans_plusplus/refusal,too_many_clusters", run_kmeans_plusplus, 0, None, f64,
        weights=np.arange(400) < 3)
    for seed in range(2):
        add(f"KMeans/seed={seed},init=rows", run_kmeans, seed, init="rows")
        add(f"KMeans/seed={seed},screen,d=10,k=20", run_kmeans, seed, n=1500, d=10, k=20)
        add(f"KMeans/seed={seed},parallel,n=9000", run_kmeans, seed, n=9000, d=4, k=10,
            dtype=(f64, f32)[seed])
    add("KMeans/scale,n=20000,d=16,k=32,n_init=2", run_kmeans, 0, n=20000, d=16, k=32, n_init=2)
    add("KMeans/init=rows,n_init=3(warns)", run_kmeans, 0, init="rows", n_init=3)
    add("KMeans/max_iter=2,tol=0", run_kmeans, 1, max_iter=2, tol=0.0)
    add("KMeans/refusal,init_shape", run_kmeans, 0, init=np.zeros((2, 3)))


def build_unlearning():
    sequences = {"points": [pts(1, 2, 3), pts(10)],
                 "center": [ctr(2)],
                 "first_center,then_points": [ctr(0), pts(*range(20, 40))],
                 "mixed": [lambda m, ids: np.r_[m.center_ids_[3], ids[50]], ctr(1), ctr(1)]}
    for seed in SEEDS:
        for refine in (False, True):
            for name, steps in sequences.items():
                add(f"UnlearnableKMeans/{desc(seed=seed, refine=refine, remove=name)}",
                    run_unlearnable, seed, refine, steps)
    add("UnlearnableKMeans/shuffled_ids", run_unlearnable, 3, False, [ctr(0), pts(7, 8)], True)
    for refine in (False, True):
        add(f"UnlearnableKMeans/scale,n=8000,k=16,refine={refine}", run_unlearnable, 1, refine,
            [pts(*range(0, 400, 3)), ctr(9), ctr(0, 15), pts(5)], True, k=16, n=8000)
    for name, bad in (("removed_twice", 1), ("unknown_id", 10**6)):
        add(f"UnlearnableKMeans/refusal,{name}", run_unlearnable, 0, False,
            [pts(1), lambda m, ids, bad=bad: [bad]])
    add("UnlearnableKMeans/refusal,too_few_left", run_unlearnable, 0, False,
        [pts(*range(297))])


def build_mufc():
    for n_clients in (2, 4, 8):
        for secure in (True, False):
            for seed in SEEDS:
                add(f"MUFC/{desc(clients=n_clients, secure=secure, seed=seed)}", run_mufc,
                    fedcore.MUFC, seed, n_clients, secure=secure)
    variants = {"server_data=uniform": dict(server_data="uniform"),
                "server_update=retrain": dict(server_update="retrain"),
                "server_update=lazy": dict(server_update="lazy"),
                "client_clusters=6": dict(client_clusters=6),
                "random_phase": dict(random_phase=True),
                "bounds": dict(bounds=(np.full(3, -0.5), np.full(3, 1.5))),
                "gamma=0.05,server_n_init=1": dict(gamma=0.05, server_n_init=1),
                "noniid": dict(noniid=True)}
    for name, params in variants.items():
        add(f"MUFC/clients=4,{name}", run_mufc, fedcore.MUFC, 1, 4, **params)
    many = (("points", 0, [1]), ("points", 3, [2, 4]), ("center", 5, 0),
            ("points", 7, list(range(10))), ("center", -1, 7), ("clients", [2, 9]),
            ("points", 4, [0]))
    for secure in (True, False):
        add(f"MUFC/scale,n=6000,clients=12,k=8,secure={secure}", run_mufc, fedcore.MUFC, 2, 12,
            steps=many, n=6000, d=4, k=8, secure=secure)
    add("MUFC/sharded_scma,clients=24,client_clusters=24", run_mufc, fedcore.MUFC, 3, 24,
        steps=many[:3], n=2400, k=6, client_clusters=24)
    add("MUFC/refusal,removed_client", run_mufc, fedcore.MUFC, 0, 3,
        steps=(("clients", [0]), ("points", 0, [1])))
    add("MUFC/refusal,every_client", run_mufc, fedcore.MUFC, 0, 3, steps=(("clients", "all"),))
    add("MUFC/refusal,small_client", run_mufc, fedcore.MUFC, 0, 3, n=30, client_clusters=12)
    for n_clients in (3, 5):
        for seed in SEEDS:
            add(f"SimplifiedFC/{desc(clients=n_clients, seed=seed)}", run_mufc,
                fedcore.SimplifiedFC, seed, n_clients)
    add("SimplifiedFC/server_update=lazy", run_mufc, fedcore.SimplifiedFC, 0, 3,
        server_update="lazy")
    add("SimplifiedFC/scale,n=6000,clients=12,k=8", run_mufc, fedcore.SimplifiedFC, 2, 12,
        steps=many, n=6000, d=4, k=8)
    for seed in SEEDS:
        for weighted in (False, True):
            add(f"DCKMeans/{desc(seed=seed, weighted=weighted)}", run_dckmeans, seed, weighted)
    add("DCKMeans/n_init=3,two_removals", run_dckmeans, 0, False, n_init=3,
        remove=((1, [0]), (2, [1, 2, 3])))
    add("DCKMeans/refusal,unknown_client", run_dckmeans, 0, False, remove=((0, [1]), (5, [0])))


def build_one_shot():
    one_shot = {"KFed": (fedcore.KFed, [{}, {"client_clusters": 3},
                                        {"n_local_trials": None, "noniid": False}]),
                "FeCA": (fedcore.FeCA, [{"client_clusters": 6},
                                        {"client_clusters": 6, "radius": "theoretical"},
                                        {"client_clusters": 6, "init": "random"},
                                        {"k": 8, "init": "random", "noniid": False},
                                        {"k": 8, "radius": "theoretical", "noniid": False},
                                        {"n_local_trials": None, "n_init": 2}]),
                "MatchAveraging": (fedcore.MatchAveraging, [{}, {"client_clusters": 5},
                                                            {"max_iter": 1, "noniid": False}]),
                "FFCM": (fedcore.FFCM, [{"n_rounds": 3}, {"n_rounds": 3, "version": 2},
                                        {"n_rounds": 2, "fuzziness": 1.5, "noniid": False}])}
    for name, (cls, settings) in one_shot.items():
        for params in settings:
            for seed in SEEDS:
                add(f"{name}/{desc(seed=seed, **params)}", run_horizontal, cls, seed, **params)
        add(f"{name}/list_of_arrays", run_horizontal, cls, 0, as_list=True)
        add(f"{name}/scale,n=6000,clients=10,k=8", run_horizontal, cls, 0, n=6000, n_clients=10,
            d=3, k=8, **({"n_rounds": 2} if cls is fedcore.FFCM else {}))
    add("FeCA/fewer_groups(warns)", run_horizontal, fedcore.FeCA, 0, k=12, n_clients=2,
        client_clusters=2)
    add("KFed/refusal,small_client", run_horizontal, fedcore.KFed, 0, n=20, n_clients=8,
        client_clusters=4)


def build_f3km():
    for seed in SEEDS:
        add(f"CDKM/seed={seed}", run_cd, fedcore.CDKM, seed)
        add(f"BCDKM/seed={seed},block_size=auto", run_cd, fedcore.BCDKM, seed)
        add(f"BCDKM/seed={seed},block_size=16,float32", run_cd, fedcore.BCDKM, seed,
            block_size=16, dtype=np.float32)
        add(f"DisBCDKM/seed={seed}", run_cd, fedcore.BCDKM, seed, vertical=True)
        add(f"FairKMeans/seed={seed}", run_fair, fedcore.FairKMeans, seed)
        add(f"FairLP/seed={seed}", run_fair, fedcore.FairLP, seed)
    add("CDKM/vertical", run_cd, fedcore.CDKM, 0, vertical=True, max_iter=3)
    add("DisBCDKM/block_size=1", run_cd, fedcore.BCDKM, 1, vertical=True, block_size=1,
        max_iter=2)
    for name, cls in (("CDKM", fedcore.CDKM), ("BCDKM", fedcore.BCDKM)):
        add(f"{name}/scale,n=5000", run_cd, cls, 0, n=5000)
    add("DisBCDKM/scale,n=5000", run_cd, fedcore.BCDKM, 0, vertical=True, n=5000)
    for seed in range(2):
        add(f"FairKMeans/vertical,seed={seed}", run_fair, fedcore.FairKMeans, seed, vertical=True)
    add("FairKMeans/scale,n=3000,vertical", run_fair, fedcore.FairKMeans, 2, vertical=True,
        n=3000)
    add("FairKMeans/rho_schedule=constant,block_size=32", run_fair, fedcore.FairKMeans, 0,
        rho_schedule="constant", block_size=32, rho=10.0)
    add("FairKMeans/explicit_bounds", run_fair, fedcore.FairKMeans, 1, n_attributes=1,
        alpha=[0.7, 0.7], beta=[0.3, 0.3])
    add("FairKMeans/refusal,delta=1", run_fair, fedcore.FairKMeans, 0, delta=1.0)
    add("FairLP/init=array,one_attribute", run_fair, fedcore.FairLP, 0, n_attributes=1,
        init=np.array([[0.2] * 4, [0.5] * 4, [0.8] * 4]))
    add("FairLP/delta=0.05", run_fair, fedcore.FairLP, 1, delta=0.05)
    add("FairLP/scale,n=1500", run_fair, fedcore.FairLP, 2, n=1500)
    add("FairLP/refusal,init_shape", run_fair, fedcore.FairLP, 0, init=np.zeros((2, 4)))


def build_vertical():
    for seed in SEEDS:
        add(f"VerticalCoreset/seed={seed}", run_coreset, "dis", seed)
        add(f"vkmc_coreset/seed={seed}", run_coreset, "vkmc", seed)
        add(f"vrlr_coreset/seed={seed}", run_coreset, "vrlr", seed)
        add(f"DistDim/seed={seed}", run_distdim, seed)
        add(f"VerticalRidge/central,seed={seed}", run_ridge, seed, alpha=2.0)
    for seed in range(2):
        add(f"uniform_coreset/seed={seed}", run_coreset, "uniform", seed)
        add(f"DistDim/coreset,seed={seed}", run_distdim, seed, coreset=True)
        add(f"VerticalRidge/saga,seed={seed}", run_ridge, seed, solver="saga", max_iter=15)
    add("VerticalCoreset/outlier_fraction", run_coreset, "dis", 0, m=500, outlier_fraction=0.1)
    add("vkmc_coreset/local_max_iter=3,alpha=2", run_coreset, "vkmc", 0, local_max_iter=3,
        alpha=2.0)
    add("vrlr_coreset/outlier_fraction", run_coreset, "vrlr", 1, outlier_fraction=0.05)
    add("DistDim/client_clusters=[3,5],n_init=2", run_distdim, 0, client_clusters=[3, 5],
        n_init=2)
    add("VerticalRidge/central,vrlr_coreset", run_ridge, 0, coreset="vrlr", alpha=0.5)
    add("VerticalRidge/saga,uniform_coreset", run_ridge, 0, coreset="uniform", solver="saga",
        max_iter=10, tol=0.0)
    add("VerticalRidge/alpha=0", run_ridge, 1, alpha=0.0)
    add("VerticalRidge/refusal,solver", run_ridge, 0, solver="lbfgs")
    add("Coreset/direct", run_coreset_class)


def build_functions():
    for name in METRIC_NAMES:
        for seed in range(2):
            add(f"metrics.{name}/seed={seed}", run_metric, name, seed)
    for name in DATASET_CALLS:
        for seed in range(2):
            add(f"datasets.{name}/seed={seed}", run_dataset, name, seed)
    for name in SEEDLESS_DATASET_CALLS:
        add(f"datasets.{name}", run_dataset, name)


def build_scma():
    direct, coords = {"index_space": 1000}, {"n_dims": 2, "bins": 10}
    hashed = {"n_dims": 10, "bins": 173}
    for seed in SEEDS:
        add(f"SCMA/index_space,seed={seed}", run_scma, seed, 3, 24, direct, 6)
        add(f"SCMA/hashed,seed={seed}", run_scma, seed, 4, 32, hashed, 6)
    variants = {
        "coordinates": ((4, 40, coords, 8), {}),
        "sharded": ((3, 600, {"index_space": 10**6}, 150), {}),
        "sharded_hashed": ((2, 520, {"n_dims": 3, "bins": 2**30}, 200), {"n_shards": 3}),
        "participants": ((5, 24, direct, 5), {"participants": [0, 2, 3]}),
        "precompute_mask": ((3, 24, direct, 4), {"precompute": True}),
        "public_config": ((3, 24, hashed, 4), {"public_config": True}),
        "rekeyed": ((3, 24, hashed, 4), {"rekey": True}),
        "agreed_pair_seeds": ((4, 24, direct, 4), {"agreed_seeds": True}),
        "prime=8191": ((3, 12, {"index_space": 50}, 3), {"prime": 8191, "check_syndromes": 0}),
        "refusal,encode_twice": ((3, 24, direct, 4), {"refusal": "encode_twice"}),
        "refusal,over_capacity": ((2, 12, direct, 3), {"refusal": "over_capacity"}),
        "refusal,max_count": ((2, 12, direct, 3), {"refusal": "max_count", "max_count": 100}),
    }
    for name, (args, kw) in variants.items():
        add(f"SCMA/{name}", run_scma, 0, *args, **kw)


def build_federation():
    for seed in range(2):
        add(f"partition/iid,seed={seed}", run_partition, "iid", seed)
        add(f"partition/noniid,seed={seed}", run_partition, "noniid", seed,
            clusters_per_client=2)
        add(f"partition/dirichlet,seed={seed}", run_partition, "dirichlet", seed, alpha=0.5)
    add("partition/refusal,noniid_cover", run_partition, "noniid", 0, n_clients=2,
        clusters_per_client=1)
    add("partition/refusal,scheme", run_partition, "shards", 0)
    add("VerticalFederation/splits=3", run_vertical_federation, 3, True)
    add("VerticalFederation/splits=[1,1,2]", run_vertical_federation, [1, 1, 2], False)
    add("VerticalFederation/refusal,splits_sum", run_vertical_federation, [1, 1], False)
    add("HorizontalFederation/from_arrays,refusal_shared_id", run_horizontal_federation)
    add("CommLedger/record,extend,refusal_negative", run_ledger)


BUILDERS = (build_kmeans, build_unlearning, build_mufc, build_one_shot, build_f3km,
            build_vertical, build_functions, build_scma, build_federation)


METRIC_NAMES = ("inertia", "inertia_weighted", "federated_inertia", "loss_ratio",
                "loss_ratio_candidates", "center_distance", "center_distance_partial", "purity",
                "nmi", "nmi_strings", "sse", "relative_error", "balance", "additive_violation",
                "additive_violation_bounds", "additive_violation_scalar_beta", "fairness_bounds")


# ---------------------------------------------------------------------------- record / compare
def run_config(fn):
    out = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn(out)
        except Exception as exc:  # noqa: BLE001 -- refusals are part of the fingerprint
            out["error"] = error_fp(exc)
    shown = [f"{w.category.__name__}: {w.message}" for w in caught
             if not w.category.__module__.startswith("numba")
             and not issubclass(w.category, DeprecationWarning)]
    if shown:
        out["warnings"] = shown
    return {name: fp(value) for name, value in out.items()}


def record(path, only=None):
    for builder in BUILDERS:
        builder()
    keys = [k for k in CONFIGS if only is None or only in k]
    print(f"fedcore {fedcore.__version__} from {fedcore.__file__}: {len(keys)} configurations",
          file=sys.stderr)
    result, t0 = {}, time.perf_counter()
    for key in keys:
        t = time.perf_counter()
        result[key] = run_config(CONFIGS[key])
        if time.perf_counter() - t > 5:
            print(f"  slow: {key} {time.perf_counter() - t:.1f} s", file=sys.stderr)
    errors = sum("error" in v for v in result.values())
    with open(path, "w") as fh:
        json.dump(result, fh, sort_keys=True, indent=1)
        fh.write("\n")
    print(f"wrote {path}: {len(result)} configurations ({errors} recorded errors) in "
          f"{time.perf_counter() - t0:.1f} s", file=sys.stderr)


def short(value, width=160):
    text = json.dumps(value, sort_keys=True)
    return text if len(text) <= width else text[:width] + "..."


def compare(path_a, path_b):
    with open(path_a) as fa, open(path_b) as fb:
        a, b = json.load(fa), json.load(fb)
    same = differ = missing = 0
    for key in sorted(set(a) | set(b)):
        if key not in a or key not in b:
            missing += 1
            print(f"MISSING in {path_a if key not in a else path_b}: {key}")
        elif a[key] == b[key]:
            same += 1
        else:
            differ += 1
            print(f"DIFFER: {key}")
            for entry in sorted(set(a[key]) | set(b[key])):
                if a[key].get(entry) != b[key].get(entry):
                    print(f"    {entry}:\n      A {short(a[key].get(entry))}\n"
                          f"      B {short(b[key].get(entry))}")
    print(f"{same + differ + missing} configurations, {same} identical, {differ} differ, "
          f"{missing} missing")
    return 1 if differ or missing else 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="run every configuration and write OUT.json")
    rec.add_argument("out")
    rec.add_argument("--only", help="only the configurations whose key contains SUBSTR",
                     metavar="SUBSTR")
    cmp_ = sub.add_parser("compare", help="compare two recordings")
    cmp_.add_argument("a")
    cmp_.add_argument("b")
    args = parser.parse_args(argv)
    if args.command == "record":
        record(args.out, args.only)
        return 0
    return compare(args.a, args.b)


if __name__ == "__main__":
    sys.exit(main())
