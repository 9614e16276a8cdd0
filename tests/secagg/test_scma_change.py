"""SCMAServer.decode_change: the sparse difference of two aggregates, exactly or not at all."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fedcore.secagg import SCMAClient, SCMADecodeError, SCMAServer, SCMASetup


def _round(setup, vectors, round):
    clients = [SCMAClient(l, setup) for l in range(setup.n_clients)]
    msgs = [c.encode(*vectors[l], round=round) for l, c in enumerate(clients)]
    return SCMAServer(setup).aggregate(msgs, round=round)


@pytest.mark.parametrize("space", [dict(index_space=500), dict(n_dims=6, bins=300)])
@settings(max_examples=25)
@given(seed=st.integers(0, 10**6), n_changed=st.integers(0, 4))
def test_decode_change_equals_the_difference(space, seed, n_changed):
    rng = np.random.default_rng(seed)
    setup = SCMASetup(3, 24, random_state=seed, **space)

    def draw(m):
        if "index_space" in space:
            return rng.choice(500, m, replace=False)
        return rng.integers(0, 300, (m, 6))

    before = [(draw(6), rng.integers(1, 20, 6)) for _ in range(3)]
    bins, counts = before[1]
    counts = counts.copy()
    counts[:n_changed] = np.maximum(counts[:n_changed] - rng.integers(1, 3, n_changed), 0)
    after = [before[0], (bins, counts), before[2]]
    # fresh masks in each round, as in MUFC
    t0 = _round(setup, before, 0)
    t1 = _round(setup, after, 1)
    changed, delta = SCMAServer(setup).decode_change(t1, t0, max_changes=4)
    expected = counts - before[1][1]
    want = {tuple(np.atleast_1d(b).tolist()): int(v) for b, v in zip(bins, expected) if v != 0}
    got = {tuple(np.atleast_1d(b).tolist()): int(v) for b, v in zip(changed, delta)}
    assert got == want


def test_decode_change_refuses_a_large_change():
    setup = SCMASetup(2, 20, index_space=100, random_state=0)
    a = [(np.arange(5), np.ones(5, dtype=int)), (np.arange(5, 10), np.ones(5, dtype=int))]
    b = [(np.arange(20, 25), np.ones(5, dtype=int)), (np.arange(5, 10), np.ones(5, dtype=int))]
    t0, t1 = _round(setup, a, 0), _round(setup, b, 1)
    with pytest.raises(SCMADecodeError):
        SCMAServer(setup).decode_change(t1, t0, max_changes=3)  # 10 bins changed
    bins, delta = SCMAServer(setup).decode_change(t1, t0, max_changes=10)
    assert bins.tolist() == list(range(5)) + list(range(20, 25))
    assert delta.tolist() == [-1] * 5 + [1] * 5


def test_decode_change_validates_arguments():
    setup = SCMASetup(2, 4, index_space=10, random_state=0)
    server = SCMAServer(setup)
    with pytest.raises(ValueError, match="'total'"):
        server.decode_change(np.zeros(3), np.zeros(setup.message_length), max_changes=1)
    with pytest.raises(ValueError, match="'max_changes'"):
        server.decode_change(np.zeros(setup.message_length), np.zeros(setup.message_length),
                             max_changes=0)
