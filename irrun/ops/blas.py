"""Matrix products whose bits do not depend on how many threads compute them.

OpenBLAS (NumPy's wheels) splits a product between its threads in ways that change the last bits of the result
with the thread count (measured, tests/test_blas_bits.py): on AVX-512 kernels an f32 product summing more than 448
terms unless their count is a multiple of 32, and matrix-vector products; on AVX2 kernels
(OPENBLAS_CORETYPE=Haswell) most products, from K = 24 on; f64 products everywhere. So when irrun chooses the
thread count (engine/blas_threads.py; the user set none), OpenBLAS runs on one thread and `matmul` does the
splitting itself, in a way fixed by the shapes alone: a large product is cut into up to MAX_CHUNKS blocks of output
columns (or rows), each one single-threaded BLAS call, and `workers` threads take the blocks in turn. One worker
or several, quiet machine or busy, the same calls compute the same blocks, so the bits are the same; and a worker
that loses its core only delays the blocks it holds, where BLAS threads would wait for it at every product.
Every product in the ops goes through `matmul` (or blas_accumulate.accumulate, whose
products are split alike).

The blocks are computed on one worker too: there, one call would be 5-8% faster on the zoo's products (issue 23,
measured), and it gives the blocks' bits on the AVX-512 f32 kernel, but not on the AVX2 one (OPENBLAS_CORETYPE=
Haswell: 292 of 320 f32 cases differ) nor in f64, so one worker and two would no longer agree there."""
from __future__ import annotations

import concurrent.futures
import os

import numpy as np

CHUNK_WORK = 1 << 23  # multiply-adds below which a product is one call
MIN_CHUNK = 128  # output columns (or rows) per block at least
MAX_CHUNKS = 4  # each block costs a call (3-8% of a product's one-thread time at most measured, 8 blocks 3-20%)
_BLAS_TYPES = {np.dtype(t) for t in (np.float32, np.float64, np.complex64, np.complex128)}
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
FEW_ROWS, WIDE = 64, 192  # a product of 2..FEW_ROWS rows with inner and columns of WIDE or more: computed transposed


class _Workers:
    """The threads products run on (set by the engine's thread policy; until then products are not split, as
    when the user chose the BLAS's thread count) and the pool holding the extra ones."""
    count = 1
    split = False
    pool = None
    pid = None


def set_workers(count: int) -> None:
    _Workers.count = max(1, int(count))
    _Workers.split = True


def workers() -> int:
    return _Workers.count


def matmul(a, b, out=None):
    """np.matmul(a, b, out=out), split into blocks fixed by the shapes once the engine chose the thread count
    (`out` must not overlap a or b)."""
    if _few_rows_times_wide(a, b):
        transposed = matmul(b.T, a.T).T
        if out is None:
            return np.ascontiguousarray(transposed)
        out[...] = transposed
        return out
    blocks = _blocks(a, b) if _Workers.split else None
    if blocks is None:
        return np.matmul(a, b, out=out)
    if out is None:
        shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
        out = np.empty(shape, dtype=np.result_type(a, b))
    run_all(_block_calls(a, b, out, blocks))
    return out


def _few_rows_times_wide(a, b) -> bool:
    """A product of a few rows (FEW_ROWS at most, two at least: one row is a matrix-vector product) and a wide
    matrix, which OpenBLAS computes faster transposed, as (b^T a^T)^T: its kernels pack the wide operand for every
    call when it is the second one. Measured at one thread, interleaved (f32, inner and columns 192-3072): 2-16 rows
    0.45-0.6 of the time, 32 rows 0.6-0.75, 49 rows 0.72-0.81, 64 rows 0.76-0.97; from 128 rows on, no gain."""
    return (a.ndim == 2 and b.ndim == 2 and 2 <= a.shape[0] <= FEW_ROWS and min(a.shape[1], b.shape[1]) >= WIDE
            and a.dtype in _FLOATS and b.dtype == a.dtype)


def calls(a, b, out):
    """The (a, b, out) products `matmul` computes a @ b into out as: blocks fixed by the shapes once the engine
    chose the thread count, else the one product."""
    blocks = _blocks(a, b) if _Workers.split else None
    return [(a, b, out)] if blocks is None else _block_calls(a, b, out, blocks)


def _block_calls(a, b, out, blocks):
    axis, bounds = blocks
    if axis == -1:
        return [(a, b[..., low:high], out[..., low:high]) for low, high in zip(bounds[:-1], bounds[1:])]
    return [(a[..., low:high, :], b, out[..., low:high, :]) for low, high in zip(bounds[:-1], bounds[1:])]


def _blocks(a, b):
    """(axis, block bounds) for a product worth splitting, from the shapes alone; None: one call."""
    if a.ndim < 2 or b.ndim < 2 or np.result_type(a, b) not in _BLAS_TYPES:
        return None
    rows, inner, columns = a.shape[-2], a.shape[-1], b.shape[-1]
    batch = int(np.prod(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]), dtype=np.int64))
    if batch * rows * inner * columns < CHUNK_WORK:
        return None
    length, axis = (columns, -1) if columns >= rows else (rows, -2)
    count = min(MAX_CHUNKS, length // MIN_CHUNK)
    if count < 2:
        return None
    return axis, [length * i // count for i in range(count + 1)]


def _matmul_into(a, b, out):
    np.matmul(a, b, out=out)


def run_all(calls, product=_matmul_into):
    """product(a, b, out) for every (a, b, out) call, on up to `workers` threads taking them in turn."""
    pending = iter(calls)  # next() on a list iterator is atomic: each call is taken once
    errors = np.geterr()  # np.errstate holds for its own thread: the helpers take the caller's

    def drain():
        with np.errstate(**errors):
            for a, b, out in pending:
                product(a, b, out)
    helpers = [_pool().submit(drain) for _ in range(min(_Workers.count, len(calls)) - 1)]
    drain()
    for helper in helpers:
        helper.result()


def _pool():
    if _Workers.pool is None or _Workers.pid != os.getpid():  # a forked child has none of its parent's threads
        _Workers.pool = concurrent.futures.ThreadPoolExecutor(max(1, (os.cpu_count() or 2) - 1),
                                                              thread_name_prefix="irrun-matmul")
        _Workers.pid = os.getpid()
    return _Workers.pool

