"""The oracle server and ``Oracle.connect``: a 2x3 table served on 127.0.0.1, answers bit for bit those of the local
oracle, every refusal, a bounded concurrent load, loopback-only sockets and a clean stop on SIGTERM."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import urllib3
from sockets import SocketWatch, descendants

from agents import GreedyAgent
from oracle import BoardNotInTable, Oracle
from oracle.remote import RemoteOracleError
from oracle.wrapper import make_solved_env
from solver.format import Table

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

MAX_BOARDS = 4096


def serve_args(table, *options, stop_after: float = 600) -> list[str]:
    """The command of a server of ``table`` on a free port of 127.0.0.1 that stops by itself at the latest after
    ``stop_after`` seconds."""
    return [
        sys.executable,
        "-m",
        "oracle",
        "serve",
        str(table),
        "--port",
        "0",
        "--stop-after",
        str(stop_after),
        *options,
    ]


def read_url(proc: subprocess.Popen, log: Path) -> str:
    line = proc.stdout.readline()
    if " on http://" not in line:
        proc.kill()
        pytest.fail(f"the server did not start: {line!r}\n{log.read_text() if log.exists() else ''}")
    return line.rsplit(" on ", 1)[1].strip()


@contextlib.contextmanager
def serving(table, log: Path, *options):
    """``(url, process)`` of a server of ``table`` (its log to ``log``); stopped with SIGTERM at the end."""
    with open(log, "w") as err:
        proc = subprocess.Popen(
            serve_args(table, *options), stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True
        )
    try:
        yield read_url(proc, log), proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            pytest.fail("the server did not stop within 60 s of SIGTERM")


@pytest.fixture(scope="module")
def server(table_2x3, tmp_path_factory):
    log = tmp_path_factory.mktemp("server") / "server.log"
    with serving(table_2x3, log, "--max-boards", str(MAX_BOARDS), "--body-timeout", "1") as (url, proc):
        yield url, proc, log


@pytest.fixture(scope="module")
def local(table_2x3):
    with Oracle.open(table_2x3) as oracle:
        yield oracle


@pytest.fixture(scope="module")
def remote(server):
    with Oracle.connect(server[0]) as oracle:
        yield oracle


@pytest.fixture(scope="module")
def reachable(table_2x3):
    """Every reachable state and every stored afterstate of the table (``uint64``)."""
    with Table(table_2x3) as t:
        layers = [t.layer(c.age, names=("states", "afterstates")) for c in t.counts()]
    return (np.concatenate([x["states"] for x in layers]), np.concatenate([x["afterstates"] for x in layers]))


@pytest.fixture(scope="module")
def http():
    pool = urllib3.PoolManager(retries=False, timeout=30)
    yield pool
    pool.clear()


def bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint64)


# -- the same answers ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_every_reachable_board_answers_bit_for_bit_as_the_local_oracle(local, remote, reachable):
    states, afterstates = reachable
    assert states.size > MAX_BOARDS  # so that the client cuts the batch into several requests
    np.testing.assert_array_equal(bits(remote.q_values(states)), bits(local.q_values(states)))
    np.testing.assert_array_equal(bits(remote.value(states)), bits(local.value(states)))
    np.testing.assert_array_equal(remote.best_actions(states), local.best_actions(states))
    np.testing.assert_array_equal(bits(remote.afterstate_value(afterstates)), bits(local.afterstate_value(afterstates)))
    assert remote.start_value == local.start_value
    for name in ("start_ids", "start_probs", "start_values"):
        np.testing.assert_array_equal(getattr(remote, name), getattr(local, name))
    assert (remote.spec, remote.value_error, remote.tie_tolerance) == (
        local.spec,
        local.value_error,
        local.tie_tolerance,
    )
    board = np.array([[1, 2, 0], [0, 1, 0]])
    assert remote.action_regret(board, 2) == local.action_regret(board, 2)


def test_the_remote_oracle_raises_the_local_errors(local, remote, server):
    for bad, error, match in [
        (np.array([[5, 5, 5], [5, 5, 5]]), BoardNotInTable, "not a reachable state"),
        (1 << 40, ValueError, "does not fit a 2x3 board"),
        (np.zeros((3, 3), np.int64), ValueError, "expected a 2x3 exponent board"),
    ]:
        for oracle in (local, remote):
            with pytest.raises(error, match=match):
                oracle.q_values(bad)
    with pytest.raises(BoardNotInTable):
        remote.afterstate_value(np.array([[9, 9, 9], [9, 9, 9]]))
    with pytest.raises(ValueError, match="Oracle.connect"):
        Oracle.open(server[0])


def test_info_names_the_table_and_its_checksum(server, http, local):
    info = json.loads(http.request("GET", server[0] + "/v1/info").data)
    assert info["spec"] == {"board": "2x3", "objective": "score", "p4": 0.1, "spawn": "random", "pattern": None}
    assert len(info["table_sha256"]) == 64 and info["max_boards"] == MAX_BOARDS
    assert info["tolerances"]["tie_relative"] == local.tie_tolerance[0]
    again = json.loads(http.request("GET", server[0] + "/v1/info?table=/etc/passwd").data)
    assert again == info  # a client cannot name a file


def test_one_board_in_json(server, http, local):
    board = np.array([[1, 2, 0], [0, 1, 0]])
    for form in (int(local._packed(board)[0][0]), hex(int(local._packed(board)[0][0])), board.tolist()):
        answer = http.request(
            "POST", server[0] + "/v1/q", body=json.dumps({"board": form}), headers={"Content-Type": "application/json"}
        )
        assert answer.status == 200
        got = json.loads(answer.data)
        want = local.q_values(board)
        assert got["status"] == "ok"
        assert [np.nan if v is None else v for v in got["q"]] == pytest.approx(want.tolist(), nan_ok=True, abs=0)
    answer = json.loads(
        http.request(
            "POST",
            server[0] + "/v1/afterstate",
            body=json.dumps({"board": [[9, 9, 9], [9, 9, 9]]}),
            headers={"Content-Type": "application/json"},
        ).data
    )
    assert answer == {"value": None, "status": "not_in_table"}


# -- refusals --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "method, path, body, content_type, status, match",
    [
        ("POST", "/v1/q", b"\0" * 8 * (MAX_BOARDS + 1), "application/octet-stream", 413, "at most"),
        ("POST", "/v1/q", b"\0" * 12, "application/octet-stream", 400, "not a multiple of 8"),
        ("POST", "/v1/afterstate", b"\xff" * 8, "application/octet-stream", 400, "do not fit a 2x3 board"),
        ("POST", "/v1/q", b"{not json", "application/json", 400, "not valid JSON"),
        ("POST", "/v1/q", b'{"board": [[1, 2], [3]]}', "application/json", 400, "rows"),
        ("POST", "/v1/q", b'{"board": "/etc/passwd"}', "application/json", 400, "not a packed ID"),
        ("POST", "/v1/q", b'{"board": [[1, 2, 0], [0, 1, 40]]}', "application/json", 400, "exponents must lie"),
        ("POST", "/v1/q", b"\0" * 8, "text/plain", 400, "Content-Type"),
        ("GET", "/v1/q", None, None, 405, "not allowed"),
        ("POST", "/v1/build", b"", None, 404, "no such endpoint"),
        ("POST", "/v1/verify", b"", None, 404, "no such endpoint"),
        ("GET", "/v1/../../etc/passwd", None, None, 404, "no such endpoint"),
    ],
)
def test_refusals_say_what_was_wrong_and_never_send_a_traceback(
    server, http, method, path, body, content_type, status, match
):
    headers = {"Content-Type": content_type} if content_type else {}
    answer = http.request(method, server[0] + path, body=body, headers=headers)
    assert answer.status == status, answer.data[:300]
    error = json.loads(answer.data)["error"]
    assert match in error and "Traceback" not in error and "File " not in error


def _read_until_closed(sock: socket.socket) -> bytes:
    """Every byte the peer sends until it closes the connection (the 408 answer says `connection: close`)."""
    chunks = []
    while chunk := sock.recv(4096):
        chunks.append(chunk)
    return b"".join(chunks)


def test_a_slow_client_gets_408_and_holds_no_one_else(server, remote, reachable):
    host, port = server[0].removeprefix("http://").rsplit(":", 1)
    # the socket's timeout only guards against a server that never answers: the 408 is due after 1 s
    with socket.create_connection((host, int(port)), timeout=120) as slow:
        slow.sendall(
            b"POST /v1/q HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n"
            b"Content-Length: 800\r\n\r\n" + b"\0" * 8
        )
        remote.q_values(reachable[0][:100])
        # answered while the slow body is still awaited: nothing has come back on the slow connection yet
        assert select.select([slow], [], [], 0)[0] == []
        answer = _read_until_closed(slow)  # headers and body may come in separate segments
    assert answer.startswith(b"HTTP/1.1 408") and b"did not arrive within 1 s" in answer


def _log_once_it_holds(log: Path, line: str, guard_s: float = 120) -> str:
    """The server's log once it holds ``line`` (a request is logged just after its answer is sent); ``guard_s``
    only stops a test whose server never writes it."""
    give_up = time.monotonic() + guard_s
    while line not in (text := log.read_text()) and time.monotonic() < give_up:
        time.sleep(0.02)
    return text


def test_requests_are_logged(server, remote):
    remote.value(np.array([[1, 1, 0], [0, 0, 0]]))
    log = _log_once_it_holds(server[2], "POST /v1/q 200 1 boards")
    assert "POST /v1/q 200 1 boards" in log and "GET /v1/info 200" in log


def test_credentials_in_the_url_go_as_a_header_and_not_in_the_path(server):
    host = server[0].removeprefix("http://")
    with Oracle.connect(f"http://user:secret@{host}", headers={"X-Token": "t"}) as oracle:
        assert "secret" not in str(oracle.path) and "secret" not in repr(oracle)
        assert oracle.table.headers["X-Token"] == "t" and oracle.table.headers["authorization"].startswith("Basic ")
        assert oracle.value(np.array([[1, 1, 0], [0, 0, 0]])) > 0


def test_an_unreachable_server_is_a_clear_error():
    with pytest.raises(ValueError, match="not the http:// or https:// URL"):
        Oracle.connect("ftp://127.0.0.1/table")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    with pytest.raises(RemoteOracleError, match="cannot reach the oracle server"):
        Oracle.connect(f"http://127.0.0.1:{port}", retries=1, timeout=5)


# -- concurrency ------------------------------------------------------------------------------------------------


def test_sixteen_concurrent_clients_lose_no_answer_and_get_none_wrong(server, local, reachable):
    states = reachable[0]
    want = bits(local.q_values(states))
    errors, answered = [], [0] * 16
    deadline = time.monotonic() + 60

    def client(k: int) -> None:
        rng = np.random.default_rng(k)
        try:
            with Oracle.connect(server[0], batch=1000) as oracle:
                for _ in range(12):
                    if answered[k] and time.monotonic() > deadline:  # the time bounds the test, not a client's share
                        break
                    pick = rng.choice(states.size, int(rng.integers(1, 2500)))
                    got = bits(oracle.q_values(states[pick]))
                    if not np.array_equal(got, want[pick]):
                        errors.append(f"client {k}: a wrong answer")
                    answered[k] += pick.size
        except Exception as exc:  # noqa: BLE001 (every client's failure is reported)
            errors.append(f"client {k}: {exc!r}")

    threads = [threading.Thread(target=client, args=(k,)) for k in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    assert all(n > 0 for n in answered)


# -- where a table is taken ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_env_wrapper_and_evaluate_take_a_served_table(server, local, remote):
    env_remote, env_local = make_solved_env(2, 3, oracle_table=server[0]), make_solved_env(2, 3, oracle_table=local)
    _, info_r = env_remote.reset(seed=3)
    _, info_l = env_local.reset(seed=3)
    for _ in range(20):
        np.testing.assert_array_equal(info_r["q_values"], info_l["q_values"])
        action = int(np.flatnonzero(info_l["action_mask"])[0])
        _, _, done, _, info_r = env_remote.step(action)
        _, _, _, _, info_l = env_local.step(action)
        if done:
            break
    agent = GreedyAgent()
    assert remote.evaluate(agent, progress=False).value == local.evaluate(agent, progress=False).value


@pytest.mark.slow
def test_the_benchmark_takes_a_served_table(server, table_2x3, tmp_path):
    from experiments.benchmark import run

    kwargs = {"episodes": 5, "seed": 1, "exact": "always", "progress": False}
    served = run("2x3", ["random", "optimal"], out=tmp_path / "served", table=server[0], **kwargs)
    local = run("2x3", ["random", "optimal"], out=tmp_path / "local", table=table_2x3, **kwargs)
    assert served["table"] == server[0] and served["optimal_value"] == local["optimal_value"]
    for a, b in zip(served["agents"], local["agents"], strict=True):
        for column in ("mean_score", "mean_regret", "exact_value", "optimal_move_rate"):
            assert a[column] == b[column], column


# -- the process -----------------------------------------------------------------------------------------------


def test_the_server_listens_on_the_loopback_only_and_stops_cleanly_on_sigterm(table_2x3, tmp_path):
    watch = SocketWatch(tmp_path / "trace")
    with watch.run(
        serve_args(table_2x3, stop_after=120), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as proc:
        url = read_url(proc, tmp_path / "none")
        with Oracle.connect(url) as oracle:
            assert oracle.value(np.array([[1, 1, 0], [0, 0, 0]])) > 0
        watch.sample()
        servers = [pid for pid, name in descendants(proc.pid).items() if pid != proc.pid]
        assert servers, "no server process under the trace"
        for pid in servers:
            os.kill(pid, signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    assert watch.listeners(), "the samples saw no listener"
    assert watch.off_loopback() == []
    assert "stopped: every request answered" in out and "Traceback" not in out


def test_a_table_larger_than_ram_is_mapped_for_random_access(table_2x3, monkeypatch):
    from oracle import lookup

    board = np.array([[1, 1, 0], [0, 0, 0]])
    with Oracle.open(table_2x3) as oracle:
        assert not oracle._layers.random_access
    monkeypatch.setattr(lookup, "physical_memory", lambda: 4096)  # a machine of 4 KiB: the table is larger
    with Oracle.open(table_2x3) as oracle:
        assert oracle._layers.random_access
        oracle.value(board)
        mappings = [mapping for _, mapping in oracle._layers._open.values()]
        assert mappings and all(m.random for m in mappings)
