"""The checks behind the loopback tests of test_ray.py and test_ray_cluster.py: the socket watch sees a socket
off the loopback, and a private Ray refuses to start once Ray was imported without the loopback setting."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from ray_helpers import require_ray
from sockets import SocketWatch, is_loopback

LISTEN_AND_WAIT = textwrap.dedent("""
    import socket, sys, time
    everywhere = socket.socket(); everywhere.bind(("0.0.0.0", 0)); everywhere.listen()
    local = socket.socket(socket.AF_INET6); local.bind(("::1", 0)); local.listen()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); udp.bind(("127.0.0.1", 0))
    print(everywhere.getsockname()[1], local.getsockname()[1], flush=True)
    sys.stdin.read()
""")


def test_the_watch_reports_a_listener_on_every_interface_and_nothing_on_the_loopback():
    proc = subprocess.Popen([sys.executable, "-c", LISTEN_AND_WAIT], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)  # fmt: skip
    try:
        everywhere, local = map(int, proc.stdout.readline().split())
        with SocketWatch(proc.pid) as watch:
            pass
    finally:
        proc.communicate("")
    ports = {s.local[1] for _, s in watch.listeners()}
    assert {everywhere, local} <= ports
    assert any(s.proto == "udp" for _, s in watch.seen)
    assert watch.off_loopback() == [f"python: tcp LISTEN ('0.0.0.0', {everywhere}) -> ('0.0.0.0', 0)"]


def test_loopback_addresses():
    assert all(map(is_loopback, ["127.0.0.1", "127.8.0.1", "::1", "::ffff:127.0.0.1"]))
    assert not any(map(is_loopback, ["0.0.0.0", "::", "192.0.2.2", "::ffff:192.0.2.2", "169.254.169.254"]))


def test_a_private_ray_refuses_to_start_after_ray_was_imported_without_the_loopback_setting():
    require_ray()
    code = "import ray\nfrom solver.ray_engine import ray_session\nwith ray_session(num_cpus=1):\n    pass\n"
    env = {k: v for k, v in __import__("os").environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode != 0
    assert "RayNotPrivate" in run.stderr and "every network interface" in run.stderr
