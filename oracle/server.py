"""The oracle server: one solved table, answered over HTTP (Starlette on uvicorn), for users who cannot copy it.

    python -m oracle serve TABLE [--host 127.0.0.1] [--port 8000]

The wire format is :mod:`oracle.protocol`'s.  The table is fixed when the server starts; a request can only look
boards up in it.  Lookups run one at a time (an :class:`~oracle.oracle.Oracle`'s open layers are not thread-safe;
a large batch still uses every core), so concurrent requests queue: a few boards are answered on the event loop's
thread, a batch on a lookup thread while the loop reads the next requests.  A body is read
within ``body_timeout`` seconds (else 408) and is refused beyond ``max_boards`` boards (413); an idle keep-alive
connection is closed after ``keep_alive`` seconds, and past ``max_connections`` open connections the server answers
503.  Every request is logged (logger ``oracle.server``: method, path, status, boards, milliseconds); an error
answers ``{"error": message}`` and never a traceback.  SIGTERM and SIGINT stop it cleanly: it finishes the requests
under way, then closes the table.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager

import numpy as np

from . import protocol as P
from .oracle import Oracle

log = logging.getLogger("oracle.server")

#: Seconds a client has to send a request's body.
BODY_TIMEOUT = 10.0
#: Seconds an idle keep-alive connection stays open.
KEEP_ALIVE = 5.0
#: Open connections beyond which the server answers 503.
MAX_CONNECTIONS = 256
#: Boards of a request answered on the event loop's thread (when no other lookup runs): a few microseconds each.
INLINE_BOARDS = 64


class RequestError(Exception):
    """A request the server refuses: its HTTP status and the message sent back."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def jsonable(value):
    """A root attribute as JSON: numpy scalars and arrays as numbers and lists, bytes as text."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, bytes):
        return value.decode()
    return value


def info_of(oracle: Oracle) -> dict:
    """What ``GET /v1/info`` answers: everything a client's :class:`~oracle.oracle.Oracle` needs but the layers."""
    spec = oracle.spec
    return {
        "api": P.API,
        "table": oracle.path.name,
        "table_sha256": oracle.table.content_digest(),
        "spec": {
            "board": spec.board,
            "objective": spec.objective,
            "p4": spec.p4,
            "spawn": spec.spawn,
            "pattern": spec.pattern.to_dict() if spec.pattern is not None else None,
        },
        "tolerances": {
            "value_error_relative": oracle.value_error[0],
            "value_error_absolute": oracle.value_error[1],
            "tie_relative": oracle.tie_tolerance[0],
            "tie_absolute": oracle.tie_tolerance[1],
        },
        "attrs": {k: jsonable(v) for k, v in oracle.attrs.items()},
        "ages": [int(a) for a in oracle.table.ages],
        "start": {
            "ids": [f"{int(i):#x}" for i in oracle.start_ids],
            "probs": oracle.start_probs.tolist(),
            "values": oracle.start_values.tolist(),
        },
        "max_boards": None,  # filled in by the app
    }


def parse_json_board(body: bytes):
    """The board of a JSON request ``{"board": ...}``: a packed ID (an integer or a ``"0x..."`` string) or rows of
    exponents."""
    try:
        data = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RequestError(400, f"the body is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or "board" not in data:
        raise RequestError(400, 'a JSON request is {"board": ID or "0x..." or [[exponents, ...], ...]}')
    board = data["board"]
    if isinstance(board, str):
        try:
            return int(board, 0)
        except ValueError:
            raise RequestError(400, f"board {board!r} is not a packed ID (an integer, or hex as 0x...)") from None
    if isinstance(board, bool) or not isinstance(board, int | list):
        raise RequestError(400, f"board must be a packed ID or rows of exponents, got {type(board).__name__}")
    if isinstance(board, list):
        try:
            return np.array(board, np.int64)
        except (ValueError, TypeError, OverflowError):
            raise RequestError(400, "board rows must be lists of integer exponents of equal length") from None
    return board


def _finite_or_none(values) -> list:
    return [None if np.isnan(v) else float(v) for v in np.atleast_1d(values)]


class OracleService:
    """The lookups behind the endpoints, one at a time (``lock``): a small batch (at most ``INLINE_BOARDS``) is
    answered on the event loop's thread when no lookup is under way (a hop to another thread and back costs more
    than the lookup), a larger one on the lookup thread, so that the loop keeps reading other requests."""

    def __init__(self, oracle: Oracle, max_boards: int):
        self.oracle, self.max_boards = oracle, int(max_boards)
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="oracle-lookup")
        self.lock = threading.Lock()
        self.info = {**info_of(oracle), "max_boards": self.max_boards}

    async def answer(self, kind: str, board, n_boards: int) -> tuple[np.ndarray, np.ndarray]:
        """``(values, status)`` of ``/q`` (``float64[n, 4]``) or ``/afterstate`` (``float64[n]``)."""
        if n_boards <= INLINE_BOARDS and self.lock.acquire(blocking=False):
            try:
                return self._lookup(kind, board)
            finally:
                self.lock.release()
        return await asyncio.get_running_loop().run_in_executor(self.pool, self.lookup, kind, board)

    def lookup(self, kind: str, board) -> tuple[np.ndarray, np.ndarray]:
        with self.lock:
            return self._lookup(kind, board)

    def _lookup(self, kind: str, board) -> tuple[np.ndarray, np.ndarray]:
        """A board the table's shape or pattern cannot hold is a 400."""
        try:
            if kind == "q":
                return self.oracle.lookup_q(board)
            return self.oracle.lookup_afterstates(board)
        except (ValueError, TypeError) as exc:
            raise RequestError(400, str(exc)) from None

    def close(self) -> None:
        self.pool.shutdown(wait=True)
        with self.lock:
            self.oracle.close()


async def read_body(receive, headers: dict, limit: int, timeout: float) -> bytes:
    """The request's body, at most ``limit`` bytes (413 beyond), within ``timeout`` seconds (408)."""
    length = headers.get(b"content-length")
    if length is not None:
        try:
            declared = int(length)
        except ValueError:
            raise RequestError(400, "Content-Length is not a number") from None
        if declared > limit:
            raise RequestError(
                413, f"the body is {declared:,} bytes; at most {limit:,} ({limit // 8:,} boards) per request"
            )
    chunks, size = [], 0

    async def collect() -> None:
        nonlocal size
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise RequestError(400, "the client went away before sending its body")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise RequestError(413, f"the body is over {limit:,} bytes ({limit // 8:,} boards) per request")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return

    try:
        await asyncio.wait_for(collect(), timeout)
    except asyncio.TimeoutError:
        raise RequestError(408, f"the body did not arrive within {timeout:g} s") from None
    return b"".join(chunks)


def create_app(oracle: Oracle, max_boards: int = P.MAX_BOARDS, body_timeout: float = BODY_TIMEOUT):
    """The server's ASGI app for an open ``oracle`` (closed when the app shuts down)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    service = OracleService(oracle, max_boards)

    async def info(request: Request) -> Response:
        return JSONResponse(service.info)

    def endpoint(kind: str):
        async def answer(request: Request) -> Response:
            headers = dict(request.scope["headers"])
            body = await read_body(request.receive, headers, 8 * service.max_boards, body_timeout)
            content_type = headers.get(b"content-type", b"").split(b";")[0].strip().decode("latin-1")
            if content_type == P.JSON:
                board = parse_json_board(body)
                values, status = await service.answer(kind, board, 1)
                request.state.boards = 1
                if kind == "q":
                    return JSONResponse({"q": _finite_or_none(values[0]), "status": P.STATUS_NAMES[int(status[0])]})
                return JSONResponse({"value": _finite_or_none(values)[0], "status": P.STATUS_NAMES[int(status[0])]})
            if content_type not in (P.BINARY, ""):
                raise RequestError(
                    400,
                    f"Content-Type must be {P.BINARY} (packed boards) or {P.JSON} (one board), got {content_type!r}",
                )
            try:
                ids = P.decode_boards(body)
            except P.ProtocolError as exc:
                raise RequestError(400, str(exc)) from None
            request.state.boards = int(ids.size)
            values, status = await service.answer(kind, ids, ids.size)
            return Response(
                P.encode_answer(values, status), media_type=P.BINARY, headers={P.BOARDS_HEADER: str(ids.size)}
            )

        return answer

    async def refused(request: Request, exc: RequestError) -> Response:
        headers = {"connection": "close"} if exc.status in (408, 413) else None
        return JSONResponse({"error": exc.message}, status_code=exc.status, headers=headers)

    async def failed(request: Request, exc: Exception) -> Response:
        log.exception("%s %s failed", request.method, request.url.path)
        return JSONResponse({"error": "internal error of the oracle server (logged there)"}, status_code=500)

    async def not_found(request: Request, exc) -> Response:
        status = getattr(exc, "status_code", 404)
        message = (
            "no such endpoint: GET /v1/info, POST /v1/q, POST /v1/afterstate"
            if status == 404
            else f"{request.method} is not allowed here"
        )
        return JSONResponse({"error": message}, status_code=status)

    @asynccontextmanager
    async def lifespan(app):
        yield
        service.close()
        log.info("stopped: every request answered, %s closed", oracle.path)

    routes = [
        Route(f"/{P.API}/info", info, methods=["GET"]),
        Route(f"/{P.API}/q", endpoint("q"), methods=["POST"]),
        Route(f"/{P.API}/afterstate", endpoint("afterstate"), methods=["POST"]),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={RequestError: refused, Exception: failed, 404: not_found, 405: not_found},
    )
    return RequestLog(app)


class RequestLog:
    """ASGI middleware: one log line per request (method, path, status, boards, milliseconds)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started, status = time.perf_counter(), [0]

        async def sending(message):
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            boards = scope.get("state", {}).get("boards", "-")
            log.info(
                "%s %s %s %s boards %.2f ms",
                scope["method"],
                scope["path"],
                status[0],
                boards,
                1e3 * (time.perf_counter() - started),
            )


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (port 0: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    if family in (socket.AF_INET, socket.AF_INET6):  # accepted sockets inherit it: no Nagle delay on answers
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


def serve(
    table,
    host: str = "127.0.0.1",
    port: int = 8000,
    max_boards: int = P.MAX_BOARDS,
    body_timeout: float = BODY_TIMEOUT,
    keep_alive: float = KEEP_ALIVE,
    max_connections: int = MAX_CONNECTIONS,
    memory_limit: int | None = None,
    stop_after: float | None = None,
    log_level: str = "info",
) -> None:
    """Serve ``table`` until SIGTERM or SIGINT (or ``stop_after`` seconds).  Prints ``serving ... on URL`` once
    it listens (with the port chosen when ``port`` is 0)."""
    import uvicorn

    if max_boards < 1:
        raise ValueError(f"max_boards must be at least 1, got {max_boards}")
    oracle = Oracle.open(table, memory_limit=memory_limit)
    logging.basicConfig(level=log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    sock = bind(host, port)
    app = create_app(oracle, max_boards, body_timeout)
    config = uvicorn.Config(
        app,
        log_level=log_level,
        access_log=False,
        timeout_keep_alive=int(keep_alive),
        limit_concurrency=max_connections,
        lifespan="on",
        timeout_graceful_shutdown=30,
    )
    server = uvicorn.Server(config)
    where = sock.getsockname()
    url = f"http://{f'[{where[0]}]' if sock.family == socket.AF_INET6 else where[0]}:{where[1]}"
    print(f"serving {oracle.spec.describe()} from {oracle.path} on {url}", flush=True)
    if stop_after is not None:

        async def stop_later() -> None:
            await asyncio.sleep(stop_after)
            server.should_exit = True

        async def run() -> None:
            stopper = asyncio.ensure_future(stop_later())
            try:
                await server.serve(sockets=[sock])
            finally:
                stopper.cancel()

        asyncio.run(run())
    else:
        server.run(sockets=[sock])
    sock.close()
