"""SCMA client messages: masked syndromes with their header (setup, round, sender, participants)."""
from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

if sys.version_info >= (3, 11):
    from typing import Self

__all__ = ["SCMAMessage"]

_FIELDS = ("setup_id", "round", "client_id", "participants")


class SCMAMessage(np.ndarray):
    """A client's masked message: a 1-D uint64 array of field elements with a header.

    The header names the setup (``setup_id``), the round (``round_number``), the sender
    (``client_id``) and the ``participants`` the masks were made for; the mask itself depends on
    all of them (pair keys bound to the setup and the pair, streams to the round).
    ``SCMAServer`` checks the header and refuses a message of another setup, round, sender or
    participant set, as well as duplicated and replayed messages, naming the mismatch. Slices and
    copies keep the header; ``np.asarray(message)`` gives the bare elements. A transport that
    carries only the array (e.g. Flower's ``ArrayRecord``) sends :attr:`header` beside it and
    rebuilds the message with :meth:`wrap`; the server also accepts bare arrays, whose masks still
    bind them (a message of another setup, round or sender decodes to an error, never to a sum).
    """

    def __new__(cls, data: ArrayLike, *, setup_id: int, round: int, client_id: int,
                participants: Iterable[int]) -> Self:
        obj = np.asarray(data).view(cls)
        obj._header = {"setup_id": int(setup_id), "round": int(round),
                       "client_id": int(client_id),
                       "participants": participants if type(participants) is tuple and
                       set(map(type, participants)) <= {int} else
                       tuple(int(c) for c in participants)}
        return obj

    def __array_finalize__(self, obj):
        self._header = getattr(obj, "_header", None)

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """Results of ufuncs and reductions are plain arrays or scalars, without a header."""
        out = np.asarray(array).view(np.ndarray)
        return out[()] if out.ndim == 0 else out

    def __reduce__(self):
        reconstruct, args, state = super().__reduce__()
        return reconstruct, args, (state, self._header)

    def __setstate__(self, state):
        array_state, header = state
        super().__setstate__(array_state)
        self._header = header

    @property
    def header(self) -> dict[str, Any] | None:
        """The header as a dict (``setup_id``, ``round``, ``client_id``: ints; ``participants``:
        a list), or None for an array that lost it; for transport beside the array."""
        if self._header is None:
            return None
        return dict(self._header, participants=list(self._header["participants"]))

    @property
    def setup_id(self) -> int | None:
        return None if self._header is None else self._header["setup_id"]

    @property
    def round_number(self) -> int | None:
        return None if self._header is None else self._header["round"]

    @property
    def client_id(self) -> int | None:
        return None if self._header is None else self._header["client_id"]

    @property
    def participants(self) -> tuple[int, ...] | None:
        return None if self._header is None else self._header["participants"]

    @classmethod
    def wrap(cls, array: ArrayLike, header: Mapping[str, Any]) -> Self:
        """The message ``array`` (received bare) with its ``header`` (a dict as :attr:`header`)."""
        header = dict(header)
        missing = [k for k in _FIELDS if k not in header]
        if missing:
            raise ValueError(f"Argument 'header' lacks {missing}")
        return cls(array, **{k: header[k] for k in _FIELDS})

    def __repr__(self):
        if self._header is None:
            return np.asarray(self).__repr__()
        return (f"SCMAMessage(client_id={self.client_id}, round={self.round_number}, "
                f"setup_id={self.setup_id}, {np.asarray(self)!r})")
