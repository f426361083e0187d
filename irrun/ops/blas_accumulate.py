"""out += a @ b through the BLAS's own accumulation (GEMM with beta = 1), reading strided matrices in place.

NumPy's matmul always writes a fresh product: summing several products needs a temporary and an add per
product, and an operand whose rows are not consecutive in memory is passed as it is only when NumPy finds it
BLAS-compatible. Here the GEMM of the OpenBLAS this process has loaded (NumPy's wheels: the ILP64 symbols
with the 64_ suffix) is called with any row stride (unit stride along each row) and beta = 1, so an implicit
GEMM (ops/conv_implicit.py) sums one product per kernel offset straight into its result. Without that
library, or for operands it cannot take, the same sum is a blas.matmul and an add.

Products are split as blas.matmul splits them (the same shape-fixed column blocks, taken in turn by the
engine's workers), so their bits do not depend on the thread count either."""
from __future__ import annotations

import ctypes
import functools
import os

import numpy as np

from . import blas

_ROW_MAJOR, _NO_TRANS = 101, 111
_GEMM_NAMES = {np.dtype(np.float32): ("scipy_cblas_sgemm64_", "cblas_sgemm64_"),
               np.dtype(np.float64): ("scipy_cblas_dgemm64_", "cblas_dgemm64_")}
_SCALARS = {np.dtype(np.float32): ctypes.c_float, np.dtype(np.float64): ctypes.c_double}


@functools.lru_cache(maxsize=None)
def openblas_function(names):
    """The first of `names` exported by the OpenBLAS loaded in this process (Linux), or None."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "openblas" in line.rsplit("/", 1)[-1].lower()}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            library = ctypes.CDLL(path, mode=os.RTLD_NOLOAD if hasattr(os, "RTLD_NOLOAD") else 0)
        except OSError:
            continue
        for name in names:
            function = getattr(library, name, None)
            if function is not None:
                return function
    return None


@functools.lru_cache(maxsize=None)
def _gemm(dtype):
    """The BLAS's GEMM for `dtype` with its argument types set, or None."""
    names = _GEMM_NAMES.get(dtype)
    function = None if names is None else openblas_function(names)
    if function is None:
        return None
    size, scalar, pointer = ctypes.c_int64, _SCALARS[dtype], ctypes.c_void_p
    function.restype = None
    function.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, size, size, size, scalar, pointer, size,
                         pointer, size, scalar, pointer, size]
    return function


def available(dtype) -> bool:
    """Whether products of this dtype accumulate inside the BLAS (else: a product and an add)."""
    return _gemm(np.dtype(dtype)) is not None


def _rows_ok(m):
    """A 2D matrix the BLAS reads in place: unit stride along rows, a row stride of whole elements."""
    item = m.itemsize
    return m.ndim == 2 and m.strides[1] == item and m.strides[0] % item == 0 and \
        m.strides[0] // item >= max(1, m.shape[1])


def accumulate(a, b, out, first=False):
    """out = a @ b when `first`, else out += a @ b; a [M, K], b [K, N], out [M, N] (not overlapping a or b),
    all of one float dtype."""
    if a.ndim != 2 or b.ndim != 2 or out.shape != (a.shape[0], b.shape[1]) or a.shape[1] != b.shape[0]:
        raise ValueError(f"accumulate: shapes {a.shape} @ {b.shape} -> {out.shape} do not fit")
    if out.size == 0:
        return
    if a.shape[1] == 0:
        if first:
            out[...] = 0
        return
    gemm = _gemm(out.dtype)
    if gemm is None or not (a.dtype == b.dtype == out.dtype and _rows_ok(a) and _rows_ok(b) and _rows_ok(out)):
        if first:
            blas.matmul(a, b, out=out)
        else:
            out += blas.matmul(a, b)
        return
    beta = 0.0 if first else 1.0
    item = out.itemsize
    blas.run_all(blas.calls(a, b, out), lambda x, y, z: gemm(_ROW_MAJOR, _NO_TRANS, _NO_TRANS, z.shape[0], z.shape[1],
                                               x.shape[1], 1.0, x.ctypes.data, x.strides[0] // item,
                                               y.ctypes.data, y.strides[0] // item, beta, z.ctypes.data,
                                               z.strides[0] // item))
