"""Pointwise convolutions (1x1 kernels, stride 1, no padding) as their one matrix product, straight from the
layer's arrays.

`convolution.conv_forward` computes such a layer as this very product, after working out the output geometry,
the kernel offsets that reach the input, the padding and the fast paths that never take a 1x1 kernel. On the
squeeze-excite layers of mobile networks (1x1 maps, a few hundred channels) that work took three times as long
as the product (about 25 us against 9). Same product, same call: the same bits."""
from __future__ import annotations

import math

import numpy as np

from .blas import matmul

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))  # computed in their own type: no conversion


def attributes_allow(op) -> bool:
    """Strides of 1 and no explicit padding (a 1x1 kernel then needs none whatever auto_pad says)."""
    return all(s == 1 for s in op.strides) and not any(op.pads_begin) and not any(op.pads_end)


def product(x: np.ndarray, w: np.ndarray, groups: int, out_dtype) -> np.ndarray | None:
    """x [N, C, *D] convolved with w [O, C, 1, ...] (groups 1) or [G, O/G, C/G, 1, ...] -> [N, O, *D], or None
    where conv_forward would not compute it as one product: a kernel larger than 1x1, another type, an empty
    tensor, or one input channel per group with up to 4 outputs each (its depthwise sums)."""
    spatial = x.ndim - 2
    if spatial < 1 or x.dtype != w.dtype or x.dtype not in _FLOATS or out_dtype != x.dtype or \
            any(k != 1 for k in w.shape[-spatial:]):
        return None
    n, channels = x.shape[:2]
    out_channels = w.shape[0] * (w.shape[1] if w.ndim > x.ndim else 1)
    positions = math.prod(x.shape[2:])
    if not groups or channels % groups or out_channels % groups:
        return None
    in_per_group, out_per_group = channels // groups, out_channels // groups
    if in_per_group == 0 or n * out_channels * positions == 0 or (in_per_group == 1 and out_per_group <= 4):
        return None
    weights = w.reshape(groups, out_per_group, in_per_group)
    result = np.empty((n, groups, out_per_group, positions), dtype=x.dtype)
    matmul(weights, x.reshape(n, groups, in_per_group, positions), out=result)
    return result.reshape(n, out_channels, *x.shape[2:])
