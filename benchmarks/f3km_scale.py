"""F3KM at scale (the setting of [F3KM] Table 4), Fair-LP side by side, and the quality tables of
[F3KM].

    python benchmarks/f3km_scale.py                   # [F3KM] Table 4: n = 50k, 0.5M, 1M, 5M
    python benchmarks/f3km_scale.py --n 50000 500000 --repeats 3
    python benchmarks/f3km_scale.py --real            # [F3KM] Fig. 9: Wage, CPS1988 vs Fair-LP
    python benchmarks/f3km_scale.py --real --deltas 0.2 0.4 0.6 0.8   # [F3KM] Fig. 8 (k = 4)
    python benchmarks/f3km_scale.py --rounds          # [F3KM] Table 3: rounds vs block size (Wage)
    python benchmarks/f3km_scale.py --quick           # smoke test: Table 4 at n = 50k, no Fair-LP
    python benchmarks/f3km_scale.py --quick --stop paper   # the same with the paper's stopping rule

Stopping rule (``--stop``, every mode): ``fedcore`` (default) is ``FairKMeans(stop="fedcore")``,
fedcore's rule (eq. (33) of [F3KM] holds and the objective stagnates) with the estimator's
``max_iter = 100``; ``paper`` is ``FairKMeans(stop="paper")``, stopping as soon as [F3KM]
eq. (33) holds (the criterion of [F3KM] Section 4.2.3), with at most 50 iterations, the budget of
[F3KM] Section 5.3.1. ``--max-iter`` overrides either budget (``--rounds`` runs 50 unless told).

[F3KM] Table 4 setting: synthetic ``make_fair_blobs`` with d = 53, k = 3, two sensitive attributes
with 5 groups each (10 groups), delta = 0.5, block_size = n/4, the estimator's other defaults
(max_iter = 100; see ``--stop``). Each size runs in its own process (so the peak resident memory
is that of one fit; "fit mem/X" is the growth of the peak resident memory during the fits, with
the data and the warm-up already in memory, over the size of X); the time is the median over
``--repeats`` fits after a warm-up on tiny data, and excludes data generation; iterations,
violation, minimum balance and SSE are those of the last fit. Fair-LP (scipy HiGHS) runs up to
``--fairlp-max-n`` rows with a time limit of ``--fairlp-time-limit`` seconds; the ratio printed is
Fair-LP time / F3KM time (> 1: F3KM faster).
"""
import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np


def _warm():
    from fedcore.algorithms.f3km import FairKMeans, FairLP
    from fedcore.datasets.fair import make_fair_blobs
    w = make_fair_blobs(500, 53, 3, groups_per_attribute=(5, 5), random_state=0)
    FairKMeans(3, delta=0.5, max_iter=3, random_state=0).fit(w.X, groups=w.groups)
    FairLP(3, delta=0.5, random_state=0).fit(w.X[:100], groups=[g[:100] for g in w.groups])


def one_size(n, repeats, fairlp, time_limit, max_iter, stop):
    """Run one size in this process; returns a dict of results."""
    from fedcore.algorithms.f3km import FairKMeans, FairLP
    from fedcore.datasets.fair import make_fair_blobs
    _warm()
    data = make_fair_blobs(n, 53, 3, groups_per_attribute=(5, 5), bias=0.5, random_state=0)
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    times = []
    for r in range(repeats):
        t0 = time.perf_counter()
        model = FairKMeans(3, delta=0.5, block_size="auto", max_iter=max_iter, stop=stop,
                           random_state=r).fit(data.X, groups=data.groups)
        times.append(time.perf_counter() - t0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out = {"n": n, "f3km_s": float(np.median(times)), "f3km_iters": model.n_iter_,
           "f3km_violation": model.violation_, "f3km_min_balance": float(np.nanmin(model.balance_)),
           "f3km_evaluations": model.n_ranges_, "f3km_sse": model.inertia_,
           "data_bytes": data.X.nbytes,
           "peak_rss_bytes": peak, "rss_before_fit_bytes": base_rss}
    if fairlp:
        t0 = time.perf_counter()
        try:
            lp = FairLP(3, delta=0.5, time_limit=time_limit, random_state=0).fit(
                data.X, groups=data.groups)
            out.update(fairlp_s=time.perf_counter() - t0, fairlp_violation=lp.violation_,
                       fairlp_min_balance=float(np.nanmin(lp.balance_)),
                       fairlp_sse=lp.inertia_)
        except RuntimeError as exc:
            out.update(fairlp_s=None, fairlp_error=str(exc)[:120])
    return out


def table4(args):
    print(f"F3KM (fedcore.FairKMeans) vs Fair-LP, d=53, k=3, 10 groups / 2 attributes, delta=0.5, "
          f"block n/4, stop={args.stop}, max_iter={args.max_iter}; medians of {args.repeats} "
          f"fit(s)")
    header = (f"{'n':>9} {'F3KM s':>8} {'iters':>5} {'viol':>8} {'min bal':>7} {'SSE':>11} "
              f"{'fit mem/X':>9} {'FairLP s':>9} {'LP viol':>7} {'LP/F3KM':>7}")
    print(header)
    for n in args.n:
        cmd = [sys.executable, __file__, "--one", str(n), "--repeats", str(args.repeats),
               "--fairlp-time-limit", str(args.fairlp_time_limit), "--max-iter",
               str(args.max_iter), "--stop", args.stop]
        if n <= args.fairlp_max_n:
            cmd.append("--with-fairlp")
        res = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                        text=True).stdout.strip().splitlines()[-1])
        lp = res.get("fairlp_s")
        ratio = f"{lp / res['f3km_s']:7.2f}" if lp else "      -"
        extra = (res["peak_rss_bytes"] - res["rss_before_fit_bytes"]) / res["data_bytes"]
        lp_s = f"{lp:9.1f}" if lp else ("      TLE" if "fairlp_error" in res else "        -")
        lp_v = f"{res['fairlp_violation']:7.1f}" if lp else "      -"
        print(f"{n:>9} {res['f3km_s']:8.1f} {res['f3km_iters']:5d} {res['f3km_violation']:8.1f} "
              f"{res['f3km_min_balance']:7.3f} {res['f3km_sse']:11.5g} {extra:9.2f} "
              f"{lp_s} {lp_v} {ratio}", flush=True)


def real_tables(args):
    from fedcore import KMeans, kmeans_plusplus
    from fedcore.algorithms.f3km.cdkm import CDKM
    from fedcore.algorithms.f3km import FairKMeans, FairLP
    from fedcore.datasets.fair import load_cps1988, load_wage
    from fedcore.metrics.fairness import additive_violation, balance, relative_error
    print(f"Fig. 8/9 setting: k=4, delta in {args.deltas}; relative error = SSE / SSE(Lloyd from "
          "the same k-means++ seeds); min balance over clusters; additive violation (eq. 33); "
          f"F3KM block_size={args.real_block_size}, stop={args.stop}, max_iter={args.max_iter}; "
          "Lloyd's time is not measured (0.00)")
    print(f"{'table':>8} {'delta':>5} {'seed':>4} {'method':>14} {'rel.err':>7} {'min bal':>7} "
          f"{'viol':>6} {'iters':>5} {'s':>6}")
    summary = {}
    for name, data in (("wage", load_wage()), ("cps1988", load_cps1988())):
        X, g = data.X, data.groups
        for seed in range(args.seeds):
            centers, _ = kmeans_plusplus(X, 4, random_state=seed)
            lloyd = KMeans(4, init=centers, tol=0.0).fit(X)
            t0 = time.perf_counter()
            cd = CDKM(4, random_state=seed).fit(X)
            base = [("Lloyd", lloyd.labels_, 0.0, None, lloyd.n_iter_),
                    ("CDKM", cd.labels_, time.perf_counter() - t0, None, cd.n_iter_)]
            for delta in args.deltas:
                rows = list(base)
                for rho in (1.0, 10.0):
                    t0 = time.perf_counter()
                    m = FairKMeans(4, delta=delta, rho=rho, block_size=args.real_block_size,
                                   max_iter=args.max_iter, stop=args.stop,
                                   random_state=seed).fit(X, groups=g)
                    rows.append((f"F3KM rho={rho:g}", m.labels_, time.perf_counter() - t0,
                                 m.violation_, m.n_iter_))
                if not args.no_fairlp:
                    t0 = time.perf_counter()
                    lp = FairLP(4, delta=delta, random_state=seed).fit(X, groups=g)
                    rows.append(("Fair-LP", lp.labels_, time.perf_counter() - t0, lp.violation_,
                                 None))
                for method, labels, secs, viol, iters in rows:
                    viol = additive_violation(labels, g, delta=delta) if viol is None else viol
                    iters = "" if iters is None else iters
                    rel = relative_error(X, labels, lloyd.labels_)
                    bal = float(np.nanmin(balance(labels, g, 4)))
                    summary.setdefault((name, delta, method), []).append((rel, bal, viol))
                    print(f"{name:>8} {delta:5.2f} {seed:>4} {method:>14} {rel:7.3f} {bal:7.3f} "
                          f"{viol:6.2f} {iters:>5} {secs:6.2f}", flush=True)
    if args.seeds > 1:
        print(f"\nMeans over {args.seeds} seeds (viol: mean / max)")
        print(f"{'table':>8} {'delta':>5} {'method':>14} {'rel.err':>7} {'min bal':>7} "
              f"{'viol':>13}")
        for (name, delta, method), vals in summary.items():
            v = np.array(vals)
            print(f"{name:>8} {delta:5.2f} {method:>14} {v[:, 0].mean():7.3f} "
                  f"{v[:, 1].mean():7.3f} {v[:, 2].mean():6.2f} / {v[:, 2].max():5.2f}")


def rounds(args):
    from fedcore import VerticalFederation, KMeans, kmeans_plusplus
    from fedcore.algorithms.f3km import FairKMeans
    from fedcore.datasets.fair import load_wage
    from fedcore.metrics.fairness import relative_error
    data = load_wage()
    X, g = data.X, data.groups
    vfed = VerticalFederation.from_columns(X, [4, 4], groups=[[g[0]], [g[1]]])
    centers, _ = kmeans_plusplus(X, 4, random_state=0)
    lloyd = KMeans(4, init=centers, tol=0.0).fit(X)
    print(f"Table 3 setting on Wage (n={X.shape[0]}, 2 parties, one sensitive attribute each): "
          f"k=4, delta=0.2, stop={args.stop}, max_iter={args.max_iter}; rounds recorded by the "
          f"ledger")
    print(f"{'n_b':>6} {'rounds':>9} {'iters':>5} {'rounds/iter':>11} {'rel.err':>7}")
    for nb in args.block_sizes:
        m = FairKMeans(4, delta=0.2, block_size=nb, max_iter=args.max_iter, stop=args.stop,
                       random_state=0).fit(vfed)
        print(f"{nb:>6} {m.comm_.n_rounds:>9} {m.n_iter_:>5} {m.comm_.n_rounds / m.n_iter_:11.1f} "
              f"{relative_error(X, m.labels_, lloyd.labels_):7.3f}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, nargs="+", default=[50_000, 500_000, 1_000_000, 5_000_000])
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--max-iter", type=int, default=None,
                   help="F3KM iteration budget (default 100 with --stop fedcore, 50 with --stop "
                        "paper and with --rounds)")
    p.add_argument("--stop", choices=("fedcore", "paper"), default="fedcore",
                   help="F3KM stopping rule: fedcore's (eq. (33) and a stagnant objective; "
                        "default) or the paper's (eq. (33) alone)")
    p.add_argument("--quick", action="store_true",
                   help="smoke test: Table 4 at n = 50,000 without Fair-LP; with --real one seed "
                        "without Fair-LP; with --rounds block sizes 200 and 1000")
    p.add_argument("--fairlp-max-n", type=int, default=500_000)
    p.add_argument("--fairlp-time-limit", type=float, default=1800.0)
    p.add_argument("--real", action="store_true")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--deltas", type=float, nargs="+", default=[0.2],
                   help="--real: delta values ([F3KM] Fig. 8: 0.2 0.4 0.6 0.8; Fig. 9: 0.2)")
    p.add_argument("--real-block-size", type=lambda v: v if v == "auto" else int(v),
                   default="auto", help="--real: F3KM block size n_b (default auto = n/4)")
    p.add_argument("--rounds", action="store_true")
    p.add_argument("--block-sizes", type=int, nargs="+", default=[1, 200, 500, 1000, 3000])
    p.add_argument("--one", type=int, help=argparse.SUPPRESS)
    p.add_argument("--with-fairlp", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.max_iter is None:
        args.max_iter = 50 if args.stop == "paper" or args.rounds else 100
    args.no_fairlp = False
    if args.quick:
        args.n, args.repeats, args.fairlp_max_n = [50_000], 1, 0
        args.seeds, args.no_fairlp = 1, True
        args.block_sizes = [200, 1000]
    if args.one:
        print(json.dumps(one_size(args.one, args.repeats, args.with_fairlp,
                                  args.fairlp_time_limit, args.max_iter, args.stop)))
    elif args.real:
        real_tables(args)
    elif args.rounds:
        rounds(args)
    else:
        table4(args)


if __name__ == "__main__":
    main()
