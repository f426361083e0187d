"""MVN over one axis of an array that is not its last, in the array's own layout: what a LayerNorm of channels-last
data computes on the channels-first tensor it was transposed from (ConvNeXt's Transpose -> MVN over the last axis
-> Transpose back; irrun/engine/mvn_transposes.py fuses them into one step that calls `transposed_mvn`).

Over the channels axis of [outer, C, inner] data every pass is over whole rows of `inner` elements: the sums are
products with a row of ones (BLAS: y += x_c for each channel c, in channel order), the centring and the division
broadcast a row of `inner` means and deviations over the C rows. The same operations over the last axis of the
transposed copy broadcast a column over short rows of C (NumPy pays each row's loop setup: 2-3 times slower for
C = 40-96) and need the transposing copies besides. Another summation order than the last-axis kernel
(normalization.mvn): within the rounding of C-term sums of O(1) data (relative 1e-7 * sqrt(C)), as the oracle
tests and the old-against-new tests in tests/test_mvn_transposes.py show."""
from __future__ import annotations

import math

import numpy as np

from .blas import matmul
from .normalization import ROWS_BLOCK, _Normalise, _work, mvn


def transposed_mvn(x, axis: int, order, normalize_variance, eps, inside_sqrt, out=None, view=False) -> np.ndarray:
    """np.transpose(mvn(x, (axis,), ...), order) as a C-contiguous array, or with `view` as that transposed view
    of the result in x's layout; into `out` if given (a C-contiguous f32/f64 x's shape, for an identity order
    or `view`; out may be x itself)."""
    if axis == x.ndim - 1 or x.size == 0:
        result = mvn(x, (axis,), normalize_variance, eps, inside_sqrt, out)
    else:
        work = np.ascontiguousarray(_work(x))
        result = np.empty(work.shape, work.dtype) if out is None else out
        _over_axis(work, axis, _Normalise(normalize_variance, work.dtype.type(eps), inside_sqrt), result)
        result = result.astype(x.dtype, copy=False)
    if list(order) != list(range(x.ndim)):
        result = np.transpose(result, order) if view else np.ascontiguousarray(np.transpose(result, order))
    return result


def _over_axis(work, axis, normalise, out) -> None:
    """MVN over `axis` of C-contiguous `work` into `out`, a block of at most about ROWS_BLOCK elements at a time
    (the squares are a temporary of a block's size; each column's results do not depend on the blocks)."""
    outer, count, inner = math.prod(work.shape[:axis]), work.shape[axis], math.prod(work.shape[axis + 1:])
    data, result = work.reshape(outer, count, inner), out.reshape(outer, count, inner)
    columns = min(inner, max(1, ROWS_BLOCK // count))
    slabs = max(1, ROWS_BLOCK // (count * columns))
    ones = np.ones((1, count), work.dtype)
    for first in range(0, outer, slabs):
        for start in range(0, inner, columns):
            block = np.s_[first:first + slabs, :, start:start + columns]
            _block(data[block], normalise, ones, result[block])


def _block(data, normalise, ones, out) -> None:
    count = out.dtype.type(data.shape[1])
    means = matmul(ones, data)
    means /= count
    np.subtract(data, means, out=out)
    if normalise.normalize_variance:
        variance = matmul(ones, np.square(out))
        variance /= count
        out /= normalise.divisor(variance)
