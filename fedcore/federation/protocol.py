"""The client/server protocol of fedcore's federated methods: messages, roles and channels.

A federated method is a pair of roles ([docs/architecture.md], "The protocol"):

- a **client role** holds one client's data and answers the server's messages: its
  ``handle(message)`` returns the reply (a :class:`Message`);
- a **server role** runs the rounds: its ``run(channel)`` sends messages to the clients through a
  :class:`Channel` and returns the method's result.

Messages are frozen dataclasses deriving from :class:`Message`, whose fields are exactly what
crosses the wire: NumPy arrays and scalars (``int``, ``float``, ``bool``, ``str``). The channel
that carries them counts them in a :class:`~fedcore.federation.ledger.CommLedger`, measured from
the message objects (:meth:`Message.size`), never entered by hand. Two channels exist:
:class:`InProcessChannel` calls client roles held in this process (what the estimators use), and
the Flower adapter (:mod:`fedcore.integrations.flower.roles`) sends the same messages to Flower
nodes, so one method has one implementation and one ledger on both engines.

What the ledger counts
----------------------
A message's *payload* is every field except those declared with ``diagnostic()``: reports the
server keeps (such as the indices of the centroids a FeCA client removed, which the method does
not need) and data that travel but that the papers' counts leave out (a lent stream's state, a
deployed client's public key), each named in its message's docstring. Its size is the number
of payload elements (an array counts its ``size``, a scalar counts one) and its bits
(``bits_per_element`` per element: the itemsize of an array's dtype times 8, 64 for a scalar; a
message type may narrow it, e.g. to the width of a prime field). Setup
messages (``counted = False``: the settings and random seed each client receives before the first
round) configure the run and are not part of any paper's communication count; the ledger leaves
them out, and so does it for requests whose payload is empty (a server asking for a reply).

Methods with one random stream
------------------------------
Most methods give each client its own seed. A few (DC-KM, the vertical coresets, DistDim) draw
every client's randomness from one generator, client after client, as their papers' single-machine
descriptions do; their results depend on that order. Their server lends the stream to one client
at a time: the request carries the generator's state (:func:`stream_state`, a setup field, not
counted), the client draws from :func:`generator_from_stream` and returns the state it reached,
and the server continues from it (:func:`resume_stream`). The results are those of one generator
used in client order, on every engine; such clients answer one at a time.
"""
from __future__ import annotations

import dataclasses
import json
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Protocol, TypeVar

import numba
import numpy as np

from .._validation import BIT_GENERATORS, check_int
from ..kernels.parallel import single_threaded_kernels
from .ledger import SERVER, CommLedger

__all__ = ["Message", "diagnostic", "message_type", "type_name", "expect", "ClientRole",
           "ServerRole", "Channel", "InProcessChannel", "run_clients", "ProtocolError",
           "seed_fields", "generator_from_seed", "stream_state", "generator_from_stream",
           "resume_stream"]

_TYPES: dict[str, type] = {}
_PAYLOAD: dict[type, tuple[tuple[str, ...], Any]] = {}
_SIZE = "_fedcore_size"  # where a message keeps its size once computed
T = TypeVar("T")
M = TypeVar("M", bound="Message")


class ProtocolError(RuntimeError):
    """A role received a message it does not expect, or a reply of the wrong type."""


def diagnostic(**kwargs: Any) -> Any:
    """A dataclass field that travels but is not counted in the ledger: a report, or data the
    method's communication count leaves out (see the module's notes)."""
    return dataclasses.field(metadata={"diagnostic": True}, **kwargs)


class Message:
    """Base class of every message of fedcore's protocol (subclasses are frozen dataclasses).

    Class attributes a subclass may set: ``kind`` (the ledger's name for it; default the class
    name), ``counted`` (False for setup messages, see the module's notes), ``element_bits``
    (a fixed width for every element; default the dtypes').
    """

    kind: ClassVar[str] = ""
    counted: ClassVar[bool] = True
    element_bits: ClassVar[int] = 0

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        _TYPES[type_name(cls)] = cls

    def fields(self) -> dict[str, Any]:
        """``{name: value}`` of every field, in declaration order."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def bits_per_element(self, name: str, value: Any) -> int:
        """Bits of one element of field ``name`` on the wire: ``element_bits`` when the message
        type sets it (a count fixed by the method, e.g. 64-bit numbers whatever the dtype), else
        the dtype's width (64 for scalars)."""
        if self.element_bits:
            return self.element_bits
        return value.dtype.itemsize * 8 if isinstance(value, np.ndarray) else 64

    def size(self) -> tuple[int, int]:
        """``(n_elements, n_bits)`` of the payload (every field that is not diagnostic);
        computed once per message (a message sent to every client is counted once per client)."""
        known = self.__dict__.get(_SIZE)
        if known is not None:
            return known
        names, widths = _payload_names(type(self))
        fixed = self.element_bits
        elements = bits = 0
        for name in names:
            value = getattr(self, name)
            if isinstance(value, np.ndarray):
                n = int(value.size)
                width = fixed or (value.dtype.itemsize * 8 if widths is None else
                                  widths(self, name, value))
            else:
                n, width = 1, fixed or (64 if widths is None else widths(self, name, value))
            elements += n
            bits += n * width
        known = self.__dict__[_SIZE] = (elements, bits)  # a frozen message keeps its size
        return known

    def record(self, ledger: CommLedger, round_number: int, sender: int | str,
               receiver: int | str) -> None:
        """Count this message in ``ledger`` unless it is a setup message or has no payload."""
        if not self.counted:
            return
        n_elements, n_bits = self.size()
        if n_elements:  # counts measured here: the ledger need not check them again
            ledger._add(round_number, sender, receiver, self.kind or type(self).__name__,
                        n_elements, n_bits)


def _payload_names(cls):
    """The names of the payload fields of message class ``cls`` and its ``bits_per_element``
    if it overrides Message's (else None), computed once per class."""
    known = _PAYLOAD.get(cls)
    if known is None:
        widths = cls.bits_per_element
        known = _PAYLOAD[cls] = (tuple(f.name for f in dataclasses.fields(cls)
                                       if not f.metadata.get("diagnostic")),
                                 None if widths is Message.bits_per_element else widths)
    return known


def type_name(cls: type) -> str:
    """The wire name of a message class: ``module.QualifiedName``."""
    return f"{cls.__module__}.{cls.__qualname__}"


def message_type(name: str) -> type[Message]:
    """The message class registered under wire name ``name``; only :class:`Message` subclasses
    can be named (the Flower adapter never unpickles what it receives)."""
    try:
        return _TYPES[name]
    except KeyError:
        raise ProtocolError(f"Unknown message type {name!r}") from None


class ClientRole(Protocol):
    """What a client role is: it holds one client's data and answers each message the server
    sends with a reply (a :class:`Message`)."""

    def handle(self, message: Message) -> Message:
        ...


class ServerRole(Protocol):
    """What a server role is: it runs the rounds over a channel and returns the method's
    result."""

    def run(self, channel: Channel) -> Any:
        ...


class Channel:
    """What a server role talks through: ``exchange`` sends one message to each addressed client
    and returns their replies, counting both in ``ledger``.

    Attributes
    ----------
    n_clients : int, clients are addressed as ``0 .. n_clients - 1``
    ledger : CommLedger, every counted message of the run
    """

    n_clients: int
    ledger: CommLedger

    def exchange(self, requests: Mapping[int, Message], round_number: int, *,
                 request_round: int | None = None) -> dict[int, Message]:
        """Send ``requests[client]`` to each client in round ``round_number`` (of the ledger);
        ``{client: reply}`` in the same order.

        ``request_round``: the ledger round of the requests when it is not ``round_number``:
        a request that carries the server's answer to the previous round's replies (e.g. DIS's
        party counts, [VFLC] Alg. 1 line 6) belongs to that round.
        """
        raise NotImplementedError

    def exchange_tolerant(self, requests: Mapping[int, Message], round_number: int, *,
                          at_least: int, what: str) -> tuple[dict[int, Message], dict[int, str]]:
        """:meth:`exchange` for a round that survives clients dropping out: ``(replies,
        failures)``, ``failures`` being ``{client: reason}`` of the clients that failed or did
        not answer. A channel whose clients cannot drop out (in process) answers every request
        or raises; the Flower channel reports the nodes that failed, and raises when fewer than
        ``at_least`` answered (``what`` names that bound)."""
        return self.exchange(requests, round_number), {}

    def broadcast(self, message: Message, round_number: int, *,
                  request_round: int | None = None) -> dict[int, Message]:
        """The same message to every client: ``exchange({l: message for every l},
        round_number, request_round=request_round)``."""
        requests = {l: message for l in range(self.n_clients)}
        if request_round is None:  # also for channels whose exchange predates request_round
            return self.exchange(requests, round_number)
        return self.exchange(requests, round_number, request_round=request_round)

    def post(self, requests: Mapping[int, Message], round_number: int) -> None:
        """Send one-way messages (a decision the clients act on without answering), counted in
        round ``round_number``.

        A client role handles posted messages like any other and its replies are dropped (they
        carry no payload). A channel may hold them and deliver them with its next exchange to the
        same client, before that exchange's request (the Flower channel does, so a decision costs
        no round trip of its own): a server posts only what its next request may follow. This
        implementation sends them at once through :meth:`exchange`.
        """
        self.exchange(requests, round_number)

    def _count(self, requests, replies, round_number, request_round=None):
        ledger = self.ledger
        down = round_number if request_round is None else request_round
        for l, message in requests.items():
            message.record(ledger, down, SERVER, l)
        for l, reply in replies.items():
            if not isinstance(reply, Message):
                raise ProtocolError(f"Client {l} replied with a {type(reply).__name__}, "
                                    "not a Message")
            reply.record(ledger, round_number, l, SERVER)


class InProcessChannel(Channel):
    """A channel to client roles held in this process.

    Clients answer on a thread pool of ``n_jobs`` workers, each with single-threaded kernels, or
    in the calling thread when one worker or one client is addressed (see :func:`run_clients`);
    every client's randomness is fixed before the round, so replies do not depend on ``n_jobs``.
    """

    def __init__(self, clients: Sequence[ClientRole], *, n_jobs: int | None = None,
                 ledger: CommLedger | None = None) -> None:
        self.clients = list(clients)
        self.n_clients = len(self.clients)
        self.n_jobs = n_jobs
        self.ledger = CommLedger() if ledger is None else ledger

    def exchange(self, requests: Mapping[int, Message], round_number: int, *,
                 request_round: int | None = None) -> dict[int, Message]:
        requests = dict(requests)
        if self.n_jobs == 1:  # as run_clients with one worker, without its per-call set-up
            replies = {l: self.clients[l].handle(m) for l, m in requests.items()}
        else:
            addressed = list(requests)
            answers = run_clients(
                lambda i: self.clients[addressed[i]].handle(requests[addressed[i]]),
                len(addressed), self.n_jobs)
            replies = dict(zip(addressed, answers))
        self._count(requests, replies, round_number, request_round)
        return replies

    def post(self, requests: Mapping[int, Message], round_number: int) -> None:
        """One-way messages (see :meth:`Channel.post`), handled at once in the calling thread,
        client by client; the replies are dropped."""
        requests = dict(requests)
        for l, message in requests.items():
            self.clients[l].handle(message)
        self._count(requests, {}, round_number)


def _single_threaded_call(fn, l):
    with single_threaded_kernels():
        return fn(l)


def run_clients(fn: Callable[[int], T], n_clients: int, n_jobs: int | None = None) -> list[T]:
    """``[fn(0), ..., fn(n_clients - 1)]``, client by client or on a thread pool.

    ``n_jobs=None`` uses ``numba.get_num_threads()`` workers. On a pool every call runs with
    single-threaded kernels (parallelism goes over clients); with one worker (or one client) the
    calls run in the calling thread, whose kernels go parallel where that pays
    (:func:`~fedcore.kernels.parallel.use_parallel`). Kernels give the same bits on any number of
    threads and each client's randomness is fixed before the call, so the result does not depend
    on ``n_jobs`` or on scheduling.
    """
    n_jobs = numba.get_num_threads() if n_jobs is None else check_int(n_jobs, "n_jobs",
                                                                      min_value=1)
    n_jobs = min(n_jobs, n_clients)
    if n_jobs <= 1:  # in the calling thread, whose kernels choose their own threads
        return [fn(l) for l in range(n_clients)]
    with ThreadPoolExecutor(max_workers=n_jobs) as pool:
        return list(pool.map(lambda l: _single_threaded_call(fn, l), range(n_clients)))


def expect(message: Message, cls: type[M], role: str) -> M:
    """``message`` if it is a ``cls``, else a :class:`ProtocolError` naming ``role``."""
    if not isinstance(message, cls):
        raise ProtocolError(f"{role} expected a {cls.__name__}, got {type(message).__name__}")
    return message


def seed_fields(rng: np.random.Generator) -> tuple[str, np.ndarray]:
    """The seed of a NumPy Generator as message fields: the entropy as a decimal string (128
    bits fit no int64 field) and the spawn key as an int64 array. :func:`generator_from_seed`
    rebuilds the same stream."""
    seq = rng.bit_generator.seed_seq
    return str(seq.entropy), np.asarray(seq.spawn_key, dtype=np.int64)


def generator_from_seed(entropy: str | int, spawn_key: Sequence[int]) -> np.random.Generator:
    """The Generator whose seed :func:`seed_fields` wrote: the same stream."""
    seq = np.random.SeedSequence(int(entropy), spawn_key=tuple(int(k) for k in spawn_key))
    return np.random.Generator(np.random.PCG64(seq))


_BIT_GENERATORS = BIT_GENERATORS


def _to_json(value):
    if isinstance(value, dict):
        return {key: _to_json(item) for key, item in value.items()}
    if isinstance(value, np.ndarray):
        return {"dtype": value.dtype.str, "values": value.tolist()}
    return value


def _from_json(value):
    if isinstance(value, dict):
        if set(value) == {"dtype", "values"}:
            return np.asarray(value["values"], dtype=np.dtype(value["dtype"]))
        return {key: _from_json(item) for key, item in value.items()}
    return value


def stream_state(rng: np.random.Generator) -> str:
    """The state of the Generator ``rng`` as one message field (JSON text): where its stream
    stands, so that a client can go on drawing from it (see the module's notes). NumPy's bit
    generators only (PCG64, PCG64DXSM, Philox, MT19937, SFC64)."""
    state = rng.bit_generator.state
    if _BIT_GENERATORS.get(state.get("bit_generator")) is not type(rng.bit_generator):
        raise TypeError(f"A random stream can be lent to clients only from NumPy's bit "
                        f"generators {sorted(_BIT_GENERATORS)}, got "
                        f"{type(rng.bit_generator).__name__}")
    return json.dumps(_to_json(state))


def _state(text):
    """``(bit generator class, a bit generator in that state)``; ProtocolError if ``text`` is
    not a valid state of one of NumPy's bit generators."""
    try:
        state = _from_json(json.loads(text))
        cls = _BIT_GENERATORS[state["bit_generator"]]
        bit_generator = cls(0)  # only the state travels, not the lender's seed sequence (spawn)
        bit_generator.state = state
    except (TypeError, ValueError, KeyError, OverflowError) as exc:
        raise ProtocolError(f"Not a random stream's state: {exc}") from None
    return cls, bit_generator


def generator_from_stream(text: str) -> np.random.Generator:
    """A Generator that continues the stream whose state :func:`stream_state` wrote."""
    return np.random.Generator(_state(text)[1])


def resume_stream(rng: np.random.Generator, text: str) -> None:
    """Move ``rng`` (in place) to the state a client returned: ``rng`` continues where the
    client's draws ended."""
    cls, bit_generator = _state(text)
    if cls is not type(rng.bit_generator):
        raise ProtocolError(f"A client returned the state of a {cls.__name__} stream for a "
                            f"{type(rng.bit_generator).__name__} one")
    rng.bit_generator.state = bit_generator.state
