"""The vertical methods' roles on Flower nodes through the generic adapter: each node holds one
block of columns; the random stream is lent node by node, as in process."""
import warnings

import numpy as np
import pytest

pytest.importorskip("flwr", reason="the Flower apps need the optional dependency flwr")

import fedcore  # noqa: E402
from fedcore.algorithms.vfl import Coreset, vkmc_coreset  # noqa: E402
from fedcore.algorithms.vfl.coreset import CoresetParty, DISServer, LocalScores  # noqa: E402
from fedcore.algorithms.vfl.distdim import DistDimParty, DistDimServer  # noqa: E402
from fedcore.integrations.flower import vertical_from_settings  # noqa: E402
from fedcore.integrations.flower.roles import role_apps  # noqa: E402

DATA = {"dataset": "s1", "num-partitions": 2, "splits": "1,1", "data-seed": 2}


def _simulate(run, make_party):
    apps = role_apps(run, make_party, DATA, timeout=120)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Ray's, not ours
        return apps.simulate(2)


def test_vkmc_coreset_and_distdim_on_flower_equal_in_process():
    vfed = vertical_from_settings(DATA)
    n = vfed.n_samples
    want_cs = vkmc_coreset(vfed, 150, 3, local_max_iter=1, random_state=3)
    want = fedcore.DistDim(3, client_clusters=4, random_state=5).fit(vfed, coreset=want_cs)

    def coreset_run(channel):
        request = LocalScores("vkmc", False, 0.0, n_clusters=3, local_max_iter=1)
        indices, weights, counts, _ = DISServer(150, request, np.random.default_rng(3),
                                                n).run(channel)
        return Coreset(indices, weights, channel.ledger, n, party_counts=counts)

    got_cs = _simulate(coreset_run, lambda X, ids, j: CoresetParty(X, j))
    np.testing.assert_array_equal(got_cs.indices, want_cs.indices)
    np.testing.assert_array_equal(got_cs.weights, want_cs.weights)
    assert got_cs.comm.messages == want_cs.comm.messages

    def distdim_run(channel):
        return DistDimServer(3, 4, n, got_cs, 1, 300, 1e-4, np.random.default_rng(5)).run(channel)

    got = _simulate(distdim_run, lambda X, ids, j: DistDimParty(X, j))
    np.testing.assert_array_equal(got["cluster_centers_"], want.cluster_centers_)
    np.testing.assert_array_equal(got["labels_"], want.labels_)
    assert got["comm_"].messages == want.comm_.messages
