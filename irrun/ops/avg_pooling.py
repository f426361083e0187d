"""Average pooling and ROI feature extraction: AvgPool-1/14/16, AdaptiveAvgPool-8, ROIAlign-3/9, PSROIPooling-1.

Kernels loop in Python over kernel offsets, window offsets or chunks of ROIs, never over elements."""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..errors import ExecutionError, ShapeError
from .attrs import Bool, Enum, Float, Int, Ints, Str
from .pooling import check_pool_attributes, pooling_geometry
from .registry import Op, TensorInfo, op
from .shapes import as_index_array, numel, require_rank, shape_str

AUTO_PADS = ("explicit", "valid", "same_upper", "same_lower", "notset")
GATHER_ELEMENTS = 1 << 23  # gather at most this many elements per chunk of ROIs


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
        check_pool_attributes(self, rank)
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

def _adaptive_windows(size_in, size_out):
    i = np.arange(size_out, dtype=np.int64)
    return (i * size_in) // size_out, -((-(i + 1) * size_in) // size_out)


@op("AdaptiveAvgPool", 8)
class AdaptiveAvgPool8(Op):
    num_inputs = (2, 2)

    def infer(self, inputs):
        data, size = inputs
        require_rank(data.shape, (3, 4, 5))
        require_rank(size.shape, (1,), "output_size", 1)
        if not size.type.is_integer:
            raise ShapeError(f"output_size must be an integer tensor, got {size.type}", rule="port.type", port=1)
        rank = data.rank
        if size.shape is not None and size.shape[0] is not None and rank is not None and size.shape[0] != rank - 2:
            raise ShapeError(f"output_size has {size.shape[0]} elements, expected {rank - 2} (input rank minus 2)",
                             rule="port.dims", port=1)
        if size.value is not None:
            sizes = as_index_array(size.value, "output_size", 1)
            if (sizes < 0).any():
                raise ShapeError(f"output_size {sizes.tolist()} has a negative value", rule="attr.range", port=1)
            spatial = tuple(int(v) for v in sizes)
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
        start, end = _adaptive_windows(size_in, size_out)
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


# ---------------------------------------------------------------- shared ROI checks

def _check_feature_and_rois(data, rois, second_dim, box_name):
    require_rank(data.shape, (4,), "feature map", 0)
    require_rank(rois.shape, (2,), "ROIs", 1)
    if data.type != rois.type or not data.type.is_float:
        raise ShapeError(f"feature map and ROIs must share one floating-point type, got {data.type} and {rois.type}",
                         rule="port.type", port=1)
    if rois.shape is not None and rois.shape[1] not in (None, second_dim):
        raise ShapeError(f"ROIs shape {shape_str(rois.shape)} must be [num_rois, {second_dim}] ({box_name})",
                         rule="port.dims", port=1)


def _roi_chunks(count, per_roi):
    step = max(1, GATHER_ELEMENTS // max(per_roi, 1))
    for first in range(0, count, step):
        yield slice(first, min(count, first + step))


# ---------------------------------------------------------------- ROIAlign

@op("ROIAlign", 3)
class ROIAlign3(Op):
    pooled_h = Int()
    pooled_w = Int()
    sampling_ratio = Int()
    spatial_scale = Float()
    mode = Enum("avg", "max")
    num_inputs = (3, 3)
    aligned = "asymmetric"

    def infer(self, inputs):
        data, rois, batch_indices = inputs
        _check_feature_and_rois(data, rois, 4, "x1, y1, x2, y2")
        require_rank(batch_indices.shape, (1,), "batch indices", 2)
        if not batch_indices.type.is_integer:
            raise ShapeError(f"batch indices must be integers, got {batch_indices.type}", rule="port.type", port=2)
        # OpenVINO's shape inference accepts any sampling_ratio and spatial_scale, and a zero pooled size
        # (an empty output); a negative pooled size becomes a dynamic dim there, an error here.
        if self.pooled_h < 0 or self.pooled_w < 0:
            raise ShapeError(f"pooled size ({self.pooled_h}, {self.pooled_w}) is negative", rule="attr.range")
        num_rois = None if rois.shape is None else rois.shape[0]
        if batch_indices.shape is not None:
            count = batch_indices.shape[0]
            if num_rois is not None and count is not None and count != num_rois:
                raise ShapeError(f"batch indices {shape_str(batch_indices.shape)} and ROIs {shape_str(rois.shape)} "
                                 f"disagree on the number of ROIs", rule="port.dims", port=2)
            num_rois = count if num_rois is None else num_rois
        channels = None if data.shape is None else data.shape[1]
        return [TensorInfo((num_rois, channels, self.pooled_h, self.pooled_w), data.type)]

    def run(self, inputs, in_infos, out_infos):
        features, rois, batch_indices = inputs
        if self.sampling_ratio < 0:
            raise ExecutionError(f"sampling_ratio {self.sampling_ratio} is negative", rule="attr.range")
        batch_ids = batch_indices.astype(np.int64)
        bad = (batch_ids < 0) | (batch_ids >= features.shape[0])
        if bad.any():
            first = int(np.argmax(bad))
            raise ExecutionError(f"ROI {first} has batch index {batch_ids[first]}, outside [0, {features.shape[0] - 1}]",
                                 rule="input.roi", port=2)
        return [roi_align(features, rois, batch_ids, self.pooled_h, self.pooled_w, self.sampling_ratio,
                          self.spatial_scale, self.mode, self.aligned)]


@op("ROIAlign", 9)
class ROIAlign9(ROIAlign3):
    aligned_mode = Enum("asymmetric", "half_pixel_for_nn", "half_pixel", default="asymmetric")

    @property
    def aligned(self):
        return self.aligned_mode


def roi_align(features, rois, batch_ids, pooled_h, pooled_w, sampling_ratio, spatial_scale, mode, aligned):
    """OpenVINO's ROIAlign: bilinear samples on a regular grid in each bin (sampling_ratio 0: ceil of the
    bin size), a sample beyond [-1, size] weighs nothing, avg divides by the full sample count and
    max starts from 0."""
    num_rois = len(rois)
    _, channels, height, width = features.shape
    dtype = features.dtype
    out = np.zeros((num_rois, channels, pooled_h, pooled_w), dtype=dtype)
    if out.size == 0:
        return out
    ctype = np.float64 if dtype == np.float64 else np.float32
    boxes = rois.astype(ctype)
    scale = ctype(spatial_scale)
    offset_src, offset_dst = {"asymmetric": (0.0, 0.0), "half_pixel_for_nn": (0.0, -0.5),
                              "half_pixel": (0.5, -0.5)}[aligned]
    x1, y1, x2, y2 = ((boxes[:, i] + ctype(offset_src)) * scale + ctype(offset_dst) for i in range(4))
    roi_w, roi_h = x2 - x1, y2 - y1
    if aligned == "asymmetric":
        roi_w, roi_h = np.maximum(roi_w, ctype(1)), np.maximum(roi_h, ctype(1))
    bin_w, bin_h = roi_w / ctype(pooled_w), roi_h / ctype(pooled_h)
    if sampling_ratio == 0:
        ratio_x, ratio_y = np.ceil(bin_w).astype(np.int64), np.ceil(bin_h).astype(np.int64)
        if (ratio_x < 0).any() or (ratio_y < 0).any():
            raise ExecutionError("an ROI has a negative size, giving a negative adaptive sampling ratio",
                                 rule="input.roi", port=1)
    else:
        ratio_x = np.full(num_rois, sampling_ratio, dtype=np.int64)
        ratio_y = ratio_x
    max_x, max_y = int(ratio_x.max(initial=0)), int(ratio_y.max(initial=0))
    if max_x == 0 or max_y == 0:
        return out
    per_roi = channels * pooled_h * pooled_w * max_x * max_y * 4
    for part in _roi_chunks(num_rois, per_roi):
        out[part] = _roi_align_chunk(features, batch_ids[part], x1[part], y1[part], bin_w[part], bin_h[part],
                                     ratio_x[part], ratio_y[part], max_x, max_y, pooled_h, pooled_w, mode, ctype)
    return out


def _sample_axis(start, bin_size, ratio, max_ratio, pooled, size, ctype):
    """Per ROI, bin and sample along one axis: (low, high, low weight, high weight), each (R, pooled, S)."""
    ratio_safe = np.maximum(ratio, 1).astype(ctype)
    distance = (bin_size / ratio_safe).astype(ctype)
    p = np.arange(pooled, dtype=ctype)
    s = np.arange(max_ratio, dtype=ctype) + ctype(0.5)
    coord = (start[:, None, None] + p[None, :, None] * bin_size[:, None, None]).astype(ctype) \
        + (distance[:, None, None] * s[None, None, :]).astype(ctype)
    coord = coord.astype(ctype)
    valid = (coord >= -1) & (coord <= ctype(size)) & (np.arange(max_ratio) < ratio[:, None, None])
    coord = np.maximum(coord, ctype(0))
    low = np.floor(np.where(valid, coord, 0)).astype(np.int64)
    at_edge = low >= size - 1
    low = np.where(at_edge, size - 1, low)
    high = np.where(at_edge, size - 1, low + 1)
    coord = np.where(at_edge, low.astype(ctype), coord)
    frac = (coord - low.astype(ctype)).astype(ctype)
    w_low, w_high = (ctype(1) - frac).astype(ctype), frac
    zero = ctype(0)
    return low, high, np.where(valid, w_low, zero), np.where(valid, w_high, zero), valid


def _roi_align_chunk(features, batch_ids, x1, y1, bin_w, bin_h, ratio_x, ratio_y, max_x, max_y,
                     pooled_h, pooled_w, mode, ctype):
    height, width = features.shape[2:]
    y_lo, y_hi, wy_lo, wy_hi, vy = _sample_axis(y1, bin_h, ratio_y, max_y, pooled_h, height, ctype)
    x_lo, x_hi, wx_lo, wx_hi, vx = _sample_axis(x1, bin_w, ratio_x, max_x, pooled_w, width, ctype)
    # index layout (R, PH, SY, PW, SX) -> gathered (R, PH, SY, PW, SX, C)
    b = batch_ids[:, None, None, None, None]
    ys = {0: y_lo[:, :, :, None, None], 1: y_hi[:, :, :, None, None]}
    xs = {0: x_lo[:, None, None, :, :], 1: x_hi[:, None, None, :, :]}
    wy = {0: wy_lo[:, :, :, None, None], 1: wy_hi[:, :, :, None, None]}
    wx = {0: wx_lo[:, None, None, :, :], 1: wx_hi[:, None, None, :, :]}
    sample = None
    for iy, ix in ((0, 0), (0, 1), (1, 0), (1, 1)):
        weight = (wy[iy] * wx[ix]).astype(ctype)[..., None]
        term = weight * features[b, :, ys[iy], xs[ix]].astype(ctype)
        sample = term if sample is None else sample + term
    valid = (vy[:, :, :, None, None] & vx[:, None, None, :, :])[..., None]
    if mode == "max":
        sample = np.where(valid, sample, ctype(0))
        result = np.maximum(sample.max(axis=(2, 4)), ctype(0))
    else:
        count = (ratio_x * ratio_y).astype(ctype)[:, None, None, None, None, None]
        result = np.where(valid, sample / count, ctype(0)).sum(axis=(2, 4))
    return np.moveaxis(result, -1, 1).astype(features.dtype)


# ---------------------------------------------------------------- PSROIPooling

@op("PSROIPooling", 1)
class PSROIPooling1(Op):
    output_dim = Int()
    group_size = Int(default=1)
    spatial_scale = Float()
    mode = Str("average", "bilinear", default="average")
    spatial_bins_x = Int(default=1)
    spatial_bins_y = Int(default=1)
    num_inputs = (2, 2)

    def infer(self, inputs):
        data, rois = inputs
        if self.group_size <= 0:
            raise ShapeError(f"group_size {self.group_size} must be positive", rule="attr.range")
        if self.mode == "bilinear" and (self.spatial_bins_x <= 0 or self.spatial_bins_y <= 0):
            raise ShapeError(f"spatial bins ({self.spatial_bins_x}, {self.spatial_bins_y}) must be positive",
                             rule="attr.range")
        if not self.spatial_scale > 0:
            raise ShapeError(f"spatial_scale {self.spatial_scale} must be positive", rule="attr.range")
        _check_feature_and_rois(data, rois, 5, "batch_id, x1, y1, x2, y2")
        if data.shape is not None and data.shape[1] is not None:
            if self.mode == "average":
                expected, what = self.group_size ** 2 * self.output_dim, "output_dim * group_size^2"
            else:
                expected, what = self.spatial_bins_x * self.spatial_bins_y * self.output_dim, \
                    "output_dim * spatial_bins_x * spatial_bins_y"
            if data.shape[1] != expected:
                raise ShapeError(f"feature map has {data.shape[1]} channels, expected {what} = {expected}",
                                 rule="port.dims", port=0)
        num_rois = None if rois.shape is None else rois.shape[0]
        return [TensorInfo((num_rois, self.output_dim, self.group_size, self.group_size), data.type)]

    def run(self, inputs, in_infos, out_infos):
        features, rois = inputs
        batch_ids = rois[:, 0].astype(np.float64).astype(np.int64) if len(rois) else np.zeros(0, np.int64)
        bad = (batch_ids < 0) | (batch_ids >= features.shape[0])
        if bad.any():
            first = int(np.argmax(bad))
            raise ExecutionError(f"ROI {first} has batch id {rois[first, 0]}, outside [0, {features.shape[0] - 1}]",
                                 rule="input.roi", port=1)
        if self.mode == "average":
            return [psroi_average(features, rois, batch_ids, self.output_dim, self.group_size, self.spatial_scale)]
        return [psroi_bilinear(features, rois, batch_ids, self.output_dim, self.group_size, self.spatial_scale,
                               self.spatial_bins_x, self.spatial_bins_y)]


def _round_half_away(values):
    return np.sign(values) * np.floor(np.abs(values) + np.float32(0.5))


def psroi_average(features, rois, batch_ids, output_dim, group, spatial_scale):
    """Position-sensitive average: bin (ph, pw) of output channel c reads input channel
    (c * group + ph) * group + pw over [floor(start + p * bin), ceil(start + (p + 1) * bin)) clamped to
    the map; an empty bin gives 0. Coordinates are rounded half away from zero, the box is at least 0.1."""
    _, channels, height, width = features.shape
    num_rois = len(rois)
    out = np.zeros((num_rois, output_dim, group, group), dtype=features.dtype)
    if num_rois == 0 or output_dim == 0:
        return out
    f32 = np.float32
    scale = f32(spatial_scale)
    coords = _round_half_away(rois[:, 1:5].astype(f32))
    start_w, start_h = (coords[:, 0] * scale).astype(f32), (coords[:, 1] * scale).astype(f32)
    end_w, end_h = ((coords[:, 2] + f32(1)) * scale).astype(f32), ((coords[:, 3] + f32(1)) * scale).astype(f32)
    bin_w = (np.maximum(end_w - start_w, f32(0.1)) / f32(group)).astype(f32)
    bin_h = (np.maximum(end_h - start_h, f32(0.1)) / f32(group)).astype(f32)

    def bounds(start, bin_size, size):
        p = np.arange(group, dtype=f32)
        lo = np.floor(((p[None, :] * bin_size[:, None]).astype(f32) + start[:, None]).astype(f32))
        hi = np.ceil((((p[None, :] + 1) * bin_size[:, None]).astype(f32) + start[:, None]).astype(f32))
        lo = np.clip(lo, 0, size).astype(np.int64)
        hi = np.clip(hi, 0, size).astype(np.int64)
        return np.minimum(lo, max(size - 1, 0)), np.maximum(hi - lo, 0)

    lo_h, len_h = bounds(start_h, bin_h, height)
    lo_w, len_w = bounds(start_w, bin_w, width)
    max_h, max_w = max(int(len_h.max()), 1), max(int(len_w.max()), 1)
    # input channel for (c, ph, pw)
    channel = (np.arange(output_dim)[:, None, None] * group + np.arange(group)[None, :, None]) * group \
        + np.arange(group)[None, None, :]
    ctype = np.float64 if features.dtype == np.float64 else np.float32
    per_roi = output_dim * group * group * max_h * max_w
    for part in _roi_chunks(num_rois, per_roi):
        r = len(batch_ids[part])
        total = np.zeros((r, output_dim, group, group), dtype=ctype)
        for dh in range(max_h):
            rows = np.minimum(lo_h[part] + dh, height - 1)  # (r, PH)
            row_ok = dh < len_h[part]
            for dw in range(max_w):
                cols = np.minimum(lo_w[part] + dw, width - 1)
                ok = row_ok[:, None, :, None] & (dw < len_w[part])[:, None, None, :]
                values = features[batch_ids[part][:, None, None, None], channel[None],
                                  rows[:, None, :, None], cols[:, None, None, :]]
                total += np.where(ok, values.astype(ctype), ctype(0))
        area = (len_h[part][:, None, :, None] * len_w[part][:, None, None, :]).astype(ctype)
        out[part] = np.where(area > 0, total / np.maximum(area, 1), 0).astype(features.dtype)
    return out


def psroi_bilinear(features, rois, batch_ids, output_dim, group, spatial_scale, bins_x, bins_y):
    """Position-sensitive bilinear: output (c, ph, pw) averages, over the spatial bins (sby, sbx), one
    bilinear sample of input channel (sby * bins_x + sbx) * output_dim + c; samples outside
    [0, size - 1] add 0. Coordinates are relative to the map ([0, 1] spans it), scaled by spatial_scale."""
    _, channels, height, width = features.shape
    num_rois = len(rois)
    out = np.zeros((num_rois, output_dim, group, group), dtype=features.dtype)
    if num_rois == 0 or output_dim == 0:
        return out
    f32 = np.float32
    scale = f32(spatial_scale)
    boxes = (rois[:, 1:5].astype(f32) * scale).astype(f32)
    start_w, start_h, end_w, end_h = boxes.T

    def points(start, end, bins, size):
        """(R, bins, group) sample coordinates along one axis."""
        step = ((end - start) / f32(bins)).astype(f32)
        index = np.arange(bins, dtype=f32)
        box_min = (start[:, None] + (index[None, :] * step[:, None]).astype(f32)).astype(f32)
        box_max = (start[:, None] + ((index[None, :] + 1) * step[:, None]).astype(f32)).astype(f32)
        if group > 1:
            pitch = ((box_max - box_min) * f32(size - 1) / f32(group - 1)).astype(f32)
            p = np.arange(group, dtype=f32)
            return ((p[None, None, :] * pitch[:, :, None]).astype(f32)
                    + (box_min * f32(size - 1)).astype(f32)[:, :, None]).astype(f32)
        return (f32(0.5) * (box_min + box_max) * f32(size - 1)).astype(f32)[:, :, None]

    py = points(start_h, end_h, bins_y, height)  # (R, BY, G)
    px = points(start_w, end_w, bins_x, width)   # (R, BX, G)
    in_y = (py >= 0) & (py <= f32(height - 1))
    in_x = (px >= 0) & (px <= f32(width - 1))
    valid = in_y[:, :, None, :, None] & in_x[:, None, :, None, :]  # (R, BY, BX, G, G)
    sy = np.where(in_y, py, f32(0))
    sx = np.where(in_x, px, f32(0))
    top = np.floor(sy).astype(np.int64)
    bottom = np.minimum(np.ceil(sy).astype(np.int64), height - 1)
    left = np.floor(sx).astype(np.int64)
    right = np.minimum(np.ceil(sx).astype(np.int64), width - 1)
    dy = (sy - top.astype(f32)).astype(f32)
    dx = (sx - left.astype(f32)).astype(f32)
    ctype = np.float64 if features.dtype == np.float64 else np.float32
    # input channel for (sby, sbx, c)
    channel = (np.arange(bins_y)[:, None, None] * bins_x + np.arange(bins_x)[None, :, None]) * output_dim \
        + np.arange(output_dim)[None, None, :]
    per_roi = bins_y * bins_x * output_dim * group * group * 4
    for part in _roi_chunks(num_rois, per_roi):
        b = batch_ids[part][:, None, None, None, None, None]
        ch = channel[None, :, :, :, None, None]

        def at(ys, xs):  # (r, BY, BX, C, G, G)
            return features[b, ch, ys[part][:, :, None, None, :, None], xs[part][:, None, :, None, None, :]].astype(ctype)

        fx = dx[part][:, None, :, None, None, :].astype(ctype)
        fy = dy[part][:, :, None, None, :, None].astype(ctype)
        top_row = at(top, left) + (at(top, right) - at(top, left)) * fx
        bottom_row = at(bottom, left) + (at(bottom, right) - at(bottom, left)) * fx
        value = top_row + (bottom_row - top_row) * fy
        value = np.where(valid[part][:, :, :, None, :, :], value, ctype(0))
        out[part] = (value.sum(axis=(1, 2)) / ctype(bins_x * bins_y)).astype(features.dtype)
    return out
