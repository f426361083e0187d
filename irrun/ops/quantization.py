"""FakeQuantize-1.

Values follow OpenVINO's reference kernel, element by element (the four range inputs broadcast onto X):
    x <= min(in_low, in_high)  -> out_low
    x >  max(in_low, in_high)  -> out_high
    else round((x - in_low) / (in_high - in_low) * (levels - 1)) / (levels - 1) * (out_high - out_low) + out_low
with every operation in the computing type: f32 for f32/f16/bf16 (f16 and bf16 are converted to f32 and
the result rounded back once), f64 for f64; `round` is nearbyint (half to even). For integer types
the reference computes in the integer type up to the rounding (truncating division, wrap-around) and
in double after it, then casts back (C truncation).
"""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError
from .arithmetic import c_cast, finish, work_dtype
from .attrs import Int
from .broadcasting import BroadcastMixin, auto_broadcast_attr, merge_into, pdpd_axis_attr
from .registry import Op, TensorInfo, op


def _ranges_onto(ranges, shape):
    """The four range inputs laid onto X's shape as OpenVINO's kernels read them.

    When each broadcasts onto X with numpy's rule, that is plain broadcasting. OpenVINO's shape inference
    also accepts layouts its kernels do not broadcast: a pdpd range placed elsewhere than at the end, or
    a numpy range with more dims than X. The reference kernel (and the CPU plugin, which agrees) then
    reads the ranges in blocks: X is cut into chunks of an 'inner stride'; each chunk starts at a range
    offset from right-aligned strides that skip every dim differing from X's, and inside the chunk a
    range either advances with X or stays put. That read pattern is reproduced here, index for index."""
    numpy_ok = True
    for value in ranges:
        try:
            numpy_ok &= np.broadcast_shapes(value.shape, shape) == tuple(shape)
        except ValueError:
            numpy_ok = False
    if numpy_ok:
        return ranges
    size = int(np.prod(shape, dtype=np.int64))
    if all(value.size == 1 for value in ranges):
        return [value.reshape(()) for value in ranges]
    stride_in, inner = size, []
    for value in ranges:
        own, stride_in = _inner_stride(size, shape, value.shape, stride_in)
        inner.append(own)
    flat = np.arange(size, dtype=np.int64)
    offset = (flat % stride_in) if stride_in else flat
    start = flat - offset
    coords = np.unravel_index(start, shape) if shape else ()
    bases = []
    for value in ranges:
        strides = _right_strides(shape, value.shape)
        base = np.zeros(size, dtype=np.int64)
        for coord, stride in zip(coords, strides):
            base += coord * stride
        bases.append(base)
    moving = [own > 1 for own in inner]
    if all(moving) or not any(moving) or moving == [True, True, False, False] \
            or moving == [False, False, True, True]:
        index = [base + offset if move else base for base, move in zip(bases, moving)]
    else:  # element by element; OpenVINO reads out_high at out_low's offset here
        coords = np.unravel_index(flat, shape)
        index = []
        for value in ranges:
            exact = np.zeros(size, dtype=np.int64)
            for coord, stride in zip(coords, _right_strides(shape, value.shape)):
                exact += coord * stride
            index.append(exact)
        index[3] = index[2]
    out = []
    for port, (value, where) in enumerate(zip(ranges, index), start=1):
        if size and (where.max() >= value.size):
            raise ExecutionError(f"OpenVINO would read range input {port} (shape {list(value.shape)}) out of "
                                 f"bounds for data shape {list(shape)}", rule="input.value", port=port)
        out.append(value.reshape(-1)[where].reshape(shape))
    return out


def _right_strides(shape, range_shape):
    """OpenVINO's compute_strides: right-aligned, a dim equal to X's gets the running stride, others 0."""
    strides, stride = [0] * len(shape), 1
    for i in range(len(shape)):
        if i < len(range_shape) and range_shape[-1 - i] == shape[-1 - i]:
            strides[-1 - i] = stride
            stride *= range_shape[-1 - i]
    return strides


def _inner_stride(size, shape, range_shape, current):
    """OpenVINO's get_inner_stride: (the range's inner block size, the updated chunk size)."""
    if not range_shape:
        return 1, min(current, size)
    last = range_shape[-1]
    for k in range(len(range_shape) - 1, -1, -1):
        dim = range_shape[k]
        if (last == 1 and dim > 1) or (last > 1 and dim == 1):
            idx = k + 1
            own = int(np.prod(range_shape[idx:], dtype=np.int64))
            lead = len(shape) - len(range_shape) + idx
            out_inner = int(np.prod(shape[max(lead, 0):], dtype=np.int64))
            return own, min(current, out_inner)
    count = int(np.prod(range_shape, dtype=np.int64))
    return count, current if last == 1 else min(current, count)


@op("FakeQuantize", 1)
class FakeQuantize1(BroadcastMixin, Op):
    levels = Int()
    auto_broadcast = auto_broadcast_attr()
    pdpd_axis = pdpd_axis_attr()
    num_inputs = (5, 5)

    def infer(self, inputs):
        data = inputs[0]
        merged = data.shape
        for port in range(1, 5):
            info = inputs[port]
            # OpenVINO does not check that the ranges have X's element type; irrun converts them to it
            merged = merge_into(merged, info.shape, self.broadcast_mode, self.pdpd_axis,
                                "range input does not broadcast onto data", port=port)
        return [TensorInfo(data.shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        et = out_infos[0].type
        ranges = _ranges_onto([np.asarray(inputs[port]) for port in range(1, 5)], x.shape)
        if et.is_float:
            return [finish(self._float(x, ranges, work_dtype(et)), et)]
        return [self._integer(x, ranges, et.storage)]

    def _float(self, x, ranges, work):
        x = x.astype(work, copy=False)
        in_low, in_high, out_low, out_high = (r.astype(work, copy=False) for r in ranges)
        steps = work.type(self.levels - 1)
        with np.errstate(all="ignore"):
            q = np.rint((x - in_low) / (in_high - in_low) * steps)
            y = q / steps * (out_high - out_low) + out_low
        low = x <= np.minimum(in_low, in_high)
        high = x > np.maximum(in_low, in_high)
        y = np.where(low, out_low, np.where(high, out_high, y))
        return np.broadcast_to(y, x.shape)

    def _integer(self, x, ranges, dtype):
        in_low, in_high, out_low, out_high = (r.astype(dtype, copy=False) for r in ranges)
        steps = np.asarray(self.levels - 1).astype(dtype)  # static_cast<T>(levels - 1)
        with np.errstate(all="ignore"):
            numerator = x - in_low
            denominator = in_high - in_low
            safe = np.where(denominator == 0, dtype.type(1), denominator)
            if dtype.kind == "i":
                quotient = np.abs(numerator) // np.abs(safe)
                quotient = np.where((numerator < 0) != (safe < 0), -quotient, quotient).astype(dtype)
            else:
                quotient = numerator // safe
            q = (quotient * steps).astype(np.float64)
            y = q / float(steps) * (out_high - out_low).astype(np.float64) + out_low.astype(np.float64)
        y = c_cast(y, dtype)
        low = x <= np.minimum(in_low, in_high)
        high = x > np.maximum(in_low, in_high)
        y = np.where(low, out_low, np.where(high, out_high, y))
        return np.broadcast_to(y, x.shape).astype(dtype)
