"""ROI feature extraction: ROIPooling-2, ROIAlign-3/9, PSROIPooling-1.

Kernels loop in Python over chunks of ROIs, never over elements."""
from __future__ import annotations


import numpy as np

from ..errors import ExecutionError, ShapeError
from .attrs import Enum, Float, Int, Ints, Str
from .registry import Op, TensorInfo, op
from .roi_align_products import roi_align_avg
from .shapes import require_rank, shape_str

GATHER_ELEMENTS = 1 << 23  # gather at most this many elements per chunk of ROIs


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
    features = channels_last(features)
    for part in _roi_chunks(num_rois, per_roi):
        rest = np.arange(part.start, part.stop)
        if mode == "avg":
            y_axis = _sample_axis(y1[part], bin_h[part], ratio_y[part], max_y, pooled_h, height, ctype)
            x_axis = _sample_axis(x1[part], bin_w[part], ratio_x[part], max_x, pooled_w, width, ctype)
            result, done = roi_align_avg(features, batch_ids[part], y_axis, x_axis, ratio_x[part], ratio_y[part],
                                         pooled_h, pooled_w, ctype)
            if done.any():
                out[rest[done]] = result[done]
                rest = rest[~done]
        if len(rest):
            out[rest] = _roi_align_chunk(features, batch_ids[rest], x1[rest], y1[rest], bin_w[rest], bin_h[rest],
                                         ratio_x[rest], ratio_y[rest], max_x, max_y, pooled_h, pooled_w, mode, ctype)
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


def channels_last(features):
    """[N, C, H, W] features as a contiguous [N, H, W, C] copy: a bilinear sample then gathers C adjacent
    values instead of C values a plane apart."""
    return np.ascontiguousarray(np.moveaxis(features, 1, -1))


def _roi_align_chunk(features, batch_ids, x1, y1, bin_w, bin_h, ratio_x, ratio_y, max_x, max_y,
                     pooled_h, pooled_w, mode, ctype):
    """ROIAlign of some ROIs on channels_last features: [R, C, pooled_h, pooled_w]."""
    height, width = features.shape[1:3]
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
        term = features[b, ys[iy], xs[ix]].astype(ctype, copy=False)
        if sample is None:
            sample = np.multiply(weight, term, dtype=ctype)
        else:
            np.multiply(weight, term, out=term)
            sample += term
    invalid = ~(vy[:, :, :, None, None] & vx[:, None, None, :, :])[..., None]
    if mode == "max":
        np.copyto(sample, ctype(0), where=invalid)
        result = np.maximum(sample.max(axis=(2, 4)), ctype(0))
    else:
        sample /= (ratio_x * ratio_y).astype(ctype)[:, None, None, None, None, None]
        np.copyto(sample, ctype(0), where=invalid)
        result = sample.sum(axis=(2, 4))
    return np.moveaxis(result, -1, 1).astype(features.dtype)


# ---------------------------------------------------------------- PSROIPooling

@op("PSROIPooling", 1)
class PSROIPooling1(Op):
    output_dim = Int()
    group_size = Int(default=1)
    spatial_scale = Float()
    mode = Str("average", "bilinear")  # no default: OpenVINO's reader refuses a PSROIPooling without it
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
    """std::round: halves away from zero."""
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

        def at(ys, xs, b=b, ch=ch, part=part):  # (r, BY, BX, C, G, G), this chunk's
            return features[b, ch, ys[part][:, :, None, None, :, None], xs[part][:, None, :, None, None, :]].astype(ctype)

        fx = dx[part][:, None, :, None, None, :].astype(ctype)
        fy = dy[part][:, :, None, None, :, None].astype(ctype)
        top_row = at(top, left) + (at(top, right) - at(top, left)) * fx
        bottom_row = at(bottom, left) + (at(bottom, right) - at(bottom, left)) * fx
        value = top_row + (bottom_row - top_row) * fy
        value = np.where(valid[part][:, :, :, None, :, :], value, ctype(0))
        out[part] = (value.sum(axis=(1, 2)) / ctype(bins_x * bins_y)).astype(features.dtype)
    return out


# ---------------------------------------------------------------- ROIPooling

ROI_GATHER_ELEMENTS = 1 << 24  # gather this many elements at most per chunk of ROIs


@op("ROIPooling", 2)
class ROIPooling2(Op):
    # OpenVINO reads output_size, then output_roi over it, then pooled_h / pooled_w over its elements.
    output_size = Ints(default=None)
    output_roi = Ints(default=None)
    pooled_h = Int(default=None)
    pooled_w = Int(default=None)
    spatial_scale = Float()
    method = Str("max", "bilinear", default="max")
    num_inputs = (2, 2)

    def pooled_size(self):
        size = list(self.output_roi or self.output_size or ())
        listed = len(size)
        for axis, value in enumerate((self.pooled_h, self.pooled_w)):
            if value is not None and (not listed or axis < listed):  # they overwrite a list, never extend it
                if len(size) <= axis:
                    size += [None] * (axis + 1 - len(size))
                size[axis] = value
        if len(size) != 2 or None in size:
            raise ShapeError(f"pooled size {size} must have two values (pooled_h, pooled_w or output_size)",
                             rule="attr.missing" if not size else "attr.length")
        if min(size) < 1:
            raise ShapeError(f"pooled size {size} must be positive", rule="attr.range")
        return tuple(size)

    def infer(self, inputs):
        data, rois = inputs
        _check_feature_and_rois(data, rois, 5, "batch_id, x1, y1, x2, y2")
        if not self.spatial_scale > 0:
            raise ShapeError(f"spatial_scale {self.spatial_scale} must be positive", rule="attr.range")
        channels = None if data.shape is None else data.shape[1]
        num_rois = None if rois.shape is None else rois.shape[0]
        return [TensorInfo((num_rois, channels, *self.pooled_size()), data.type)]

    def run(self, inputs, in_infos, out_infos):
        features, rois = inputs
        batch_ids = rois[:, 0].astype(np.float64).astype(np.int64)
        bad = (batch_ids < 0) | (batch_ids >= features.shape[0])
        if bad.any():
            first = int(np.argmax(bad))
            raise ExecutionError(f"ROI {first} has batch id {rois[first, 0]}, outside [0, {features.shape[0] - 1}]",
                                 rule="input.roi", port=1)
        pooled_h, pooled_w = self.pooled_size()
        # OpenVINO computes f16 ROI pooling in f32 and rounds the result once.
        wide = features.astype(np.float32) if features.dtype == np.float16 else features
        wide_rois = rois.astype(wide.dtype)
        if self.method == "bilinear":
            out = roi_pool_bilinear(wide, wide_rois, batch_ids, pooled_h, pooled_w)
        else:
            out = roi_pool_max(wide, wide_rois, batch_ids, pooled_h, pooled_w, self.spatial_scale)
        return [out.astype(features.dtype, copy=False)]


def _bins(start, end_coord, pooled, limit, dtype):
    """Per ROI and bin: [start, end) along one axis, in the feature map type as OpenVINO computes them."""
    size = np.maximum(end_coord - start + 1, 1)
    bin_size = (size.astype(dtype) / dtype.type(pooled)).astype(dtype)
    p = np.arange(pooled, dtype=dtype)
    lo = np.floor((p[None, :] * bin_size[:, None]).astype(dtype)).astype(np.int64) + start[:, None]
    hi = np.ceil(((p + 1)[None, :] * bin_size[:, None]).astype(dtype)).astype(np.int64) + start[:, None]
    return np.clip(lo, 0, limit), np.clip(hi, 0, limit)


def roi_pool_max(features, rois, batch_ids, pooled_h, pooled_w, spatial_scale):
    """Caffe/DirectML ROI max pooling as OpenVINO's reference does it, NaN order included: the running
    value is replaced unless the element is smaller, so a NaN is replaced by the next element."""
    _, channels, height, width = features.shape
    dtype = features.dtype
    scaled = rois[:, 1:5].astype(np.float32) * np.float32(spatial_scale)
    x1, y1, x2, y2 = (_round_half_away(c) for c in scaled.T)
    x1, y1, x2, y2 = (c.astype(np.int64) for c in (x1, y1, x2, y2))
    h_lo, h_hi = _bins(y1, y2, pooled_h, height, dtype)
    w_lo, w_hi = _bins(x1, x2, pooled_w, width, dtype)
    out = np.zeros((len(rois), channels, pooled_h, pooled_w), dtype=dtype)
    if len(rois) == 0 or height == 0 or width == 0:
        return out
    len_h = max(int((h_hi - h_lo).max()), 1)
    len_w = max(int((w_hi - w_lo).max()), 1)
    per_roi = channels * pooled_h * pooled_w * len_h * len_w
    chunk = max(1, ROI_GATHER_ELEMENTS // max(per_roi, 1))
    low = lowest_of(dtype)
    for first in range(0, len(rois), chunk):
        part = slice(first, first + chunk)
        out[part] = _roi_max_chunk(features, batch_ids[part], h_lo[part], h_hi[part], w_lo[part], w_hi[part],
                                   len_h, len_w, low)
    return out


def lowest_of(dtype):
    return np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min


def _roi_max_chunk(features, batch_ids, h_lo, h_hi, w_lo, w_hi, len_h, len_w, low):
    height, width = features.shape[2:]
    rows = np.minimum(h_lo[:, :, None] + np.arange(len_h), np.maximum(h_hi, h_lo + 1)[:, :, None] - 1)
    cols = np.minimum(w_lo[:, :, None] + np.arange(len_w), np.maximum(w_hi, w_lo + 1)[:, :, None] - 1)
    rows, cols = np.clip(rows, 0, height - 1), np.clip(cols, 0, width - 1)
    # (R, PH, PW, Lh, Lw, C) -> (R, C, PH, PW, Lh * Lw)
    gathered = features[batch_ids[:, None, None, None, None], :,
                        rows[:, :, None, :, None], cols[:, None, :, None, :]]
    r, ph, pw = gathered.shape[:3]
    bins = np.moveaxis(gathered, -1, 1).reshape(r, -1, ph, pw, len_h * len_w)
    nan = np.isnan(bins)
    any_nan = nan.any(axis=-1)
    length = bins.shape[-1]
    last_nan = length - 1 - np.argmax(nan[..., ::-1], axis=-1)
    after_last_nan = np.arange(length) > np.where(any_nan, last_nan, -1)[..., None]
    considered = np.where(after_last_nan, bins, -np.inf)
    result = considered.max(axis=-1)
    # On a tie the later element replaces the running value: read back the last maximum, so that
    # the sign of a zero is the one OpenVINO keeps.
    last_max = length - 1 - np.argmax((considered == result[..., None])[..., ::-1], axis=-1)
    result = np.take_along_axis(bins, last_max[..., None], axis=-1)[..., 0]
    result = np.where(any_nan, result, np.maximum(result, low))
    result = np.where(any_nan & (last_nan == length - 1), np.nan, result)
    empty = (h_hi <= h_lo)[:, None, :, None] | (w_hi <= w_lo)[:, None, None, :]
    return np.where(empty, 0, result).astype(features.dtype)


def roi_pool_bilinear(features, rois, batch_ids, pooled_h, pooled_w):
    """Bilinear ROI pooling: normalised coordinates, spatial_scale unused, samples outside the map give 0."""
    _, channels, height, width = features.shape
    dtype = features.dtype.type
    x1, y1, x2, y2 = (rois[:, i].astype(features.dtype) for i in range(1, 5))
    in_y = _bilinear_coords(y1, y2, pooled_h, height, dtype)
    in_x = _bilinear_coords(x1, x2, pooled_w, width, dtype)
    valid = ((in_y >= 0) & (in_y <= dtype(height - 1)))[:, :, None] & ((in_x >= 0) & (in_x <= dtype(width - 1)))[:, None, :]
    safe_y = np.clip(np.where(np.isnan(in_y), 0, in_y), 0, max(height - 1, 0))
    safe_x = np.clip(np.where(np.isnan(in_x), 0, in_x), 0, max(width - 1, 0))
    top = np.floor(safe_y).astype(np.int64)
    bottom = np.minimum(np.ceil(safe_y).astype(np.int64), height - 1)
    left = np.floor(safe_x).astype(np.int64)
    right = np.minimum(np.ceil(safe_x).astype(np.int64), width - 1)
    b = batch_ids[:, None, None]

    def at(ys, xs):  # (R, PH, PW, C)
        return features[b, :, ys[:, :, None], xs[:, None, :]]

    dx = (safe_x - left.astype(dtype)).astype(dtype)[:, None, :, None]
    dy = (safe_y - top.astype(dtype)).astype(dtype)[:, :, None, None]
    top_row = at(top, left) + (at(top, right) - at(top, left)) * dx
    bottom_row = at(bottom, left) + (at(bottom, right) - at(bottom, left)) * dx
    value = (top_row + (bottom_row - top_row) * dy).astype(features.dtype)
    value = np.where(valid[..., None], value, 0).astype(features.dtype)
    return np.moveaxis(value, -1, 1)


def _bilinear_coords(start, end, pooled, size, dtype):
    """Sample coordinate of each bin along one axis, (R, pooled), in the feature map type."""
    extent = dtype(size - 1)
    if pooled == 1:
        return (0.5 * (start.astype(np.float64) + end.astype(np.float64)).astype(dtype).astype(np.float64)
                * (size - 1)).astype(dtype)[:, None]
    scale = ((end - start) * extent / dtype(pooled - 1)).astype(dtype)
    p = np.arange(pooled, dtype=dtype)
    coords = (p[None, :] * scale[:, None] + start[:, None] * extent).astype(dtype)
    coords[:, -1] = extent * end
    return coords
