"""The solver's parallel kernels: serial ``nogil`` numba kernels over blocks of work, run on Python threads.

numba's ``parallel=True`` (parfors) spends 3-5 s compiling each kernel on first use, most of a kernel's whole
compilation; a serial kernel that releases the GIL, called from a pool of threads on disjoint blocks, runs just as
parallel and compiles in about a third of the time (docs/solver-performance.md, "First use").  The kernels that
move boards and take their canonical forms (``expand_states``, ``state_values_grouped``, ``_state_moves``) stay
on parfors: as serial kernels here they ran 1.1-1.5x slower, for a reason in the generated code not found yet.

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


def run_parallel(kernel, n_items: int, *args, min_block: int = 1) -> None:
    """Call ``kernel(lo, hi, *args)`` over contiguous blocks covering ``range(n_items)``, each of at least
    ``min_block`` items (but one), on as many threads as ``numba.get_num_threads()`` in the calling thread (the
    solver's ``--threads``; numba keeps that number per thread); returns when every block is done and re-raises
    the first block's error, if any."""
    threads = numba.get_num_threads()
    n_blocks = min(n_items // max(1, min_block), threads * BLOCKS_PER_THREAD)
    if threads == 1 or n_blocks <= 1:
        kernel(0, n_items, *args)
        return
    edges = [(n_items * k) // n_blocks for k in range(n_blocks + 1)]
    futures = [_pool(threads).submit(kernel, edges[k], edges[k + 1], *args) for k in range(n_blocks)]
    wait(futures)
    for future in futures:
        future.result()
