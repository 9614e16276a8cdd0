"""Reproduce [MUFC] Table 1 (and Fig. 3) on the real Celltype split and the Gaussian set.

    python benchmarks/mufc_table1.py                                # Celltype + Gaussian, uniform
    python benchmarks/mufc_table1.py --server-data uniform weighted --plot docs/figures
    python benchmarks/mufc_table1.py --datasets tmi tcga --seeds 2 --removals 5 --insecure
    python benchmarks/mufc_table1.py --complete-clients --removals 3   # [MUFC] Table 2 (M.3)

Data sets (``--datasets``): "celltype", the real Celltype data with the [MUFC] authors' client
split (``fedcore.datasets.load_celltype``; loss ratios divide by the authors' precomputed optimum
phi*); "gaussian", the recipe of [MUFC] Appendix M.1 (``fedcore.datasets.load_gaussian``, draw 0)
split non-iid over L = 100 clients; and synthetic stand-ins with the shapes of the other data sets
of [MUFC] Appendix M.1 ("celltype-standin", "postures", "covtype", "femnist", "tcga", "tmi",
``fedcore.datasets.load_mufc_standin``, draw 0). A synthetic set is drawn once; each seed draws a
new non-iid split (at most ``--split-clusters`` K' true clusters a client) and new algorithm
randomness. For synthetic sets phi* is the best of ``n_init`` centralized k-means++ + Lloyd runs
(10, or 3 when d > 500), as [MUFC] Section 6 approximates it.

Settings of [MUFC] Appendix M.2 unless told otherwise: clients seed K centers, the server's K
(``--clients-seed-split``: K', the split's bound, for all three methods); the server draws
``q_j`` points uniformly in each occupied bin ([MUFC] Appendix H; ``--server-data weighted``:
weighted k-means on the grid points; both can be given); gamma = 1/sqrt(n); 5 seeds.

Per data set and server-data option: loss ratios (federated objective with induced clusters,
[MUFC] Def. 3.1, over phi*) of MUFC, K-FED and DC-KM as mean +- std over seeds beside [MUFC]
Table 1, and MUFC's centralized objective ([MUFC] eq. (1)) over the same phi*. Then, for MUFC,
the median modeled latency of single random removals (slowest client + server, the model of
[MUFC] Section 6) in exact mode and in lazy mode (the server keeps its centers when no client
re-seeded: the measurement behind [MUFC] Table 1's speed-up), the median in-process wall time of
a whole removal round ("wall ms") and of the next round's masks ("masks ms"), the complete
retraining latency in the same model (a fresh fit) and both speed-ups, the lazy one beside
[MUFC] Table 1's.

``--plot DIR`` draws, over ``--plot-seeds`` seeds (mean and a shaded +- std), [MUFC] Fig. 3(d)
(MUFC's loss ratio after 0 to ``--plot-removals`` random single-point removals on the first data
set; exact mode for each server-data option, lazy mode for the first) and Fig. 3(a)-(c) (loss
ratio against the split's K' on Gaussian, against gamma on Gaussian and Celltype) into DIR as PNG
files; it needs matplotlib.
"""
import argparse
import os
import sys
import time

import numpy as np

import fedcore
from fedcore.algorithms.baselines.dckmeans import DCKMeans
from fedcore.algorithms.baselines.kfed import KFed
from fedcore.algorithms.mufc import MUFC
from fedcore.cli.mainjob import (STANDINS, induced_inertia, pick_removal, refederate,
                                 remaining_points, warm_up)

# [MUFC] Table 1: loss ratios (mean +- std, 5 runs; FEMNIST 3) and the speed-up of one MUFC
# removal over complete retraining when no client re-seeds. Stand-ins print their shape's column.
PAPER = {
    "tmi": ("1.24 +- 0.10", "1.84 +- 0.07", "1.54 +- 0.13", "151x"),
    "celltype": ("1.14 +- 0.03", "1.72 +- 0.24", "1.46 +- 0.01", "1535x"),
    "gaussian": ("1.25 +- 0.02", "1.25 +- 0.01", "1.02 +- 0.00", "2074x"),
    "tcga": ("1.18 +- 0.05", "1.56 +- 0.11", "1.15 +- 0.02", "483x"),
    "postures": ("1.10 +- 0.01", "1.13 +- 0.01", "1.03 +- 0.00", "613x"),
    "femnist": ("1.20 +- 0.00", "1.21 +- 0.00", "1.18 +- 0.00", "53x"),
    "covtype": ("1.03 +- 0.02", "1.60 +- 0.01", "1.03 +- 0.02", "267x"),
}
# [MUFC] Appendix M.3, Table 2: MUFC with complete client training (k-means++ and Lloyd).
PAPER_COMPLETE = {
    "tmi": ("1.05 +- 0.01", "1.84 +- 0.07", "1.54 +- 0.13"),
    "celltype": ("1.03 +- 0.00", "1.72 +- 0.24", "1.46 +- 0.01"),
    "gaussian": ("1.02 +- 0.00", "1.25 +- 0.01", "1.02 +- 0.00"),
    "tcga": ("1.02 +- 0.01", "1.56 +- 0.11", "1.15 +- 0.02"),
    "postures": ("1.02 +- 0.00", "1.13 +- 0.01", "1.03 +- 0.00"),
    "femnist": ("1.12 +- 0.00", "1.21 +- 0.00", "1.18 +- 0.00"),
    "covtype": ("1.02 +- 0.00", "1.60 +- 0.01", "1.03 +- 0.02"),
}
METHODS = ("MUFC", "K-FED", "DC-KM")
DATASETS = ("celltype",) + tuple(STANDINS)


class Data:
    """One data set of the table: points, K, L, phi* and how each seed federates it."""

    def __init__(self, name, split_clusters=5):
        self.name = name
        if name == "celltype":
            data = fedcore.datasets.load_celltype()
            self.X, self.y, self.k = data.X, data.labels, data.n_clusters
            self._fed = fedcore.HorizontalFederation.from_labels(data.X, data.client,
                                                                 labels=data.labels)
            self.n_clients = self._fed.n_clients
            self.split_clusters = max(np.unique(data.labels[data.client == c]).size
                                      for c in np.unique(data.client))
            self.phi = data.optimal_inertia
            self.phi_source = "the [MUFC] authors' precomputed optimum"
            self.kind = "real, the [MUFC] authors' split"
        else:
            self.X, self.y, self.n_clients = fedcore.datasets.load_mufc_standin(
                STANDINS[name], random_state=0)
            self.k = int(self.y.max()) + 1
            self.split_clusters = min(split_clusters, self.k)
            self._fed = None
            self.phi = self.best_kmeans(self.X).inertia_
            self.phi_source = f"best of {self.n_init} k-means++ + Lloyd runs"
            self.kind = ("[MUFC] Appendix M.1 recipe" if name == "gaussian" else
                         "synthetic stand-in") + f", non-iid split K' = {self.split_clusters}"
        self.pseudo_paper = STANDINS.get(name, name)

    @property
    def n_init(self):
        return 3 if self.X.shape[1] > 500 else 10

    def best_kmeans(self, X):
        return fedcore.KMeans(self.k, n_init=self.n_init, random_state=0).fit(X)

    def federation(self, seed, split_clusters=None):
        if self._fed is not None:
            return self._fed
        kp = self.split_clusters if split_clusters is None else split_clusters
        return fedcore.partition(self.X, self.n_clients, "noniid", labels=self.y,
                                 clusters_per_client=kp, random_state=seed)

    def describe(self):
        n, d = self.X.shape
        return (f"{self.name} ({self.kind}): n={n}, d={d}, K={self.k}, L={self.n_clients}, "
                f"phi*={self.phi:.2f} ({self.phi_source})")


_LOADED = {}


def load(name, split_clusters=5):
    """``Data(name, split_clusters)``, built once (phi* of a synthetic set costs k-means runs)."""
    key = (name, split_clusters)
    if key not in _LOADED:
        _LOADED[key] = Data(name, split_clusters)
    return _LOADED[key]


def parse_gamma(text):
    """"auto" (1/sqrt(n)), "1/n", or a float in (0, 1]."""
    if text in ("auto", "1/n"):
        return text
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be auto, 1/n or a float, got {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {value}")
    return value


def resolve_gamma(gamma, n):
    return 1.0 / n if gamma == "1/n" else gamma


def mufc(data, server_data, seed, *, kc, gamma="auto", secure=True, server_update="exact",
         complete=False):
    return MUFC(data.k, client_clusters=kc, server_data=server_data,
                gamma=resolve_gamma(gamma, data.X.shape[0]), secure=secure,
                server_update=server_update, client_refine=complete, random_state=seed)


def baselines(data, fed, seed, kc, dckm_n_init):
    """Loss ratios of K-FED and DC-KM: induced objective ([MUFC] Def. 3.1) over phi*."""
    kfed = KFed(data.k, client_clusters=kc, random_state=seed).fit(fed)
    dckm = DCKMeans(data.k, client_clusters=kc, n_init=dckm_n_init, random_state=seed).fit(fed)
    return {"K-FED": induced_inertia(fed, kfed.client_centers_, kfed.cluster_centers_)
            / data.phi,
            "DC-KM": dckm.federated_inertia() / data.phi}


def mufc_seed(data, fed, server_data, seed, n_removals, kc, gamma, secure, complete=False):
    """MUFC's loss ratios and removal latencies for one seed."""
    opts = {"kc": kc, "gamma": gamma, "secure": secure, "complete": complete}
    exact = mufc(data, server_data, seed, **opts).fit(fed)
    out = {"MUFC": exact.federated_inertia() / data.phi,
           "MUFC eq.1": exact.inertia(data.X) / data.phi}
    lazy = mufc(data, server_data, seed, server_update="lazy", **opts).fit(fed)
    rng = np.random.default_rng(seed)
    lat, lat_lazy, wall, offline = [], [], [], []
    for _ in range(n_removals):
        client, ids = pick_removal(exact, "random", 1, rng)
        t0 = time.perf_counter()
        report = exact.remove(client, ids)
        lat.append(report.modeled_latency)
        offline.append(report.timings.get("masks_offline", 0.0))
        wall.append(time.perf_counter() - t0 - offline[-1])
        lat_lazy.append(lazy.remove(client, ids).modeled_latency)
    if n_removals:
        Xr, owners, ids = remaining_points(exact)
        refed = refederate(Xr, owners, ids, exact._active)
        retrain = np.median([
            mufc(data, server_data, seed + r + 1, server_update="retrain", **opts)
            .fit(refed).fit_report_.modeled_latency
            for r in range(3)])
        out.update(lat=np.median(lat), lat_lazy=np.median(lat_lazy), wall=np.median(wall),
                   offline=np.median(offline), retrain=retrain)
    return out


def cell(values):
    return f"{np.mean(values):.2f} +- {np.std(values):.2f}"


def run_table(args):
    loss_rows, time_rows = [], []
    for name in args.datasets:
        t_set = time.perf_counter()
        data = load(name, args.split_clusters)
        kc = data.split_clusters if args.clients_seed_split else data.k
        print(f"# {data.describe()}; clients seed {kc}; gamma {args.gamma}"
              + ("; MUFC clients run Lloyd ([MUFC] Appendix M.3)" if args.complete_clients
                 else ""), flush=True)
        feds = [data.federation(s) for s in range(args.seeds)]
        base = [baselines(data, feds[s], s, kc, args.dckm_n_init) for s in range(args.seeds)]
        for server_data in args.server_data:
            warm_up(lambda s, update="exact": mufc(data, server_data, s, kc=kc,
                                                   gamma=args.gamma, secure=not args.insecure,
                                                   server_update=update,
                                                   complete=args.complete_clients),
                     feds[0], data.k, kc, 0)
            runs = [dict(base[s], **mufc_seed(data, feds[s], server_data, s, args.removals, kc,
                                              args.gamma, not args.insecure,
                                              args.complete_clients))
                    for s in range(args.seeds)]
            paper = PAPER[data.pseudo_paper]
            if args.complete_clients:
                paper = PAPER_COMPLETE[data.pseudo_paper] + paper[3:]
            loss_rows.append((name, server_data,
                              *[cell([r[m] for r in runs]) for m in METHODS + ("MUFC eq.1",)],
                              *paper[:3]))
            print(" | ".join(loss_rows[-1]), flush=True)
            if args.removals:
                med = {m: float(np.median([r[m] for r in runs]))
                       for m in ("lat", "lat_lazy", "wall", "offline", "retrain")}
                time_rows.append((name, server_data, f"{med['lat'] * 1e3:.2f}",
                                  f"{med['lat_lazy'] * 1e3:.3f}", f"{med['wall'] * 1e3:.2f}",
                                  f"{med['offline'] * 1e3:.1f}", f"{med['retrain'] * 1e3:.1f}",
                                  f"{med['retrain'] / med['lat']:.1f}x",
                                  f"{med['retrain'] / med['lat_lazy']:.0f}x", paper[3]))
        print(f"# {name}: {time.perf_counter() - t_set:.0f} s", flush=True)
    print()
    table = "Table 2 (complete client training)" if args.complete_clients else "Table 1"
    print(f"Loss ratio, mean +- std over {args.seeds} seeds (population std); [MUFC] {table} "
          f"beside")
    print_table(("data set", "server data", "MUFC", "K-FED", "DC-KM", "MUFC eq.(1)",
                 "paper MUFC", "paper K-FED", "paper DC-KM"), loss_rows)
    if time_rows:
        print()
        print(f"MUFC removal latency, median over {args.seeds} seeds of the median of "
              f"{args.removals} random single-point removals (ms)")
        print_table(("data set", "server data", "exact", "lazy", "wall", "masks", "retrain",
                     "x exact", "x lazy", "paper x"), time_rows)


def print_table(header, rows):
    widths = [max(len(str(r[i])) for r in (header,) + tuple(rows)) for i in range(len(header))]
    line = "| " + " | ".join(f"{{:<{w}}}" for w in widths) + " |"
    print(line.format(*header))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for row in rows:
        print(line.format(*row))


# ---------------------------------------------------------------------------------- figures
def pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("--plot needs matplotlib: pip install 'fedcore[plot]'")
    return plt


def shaded(ax, x, curves, label, **style):
    curves = np.asarray(curves)
    mean, std = curves.mean(axis=0), curves.std(axis=0)
    line, = ax.plot(x, mean, marker="o", markersize=3, label=label, **style)
    ax.fill_between(x, mean - std, mean + std, alpha=0.25, color=line.get_color())


def loss_across_removals(data, server_data, seed, total, step, kc, gamma, secure, reference,
                         server_update="exact"):
    """MUFC's loss ratio after 0, step, 2 step, ... random single-point removals.

    phi* of the remaining points: Lloyd on them from the full data's best centers (``reference``)
    rather than new restarts (a removal moves the optimum by little).
    """
    fed = data.federation(seed)
    model = mufc(data, server_data, seed, kc=kc, gamma=gamma, secure=secure,
                 server_update=server_update).fit(fed)
    rng = np.random.default_rng(seed)
    curve = []
    for r in range(total + 1):
        if r:
            model.remove(*pick_removal(model, "random", 1, rng))
        if r % step == 0:
            Xr = remaining_points(model)[0]
            phi = fedcore.KMeans(data.k, init=reference).fit(Xr).inertia_
            curve.append(model.federated_inertia() / phi)
    return curve


def figure_removals(args, plt):
    data = load(args.datasets[0], args.split_clusters)
    kc = data.split_clusters if args.clients_seed_split else data.k
    reference = data.best_kmeans(data.X).cluster_centers_
    steps = np.arange(0, args.plot_removals + 1, args.plot_step)
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    # Exact mode for every server-data option; lazy mode (the server keeps its centers when no
    # client re-seeds) for the first one.
    runs = [(sd, "exact") for sd in args.server_data] + [(args.server_data[0], "lazy")]
    for server_data, update in runs:
        curves = [loss_across_removals(data, server_data, s, args.plot_removals, args.plot_step,
                                       kc, args.gamma, not args.insecure, reference, update)
                  for s in range(args.plot_seeds)]
        shaded(ax, steps, curves, f"MUFC, {server_data} server data, {update}",
               linestyle="--" if update == "lazy" else "-")
        print(f"Fig. 3(d) {data.name} {server_data} {update}: " + ", ".join(
            f"{r}: {m:.3f}" for r, m in zip(steps, np.mean(curves, axis=0))), flush=True)
    ax.set_ylim(bottom=1.0)
    ax.set_xlabel("random single-point removals")
    ax.set_ylabel("loss ratio")
    ax.set_title(f"{data.name}: loss ratio during unlearning", fontsize=10)
    ax.legend(fontsize=8)
    return save(fig, plt, args.plot, "mufc_fig3d_removals.png")


def figure_kprime(args, plt):
    data = load("gaussian", args.split_clusters)
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    kps = np.array([2, 4, 6, 8, 10])
    for server_data in args.server_data:
        curves = []
        for s in range(args.plot_seeds):
            row = []
            for kp in kps:
                kc = kp if args.clients_seed_split else data.k
                model = mufc(data, server_data, s, kc=kc, gamma=args.gamma,
                             secure=not args.insecure).fit(data.federation(s, kp))
                row.append(model.federated_inertia() / data.phi)
            curves.append(row)
        shaded(ax, kps, curves, f"MUFC ({server_data} server data)")
        print(f"Fig. 3(a) {server_data}: " + ", ".join(
            f"K'={kp}: {m:.3f}" for kp, m in zip(kps, np.mean(curves, axis=0))), flush=True)
    ax.set_xlabel("K' (most true clusters a client holds; 10 = all)")
    ax.set_ylabel("loss ratio")
    ax.set_title("Gaussian (K = 10): data heterogeneity", fontsize=10)
    ax.legend(fontsize=8)
    return save(fig, plt, args.plot, "mufc_fig3a_kprime.png")


def figure_gamma(args, plt):
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
    for ax, name, panel in zip(axes, ("gaussian", "celltype"), ("b", "c")):
        data = load(name, args.split_clusters)
        n = data.X.shape[0]
        kc = data.split_clusters if args.clients_seed_split else data.k
        gammas = np.array(sorted({1.0 / n, 1.0 / np.sqrt(n), 1e-3, 1e-2, 3e-2, 1e-1}))
        for server_data in args.server_data:
            curves = [[mufc(data, server_data, s, kc=kc, gamma=float(g),
                            secure=not args.insecure).fit(data.federation(s))
                       .federated_inertia() / data.phi for g in gammas]
                      for s in range(args.plot_seeds)]
            shaded(ax, gammas, curves, f"MUFC ({server_data})")
            print(f"Fig. 3({panel}) {name} {server_data}: " + ", ".join(
                f"{g:.2g}: {m:.3f}" for g, m in zip(gammas, np.mean(curves, axis=0))),
                flush=True)
        ax.axvline(1.0 / n, color="red", linewidth=1, label="1/n")
        ax.axvline(1.0 / np.sqrt(n), color="gray", linestyle="--", linewidth=1,
                   label="1/sqrt(n)")
        ax.set_xscale("log")
        ax.set_xlabel("quantization step gamma")
        ax.set_ylabel("loss ratio")
        ax.set_title(f"({panel}) {name}", fontsize=10)
        ax.legend(fontsize=7)
    return save(fig, plt, args.plot, "mufc_fig3bc_gamma.png")


def save(fig, plt, directory, name):
    fig.tight_layout()
    path = os.path.join(directory, name)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"wrote {path}", flush=True)
    return path


# ------------------------------------------------------------------------------------- main
def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", choices=DATASETS,
                        default=["celltype", "gaussian"])
    parser.add_argument("--server-data", nargs="+", choices=("uniform", "weighted"),
                        default=["uniform"],
                        help="uniform: q_j points drawn in each bin ([MUFC] Appendix H, the "
                             "paper's default); weighted: weighted k-means on the grid points")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--removals", type=int, default=10,
                        help="random single-point removals timed per seed (0: loss ratios only)")
    parser.add_argument("--split-clusters", type=int, default=5,
                        help="K' of the non-iid split of synthetic sets (at most K)")
    parser.add_argument("--clients-seed-split", action="store_true",
                        help="clients seed K' (the split's bound) centers instead of K")
    parser.add_argument("--gamma", type=parse_gamma, default="auto",
                        help="auto (1/sqrt(n)), 1/n, or a float in (0, 1]")
    parser.add_argument("--dckm-n-init", type=int, default=10,
                        help="k-means restarts of DC-KM's clients and server")
    parser.add_argument("--complete-clients", action="store_true",
                        help="MUFC clients run Lloyd after seeding (MUFC(client_refine=True)), "
                             "beside [MUFC] Table 2 (Appendix M.3)")
    parser.add_argument("--insecure", action="store_true",
                        help="plaintext sums instead of SCMA (same results, faster)")
    parser.add_argument("--plot", metavar="DIR",
                        help="draw [MUFC] Fig. 3(a)-(d) into DIR (needs matplotlib)")
    parser.add_argument("--figures", nargs="+", choices=("d", "a", "bc"),
                        default=["d", "a", "bc"])
    parser.add_argument("--plot-seeds", type=int, default=5, help="seeds behind each figure")
    parser.add_argument("--plot-removals", type=int, default=100)
    parser.add_argument("--plot-step", type=int, default=10)
    parser.add_argument("--no-table", action="store_true", help="only draw the figures")
    args = parser.parse_args(argv)
    if min(args.seeds, args.plot_seeds, args.plot_step) < 1 or \
            min(args.removals, args.plot_removals) < 0:
        parser.error("--seeds, --plot-seeds and --plot-step must be >= 1, --removals and "
                     "--plot-removals >= 0")
    if args.plot is not None and not os.path.isdir(args.plot):
        parser.error(f"--plot: {args.plot!r} is not a directory")
    return args


def main(argv=None):
    args = parse_args(argv)
    start = time.perf_counter()
    if not args.no_table:
        run_table(args)
    if args.plot:
        plt = pyplot()
        draw = {"d": figure_removals, "a": figure_kprime, "bc": figure_gamma}
        for key in args.figures:
            t0 = time.perf_counter()
            draw[key](args, plt)
            print(f"# figure {key}: {time.perf_counter() - t0:.0f} s", flush=True)
    print(f"# wall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
