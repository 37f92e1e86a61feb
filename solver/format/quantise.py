"""Format v2's quantised values.

``float`` code (the ``score`` objective): 0 stays 0; any other value keeps its binary exponent
(re-based to the layer's smallest) and ``FLOAT_MANTISSA_BITS`` mantissa bits, rounded to nearest: relative error
<= ``2**-(FLOAT_MANTISSA_BITS + 1)``.  ``fixed`` code (``tile:K`` probabilities in [0, 1]): ``round(v * 2**s)``
minus the layer's smallest code, ``s = FIXED_SCALE_BITS``: absolute error <= ``2**-(s + 1)``.  Codes are
bit-packed at the width the layer needs.

"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..bits import get_field, pack_fields

#: mantissa bits of the ``float`` value code: relative error <= 2**-20 = 9.54e-7 (bound: 1e-6)
FLOAT_MANTISSA_BITS = 19
#: scale of the ``fixed`` value code: absolute error <= 2**-30 = 9.31e-10 (bound: 1e-9)
FIXED_SCALE_BITS = 29
FLOAT_CODE, FIXED_CODE = "float", "fixed"


@numba.njit(cache=True, nogil=True)
def _float_parts(values, m):
    """Rounded ``(exponent int64[n], mantissa uint64[n])`` of non-negative finite normal values (0 -> exponent
    -2**31); returns also the index of the first invalid value or -1."""
    n = values.shape[0]
    exps = np.empty(n, np.int64)
    mants = np.empty(n, np.uint64)
    drop = np.uint64(52 - m)
    half = np.uint64(1) << (drop - np.uint64(1))
    bad = -1
    raw = values.view(np.uint64)
    for i in range(n):
        v = values[i]
        if v == 0.0:
            exps[i] = -(1 << 31)
            mants[i] = 0
            continue
        bits = raw[i]
        e = np.int64((bits >> np.uint64(52)) & np.uint64(0x7FF))
        if not (v > 0.0) or e == 0 or e == 0x7FF:
            if bad < 0:
                bad = i
            exps[i] = 0
            mants[i] = 0
            continue
        q = ((bits & np.uint64((1 << 52) - 1)) + half) >> drop
        if q >> np.uint64(m):
            q = np.uint64(0)
            e += 1
        exps[i] = e - 1023
        mants[i] = q
    return exps, mants, bad


def encode_values(values: np.ndarray, code: str) -> tuple[np.ndarray, int, int]:
    """``(words uint64[...], width, base)``: ``values`` (``float64[n]``) quantised by ``code`` and bit-packed.

    ``base`` is the layer's smallest binary exponent (``float``) or smallest code (``fixed``)."""
    values = np.ascontiguousarray(values, np.float64)
    if code == FLOAT_CODE:
        m = FLOAT_MANTISSA_BITS
        exps, mants, bad = _float_parts(values, m)
        if bad >= 0:
            raise ValueError(f"value {values[bad]!r} (index {bad}) is not a non-negative finite normal number")
        nonzero = values != 0
        base = int(exps[nonzero].min()) if nonzero.any() else 0
        codes = np.where(nonzero, ((exps - base + 1).astype(np.uint64) << np.uint64(m)) | mants, np.uint64(0))
    elif code == FIXED_CODE:
        if values.size and not (np.isfinite(values).all() and values.min() >= 0.0 and values.max() <= 1.0):
            raise ValueError("fixed-point values must be probabilities in [0, 1]")
        raw = np.floor(values * float(1 << FIXED_SCALE_BITS) + 0.5).astype(np.uint64)
        base = int(raw.min()) if raw.size else 0
        codes = raw - np.uint64(base)
    else:
        raise ValueError(f"unknown value code {code!r}; known: {FLOAT_CODE}, {FIXED_CODE}")
    width = int(codes.max()).bit_length() if codes.size else 0
    return pack_fields(codes, width), width, base


@numba.njit(cache=True, inline="always")
def decode_value(c, is_float, base):
    """Value of one code (see :func:`encode_values`)."""
    if is_float:
        if c == 0:
            return 0.0
        m = FLOAT_MANTISSA_BITS
        e = np.int64(c >> np.uint64(m)) - 1 + base
        q = c & np.uint64((1 << m) - 1)
        return math.ldexp(1.0 + float(q) / float(1 << m), e)
    return float(c + np.uint64(base)) / float(1 << FIXED_SCALE_BITS)


@numba.njit(cache=True, nogil=True)
def _decode_all(words, n, width, is_float, base):
    out = np.empty(n, np.float64)
    for i in range(n):
        out[i] = decode_value(get_field(words, i, width), is_float, base)
    return out


def decode_values(words: np.ndarray, n: int, width: int, code: str, base: int) -> np.ndarray:
    """``float64[n]``: the values of :func:`encode_values`'s output."""
    return _decode_all(words, n, width, code == FLOAT_CODE, base)


def value_error_bound(code: str) -> tuple[float, float]:
    """``(relative, absolute)`` error bound of a value code."""
    if code == FLOAT_CODE:
        return 2.0 ** -(FLOAT_MANTISSA_BITS + 1), 0.0
    return 0.0, 2.0 ** -(FIXED_SCALE_BITS + 1)


def value_code_for(objective: str) -> str:
    """``float`` for the score objective (relative bound), ``fixed`` for ``tile:K`` probabilities."""
    return FLOAT_CODE if objective == "score" else FIXED_CODE
