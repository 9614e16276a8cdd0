"""Reproduce [FeCA] Table 1 (l2-distance to the true centers on the S-sets) with the paper's numbers
beside ours, the [FeCA] Appendix C.3 ablation, a real-data table (purity / NMI on scikit-learn's
digits), and time FeCA at scale.

    python benchmarks/feca_table1.py                    # real S-sets and digits, 10 seeds
    python benchmarks/feca_table1.py --quick            # smoke test: 2 seeds
    python benchmarks/feca_table1.py --data synthetic   # S-sets-like generators instead
    python benchmarks/feca_table1.py --ablation         # + FeCA without one-fit-many removal
    python benchmarks/feca_table1.py --speed            # FeCA on 100 clients x 10,000 points

Protocol ([FeCA] Section 6.1, [FeCA] Appendix C.5)
- Data (``--data real``, the default): the published S-sets S1..S4 [SSets],
  ``fedcore.datasets.load_s_sets(level)``: 5000 points in 2-D, 15 labelled clusters; the true
  centers are the means of the labelled clusters (the published sets carry no other centers).
  The data are the same in every run; a seed changes the partition and every method's seeds.
  ``--data synthetic``: ``fedcore.datasets.make_s_sets(level, random_state=seed)`` (S-sets-like
  generator [SSetsGen], 15 clusters, 5000 points, S-sets coordinate scale, true centers = the
  generating means), new data for every seed.
- Partitions over M = 10 clients: IID and Dirichlet(alpha) label skew with alpha = 0.3, 0.1
  ([Dirichlet], ``fedcore.partition``), partition seed = run index. A Dirichlet draw that leaves
  a client with fewer points than the per-client cluster count is redrawn with the next partition
  seed (the count of redraws is printed).
- Metric: ``center_distance(centers, true_centers) / 1e4``, the "l2-distance x 10^4" of [FeCA]
  Table 1; mean and population std (ddof = 0) over the seeds. If a method returns fewer centers
  than true centers (FeCA when fewer groups form, [FeCA] Appendix E), each unmatched true center
  adds its squared distance to the nearest returned center, so missing centers are charged,
  never ignored (the count of such runs is printed per method). [FeCA] Table 5 (Appendix C.3)
  reports "MSE x 10^6" on S1 IID, which is ``center_distance ** 2 / 15 / 1e6`` here; it is
  printed for FeCA (and the ablation) beside the paper's values.
- Methods: FeCA (k' = k = 15, empirical radius, [FeCA] Alg. 4), M-Avg [MAvg], FFCM v1/v2 [FFCM]
  after 1 and 10 rounds (the 1-round value is the first round of the 10-round run, identical to a
  1-round run by construction), k-FED [KFED] with k' tuned on S1 Dirichlet(0.3) over 2..15 as in
  [FeCA] Appendix C.5 (on the same data source and seeds as the table), and centralized k-means.
  When the tuned k' is not the paper's k' = 5, k-FED with k' = 5 is reported too, so that the
  paper's row has a counterpart. Every client-side k-means uses ``--client-n-init`` k-means++
  starts (default 10, scikit-learn's default when [FeCA] was written) seeded with
  ``--client-local-trials`` candidates per center (default "auto": greedy k-means++ with
  2 + floor(ln k) candidates, scikit-learn's seeding; 1 is vanilla k-means++), the same for
  FeCA, M-Avg and k-FED; FFCM's round-0 client k-means is greedy too (``client_kmeans``).
  Centralized k-means, with the same seeding, is reported with a single start (the setting of
  [FeCA] Remark 6.1: one Lloyd run on all data) and with the same number of starts as the
  clients.
- Ablation (``--ablation``, [FeCA] Appendix C.3): ``FeCA(remove_one_fit_many=False)``, whose
  clients skip the one-fit-many removal of ClientUpdate ([FeCA] Alg. 2 lines 3-13) and send
  every Lloyd centroid whose cluster holds a point, with its radius; same seeds and settings as
  the FeCA row. It adds the row "FeCA (no removal)" to every S-set table and its S1 IID
  MSE x 10^6 beside [FeCA] Table 5's. The switch refuses to run (exit code 2) with a version of
  fedcore whose ``FeCA`` has no such parameter, rather than rebuilding FeCA's client step here.
- Digits: ``sklearn.datasets.load_digits`` (1797 x 64, 10 classes), the same partitions, k = 10,
  K-FED k' = 3 (k' <= sqrt(k), as [FeCA] Table 2 does for CIFAR-10); purity and NMI of the
  nearest-center assignment of all points against the digit labels. Not a table of [FeCA].

Deviations from [FeCA]
- The true centers of the real S-sets are the means of the labelled clusters (fedcore bundles
  no other centers); [FeCA] does not say which centers it measured against.
- k-FED's k' is tuned by [FeCA] Appendix C.5's protocol on the data of the table, so it may
  differ from the paper's k' = 5; k' = 5 is then reported as well.
- Implementation details of the baselines that [FeCA] does not give are fedcore's own
  (documented in ``fedcore.algorithms.baselines``): client k-means with ``--client-n-init``
  greedy k-means++ starts; M-Avg matches every client's centroids to a template (one client's
  centroids) with the Hungarian algorithm and replaces the template by the matched means until
  no match changes; FFCM uses fuzziness 2, each client running fuzzy c-means from the broadcast
  centers. They are implemented from their descriptions and not tuned toward any ranking.
- Charging unmatched true centers (above) is fedcore's convention; [FeCA] does not say how it
  scored runs with fewer than 15 centers.
- [FeCA] does not say whether its std is the population or the sample std (ddof = 0 here).
"""
import argparse
import functools
import sys
import time
import warnings

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.stats import wilcoxon

import fedcore
from fedcore.algorithms.feca import FeCA, FewerGroupsWarning
from fedcore.algorithms.baselines.ffcm import FFCM
from fedcore.algorithms.baselines.kfed import KFed
from fedcore.algorithms.baselines.match_averaging import MatchAveraging
from fedcore.datasets import load_s_sets, make_s_sets
from fedcore.metrics import center_distance, nmi, purity

SCHEMES = [("IID", "iid", None), ("(0.3)", "dirichlet", 0.3), ("(0.1)", "dirichlet", 0.1)]
PAPER_K_FED = 5
ABLATION_PARAM = "remove_one_fit_many"
ABLATION = "FeCA (no removal)"
CENTRAL_1, CENTRAL_N = "Centralized, 1 start", "Centralized, n starts"

# [FeCA] Table 1 (mean +/- std over 10 runs), columns S1..S4 x (IID, (0.3), (0.1)).
PAPER = {
    "M-Avg": ["7.2±4.3", "45.8±5.0", "63.0±2.8", "14.7±7.1", "51.4±8.9", "64.0±11.1",
              "16.4±6.8", "35.5±5.7", "46.7±5.3", "14.2±3.7", "28.7±3.3", "40.1±6.4"],
    "FFCMv1(Rd=1)": ["12.2±15.8", "80.7±13.3", "81.1±15.7", "16.7±20.4", "70.9±13.3",
                     "89.7±16.0", "16.6±15.2", "58.1±11.9", "77.4±8.9", "11.4±9.5", "45.0±8.9",
                     "63.1±10.8"],
    "FFCMv1(Rd=10)": ["3.3±1.4", "50.3±8.8", "66.1±12.4", "9.6±19.1", "56.9±12.3", "60.3±18.2",
                      "11.4±15.5", "45.9±8.8", "66.6±12.9", "4.8±1.3", "45.0±12.3", "52.0±11.9"],
    "FFCMv2(Rd=1)": ["23.1±19.4", "75.7±16.8", "77.0±14.4", "16.1±16.9", "71.9±13.5",
                     "79.9±12.6", "18.2±12.6", "62.7±12.6", "79.1±10.2", "13.0±11.4", "48.9±9.7",
                     "60.4±9.6"],
    "FFCMv2(Rd=10)": ["2.6±0.4", "42.9±14.8", "54.2±14.6", "32.9±0.5", "58.1±13.5", "59.4±25.8",
                      "4.5±0.7", "49.4±19.3", "56.7±16.7", "4.9±0.6", "44.6±9.1", "49.9±7.3"],
    f"k-FED(k'={PAPER_K_FED})": ["84.6±15.8", "59.4±12.3", "59.8±16.9", "75.9±17.7", "64.1±13.1",
                                 "63.9±11.6", "73.1±14.3", "65.6±15.2", "68.8±12.8", "52.7±10.8",
                                 "43.4±6.3", "47.5±8.6"],
    "FeCA": ["1.0±0.1", "6.8±3.7", "22.3±15.6", "1.9±0.1", "13.6±16.1", "38.8±3.4", "3.6±0.7",
             "23.6±8.8", "33.2±6.7", "4.7±0.7", "24.5±7.2", "31.5±5.8"],
    CENTRAL_1: ["14.3±18.7", "", "", "8.4±14.7", "", "", "25.4±19.1", "", "", "20.1±10.0", "",
                ""],
}
# [FeCA] Table 5 (Appendix C.3): MSE x 10^6 on S1 IID, mean of 10 runs.
PAPER_MSE_S1_IID = {"FeCA": 6.7, ABLATION: 12977.2}
# [FeCA] Appendix C.5 Table 7: k-FED on S1 Dirichlet(0.3), l2-distance x 10^4 for k' = 2..8.
PAPER_KFED_TUNING = {2: "63.3±7.0", 3: "65.9±11.9", 4: "60.8±16.8", 5: "58.1±10.7",
                     6: "60.3±15.0", 7: "59.4±11.1", 8: "62.5±11.0"}


def feca_has_ablation():
    """True when ``fedcore.FeCA`` can skip the one-fit-many removal ([FeCA] Appendix C.3)."""
    return ABLATION_PARAM in FeCA(1).get_params()


@functools.lru_cache(maxsize=None)
def _real_s_set(level):
    X, y, centers = load_s_sets(level)
    for a in (X, y, centers):
        a.flags.writeable = False
    return X, y, centers


def s_set(level, seed, data):
    """(X, y, true centers) of S``level`` for run ``seed``: the published set or a generated one."""
    if data == "real":
        return _real_s_set(level)
    return make_s_sets(level, random_state=seed)


def l2_to_truth(centers, truth):
    """center_distance, charging unmatched true centers their distance to the nearest center."""
    if centers.shape[0] >= truth.shape[0]:
        return center_distance(centers, truth)
    cost = ((truth[:, None] - centers[None]) ** 2).sum(axis=2)
    rows, cols = linear_sum_assignment(cost)
    unmatched = np.setdiff1d(np.arange(truth.shape[0]), rows)
    return float(np.sqrt(cost[rows, cols].sum() + cost[unmatched].min(axis=1).sum()))


def mse_1e6(l2_1e4, k=15):
    """[FeCA] Table 5's "MSE x 10^6" from the l2-distance x 10^4 of the same run."""
    return (np.asarray(l2_1e4) * 1e4) ** 2 / k / 1e6


def partition(X, y, scheme, alpha, seed, min_size):
    """``fedcore.partition`` with M = 10; redraw (next seed) while a client is too small."""
    for redraw in range(100):
        fed = fedcore.partition(X, 10, scheme, labels=y, alpha=alpha,
                                random_state=seed + 1000 * redraw)
        if fed.client_sizes.min() >= min_size:
            return fed, redraw
    raise RuntimeError(f"no partition with clients of >= {min_size} points in 100 draws")


def fit_all(fed, X, k, k_fed, n_init, seed, trials, extra_k_fed=(), ablation=False,
            removed=None):
    """Centers of every method on one federation; ``trials`` is every k-means' n_local_trials.

    Keys: the method names; k-FED with ``k_fed`` is "k-FED", each of ``extra_k_fed`` is
    "k-FED(k'=...)"; ``ablation`` adds FeCA without the one-fit-many removal. ``removed``, a
    list, gets the number of Lloyd centroids FeCA's clients removed as one-fit-many.
    """
    out = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewerGroupsWarning)
        feca = FeCA(k, n_init=n_init, n_local_trials=trials, random_state=seed).fit(fed)
        out["FeCA"] = feca.cluster_centers_
        if removed is not None:
            removed.append(sum(r.shape[0] for r in feca.client_removed_))
        if ablation:
            out[ABLATION] = FeCA(k, n_init=n_init, n_local_trials=trials, random_state=seed,
                                 **{ABLATION_PARAM: False}).fit(fed).cluster_centers_
    out["M-Avg"] = MatchAveraging(k, n_init=n_init, n_local_trials=trials,
                                  random_state=seed).fit(fed).cluster_centers_
    for kp, name in [(k_fed, "k-FED")] + [(kp, f"k-FED(k'={kp})") for kp in extra_k_fed]:
        out[name] = KFed(k, client_clusters=kp, n_init=n_init, n_local_trials=trials,
                         random_state=seed).fit(fed).cluster_centers_
    for version in (1, 2):
        model = FFCM(k, version=version, n_rounds=10, random_state=seed).fit(fed)
        out[f"FFCMv{version}(Rd=1)"] = model.history_[0]
        out[f"FFCMv{version}(Rd=10)"] = model.cluster_centers_
    out[CENTRAL_1] = fedcore.KMeans(k, random_state=seed, n_local_trials=trials
                                    ).fit(X).cluster_centers_
    out[CENTRAL_N] = fedcore.KMeans(k, n_init=n_init, random_state=seed,
                                    n_local_trials=trials).fit(X).cluster_centers_
    return out


def tune_kfed(seeds, n_init, trials, data):
    """[FeCA] Appendix C.5: k' in 2..15 on S1 Dirichlet(0.3), lowest mean l2-distance."""
    scores = {}
    for kp in range(2, 16):
        d = []
        for seed in seeds:
            X, y, c = s_set(1, seed, data)
            fed, _ = partition(X, y, "dirichlet", 0.3, seed, kp)
            m = KFed(15, client_clusters=kp, n_init=n_init, n_local_trials=trials,
                     random_state=seed).fit(fed)
            d.append(l2_to_truth(m.cluster_centers_, c) / 1e4)
        scores[kp] = (np.mean(d), np.std(d))
    best = min(scores, key=lambda kp: scores[kp][0])
    return best, scores


def fmt(values):
    return f"{np.mean(values):.1f}±{np.std(values):.1f}"


def print_table(header, rows):
    """A Markdown table with padded columns; ``rows`` are lists of cells."""
    widths = [max(len(str(r[j])) for r in [header] + rows) for j in range(len(header))]
    print()
    for i, r in enumerate([header] + rows):
        print("| " + " | ".join(str(c).ljust(w) for c, w in zip(r, widths)) + " |")
        if i == 0:
            print("|" + "|".join("-" * (w + 2) for w in widths) + "|")


def s_sets_table(seeds, n_init, trials, data, ablation):
    k_fed, scores = tune_kfed(seeds, n_init, trials, data)
    print(f"k-FED k' tuning on S1 Dirichlet(0.3) ({data} S-sets; l2 x 1e4, mean±std over "
          f"{len(seeds)} seeds; [FeCA] Table 7 in brackets where it reports one):")
    for kp, (m, s) in scores.items():
        paper = f"  [{PAPER_KFED_TUNING[kp]}]" if kp in PAPER_KFED_TUNING else ""
        print(f"  k'={kp:2d}: {m:5.1f}±{s:.1f}{paper}")
    print(f"  chosen k' = {k_fed} ([FeCA] chose k' = {PAPER_K_FED})")
    extra = () if k_fed == PAPER_K_FED else (PAPER_K_FED,)
    tuned = f"k-FED(k'={k_fed})"
    federated = (["M-Avg", "FFCMv1(Rd=1)", "FFCMv1(Rd=10)", "FFCMv2(Rd=1)", "FFCMv2(Rd=10)",
                  tuned] + [f"k-FED(k'={kp})" for kp in extra])
    methods = federated + ["FeCA"] + ([ABLATION] if ablation else []) + [CENTRAL_1, CENTRAL_N]
    columns, redraws = [], 0
    results = {name: [] for name in methods}
    short = {name: 0 for name in methods}
    removed = []  # per column: one-fit-many centroids FeCA's clients removed, over the seeds
    t0 = time.perf_counter()
    for level in (1, 2, 3, 4):
        for label, scheme, alpha in SCHEMES:
            columns.append(f"S{level} {label}")
            per = {name: [] for name in methods}
            removed.append([])
            for seed in seeds:
                X, y, c = s_set(level, seed, data)
                fed, r = partition(X, y, scheme, alpha, seed, 15)
                redraws += r
                out = fit_all(fed, X, 15, k_fed, n_init, seed, trials, extra, ablation,
                              removed[-1])
                out[tuned] = out.pop("k-FED")
                for name, centers in out.items():
                    short[name] += centers.shape[0] < c.shape[0]
                    per[name].append(l2_to_truth(centers, c) / 1e4)
            for name in methods:
                results[name].append(per[name])
            best = min(federated + ["FeCA"], key=lambda n: np.mean(per[n]))
            print(f"  done {columns[-1]:10s} ({time.perf_counter() - t0:5.0f} s) lowest "
                  f"federated mean: {best}", flush=True)
    print(f"\n[FeCA] Table 1 on the {data} S-sets: l2-distance x 1e4 to the true centers, "
          f"mean±std over {len(seeds)} seeds (ours), each followed by the paper's (10 runs; n/a: "
          f"no such row in the paper); client k-means "
          f"n_init={n_init}, n_local_trials={trials!r}; {redraws} Dirichlet redraw(s)")
    for level in (1, 2, 3, 4):
        j0 = 3 * (level - 1)
        header = [f"S{level}"]
        for label, _, _ in SCHEMES:
            header += [label, "paper"]
        rows = []
        for name in methods:
            paper = PAPER.get(name, [""] * 12)
            cells = [name]
            for j in range(j0, j0 + 3):
                central_only_iid = name in (CENTRAL_1, CENTRAL_N) and j % 3 != 0
                cells += ["" if central_only_iid else fmt(results[name][j]),
                          paper[j] or ("" if central_only_iid or name in PAPER else "n/a")]
            rows.append(cells)
        print_table(header, rows)
    print("\nRuns with fewer centers than true centers (charged as described): "
          + ", ".join(f"{n}: {c}" for n, c in short.items() if c) if any(short.values())
          else "\nNo run returned fewer centers than true centers.")
    print(f"One-fit-many centroids removed by FeCA's clients ([FeCA] Alg. 2 line 8), of "
          f"{len(seeds) * 10 * 15} Lloyd centroids per column ({len(seeds)} seeds x 10 clients x "
          f"15): " + ", ".join(f"{c} {sum(r)}" for c, r in zip(columns, removed)))
    print(f"\n[FeCA] Table 5 (S1 IID, MSE x 1e6, mean over {len(seeds)} seeds): "
          + "; ".join(f"{name} {np.mean(mse_1e6(results[name][0])):.1f} (paper "
                      f"{PAPER_MSE_S1_IID[name]})" for name in PAPER_MSE_S1_IID
                      if name in results))
    wins = [all(np.mean(results["FeCA"][j]) <= np.mean(results[n][j]) for n in federated)
            for j in range(12)]
    print(f"\nFeCA lowest mean among the federated methods in {sum(wins)}/12 columns"
          + (";\n  not in " + ", ".join(c for c, w in zip(columns, wins) if not w)
             if not all(wins) else ""))
    if extra:
        tuned_only = [m for m in federated if m not in [f"k-FED(k'={kp})" for kp in extra]]
        n = sum(all(np.mean(results["FeCA"][j]) <= np.mean(results[m][j]) for m in tuned_only)
                for j in range(12))
        print(f"  ({n}/12 against the tuned k-FED only, without k-FED(k'={PAPER_K_FED}))")
    print("Paired by seed against the federated method with the lowest other mean in each column "
          "(same data and partition; Wilcoxon signed-rank, two-sided):")
    for j, col in enumerate(columns):
        other = min(federated, key=lambda n: np.mean(results[n][j]))
        diff = np.asarray(results["FeCA"][j]) - np.asarray(results[other][j])
        p = wilcoxon(diff).pvalue if np.any(diff != 0) else 1.0
        print(f"  {col:10s} FeCA - {other}: {diff.mean():+.1f} (FeCA lower on "
              f"{int((diff < 0).sum())}/{diff.size} seeds, p = {p:.2g})")
    print(f"FeCA vs centralized (1 start) on S1 IID: {fmt(results['FeCA'][0])} vs "
          f"{fmt(results[CENTRAL_1][0])}")
    return results


def digits_table(seeds, n_init, trials):
    from sklearn.datasets import load_digits
    X, y = load_digits(return_X_y=True)
    X = X.astype(np.float64)
    k = 10
    methods = ["M-Avg", "FFCMv1(Rd=1)", "FFCMv1(Rd=10)", "FFCMv2(Rd=1)", "FFCMv2(Rd=10)",
               "k-FED", "FeCA", CENTRAL_1, CENTRAL_N]
    print(f"\nDigits (scikit-learn, 1797 x 64): purity / NMI of nearest-center labels, mean over "
          f"{len(seeds)} seeds; k-FED k'=3")
    rows = {name: [] for name in methods}
    columns = []
    for label, scheme, alpha in SCHEMES:
        columns.append(label)
        per = {name: ([], []) for name in methods}
        for seed in seeds:
            fed, _ = partition(X, y, scheme, alpha, seed, k)
            for name, centers in fit_all(fed, X, k, 3, n_init, seed, trials).items():
                labels = np.argmin(((X[:, None, :] - centers[None]) ** 2).sum(axis=2), axis=1)
                per[name][0].append(purity(y, labels))
                per[name][1].append(nmi(y, labels))
        for name in methods:
            rows[name].append((np.mean(per[name][0]), np.mean(per[name][1])))
    print("\n| Method | " + " | ".join(f"Purity {c}" for c in columns) + " | "
          + " | ".join(f"NMI {c}" for c in columns) + " |")
    print("|---|" + "---|" * 6)
    for name in methods:
        p = [f"{v[0]:.2f}" for v in rows[name]]
        n = [f"{v[1]:.2f}" for v in rows[name]]
        if name in (CENTRAL_1, CENTRAL_N):
            p, n = [p[0], "", ""], [n[0], "", ""]
        print(f"| {name} | " + " | ".join(p) + " | " + " | ".join(n) + " |")


def speed(repeats=5):
    """FeCA end to end on M = 100 clients x 10,000 points, d = 50, k = 20 (Gaussian mixture)."""
    import numba
    X, _, truth = fedcore.datasets.make_gaussian_mixture(1_000_000, 50, 20, cluster_std=0.05,
                                                         random_state=0)
    fed = fedcore.HorizontalFederation.from_arrays([X[l * 10_000:(l + 1) * 10_000]
                                                    for l in range(100)])
    tiny = X[:400]
    FeCA(3, random_state=0).fit([tiny[:200], tiny[200:]])  # compile / load kernels first
    print(f"FeCA, 100 clients x 10,000 points, d=50, k=20; numba threads = "
          f"{numba.get_num_threads()}; machine shared and noisy")
    for n_jobs in (1, None):
        walls, cpus = [], []
        for r in range(repeats):
            t, c = time.perf_counter(), time.process_time()
            model = FeCA(20, random_state=r, n_jobs=n_jobs).fit(fed)
            walls.append(time.perf_counter() - t)
            cpus.append(time.process_time() - c)
        print(f"  n_jobs={n_jobs}: wall median {np.median(walls):.2f} s (min {min(walls):.2f}), "
              f"CPU median {np.median(cpus):.2f} s; center distance "
              f"{center_distance(model.cluster_centers_, truth):.4f}, groups {model.n_groups_}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", choices=("real", "synthetic"), default="real",
                        help="S-sets: the published sets (default) or the S-sets-like generator")
    parser.add_argument("--seeds", type=int, default=None,
                        help="runs per column (default 10, the paper's; 2 with --quick)")
    parser.add_argument("--quick", action="store_true", help="smoke test: 2 seeds")
    parser.add_argument("--ablation", action="store_true",
                        help="add FeCA without the one-fit-many removal ([FeCA] Appendix C.3)")
    parser.add_argument("--client-n-init", type=int, default=10)
    parser.add_argument("--client-local-trials", default="auto",
                        help='k-means++ candidates per center in every k-means: "auto" (greedy, '
                             'scikit-learn\'s seeding; default) or an int (1: vanilla)')
    parser.add_argument("--speed", action="store_true", help="only the speed benchmark")
    parser.add_argument("--no-digits", action="store_true")
    args = parser.parse_args(argv)
    if args.ablation and not feca_has_ablation():
        parser.error(f"--ablation needs fedcore.FeCA({ABLATION_PARAM}=False), which this "
                     "version of fedcore does not have: FeCA cannot skip the one-fit-many "
                     "removal of ClientUpdate ([FeCA] Alg. 2 lines 3-13)")
    if args.speed:
        speed()
        return
    n_seeds = args.seeds if args.seeds is not None else (2 if args.quick else 10)
    if n_seeds < 1:
        parser.error(f"--seeds must be at least 1, got {n_seeds}")
    seeds = list(range(n_seeds))
    trials = args.client_local_trials
    trials = int(trials) if trials.isdigit() else trials
    print(f"fedcore {fedcore.__version__}; python {sys.version.split()[0]}")
    t = time.perf_counter()
    s_sets_table(seeds, args.client_n_init, trials, args.data, args.ablation)
    if not args.no_digits:
        digits_table(seeds, args.client_n_init, trials)
    print(f"\n(total {time.perf_counter() - t:.0f} s)")


if __name__ == "__main__":
    main()
