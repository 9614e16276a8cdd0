"""SCMA dropout tolerance ([SecAgg], honest-but-curious server, no double masking): Shamir-shared
round keys let the server remove the masks of up to n - t dropped participants exactly; one drop
more is refused."""
import numpy as np
import pytest

from fedcore.federation.ledger import CommLedger
from fedcore.secagg import (SCMAClient, SCMADecodeError, SCMAServer, SCMASetup,
                            generate_key_pair)
from fedcore.secagg import _shamir


def exact(vectors):
    out = {}
    for bins, counts in vectors:
        for b, c in zip(bins, counts):
            out[int(b)] = out.get(int(b), 0) + int(c)
    return {k: v for k, v in out.items() if v}


def as_dict(bins, counts):
    return {int(b): int(c) for b, c in zip(bins, counts)}


def test_shamir_any_t_shares_rebuild_and_fewer_do_not():
    rng = np.random.default_rng(0)
    secrets_ = [generate_key_pair()[0] for _ in range(3)]
    holders = [0, 2, 3, 5, 9, 11]
    shares = _shamir.deal(secrets_, 4, holders)
    assert shares.shape == (3, 6, _shamir.N_CHUNKS)
    for trial in range(20):
        pick = sorted(rng.choice(6, size=4, replace=False))
        for s, secret in enumerate(secrets_):
            got = _shamir.reconstruct([holders[i] for i in pick], shares[s, pick])
            assert got == secret
            three = _shamir.reconstruct([holders[i] for i in pick[:3]], shares[s, pick[:3]])
            assert three != secret
    one = shares[0, 0]
    assert np.array_equal(_shamir.share_values(_shamir.share_bytes(one)), one)
    with pytest.raises(ValueError, match="40 bytes"):
        _shamir.share_values(b"\x00" * 8)


def test_dropout_trials_at_the_threshold_and_one_past_it():
    # Seeded trials: n participants, threshold t; exactly n - t random participants drop after
    # the masks were agreed (they never send). The survivors' shares (t of them, a random
    # subset) rebuild the dropped round keys and the round decodes the survivors' exact sum.
    # With n - t + 1 drops the round is refused. Every trial counted.
    rng = np.random.default_rng(1)
    exact_rounds = refused_rounds = 0
    for trial in range(24):
        n = int(rng.integers(3, 9))
        t = int(rng.integers(2, n))
        setup = SCMASetup(n, 4 * n, index_space=10**4, dropout_threshold=t, random_state=trial)
        clients = [SCMAClient(l, setup) for l in range(n)]
        server = SCMAServer(setup.public())
        for r, n_drop in ((0, n - t), (1, n - t + 1)):
            vectors = {l: (rng.choice(10**4, size=3, replace=False), rng.integers(1, 9, 3))
                       for l in range(n)}
            dropped = sorted(rng.choice(n, size=n_drop, replace=False).tolist())
            alive = [l for l in range(n) if l not in dropped]
            msgs = {l: clients[l].encode(*vectors[l], round=r) for l in alive}
            answering = sorted(rng.choice(alive, size=min(t, len(alive)), replace=False).tolist())
            shares = {v: clients[v].reveal_key_shares(r, dropped) for v in answering}
            if n_drop <= n - t:
                got = server.decode(msgs, round=r, dropped=dropped, unmask_shares=shares)
                assert as_dict(*got) == exact(vectors[l] for l in alive), trial
                exact_rounds += 1
            else:
                with pytest.raises(SCMADecodeError, match=f"dropout_threshold={t}"):
                    server.decode(msgs, round=r, dropped=dropped, unmask_shares=shares)
                refused_rounds += 1
    assert (exact_rounds, refused_rounds) == (24, 24)


def test_without_drops_the_round_needs_no_shares_and_masks_cancel():
    setup = SCMASetup(5, 10, index_space=100, dropout_threshold=3, random_state=0)
    for r in range(3):
        masks = setup.round_masks(r)
        total = sum(m.astype(object) for m in masks.values()) % setup.prime
        assert not total.any()
    keys = [setup.round_public_keys(r) for r in range(3)]
    assert all(len(k) == 5 for k in keys)
    assert len({k[0] for k in keys}) == 3  # a fresh key pair every round
    msgs = [SCMAClient(l, setup).encode([l], [l + 1], round=7) for l in range(5)]
    assert SCMAServer(setup).decode(msgs, round=7)[1].tolist() == [1, 2, 3, 4, 5]
    with pytest.raises(ValueError, match="no client is 'dropped'"):
        SCMAServer(setup).decode(msgs, round=7, unmask_shares={0: {}})


def test_recovery_refuses_bad_requests_and_bad_shares():
    setup = SCMASetup(6, 12, index_space=100, dropout_threshold=4, random_state=0)
    clients = [SCMAClient(l, setup) for l in range(6)]
    dropped = [1, 4]
    alive = [0, 2, 3, 5]

    def round_(r):
        return {l: clients[l].encode([l], [1], round=r) for l in alive}

    def shares(r, who=alive):
        return {v: clients[v].reveal_key_shares(r, dropped) for v in who}

    server = SCMAServer(setup.public())
    msgs = round_(0)
    with pytest.raises(SCMADecodeError, match="2 survivor.*share of dropped client 1.*=4"):
        server.decode(msgs, round=0, dropped=dropped, unmask_shares=shares(0, [0, 2]))
    bad = shares(0)
    values = _shamir.share_values(bad[3][4]).copy()
    values[2] = (values[2] + 1) % _shamir.SHARE_PRIME  # (the low 3 bits of a key are clamped)
    bad[3][4] = _shamir.share_bytes(values)
    with pytest.raises(SCMADecodeError, match="client 4's round key do not rebuild"):
        server.decode(msgs, round=0, dropped=dropped, unmask_shares=bad)
    live = shares(0)
    live[0] = {**live[0], 2: clients[0].reveal_key_shares(0, [1])[1]}
    with pytest.raises(ValueError, match="share of client 2's round key, but 2 is not dropped"):
        server.decode(msgs, round=0, dropped=dropped, unmask_shares=live)
    with pytest.raises(ValueError, match="shares from client 4, which is not a surviving"):
        server.decode(msgs, round=0, dropped=dropped,
                      unmask_shares={**shares(0), 4: {1: shares(0)[0][1]}})
    with pytest.raises(ValueError, match="'unmask_shares' is needed"):
        server.decode(msgs, round=0, dropped=dropped)
    with pytest.raises(ValueError, match=r"'dropped' names client\(s\) \[7\]"):
        SCMAServer(SCMASetup(8, 4, index_space=100, dropout_threshold=2)).decode(
            {}, round=0, participants=[0, 1], dropped=[7])
    with pytest.raises(ValueError, match="asked to reveal shares of its own round key"):
        clients[1].reveal_key_shares(0, [1, 4])
    # after the refusals the round is still open, and completes exactly
    got = server.decode(msgs, round=0, dropped=dropped, unmask_shares=shares(0))
    assert as_dict(*got) == {0: 1, 2: 1, 3: 1, 5: 1}
    # a setup without dropout tolerance refuses drops
    plain = SCMASetup(3, 4, index_space=100, random_state=0)
    m = {l: SCMAClient(l, plain).encode([l], [1], round=0) for l in (0, 2)}
    with pytest.raises(SCMADecodeError, match="no dropout tolerance"):
        SCMAServer(plain).decode(m, round=0, dropped=[1])


def test_deployed_clients_exchange_sealed_shares_through_the_server():
    # Each client holds only its own identity key; round keys, sealed shares and public keys
    # travel through the server, which rebuilds the dropped clients' masks.
    n, t = 6, 3
    setup = SCMASetup(n, 12, index_space=1000, dropout_threshold=t, random_state=4)
    config = setup.public_config()
    identity = [generate_key_pair() for _ in range(n)]
    clients = [SCMAClient(l, SCMASetup.from_public_config(config), private_key=identity[l][0],
                          public_keys={o: identity[o][1] for o in range(n) if o != l})
               for l in range(n)]
    server = SCMAServer(SCMASetup.from_public_config(config))
    ledger = CommLedger()
    for r, dropped in ((0, [2]), (1, [0, 4, 5]), (2, [])):
        round_keys = {l: c.round_public_key(r) for l, c in enumerate(clients)}
        sealed = {l: c.key_shares(r, round_keys) for l, c in enumerate(clients)}
        for v in range(n):
            clients[v].receive_key_shares(r, {u: sealed[u][v] for u in range(n) if u != v})
        vectors = {l: ([10 * l + r], [l + 1]) for l in range(n)}
        alive = [l for l in range(n) if l not in dropped]
        msgs = {l: clients[l].encode(*vectors[l], round=r) for l in alive}
        shares = {v: clients[v].reveal_key_shares(r, dropped) for v in alive} if dropped else None
        got = server.decode(msgs, round=r, dropped=dropped, unmask_shares=shares,
                            public_keys=round_keys, ledger=ledger)
        assert as_dict(*got) == exact(vectors[l] for l in alive)
    kinds = {m.kind for m in ledger.messages}
    assert kinds == {"scma_syndromes", "scma_unmask_shares"}
    # a share sealed for another receiver or tampered with does not open
    round_keys = {l: c.round_public_key(3) for l, c in enumerate(clients)}
    sealed = clients[0].key_shares(3, round_keys)
    with pytest.raises(ValueError, match="sent by client 0 to client 2.*does not verify"):
        clients[2].receive_key_shares(3, {0: sealed[1]})
    box = bytearray(sealed[2])
    box[0] ^= 1
    with pytest.raises(ValueError, match="does not verify"):
        clients[2].receive_key_shares(3, {0: bytes(box)})
    with pytest.raises(ValueError, match="no round-9 public key|no key pair for round 9"):
        clients[0].encode([1], [1], round=9)
    with pytest.raises(ValueError, match="pair_seeds.*dropout_threshold"):
        SCMAClient(0, setup, pair_seeds={1: 5})
    with pytest.raises(ValueError, match="simulated client"):
        SCMAClient(0, setup).key_shares(0, {})
