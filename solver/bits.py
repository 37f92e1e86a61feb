"""Bit-level numba helpers: population count, trailing zeros, and fixed-width bit-packed arrays.

A bit-packed array of ``n`` fields of ``width`` bits is a ``uint64`` word array: field ``i`` occupies bits
``[i*width, (i+1)*width)`` counted from bit 0 of word 0 (little-endian within and across words), and the array
has one spare word at the end so that a field read never runs past it.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import intrinsic


@intrinsic
def popcount64(typingctx, x):
    """Number of set bits of a ``uint64`` (LLVM ``ctpop``: one instruction on current CPUs)."""
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        fn = builder.module.declare_intrinsic("llvm.ctpop", [args[0].type])
        return builder.call(fn, args)

    return sig, codegen


@intrinsic
def trailing_zeros64(typingctx, x):
    """Index of the lowest set bit of a ``uint64`` (64 for 0)."""
    sig = types.uint64(types.uint64)

    def codegen(context, builder, signature, args):
        import llvmlite.ir as ir

        fn = builder.module.declare_intrinsic("llvm.cttz", [args[0].type, ir.IntType(1)])
        return builder.call(fn, [args[0], ir.Constant(ir.IntType(1), 0)])

    return sig, codegen


def words_for(n_bits: int) -> int:
    """Words of a bit-packed array holding ``n_bits`` bits, spare word included."""
    return (int(n_bits) + 63) // 64 + 1


@numba.njit(cache=True, inline="always")
def get_field(words, i, width):
    """Field ``i`` (``uint64``) of a bit-packed array of ``width``-bit fields (``0 <= width <= 64``)."""
    if width == 0:
        return np.uint64(0)
    pos = np.uint64(i) * np.uint64(width)
    w = pos >> np.uint64(6)
    off = pos & np.uint64(63)
    v = words[w] >> off
    if off + np.uint64(width) > np.uint64(64):
        v |= words[w + np.uint64(1)] << (np.uint64(64) - off)
    if width < 64:
        v &= (np.uint64(1) << np.uint64(width)) - np.uint64(1)
    return v


@numba.njit(cache=True, nogil=True)
def pack_fields(values, width):
    """Bit-pack ``values`` (``uint64[n]``, each below ``2**width``) into ``uint64`` words (spare word included)."""
    n = values.shape[0]
    out = np.zeros((n * width + 63) // 64 + 1, np.uint64)
    if width == 0:
        return out
    for i in range(n):
        pos = np.uint64(i) * np.uint64(width)
        w = pos >> np.uint64(6)
        off = pos & np.uint64(63)
        out[w] |= values[i] << off
        if off + np.uint64(width) > np.uint64(64):
            out[w + np.uint64(1)] |= values[i] >> (np.uint64(64) - off)
    return out


@numba.njit(cache=True, nogil=True)
def unpack_fields(words, n, width):
    """Inverse of :func:`pack_fields`: ``uint64[n]``."""
    out = np.empty(n, np.uint64)
    for i in range(n):
        out[i] = get_field(words, i, width)
    return out
