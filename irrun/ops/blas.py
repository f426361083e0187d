"""Matrix products whose bits do not depend on how many threads the BLAS runs.

OpenBLAS (NumPy's wheels) gives a matrix-matrix product (GEMM) the same bits on any number of threads: each thread
computes whole blocks of the output. NumPy hands a product with a single row or column, or a 1-D operand, to the
matrix-vector kernels instead (GEMV, DOT), which can split one output's sum between threads: measured,
[1, 2048] @ [2048, 1000] and [197, 4096] @ [4096, 1] change in the last bits between one and two threads, while
415 GEMM shapes from [2, 3] @ [3, 2] to [1024, 4096] @ [4096, 1000], transposed or not, did not
(tests/test_blas_bits.py). `matmul` runs such products on one thread, so the engine may fit the thread count to
the machine's load (engine/blas_threads.py) without changing a result. Every product in the ops goes through it
(an optimised einsum through `einsum`).

The count is read and set through OpenBLAS's own functions, found in the library this process has loaded (a
microsecond each); with another BLAS they are not found and products run as NumPy runs them."""
from __future__ import annotations

import contextlib
import ctypes
import functools
import os

import numpy as np

GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads",
           "openblas_get_num_threads64_", "openblas_get_num_threads")
SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
           "openblas_set_num_threads64_", "openblas_set_num_threads")


def matmul(a, b, out=None):
    """np.matmul(a, b, out=out), on one BLAS thread when NumPy would use a matrix-vector kernel."""
    if _vector_product(a, b):
        with one_thread():
            return np.matmul(a, b, out=out)
    return np.matmul(a, b, out=out)


def einsum(subscripts, *operands, optimize):
    """np.einsum; on one BLAS thread when optimised (its contractions may be matrix-vector products)."""
    if not optimize:
        return np.einsum(subscripts, *operands)
    with one_thread():
        return np.einsum(subscripts, *operands, optimize=optimize)


@contextlib.contextmanager
def one_thread():
    """OpenBLAS on one thread inside the block (nothing changes with another BLAS)."""
    getter, setter = openblas_function(GETTERS), openblas_function(SETTERS)
    count = int(getter()) if getter is not None and setter is not None else 1
    if count > 1:
        setter(ctypes.c_int(1))
    try:
        yield
    finally:
        if count > 1:
            setter(ctypes.c_int(count))


def _vector_product(a, b) -> bool:
    a_rows = a.shape[-2] if a.ndim > 1 else 1
    b_columns = b.shape[-1] if b.ndim > 1 else 1
    return a_rows == 1 or b_columns == 1


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
