"""What a user pays before a first run: ``python -m experiments.suite tables`` builds the suite's tables, and with
``--record FILE`` writes what that cost (docs/suite.md, "Suite v3: the rules": at most :data:`MAX_SECONDS` and
:data:`MAX_BYTES` of disk here).

The record (JSON): ``tasks`` ``{name: {"seconds", "built", "bytes", "digest", "optimal_value", "as_pinned"}}``
(``built``: False where the table was there already, so its seconds are not a build's), ``seconds`` (wall time of
the whole command), ``bytes`` (the tables' disk), ``peak_bytes`` (the largest resident set of this process and of
its children), ``cpus`` (``os.cpu_count()``) and ``provenance`` (the commit and packages).
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path

#: The cost of entry the suite allows: the default tables built in 15 minutes and 5 GB of disk here.
MAX_SECONDS = 15 * 60
MAX_BYTES = 5e9


def directory_bytes(path) -> int:
    """The bytes of the files under ``path`` (a directory table), or of the file itself."""
    path = Path(path)
    return path.stat().st_size if path.is_file() else sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def peak_resident_bytes() -> int:
    """The largest resident set of this process and of its finished children, in bytes (Linux reports KiB)."""
    return 1024 * max(resource.getrusage(who).ru_maxrss for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))


def build_tables(tasks, verify: bool = False, progress: bool = True, report=print) -> dict:
    """Build the tables of ``tasks`` that are missing (a task without a table is skipped, said by ``report``), each
    checked against its pins with ``verify``; returns the record of the module docstring (``provenance`` left
    to the caller)."""
    from oracle import Oracle

    from .tasks import ensure_table, matches_pinned_value, table_digest, table_is_complete

    began, record = time.perf_counter(), {"tasks": {}}
    for task in tasks:
        if not task.has_table:
            report(f"{task.name}: no table (V* = {task.optimal_value} published: {task.optimum_source})")
            continue
        start, existed = time.perf_counter(), table_is_complete(task)
        path = ensure_table(task, progress=progress)
        row = {"seconds": time.perf_counter() - start, "built": not existed, "bytes": directory_bytes(path)}
        line = f"{task.name}: {path} ({row['seconds']:.1f} s{'' if row['built'] else ', there already'})"
        if verify:
            digest = table_digest(path)
            with Oracle.open(path) as oracle:
                value = oracle.start_value
            ok = digest == task.table_digest and matches_pinned_value(value, task.optimal_value)
            row.update(digest=digest, optimal_value=value, as_pinned=ok)
            line += f"; V* = {value!r}, digest {digest}: {'as pinned' if ok else 'NOT AS PINNED'}"
        record["tasks"][task.name] = row
        report(line)
    record.update(
        seconds=time.perf_counter() - began,
        bytes=sum(r["bytes"] for r in record["tasks"].values()),
        peak_bytes=peak_resident_bytes(),
        cpus=os.cpu_count(),
    )
    return record


def summary(record: dict) -> str:
    """One line of a record: tables, wall time, disk, peak memory, and whether it is within the allowed cost."""
    within = record["seconds"] <= MAX_SECONDS and record["bytes"] <= MAX_BYTES
    return (
        f"{len(record['tasks'])} tables: {record['seconds']:.0f} s, {record['bytes'] / 1e9:.2f} GB on disk, peak "
        f"resident memory {record['peak_bytes'] / 1e9:.2f} GB ({'within' if within else 'OVER'} the cost of entry, "
        f"{MAX_SECONDS / 60:.0f} min and {MAX_BYTES / 1e9:.0f} GB)"
    )
