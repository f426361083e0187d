"""Depthwise 2D convolution: einsums per block of channels over shifted copies, written straight into the output.

Per kernel column j, a copy of the input at the columns that column reads, with the padding applied and one
column per output column: cols[j][r, q] = padded[r, q * sw + j * dw]. With stride 1 along the height, output
position (y, q) and kernel row i read cols[j][y + i * dh, q], that is the flattened position y * Wo + q plus
i * dh * Wo: every kernel offset lies a fixed stride away from the flattened output position, so one einsum
over a strided view of the copies sums all of them (multiply-adds fused along the flattened output) and writes
the output block itself. With a stride sh > 1 along the height, the copies hold the padded rows by phase (rows
r * sh + phase, one phase after the other); the kernel rows i reading the same phase (i * dh) % sh form one
class, evenly spaced, which one einsum sums as above; the classes after the first are summed into a scratch
block and added.

Unlike the copies over the padded width (convolution.depthwise_columns, which 1D and 3D layers take), nothing
is padded beforehand and no cropping copy follows: two passes over the tensor fewer. (It replaced those
einsums for 2D, the stride phases' per-offset sums for strided 2D, and the banded matrix products of wide 2D
kernels: on the zoo's layers it takes 0.4-1.0x their time.) The copies of a block of
channels stay in the L2 cache; the zeros of the padding are written once, where every block leaves them.
With stride 1: the products and the summation order of depthwise_columns, identical results.

Where the time goes (issue 23, one thread): the einsums take 60-75% of it at stride 1 and about 30% strided,
at 0.2-0.3 ns per multiply-add whatever the operand order or layout (NumPy's einsum loops are built for the
baseline SIMD, SSE on x86-64, where the ufuncs dispatch to AVX-512; PyTorch takes 0.06-0.12 ns); the rest is
the copies, memory-bound. Measured and dropped: the copies as flat runs of the input for "same" layers (0.96-0.99x
the time), the activation after the layer applied to each block (1.00-1.13x), BLAS matrix-vector products per
kernel row (1.1-1.6x), the stride-1 einsums per stride phase (1.4-2.7x), one einsum output per kernel column
summed afterwards (up to 2x). Channels-last AVX-512 ufunc passes (issue 23: per kernel offset, np.multiply by
the offset's weights tiled along the row, then np.add, over blocks of Wo*C-long rows in L2, the stride phases
copied apart; at stride 1 the same results as this kernel): 1.1-3.2x the time on the zoo's layers (29 shapes,
total 1.8-2.0x); the passes alone, without the layout copies, 0.6-0.95x only on 32-96 channels at 112x112 and
144 at 56x56 strided, else 1.4-2.8x (0.37-0.9 ns per multiply-add: a ufunc pass costs 0.15-0.3 ns per element
on L2-resident data here, no faster than the einsum's fused multiply-add).
"""
from __future__ import annotations

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

BLOCK_BYTES = 1 << 20  # the buffers of a block of channels (measured, one thread: 512 KiB-1 MiB best)


def usable(kernel) -> bool:
    return len(kernel) == 2


def cedes_to_channels_last(groups, out) -> bool:
    """Whether a stride-1 layer that depthwise_nhwc would take goes there instead: few output positions per
    channel make the einsum's per-channel rows short (measured, one thread, 3x3 and 5x5: channels-last
    0.6-0.8x the time up to 16x16 from 128 channels and at 20x20 from 160-200; 1.2-1.4x from 24x24 on).
    Strided layers go there whenever it takes them."""
    positions = math.prod(out)
    return positions <= 256 or positions <= 400 and groups >= 160


def depthwise_direct(x, begins, w, strides, dilations, out, view, reserve):
    """view [N, G, Og, Ho, Wo] = the depthwise convolution of x [N, G, H, W] with w [G, Og, 1, kh, kw];
    `begins` are the pads before each axis (negative: a crop); view C-contiguous (the einsums write into it)."""
    flat = view.reshape(*view.shape[:3], -1)
    if not np.shares_memory(flat, view):
        raise ValueError("depthwise_direct writes into a C-contiguous output only")
    n, groups, out_per_group = view.shape[:3]
    kh, kw = w.shape[3:]
    sh, dh = strides[0], dilations[0]
    ho, wo = out
    classes = {}  # row phase -> the kernel rows reading it
    for i in range(kh):
        classes.setdefault(i * dh % sh, []).append(i)
    phase_rows = {phase: ho + rows[-1] * dh // sh for phase, rows in classes.items()}
    firsts = dict(zip(phase_rows, np.cumsum([0, *phase_rows.values()][:-1]).tolist()))
    positions = math.prod(out)
    itemsize = view.itemsize
    per_channel = (kw * sum(phase_rows.values()) * wo + out_per_group * positions * (len(classes) > 1)) * itemsize
    block = max(1, min(groups, BLOCK_BYTES // per_channel))
    reserve(block * per_channel, "depthwise column buffers")
    cols = np.zeros((block, kw, sum(phase_rows.values()) * wo), view.dtype)
    scratch = np.empty((block, out_per_group, positions), view.dtype) if len(classes) > 1 else None
    copies = _copies(x.shape[2:], begins, kw, strides, dilations, wo, phase_rows, firsts)
    weights = w[:, :, 0]  # [G, Og, kh, kw]
    for b in range(n):
        for g0 in range(0, groups, block):
            g1 = min(groups, g0 + block)
            count = g1 - g0
            block_cols = cols[:count]
            for j, first, rows, columns, source in copies:
                block_cols[:, j, first * wo:].reshape(count, -1, wo)[:, rows, columns] = x[(b, slice(g0, g1), *source)]
            for k, (phase, rows) in enumerate(classes.items()):
                period = rows[1] - rows[0] if len(rows) > 1 else 1
                start = (firsts[phase] + rows[0] * dh // sh) * wo
                pitch = block_cols.strides
                window = as_strided(block_cols[:, :, start:], (count, positions, len(rows), kw),
                                    (pitch[0], itemsize, period * dh // sh * wo * itemsize, pitch[1]),
                                    writeable=False)
                target = flat[b, g0:g1] if k == 0 else scratch[:count]
                np.einsum("gpab,goab->gop", window, weights[g0:g1, :, rows[0]:rows[-1] + 1:period], out=target)
                if k:
                    flat[b, g0:g1] += target
    return view


def _copies(dims, begins, kw, strides, dilations, wo, phase_rows, firsts):
    """What each block copies: (kernel column j, first row of the phase in the copies, the rows and columns of
    the copy written, the input's rows and columns read); the rest of the copies is padding, zero."""
    (height, width), (top, left), (sh, sw), dw = dims, begins, strides, dilations[1]
    copies = []
    for phase, count in phase_rows.items():
        # copy row h of the phase is padded row h * sh + phase, input row h * sh + phase - top
        h0, h1 = max(0, -((phase - top) // sh)), min(count, -((phase - top - height) // sh))
        for j in range(kw):
            # copy column q is input column q * sw + j * dw - left
            q0, q1 = max(0, -((j * dw - left) // sw)), min(wo, -((j * dw - left - width) // sw))
            if h1 > h0 and q1 > q0:
                source = (slice(h0 * sh + phase - top, (h1 - 1) * sh + phase - top + 1, sh),
                          slice(q0 * sw + j * dw - left, (q1 - 1) * sw + j * dw - left + 1, sw))
                copies.append((j, firsts[phase], slice(h0, h1), slice(q0, q1), source))
    return copies
