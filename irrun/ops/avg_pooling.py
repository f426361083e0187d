"""Average pooling: AvgPool-1/14/16 and AdaptiveAvgPool-8.

Kernels loop in Python over kernel offsets or window offsets, never over elements."""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..errors import ExecutionError, ShapeError
from .attrs import Bool, Enum, Ints
from .pooling import AUTO_PADS, adaptive_windows, check_pool_attributes, pooling_geometry
from .registry import Op, TensorInfo, op
from .shapes import as_index_array, numel, require_rank, sizes_as_read



class _Hyphenated(Bool):
    """A boolean attribute whose XML name is not a Python identifier (AvgPool's `exclude-pad`)."""

    def __init__(self, xml_name, default):
        super().__init__(default)
        self.xml_name = xml_name

    @property
    def xml_names(self):
        return (self.xml_name,)


def _compute_dtype(dtype):
    return np.float64 if dtype.kind in "iub" or dtype == np.float64 else np.float32


def _divide(total, count, dtype, rounding=np.rint):
    """total / count in the output type; a count of 0 gives 0. Integers take `rounding` (half to even by
    default)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(count > 0, total / np.where(count > 0, count, 1), 0)
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return np.clip(rounding(mean), info.min, info.max).astype(dtype)
    return mean.astype(dtype)


# ---------------------------------------------------------------- AvgPool

@op("AvgPool", 1)
class AvgPool1(Op):
    strides = Ints()
    pads_begin = Ints(min=0)
    pads_end = Ints(min=0)
    kernel = Ints()
    exclude_pad = _Hyphenated("exclude-pad", default=True)  # what OpenVINO assumes when absent
    rounding_type = Enum("floor", "ceil", default="floor")
    auto_pad = Enum(*AUTO_PADS, default="explicit")

    @property
    def dilation_values(self):
        return getattr(self, "dilations", None) or (1,) * len(self.kernel)

    def geometry(self, shape):
        spatial_rank = len(self.kernel) if shape is None else len(shape) - 2
        auto_pad = "explicit" if self.auto_pad == "notset" else self.auto_pad
        spatial = (None,) * spatial_rank if shape is None else shape[2:]
        pads_begin = self.pads_begin or (0,) * spatial_rank
        pads_end = self.pads_end or (0,) * spatial_rank
        return pooling_geometry(spatial, self.kernel, self.strides, self.dilation_values,
                                pads_begin, pads_end, auto_pad, self.rounding_type)

    def infer(self, inputs):
        (data,) = inputs
        require_rank(data.shape, (3, 4, 5))
        rank = len(self.kernel) + 2 if data.shape is None else len(data.shape)
        check_pool_attributes(self, rank, data.shape)
        out_spatial, begins, ends = self.geometry(data.shape)
        if self.exclude_pad:
            for axis, (k, d, pb, pe) in enumerate(zip(self.kernel, self.dilation_values, begins, ends)):
                effective = (k - 1) * d + 1
                if pb is not None and not (effective > pb and effective > pe):
                    raise ShapeError(
                        f"with exclude-pad, the kernel ({effective} after dilation) must be larger than the pads "
                        f"({pb}, {pe}) on spatial axis {axis}: some windows would lie wholly in the padding",
                        rule="attr.range")
        batch = (None, None) if data.shape is None else data.shape[:2]
        return [TensorInfo(tuple(batch) + tuple(out_spatial), data.type)]

    def run(self, inputs, in_infos, out_infos):
        (x,) = inputs
        out_spatial, pads_begin, pads_end = self.geometry(x.shape)
        return [avg_pool(x, self.kernel, self.strides, self.dilation_values, pads_begin, pads_end,
                         out_spatial, self.exclude_pad)]


@op("AvgPool", 14)
class AvgPool14(AvgPool1):
    rounding_type = Enum("floor", "ceil", "ceil_torch", default="floor")


@op("AvgPool", 16)
class AvgPool16(AvgPool14):
    dilations = Ints(default=None)


def avg_pool(x, kernel, strides, dilations, pads_begin, pads_end, out_spatial, exclude_pad):
    """OpenVINO's divisor: with exclude-pad false and any pad non-zero, every kernel position counts
    (padding and ceil overhang alike); otherwise only positions inside the data. Nothing to count: 0."""
    batch, channels, spatial = x.shape[0], x.shape[1], x.shape[2:]
    out_shape = (batch, channels, *out_spatial)
    if 0 in out_shape:
        return np.zeros(out_shape, dtype=x.dtype)
    ctype = _compute_dtype(x.dtype)
    extent = [max(dim + pb, (o - 1) * s + (k - 1) * d + 1)
              for dim, pb, o, s, k, d in zip(spatial, pads_begin, out_spatial, strides, kernel, dilations)]
    padded = np.zeros((batch, channels, *extent), dtype=ctype)
    padded[(slice(None), slice(None), *(slice(pb, pb + dim) for pb, dim in zip(pads_begin, spatial)))] = x
    total = np.zeros(out_shape, dtype=ctype)
    for offsets in itertools.product(*(range(n) for n in kernel)):
        total += padded[(slice(None), slice(None), *(
            slice(off * d, off * d + (o - 1) * s + 1, s) for off, d, o, s in zip(offsets, dilations, out_spatial, strides)))]
    if not exclude_pad and (any(pads_begin) or any(pads_end)):
        count = np.full(out_spatial, math.prod(kernel), dtype=np.int64)
    else:
        count = np.ones(out_spatial, dtype=np.int64)
        for axis, (dim, pb, o, s, k, d) in enumerate(zip(spatial, pads_begin, out_spatial, strides, kernel, dilations)):
            positions = np.arange(o)[:, None] * s - pb + np.arange(k)[None, :] * d
            inside = ((positions >= 0) & (positions < dim)).sum(axis=1)
            shape = [1] * len(out_spatial)
            shape[axis] = o
            count = count * inside.reshape(shape)
    return _divide(total, count, x.dtype)


# ---------------------------------------------------------------- AdaptiveAvgPool

@op("AdaptiveAvgPool", 8)
class AdaptiveAvgPool8(Op):
    num_inputs = (2, 2)

    def infer(self, inputs):
        data, size = inputs
        require_rank(data.shape, (3, 4, 5))
        require_rank(size.shape, (1,), "output_size", 1)
        if not size.type.is_integer:  # OpenVINO's reader takes any type, as for AdaptiveMaxPool
            raise ShapeError(f"output_size must be an integer tensor, got {size.type}", rule="port.type.spec", port=1)
        rank = data.rank
        if size.shape is not None and size.shape[0] is not None and rank is not None and size.shape[0] != rank - 2:
            raise ShapeError(f"output_size has {size.shape[0]} elements, expected {rank - 2} (input rank minus 2)",
                             rule="port.dims", port=1)
        if size.value is not None:
            sizes = as_index_array(size.value, "output_size", 1).reshape(-1)
            spatial = tuple(sizes_as_read(sizes, f"output_size {sizes.tolist()} has a negative value", size, 1))
        elif size.shape is not None and size.shape[0] is not None:
            spatial = (None,) * size.shape[0]
        elif rank is not None:
            spatial = (None,) * (rank - 2)
        else:
            return [TensorInfo(None, data.type)]
        batch = (None, None) if data.shape is None else data.shape[:2]
        return [TensorInfo((*batch, *spatial), data.type)]

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        out_spatial = out_infos[0].shape[2:]
        if numel(out_infos[0].shape) == 0:
            return [np.zeros(out_infos[0].shape, dtype=x.dtype)]
        if 0 in x.shape[2:]:
            raise ExecutionError("adaptive windows over an empty spatial axis", rule="shape.empty")
        return [adaptive_avg_pool(x, out_spatial)]


def adaptive_avg_pool(x, out_spatial):
    """Sum each window by looping over window offsets (positions past a window's end are masked)."""
    ctype = _compute_dtype(x.dtype)
    xc = x.astype(ctype, copy=False)
    n = len(out_spatial)
    starts, lengths, counts = [], [], np.ones(out_spatial, dtype=np.int64)
    for axis, (size_in, size_out) in enumerate(zip(x.shape[2:], out_spatial)):
        start, end = adaptive_windows(size_in, size_out)
        starts.append((start, end))
        lengths.append(int((end - start).max()))
        shape = [1] * n
        shape[axis] = size_out
        counts = counts * (end - start).reshape(shape)
    total = np.zeros((*x.shape[:2], *out_spatial), dtype=ctype)
    for offsets in itertools.product(*(range(length) for length in lengths)):
        index, mask = [], np.ones(out_spatial, dtype=bool)
        for axis, (off, (start, end)) in enumerate(zip(offsets, starts)):
            position = start + off
            shape = [1] * n
            shape[axis] = len(start)
            index.append(np.minimum(position, end - 1).reshape(shape))
            mask = mask & (position < end).reshape(shape)
        total += np.where(mask, xc[(slice(None), slice(None), *index)], 0)
    # OpenVINO's reference kernel: i8/u8 round to nearest, wider integers divide (truncating).
    rounding = np.rint if x.dtype in (np.int8, np.uint8) else np.trunc
    return _divide(total, counts, x.dtype, rounding)
