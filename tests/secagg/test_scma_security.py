"""SCMA's cryptographic masks: key agreement, stream expansion, uniformity, binding of messages to
their setup, round and sender, refusal of replays, and the per-client max_count bound."""
import pickle

import numpy as np
import pytest
from scipy import stats

import fedcore.secagg.setup
from fedcore.secagg import (SCMAClient, SCMADecodeError, SCMAMessage, SCMAMessageError,
                            SCMAServer, SCMASetup, generate_key_pair)
from fedcore.secagg import _keys, _prg, _streams
from tests.secagg.test_scma import as_dict, exact_sum

M61 = 2**61 - 1


def seeded_keys(monkeypatch, seed):
    """Make the simulated X25519 keys and the setup identifier come from a seeded generator, so
    that a statistical test on ChaCha20 masks is deterministic (the library uses OS entropy)."""
    from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
    rng = np.random.default_rng(seed)

    def key_pair():
        key = X25519PrivateKey.from_private_bytes(rng.bytes(32))
        return key.private_bytes_raw(), key.public_key().public_bytes_raw()

    monkeypatch.setattr(_keys, "generate_key_pair", key_pair)
    monkeypatch.setattr(fedcore.secagg.setup.secrets, "randbits", lambda k: int(seed))


def total_of(masks, p):
    total = np.zeros_like(next(iter(masks)), dtype=object)
    for m in masks:
        total += np.asarray(m).astype(object)
    return total % p


# ---------------------------------------------------------------- masks
@pytest.mark.parametrize("generator", ["chacha20", "pcg64"])
@pytest.mark.parametrize("p", [13, 8191, M61])
def test_pairwise_masks_cancel_exactly(generator, p):
    setup = SCMASetup(7, 3, prime=p, index_space=12, mask_generator=generator, random_state=0)
    for participants in (None, [0, 3, 6], [1, 2], [5]):
        ids = range(7) if participants is None else participants
        for r in (0, 1, 2**40):
            masks = setup.round_masks(r, participants)
            assert sorted(masks) == list(ids)
            assert not total_of(masks.values(), p).any()
            # one client's own L - 1 streams give the same mask as the round-level expansion
            for l in ids:
                np.testing.assert_array_equal(masks[l], setup.client_mask(l, r, participants))
            assert all(m.min() >= 0 and m.max() < p for m in masks.values())
        if len(ids) > 1:
            assert not np.array_equal(setup.round_masks(0, participants)[ids[0]],
                                      setup.round_masks(1, participants)[ids[0]])


def test_streams_run_short_and_continue_identically(monkeypatch):
    # Force W = length words so that most streams run short at p = 13 (acceptance 13/16): the
    # optimistic pass is undone, the stream is scanned and continued in its overflow stream.
    # Round-level and single-client expansion must still agree and cancel.
    monkeypatch.setattr(_streams, "words_for", lambda length, p: -(-length // 8) * 8)
    setup = SCMASetup(5, 4, prime=13, index_space=12, check_syndromes=3, random_state=0)
    assert setup.message_length == 11
    for r in range(4):
        masks = setup.round_masks(r)
        assert not total_of(masks.values(), 13).any()
        for l in range(5):
            np.testing.assert_array_equal(masks[l], setup.client_mask(l, r))


def test_keystream_positions_and_reused_contexts_agree():
    # A pair's round-r words from a context kept since round r - 1 equal those of a fresh context
    # positioned by the nonce, also across a segment boundary.
    key = bytes(range(32))
    n_words = 16
    per_segment = (2**32 - 1) // 2
    for r in (0, 1, per_segment - 1, per_segment, per_segment + 1):
        segment, block = _streams.round_position(r, n_words)
        assert segment == r // per_segment and block == (r % per_segment) * 2
    ctx = {}
    out = np.zeros((1, 10), dtype=np.int64)
    for r in range(5):
        out[:] = 0
        _streams.zero_sum_masks([(0, 1)], [key], r, 10, M61, [0], [-1], out, ctx)
        fresh = np.zeros((1, 10), dtype=np.int64)
        _streams.zero_sum_masks([(0, 1)], [key], r, 10, M61, [0], [-1], fresh)
        np.testing.assert_array_equal(out, fresh)
        words = _streams.keystream_words(key, r, _streams.words_for(10, M61))[:10] >> np.uint64(3)
        np.testing.assert_array_equal(fresh[0], words.astype(np.int64))


def test_pcg64_mode_is_the_previous_generator_and_reproducible():
    a = SCMASetup(4, 6, index_space=100, mask_generator="pcg64", random_state=3)
    b = SCMASetup(4, 6, index_space=100, mask_generator="pcg64", random_state=3)
    assert a.setup_id == b.setup_id and a.nonce == b.nonce
    for l in range(4):
        legacy = _prg.zero_sum_mask(l, (0, 1, 2, 3), 5, a.message_length, a.prime, a.pair_seed,
                                    a.nonce)
        np.testing.assert_array_equal(SCMAClient(l, a).mask(5), legacy)
        np.testing.assert_array_equal(SCMAClient(l, b).mask(5), legacy)
    vectors = {l: ([l, 50], [l + 1, 2]) for l in range(4)}
    msgs = {l: SCMAClient(l, a).encode(*vectors[l], round=0) for l in range(4)}
    assert as_dict(*SCMAServer(a.public()).decode(msgs, round=0)) == exact_sum(vectors.values())
    assert "pcg64" in repr(a)
    with pytest.raises(ValueError, match="dropout_threshold.*chacha20"):
        SCMASetup(4, 6, index_space=100, mask_generator="pcg64", dropout_threshold=3)
    with pytest.raises(ValueError, match="'mask_generator'"):
        SCMASetup(4, 6, index_space=100, mask_generator="aes")


def test_decoded_sums_do_not_depend_on_the_masks():
    # random_state fixes the hash and shard keys; the X25519 keys come from OS entropy, so two
    # setups with one seed share every public parameter but the setup identifier, and decode the
    # same bins bit for bit, whatever the generator.
    space = dict(n_dims=10, bins=173)
    setups = [SCMASetup(5, 20, random_state=11, **space),
              SCMASetup(5, 20, random_state=11, **space),
              SCMASetup(5, 20, random_state=11, mask_generator="pcg64", **space)]
    assert setups[0].setup_id != setups[1].setup_id
    rng = np.random.default_rng(0)
    vectors = {l: (rng.integers(0, 173, (4, 10)), rng.integers(1, 9, 4)) for l in range(5)}
    results = []
    for setup in setups:
        assert (setup.hash_key, setup.shard_key, setup.nonce) == \
            (setups[0].hash_key, setups[0].shard_key, setups[0].nonce)
        msgs = [SCMAClient(l, setup).encode(*vectors[l], round=0) for l in range(5)]
        results.append(SCMAServer(setup).decode(msgs, round=0))
    for bins, counts in results[1:]:
        np.testing.assert_array_equal(bins, results[0][0])
        np.testing.assert_array_equal(counts, results[0][1])
    assert as_dict(*results[0]) == exact_sum(vectors.values())


def test_key_agreement_matches_between_the_pair_and_hkdf_binds_setup_pair_and_round():
    sk_a, pk_a = generate_key_pair()
    sk_b, pk_b = generate_key_pair()
    assert _keys.shared_secret(sk_a, pk_b) == _keys.shared_secret(sk_b, pk_a)
    secret = _keys.shared_secret(sk_a, pk_b)
    k = _keys.mask_key(secret, 7, 1, 2)
    assert k == _keys.mask_key(secret, 7, 2, 1) and len(k) == 32
    others = {_keys.mask_key(secret, 8, 1, 2), _keys.mask_key(secret, 7, 1, 3),
              _keys.mask_key(secret, 7, 1, 2, round=0), _keys.mask_key(secret, 7, 1, 2, round=1)}
    assert k not in others and len(others) == 4
    assert _keys.public_key_of(sk_a) == pk_a


def test_deployed_clients_with_own_keys_need_only_the_public_setup():
    setup = SCMASetup(4, 8, index_space=100, random_state=0)
    public = SCMASetup.from_public_config(setup.public_config())
    keys = [generate_key_pair() for _ in range(4)]
    clients = [SCMAClient(l, public, private_key=keys[l][0],
                          public_keys={o: keys[o][1] for o in range(4) if o != l})
               for l in range(4)]
    msgs = {l: c.encode([l, 9], [l + 1, 1], round=3) for l, c in enumerate(clients)}
    bins, counts = SCMAServer(public).decode(msgs, round=3)
    assert bins.tolist() == [0, 1, 2, 3, 9] and counts.tolist() == [1, 2, 3, 4, 4]
    with pytest.raises(ValueError, match="no public key of client 3"):
        SCMAClient(0, public, private_key=keys[0][0],
                   public_keys={1: keys[1][1], 2: keys[2][1]}).encode([1], [1], round=0)
    with pytest.raises(ValueError, match="'public_keys'"):
        SCMAClient(0, public, private_key=keys[0][0])
    with pytest.raises(TypeError, match="'private_key'"):
        SCMAClient(0, public, private_key=b"short", public_keys={})
    with pytest.raises(ValueError, match="public parameters only"):
        SCMAClient(0, public).encode([1], [1], round=0)


def test_setups_and_messages_pickle_and_copy():
    setup = SCMASetup(3, 4, index_space=50, random_state=0)
    msgs = [SCMAClient(l, setup).encode([l], [1], round=0) for l in range(3)]
    again = pickle.loads(pickle.dumps(setup))
    assert again.setup_id == setup.setup_id
    # the copy holds the same keys: its clients' messages decode with the original's
    more = [SCMAClient(l, again).encode([l + 3], [2], round=1) for l in range(3)]
    server = SCMAServer(setup.public())
    assert server.decode(msgs, round=0)[1].tolist() == [1, 1, 1]
    assert server.decode(more, round=1)[0].tolist() == [3, 4, 5]
    m = pickle.loads(pickle.dumps(msgs[1]))
    assert isinstance(m, SCMAMessage) and m.header == msgs[1].header
    assert m.header == {"setup_id": setup.setup_id, "round": 0, "client_id": 1,
                        "participants": [0, 1, 2]}


# ---------------------------------------------------------------- uniformity
@pytest.mark.slow
def test_masked_message_is_uniform_on_the_field(monkeypatch):
    # ChaCha20 masks, keys from a seeded generator (deterministic outcome). Client 0 of 3 encodes
    # input A or input B in 3000 fresh rounds each, over F_13 (message of 5 elements). Tests, each
    # with false-alarm rate alpha = 1e-3: every coordinate uniform on the 13 residues
    # (chi-square, 12 degrees of freedom; 10 tests), the joint law of two coordinates equal under
    # A and B (two-sample chi-square on 169 cells; 1 test). Bonferroni: at most 1.1e-2 in total.
    seeded_keys(monkeypatch, 2024)
    setup = SCMASetup(3, 2, prime=13, index_space=12, check_syndromes=1, max_count=4,
                      random_state=0)
    client = SCMAClient(0, setup)
    n = 3000
    views = {}
    for name, (idx, cnt) in {"A": ([0, 5], [1, 3]), "B": ([], [])}.items():
        offset = 0 if name == "A" else n
        views[name] = np.array([client.encode(idx, cnt, round=r + offset) for r in range(n)],
                               dtype=np.int64)
    alpha = 1e-3
    for v in views.values():
        for j in range(setup.message_length):
            assert stats.chisquare(np.bincount(v[:, j], minlength=13)).pvalue > alpha
    table = np.array([np.bincount(13 * v[:, 0] + v[:, 3], minlength=169) for v in views.values()])
    assert stats.chi2_contingency(table).pvalue > alpha


def test_masked_message_is_uniform_on_the_default_field(monkeypatch):
    # p = 2**61 - 1: the field bucketed by its top 6 bits into 64 cells of equal size (up to one
    # element). 15000 elements of client 1's messages (1000 rounds x 15 elements), chi-square on
    # 64 cells, false-alarm rate alpha = 1e-3 (seeded keys: deterministic).
    seeded_keys(monkeypatch, 7)
    setup = SCMASetup(4, 6, index_space=10**6, check_syndromes=3, random_state=0)
    client = SCMAClient(1, setup)
    values = np.concatenate([np.asarray(client.encode([5, 6], [2, 9], round=r))
                             for r in range(1000)])
    assert values.shape == (15000,) and values.max() < M61
    cells = np.bincount((values >> np.uint64(55)).astype(np.int64), minlength=64)
    assert cells.shape == (64,)
    assert stats.chisquare(cells).pvalue > 1e-3


# ---------------------------------------------------------------- max_count
def test_max_count_is_a_per_client_bound_and_wraparound_is_impossible():
    # Formerly p = 13, 2 clients, max_count = 12: counts 12 + 12 = 24 decoded as 24 mod 13 = 11.
    with pytest.raises(ValueError, match=r"max_count.*12.*2 \* 12 = 24.*prime \(13\)"):
        SCMASetup(2, 3, prime=13, index_space=10, max_count=12, check_syndromes=0)
    with pytest.raises(ValueError, match=r"'n_clients' \(13\).*prime \(13\)"):
        SCMASetup(13, 3, prime=13, index_space=10)
    setup = SCMASetup(2, 3, prime=13, index_space=10, max_count=6, check_syndromes=0,
                      random_state=0)
    assert setup.wraparound_safe and SCMASetup(4, 3, prime=13, index_space=10).max_count == 3
    msgs = [SCMAClient(l, setup).encode([4], [6], round=0) for l in range(2)]
    assert SCMAServer(setup).decode(msgs, round=0)[1].tolist() == [12]
    with pytest.raises(ValueError, match="max_count=6"):
        SCMAClient(0, setup).encode([4], [7], round=1)


# ---------------------------------------------------------------- binding and replays
def test_messages_are_bound_to_setup_round_sender_and_participants():
    setup = SCMASetup(4, 8, index_space=100, random_state=0)
    other = SCMASetup(4, 8, index_space=100, random_state=0)  # same seed, other setup
    clients = [SCMAClient(l, setup) for l in range(4)]
    r0 = {l: c.encode([l], [1], round=0) for l, c in enumerate(clients)}
    r1 = {l: c.encode([l], [1], round=1) for l, c in enumerate(clients)}
    foreign = SCMAClient(2, other).encode([2], [1], round=2)
    r2 = {l: clients[l].encode([l], [1], round=2) for l in (0, 1, 3)}
    server = SCMAServer(setup.public())
    with pytest.raises(SCMAMessageError, match="client 2 belongs to another SCMA setup"):
        server.decode({**r2, 2: foreign}, round=2)
    with pytest.raises(SCMAMessageError, match="encoded for round 0, not round 1"):
        server.decode({**r1, 3: r0[3]}, round=1)
    with pytest.raises(SCMAMessageError, match="given for client 0 was encoded by client 1"):
        server.decode({**r1, 1: r1[0], 0: r1[1]}, round=1)
    with pytest.raises(SCMAMessageError, match="Client 3 sent more than one message"):
        server.decode([r1[0], r1[3], r1[2], r1[3]], round=1)
    with pytest.raises(SCMAMessageError, match=r"participants \[0, 1, 2, 3\], not \[0, 1, 3\]"):
        server.decode({l: r1[l] for l in (0, 1, 3)}, round=1, participants=[0, 1, 3])
    # refusals leave the round open: the genuine messages decode
    assert server.decode(r1, round=1)[0].tolist() == [0, 1, 2, 3]
    with pytest.raises(SCMAMessageError, match="Round 1 was already aggregated"):
        server.decode(r1, round=1)
    assert server.aggregated_rounds == {1}
    # bare arrays (a transport without the header): copies and replays are still refused
    bare0 = {l: np.asarray(m) for l, m in r0.items()}
    with pytest.raises(SCMAMessageError, match="clients 0 and 2 for round 0 are identical"):
        server.decode({**bare0, 2: bare0[0]}, round=0)
    bare2 = {l: np.asarray(m) for l, m in r2.items()}
    with pytest.raises(SCMAMessageError, match=r"client 2 for round 2 replays a message received "
                                               r"in round 1 \(from client 2\)"):
        server.decode({**bare2, 2: np.asarray(r1[2])}, round=2)
    # the header travels beside the array and is put back with wrap
    wrapped = {l: SCMAMessage.wrap(bare0[l], r0[l].header) for l in bare0}
    assert server.decode(wrapped, round=0)[1].tolist() == [1, 1, 1, 1]


def test_refusal_and_exactness_trials():
    # Seeded trials of five kinds; each round is decoded by a server that has seen the earlier
    # rounds. Outcomes are "refused" (SCMADecodeError or its subclass SCMAMessageError) or
    # "exact" (the decoded sum equals the sum of the vectors of the messages that were meant to
    # be summed); a wrong sum never comes out. Messages go bare (np.asarray) half of the time.
    rng = np.random.default_rng(5)
    L, t = 4, 6
    counts = {}
    for trial in range(150):
        setup = SCMASetup(L, t, index_space=10**5, random_state=trial)
        other = SCMASetup(L, t, index_space=10**5, random_state=trial)
        clients = [SCMAClient(l, setup) for l in range(L)]
        server = SCMAServer(setup.public())
        bare = trial % 2 == 1

        def draw(k):
            return rng.choice(10**5, size=k, replace=False), rng.integers(1, 50, k)

        for kind in ("corrupted", "replayed", "cross-round", "cross-setup", "over-capacity"):
            r = 2 * ("corrupted", "replayed", "cross-round", "cross-setup",
                     "over-capacity").index(kind)
            k = t // L if kind != "over-capacity" else t
            vectors = {l: draw(k) for l in range(L)}
            msgs = {l: clients[l].encode(*vectors[l], round=r) for l in range(L)}
            victim = int(rng.integers(L))
            if kind == "corrupted":
                m = np.array(msgs[victim])
                pos = rng.choice(m.shape[0], size=int(rng.integers(1, 3)), replace=False)
                m[pos] = (m[pos] + rng.integers(1, M61, pos.shape[0]).astype(np.uint64)) % M61
                msgs[victim] = SCMAMessage.wrap(m, msgs[victim].header)
            elif kind == "replayed":  # the victim's message of the round before
                msgs[victim] = previous[victim]
            elif kind == "cross-round":
                msgs[victim] = clients[victim].encode(*vectors[victim], round=r + 1)
            elif kind == "cross-setup":
                msgs[victim] = SCMAClient(victim, other).encode(*vectors[victim], round=r)
            sent = {l: np.asarray(m) if bare else m for l, m in msgs.items()}
            try:
                got = as_dict(*server.decode(sent, round=r))
            except SCMADecodeError:
                outcome = "refused"
            else:
                assert got == exact_sum(vectors.values()), (trial, kind)
                outcome = "exact"
            counts[kind, outcome] = counts.get((kind, outcome), 0) + 1
            previous = msgs
    print("SCMA trials (kind, outcome): count", sorted(counts.items()))
    n = 150
    for kind in ("replayed", "cross-round", "cross-setup", "over-capacity"):
        assert counts.get((kind, "refused"), 0) == n, (kind, counts)
    assert counts.get(("corrupted", "refused"), 0) + counts.get(("corrupted", "exact"), 0) == n
    assert counts.get(("corrupted", "refused"), 0) >= 0.9 * n


def test_public_config_carries_generator_threshold_and_setup_id():
    for kw in (dict(), dict(mask_generator="pcg64"), dict(dropout_threshold=2)):
        setup = SCMASetup(3, 4, index_space=50, random_state=1, **kw)
        config = setup.public_config()
        public = SCMASetup.from_public_config(config)
        assert public.is_public and not setup.is_public
        for name in ("setup_id", "mask_generator", "dropout_threshold", "max_count", "nonce"):
            assert getattr(public, name) == getattr(setup, name), name
    config.pop("setup_id")
    with pytest.raises(ValueError, match="lacks 'setup_id'"):
        SCMASetup.from_public_config(config)
    for bad in (0, 4):
        with pytest.raises(ValueError, match="'dropout_threshold'"):
            SCMASetup(3, 4, index_space=50, dropout_threshold=bad)
    with pytest.raises(ValueError, match="pair keys change every round"):
        SCMASetup(3, 4, index_space=50, dropout_threshold=2).pair_seed(0, 1)


@pytest.mark.parametrize("generator", ["chacha20", "pcg64"])
def test_clients_taking_their_masks_in_any_order_get_the_round_masks(generator):
    # In-process clients take their masks as they encode: each request expands the client's
    # pairs with the clients that have not asked yet. Any order, repeated requests, interleaved
    # rounds and participant sets all give the masks of round_masks.
    setup = SCMASetup(6, 4, index_space=50, mask_generator=generator, random_state=2)
    rng = np.random.default_rng(3)
    clients = [SCMAClient(l, setup) for l in range(6)]
    for r, participants in [(0, None), (1, [1, 2, 4]), (2, None), (1, None), (5, [0, 5])]:
        want = setup.round_masks(r, participants)
        order = rng.permutation(sorted(want)).tolist()
        got = {}
        for i, l in enumerate(order + order[:2]):  # the first two ask again
            got[l] = clients[l].mask(r, participants)
            np.testing.assert_array_equal(got[l], want[l])
            if r == 2 and i == 0:  # a request for an older round while round 2 is pending
                np.testing.assert_array_equal(clients[3].mask(0), setup.round_masks(0)[3])
    half = [SCMAClient(l, setup).mask(9) for l in range(3)]  # round 9 left half taken
    assert all(np.array_equal(m, setup.client_mask(l, 9)) for l, m in enumerate(half))
    rest = [SCMAClient(l, setup).mask(10) for l in range(6)]
    assert not total_of(rest, setup.prime).any()
