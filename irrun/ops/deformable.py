"""Deformable and binary convolutions: DeformableConvolution-1/8, BinaryConvolution-1, DeformablePSROIPooling-1.

DeformableConvolution samples the input bilinearly at each kernel tap moved by a learned offset; the kernel
gathers the samples of one kernel offset for all output positions at once (a loop over kernel offsets and
batch items), then contracts them with the filters in one matmul per batch item, as convolution.py does
with its im2col columns. BinaryConvolution is two ordinary convolutions over indicator maps."""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..errors import ExecutionError, ShapeError
from .attrs import Bool, Enum, Float, Int, Str
from .blas import matmul
from .conversion import round_to_bf16
from .convolution import _ConvBase, _auto_pad, _to_type, conv_forward, forward_geometry
from .registry import Op, TensorInfo, op
from .roi_pooling import _check_feature_and_rois, _round_half_away
from .shapes import require_rank, shape_str

F32 = np.float32
_ROUNDERS = {  # round f32 values to the type, kept in f32
    "f16": lambda values: values.astype(np.float16).astype(F32),
    "bf16": lambda values: round_to_bf16(values.astype(F32)),
}


def _dims_match(a, b):
    return a is None or b is None or a == b


# ---------------------------------------------------------------- DeformableConvolution

class _DeformableConv(_ConvBase):
    group = Int()  # no defaults: OpenVINO's reader takes a missing one as 0 and refuses it
    deformable_group = Int()
    num_inputs = (3, 3)
    bilinear_interpolation_pad = False

    def infer(self, inputs):
        data, offsets, filters = inputs[:3]
        for port, info in enumerate(inputs):
            require_rank(info.shape, (4,), ("data", "offsets", "filters", "mask")[port], port)
            if info.type != data.type:
                raise ShapeError(f"element types must match: data is {data.type}, input {port} is {info.type}",
                                 rule="port.type", port=port)
        if not data.type.is_float or data.type.storage is None:
            raise ShapeError(f"element type must be floating point, got {data.type}", rule="port.type", port=0)
        if self.group < 1 or self.deformable_group < 1:
            raise ShapeError(f"group {self.group} and deformable_group {self.deformable_group} must be positive",
                             rule="attr.range")
        pb, pe = self.check_common(data, filters, 2)
        data_shape = data.shape or (None,) * 4
        filter_shape = filters.shape or (None,) * 4
        batch, channels = data_shape[:2]
        out_channels, in_per_group = filter_shape[:2]
        if None not in (channels, in_per_group) and channels != in_per_group * self.group:
            raise ShapeError(f"data batch channel count ({channels}) does not match filter input channel count "
                             f"({in_per_group}) times group ({self.group})", rule="port.dims", port=2)
        if out_channels is not None and out_channels % self.group:
            raise ShapeError(f"filter count ({out_channels}) must be divisible by group ({self.group})",
                             rule="port.dims", port=2)
        # OpenVINO does not check this; its kernel would read offsets past the deformable groups
        if channels is not None and channels % self.deformable_group:
            raise ShapeError(f"data batch channel count ({channels}) must be divisible by deformable_group "
                             f"({self.deformable_group})", rule="port.dims", port=0)
        kernel = filter_shape[2:]
        taps = None if None in kernel else kernel[0] * kernel[1]
        spatial, _, _ = forward_geometry(data_shape[2:], kernel, *self.steps(2), pb, pe,
                                         _auto_pad(self.auto_pad))
        for port, per_tap in ((1, 2), (3, 1)):
            if port >= len(inputs) or inputs[port].shape is None:
                continue
            shape = inputs[port].shape
            what = ("offsets", "mask")[port // 2]
            if not _dims_match(shape[0], batch):
                raise ShapeError(f"{what} batch {shape[0]} differs from the data batch {batch}", rule="port.dims",
                                 port=port)
            expected = None if taps is None else self.deformable_group * per_tap * taps
            if not _dims_match(shape[1], expected):
                raise ShapeError(f"{what} {shape_str(shape)} must have deformable_group * {per_tap} * kernel taps "
                                 f"= {expected} channels", rule="port.dims", port=port)
            if not all(_dims_match(a, b) for a, b in zip(shape[2:], spatial)):
                # with a negative pad, OpenVINO's reader does not compare them
                raise ShapeError(f"{what} spatial dims {shape_str(shape[2:])} differ from the output's "
                                 f"{shape_str(spatial)}", port=port,
                                 rule="port.dims.spec" if min((*pb, *pe), default=0) < 0 else "port.dims")
            spatial = [a if b is None else b for a, b in zip(spatial, shape[2:])]
            batch = batch if batch is not None else shape[0]
        return [TensorInfo((batch, out_channels, *spatial), data.type)]

    def run(self, inputs, in_infos, out_infos):
        x, offsets, filters = inputs[:3]
        mask = inputs[3] if len(inputs) == 4 else None
        pb, pe = self.pads_begin or (0, 0), self.pads_end or (0, 0)
        out, begins, _ = forward_geometry(x.shape[2:], filters.shape[2:], self.strides, self.dilations, pb, pe,
                                          _auto_pad(self.auto_pad))
        element_type = out_infos[0].type
        narrow = _ROUNDERS.get(element_type.name)  # f16 / bf16: OpenVINO's reference works in that type
        compute = np.float64 if x.dtype == np.float64 else F32
        n, channels = x.shape[:2]
        taps = filters.shape[2] * filters.shape[3]
        positions = math.prod(out)
        self.reserve(np.dtype(compute).itemsize * (channels * taps * positions + 8 * channels * positions),
                     f"deformable convolution columns [{channels * taps}, {positions}]")
        result = np.zeros((n, filters.shape[0], positions), dtype=compute)
        if result.size == 0 or channels == 0 or taps == 0:
            return [_to_type(result.reshape(n, filters.shape[0], *out), element_type.storage)]
        weights = filters.astype(compute).reshape(filters.shape[0], -1, taps)
        masks = None if mask is None else mask.astype(F32).reshape(n, self.deformable_group, taps, positions)
        for item in range(n):
            samples = self.columns(x[item], offsets[item], filters.shape[2:], begins, out, narrow)  # [C, taps, P]
            item_mask = None if masks is None else masks[item]
            if narrow is not None:
                result[item] = self.accumulate_narrow(samples, item_mask, weights, narrow)
                continue
            if item_mask is not None:
                groups = self.deformable_group
                samples = (samples.reshape(groups, -1, taps, positions) * item_mask[:, None]).reshape(samples.shape)
            columns = samples.astype(compute, copy=False).reshape(self.group, -1, positions)  # [G, Cg * taps, P]
            result[item] = matmul(weights.reshape(self.group, filters.shape[0] // self.group, -1),
                                     columns).reshape(filters.shape[0], positions)
        return [_to_type(result.reshape(n, filters.shape[0], *out), element_type.storage)]

    def accumulate_narrow(self, samples, mask, weights, rounded):
        """OpenVINO's reference for f16/bf16: each term sample * filter * mask rounded to the type after every
        product, summed one term at a time in the type, input channel by input channel, tap by tap."""
        channels, taps, positions = samples.shape
        out_channels = weights.shape[0]
        per_group, per_deformable = out_channels // self.group, channels // self.deformable_group
        in_per_group = channels // self.group
        result = np.zeros((out_channels, positions), dtype=F32)
        for group in range(self.group):
            outputs = slice(group * per_group, (group + 1) * per_group)
            total = np.zeros((per_group, positions), dtype=F32)
            for local in range(in_per_group):
                channel = group * in_per_group + local
                for tap in range(taps):
                    term = rounded(samples[channel, tap][None, :] * weights[outputs, local, tap][:, None])
                    if mask is not None:
                        term = rounded(term * mask[channel // per_deformable, tap][None, :])
                    total = rounded(total + term)
            result[outputs] = total
        return result

    def columns(self, x, offsets, kernel, begins, out, narrow):
        """[C, taps, P]: the bilinear sample each input channel gives each kernel tap at each output position,
        as OpenVINO's reference samples it: positions in the data type (f32 for f32 and f64 inputs' sampling),
        interpolation in f32, the sample rounded to f16/bf16 for those types."""
        channels, height, width = x.shape
        groups = self.deformable_group
        taps, positions = kernel[0] * kernel[1], out[0] * out[1]
        planes = x.astype(F32).reshape(groups, channels // groups, height * width)
        shifts = offsets.astype(np.float64 if offsets.dtype == np.float64 else F32).reshape(groups, taps, 2,
                                                                                            positions)
        rows = (np.arange(out[0]) * self.strides[0] - begins[0])[:, None]
        cols = (np.arange(out[1]) * self.strides[1] - begins[1])[None, :]
        result = np.empty((channels, taps, positions), dtype=F32)
        for tap, (ky, kx) in enumerate(itertools.product(range(kernel[0]), range(kernel[1]))):
            base_y = np.broadcast_to(rows + ky * self.dilations[0], out).reshape(-1)
            base_x = np.broadcast_to(cols + kx * self.dilations[1], out).reshape(-1)
            y = (base_y.astype(shifts.dtype) + shifts[:, tap, 0]).astype(F32)  # [G, P]
            x_pos = (base_x.astype(shifts.dtype) + shifts[:, tap, 1]).astype(F32)
            if narrow is not None:
                y, x_pos = narrow(y), narrow(x_pos)
            sample = self.bilinear(planes, y, x_pos, height, width)  # [G, Cg, P]
            if narrow is not None:
                sample = narrow(sample)
            result[:, tap] = sample.reshape(channels, positions)
        return result

    def bilinear(self, planes, y, x, height, width):
        """Samples [G, Cg, P] of planes [G, Cg, H*W] at positions y, x [G, P]; positions outside the input
        (bilinear_interpolation_pad: outside (-1, size) by C++ truncation; else outside [0, size)) give 0."""
        if self.bilinear_interpolation_pad:
            inside = (np.trunc(x) > -1) & (np.trunc(x) < width) & (np.trunc(y) > -1) & (np.trunc(y) < height)
            top, left = np.floor(y), np.floor(x)
            bottom, right = top + 1, left + 1
        else:
            inside = (x >= 0) & (x < width) & (y >= 0) & (y < height)
            top, left = np.maximum(np.floor(y), 0), np.maximum(np.floor(x), 0)
            bottom, right = np.minimum(np.ceil(y), height - 1), np.minimum(np.ceil(x), width - 1)
        dist_x, dist_y = x - left, y - top
        one = F32(1)
        value = np.zeros((planes.shape[0], planes.shape[1], y.shape[1]), dtype=F32)
        corners = ((top, left, (one - dist_x) * (one - dist_y)), (bottom, left, (one - dist_x) * dist_y),
                   (top, right, dist_x * (one - dist_y)), (bottom, right, dist_x * dist_y))
        for row, col, weight in corners:
            valid = inside & (row >= 0) & (row < height) & (col >= 0) & (col < width)
            index = np.where(valid, row * width + col, 0).astype(np.int64)
            gathered = np.take_along_axis(planes, index[:, None, :], axis=2)
            value += np.where(valid, weight, F32(0))[:, None, :] * gathered
        return value


@op("DeformableConvolution", 1)
class DeformableConvolution1(_DeformableConv):
    pass


@op("DeformableConvolution", 8)
class DeformableConvolution8(_DeformableConv):
    bilinear_interpolation_pad = Bool(default=False)
    num_inputs = (3, 4)


# ---------------------------------------------------------------- BinaryConvolution

@op("BinaryConvolution", 1)
class BinaryConvolution1(_ConvBase):
    """xnor-popcount: an input value of exactly 1 (or 0) matches a weight bit 1 (or 0); every tap adds +1 on a
    match and -1 otherwise (so a value that is neither 0 nor 1, like a pad_value of -1, never matches).
    Padded taps hold pad_value, cast to the input type."""

    mode = Enum("xnor-popcount")
    pad_value = Float()
    num_inputs = (2, 2)

    def infer(self, inputs):
        data, filters = inputs
        require_rank(data.shape, (4,), "data batch", 0)
        require_rank(filters.shape, (4,), "filters", 1)
        if data.type.storage is None or data.type.name in ("boolean", "string"):
            raise ShapeError(f"element type {data.type} is not numeric", rule="port.type", port=0)
        pb, pe = self.check_common(data, _as_type(filters, data.type), 2)
        channels = None if data.shape is None else data.shape[1]
        in_channels = None if filters.shape is None else filters.shape[1]
        if not _dims_match(channels, in_channels):
            raise ShapeError(f"data batch channel count ({channels}) does not match filter input channel count "
                             f"({in_channels})", rule="port.dims", port=1)
        spatial_in = (None, None) if data.shape is None else data.shape[2:]
        kernel = (None, None) if filters.shape is None else filters.shape[2:]
        out, _, _ = forward_geometry(spatial_in, kernel, *self.steps(2), pb, pe,
                                     _auto_pad(self.auto_pad))
        batch = None if data.shape is None else data.shape[0]
        out_channels = None if filters.shape is None else filters.shape[0]
        # OpenVINO's reader takes any filter type (checked last, so that its own refusals come first); the
        # kernels read the bits of packed u1 weights
        if filters.type.name != "u1":
            raise ShapeError(f"filters must be u1 (packed bits), got {filters.type}", rule="port.type.spec", port=1)
        return [TensorInfo((batch, out_channels, *out), data.type)]

    def run(self, inputs, in_infos, out_infos):
        x, bits = inputs
        pb, pe = self.pads_begin or (0, 0), self.pads_end or (0, 0)
        out, begins, ends = forward_geometry(x.shape[2:], bits.shape[2:], self.strides, self.dilations, pb, pe,
                                             _auto_pad(self.auto_pad))
        pad = np.array(self.pad_value, dtype=np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            pad = pad.astype(x.dtype) if x.dtype.kind != "f" else pad
        self.reserve(4 * 2 * x.size * 2, "binary convolution indicator maps")
        # one convolution over [x == 1, x == 0] with weights [w, 1 - w] counts the matches
        padding = ((0, 0), (0, 0), *((max(b, 0), max(e, 0)) for b, e in zip(begins, ends)))
        indicators = [np.pad((x == level).astype(F32), padding, constant_values=F32(pad == level))
                      for level in (1, 0)]
        stacked = np.concatenate(indicators, axis=1)
        weight = bits.astype(F32)
        filters = np.concatenate([weight, F32(1) - weight], axis=1)[None]
        crops = [min(b, 0) for b in begins]  # negative pads crop, which conv_forward does
        matches = conv_forward(stacked, filters, self.strides, self.dilations, crops, out)
        taps = bits.shape[1] * bits.shape[2] * bits.shape[3]
        result = F32(2) * matches - F32(taps)
        return [_to_type(result, out_infos[0].type.storage)]


def _as_type(info, element_type):
    return TensorInfo(info.shape, element_type, info.value)


# ---------------------------------------------------------------- DeformablePSROIPooling

@op("DeformablePSROIPooling", 1)
class DeformablePSROIPooling1(Op):
    """Position-sensitive ROI pooling whose bins move by offsets * trans_std * the ROI size. Output bin
    (c, h, w) of a ROI averages spatial_bins_y x spatial_bins_x bilinear samples of input channel
    (c * group_size + h) * group_size + w; samples outside [-0.5, size - 0.5] are left out, the others are
    clamped to the map; a bin with no sample is 0, and so is a ROI with a negative batch id."""

    output_dim = Int()
    spatial_scale = Float()
    group_size = Int(default=1)
    mode = Str(default="bilinear_deformable")
    spatial_bins_x = Int(default=1)
    spatial_bins_y = Int(default=1)
    trans_std = Float(default=1.0)
    part_size = Int(default=1)
    num_inputs = (2, 3)

    def infer(self, inputs):
        data, rois = inputs[:2]
        for name in ("output_dim", "group_size"):
            if getattr(self, name) <= 0:
                raise ShapeError(f"{name} {getattr(self, name)} must be positive", rule="attr.range")
        require_rank(data.shape, (4,), "feature map", 0)
        require_rank(rois.shape, (2,), "ROIs", 1)
        num_rois = None if rois.shape is None else rois.shape[0]
        if len(inputs) == 3:
            offsets = inputs[2]
            if offsets.type != data.type:
                raise ShapeError(f"offsets type {offsets.type} must match the feature map's {data.type}",
                                 rule="port.type", port=2)
            require_rank(offsets.shape, (4,), "offsets", 2)
            if offsets.shape is not None:
                count, coords, ph, pw = offsets.shape
                if not _dims_match(count, num_rois):
                    raise ShapeError(f"offsets {shape_str(offsets.shape)} must have one row per ROI ({num_rois})",
                                     rule="port.dims", port=2)
                if coords is not None and (coords % 2 or coords == 0 or self.output_dim % (coords // 2)):
                    raise ShapeError(f"offsets {shape_str(offsets.shape)} must have 2 * classes channels, classes "
                                     f"dividing output_dim {self.output_dim}", rule="port.dims", port=2)
                if self.part_size > 0 and not (_dims_match(ph, self.part_size) and _dims_match(pw, self.part_size)):
                    raise ShapeError(f"offsets {shape_str(offsets.shape)} must be part_size ({self.part_size}) "
                                     f"square", rule="port.dims", port=2)
        # OpenVINO's reader checks neither the types, the ROIs' width nor the channel count (its kernel reads
        # channels up to `needed`): checked last, after its own checks
        _check_feature_and_rois(data, rois, 5, "batch_id, x1, y1, x2, y2", suffix=".spec")
        for name in ("spatial_bins_x", "spatial_bins_y", "part_size"):
            if getattr(self, name) <= 0:
                raise ShapeError(f"{name} {getattr(self, name)} must be positive", rule="attr.range.spec")
        needed = self.output_dim * self.group_size ** 2
        if data.shape is not None and data.shape[1] is not None and data.shape[1] < needed:
            raise ShapeError(f"feature map has {data.shape[1]} channels, needs output_dim * group_size^2 = "
                             f"{needed}", rule="port.dims.spec", port=0)
        return [TensorInfo((num_rois, self.output_dim, self.group_size, self.group_size), data.type)]

    def run(self, inputs, in_infos, out_infos):
        features, rois = inputs[:2]
        offsets = inputs[2] if len(inputs) == 3 else None
        batch_ids = np.trunc(rois[:, 0].astype(np.float64)).astype(np.int64)
        if (batch_ids >= features.shape[0]).any():
            first = int(np.argmax(batch_ids >= features.shape[0]))
            raise ExecutionError(f"ROI {first} has batch id {rois[first, 0]}, outside [0, {features.shape[0] - 1}]",
                                 rule="input.roi", port=1)
        groups, bins_y, bins_x = self.group_size, self.spatial_bins_y, self.spatial_bins_x
        per_roi = self.output_dim * groups * groups * bins_y * bins_x
        self.reserve(4 * 16 * per_roi * max(1, len(rois)), "deformable PSROI samples")
        element_type = out_infos[0].type
        rounded = _ROUNDERS.get(element_type.name, lambda values: values)
        result = self.pool(features, rois.astype(F32), batch_ids, offsets, rounded)
        return [_to_type(result, element_type.storage)]

    def pool(self, features, rois, batch_ids, offsets, rounded):
        """As OpenVINO's reference: coordinates in f32, interpolation and the running sum in the data type
        (`rounded` rounds f32 values to f16 / bf16 after every operation)."""
        _, channels, height, width = features.shape
        count, dim, groups = len(rois), self.output_dim, self.group_size
        scale = F32(self.spatial_scale)
        x1 = _round_half_away(rois[:, 1]).astype(F32) * scale - F32(0.5)
        y1 = _round_half_away(rois[:, 2]).astype(F32) * scale - F32(0.5)
        x2 = (_round_half_away(rois[:, 3]).astype(F32) + F32(1)) * scale - F32(0.5)
        y2 = (_round_half_away(rois[:, 4]).astype(F32) + F32(1)) * scale - F32(0.5)
        roi_w, roi_h = np.maximum(x2 - x1, F32(0.1)), np.maximum(y2 - y1, F32(0.1))
        bin_w, bin_h = roi_w / F32(groups), roi_h / F32(groups)
        cells = np.arange(groups, dtype=F32)
        # bin corners [R, C, gh, gw]
        grid = (count, dim, groups, groups)
        start_x = np.broadcast_to((x1[:, None] + cells * bin_w[:, None])[:, None, None, :], grid)
        start_y = np.broadcast_to((y1[:, None] + cells * bin_h[:, None])[:, None, :, None], grid)
        if offsets is not None and offsets.size:
            classes = offsets.shape[1] // 2
            part = self.part_size
            cls = np.arange(dim) // (dim // classes)
            cell_part = np.arange(groups) * part // groups
            shift = rounded(offsets.astype(F32).reshape(count, classes, 2, part, part) *
                            rounded(np.asarray(self.trans_std, F32)))
            shift = shift[:, cls][:, :, :, cell_part][:, :, :, :, cell_part]  # [R, C, 2, gh, gw]
            start_x = start_x + shift[:, :, 0] * roi_w[:, None, None, None]
            start_y = start_y + shift[:, :, 1] * roi_h[:, None, None, None]
        sub_w, sub_h = bin_w / F32(self.spatial_bins_x), bin_h / F32(self.spatial_bins_y)
        steps_x = np.arange(self.spatial_bins_x, dtype=F32)
        steps_y = np.arange(self.spatial_bins_y, dtype=F32)
        # samples [R, C, gh, gw, sy, sx]
        xs = start_x[..., None, None] + (steps_x * sub_w[:, None])[:, None, None, None, None, :]
        ys = start_y[..., None, None] + (steps_y * sub_h[:, None])[:, None, None, None, :, None]
        xs, ys = np.broadcast_arrays(xs, ys)
        valid = (xs >= -0.5) & (xs <= width - 0.5) & (ys >= -0.5) & (ys <= height - 0.5)
        xs = np.clip(xs, F32(0), F32(width - 1))
        ys = np.clip(ys, F32(0), F32(height - 1))
        left, top = np.floor(xs), np.floor(ys)
        right, bottom = np.ceil(xs), np.ceil(ys)
        dx, dy = rounded(np.abs(xs - left)), rounded(np.abs(ys - top))
        channel = (np.arange(dim)[:, None, None] * groups + np.arange(groups)[:, None]) * groups + np.arange(groups)
        plane = (np.maximum(batch_ids, 0)[:, None, None, None] * channels + channel)[..., None, None]
        compute = np.float64 if features.dtype == np.float64 else F32
        flat = features.astype(compute).reshape(-1)

        def sample(row, col):
            return flat[((plane * height + row.astype(np.int64)) * width + col.astype(np.int64))]

        def lerp(a, b, t):
            return rounded(a + rounded(rounded(b - a) * t))

        top_value = lerp(sample(top, left), sample(top, right), dx)
        bottom_value = lerp(sample(bottom, left), sample(bottom, right), dx)
        value = np.where(valid, lerp(top_value, bottom_value, dy), 0)
        total = np.zeros(value.shape[:-2], dtype=compute)
        for sub_y, sub_x in itertools.product(range(value.shape[-2]), range(value.shape[-1])):
            total = rounded(total + value[..., sub_y, sub_x])  # the reference's running sum, in its order
        counted = valid.sum(axis=(-2, -1))
        result = np.where(counted > 0, rounded(total / np.maximum(counted, 1).astype(compute)), 0)
        result[batch_ids < 0] = 0
        return result
