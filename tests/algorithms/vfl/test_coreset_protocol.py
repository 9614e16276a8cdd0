"""The vertical coresets and DistDim as protocol roles: messages counted from what crosses, one
random stream lent to the parties in order ([VFLC] Alg. 1-3, [DistDim])."""
import numpy as np
import pytest

import fedcore
from fedcore.algorithms.vfl import dis_sample, vkmc_coreset, vkmc_local_scores
from fedcore.algorithms.vfl.coreset import CoresetParty, PartyCount, SampleSet
from fedcore.federation.ledger import SERVER
from fedcore.federation.protocol import ProtocolError


def _vfed(seed, n=400):
    X, _, _ = fedcore.datasets.make_gaussian_mixture(n, 5, 3, random_state=seed)
    return fedcore.VerticalFederation.from_columns(X, splits=[2, 1, 2])


def _entries(ledger):
    return sorted((e.round, str(e.sender), str(e.receiver), e.kind, e.n_elements, e.n_bits)
                  for e in ledger.messages)


def test_dis_ledger_is_the_messages_of_the_three_rounds():
    """[VFLC] Alg. 1: totals up and counts down (round 0), drawn rows up and S down (round 1),
    scores of S up (round 2); a party that draws nothing sends no rows."""
    scores = np.random.default_rng(0).random((3, 60))
    scores[1] = 0.0                                    # party 1 draws nothing
    m = 25
    _, _, counts, _, ledger = dis_sample(scores, m, np.random.default_rng(1))
    assert counts[1] == 0 and counts.sum() == m
    want = []
    for j in range(3):
        want += [(0, str(j), SERVER, "party_total", 1, 64),
                 (0, SERVER, str(j), "party_count", 1, 64),
                 (1, SERVER, str(j), "sample_ids", m, 64 * m),
                 (2, str(j), SERVER, "scores", m, 64 * m)]
        if counts[j]:
            want.append((1, str(j), SERVER, "sample_ids", int(counts[j]), 64 * int(counts[j])))
    assert _entries(ledger) == sorted(want)
    assert ledger.n_elements == 2 * 3 + m + 2 * m * 3  # 2T + m + 2mT


@pytest.mark.parametrize("bit_generator", [np.random.PCG64, np.random.Philox])
def test_vkmc_coreset_draws_from_one_stream_in_party_order(bit_generator):
    """The parties cluster from the lent stream one after another, then DIS draws from where
    they left it: the same coreset as the scores and DIS computed from one generator, and the
    caller's generator ends where that reference path ends."""
    vfed = _vfed(3)
    ref_rng = np.random.Generator(bit_generator(7))
    scores = vkmc_local_scores(vfed, 3, local_max_iter=2, random_state=ref_rng)
    want = dis_sample(scores, 50, ref_rng)
    rng = np.random.Generator(bit_generator(7))
    got = vkmc_coreset(vfed, 50, 3, local_max_iter=2, random_state=rng)
    np.testing.assert_array_equal(got.indices, want[0])
    np.testing.assert_array_equal(got.weights, want[1])
    np.testing.assert_array_equal(got.party_counts, want[2])
    assert _entries(got.comm) == _entries(want[4])
    assert rng.random() == ref_rng.random()


def test_a_party_answers_only_in_the_protocol_order():
    party = CoresetParty(party_id=2, scores=np.ones(5))
    with pytest.raises(ProtocolError, match="party 2 has no scores yet"):
        party.handle(PartyCount(1, ""))
    # uniform sampling: a party without scores only receives the rows
    assert CoresetParty(party_id=0).handle(SampleSet(np.arange(3))).size() == (0, 0)


def test_distdim_counts_the_weights_only_where_the_parties_cannot_know_them():
    """On full data and on a uniform coreset (weights n / m) nothing goes down; on a DIS
    coreset the m weights go to every party. Each party's labels and centers are one message."""
    vfed = _vfed(4, n=300)
    full = fedcore.DistDim(3, random_state=0).fit(vfed)
    assert [(e.sender, e.kind, e.n_elements) for e in full.comm_.messages] == [
        (0, "labels+centers", 300 + 3 * 2), (1, "labels+centers", 300 + 3 * 1),
        (2, "labels+centers", 300 + 3 * 2)]
    for coreset, sent in [(fedcore.uniform_coreset(vfed, 40, random_state=1), 0),
                          (vkmc_coreset(vfed, 40, 3, random_state=1), 40)]:
        model = fedcore.DistDim(3, random_state=0).fit(vfed, coreset=coreset)
        own = model.comm_.messages[len(coreset.comm.messages):]
        assert sum(e.n_elements for e in own if e.kind == "weights") == 3 * sent
        assert all(e.receiver != SERVER for e in own if e.kind == "weights")


def test_parties_refuse_bad_data_and_row_ids_before_using_them():
    """Row ids must lie in [0, n) (a negative id would silently index from the end); a
    party's own data and scores are checked when it is built."""
    from fedcore.algorithms.vfl.coreset import LocalScores
    from fedcore.algorithms.vfl.distdim import DistDimParty, LocalClustering
    party = CoresetParty(party_id=1, scores=np.ones(5))
    party.handle(LocalScores("given", False, 0.0))
    with pytest.raises(ProtocolError, match="party 1 got row ids outside"):
        party.handle(SampleSet(np.array([0, -1])))
    with pytest.raises(ValueError, match="non-negative"):
        CoresetParty(party_id=0, scores=np.array([1.0, -2.0]))
    with pytest.raises(ValueError, match="X of party 0"):
        CoresetParty(np.array([[1.0, np.nan]]), 0)
    dd = DistDimParty(np.random.default_rng(0).random((8, 2)), 2)
    from fedcore.federation.protocol import stream_state
    request = LocalClustering(np.empty(0), np.array([1, 8]), 2, stream=stream_state(
        np.random.default_rng(0)), n_init=1, max_iter=5, tol=0.0)
    with pytest.raises(ProtocolError, match="party 2 got row ids outside"):
        dd.handle(request)
