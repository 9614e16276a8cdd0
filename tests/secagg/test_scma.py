"""SCMA protocol: exact round trips, loud failures, message lengths, masks and privacy."""
import doctest

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

import fedcore.secagg
import fedcore.secagg.server
from fedcore.federation.ledger import CommLedger
from fedcore.kernels.field.reed_solomon import power_sums
from fedcore.secagg import SCMAClient, SCMADecodeError, SCMAServer, SCMASetup
from fedcore.secagg._prg import pair_stream, uniform_field_elements

M61 = 2**61 - 1


def exact_sum(vectors):
    """{bin (tuple or int): total count} of a list of (bins, counts)."""
    total = {}
    for bins, counts in vectors:
        for b, c in zip(bins, counts):
            key = tuple(int(v) for v in b) if np.ndim(b) else int(b)
            total[key] = total.get(key, 0) + int(c)
    return {k: v for k, v in total.items() if v}


def as_dict(bins, counts):
    return {(tuple(int(v) for v in b) if np.ndim(b) else int(b)): int(c)
            for b, c in zip(bins, counts)}


def run_round(setup, vectors, round=0, participants=None):
    ids = range(setup.n_clients) if participants is None else participants
    msgs = {l: SCMAClient(l, setup).encode(*vectors[l], round=round, participants=participants)
            for l in ids}
    return SCMAServer(setup).decode(msgs, round=round, participants=participants)


def test_doctests_including_the_paper_fig2_example():
    for module in (fedcore.secagg, fedcore.secagg.server):
        result = doctest.testmod(module)
        assert result.attempted > 0 and result.failed == 0


# ---------------------------------------------------------------- round trips (Hypothesis)
@st.composite
def scma_problem(draw):
    """A setup, the participants and their vectors, with a union of at most `capacity` bins.

    Hashed spaces use p >= 2**31 - 1 so that the collision probability of the universal hash
    (setup.collision_bound, below 1e-5 here) is negligible; direct spaces use any prime.
    """
    space = draw(st.sampled_from(["index", "index_huge", "coords", "coords_hashed"]))
    if space in ("index_huge", "coords_hashed"):
        p = draw(st.sampled_from([2**31 - 1, M61, 2**62 - 57]))
    else:
        p = draw(st.sampled_from([13, 101, 65537, 2**31 - 1, M61]))
    n_clients = draw(st.integers(1, min(50, p - 1)))
    capacity = draw(st.integers(1, 12))
    if space == "index":
        kw = dict(index_space=draw(st.integers(1, min(p - 1, 10**6))))
        universe = kw["index_space"]
    elif space == "index_huge":
        kw = dict(index_space=draw(st.sampled_from([p, p + 1, 2**40, 2**62, 2**63])))
        universe = kw["index_space"]
    elif space == "coords":
        d = draw(st.integers(1, 3))
        # (a float root of p - 1 may round above it: 2**61 - 2 becomes 2**61)
        b = draw(st.integers(1, max(1, min(p - 1, int((p - 1) ** (1 / d))))))
        kw = dict(n_dims=d, bins=b)
        universe = b ** d
    else:
        d = draw(st.sampled_from([3, 10, 40]))
        b = draw(st.sampled_from([2, 7, 173, 1000]))
        if b ** d < p:
            d = 40
        kw = dict(n_dims=d, bins=b)
        universe = b ** d
    rng = np.random.default_rng(draw(st.integers(0, 2**32)))
    n_pool = min(capacity, universe)
    pool = set()
    while len(pool) < n_pool:
        if "n_dims" in kw:
            pool.add(tuple(int(v) for v in rng.integers(0, kw["bins"], kw["n_dims"])))
        else:
            pool.add(int(rng.integers(0, universe)) if universe < 2**63 else
                     int(rng.integers(0, 2**63 - 1, dtype=np.int64)))
    pool = sorted(pool)
    per_client = max(1, (p - 1) // n_clients)
    setup = SCMASetup(n_clients, capacity, prime=p, check_syndromes=draw(st.integers(0, 3)),
                      max_count=per_client,
                      n_shards=draw(st.sampled_from([1, 1, 2, 3])),
                      random_state=draw(st.integers(0, 2**32)), **kw)
    participants = sorted(draw(st.sets(st.integers(0, n_clients - 1), min_size=1)))
    vectors = {}
    for l in participants:
        k = int(rng.integers(0, len(pool) + 1))
        chosen = rng.choice(len(pool), size=k, replace=False) if k else []
        bins = [pool[i] for i in chosen]
        counts = [int(c) for c in rng.integers(1, min(per_client, 10**6) + 1, k)]
        vectors[l] = (np.array(bins, dtype=np.int64).reshape((k, kw["n_dims"]) if "n_dims" in kw
                                                            else (k,)), counts)
    return setup, participants, vectors


@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(scma_problem(), st.integers(0, 2**40))
def test_decode_equals_exact_sum(problem, round):
    setup, participants, vectors = problem
    expect = exact_sum([vectors[l] for l in participants])
    bins, counts = run_round(setup, vectors, round, participants)
    assert as_dict(bins, counts) == expect
    keys = [tuple(b) for b in bins.tolist()] if setup.coordinates else bins.tolist()
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert counts.dtype == np.int64 and bins.dtype == np.int64


def test_round_trip_large_index_spaces_and_sharding():
    # d = 10, B = 173 and d = 784, B = 192 (the benchmark space), with automatic sharding.
    rng = np.random.default_rng(0)
    for d, B, L, K in [(10, 173, 5, 20), (784, 192, 6, 100)]:
        setup = SCMASetup(L, L * K, n_dims=d, bins=B, random_state=1)
        vectors = {l: (rng.integers(0, B, (K, d)), rng.integers(1, 50, K)) for l in range(L)}
        vectors[1] = (np.vstack([vectors[0][0][:K // 2], vectors[1][0][K // 2:]]), vectors[1][1])
        bins, counts = run_round(setup, vectors)
        assert as_dict(bins, counts) == exact_sum(list(vectors.values()))
    assert setup.n_shards == 3 and setup.n_chunks == 98 and setup.coords_per_chunk == 8


# ---------------------------------------------------------------- message length and ledger
@pytest.mark.parametrize("kw, chunks", [
    (dict(index_space=1000), 0),
    (dict(index_space=2**63), 2),              # 60-bit digits of a 63-bit index
    (dict(n_dims=10, bins=173), 2),            # 173**8 < p: 8 coordinates per chunk
    (dict(n_dims=784, bins=192), 98),
])
def test_message_length_formula_and_ledger(kw, chunks):
    setup = SCMASetup(100, 1000, random_state=0, **kw)
    t_s, G, c = setup.shard_capacity, setup.n_shards, setup.check_syndromes
    assert setup.n_chunks == chunks
    assert setup.message_length == G * (2 * t_s + c + chunks * t_s)
    assert setup.bits_per_element == 61 and setup.message_bits == 61 * setup.message_length
    assert G == 4 and t_s >= 250  # automatic sharding: ceil(1000 / 256) shards
    ledger = CommLedger()
    setup.record_message(ledger, 3, 7)
    assert ledger.summary()["up"] == {"messages": 1, "elements": setup.message_length,
                                      "bits": setup.message_bits}


def test_server_needs_only_the_public_parameters():
    setup = SCMASetup(3, 4, prime=101, index_space=50, random_state=0)
    msgs = [SCMAClient(l, setup).encode([l + 1], [2], round=1) for l in range(3)]
    bins, counts = SCMAServer(setup.public()).decode(msgs, round=1)
    assert bins.tolist() == [1, 2, 3] and counts.tolist() == [2, 2, 2]
    with pytest.raises(ValueError, match="public parameters only"):
        SCMAClient(0, setup.public()).encode([1], [1], round=2)


@pytest.mark.parametrize("kw", [dict(index_space=50, prime=101),
                                dict(n_dims=3, bins=40, capacity=600)])
def test_public_config_rebuilds_the_public_setup(kw):
    kw = dict({"capacity": 4}, **kw)
    setup = SCMASetup(3, random_state=7, **kw)
    config = setup.public_config()
    assert all(v is None or isinstance(v, (int, float, str)) for v in config.values())
    assert all(abs(v) < 2**63 for v in config.values() if isinstance(v, (int, float)))
    public = SCMASetup.from_public_config(config)
    same = setup.public()
    for name in ("prime", "nonce", "hash_key", "shard_key", "n_shards", "shard_capacity",
                 "message_length", "n_chunks", "max_count", "setup_id", "mask_generator"):
        assert getattr(public, name) == getattr(same, name), name
    bins = [[1, 2, 3], [4, 5, 6]] if "n_dims" in kw else [1, 2]
    msgs = [SCMAClient(l, setup).encode(bins[:1 + (l > 0)], [1] * (1 + (l > 0)), round=0)
            for l in range(3)]
    expected = SCMAServer(same).decode(msgs, round=0)
    got = SCMAServer(public).decode(msgs, round=0)
    for a, b in zip(expected, got):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="public parameters only"):
        public.pair_seed(0, 1)


def test_clients_with_agreed_pair_seeds_need_only_the_public_setup():
    setup = SCMASetup(4, 8, prime=101, index_space=50, random_state=1)
    public = setup.public()
    rng = np.random.default_rng(0)
    agreed = {(a, b): int(rng.integers(2**62)) << 64 for a in range(4) for b in range(a + 1, 4)}
    seeds = [{o: agreed[min(l, o), max(l, o)] for o in range(4) if o != l} for l in range(4)]
    clients = [SCMAClient(l, public, pair_seeds=seeds[l]) for l in range(4)]
    msgs = [c.encode([l + 3], [l + 1], round=2) for l, c in enumerate(clients)]
    bins, counts = SCMAServer(public).decode(msgs, round=2)
    assert bins.tolist() == [3, 4, 5, 6] and counts.tolist() == [1, 2, 3, 4]
    # The setup's own seeds, handed over explicitly, give the same messages as the setup.
    own = SCMAClient(0, public, pair_seeds={o: setup.pair_seed(0, o) for o in (1, 2, 3)})
    np.testing.assert_array_equal(own.encode([7], [1], round=3),
                                  SCMAClient(0, setup).encode([7], [1], round=3))
    with pytest.raises(ValueError, match="shares no seed with client 3"):
        SCMAClient(0, public, pair_seeds={1: 5, 2: 6}).encode([1], [1], round=0)


def test_encode_and_decode_record_messages_in_a_ledger():
    setup = SCMASetup(3, 4, prime=101, index_space=50, random_state=0)
    client_ledger, server_ledger = CommLedger(), CommLedger()
    msgs = [SCMAClient(l, setup).encode([l], [1], round=5, ledger=client_ledger)
            for l in range(3)]
    SCMAServer(setup).decode(msgs, round=5, ledger=server_ledger)
    for ledger in (client_ledger, server_ledger):
        assert ledger.n_messages == 3 and ledger.n_rounds == 1
        assert ledger.n_bits == 3 * setup.message_length * 7
        assert {m.sender for m in ledger.messages} == {0, 1, 2}


def test_sharding_capacity_meets_the_stated_overflow_bound():
    setup = SCMASetup(100, 6200, n_dims=784, bins=192, overflow_probability=1e-9, random_state=0)
    G, t_s = setup.n_shards, setup.shard_capacity
    assert G * stats.binom.sf(t_s, 6200, 1 / G) <= 1e-9 < G * stats.binom.sf(t_s - 1, 6200, 1 / G)
    assert SCMASetup(10, 100, index_space=10**6, random_state=0).n_shards == 1


# ---------------------------------------------------------------- validation
@pytest.mark.parametrize("kw, exc, words", [
    (dict(n_clients=0, capacity=3, index_space=10), ValueError, "n_clients"),
    (dict(n_clients=2, capacity=0, index_space=10), ValueError, "capacity"),
    (dict(n_clients=2, capacity=3, index_space=10, prime=15), ValueError, "prime"),
    (dict(n_clients=2, capacity=3, index_space=10, prime=2**62 + 135), ValueError, "prime"),
    (dict(n_clients=2, capacity=3, index_space=10, prime=2.0), TypeError, "prime"),
    (dict(n_clients=2, capacity=3), ValueError, "index_space"),
    (dict(n_clients=2, capacity=3, index_space=10, n_dims=2, bins=3), ValueError, "index_space"),
    (dict(n_clients=2, capacity=3, n_dims=3, bins=200, prime=101), ValueError, "bins"),
    (dict(n_clients=2, capacity=3, index_space=10, max_count=0), ValueError, "max_count"),
    (dict(n_clients=2, capacity=3, index_space=10, prime=13, max_count=13), ValueError,
     "max_count"),
    (dict(n_clients=2, capacity=3, index_space=10, check_syndromes=-1), ValueError,
     "check_syndromes"),
    (dict(n_clients=2, capacity=3, index_space=10, overflow_probability=0.0), ValueError,
     "overflow_probability"),
])
def test_setup_validation_names_the_argument(kw, exc, words):
    with pytest.raises(exc, match=words):
        SCMASetup(**kw)


def test_client_validation_names_the_argument_and_value():
    setup = SCMASetup(3, 3, prime=101, index_space=20, max_count=30, random_state=0)
    c = SCMAClient(0, setup)
    cases = [
        (([1, 25], [1, 1]), ValueError, r"'indices'.*25"),
        (([1, -1], [1, 1]), ValueError, r"'indices'.*-1"),
        (([1, 2], [1, -4]), ValueError, r"'counts'.*-4"),
        (([1, 2], [1, 31]), ValueError, r"max_count=30.*31"),
        (([1, 1], [20, 20]), ValueError, r"repeated bin sums to 40"),
        (([1, 2, 3, 4], [1, 1, 1, 1]), ValueError, r"4 nonzero bins.*capacity 3"),
        (([1.0, 2.0], [1, 1]), TypeError, r"'indices'.*float"),
        (([1, 2], [1.5, 1]), TypeError, r"'counts'.*float"),
        (([1, 2], [1]), ValueError, r"'indices'.*shape"),
    ]
    for (idx, cnt), exc, pattern in cases:
        with pytest.raises(exc, match=pattern):
            c.encode(idx, cnt, round=0)
    with pytest.raises(ValueError, match="participants.*client 0"):
        c.encode([1], [1], round=0, participants=[1, 2])
    with pytest.raises(ValueError, match="'client_id'"):
        SCMAClient(3, setup)
    with pytest.raises(TypeError, match="'setup'"):
        SCMAClient(0, "setup")
    with pytest.raises(ValueError, match="'round'"):
        c.encode([1], [1], round=-1)
    coord = SCMAClient(0, SCMASetup(2, 3, n_dims=3, bins=5, random_state=0))
    with pytest.raises(ValueError, match=r"shape \(2, 3\)"):
        coord.encode([[1, 2], [3, 4]], [1, 1], round=0)


def test_duplicates_merge_and_zero_counts_are_dropped():
    setup = SCMASetup(2, 3, prime=101, index_space=20, max_count=50, random_state=0)
    msgs = [SCMAClient(0, setup).encode([4, 7, 4, 9], [2, 0, 3, 1], round=0),
            SCMAClient(1, setup).encode([], [], round=0)]
    bins, counts = SCMAServer(setup).decode(msgs, round=0)
    assert bins.tolist() == [4, 9] and counts.tolist() == [5, 1]


def test_encoding_twice_for_a_round_raises_and_precomputed_masks():
    setup = SCMASetup(3, 4, prime=101, index_space=50, random_state=0)
    c0 = SCMAClient(0, setup)
    c0.encode([1], [1], round=2)
    with pytest.raises(ValueError, match="already encoded a message for round 2"):
        c0.encode([3], [1], round=2)
    with pytest.raises(ValueError, match="round 2"):
        c0.precompute_mask(2)
    c0.precompute_mask(3, participants=[0, 1])
    with pytest.raises(ValueError, match="precomputed for participants"):
        c0.encode([3], [1], round=3)
    c0.precompute_mask(4, participants=[0, 1])
    m0 = c0.encode([3], [2], round=4, participants=[0, 1])
    m1 = SCMAClient(1, setup).encode([3, 8], [1, 1], round=4, participants=[0, 1])
    bins, counts = SCMAServer(setup).decode({1: m1, 0: m0}, round=4, participants=[0, 1])
    assert bins.tolist() == [3, 8] and counts.tolist() == [3, 1]


def test_participants_are_checked_on_every_path():
    setup = SCMASetup(5, 4, prime=101, index_space=50, random_state=0)
    assert setup.check_participants((0, 2, 4)) == (0, 2, 4)  # canonical: returned as is
    assert setup.check_participants([4, np.int64(0), 2]) == (0, 2, 4)
    for bad, error in (((2, 2), "repeats"), ((0, 5), "participants"), ((-1, 2), "participants"),
                       ((), "at least one"), ((2, 0, 2), "repeats")):
        with pytest.raises(ValueError, match=error):
            setup.check_participants(bad)
    with pytest.raises(ValueError, match="encoding client 3"):
        setup.check_participants((0, 2, 4), client_id=3)


def test_server_names_missing_extra_and_malformed_messages():
    setup = SCMASetup(4, 4, prime=101, index_space=50, random_state=0)
    msgs = {l: SCMAClient(l, setup).encode([l], [1], round=0) for l in range(4)}
    server = SCMAServer(setup)
    with pytest.raises(ValueError, match=r"participant\(s\) \[1, 3\]"):
        server.decode({0: msgs[0], 2: msgs[2]}, round=0)
    with pytest.raises(ValueError, match=r"client\(s\) \[3\] that are not participants"):
        server.decode(msgs, round=0, participants=[0, 1, 2])
    with pytest.raises(ValueError, match="one message per participant"):
        server.decode([msgs[0], msgs[1]], round=0)
    bad = dict(msgs)
    bad[2] = msgs[2][:-1]
    with pytest.raises(ValueError, match="client 2 must have shape"):
        server.decode(bad, round=0)
    bad[2] = msgs[2].astype(float)
    with pytest.raises(TypeError, match="client 2 must hold integers"):
        server.decode(bad, round=0)
    bad[2] = msgs[2].copy()
    bad[2][0] = 101
    with pytest.raises(ValueError, match="client 2 has entries outside"):
        server.decode(bad, round=0)
    for value, dtype in ((-1, np.int64), (2**63, np.uint64), (2**64 - 1, np.uint64)):
        bad[2] = msgs[2].astype(dtype)
        bad[2][1] = value  # above 2**63 a uint64 would wrap to a negative int64
        with pytest.raises(ValueError, match="client 2 has entries outside"):
            server.decode(bad, round=0)
    with pytest.raises(TypeError, match="'setup'"):
        SCMAServer(None)


# ---------------------------------------------------------------- loud failures
def unmasked_total(setup, points, counts):
    """The aggregate an honest run would produce for the given points (1 shard, direct space)."""
    total = np.zeros((1, setup.count_length), dtype=np.int64)
    power_sums(np.asarray(points, dtype=np.int64),
               np.asarray(counts, dtype=np.int64).reshape(1, -1), 0, total, setup.prime)
    return total[0]


@pytest.mark.parametrize("p", [2**31 - 1, M61])
def test_over_capacity_and_corruption_never_decode_wrongly(p):
    # 3000 seeded trials per prime: sums with t+1 .. 2t+4 nonzeros, and in-capacity sums with
    # one to three corrupted syndromes. A wrong vector would pass every check with probability
    # below setup.false_accept_bound = (t / p)**2 < 1e-16, so any returned vector is a bug.
    rng = np.random.default_rng(p % 10007)
    server_by_t = {}
    for trial in range(3000):
        t = int(rng.integers(1, 7))
        if t not in server_by_t:
            server_by_t[t] = SCMAServer(SCMASetup(4, t, prime=p, index_space=10**6,
                                                  random_state=t))
        server = server_by_t[t]
        setup = server.setup
        over = trial % 2 == 0
        m = int(rng.integers(t + 1, 2 * t + 5)) if over else int(rng.integers(0, t + 1))
        points = rng.choice(10**6, size=m, replace=False) + 1
        counts = rng.integers(1, 1000, m)
        total = unmasked_total(setup, points, counts)
        if not over:
            k = int(rng.integers(1, 4))
            pos = rng.choice(total.shape[0], size=min(k, total.shape[0]), replace=False)
            total[pos] = (total[pos] + rng.integers(1, p, pos.shape[0])) % p
        with pytest.raises(SCMADecodeError):
            server.decode_sum(total, round=trial)


def test_corrupted_coordinate_channels_never_decode_wrongly():
    # Hashed space (d = 10, B = 173): 500 seeded trials corrupt one to three elements of the
    # coordinate channels (or of the count syndromes) of a valid aggregate. The decoded bins
    # must hash back to their points, which a corrupted coordinate does with probability ~1/p.
    setup = SCMASetup(3, 6, n_dims=10, bins=173, random_state=5)
    server = SCMAServer(setup)
    rng = np.random.default_rng(11)
    p = setup.prime
    for trial in range(500):
        k = int(rng.integers(1, 7))
        bins = rng.integers(0, 173, (k, 10))
        total = SCMAClient(0, setup).syndromes(bins, rng.integers(1, 100, k))
        lo = setup.count_length if trial % 3 else 0
        pos = rng.choice(np.arange(lo, setup.message_length), size=int(rng.integers(1, 4)),
                         replace=False)
        total[pos] = (total[pos] + rng.integers(1, p, pos.shape[0])) % p
        try:
            got = server.decode_sum(total, round=trial)
        except SCMADecodeError:
            continue
        # a corruption beyond the first L syndromes of a channel is invisible and harmless
        order = np.lexsort(bins.T[::-1])
        assert np.array_equal(got[0], bins[order]), trial


def test_failure_reasons_are_named():
    setup = SCMASetup(2, 3, prime=M61, index_space=1000, max_count=10, random_state=0)
    server = SCMAServer(setup)
    spike = np.zeros(setup.message_length, dtype=np.int64)
    spike[5] = 1  # S_1 = .. = S_5 = 0, S_6 = 1: linear complexity 6 > t = 3
    with pytest.raises(SCMADecodeError, match="more than 3 nonzero bins"):
        server.decode_sum(spike)
    with pytest.raises(SCMADecodeError, match="distinct roots|check syndromes"):
        server.decode_sum(unmasked_total(setup, [1, 2, 3, 4, 5, 6, 7], [1] * 7))
    with pytest.raises(SCMADecodeError, match=r"outside \[1, 20\].*max_count=10"):
        server.decode_sum(unmasked_total(setup, [5], [21]))  # 2 clients * max_count 10
    with pytest.raises(SCMADecodeError, match="not a bin of the index space"):
        server.decode_sum(unmasked_total(setup, [5000], [1]))
    with pytest.raises(SCMADecodeError, match="check syndromes|distinct roots|outside"):
        server.decode_sum(unmasked_total(setup, [1, 2, 3, 4], [1] * 4))
    # max_count bounds each client: 6 + 6 = 12 > 10 is a valid sum; one sender's bound is 10
    msgs = [SCMAClient(0, setup).encode([1], [6], round=0),
            SCMAClient(1, setup).encode([1], [6], round=0)]
    bins, counts = SCMAServer(setup).decode(msgs, round=0)
    assert bins.tolist() == [1] and counts.tolist() == [12]
    with pytest.raises(SCMADecodeError, match=r"outside \[1, 10\]"):
        server.decode_sum(unmasked_total(setup, [5], [11]), n_senders=1)


def test_mismatched_participants_raise():
    setup = SCMASetup(3, 4, prime=M61, index_space=100, random_state=0)
    msgs = {0: SCMAClient(0, setup).encode([1], [1], round=0, participants=[0, 1, 2]),
            1: SCMAClient(1, setup).encode([2], [1], round=0, participants=[0, 1])}
    with pytest.raises(SCMADecodeError):
        SCMAServer(setup).decode(msgs, round=0, participants=[0, 1])


def test_hash_collision_between_clients_is_detected():
    # p = 65537 with 300**2 > p bins: collisions exist; find one and give its two bins to two
    # clients. A garbage coordinate passes the range and hash checks with probability < 1e-9.
    setup = SCMASetup(2, 4, prime=65537, n_dims=2, bins=300, random_state=3)
    grid = np.array([(i, j) for i in range(300) for j in range(300)], dtype=np.int64)
    points, _ = setup.points_of(grid)
    order = np.argsort(points, kind="stable")
    same = np.flatnonzero(points[order][1:] == points[order][:-1])[0]
    u, v = grid[order[same]], grid[order[same + 1]]
    msgs = [SCMAClient(0, setup).encode([u], [1], round=0),
            SCMAClient(1, setup).encode([v], [1], round=0)]
    with pytest.raises(SCMADecodeError, match="hash collision"):
        SCMAServer(setup).decode(msgs, round=0)
    fresh = setup.rekeyed(random_state=4)
    bins, counts = run_round(fresh, {0: ([u], [1]), 1: ([v], [1])})
    assert as_dict(bins, counts) == {tuple(u.tolist()): 1, tuple(v.tolist()): 1}


def test_shard_overflow_is_detected():
    setup = SCMASetup(2, 40, prime=M61, index_space=10**5, n_shards=4, random_state=0)
    idx = np.arange(10**5)
    in_shard0 = idx[setup.shard_of(idx + 1) == 0][:setup.shard_capacity + 1]
    half = len(in_shard0) // 2
    vectors = {0: (in_shard0[:half], [1] * half),
               1: (in_shard0[half:], [1] * (len(in_shard0) - half))}
    with pytest.raises(SCMADecodeError, match="shard 0 of 4"):
        run_round(setup, vectors)


def test_empirical_false_acceptance_within_the_stated_bound():
    # With p = 101, t = 2 and c = 1 check syndrome, the stated bound is t / p ~ 2%. Over 1500
    # seeded over-capacity trials the wrong-answer rate must stay below 3x the bound (binomial
    # tail of a 2% rate exceeding 6%: below 1e-12).
    setup = SCMASetup(2, 2, prime=101, index_space=100, check_syndromes=1, max_count=50,
                      random_state=0)  # decoded counts in [1, 2 * 50]
    server = SCMAServer(setup)
    rng = np.random.default_rng(1)
    wrong = 0
    trials = 1500
    for _ in range(trials):
        m = int(rng.integers(3, 6))
        points = rng.choice(100, size=m, replace=False) + 1
        try:
            server.decode_sum(unmasked_total(setup, points, rng.integers(1, 20, m)))
            wrong += 1
        except SCMADecodeError:
            pass
    assert wrong / trials <= 3 * setup.false_accept_bound


# ---------------------------------------------------------------- masks and privacy
def test_prg_is_deterministic_uniform_and_shared_by_the_pair():
    a = uniform_field_elements(pair_stream(12345, 7, 3), 20000, 13)
    b = uniform_field_elements(pair_stream(12345, 7, 3), 20000, 13)
    c = uniform_field_elements(pair_stream(12345, 7, 4), 20000, 13)
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    assert a.min() >= 0 and a.max() < 13
    # chi-square goodness of fit on 13 cells; false-alarm rate 1e-4 (fixed seed: deterministic)
    assert stats.chisquare(np.bincount(a, minlength=13)).pvalue > 1e-4
    big = uniform_field_elements(pair_stream(1, 2, 3), 5000, M61)
    assert big.min() >= 0 and big.max() < M61


def test_masks_cancel_exactly_over_the_participants():
    setup = SCMASetup(6, 3, prime=M61, index_space=50, random_state=0)
    for participants in (None, [0, 2, 5], [4]):
        ids = range(6) if participants is None else participants
        total = np.zeros(setup.message_length, dtype=object)
        for l in ids:
            total += SCMAClient(l, setup).mask(9, participants).astype(object)
        assert all(v % M61 == 0 for v in total)


@pytest.mark.slow
def test_single_message_is_uniform_and_independent_of_the_input():
    # p = 13, message of 5 elements. Client 0 encodes input A or input B in 2000 fresh rounds
    # each (3 participants). Tests, each with false-alarm rate 1e-4 (Bonferroni over the 11 tests
    # below: at most 1.1e-3 in total; the seeds are fixed so the outcome is deterministic):
    # every coordinate uniform (chi-square, 13 cells), and the joint law of two coordinates the
    # same under A and B (two-sample chi-square on 169 cells).
    setup = SCMASetup(3, 2, prime=13, index_space=12, check_syndromes=1, max_count=4,
                      random_state=0)
    client = SCMAClient(0, setup)
    n = 2000
    views = {}
    for name, (idx, cnt) in {"A": ([0, 5], [1, 3]), "B": ([], [])}.items():
        views[name] = np.array([client.encode(idx, cnt, round=r + (0 if name == "A" else n))
                                for r in range(n)], dtype=np.int64)
    for name in views:
        for j in range(setup.message_length):
            assert stats.chisquare(np.bincount(views[name][:, j], minlength=13)).pvalue > 1e-4
    table = np.array([np.bincount(13 * v[:, 0] + v[:, 1], minlength=169) for v in views.values()])
    assert stats.chi2_contingency(table).pvalue > 1e-4


@pytest.mark.slow
def test_two_splittings_of_one_sum_give_identically_distributed_server_views():
    # Three clients hold either split A or split B of the same sum. The server view is all three
    # messages (12 elements). Under both, each message must be uniform and the views must have
    # the same law: two-sample chi-square tests on the joint of (m0[0], m1[0]) and of
    # (m0[1], m2[3]) (169 cells each), and on every single coordinate (13 cells).
    # Each test has false-alarm rate 1e-4; 26 tests, so at most 2.6e-3 in total (fixed seeds).
    setup = SCMASetup(3, 2, prime=13, index_space=12, check_syndromes=0, max_count=4,
                      random_state=1)
    splits = {"A": {0: ([2], [1]), 1: ([2, 7], [2, 1]), 2: ([], [])},
              "B": {0: ([7], [1]), 1: ([], []), 2: ([2], [3])}}
    n = 1500
    views = {}
    for name, split in splits.items():
        clients = [SCMAClient(l, setup) for l in range(3)]
        offset = 0 if name == "A" else n
        rows = []
        for r in range(n):
            msgs = [clients[l].encode(*split[l], round=r + offset) for l in range(3)]
            rows.append(np.concatenate(msgs).astype(np.int64))
        views[name] = np.array(rows)
        # the view determines the sum: decode it once
        total = views[name][0].reshape(3, -1).sum(axis=0) % 13
        bins, counts = SCMAServer(setup).decode_sum(total)
        assert bins.tolist() == [2, 7] and counts.tolist() == [3, 1]
    m = setup.message_length
    for a, b in [(0, m), (1, 2 * m + 3)]:
        table = np.array([np.bincount(13 * v[:, a] + v[:, b], minlength=169)
                          for v in views.values()])
        assert stats.chi2_contingency(table).pvalue > 1e-4
    for j in range(3 * m):
        table = np.array([np.bincount(v[:, j], minlength=13) for v in views.values()])
        assert stats.chi2_contingency(table).pvalue > 1e-4
