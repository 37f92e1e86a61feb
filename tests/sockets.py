"""Which internet addresses a tree of processes uses, for the tests that keep Ray on the loopback (Linux).

A :class:`SocketWatch` starts a command and watches it and every process below it (a private Ray's GCS, raylet,
agents and workers are all started by its driver), and ties everything it records to a process:

- the trace: the tree runs under ``strace -f --seccomp-bpf``, which writes down each ``connect``, ``bind``,
  ``sendto``, ``sendmsg`` and ``sendmmsg`` call of every process with the address it names.  Only those calls stop
  a process, and a connection is recorded however briefly it lasts;
- the samples: every ``interval`` seconds, the TCP and UDP sockets that each process of the tree holds (from
  /proc), so that the tree's listeners are known by process name.

The machine's other new outbound TCP connections are collected as well.  A connection that has closed lingers in
the kernel's table (TIME-WAIT) without an owner, so those that are not the tree's cannot be tied to any process:
they are reported (a warning in the test's output), never blamed on the tree.

Loopback tests need ``strace`` (Debian's package; ``.ci/run`` installs it) and permission to trace child
processes.  Without them they are skipped and say why; ``SOLVED2048_REQUIRE_STRACE=1`` (set by ``.ci/run``) turns
that skip into a failure.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

#: /proc/net/tcp state codes
TCP_STATES = {
    "01": "ESTABLISHED",
    "02": "SYN_SENT",
    "03": "SYN_RECV",
    "04": "FIN_WAIT1",
    "05": "FIN_WAIT2",
    "06": "TIME_WAIT",
    "07": "CLOSE",
    "08": "CLOSE_WAIT",
    "09": "LAST_ACK",
    "0A": "LISTEN",
    "0B": "CLOSING",
}

#: The calls the trace records: every way a process can name an internet address to the kernel (``listen`` and
#: ``accept`` name none: a listener's address comes from its ``bind``).
TRACED_CALLS = ("connect", "bind", "sendto", "sendmsg", "sendmmsg")


@dataclass(frozen=True)
class Socket:
    """One internet socket: ``proto`` tcp/udp, ``local`` and ``remote`` as ``(ip, port)``, the TCP state."""

    proto: str
    state: str
    local: tuple[str, int]
    remote: tuple[str, int]
    inode: int

    def addresses(self) -> list[str]:
        """The addresses it uses: its local one, and its peer's unless it has none (a listener, unbound UDP)."""
        out = [self.local[0]]
        if self.remote[1] != 0:
            out.append(self.remote[0])
        return out


@dataclass(frozen=True)
class Owned:
    """A socket seen in a sample, held by process ``pid`` named ``name``."""

    pid: int
    name: str
    socket: Socket


@dataclass(frozen=True)
class Call:
    """A traced system call that named ``address`` and ``port``, made by the thread ``pid`` (a process's first
    thread has the process's id) named ``name`` (``python``, ``raylet``, or a thread's own name)."""

    pid: int
    name: str
    call: str
    address: str
    port: int
    result: str


def _address(text: str) -> tuple[str, int]:
    """``0100007F:1F90`` (IPv4) or 32 hex digits ``:port`` (IPv6), each 32-bit word in host (little-endian)
    order, as ``("127.0.0.1", 8080)``."""
    hexip, hexport = text.split(":")
    raw = bytes.fromhex(hexip)
    raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(raw)), int(hexport, 16)


def all_sockets() -> list[Socket]:
    """Every TCP and UDP socket of this network namespace (IPv4 and IPv6)."""
    out = []
    for name in ("tcp", "tcp6", "udp", "udp6"):
        path = Path("/proc/net") / name
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            f = line.split()
            state = TCP_STATES.get(f[3], f[3]) if name.startswith("tcp") else "UDP"
            out.append(Socket(name.rstrip("6"), state, _address(f[1]), _address(f[2]), int(f[9])))
    return out


def is_loopback(ip: str) -> bool:
    """127.0.0.0/8, ::1, or an IPv4-mapped loopback address (``::ffff:127.0.0.1``); not the unspecified address
    (``0.0.0.0``, ``::``: a listener on every interface)."""
    addr = ipaddress.ip_address(ip)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    return addr.is_loopback


def _plain(ip: str) -> str:
    """An IPv4-mapped IPv6 address as its IPv4 address; any other address unchanged."""
    addr = ipaddress.ip_address(ip)
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return str(addr.ipv4_mapped)
    return str(addr)


def descendants(root: int) -> dict[int, str]:
    """``{pid: command name}`` of ``root`` and every process below it."""
    children: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # the process ended
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        pid = int(entry.name)
        names[pid] = name
        children.setdefault(ppid, []).append(pid)
    out, todo = {}, [root]
    while todo:
        pid = todo.pop()
        if pid in names:
            out[pid] = names[pid]
            todo.extend(children.get(pid, []))
    return out


def socket_inodes(pid: int) -> set[int]:
    """Inodes of the sockets process ``pid`` holds open."""
    inodes = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    try:
        fds = os.listdir(fd_dir)
    except OSError:
        return inodes
    for fd in fds:
        try:
            target = os.readlink(fd_dir / fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(int(target[8:-1]))
    return inodes


def outbound_key(s: Socket) -> tuple:
    return s.proto, s.local, s.remote


# A line of ``strace -f -Y``: "1234<raylet> connect(5, {sa_family=AF_INET, sin_port=htons(6379), ...}, 16) = 0";
# a call another process interrupted ends in "<unfinished ...>" and its result follows on a "resumed" line.
_CALL = re.compile(r"^(\d+)<([^>]*)> (\w+)\((.*)$")
_INET = re.compile(r'sin_port=htons\((\d+)\), sin_addr=inet_addr\("([^"]+)"\)')
_INET6 = re.compile(r'sin6_port=htons\((\d+)\).*?inet_pton\(AF_INET6, "([^"]+)"')


def parse_trace(text: str) -> list[Call]:
    """The calls of an ``strace -f -Y`` log that name an internet address (one :class:`Call` per address named:
    ``sendmmsg`` can name several); calls on Unix sockets name none."""
    calls = []
    for line in text.splitlines():
        m = _CALL.match(line)
        if not m or m.group(3) not in TRACED_CALLS:
            continue
        pid, name, call, rest = int(m.group(1)), m.group(2), m.group(3), m.group(4)
        result = rest.rsplit("= ", 1)[1] if "= " in rest else "(unfinished)"
        found = [(p, a) for p, a in _INET.findall(rest)] + [(p, a) for p, a in _INET6.findall(rest)]
        for port, address in found:
            calls.append(Call(pid, name, call, _plain(address), int(port), result.strip()))
    return calls


def strace_or_skip() -> str:
    """The path of ``strace``, if it can trace a child process here; else the test is skipped, and says why
    (a failure under ``SOLVED2048_REQUIRE_STRACE=1``)."""
    strace = shutil.which("strace")
    reason = None
    if strace is None:
        reason = "strace is not installed (apt-get install -y strace; .ci/run installs it)"
    else:
        probe = subprocess.run(
            [strace, "-f", "-qq", "--seccomp-bpf", "-e", "trace=connect", "-o", os.devnull, "true"],
            capture_output=True,
            text=True,
        )
        if probe.returncode != 0:
            reason = f"strace cannot trace a child process here: {probe.stderr.strip()[:300]}"
    if reason is not None:
        reason = "the loopback watch needs strace: " + reason
        if os.environ.get("SOLVED2048_REQUIRE_STRACE") == "1":
            pytest.fail(reason + " (SOLVED2048_REQUIRE_STRACE=1)")
        pytest.skip(reason)
    return strace


class UnattributedConnections(UserWarning):
    """New outbound connections of the machine that no process of the watched tree made (reported, not failed)."""


class SocketWatch:
    """Watches the command that :meth:`run` starts and every process below it; see the module's docstring.

    ``log``: where the trace is written.  ``treat_as_remote``: loopback addresses to count as off the loopback
    (a test shows the watch at work on 127.0.0.2 without any traffic leaving the machine).

    After :meth:`run`: ``seen`` (sampled :class:`Owned` sockets), ``calls`` (traced :class:`Call` s),
    ``new_outbound`` (the machine's new outbound TCP connections), ``samples``."""

    def __init__(self, log: Path, treat_as_remote: Iterable[str] = (), interval: float = 0.1):
        self.log = Path(log)
        self.treat_as_remote = {_plain(a) for a in treat_as_remote}
        self.interval = interval
        self.seen: set[Owned] = set()
        self.calls: list[Call] = []
        self.new_outbound: set[Socket] = set()
        self.samples = 0
        self.root: int | None = None
        self._before: set[tuple] = set()
        self._stop = threading.Event()

    def is_off(self, ip: str) -> bool:
        """An address counted as off the loopback: not a loopback one, or one of ``treat_as_remote``."""
        return not is_loopback(ip) or _plain(ip) in self.treat_as_remote

    def sample(self) -> None:
        """Record the sockets each process of the tree holds now, and the machine's new outbound connections."""
        sockets = all_sockets()
        by_inode = {s.inode: s for s in sockets if s.inode}
        for pid, name in descendants(self.root).items():
            for inode in socket_inodes(pid):
                if inode in by_inode:
                    self.seen.add(Owned(pid, name, by_inode[inode]))
        listening = {s.local[1] for s in sockets if s.state == "LISTEN"}
        for s in sockets:
            # an accepted connection has a listener's port as its local port: inbound, not outbound
            if s.proto == "tcp" and s.state != "LISTEN" and s.local[1] not in listening:
                if outbound_key(s) not in self._before:
                    self.new_outbound.add(s)
        self.samples += 1

    def _sampler(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    @contextlib.contextmanager
    def run(self, args: list[str], **popen_kwargs) -> Iterator[subprocess.Popen]:
        """Start ``args`` under the trace (``popen_kwargs`` go to ``subprocess.Popen``) and sample its tree until
        the ``with`` block ends; the block waits for the process (``communicate``).  At the end no process of the
        tree may be left: a tree still running is killed, and the test fails naming its processes."""
        strace = strace_or_skip()
        self._before = {outbound_key(s) for s in all_sockets()}
        traced = [
            strace,
            "-f",
            "-qq",
            "-Y",
            "--seccomp-bpf",
            "-e",
            f"trace={','.join(TRACED_CALLS)}",
            "-e",
            "signal=none",
            "-o",
            str(self.log),
            "--",
            *args,
        ]
        proc = subprocess.Popen(traced, start_new_session=True, **popen_kwargs)
        self.root = proc.pid
        sampler = threading.Thread(target=self._sampler, daemon=True)
        sampler.start()
        try:
            yield proc
        finally:
            self._stop.set()
            sampler.join()
            left = self._left_running(proc)
            self.sample()
            self.calls = parse_trace(self.log.read_text()) if self.log.exists() else []
        if left:
            pytest.fail(f"processes of the watched tree still ran after it: {left}")
        unattributed = self.unattributed()
        if unattributed:
            by_peer = Counter(remote for _, remote in unattributed)
            peers = ", ".join(f"{ip}:{port} ({n})" for (ip, port), n in by_peer.most_common())
            warnings.warn(
                UnattributedConnections(
                    f"{len(unattributed)} new outbound connection(s) of this machine off the loopback (or to "
                    f"{sorted(self.treat_as_remote)}) that no process of the watched tree held, by peer: {peers}. "
                    "Reported, not failed: the trace judges the tree's own"
                ),
                stacklevel=3,
            )

    def _left_running(self, proc: subprocess.Popen, grace: float = 30.0) -> dict[int, str]:
        """Wait up to ``grace`` seconds for the tree to end (strace exits once every traced process has); kill
        what is left, and return it."""
        deadline = time.monotonic() + grace
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        if proc.poll() is not None:
            return {}
        left = {pid: name for pid, name in descendants(proc.pid).items() if pid != proc.pid}
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()
        return left

    def listeners(self) -> set[Owned]:
        return {o for o in self.seen if o.socket.state == "LISTEN"}

    def off_loopback(self) -> list[str]:
        """Every socket the tree was seen holding and every traced call that used an address off the loopback, as
        readable lines naming the process."""
        bad = [
            f"{o.name}[{o.pid}] held {o.socket.proto} {o.socket.state} {o.socket.local} -> {o.socket.remote}"
            for o in self.seen
            if any(map(self.is_off, o.socket.addresses()))
        ]
        bad += [
            f"{c.name}[{c.pid}] {c.call} ({c.address!r}, {c.port}) = {c.result}"
            for c in self.calls
            if self.is_off(c.address)
        ]
        return sorted(set(bad))

    def unattributed(self) -> list[tuple[tuple[str, int], tuple[str, int]]]:
        """The machine's new outbound connections off the loopback that no sample found in a process of the tree:
        other programs' (a connection of the tree's that closed between two samples is among them too, and the
        trace judges it)."""
        held = {outbound_key(o.socket) for o in self.seen}
        out = {outbound_key(s) for s in self.new_outbound if self.is_off(s.remote[0])} - held
        return sorted((local, remote) for _, local, remote in out)


#: The unrelated process of :func:`unrelated_traffic`: connections opened and closed (by it first, so that each
#: lingers in TIME-WAIT on its side) in a loop, bounded in count and time; it prints each local port.
_CONNECTOR = """
import socket, sys, time
address, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
seconds, pause = float(sys.argv[4]), float(sys.argv[5])
end = time.monotonic() + seconds
for _ in range(count):
    if time.monotonic() > end:
        break
    with socket.create_connection((address, port), timeout=5) as s:
        print(s.getsockname()[1], flush=True)
    time.sleep(pause)
"""


@dataclass
class UnrelatedTraffic:
    """What :func:`unrelated_traffic` made: the listener's ``address`` and ``port``, and the unrelated process's
    ``pid`` and the ``local_ports`` of its connections (known once the block has ended)."""

    address: str
    port: int
    pid: int = 0
    local_ports: frozenset[int] = frozenset()

    def check_not_blamed(self, watch: SocketWatch) -> None:
        """The unrelated connections happened while ``watch`` ran, the machine's table showed them, and nothing
        the watch blames on its tree is one of them."""
        assert self.local_ports, "the unrelated process made no connection"
        machine = {s.local[1] for s in watch.new_outbound if s.remote == (self.address, self.port)}
        assert machine & self.local_ports, "the watch never saw the unrelated connections in the machine's table"
        listener = (self.address, self.port)
        assert not [o for o in watch.seen if o.socket.remote == listener and o.socket.local[1] in self.local_ports]
        assert self.pid not in {o.pid for o in watch.seen} | {c.pid for c in watch.calls}
        assert watch.unattributed(), "the unrelated connections were not reported"


@contextlib.contextmanager
def unrelated_traffic(
    address: str = "127.0.0.2", count: int = 3000, seconds: float = 600.0, pause: float = 0.02
) -> Iterator[UnrelatedTraffic]:
    """A listener on ``address`` (a thread of this process) and an unrelated process, outside any watched tree,
    that opens and closes connections to it in a loop: at most ``count`` of them, for at most ``seconds``, and
    no longer than the ``with`` block."""
    listener = socket.create_server((address, 0))
    listener.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            with conn:
                conn.settimeout(5)
                with contextlib.suppress(OSError):
                    while conn.recv(64):  # until the connector closes its side first
                        pass

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    traffic = UnrelatedTraffic(address, listener.getsockname()[1])
    args = [address, traffic.port, count, seconds, pause]
    connector = subprocess.Popen([sys.executable, "-c", _CONNECTOR, *map(str, args)], stdout=subprocess.PIPE, text=True)
    traffic.pid = connector.pid
    try:
        yield traffic
    finally:
        connector.terminate()
        out, _ = connector.communicate(timeout=30)
        traffic.local_ports = frozenset(int(p) for p in out.split())
        stop.set()
        server.join()
        listener.close()
