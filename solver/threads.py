"""The solver's parallel kernels: serial ``nogil`` numba kernels over blocks of work, run on Python threads.

numba's ``parallel=True`` (parfors) spends 3-5 s compiling each kernel on first use, most of a kernel's whole
compilation; a serial kernel that releases the GIL, called from a pool of threads on disjoint blocks, runs just as
parallel and compiles in about a third of the time (docs/solver-performance.md, "First use").  Compiled with
:func:`block_kernel` (no reference counting) it also runs as fast as the same body under ``prange``.  Two kernels
stay on parfors, ``expand_states`` and ``state_values_grouped``: they allocate per-chunk buffers, and the state
kernel still ran ~15% slower as a block kernel (3x3 backward pass, same inputs).

A kernel here is ``kernel(lo, hi, *args)``: it does items ``lo .. hi - 1`` of its work and writes only their own
parts of the output arrays it is given, so results never depend on the number of threads or on the blocks.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor, wait

import numba

#: Blocks per thread: enough for uneven items to balance, few enough that dispatching them costs nothing.
BLOCKS_PER_THREAD = 4

_pools: dict[int, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def _pool(threads: int) -> ThreadPoolExecutor:
    with _pools_lock:
        if threads not in _pools:
            _pools[threads] = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="solver-kernel")
        return _pools[threads]


def _run_here(kernel, lo: int, hi: int, args) -> None:
    """``kernel(lo, hi, *args)`` from the calling thread, except a numba kernel's first call (its compilation, or
    its load from the cache), which goes to a pool thread.  Compiling recurses deeply in Python, and CPython 3.11
    frees a frame-stack chunk whenever the stack returns below it (cpython gh-142183, fixed from 3.13): a
    compilation started deep in a caller's stack (inside pytest, for instance) can cross a chunk boundary
    millions of times, each an mmap and munmap.  The oracle's lookup kernel compiled in 15 s there (8 s of it in
    the kernel) against 5 s from a shallow stack; a pool thread's stack is always shallow."""
    if getattr(kernel, "signatures", True):
        kernel(lo, hi, *args)
    else:
        _pool(1).submit(kernel, lo, hi, *args).result()


def block_kernel(func):
    """Compile ``func`` as a block kernel: numba ``nogil``, cached, and without numba's reference counting
    (``_nrt=False``).  With reference counting, a serial kernel increments and decrements, atomically, every
    array it hands to an inlined helper, on every item, and ran 1.3-1.6x slower than the same body under
    ``prange`` (whose arrays carry no reference count); without it the two run alike (docs/solver-performance.md,
    "First use").  The price: a block kernel cannot allocate arrays; it writes into the ones it is given."""
    return numba.njit(cache=True, nogil=True, _nrt=False)(func)


def run_blocks(jobs, min_block: int = 1) -> None:
    """Run several block kernels as one parallel step: ``jobs`` is a list of ``(kernel, n_items, args)``, each
    cut into blocks of about ``total / (threads * BLOCKS_PER_THREAD)`` items (at least ``min_block``), all put on
    the pool at once, so that many small jobs (an oracle batch spread over many ages) cost one wait; consecutive
    small jobs share a hand-over to the pool (a batch of 65,536 boards over 1,012 ages spent 28 ms of its 74 ms
    handing jobs over one by one).  With one
    thread, or less work than one block, the jobs run in the calling thread.  Re-raises the first block's error."""
    threads = numba.get_num_threads()
    total = sum(n for _, n, _ in jobs)
    block = max(1, min_block, -(-total // (threads * BLOCKS_PER_THREAD)))
    if threads == 1 or total <= block:
        for kernel, n, args in jobs:
            _run_here(kernel, 0, n, args)
        return
    bundles: list[list] = [[]]  # small jobs go together: one hand-over per block of items, not per job
    size = 0
    for kernel, n, args in jobs:
        parts = max(1, -(-n // block))
        edges = [(n * k) // parts for k in range(parts + 1)]
        for k in range(parts):
            if size >= block:
                bundles.append([])
                size = 0
            bundles[-1].append((kernel, edges[k], edges[k + 1], args))
            size += edges[k + 1] - edges[k]
    futures = [_pool(threads).submit(_run_bundle, bundle) for bundle in bundles]
    wait(futures)
    for future in futures:
        future.result()


def _run_bundle(parts) -> None:
    for kernel, lo, hi, args in parts:
        kernel(lo, hi, *args)


def run_parallel(kernel, n_items: int, *args, min_block: int = 1) -> None:
    """Call ``kernel(lo, hi, *args)`` over contiguous blocks covering ``range(n_items)``, each of at least
    ``min_block`` items (but one), on as many threads as ``numba.get_num_threads()`` in the calling thread (the
    solver's ``--threads``; numba keeps that number per thread); returns when every block is done and re-raises
    the first block's error, if any."""
    threads = numba.get_num_threads()
    n_blocks = min(n_items // max(1, min_block), threads * BLOCKS_PER_THREAD)
    if threads == 1 or n_blocks <= 1:
        _run_here(kernel, 0, n_items, args)
        return
    edges = [(n_items * k) // n_blocks for k in range(n_blocks + 1)]
    futures = [_pool(threads).submit(kernel, edges[k], edges[k + 1], *args) for k in range(n_blocks)]
    wait(futures)
    for future in futures:
        future.result()
