"""Implicit GEMM for dense 2D convolutions over large maps: one product per kernel offset, no column buffer.

The padded input is split into its stride phases (per axis, padded positions r, r + s, r + 2s, ...; stride 1:
the padded input itself), each flattened per channel. Kernel offset o reads, for output position p, phase
(o * d) % s at (o * d) // s + p along each axis, so over the flattened phase the window of the offset is one
contiguous run per channel: a [C, positions] matrix whose rows are a phase's length apart, which the BLAS
reads in place. The result is the sum over offsets of w[:, :, o] @ window(o), each product accumulated into
it by the BLAS (blas_accumulate), computed on the phase's pitch (positions between the rows included) and
cropped once. Against im2col this saves writing and reading back the column buffer (kernel size times the
input); the products have only C terms each, which costs more than that saves on small maps (see `usable`).

The sums run offset by offset (the plain kernel's products sum channel by channel within offsets): the same
terms in another order, and every output sums exactly the plain definition's terms, so inf and NaN spread
as there."""
from __future__ import annotations

import itertools
import math

import numpy as np

from . import blas_accumulate

MIN_CHANNELS = 32       # input channels per group at least: each product sums this many terms
MAX_OUT_CHANNELS = 128  # output channels per group at most: each product reads and writes the whole result
MIN_POSITIONS = 700     # output positions at least
# Measured per layer (one thread, CPU time, 3x3 layers, against im2col): 64 -> 64 channels over 56x56 0.55x
# the time, 112x112 0.65x, 128 -> 128 over 28x28 0.8x, 96 -> 96 over 30x30 0.9x; not taken: 256 -> 256
# over 28x28 1.07x, 14x14 1.3x, stride 2 (64 -> 128 over 56x56, 128 -> 256 over 28x28) 1.0-1.3x.


def usable(x, w, strides, out):
    """x [N, C, H, W], w [G, Og, Cg, kh, kw] in the compute type."""
    return x.ndim == 4 and x.dtype.kind == "f" and blas_accumulate.available(x.dtype) and \
        all(s == 1 for s in strides) and w.shape[2] >= MIN_CHANNELS and w.shape[1] <= MAX_OUT_CHANNELS and \
        math.prod(w.shape[3:]) > 1 and math.prod(out) >= MIN_POSITIONS


def tap_weights(w):
    """w [G, Og, Cg, *K] -> [*K, G, Og, Cg], contiguous: each offset's weights a matrix the BLAS reads."""
    spatial = w.ndim - 3
    return np.ascontiguousarray(np.moveaxis(w, (0, 1, 2), (spatial, spatial + 1, spatial + 2)))


def phase_reach(out, kernel, strides, dilations) -> list[int]:
    """Along each axis, how many positions of one stride phase the windows of `out` positions read."""
    return [o + ((k - 1) * d) // s for o, k, d, s in zip(out, kernel, dilations, strides)]


def _phase_ranges(phase, begin, stride, reach, size):
    """Along one axis: (first, end) phase positions j holding x (padded position phase + stride * j is x
    position phase + stride * j - begin), and the x slice they read; None when no position does."""
    first = max(0, -((phase - begin) // stride))
    end = min(reach, -((phase - begin - size) // stride))
    if end <= first:
        return None
    start = phase + stride * first - begin
    return (first, end), slice(start, start + stride * (end - first - 1) + 1, stride)


class Phases:
    """The padded input split into its stride phases, flattened: `planes` [N, phases, G, Cg, size] (zeros
    where the padding is and past the plane, where the last offset's run reads); per kernel offset (in
    itertools.product order, `offsets`) `taps[j]` = (phase index, start of its run); the runs are `length` long (whole
    rows of the phases' pitch, `reach` their dims)."""

    def __init__(self, x, kernel, strides, dilations, begins, out, groups, reserve, what):
        n = x.shape[0]
        self.offsets = list(itertools.product(*(range(k) for k in kernel)))
        positions = [[o * d for o, d in zip(offs, dilations)] for offs in self.offsets]
        self.reach = phase_reach(out, kernel, strides, dilations)
        pitch = [math.prod(self.reach[i + 1:]) for i in range(len(self.reach))]
        keys = sorted({tuple(p % s for p, s in zip(pos, strides)) for pos in positions})
        self.taps = [(keys.index(tuple(p % s for p, s in zip(pos, strides))),
                      sum((p // s) * pt for p, s, pt in zip(pos, strides, pitch))) for pos in positions]
        self.length = out[0] * pitch[0]
        size = max(start for _, start in self.taps) + self.length
        reserve(n * len(keys) * x.shape[1] * size * x.itemsize, what)
        self.planes = np.zeros((n, len(keys), groups, x.shape[1] // groups, size), x.dtype)
        for index, key in enumerate(keys):
            grid = self.planes[:, index, :, :, :math.prod(self.reach)].reshape(n, x.shape[1], *self.reach)
            ranges = [_phase_ranges(r, b, s, m, dim) for r, b, s, m, dim in zip(key, begins, strides, self.reach,
                                                                                 x.shape[2:])]
            if None not in ranges:
                grid[(slice(None), slice(None), *(slice(*r[0]) for r in ranges))] = \
                    x[(slice(None), slice(None), *(r[1] for r in ranges))]

    def crop(self, products, out):
        """products [..., length] on the phases' pitch -> [..., *out]."""
        grid = products.reshape(*products.shape[:-1], out[0], *self.reach[1:])
        return grid[(Ellipsis, slice(None), *(slice(0, o) for o in out[1:]))]


def forward(x, w, strides, dilations, begins, out, reserve, cache=None):
    """x [N, G*Cg, *D], w [G, Og, Cg, *K] -> [N, G*Og, *out] (see the module docstring)."""
    n = x.shape[0]
    groups, out_per_group, in_per_group, *kernel = w.shape
    taps = None if cache is None else cache.get("implicit")
    if taps is None:
        taps = tap_weights(w)
        if cache is not None:
            cache["implicit"] = taps
    phases = Phases(x, kernel, strides, dilations, begins, out, groups, reserve, "implicit convolution phases")
    length = phases.length
    reserve(groups * out_per_group * length * x.itemsize, "implicit convolution products")
    products = np.empty((groups, out_per_group, length), x.dtype)
    result = np.empty((n, groups, out_per_group, *out), x.dtype)
    for b in range(n):
        for g in range(groups):
            for j, (offs, (phase, start)) in enumerate(zip(phases.offsets, phases.taps)):
                blas_accumulate.accumulate(taps[offs][g], phases.planes[b, phase, g, :, start:start + length],
                                           products[g], first=j == 0)
        result[b] = phases.crop(products, out)
    return result.reshape(n, groups * out_per_group, *out)
