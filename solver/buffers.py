"""Buffers the parallel kernels write front to back, from numba's allocator (malloc, 4 KiB pages), not numpy's.

numpy asks the kernel for transparent huge pages (``madvise``) on every array of 4 MiB or more.  That is what the
hash tables want (:mod:`solver.value_index`: a random probe then rarely misses the TLB), but not a buffer that is
written once, in order: on a machine whose memory is full of page cache, each 2 MiB fault of such an array
compacts memory before it returns.  Measured on one 4x3 layer, one thread: spawning 0.32 s with these buffers,
1.04 s with numpy's (system time 8 s against 22 s over the run); see docs/solver-performance.md.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _empty(n, dtype):
    return np.empty(n, dtype)


@numba.njit(cache=True)
def _zeros(n, dtype):
    return np.zeros(n, dtype)


@numba.njit(cache=True)
def _zeros_rows(n, width, dtype):
    return np.zeros((n, width), dtype)


def empty(n: int, dtype) -> np.ndarray:
    """Uninitialised ``dtype[n]`` (``dtype`` a numpy scalar type such as ``np.uint64``)."""
    return _empty(int(n), dtype)


def zeros(n: int, dtype, width: int | None = None) -> np.ndarray:
    """Zeroed ``dtype[n]``, or ``dtype[n, width]``."""
    return _zeros(int(n), dtype) if width is None else _zeros_rows(int(n), int(width), dtype)
