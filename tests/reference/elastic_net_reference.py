"""Slow, obviously-correct references for the lasso and elastic net downstream of the VRLR coreset
([VFLC] Appendix A.2), written from the objective with plain loops over rows.

Objective (weights ``w``: ones on full data, coreset weights otherwise)::

    F(theta) = sum_i w_i (x_i . theta - y_i)^2 + alpha |theta|_2^2 + l1_alpha |theta|_1

Contents
--------
elastic_net_objective_reference
    ``F(theta)``, term by term.
elastic_net_sweep_reference
    One cyclic coordinate-descent sweep, each coordinate to the exact minimizer of ``F`` along it,
    with the partial residuals summed row by row.
kkt_violation_reference
    Largest violation of the optimality conditions (the subgradient of ``F`` contains 0).
(The proximal SAGA epoch's reference is ``saga_epoch_reference`` of ``coreset_reference.py``
with ``l1 > 0``.)
"""

__all__ = ["elastic_net_objective_reference", "elastic_net_sweep_reference",
           "kkt_violation_reference"]


def elastic_net_objective_reference(X, y, weights, alpha, l1_alpha, theta):
    """``F(theta)`` with a loop over rows and coordinates."""
    total = 0.0
    for i in range(len(y)):
        r = -float(y[i])
        for f in range(len(theta)):
            r += float(X[i][f]) * float(theta[f])
        total += float(weights[i]) * r * r
    for f in range(len(theta)):
        total += alpha * float(theta[f]) ** 2 + l1_alpha * abs(float(theta[f]))
    return total


def _soft_threshold(z, t):
    if z > t:
        return z - t
    if z < -t:
        return z + t
    return 0.0


def elastic_net_sweep_reference(X, y, weights, alpha, l1_alpha, theta):
    """One sweep over ``f = 0, 1, ...``: along coordinate ``f``, ``F`` is
    ``a t^2 - 2 z t + l1_alpha |t| + const`` with ``a = sum_i w_i x_if^2 + alpha`` and
    ``z = sum_i w_i x_if (y_i - sum_{g != f} x_ig theta_g)``, minimized by
    ``soft_threshold(z, l1_alpha / 2) / a`` (0 when ``a = 0``: ``F`` does not depend on ``t``
    except through the penalty). Returns the new theta as a list; the input is not modified."""
    theta = [float(v) for v in theta]
    n, d = len(y), len(theta)
    for f in range(d):
        a = alpha
        z = 0.0
        for i in range(n):
            xf = float(X[i][f])
            partial = float(y[i])
            for g in range(d):
                if g != f:
                    partial -= float(X[i][g]) * theta[g]
            a += float(weights[i]) * xf * xf
            z += float(weights[i]) * xf * partial
        theta[f] = _soft_threshold(z, 0.5 * l1_alpha) / a if a > 0 else 0.0
    return theta


def kkt_violation_reference(X, y, weights, alpha, l1_alpha, theta):
    """``max_f`` of the distance from 0 to the subdifferential of ``F`` along ``f``:
    with ``g_f = 2 sum_i w_i x_if (x_i . theta - y_i) + 2 alpha theta_f`` (the smooth part),
    ``|g_f + l1_alpha sign(theta_f)|`` where ``theta_f != 0``, ``max(|g_f| - l1_alpha, 0)``
    where ``theta_f == 0``."""
    n, d = len(y), len(theta)
    residual = []
    for i in range(n):
        r = -float(y[i])
        for f in range(d):
            r += float(X[i][f]) * float(theta[f])
        residual.append(r)
    worst = 0.0
    for f in range(d):
        g = 2.0 * alpha * float(theta[f])
        for i in range(n):
            g += 2.0 * float(weights[i]) * float(X[i][f]) * residual[i]
        if theta[f] > 0:
            v = abs(g + l1_alpha)
        elif theta[f] < 0:
            v = abs(g - l1_alpha)
        else:
            v = max(abs(g) - l1_alpha, 0.0)
        worst = max(worst, v)
    return worst
