"""Forward convolution from cache-sized column blocks (issue 11; 3D layers such as r3d_18's).

Strided layers are split into stride phases first (per axis, the input positions r, r + s, r + 2s, ... for
each residue r a kernel offset reads), so that every offset reads a stride-1 window of one phase. With the
spatial dims of a phase flattened, the window of offset `k` over output positions p0 .. p0 + span is the
run flat[start(k) + p0 : start(k) + p0 + span], so the columns of a block of positions for all input
channels and the offsets of one phase are one strided view, copied in one call. Blocks are sized to stay in
the cache with their products, instead of the column buffer of whole output rows the generic im2col writes
to memory and reads back (27 times the input for 3x3x3 kernels, 147 times for r3d_18's 3x7x7 stem). The
products are computed on the phases' pitch (positions between the rows included) and cropped once."""
from __future__ import annotations

import itertools
import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

from .blas import matmul
from .conv_implicit import phase_reach

BLOCK_BYTES = 1 << 21  # a block of columns (input channels x kernel offsets x positions) at most this large
MIN_SPAN = 32          # positions per block at least (short blocks would starve the matmul)


def block_positions(groups, ck, itemsize):
    """Positions per block."""
    return max(MIN_SPAN, BLOCK_BYTES // max(1, groups * ck * itemsize))


def worth(spatial, offsets, groups, out_per_group, ck, itemsize):
    """Whether a layer takes these blocks: 3D layers with more than one kernel offset whose blocks hold at
    least four times as many positions as output channels (each block reads all the weights again).
    Measured on r3d_18's layers (one thread, CPU time, generic im2col -> blocks): the 3x7x7 stem (3 -> 64
    channels, stride 1x2x2, 16x56x56 out) 129 -> 68 ms; 64 -> 64 channels at 16x56x56 240 -> 190-220 ms;
    not taken: 64 -> 128 channels 3x3x3 stride 2 (8x28x28 out) 63 -> 76 ms, 128 -> 128 at 8x28x28 93 -> 94 ms,
    256 at 4x14x14 39 -> 48 ms and 512 at 2x7x7 22 -> 27 ms (the weights re-read per block cost more)."""
    return spatial == 3 and offsets > 1 and block_positions(groups, ck, itemsize) >= 4 * out_per_group


def _axis_classes(size, stride, dilation):
    """Kernel offsets of one axis grouped by the stride phase they read: (phase, first offset, offset step,
    count, first start in the phase, start step)."""
    step = stride // math.gcd(stride, dilation)
    classes = []
    for first in range(min(step, size)):
        count = len(range(first, size, step))
        classes.append(((first * dilation) % stride, first, step, count, (first * dilation) // stride,
                        step * dilation // stride))
    return classes


def im2col_blocked(padded, w, strides, dilations, out, result, reserve):
    """padded [N, G*Cg, *D] (windows reach no further than D), w [G, Og, Cg, *K] in the compute type ->
    result [N, G, Og, prod(out)]."""
    n = padded.shape[0]
    groups, out_per_group, in_per_group, *kernel = w.shape
    itemsize = padded.itemsize
    reach = phase_reach(out, kernel, strides, dilations)
    combos = list(itertools.product(*(_axis_classes(k, s, d) for k, s, d in zip(kernel, strides, dilations))))
    phases = {}
    if all(s == 1 for s in strides):
        phases[(0,) * len(out)] = np.ascontiguousarray(padded)
        reach = list(padded.shape[2:])
    else:
        reserve(len({tuple(c[0] for c in combo) for combo in combos}) * n * padded.shape[1] * math.prod(reach)
                * itemsize, "convolution stride phases")
        for combo in combos:
            key = tuple(c[0] for c in combo)
            if key not in phases:
                phase = np.zeros((*padded.shape[:2], *reach), padded.dtype)
                source = padded[(slice(None), slice(None), *(slice(r, None, s) for r, s in zip(key, strides)))]
                source = source[(slice(None), slice(None), *(slice(0, m) for m in reach))]
                phase[(slice(None), slice(None), *(slice(0, m) for m in source.shape[2:]))] = source
                phases[key] = phase
    pitch = [math.prod(reach[i + 1:]) for i in range(len(reach))]
    last = sum((o - 1) * p for o, p in zip(out, pitch)) + 1  # from the first output position to the last
    ck = in_per_group * math.prod(kernel)
    weights = np.concatenate([w[(slice(None), slice(None), slice(None),
                                 *(slice(c[1], None, c[2]) for c in combo))].reshape(groups, out_per_group, -1)
                              for combo in combos], axis=2)
    span = min(block_positions(groups, ck, itemsize), last)
    products = np.empty((groups, out_per_group, out[0] * pitch[0]), w.dtype)
    reserve(products.nbytes + groups * ck * span * itemsize, "convolution column blocks")
    columns = np.empty((groups, ck, span), w.dtype)
    view = result.reshape(n, groups, out_per_group, *out)
    crop = (slice(None), slice(None), *(slice(0, o) for o in out))
    for b in range(n):
        for p0 in range(0, last, span):
            size = min(span, last - p0)
            row = 0
            for combo in combos:
                counts = [c[3] for c in combo]
                rows = in_per_group * math.prod(counts)
                source = phases[tuple(c[0] for c in combo)][b].reshape(groups, in_per_group, -1)
                start = p0 + sum(c[4] * p for c, p in zip(combo, pitch))
                # the last window of the last block ends inside the phase: no read past its end
                windows = as_strided(source[:, :, start:], (groups, in_per_group, *counts, size),
                                     (*source.strides[:2], *(c[5] * p * itemsize for c, p in zip(combo, pitch)),
                                      itemsize), writeable=False)
                np.copyto(columns[:, row:row + rows, :size].reshape(groups, in_per_group, *counts, size), windows)
                row += rows
            matmul(weights, columns[:, :, :size], out=products[:, :, p0:p0 + size])
        view[b] = products.reshape(groups, out_per_group, out[0], *reach[1:])[crop]
