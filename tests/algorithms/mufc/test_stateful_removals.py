"""Sequences of fit / remove / remove_clients / save / load with failures injected at every
stage of a round (Hypothesis stateful testing).

Two MUFC models live side by side: ``model`` goes through every step, failures and reloads
included; ``twin`` (a copy made after the fit, so it holds the same SCMA keys) only through the
requests that succeeded. A failed request must leave ``model`` bit for bit as it was
(``pickle.dumps``), and after every step the two models must hold the same centers, aggregate,
client seeds and ledger: a reloaded model continues exactly, and only the successful requests
count.
"""
import pickle

import numpy as np
import pytest
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import fedcore
from fedcore.algorithms.mufc import aggregation, coupled, unlearning


N_CLIENTS = 4
# Every stage of a round where a failure can strike (see tests/test_transactions.py).
STAGES = [None, (unlearning, "seed_lazy"), (aggregation.SCMAAggregator, "combine"),
          (coupled.CoupledKMeans, "_lloyd_all")]


class Injected(RuntimeError):
    """The failure the state machine injects."""


def _federation():
    X, y, _ = fedcore.datasets.make_gaussian_mixture(240, 2, 3, cluster_std=0.05,
                                                     random_state=3)
    return fedcore.partition(X, n_clients=N_CLIENTS, scheme="iid", random_state=3)


class MUFCRemovals(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        fed = _federation()
        self.model = fedcore.MUFC(3, client_clusters=2, random_state=0).fit(fed)
        self.twin = pickle.loads(pickle.dumps(self.model))
        self.held = {l: [int(i) for i in fed.client(l)[1]] for l in range(N_CLIENTS)}
        self.failures = 0

    def _run(self, stage, request):
        """Apply ``request`` to the model with ``stage`` failing, and to the twin if the model's
        request succeeded (a stage the request does not reach, e.g. the client's re-seed when no
        center is hit, does not fail). Returns whether it succeeded."""
        failed = False
        before = pickle.dumps(self.model)
        if stage is None:
            request(self.model)
        else:
            owner, name = stage
            original = getattr(owner, name)

            def failing(*args, **kwargs):
                raise Injected(name)
            setattr(owner, name, failing)
            try:
                request(self.model)
            except Injected:
                failed = True
            finally:
                setattr(owner, name, original)
        if failed:
            assert pickle.dumps(self.model) == before
            self.failures += 1
            return False
        request(self.twin)
        return True

    @rule(data=st.data(), stage=st.sampled_from(STAGES))
    def remove_points(self, data, stage):
        active = [l for l in range(N_CLIENTS) if l in self.held and len(self.held[l]) > 3]
        if not active:
            return
        l = data.draw(st.sampled_from(active))
        ids = data.draw(st.lists(st.sampled_from(self.held[l]), min_size=1, max_size=2,
                                 unique=True))
        if self._run(stage, lambda m: m.remove(l, ids)):
            self.held[l] = [i for i in self.held[l] if i not in ids]

    @precondition(lambda self: len(self.held) > 2)
    @rule(data=st.data(), stage=st.sampled_from([STAGES[0], *STAGES[2:]]))
    def remove_client(self, data, stage):
        l = data.draw(st.sampled_from(sorted(self.held)))
        if self._run(stage, lambda m: m.remove_clients([l])):
            del self.held[l]

    @rule()
    def refused_request(self):
        before = pickle.dumps(self.model)
        with pytest.raises((ValueError, TypeError)):
            self.model.remove(0, [10**9])  # an id no client holds
        assert pickle.dumps(self.model) == before

    @rule()
    def save_and_load(self):
        import tempfile
        with tempfile.TemporaryDirectory() as tmp:
            path = f"{tmp}/mufc.npz"
            self.model.save(path)
            self.model = fedcore.load(path)

    @invariant()
    def model_equals_twin(self):
        np.testing.assert_array_equal(self.model.cluster_centers_, self.twin.cluster_centers_)
        np.testing.assert_array_equal(self.model.aggregate_[1], self.twin.aggregate_[1])
        assert self.model.n_rounds_ == self.twin.n_rounds_
        assert self.model.comm_.summary() == self.twin.comm_.summary()
        for got, want in zip(self.model.client_centers_, self.twin.client_centers_):
            np.testing.assert_array_equal(got, want)


TestMUFCRemovals = MUFCRemovals.TestCase
TestMUFCRemovals.settings = settings(max_examples=20, stateful_step_count=8, deadline=None)
