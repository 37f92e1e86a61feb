"""A roofline of this machine's memory, for the solver's passes: DRAM latency, random-probe throughput with 1, 8
and 32 probes in flight, and streaming read / write bandwidth per core.

    python -m experiments.bench.roofline [--gib 2] [--repeats 3] [--json FILE]

Every figure is the median of ``--repeats`` runs of a numba kernel over a buffer of ``--gib`` GiB (far larger
than the caches, so every random access misses them).  The random-access figures are taken twice: on 4 KiB pages
(memory numba allocates, as the solver's hash tables were) and on 2 MiB transparent huge pages (memory numpy
allocates: it asks the kernel for huge pages on large arrays), where a miss no longer also walks the page tables:
- latency: one pointer chase through a random cycle (each load's address is the previous load's value, so one
  miss at a time): nanoseconds per hop;
- random probes, k in flight: k independent chases advanced in turn (the core overlaps their misses): probes
  per second on one core;
- prefetched gather: random reads at precomputed indices, each prefetched 32 reads ahead (how the solver's
  batched lookups issue theirs): reads per second on one core;
- streaming read (a sum), write (a fill) and copy, on one core and on all cores: GB/s.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numba
import numpy as np

from experiments.cli import write_json
from solver.prefetch import prefetch

#: 8-byte words per 64-byte cache line: the chases stride whole lines
LINE = 8


@numba.njit(cache=True)
def small_pages(n):
    """``int64[n]`` zeros from numba's allocator (malloc: 4 KiB pages)."""
    return np.zeros(n, np.int64)


@numba.njit(cache=True)
def random_cycle(buf, seed):
    """Make line i's first word of ``buf`` (``int64[n_lines * LINE]``) hold the index of the next line's first
    word, the lines forming one random cycle (Sattolo's algorithm)."""
    n_lines = buf.shape[0] // LINE
    np.random.seed(seed)  # noqa: NPY002 (numba knows the legacy API only)
    order = np.arange(n_lines)
    for i in range(n_lines - 1, 0, -1):
        j = np.random.randint(0, i)  # noqa: NPY002
        order[i], order[j] = order[j], order[i]
    for i in range(n_lines):
        buf[order[i] * LINE] = order[(i + 1) % n_lines] * LINE


@numba.njit(cache=True)
def chase(buf, starts, hops):
    """Advance ``len(starts)`` independent chases ``hops`` steps each, in turn; returns the final positions."""
    pos = starts.copy()
    k = pos.shape[0]
    for _ in range(hops):
        for j in range(k):
            pos[j] = buf[pos[j]]
    return pos


@numba.njit(cache=True)
def gather_prefetched(buf, idx, distance):
    """Sum of ``buf[idx[i]]`` with ``buf[idx[i + distance]]`` prefetched."""
    total = 0
    n = idx.shape[0]
    for i in range(n):
        if i + distance < n:
            prefetch(buf, idx[i + distance])
        total += buf[idx[i]]
    return total


@numba.njit(cache=True, parallel=True)
def stream_read(buf):
    total = 0
    for i in numba.prange(buf.shape[0]):
        total += buf[i]
    return total


@numba.njit(cache=True, parallel=True)
def stream_write(buf, value):
    for i in numba.prange(buf.shape[0]):
        buf[i] = value


@numba.njit(cache=True, parallel=True)
def stream_copy(dst, src):
    for i in numba.prange(src.shape[0]):
        dst[i] = src[i]


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def random_access(buf: np.ndarray, repeats: int, label: str) -> dict:
    """Latency and probe throughputs over ``buf``, keyed ``NAME_LABEL``."""
    n_lines = buf.size // LINE
    random_cycle(buf, 1)
    rng = np.random.default_rng(2)
    out = {}
    for k in (1, 8, 32):
        starts = rng.integers(0, n_lines, k) * LINE
        per_chain = max(2_000_000 // k, 10_000)
        chase(buf, starts, 10)  # compile
        t = median_time(lambda s=starts, h=per_chain: chase(buf, s, h), repeats)
        out[f"probes_per_s_{k}_in_flight_{label}"] = k * per_chain / t
        if k == 1:
            out[f"dram_latency_ns_{label}"] = t / per_chain * 1e9
    idx = rng.integers(0, n_lines, 8_000_000) * LINE
    gather_prefetched(buf, idx[:100], 32)
    out[f"prefetched_gather_per_s_{label}"] = idx.size / median_time(lambda: gather_prefetched(buf, idx, 32), repeats)
    return out


def measure(gib: float, repeats: int) -> dict:
    n = int(gib * 2**30) // 8 // LINE * LINE
    out: dict = {"buffer_gib": gib, "repeats": repeats, "cores": numba.config.NUMBA_NUM_THREADS}
    out.update(random_access(small_pages(n), repeats, "4k"))
    buf = np.zeros(n, np.int64)
    out.update(random_access(buf, repeats, "2m"))
    data = np.ones(n, np.int64)
    for threads, label in ((1, "1_core"), (numba.config.NUMBA_NUM_THREADS, "all_cores")):
        numba.set_num_threads(threads)
        stream_read(data[:100])
        stream_write(data[:100], 1)
        stream_copy(buf[:100], data[:100])
        out[f"read_gb_s_{label}"] = data.nbytes / median_time(lambda: stream_read(data), repeats) / 1e9
        out[f"write_gb_s_{label}"] = data.nbytes / median_time(lambda: stream_write(data, 3), repeats) / 1e9
        # a copy reads and writes every byte (the write also reads the line first: not counted)
        out[f"copy_gb_s_{label}"] = 2 * data.nbytes / median_time(lambda: stream_copy(buf, data), repeats) / 1e9
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return out


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gib", type=float, default=2.0, help="buffer size in GiB (default 2: far past the caches)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None, help="also write the figures to this file")
    args = parser.parse_args(argv)
    out = measure(args.gib, args.repeats)
    for label, pages in (("4k", "4 KiB pages"), ("2m", "2 MiB huge pages")):
        print(
            f"{pages}: DRAM latency (one pointer chase) {out[f'dram_latency_ns_{label}']:.0f} ns; random probes "
            f"on 1 core, 1 / 8 / 32 in flight: "
            + " / ".join(f"{out[f'probes_per_s_{k}_in_flight_{label}'] / 1e6:.1f}" for k in (1, 8, 32))
            + f" M/s; prefetched gather {out[f'prefetched_gather_per_s_{label}'] / 1e6:.1f} M/s"
        )
    for label in ("1_core", "all_cores"):
        print(
            f"streaming, {label.replace('_', ' ')}: read {out[f'read_gb_s_{label}']:.1f} GB/s, "
            f"write {out[f'write_gb_s_{label}']:.1f} GB/s, copy {out[f'copy_gb_s_{label}']:.1f} GB/s"
        )
    if args.json:
        write_json(args.json, out)
    return out


if __name__ == "__main__":
    main()
