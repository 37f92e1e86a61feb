"""The internet sockets of a tree of processes, read from /proc (Linux), for the tests that keep Ray on the loopback.

A :class:`SocketWatch` samples, on a background thread, every TCP and UDP socket held by a process and all of its
descendants (a private Ray's GCS, raylet, dashboard and workers are all started by the driver), and every new
outbound connection of the whole machine (a short-lived one, such as an HTTP probe, is gone from its process
before a sample sees it, but stays in the kernel's table in TIME-WAIT for a minute).
"""

from __future__ import annotations

import ipaddress
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

#: /proc/net/tcp state codes
TCP_STATES = {"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1", "05": "FIN_WAIT2",
              "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN",
              "0B": "CLOSING"}  # fmt: skip


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


class SocketWatch:
    """Samples the sockets of ``root`` and its descendants every ``interval`` seconds while the ``with`` block
    runs, and the machine's outbound connections that appear meanwhile.

    ``seen``: ``{(process name, Socket)}``; ``new_outbound``: sockets of the machine, not present at the start,
    connected to a remote port that is not one of the machine's listening ports (so not inbound connections)."""

    def __init__(self, root: int | None = None, interval: float = 0.1):
        self.root = os.getpid() if root is None else root
        self.interval = interval
        self.seen: set[tuple[str, Socket]] = set()
        self.new_outbound: set[Socket] = set()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        sockets = all_sockets()
        by_inode = {s.inode: s for s in sockets if s.inode}
        for pid, name in descendants(self.root).items():
            for inode in socket_inodes(pid):
                if inode in by_inode:
                    self.seen.add((name, by_inode[inode]))
        listening = {s.local[1] for s in sockets if s.state == "LISTEN"}
        for s in sockets:
            if s.proto == "tcp" and s.state != "LISTEN" and s.local[1] not in listening:
                if outbound_key(s) not in self._before:
                    self.new_outbound.add(s)
        self.samples += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            time.sleep(self.interval)

    def __enter__(self):
        self._before = {outbound_key(s) for s in all_sockets()}
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.sample()

    def listeners(self) -> set[tuple[str, Socket]]:
        return {(name, s) for name, s in self.seen if s.state == "LISTEN"}

    def off_loopback(self) -> list[str]:
        """Every socket seen that uses an address other than a loopback one, as readable lines."""
        bad = [(name, s) for name, s in self.seen if not all(is_loopback(a) for a in s.addresses())]
        bad += [("(machine, outbound)", s) for s in self.new_outbound if not is_loopback(s.remote[0])]
        return sorted(f"{name}: {s.proto} {s.state} {s.local} -> {s.remote}" for name, s in bad)
