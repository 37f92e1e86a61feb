"""The checks behind the loopback tests of test_ray.py and test_ray_cluster.py: the socket watch blames on a
private Ray's tree every socket off the loopback its processes use (short-lived connections included) and never
one of another program, and a private Ray refuses to start once Ray was imported without the loopback setting.

127.0.0.2 stands for an address off the loopback (``treat_as_remote``), so that no traffic leaves the machine."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from ray_helpers import require_ray
from sockets import SocketWatch, is_loopback, unrelated_traffic

pytestmark = pytest.mark.slow  # the whole module runs in make test, not in the quick lane

LISTEN_AND_WAIT = textwrap.dedent("""
    import socket, sys, time
    everywhere = socket.socket(); everywhere.bind(("0.0.0.0", 0)); everywhere.listen()
    local = socket.socket(socket.AF_INET6); local.bind(("::1", 0)); local.listen()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); udp.bind(("127.0.0.1", 0))
    print(everywhere.getsockname()[1], local.getsockname()[1], flush=True)
    sys.stdin.read()
""")

#: A private Ray whose task starts two processes that connect to the listener at 127.0.0.2:PORT: one holds its
#: connection for HOLD seconds, the other closes it at once (it lasts a few milliseconds).  Each prints its pid
#: and local port.
RAY_CHILDREN_CONNECT = textwrap.dedent("""
    import subprocess, sys
    from solver.distributed.session import ray_session

    CHILD = '''
    import os, socket, sys, time
    s = socket.create_connection(("127.0.0.2", int(sys.argv[1])))
    print(os.getpid(), s.getsockname()[1], flush=True)
    time.sleep(float(sys.argv[2]))
    s.close()
    '''
    port, hold = sys.argv[1], sys.argv[2]
    with ray_session(num_cpus=1) as ray:
        @ray.remote
        def connect(seconds):
            run = subprocess.run([sys.executable, "-c", CHILD, port, seconds], capture_output=True, text=True)
            return run.stdout.split()
        print(*ray.get(connect.remote(hold)), *ray.get(connect.remote("0")), flush=True)
""")


def test_the_watch_reports_a_listener_on_every_interface_and_nothing_on_the_loopback(tmp_path):
    watch = SocketWatch(tmp_path / "trace")
    args = [sys.executable, "-c", LISTEN_AND_WAIT]
    with watch.run(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as proc:
        everywhere, local = map(int, proc.stdout.readline().split())
        watch.sample()
        proc.communicate("")
    ports = {o.socket.local[1] for o in watch.listeners()}
    assert {everywhere, local} <= ports
    assert any(o.socket.proto == "udp" for o in watch.seen)
    pid = next(o.pid for o in watch.listeners())
    assert watch.off_loopback() == [
        f"python[{pid}] bind ('0.0.0.0', 0) = 0",
        f"python[{pid}] held tcp LISTEN ('0.0.0.0', {everywhere}) -> ('0.0.0.0', 0)",
    ]


def test_the_watch_blames_the_ray_trees_connections_and_not_an_unrelated_process(tmp_path):
    """Children of a private Ray's worker connect to a listener on 127.0.0.2 (counted as off the loopback), one
    for 2 s and one for a few milliseconds, while an unrelated process connects to the same listener in a loop:
    both children are caught by the trace (the long one by the samples too), nothing else of the Ray is, and the
    unrelated connections are only reported."""
    require_ray()
    with unrelated_traffic("127.0.0.2") as other:
        watch = SocketWatch(tmp_path / "trace", treat_as_remote=["127.0.0.2"])
        args = [sys.executable, "-c", RAY_CHILDREN_CONNECT, str(other.port), "2"]
        with watch.run(args, stdout=subprocess.PIPE, text=True) as proc:
            out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0
    long_pid, long_port, brief_pid, brief_port = map(int, out.split())
    listener = ("127.0.0.2", other.port)
    blamed = {c.pid: c for c in watch.calls if watch.is_off(c.address)}
    assert set(blamed) == {long_pid, brief_pid}, watch.off_loopback()
    assert all((c.call, c.address, c.port) == ("connect", *listener) for c in blamed.values())
    held = {o.socket.local[1]: o for o in watch.seen if o.socket.remote == listener}
    assert long_port in held and held[long_port].pid == long_pid, "the samples missed a 2-second connection"
    other.check_not_blamed(watch)


def test_loopback_addresses():
    assert all(map(is_loopback, ["127.0.0.1", "127.8.0.1", "::1", "::ffff:127.0.0.1"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "192.0.2.2", "::ffff:192.0.2.2", "169.254.169.254"]))
    watch = SocketWatch("unused", treat_as_remote=["127.0.0.2"])
    assert watch.is_off("127.0.0.2") and watch.is_off("::ffff:127.0.0.2") and not watch.is_off("127.0.0.1")


def test_a_private_ray_refuses_to_start_after_ray_was_imported_without_the_loopback_setting():
    require_ray()
    code = "import ray\nfrom solver.distributed.session import ray_session\nwith ray_session(num_cpus=1):\n    pass\n"
    env = {k: v for k, v in __import__("os").environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode != 0
    assert "RayNotPrivate" in run.stderr and "every network interface" in run.stderr
