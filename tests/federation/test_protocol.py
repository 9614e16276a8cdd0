"""The protocol: messages measure themselves, channels count what crosses them."""
from dataclasses import dataclass

import numpy as np
import pytest

import fedcore
from fedcore.algorithms.base import FederatedEstimator
from fedcore.federation.ledger import SERVER, CommLedger
from fedcore.federation.protocol import (InProcessChannel, Message, ProtocolError, diagnostic,
                                         message_type, type_name)


@dataclass(frozen=True, eq=False)
class Block(Message):
    kind = "block"
    values: np.ndarray
    scale: float
    note: np.ndarray = diagnostic()


@dataclass(frozen=True, eq=False)
class Hint(Message):
    counted = False
    seed: int


@dataclass(frozen=True, eq=False)
class Ask(Message):
    pass


class Doubler:
    def __init__(self, offset):
        self.offset = offset
        self.seed = None

    def handle(self, message):
        if isinstance(message, Hint):
            self.seed = message.seed
            return Ask()
        if isinstance(message, Ask):
            return Block(np.full(3, self.offset, dtype=np.int32), 1.0, np.zeros(5))
        return Block(2 * message.values + self.offset, message.scale, np.zeros(5))


def test_size_counts_payload_elements_and_dtype_bits():
    m = Block(np.zeros((4, 3)), 2.0, np.zeros(100))
    assert m.size() == (13, 12 * 64 + 64)            # the diagnostic field is not counted
    assert Block(np.zeros(6, dtype=np.float32), 1.0, np.zeros(0)).size() == (7, 6 * 32 + 64)
    assert Ask().size() == (0, 0)


def test_channel_counts_requests_and_replies_measured_from_the_messages():
    clients = [Doubler(l) for l in range(3)]
    channel = InProcessChannel(clients)
    replies = channel.exchange({l: Block(np.arange(4.0), 0.5, np.zeros(1)) for l in range(3)},
                               round_number=2)
    for l in range(3):
        np.testing.assert_array_equal(replies[l].values, 2 * np.arange(4.0) + l)
    ms = channel.ledger.messages
    assert [(m.round, m.sender, m.receiver, m.kind, m.n_elements, m.n_bits) for m in ms] == (
        [(2, SERVER, l, "block", 5, 320) for l in range(3)]
        + [(2, l, SERVER, "block", 5, 320) for l in range(3)])


def test_setup_messages_and_empty_requests_are_not_counted():
    clients = [Doubler(0), Doubler(1)]
    channel = InProcessChannel(clients)
    channel.exchange({0: Hint(seed=3), 1: Hint(seed=4)}, round_number=0)
    assert [c.seed for c in clients] == [3, 4] and channel.ledger.n_messages == 0
    replies = channel.broadcast(Ask(), round_number=0)
    assert [r.values.dtype for r in replies.values()] == [np.int32, np.int32]
    assert channel.ledger.summary()["down"]["messages"] == 0
    assert channel.ledger.summary()["up"] == {"messages": 2, "elements": 8,
                                              "bits": 2 * (3 * 32 + 64)}
    ledger = CommLedger()
    Hint(seed=1).record(ledger, 0, SERVER, 0)
    assert ledger.n_messages == 0


@pytest.mark.parametrize("n_jobs", [1, 2, 5])
def test_replies_do_not_depend_on_the_thread_pool(n_jobs):
    channel = InProcessChannel([Doubler(l) for l in range(5)], n_jobs=n_jobs)
    replies = channel.exchange({4: Ask(), 1: Ask()}, round_number=0)
    assert list(replies) == [4, 1]
    assert [int(r.values[0]) for r in replies.values()] == [4, 1]


def test_a_reply_that_is_not_a_message_is_refused():
    class Rude:
        def handle(self, message):
            return {"values": [1, 2]}

    with pytest.raises(ProtocolError, match="Client 0 replied with a dict"):
        InProcessChannel([Rude()]).broadcast(Ask(), round_number=0)


def test_message_types_are_registered_by_wire_name():
    assert message_type(type_name(Block)) is Block
    with pytest.raises(ProtocolError, match="Unknown message type"):
        message_type("pickle.loads")


@pytest.mark.parametrize("cls", [fedcore.FeCA, fedcore.KFed, fedcore.MatchAveraging,
                                 fedcore.FFCM, fedcore.DCKMeans])
def test_fit_over_a_channel_equals_fit(cls):
    """An estimator's roles, run by hand over an in-process channel, give what fit gives."""
    X, y, _ = fedcore.datasets.make_gaussian_mixture(600, 3, 4, random_state=0)
    fed = fedcore.partition(X, 4, "iid", random_state=1)
    est = cls(4, random_state=5)
    assert isinstance(est, FederatedEstimator)
    want = cls(**est.get_params()).fit(fed)
    clients = [est.client_role(fed.client(l)[0], l) for l in range(fed.n_clients)]
    got = cls(**est.get_params()).fit_over(InProcessChannel(clients, n_jobs=2))
    np.testing.assert_array_equal(got.cluster_centers_, want.cluster_centers_)
    assert got.comm_.messages == want.comm_.messages


def test_a_seed_crosses_the_wire_as_fields_and_gives_the_same_stream():
    from fedcore.federation.protocol import generator_from_seed, seed_fields
    rng = np.random.default_rng(2**100 + 7).spawn(3)[2]
    entropy, spawn_key = seed_fields(rng)
    assert isinstance(entropy, str) and spawn_key.dtype == np.int64
    again = generator_from_seed(entropy, spawn_key)
    np.testing.assert_array_equal(again.random(5), rng.random(5))


def test_the_ledger_entry_keeps_its_old_name_with_a_warning():
    import fedcore.federation as federation
    from fedcore.federation.ledger import LedgerEntry
    with pytest.warns(DeprecationWarning, match="LedgerEntry"):
        assert federation.Message is LedgerEntry
    with pytest.raises(AttributeError):
        federation.NoSuchName


@pytest.mark.parametrize("bit_generator", [np.random.PCG64, np.random.PCG64DXSM,
                                           np.random.Philox, np.random.MT19937,
                                           np.random.SFC64])
def test_a_lent_stream_continues_exactly_where_the_client_left_it(bit_generator):
    """Server draws, a client draws from the lent state, the server resumes: the same numbers
    as one generator drawn in that order."""
    import json
    from fedcore.federation.protocol import (generator_from_stream, resume_stream,
                                             stream_state)
    one = np.random.Generator(bit_generator(11))
    want = np.concatenate([one.random(3), one.normal(size=4), one.integers(0, 9, 5), one.random(2)])
    rng = np.random.Generator(bit_generator(11))
    got = [rng.random(3)]
    text = stream_state(rng)
    json.loads(text)                                   # plain JSON, nothing pickled
    client = generator_from_stream(text)
    got += [client.normal(size=4), client.integers(0, 9, 5)]
    resume_stream(rng, stream_state(client))
    got.append(rng.random(2))
    np.testing.assert_array_equal(np.concatenate(got), want)


def test_a_stream_state_of_another_kind_is_refused():
    from fedcore.federation.protocol import (generator_from_stream, resume_stream,
                                             stream_state)
    text = stream_state(np.random.Generator(np.random.MT19937(0)))
    with pytest.raises(ProtocolError, match="MT19937 stream for a PCG64"):
        resume_stream(np.random.default_rng(0), text)
    for bad in ["not json", '{"bit_generator": "pickle"}', "[1, 2]"]:
        with pytest.raises(ProtocolError, match="Not a random stream"):
            generator_from_stream(bad)


def test_requests_can_be_counted_in_the_round_they_answer():
    channel = InProcessChannel([Doubler(0), Doubler(1)])
    channel.exchange({0: Block(np.arange(2.0), 1.0, np.zeros(0))}, round_number=3,
                     request_round=2)
    channel.broadcast(Block(np.arange(1.0), 1.0, np.zeros(0)), round_number=5, request_round=4)
    assert [(m.round, m.sender, m.receiver) for m in channel.ledger.messages] == [
        (2, SERVER, 0), (3, 0, SERVER), (4, SERVER, 0), (4, SERVER, 1), (5, 0, SERVER),
        (5, 1, SERVER)]


def test_clients_on_a_pool_run_single_threaded_kernels_and_alone_the_callers():
    """On a pool, parallelism goes over clients; one client at a time (a lent stream, n_jobs=1)
    keeps the calling thread's kernel threads, so a large client's kernels may go parallel."""
    import numba

    class Threads:
        def handle(self, message):
            return Block(np.array([numba.get_num_threads()]), 0.0, np.zeros(0))

    callers = numba.get_num_threads()
    pool = InProcessChannel([Threads(), Threads()], n_jobs=2).broadcast(Ask(), round_number=0)
    alone = InProcessChannel([Threads(), Threads()], n_jobs=1).broadcast(Ask(), round_number=0)
    one = InProcessChannel([Threads(), Threads()], n_jobs=2).exchange({1: Ask()}, round_number=0)
    assert [int(r.values[0]) for r in pool.values()] == [1, 1]
    assert [int(r.values[0]) for r in alone.values()] == [callers, callers]
    assert int(one[1].values[0]) == callers


def test_one_message_sent_to_every_client_counts_once_per_client_on_one_worker():
    """A message measures itself once (its size is kept), yet a broadcast counts it for each
    client; one worker answers in the calling thread, as a pool would, with the same ledger."""
    message = Block(np.arange(4.0), 0.5, np.zeros(1))
    assert message.size() is message.size() and message.size() == (5, 320)
    ledgers = []
    for n_jobs in (1, 3):
        channel = InProcessChannel([Doubler(l) for l in range(3)], n_jobs=n_jobs)
        channel.broadcast(message, 4)
        ledgers.append(channel.ledger.messages)
    assert ledgers[0] == ledgers[1] and len(ledgers[0]) == 6
    with pytest.raises(ValueError, match="'round' must be >= 0"):
        message.record(CommLedger(), -1, SERVER, 0)


def test_every_federated_estimator_takes_the_clients_ids():
    """estimator_apps passes each node's point ids to client_role: every override accepts them."""
    import inspect
    import fedcore.algorithms.feca.deep  # noqa: F401 (DeepFeCA's estimator)
    from fedcore.algorithms.base import FederatedEstimator

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    found = list(subclasses(FederatedEstimator))
    assert {"DeepFeCA", "DCKMeans", "FeCA"} <= {cls.__name__ for cls in found}
    for cls in found:
        assert "ids" in inspect.signature(cls.client_role).parameters, cls.__name__
