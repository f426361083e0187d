"""Depthwise convolution with the channels innermost, for many channels over few positions.

The input is copied once, transposed to [N, *spatial, C] with the padding applied; every output position
then reads its window as a strided view [N, *out, *kernel, C], and one einsum over it sums each position's
kernel offsets with the channels as the inner loop (contiguous in the input, the weights and the output:
fused multiply-adds, no temporaries, the output row in L1 while the offsets accumulate). Any stride and
dilation. Per-channel planes of a few hundred positions make NumPy's per-row loops short; a row of several
hundred channels keeps them long. The result is transposed back to [N, C, *out] once.
"""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

_OUT_AXES = "hwd"
_KERNEL_AXES = "abe"


def usable(groups, out_per_group, out, strides, offsets) -> bool:
    """Whether the channels-last einsum beats the per-channel sums of convolution.depthwise. Measured (one
    thread, CPU time) on the depthwise layers of MobileNet v2/v3, MnasNet, EfficientNet-B0, ConvNeXt,
    MobileViT and SSDlite: strided layers from 48 channels over up to 1,600 output positions (0.24-0.87x the
    time; 0.44x for 72 channels at 28x28 out); stride 1 from 80 channels over up to 28x28 with kernels
    larger than 3x3 (0.24-0.94x), for 3x3 from 128 channels over up to 20x20 (0.3-0.7x), and from 256
    (384 for 3x3) channels at any size (measured up to 20x20). Not taken, slower (the transposes cost more
    than the longer rows save): 64 channels at 56x56 out, stride 2 (1.4x), 96 at 56x56 7x7 (1.1x), 120 at
    40x40 5x5 (1.3x), 88 at 28x28 3x3 (1.3x), 16-48 channels anywhere with stride 1 (1.2-3.6x)."""
    if out_per_group != 1 or not 1 <= len(out) <= 3:
        return False
    positions = math.prod(out)
    if max(strides) > 1:
        return groups >= 48 and positions <= 1600
    if offsets > 9:
        return groups >= 80 and positions <= 784 or groups >= 256
    return groups >= 128 and positions <= 400 or groups >= 384


def depthwise_channels_last(x, begins, w, strides, dilations, out, view, reserve):
    """view [N, C, 1, *out] = the depthwise convolution of x [N, C, *D] with w [C, 1, 1, *K]; `begins`
    are the pads before each axis (negative: a crop)."""
    n, channels = x.shape[:2]
    kernel = w.shape[3:]
    spatial = len(out)
    needed = [(o - 1) * s + (k - 1) * d + 1 for o, s, k, d in zip(out, strides, kernel, dilations)]
    itemsize = view.itemsize
    reserve((math.prod(needed) + math.prod(out)) * n * channels * itemsize, "channels-last depthwise buffers")
    padded = _padded_channels_last(x, begins, needed, view.dtype)
    weights = np.ascontiguousarray(w[:, 0, 0].transpose(*range(1, spatial + 1), 0))  # [*K, C]
    pitch = padded.strides
    windows = as_strided(padded, (n, *out, *kernel, channels),
                         (pitch[0], *(s * p for s, p in zip(strides, pitch[1:-1])),
                          *(d * p for d, p in zip(dilations, pitch[1:-1])), itemsize), writeable=False)
    result = np.empty((n, *out, channels), view.dtype)
    o, k = _OUT_AXES[:spatial], _KERNEL_AXES[:spatial]
    np.einsum(f"n{o}{k}c,{k}c->n{o}c", windows, weights, out=result)
    view[:, :, 0] = result.transpose(0, spatial + 1, *range(1, spatial + 1))  # (transpose: no axis checks)
    return view


def _padded_channels_last(x, begins, needed, dtype):
    """x [N, C, *D] as [N, *needed, C]: zeros where the pads are, cropped where they are negative or the
    windows do not reach."""
    padded = np.zeros((x.shape[0], *needed, x.shape[1]), dtype)
    src, dst = [], []
    for b, size, dim in zip(begins, needed, x.shape[2:]):
        lo, hi = max(0, -b), min(dim, size - b)
        if hi <= lo:
            return padded
        src.append(slice(lo, hi))
        dst.append(slice(lo + b, hi + b))
    padded[(slice(None), *dst)] = x[(slice(None), slice(None), *src)].transpose(0, *range(2, x.ndim), 1)
    return padded
