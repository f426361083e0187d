"""Depthwise 2D convolution as matrix products, for kernels wide enough that BLAS beats per-offset sums.

Per channel, the output width is cut into tiles of `tile` columns. A tile of output row y gathers input
rows y*sh + i*dh (i < kh) over `span` = (tile-1)*sw + (kw-1)*dw + 1 input columns, and the weights of
kernel row i map those columns to the tile's outputs through a banded (Toeplitz) matrix
band[i*tile + x, x*sw + j*dw] = w[i, j]. So one matmul per channel, band [kh*tile, span] @ tiles
[span, rows*tiles], gives every kernel row's partial sums for every input row and tile, and the output is
the sum over i of those partials shifted by i*dh rows (kh additions instead of kh*kw products and sums).
The band holds span/kw times more products than the convolution needs; BLAS more than makes up for it.
"""
from __future__ import annotations

import numpy as np

from .blas import matmul

TILE = 8                      # output columns per tile
BLOCK_BYTES = 1 << 20         # the per-block buffers (tiles, partial sums) of a block of channels


def usable(x_dtype, kernel, strides, out) -> bool:
    """Where it beats the per-offset sums (measured, one thread): 2D float convolutions with stride 1
    along the width, kernels at least 5 wide and outputs at least 28 wide."""
    return x_dtype.kind == "f" and len(kernel) == 2 and kernel[1] >= 5 and strides[1] == 1 and out[1] >= 28


def band_matrices(w, strides, dilations, tile):
    """w [G, Og, 1, kh, kw] -> [G, Og, kh*tile, span] with band[.., i*tile + x, x*sw + j*dw] = w[.., i, j]."""
    groups, out_per_group, _, kh, kw = w.shape
    span = (tile - 1) * strides[1] + (kw - 1) * dilations[1] + 1
    band = np.zeros((groups, out_per_group, kh, tile, span), w.dtype)
    i, j, x = np.meshgrid(np.arange(kh), np.arange(kw), np.arange(tile), indexing="ij")
    band[:, :, i, x, x * strides[1] + j * dilations[1]] = w[:, :, 0, i, j]
    return band.reshape(groups, out_per_group, kh * tile, span), span


def depthwise_gemm(padded, w, strides, dilations, out, view, reserve):
    """view [N, G, Og, Ho, Wo] = the depthwise convolution of padded [N, G, >= Hneed, Wp] (pads applied;
    columns beyond Wp read as zeros) with w [G, Og, 1, kh, kw]."""
    n, groups, out_per_group = view.shape[:3]
    kh, (sh, sw), dh = w.shape[3], strides, dilations[0]
    ho, wo = out
    tiles = -(-wo // TILE)
    band, span = band_matrices(w, strides, dilations, TILE)
    reserve(band.nbytes, "depthwise band matrices")
    rows = (ho - 1) * sh + (kh - 1) * dh + 1
    width = (tiles - 1) * TILE * sw + span
    itemsize = view.itemsize
    per_channel = itemsize * (rows * width + span * rows * tiles
                              + out_per_group * (kh * TILE * rows * tiles + TILE * ho * tiles))
    block = max(1, min(groups, BLOCK_BYTES // per_channel))
    reserve(block * per_channel, "depthwise tile buffers")
    source = np.zeros((block, rows, width), view.dtype)  # the input rows read, zero beyond the input
    columns = np.empty((block, 1, span, rows * tiles), view.dtype)
    partial = np.empty((block, out_per_group, kh, TILE, rows, tiles), view.dtype)
    acc = np.empty((block, out_per_group, TILE, ho, tiles), view.dtype)
    copy_width = min(width, padded.shape[3])
    full = (tiles - 1) * TILE if wo % TILE else tiles * TILE  # output columns in whole tiles
    for b in range(n):
        for g0 in range(0, groups, block):
            g1 = min(groups, g0 + block)
            count = g1 - g0
            src = source[:count]
            src[:, :, :copy_width] = padded[b, g0:g1, :rows, :copy_width]
            item = src.strides
            tiled = np.lib.stride_tricks.as_strided(src, (count, span, rows, tiles),
                                                    (item[0], item[2], item[1], TILE * sw * item[2]))
            cols = columns[:count]
            np.copyto(cols[:, 0].reshape(count, span, rows, tiles), tiled)
            part = partial[:count]
            matmul(band[g0:g1], cols, out=part.reshape(count, out_per_group, kh * TILE, rows * tiles))
            a = acc[:count]
            last = (ho - 1) * sh + 1
            if kh == 1:
                a[...] = part[:, :, 0, :, 0:last:sh]
            else:
                np.add(part[:, :, 0, :, 0:last:sh], part[:, :, 1, :, dh:dh + last:sh], out=a)
                for i in range(2, kh):
                    a += part[:, :, i, :, i * dh:i * dh + last:sh]
            target = view[b, g0:g1]  # [count, Og, Ho, Wo]; acc is [count, Og, tile x, Ho, tiles]
            target[..., :full].reshape(count, out_per_group, ho, full // TILE, TILE)[...] = \
                a[..., :full // TILE].transpose(0, 1, 3, 4, 2)
            if full < wo:
                target[..., full:] = a[:, :, :wo - full, :, tiles - 1].transpose(0, 1, 3, 2)
    return view
