"""DisBCDKM and F3KM as protocol roles: F3KMParty and F3KMServer over a channel by hand give
the estimators' fits, ledger included; the parties answer only what they expect."""
import warnings

import numpy as np
import pytest

from fedcore import VerticalFederation
from fedcore.algorithms.f3km import FairKMeans
from fedcore.algorithms.f3km.cdkm import BCDKM
from fedcore.algorithms.f3km.party import (CDParty, F3KMParty, F3KMSetup, LocalParties,
                                           RowObjectives)
from fedcore.algorithms.f3km.server import F3KMServer, SweepServer, run_bcd
from fedcore.datasets.fair import make_fair_blobs
from fedcore.federation.protocol import InProcessChannel, ProtocolError


def _federation(seed=1):
    data = make_fair_blobs(240, 6, 3, groups_per_attribute=(2, 3), bias=0.6, random_state=seed)
    # party 0: no sensitive attribute; party 1: attribute 0; party 2: attribute 1
    return VerticalFederation.from_columns(data.X, [2, 3, 1],
                                           groups=[None, data.groups[0], [data.groups[1]]])


def _roles(fed):
    return [F3KMParty(fed.party(j), fed.groups(j), j) for j in range(fed.n_parties)]


def _same_fit(result, model):
    np.testing.assert_array_equal(result["labels"], model.labels_)
    np.testing.assert_array_equal(result["centers"], model.cluster_centers_)
    assert result["inertia"] == model.inertia_
    assert result["n_iter"] == model.n_iter_ and result["n_ranges"] == model.n_ranges_
    np.testing.assert_array_equal(result["objective_history"], model.objective_history_)
    assert result["comm"].messages == model.comm_.messages


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_disbcdkm_roles_over_a_channel_give_the_estimator(n_jobs):
    fed = _federation()
    model = BCDKM(3, block_size=40, random_state=3).fit(fed)
    server = F3KMServer(3, 40, 300, np.random.default_rng(3))
    result = server.run(InProcessChannel(_roles(fed), n_jobs=n_jobs))
    _same_fit(result, model)
    kinds = {m.kind for m in model.comm_.messages}
    assert kinds == {"k-means++ center", "initial labels", "compute objectives",
                     "proposed labels", "objective change"}
    assert server.parties.n_exchanges >= model.comm_.n_rounds  # one exchange or more per round


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_f3km_roles_over_a_channel_give_the_estimator(n_jobs):
    fed = _federation(2)
    params = dict(delta=0.3, block_size=60, rho=1.0, max_iter=4, random_state=2)
    model = FairKMeans(3, **params).fit(fed)
    server = F3KMServer(3, 60, 4, np.random.default_rng(2), fair=True, delta=0.3, rho=1.0)
    result = server.run(InProcessChannel(_roles(fed), n_jobs=n_jobs))
    _same_fit(result, model)
    np.testing.assert_array_equal(result["violation_history"], model.violation_history_)
    np.testing.assert_array_equal(result["balance"], model.balance_)
    np.testing.assert_array_equal(result["alpha"], model.alpha_)
    assert model.n_ranges_ > model.n_iter_ * 4  # blocks were split: every decision was taken


def test_explicit_bounds_reach_their_parties():
    fed = _federation(2)
    alpha = np.linspace(0.5, 0.9, 5)
    model = FairKMeans(3, delta=0.3, alpha=alpha, block_size=60, max_iter=2,
                       random_state=0).fit(fed)
    result = F3KMServer(3, 60, 2, np.random.default_rng(0), fair=True, delta=0.3,
                        alpha=alpha).run(InProcessChannel(_roles(fed)))
    np.testing.assert_array_equal(result["alpha"], alpha)
    np.testing.assert_array_equal(result["beta"], model.beta_)
    np.testing.assert_array_equal(result["labels"], model.labels_)


def test_party_answers_only_what_it_expects():
    fed = _federation()
    party = F3KMParty(fed.party(0), None, 0)
    with pytest.raises(ProtocolError, match="RowObjectives before its F3KMSetup"):
        party.handle(RowObjectives(0, 10))
    party.handle(F3KMSetup(3, False, 0.2))
    with pytest.raises(ProtocolError, match="party 0 cannot answer a object"):
        party.handle(object())


def test_local_parties_is_a_deprecated_channel_of_roles():
    X = np.random.default_rng(0).normal(size=(60, 3))
    labels = np.arange(60, dtype=np.int64) % 3
    with pytest.warns(DeprecationWarning, match="LocalParties"):
        parties = LocalParties([CDParty(np.ascontiguousarray(X[:, :1]), 3, labels),
                                CDParty(np.ascontiguousarray(X[:, 1:]), 3, labels)])
    total = sum(p.party.total_sumsq for p in parties.channel.clients)
    server = SweepServer(parties, labels, 3, 20, total)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        history, n_iter, _ = run_bcd(server, parties, 10)
    assert np.all(np.diff(history) <= 1e-9 * history[0]) and n_iter >= 1


def test_a_party_refuses_rows_and_labels_outside_its_data_before_a_kernel_reads_them():
    """A node's party trusts no message: row ranges, seed rows and labels are checked."""
    from fedcore.algorithms.f3km import party as P
    rng = np.random.default_rng(0)
    party = P.F3KMParty(rng.random((20, 2)), None, 3)
    party.handle(P.F3KMSetup(3, False, 0.2))
    bad = [P.RowObjectives(5, 21, 0), P.RowObjectives(-1, 4, 0), P.SeedRow(20, 0),
           P.ProposedLabels(np.array([0, 3]), 0, 2, 0), P.ProposedLabels(np.zeros(3), 0, 2, 0),
           P.MovedLabels(np.array([-1]), 4, 5),
           P.InitialLabels(np.zeros(19, dtype=np.int64), 0.0, 1.0, np.empty(0), np.empty(0))]
    for message in bad:
        with pytest.raises(ProtocolError, match="party 3"):
            party.handle(message)
