"""The client of the oracle server: what :meth:`oracle.Oracle.connect` puts where a local oracle has its table.

:class:`RemoteTable` stands for the table (root attributes, spec and start states, from ``GET /v1/info``) and
:class:`RemoteLayers` for its layers: each batch of boards is posted to ``/v1/q`` or ``/v1/afterstate`` in
requests of at most ``batch`` boards, as :mod:`oracle.protocol` says.  The :class:`~oracle.oracle.Oracle` around
them checks boards and raises its errors exactly as it does on a local table; a board the server refuses raises
the ``ValueError`` the server gives, a server that cannot be reached or fails raises :class:`RemoteOracleError`.
"""

from __future__ import annotations

import json

import numpy as np
import urllib3

from solver.format.common import spec_from_attrs

from . import protocol as P


class RemoteOracleError(RuntimeError):
    """The oracle server could not be reached, or failed (its status and message)."""


class RemoteTable:
    """A served table, as an :class:`~oracle.oracle.Oracle` reads it: ``path`` (the URL), ``attrs``, ``spec``,
    ``ages``, ``start()`` and ``close()``; ``info`` is the server's whole ``/v1/info`` answer."""

    def __init__(self, url: str, timeout: float = 60.0, retries: int = 3, headers: dict | None = None):
        if retries < 0 or timeout <= 0:
            raise ValueError(f"retries must be >= 0 and timeout > 0, got {retries} and {timeout}")
        parsed = urllib3.util.parse_url(url)
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ValueError(f"{url!r} is not the http:// or https:// URL of an oracle server")
        self.headers = dict(headers or {})
        if parsed.auth:  # user:password@ in the URL: HTTP basic authentication (a proxy in front of the server)
            self.headers.update(urllib3.util.make_headers(basic_auth=parsed.auth))
        self.url = parsed._replace(auth=None).url.rstrip("/")
        self.path = self.url
        retry = urllib3.Retry(
            total=retries,
            connect=retries,
            read=retries,
            status=retries,
            backoff_factor=0.2,
            status_forcelist=(502, 503, 504),
            allowed_methods=frozenset({"GET", "POST"}),
            raise_on_status=False,
        )
        self.http = urllib3.PoolManager(
            retries=retry, timeout=urllib3.Timeout(connect=min(timeout, 10.0), read=timeout)
        )
        self.info = json.loads(self.request("GET", "info"))
        if self.info.get("api") != P.API:
            raise RemoteOracleError(
                f"{self.url} speaks oracle API {self.info.get('api')!r}; this client speaks {P.API!r}"
            )
        self.attrs = self.info["attrs"]
        self.spec = spec_from_attrs(self.attrs)
        self.ages = np.array(self.info["ages"], np.int64)
        self.max_boards = int(self.info["max_boards"])
        self.sha256 = self.info["table_sha256"]

    def request(self, method: str, endpoint: str, body: bytes | None = None, content_type: str = P.BINARY) -> bytes:
        """The body of a successful answer to ``method /v1/endpoint``; a refusal (4xx) raises ``ValueError`` with
        the server's message, anything else :class:`RemoteOracleError`."""
        url = f"{self.url}/{P.API}/{endpoint}"
        try:
            answer = self.http.request(method, url, body=body, headers={**self.headers, "Content-Type": content_type})
        except urllib3.exceptions.HTTPError as exc:
            raise RemoteOracleError(f"cannot reach the oracle server at {self.url}: {exc}") from None
        if answer.status == 200:
            return answer.data
        try:
            message = json.loads(answer.data)["error"]
        except (ValueError, KeyError, TypeError):
            message = answer.data[:200].decode("utf-8", "replace")
        if 400 <= answer.status < 500 and answer.status != 408:
            raise ValueError(f"the oracle server refused the request ({answer.status}): {message}")
        raise RemoteOracleError(f"{method} {url} failed ({answer.status}): {message}")

    def start(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        s = self.info["start"]
        return (
            np.array([int(i, 16) for i in s["ids"]], np.uint64),
            np.array(s["probs"], np.float64),
            np.array(s["values"], np.float64),
        )

    def close(self) -> None:
        self.http.clear()


class RemoteLayers:
    """The lookups of :class:`oracle.lookup.AgeLayers`, answered by the server in requests of at most ``batch``
    boards."""

    resident_bytes = 0

    def __init__(self, table: RemoteTable, batch: int):
        if batch < 1:
            raise ValueError(f"batch must be at least 1 board, got {batch}")
        self.table, self.batch = table, min(int(batch), table.max_boards)

    def _post(self, endpoint: str, ids: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
        values = np.empty((ids.size, width) if width > 1 else ids.size, np.float64)
        status = np.empty(ids.size, np.int8)
        for lo in range(0, ids.size, self.batch):
            part = np.ascontiguousarray(ids[lo : lo + self.batch], "<u8")
            body = self.table.request("POST", endpoint, part.tobytes())
            values[lo : lo + part.size], status[lo : lo + part.size] = P.decode_answer(body, part.size, width)
        return values, status

    def q_values(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(q float64[n, 4], status int8[n])`` of packed boards ``ids`` (``uint64[n]``)."""
        return self._post("q", ids, 4)

    def afterstate_values(self, ids: np.ndarray) -> np.ndarray:
        """``float64[n]``: values of packed afterstates, NaN where not stored."""
        return self._post("afterstate", ids, 1)[0]

    def clear(self) -> None:
        pass
