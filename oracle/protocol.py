"""The oracle server's wire format, shared by :mod:`oracle.server` and :mod:`oracle.remote`.

Version 1 (paths under ``/v1``):

* ``GET /v1/info``: JSON, the table's root attributes (its spec, objective or pattern, tolerances), its start states
  and ``table_sha256``, a digest of every dataset's stored SHA-256 (two tables answer alike iff it is equal).
* ``POST /v1/q`` and ``POST /v1/afterstate``, binary: the body is packed boards, ``uint64`` little-endian (a
  multiple of 8 bytes, at most :data:`MAX_BOARDS` boards); the answer is ``float64`` little-endian values (``/q``:
  ``[n, 4]``, NaN for an illegal move; ``/afterstate``: ``[n]``, NaN where not stored), then one ``int8`` status
  per board (:data:`OK` or :data:`NOT_IN_TABLE`).
* The same two paths with ``Content-Type: application/json`` and a body ``{"board": ...}`` (one board: a packed
  ID as an integer or a ``"0x..."`` string, or rows of exponents) answer one board in JSON, for curl users.

An error is ``{"error": message}`` with its HTTP status: 400 for a body or a board the table cannot take, 413 for a
body over the bound, 408 when the body is not sent in time, 404 for another path, 500 (no detail) for a failure
of the server.
"""

from __future__ import annotations

import numpy as np

from .lookup import NOT_IN_TABLE, OK

API = "v1"
#: Most boards one request carries (8 MiB of body); a client cuts larger batches into requests of this size.
MAX_BOARDS = 1 << 20
BINARY = "application/octet-stream"
JSON = "application/json"
#: Header of a binary answer: how many boards it answers.
BOARDS_HEADER = "x-boards"
STATUS_NAMES = {OK: "ok", NOT_IN_TABLE: "not_in_table"}


class ProtocolError(ValueError):
    """A request or an answer that does not follow the wire format."""


def decode_boards(body: bytes) -> np.ndarray:
    """``uint64[n]`` packed boards of a binary request body."""
    if len(body) % 8:
        raise ProtocolError(
            f"the body must be packed boards, 8 bytes each (uint64 little-endian); got {len(body)} "
            f"bytes, not a multiple of 8"
        )
    return np.frombuffer(body, "<u8").astype(np.uint64)


def encode_answer(values: np.ndarray, status: np.ndarray) -> bytes:
    """The binary answer: ``values`` (``float64[n]`` or ``[n, 4]``) then ``status`` (``int8[n]``)."""
    return np.ascontiguousarray(values, "<f8").tobytes() + np.ascontiguousarray(status, np.int8).tobytes()


def decode_answer(body: bytes, n: int, width: int) -> tuple[np.ndarray, np.ndarray]:
    """``(values float64[n] or [n, width], status int8[n])`` of a binary answer for ``n`` boards (``width`` 4 for
    Q-values, 1 for afterstate values)."""
    expected = n * (8 * width + 1)
    if len(body) != expected:
        raise ProtocolError(f"the server answered {len(body)} bytes for {n} boards; expected {expected}")
    values = np.frombuffer(body, "<f8", count=n * width).astype(np.float64)
    status = np.frombuffer(body, np.int8, count=n, offset=8 * n * width).copy()
    return (values.reshape(n, width) if width > 1 else values), status
