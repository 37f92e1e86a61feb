"""``prefetch(array, i)``: ask the CPU to start loading ``array[i]``'s cache line, without waiting for it.

A numba intrinsic around LLVM's ``llvm.prefetch`` (a hint: it never faults, whatever the index).  Kernels that
look up many keys in tables far larger than the caches issue a batch of prefetches first and then read, so that
the core has many DRAM misses in flight instead of one (see docs/solver-performance.md).
"""

from __future__ import annotations

from llvmlite import ir
from numba.core import cgutils, types
from numba.extending import intrinsic


@intrinsic
def prefetch(typingctx, array, index):
    """Prefetch ``array[index]`` (any 1-D or 2-D C-contiguous array; for 2-D, the row ``index``) for reading,
    into every cache level."""
    if not isinstance(array, types.Array) or not isinstance(index, types.Integer):
        return None
    sig = types.void(array, index)

    def codegen(context, builder, signature, args):
        array_type, _ = signature.args
        arr = context.make_array(array_type)(context, builder, args[0])
        # the address of the first element of the row, computed without bounds checks: a prefetch never faults
        row_bytes = context.get_constant(types.intp, array_type.dtype.bitwidth // 8)
        for dim in range(1, array_type.ndim):
            row_bytes = builder.mul(row_bytes, cgutils.unpack_tuple(builder, arr.shape, array_type.ndim)[dim])
        offset = builder.mul(context.cast(builder, args[1], signature.args[1], types.intp), row_bytes)
        base = builder.ptrtoint(arr.data, ir.IntType(64))
        address = builder.inttoptr(builder.add(base, offset), ir.PointerType(ir.IntType(8)))
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [address.type, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [address, i32(0), i32(3), i32(1)])  # read, high locality, data cache
        return context.get_dummy_value()

    return sig, codegen
