"""Depthwise 2D convolution with stride 1: one einsum per block of channels, written straight into the output.

Per kernel column j, a copy of the input shifted by j * dw columns, with the padding applied and cropped to the
output's width: cols[j][r, q] = padded[r, q + j * dw]. In these copies the output position (y, q) and kernel row
i read cols[j][y + i * dh, q], that is the flattened position y * Wo + q plus i * dh * Wo: every kernel offset
lies a fixed stride away from the flattened output position, so one einsum over a strided view of the copies
sums all of them (multiply-adds fused along the flattened output) and writes the output block itself. Unlike the
copies over the padded width (convolution.depthwise_columns), nothing is padded beforehand and no cropping copy
follows: two passes over the tensor fewer. The copies of a block of channels stay in the L2 cache; the zeros of
the padding are written once, where every block leaves them.

Same products and the same summation order as depthwise_columns (the einsum over the kernel rows and columns of
each output position): the results are identical.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

BLOCK_BYTES = 1 << 19  # the column copies of a block of channels (measured, one thread: 512 KiB-1 MiB best)
FEW_POSITIONS = 256    # outputs at most this large (16x16) go channels-last when depthwise_nhwc takes them


def usable(kernel, strides) -> bool:
    return len(kernel) == 2 and strides[0] == strides[1] == 1


def depthwise_direct(x, begins, w, dilations, out, view, reserve):
    """view [N, G, Og, Ho, Wo] = the stride-1 depthwise convolution of x [N, G, H, W] with w [G, Og, 1, kh, kw];
    `begins` are the pads before each axis (negative: a crop); view C-contiguous (the einsum writes into it)."""
    flat = view.reshape(*view.shape[:3], -1)
    if not np.shares_memory(flat, view):
        raise ValueError("depthwise_direct writes into a C-contiguous output only")
    n, groups, out_per_group = view.shape[:3]
    height, width = x.shape[2:]
    kh, kw = w.shape[3:]
    dh, dw = dilations
    ho, wo = out
    top, left = begins
    rows = ho + (kh - 1) * dh
    per_channel = kw * rows * wo * view.itemsize
    block = max(1, min(groups, BLOCK_BYTES // per_channel))
    reserve(block * per_channel, "depthwise column buffers")
    cols = np.zeros((block, kw, rows, wo), view.dtype)
    # padded row r is input row r - top; copy j at column q is input column q + j * dw - left
    r0, r1 = max(0, top), min(rows, top + height)
    spans = [(max(0, left - j * dw), min(wo, left + width - j * dw)) for j in range(kw)]
    weights = w[:, :, 0]  # [G, Og, kh, kw]
    item = view.itemsize
    for b in range(n):
        for g0 in range(0, groups, block):
            g1 = min(groups, g0 + block)
            count = g1 - g0
            copies = cols[:count]
            for j, (q0, q1) in enumerate(spans):
                if r1 > r0 and q1 > q0:
                    copies[:, j, r0:r1, q0:q1] = x[b, g0:g1, r0 - top:r1 - top, q0 + j * dw - left:q1 + j * dw - left]
            pitch = copies.strides
            window = as_strided(copies, (count, ho * wo, kh, kw), (pitch[0], item, dh * wo * item, pitch[1]),
                                writeable=False)
            np.einsum("gpab,goab->gop", window, weights[g0:g1], out=flat[b, g0:g1])
    return view
