"""Sums over the trailing axes of float data as one matrix-vector product with a vector of ones (the squeeze-excite
global average pools of mobile networks: ReduceMean over H, W of [1, C, H, W]).

np.sum over several axes makes NumPy's iterator step through every row with a pairwise sum of its own: about
0.1 us per row, 20 us for 576 channels of 7x7, where np.einsum("ij->i") sums the rows with vector accumulators
in a third to a quarter of the time, and the BLAS's matrix-vector product (each row's dot product with ones, its
vector accumulators summed at the end) in another 0.6-0.75 of einsum's (measured, one thread, 96-1152 rows of
49-12544). Another summation order: within rounding of the
pairwise sums (relative error ~1e-7 on these shapes against float64), the same kind of order as OpenVINO's CPU
plugin (vector lanes, each summed in sequence); rows are capped at MAX_ROW elements so that the sequential
lanes' error bound stays small. docs/semantics.md, "Reductions"."""
from __future__ import annotations

import math

import numpy as np

from .blas import matmul

MAX_ROW = 1 << 14  # elements per row at most (a 112x112 map)
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def trailing_sums(x: np.ndarray, axes: tuple) -> np.ndarray | None:
    """x summed over `axes` (sorted, unique) when they are x's last axes and x is C-contiguous f32/f64 with rows
    of 1..MAX_ROW elements: an array of shape x.shape[:-len(axes)] in x's dtype; else None."""
    lead = x.ndim - len(axes)
    if x.dtype not in _FLOATS or not x.flags.c_contiguous or tuple(axes) != tuple(range(lead, x.ndim)):
        return None
    length, rows = math.prod(x.shape[lead:]), math.prod(x.shape[:lead])
    if not 0 < length <= MAX_ROW or rows == 0:
        return None
    return matmul(x.reshape(rows, length), np.ones(length, x.dtype)).reshape(x.shape[:lead])


def sum_over(x: np.ndarray, axes: tuple) -> np.ndarray:
    """x summed over `axes` in x's dtype: by rows (trailing_sums) where it applies, else np.sum."""
    rows = trailing_sums(x, axes)
    return np.sum(x, axis=axes, dtype=x.dtype) if rows is None else rows
