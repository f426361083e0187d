"""Max pooling: MaxPool-1/8/14 and AdaptiveMaxPool-8, and the window geometry the pooling ops share.

Kernels loop in Python over kernel offsets, never over elements."""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..errors import ExecutionError, ShapeError
from ..ir.types import ELEMENT_TYPES, lowest
from .attrs import Enum, Int, Ints, Type
from .registry import Op, TensorInfo, op
from .stricter import UNSIGNED, refuse
from .shapes import (as_index_array, numel, readable_value, refuse_unsigned_dilations, require_positive_steps,
                     require_rank, sizes_as_read)

AUTO_PADS = ("explicit", "valid", "same_upper", "same_lower", "notset")


# ---------------------------------------------------------------- window geometry

def pooling_geometry(spatial, kernel, strides, dilations, pads_begin, pads_end, auto_pad, rounding):
    """Output dims and the pads actually used, per spatial axis. A None dim stays None."""
    out, begins, ends = [], [], []
    for axis, dim in enumerate(spatial):
        # a negative step (a stricter-class error the checker infers past) as OpenVINO reads it: huge, unsigned
        k, s, d = kernel[axis], strides[axis] % UNSIGNED, dilations[axis] % UNSIGNED
        effective = (k - 1) * d + 1
        if auto_pad == "valid":
            pb = pe = 0
        elif auto_pad in ("same_upper", "same_lower"):
            if dim is None:
                out.append(None), begins.append(None), ends.append(None)
                continue
            total = max(0, (-(-dim // s) - 1) * s + effective - dim)
            small, large = total // 2, total - total // 2
            pb, pe = (small, large) if auto_pad == "same_upper" else (large, small)
        else:
            pb, pe = pads_begin[axis], pads_end[axis]
        begins.append(pb), ends.append(pe)
        if dim is None:
            out.append(None)
            continue
        padded = dim + pb + pe
        if effective > padded:
            raise ShapeError(
                f"kernel {k} with dilation {d} spans {effective}, more than the padded input {padded} "
                f"on spatial axis {axis}", rule="shape.kernel")
        if rounding == "floor":
            size = (padded - effective) // s + 1
        else:
            size = (padded - effective + s - 1) % UNSIGNED // s + 1  # OpenVINO's ceil, wrapping
            if rounding == "ceil_torch" and (size - 1) * s >= dim + pb:
                size -= 1
        out.append(size)
    return out, begins, ends


def check_pool_attributes(op_, rank, shape=None):
    if shape is not None and 0 in shape[:2]:  # OpenVINO's pooling shape inference refuses a zero batch or channels
        raise ShapeError(f"input {list(shape)} has {'no channels' if shape[1] == 0 else 'a batch of 0'}",
                         rule="port.dims", port=0)
    spatial = rank - 2
    for name in ("kernel", "strides", "pads_begin", "pads_end", "dilations"):
        values = getattr(op_, name, None)
        if values is None:
            continue
        if op_.auto_pad != "explicit" and name in ("pads_begin", "pads_end") and not values:
            continue
        if len(values) != spatial:
            raise ShapeError(f"attribute '{name}' has {len(values)} values, expected {spatial} "
                             f"(input rank {rank} minus 2)", rule="attr.length")
    for name in ("pads_begin", "pads_end"):  # another negative pad is read, as a huge unsigned number
        if -1 in (getattr(op_, name, None) or ()):
            raise ShapeError(f"attribute '{name}' has -1, which OpenVINO reads as a dynamic dim and refuses",
                             rule="attr.value")
    kernel = getattr(op_, "kernel", None) or ()
    if any(v <= 0 for v in kernel):
        raise ShapeError(f"attribute 'kernel' has a non-positive value {list(kernel)}", rule="attr.range")
    if shape is not None:
        refuse_unsigned_dilations(kernel, getattr(op_, "dilations", None) or (), shape[2:])
    for name in ("strides", "dilations"):
        require_positive_steps(name, getattr(op_, name, None) or ())


# ---------------------------------------------------------------- MaxPool

@op("MaxPool", 1)
class MaxPool1(Op):
    strides = Ints()
    pads_begin = Ints(min=0, read_below=True)
    pads_end = Ints(min=0, read_below=True)
    kernel = Ints()
    rounding_type = Enum("floor", "ceil", default="floor")
    auto_pad = Enum(*AUTO_PADS, default="explicit")
    with_indices = False

    @property
    def dilation_values(self):
        return getattr(self, "dilations", None) or (1,) * len(self.kernel)

    def _pads(self, spatial_rank):
        pads_begin = self.pads_begin or (0,) * spatial_rank
        pads_end = self.pads_end or (0,) * spatial_rank
        return pads_begin, pads_end

    def geometry(self, shape):
        spatial_rank = len(self.kernel) if shape is None else len(shape) - 2
        auto_pad = "explicit" if self.auto_pad == "notset" else self.auto_pad
        spatial = (None,) * spatial_rank if shape is None else shape[2:]
        return pooling_geometry(spatial, self.kernel, self.strides, self.dilation_values,
                                *self._pads(spatial_rank), auto_pad, self.rounding_type)

    def infer(self, inputs):
        (data,) = inputs
        require_rank(data.shape, (3, 4, 5))
        if data.type.name == "boolean":  # the spec allows float and integer data; OpenVINO forgets to check
            refuse(ShapeError("data must be a float or integer type, got boolean", rule="port.type.spec", port=0))
        rank = len(self.kernel) + 2 if data.shape is None else len(data.shape)
        check_pool_attributes(self, rank, data.shape)
        self.check_axis(rank)
        out_spatial, _, _ = self.geometry(data.shape)
        batch = (None, None) if data.shape is None else data.shape[:2]
        shape = tuple(batch) + tuple(out_spatial)
        outputs = [TensorInfo(shape, data.type)]
        if self.with_indices:
            outputs.append(TensorInfo(shape, self.index_element_type))
        return outputs

    def check_axis(self, rank):
        pass

    def run(self, inputs, in_infos, out_infos):
        (x,) = inputs
        out_spatial, pads_begin, _ = self.geometry(x.shape)
        extent = [max(d + pb, (o - 1) * s + (k - 1) * dl + 1) for d, pb, o, s, k, dl in
                  zip(x.shape[2:], pads_begin, out_spatial, self.strides, self.kernel, self.dilation_values)]
        self.reserve(math.prod(x.shape[:2]) * math.prod(extent) * x.itemsize, f"padded input {extent}")
        with_indices = self.with_indices and 1 not in self.unused_outputs
        values, indices = max_pool(x, in_infos[0].type, self.kernel, self.strides, self.dilation_values,
                                   pads_begin, out_spatial, with_indices)
        if not with_indices:
            return [values, None] if self.with_indices else [values]
        axis = self.axis + x.ndim if self.axis < 0 else self.axis
        modulus = math.prod(x.shape[axis:])
        indices = np.remainder(indices, modulus) if modulus and axis > 0 else indices
        return [values, indices.astype(self.index_element_type.storage)]


@op("MaxPool", 8)
class MaxPool8(MaxPool1):
    dilations = Ints(default=None)
    index_element_type = Type("i32", "i64", default=ELEMENT_TYPES["i64"], openvino_checks=False)
    axis = Int(default=0)
    with_indices = True

    def check_axis(self, rank):
        if not -rank <= self.axis < rank:
            raise ShapeError(f"axis {self.axis} is out of range [{-rank}, {rank - 1}]", rule="attr.range")


@op("MaxPool", 14)
class MaxPool14(MaxPool8):
    rounding_type = Enum("floor", "ceil", "ceil_torch", default="floor")


def window_floor(element_type):
    """The value a max starts from. OpenVINO's reference computes f16 and bf16 in f32, whose lowest
    value becomes -inf when converted back; other types start from their own lowest value."""
    return -np.inf if element_type.name in ("f16", "bf16") else lowest(element_type)


def max_pool(x, element_type, kernel, strides, dilations, pads_begin, out_spatial, with_indices):
    """Values and (when asked) flat indices into the whole input, OpenVINO's way: start from the type's
    lowest value, take an element only when strictly greater (ties go first, NaN never wins); a window
    with no winner gives the lowest value and the index of element (n, c, 0, ..., 0)."""
    batch, channels, spatial = x.shape[0], x.shape[1], x.shape[2:]
    low = np.array(window_floor(element_type), dtype=x.dtype)
    out_shape = (batch, channels, *out_spatial)
    if 0 in out_shape:
        return np.empty(out_shape, dtype=x.dtype), (np.zeros(out_shape, dtype=np.int64) if with_indices else None)
    padded = _padded(x, low, kernel, strides, dilations, pads_begin, out_spatial)
    # A running fmax equals "take when strictly greater" (best never holds NaN, starting from the lowest
    # value), except that a tie of -0.0 and +0.0 may keep either: with a negative zero in the input the
    # zeros take the sign of their window's first zero (without indices), or are read back from the winners.
    negative_zero = _has_negative_zero(x)
    running_max = np.maximum if x.dtype.kind in "iub" else np.fmax
    if not with_indices:
        values = _separable_max(padded, low, running_max, kernel, strides, dilations, out_spatial)
        if negative_zero:
            _first_zeros(values, padded, kernel, strides, dilations)
        return values, None
    windows = _windows(padded, kernel, strides, dilations, out_spatial)
    best = np.full(out_shape, low, dtype=x.dtype)
    winner = np.full(out_shape, -1, dtype=np.int16 if math.prod(kernel) < 32767 else np.int64)
    better = np.empty(out_shape, dtype=bool)
    step = np.empty_like(winner)
    for k, window in enumerate(windows):
        np.greater(window, best, out=better)
        # winner = k where better, by arithmetic: much faster than a masked copy
        np.subtract(winner.dtype.type(k), winner, out=step)
        np.multiply(step, better, out=step)
        np.add(winner, step, out=winner)
        running_max(best, window, out=best)
    indices = _flat_indices(winner, spatial, kernel, strides, dilations, pads_begin, out_spatial, channels)
    if negative_zero:
        best = np.where(winner >= 0, x.reshape(-1)[np.where(winner >= 0, indices, 0)], low)
    return best, (indices if with_indices else None)


def _has_negative_zero(x):
    """Whether float data holds -0.0: its bits are the integer type's lowest value."""
    if x.dtype.kind != "f":
        return False
    bits = x.view(np.dtype(f"i{x.itemsize}"))
    return bool(np.any(bits == np.iinfo(bits.dtype).min))


def _first_zeros(values, padded, kernel, strides, dilations):
    """Gives each zero of `values` the sign of the first zero of its window in row-major order (the
    reference's strict "greater than" keeps it), computed for the zero windows only."""
    at = np.flatnonzero(values == 0)
    if at.size == 0:
        return
    position = np.unravel_index(at, values.shape)
    negative, found = np.zeros(at.size, dtype=bool), np.zeros(at.size, dtype=bool)
    for offsets in itertools.product(*(range(k) for k in kernel)):
        element = padded[(*position[:2], *(o * s + off * d for o, s, off, d in
                                           zip(position[2:], strides, offsets, dilations)))]
        first = (element == 0) & ~found
        negative |= first & np.signbit(element)
        found |= first
    values.flat[at] = np.where(negative, -values.dtype.type(0), values.dtype.type(0))


def _separable_max(padded, low, running_max, kernel, strides, dilations, out_spatial):
    """The windows' maxima one spatial axis at a time, last axis first (the max of a window is the max of its
    rows' maxima: k1 + k2 + ... passes instead of k1 * k2 * ...), then against `low` (a window of NaN only
    gives the lowest value)."""
    values = padded
    for axis in reversed(range(len(kernel))):
        k, s, d, o = kernel[axis], strides[axis], dilations[axis], out_spatial[axis]
        lead = (slice(None),) * (axis + 2)
        reduced = np.array(values[(*lead, slice(0, (o - 1) * s + 1, s))])
        for offset in range(1, k):
            running_max(reduced, values[(*lead, slice(offset * d, offset * d + (o - 1) * s + 1, s))], out=reduced)
        values = reduced
    return running_max(values, low, out=values)


def _padded(x, low, kernel, strides, dilations, pads_begin, out_spatial):
    """The input with `low` around it, as far as the windows reach (ceil windows may pass pads_end)."""
    spatial = x.shape[2:]
    extent = [max(dim + pb, (o - 1) * s + (k - 1) * d + 1)
              for dim, pb, o, s, k, d in zip(spatial, pads_begin, out_spatial, strides, kernel, dilations)]
    if not any(pads_begin) and all(e == pb + dim for e, pb, dim in zip(extent, pads_begin, spatial)):
        return x
    padded = np.full((*x.shape[:2], *extent), low, dtype=x.dtype)
    padded[(slice(None), slice(None), *(slice(pb, pb + dim) for pb, dim in zip(pads_begin, spatial)))] = x
    return padded


def _windows(padded, kernel, strides, dilations, out_spatial):
    """For each kernel offset in row-major order, the strided view of the elements it covers."""
    for offsets in itertools.product(*(range(n) for n in kernel)):
        yield padded[(slice(None), slice(None), *(
            slice(off * d, off * d + (o - 1) * s + 1, s) for off, d, o, s in zip(offsets, dilations, out_spatial, strides)))]


def _flat_indices(winner, spatial, kernel, strides, dilations, pads_begin, out_spatial, channels):
    """Flat input index of each window's winning kernel offset (-1: none, giving (n, c, 0, ..., 0))."""
    dim_strides = [math.prod(spatial[a + 1:]) for a in range(len(spatial))]
    offset_of_k = np.array([
        sum(off * d * st for off, d, st in zip(offsets, dilations, dim_strides))
        for offsets in itertools.product(*(range(n) for n in kernel))
    ] + [0], dtype=np.int64)
    origin = np.zeros(out_spatial, dtype=np.int64)
    for a, (o, s, pb, st) in enumerate(zip(out_spatial, strides, pads_begin, dim_strides)):
        shape = [1] * len(out_spatial)
        shape[a] = o
        origin = origin + ((np.arange(o, dtype=np.int64) * s - pb) * st).reshape(shape)
    index = np.where(winner >= 0, origin + offset_of_k[winner], 0)
    plane = math.prod(spatial)
    batch_channel = np.arange(winner.shape[0] * channels, dtype=np.int64).reshape(
        winner.shape[0], channels, *([1] * len(out_spatial))) * plane
    return index + batch_channel


# ---------------------------------------------------------------- AdaptiveMaxPool

def adaptive_windows(size_in, size_out):
    """Start and end of each adaptive window: floor(i * in / out), ceil((i + 1) * in / out)."""
    i = np.arange(size_out, dtype=np.int64)
    return (i * size_in) // size_out, -((-(i + 1) * size_in) // size_out)


def output_size_input(info, rank, port=1):
    require_rank(info.shape, (1,), "output_size", port)
    if info.shape is not None and info.shape[0] is not None and rank is not None and info.shape[0] != rank - 2:
        raise ShapeError(f"output_size has {info.shape[0]} elements, expected {rank - 2} (input rank minus 2)",
                         rule="port.dims", port=port)
    value = readable_value(info, "output_size", port)
    if info.type.name not in ("i32", "i64"):
        # the spec's types; OpenVINO does not check the type (f32, boolean and u16 load)
        raise ShapeError(f"output_size must be i32 or i64, got {info.type}", rule="port.type.spec", port=port)
    if value is None:
        return None
    sizes = as_index_array(info.value, "output_size", port).reshape(-1)
    return tuple(sizes_as_read(sizes, f"output_size {sizes.tolist()} has a negative value", info, port))


@op("AdaptiveMaxPool", 8)
class AdaptiveMaxPool8(Op):
    index_element_type = Type("i32", "i64", default=ELEMENT_TYPES["i64"])
    num_inputs = (2, 2)

    def infer(self, inputs):
        data, size = inputs
        require_rank(data.shape, (3, 4, 5))
        rank = data.rank
        sizes = output_size_input(size, rank)
        if sizes is None:
            spatial_rank = size.shape[0] if size.shape and size.shape[0] is not None else None
            spatial = None if spatial_rank is None else (None,) * spatial_rank
        else:
            spatial = sizes
        if data.shape is None or spatial is None:
            shape = None if spatial is None else (None, None, *spatial)
        else:
            shape = (*data.shape[:2], *spatial)
        return [TensorInfo(shape, data.type), TensorInfo(shape, self.index_element_type)]

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        out_spatial = out_infos[0].shape[2:]
        if any(o == 0 for o in out_spatial) or any(d == 0 for d in x.shape[2:]):
            if any(d == 0 for d in x.shape[2:]) and numel(out_infos[0].shape):
                raise ExecutionError("adaptive windows over an empty spatial axis", rule="shape.empty")
            empty = np.zeros(out_infos[0].shape, dtype=x.dtype)
            return [empty, empty.astype(self.index_element_type.storage)]
        lengths = [int((end - start).max()) for start, end in
                   (adaptive_windows(size_in, size_out) for size_in, size_out in zip(x.shape[2:], out_spatial))]
        self.reserve(numel(out_infos[0].shape) * math.prod(lengths) * x.itemsize * 2, "adaptive pooling windows")
        values, indices = adaptive_max_pool(x, out_spatial)
        return [values, indices.astype(self.index_element_type.storage)]


def adaptive_max_pool(x, out_spatial):
    """Values and spatial flat indices. Without NaN this is the first maximum of each window in
    row-major order; with NaN, OpenVINO's order matters (see _nan_aware_window_max)."""
    spatial = x.shape[2:]
    n = len(spatial)
    positions, lengths = [], []
    for size_in, size_out in zip(spatial, out_spatial):
        start, end = adaptive_windows(size_in, size_out)
        length = int((end - start).max())
        # Positions past a window's end repeat its last element: duplicates after the original never win.
        positions.append(np.minimum(start[:, None] + np.arange(length), end[:, None] - 1))
        lengths.append(length)
    windows = _adaptive_windows_view(x, positions, lengths, out_spatial)  # (N, C, *out, *lengths)
    if x.dtype.kind == "f" and np.isnan(x).any():
        local, values = _nan_aware_window_max(windows, n, lengths)
    else:
        flat_windows = windows.reshape(*windows.shape[:2 + n], -1)
        arg = np.argmax(flat_windows, axis=-1)
        values = np.take_along_axis(flat_windows, arg[..., None], axis=-1)[..., 0]
        local = np.unravel_index(arg, lengths)
    flat = np.zeros(values.shape, dtype=np.int64)
    for a, (pos, offset) in enumerate(zip(positions, local)):
        shape = [1] * n
        shape[a] = pos.shape[0]
        flat = flat * spatial[a] + pos[np.arange(pos.shape[0]).reshape(shape), offset]
    return values.astype(x.dtype, copy=False), flat


def _adaptive_windows_view(x, positions, lengths, out_spatial):
    n = len(out_spatial)
    batch = x.shape[:2]
    if all(size % out == 0 for size, out in zip(x.shape[2:], out_spatial)):
        # Windows tile each axis exactly: a reshape instead of a gather.
        split = x.reshape(*batch, *(d for pair in zip(out_spatial, lengths) for d in pair))
        order = [0, 1, *range(2, 2 + 2 * n, 2), *range(3, 3 + 2 * n, 2)]
        return split.transpose(order)
    index_arrays = []
    for a, pos in enumerate(positions):
        shape = [1] * (2 * n)
        shape[a], shape[n + a] = pos.shape
        index_arrays.append(pos.reshape(shape))
    return x[(slice(None), slice(None), *index_arrays)]


def _nan_aware_window_max(windows, n, lengths):
    """OpenVINO's order: each innermost row's std::max_element (first of the maxima; a NaN at the row's
    start wins its row), then across rows the first strictly greater, starting from the window's first
    element (so a NaN there is the result)."""
    rows = windows.reshape(*windows.shape[:2 + n], math.prod(lengths[:-1]), lengths[-1])
    column = np.argmax(np.where(np.isnan(rows), -np.inf, rows), axis=-1)
    row_values = np.take_along_axis(rows, column[..., None], axis=-1)[..., 0]
    row_starts_nan = np.isnan(rows[..., 0])
    column = np.where(row_starts_nan, 0, column)
    row_values = np.where(row_starts_nan, np.nan, row_values)
    best_row = np.argmax(np.where(np.isnan(row_values), -np.inf, row_values), axis=-1)
    best_row = np.where(row_starts_nan[..., 0], 0, best_row)
    best_column = np.take_along_axis(column, best_row[..., None], axis=-1)[..., 0]
    values = np.take_along_axis(row_values, best_row[..., None], axis=-1)[..., 0]
    local = list(np.unravel_index(best_row, lengths[:-1])) + [best_column] if n > 1 else [best_column]
    return local, values
