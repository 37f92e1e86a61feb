"""Command line of the oracle: ``python -m oracle serve TABLE [--host 127.0.0.1] [--port 8000]``.

Serves one solved table over HTTP (:mod:`oracle.server`); clients open it with ``Oracle.connect(URL)``.  It
listens on 127.0.0.1 unless ``--host`` says otherwise: put a reverse proxy with TLS and authentication in front of a
public server (docs/oracle.md).
"""

from __future__ import annotations

import argparse

from . import protocol
from .server import BODY_TIMEOUT, KEEP_ALIVE, MAX_CONNECTIONS


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m oracle", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    s = commands.add_parser("serve", help="answer a table's lookups over HTTP (Oracle.connect is the client)")
    s.add_argument("table", help="a table written by python -m solver build (file or directory)")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    s.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free port, printed)")
    s.add_argument(
        "--max-boards",
        type=int,
        default=protocol.MAX_BOARDS,
        help=f"most boards per request (default {protocol.MAX_BOARDS}); larger bodies get 413",
    )
    s.add_argument(
        "--body-timeout",
        type=float,
        default=BODY_TIMEOUT,
        help=f"seconds a client has to send its body (default {BODY_TIMEOUT:g}); then 408",
    )
    s.add_argument(
        "--keep-alive",
        type=float,
        default=KEEP_ALIVE,
        help=f"seconds an idle connection stays open (default {KEEP_ALIVE:g})",
    )
    s.add_argument(
        "--max-connections",
        type=int,
        default=MAX_CONNECTIONS,
        help=f"open connections beyond which requests get 503 (default {MAX_CONNECTIONS})",
    )
    s.add_argument("--memory-limit", type=int, default=None, help="bytes of table layers kept open (default 4 GiB)")
    s.add_argument("--stop-after", type=float, default=None, help="stop after this many seconds (tests, demos)")
    s.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    args = parser.parse_args(argv)
    if not 0 <= args.port < 65536:
        parser.error(f"--port must be 0..65535, got {args.port}")
    for name in ("body_timeout", "keep_alive"):
        if getattr(args, name) <= 0:
            parser.error(f"--{name.replace('_', '-')} must be > 0 seconds, got {getattr(args, name)}")
    if args.max_boards < 1 or args.max_connections < 1:
        parser.error("--max-boards and --max-connections must be at least 1")
    from .server import serve

    serve(
        args.table,
        args.host,
        args.port,
        args.max_boards,
        args.body_timeout,
        args.keep_alive,
        args.max_connections,
        args.memory_limit,
        args.stop_after,
        args.log_level,
    )


if __name__ == "__main__":
    main()
