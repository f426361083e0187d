"""Convolutions: Convolution-1, GroupConvolution-1, ConvolutionBackpropData-1, GroupConvolutionBackpropData-1.

Forward convolution is one BLAS matmul on the input itself for pointwise (1x1, stride 1, unpadded) layers,
else im2col (one strided copy per kernel offset) and one matmul per chunk into the result; depthwise-like
groups (one input channel per group) accumulate per kernel offset instead (2D: einsums over shifted copies
made straight from the input, written into the output, depthwise_direct; 1D/3D stride 1: einsums over shifted
copies of the input per block of channels; else per channel, or with the channels innermost for
many channels over few positions; depthwise_nhwc: one einsum over the whole layer with the channels innermost);
strided layers with few input channels per group copy their columns as contiguous runs of the input's stride
phases (im2col_phases); 3D
layers whose column blocks hold many positions take cache-sized blocks over stride phases (conv_blocked), and
3D layers with 3x3 kernels over height and width (stride 1 there) Winograd tiles (conv_winograd), as do 2D
3x3 layers with many channels over large maps (conv_winograd_2d); stride-1 2D layers over large maps with few
output channels sum one product per kernel offset over the padded input (conv_implicit, no im2col).
Transposed
convolution is one matmul to per-offset columns followed by one strided slice add per kernel offset.
Floats narrower than f32 compute in f32; integers compute in int64 and wrap to the output type."""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..errors import ShapeError
from . import conv_blocked, conv_implicit, conv_pointwise, conv_taps, conv_winograd, conv_winograd_2d, depthwise_direct, depthwise_nhwc
from .attrs import Enum, Ints
from .blas import matmul
from .registry import Op, TensorInfo, op
from .shapes import as_index_array, negative_size, require_positive_steps, require_rank, shape_str
from .stricter import UNSIGNED, refuse, unsigned

AUTO_PADS = ("explicit", "valid", "same_upper", "same_lower", "notset")
CHUNK_BYTES = 1 << 25  # im2col / column buffers are built at most this large per chunk


# ---------------------------------------------------------------- attributes and shapes

def _check_type(data, filters):
    for port, info in enumerate((data, filters)):
        if info.type.name in ("boolean", "string", "dynamic") or info.type.storage is None:
            raise ShapeError(f"element type {info.type} is not numeric", rule="port.type", port=port)
    if data.type != filters.type:
        raise ShapeError(f"element types for data batch ({data.type}) and filters ({filters.type}) do not match",
                         rule="port.type", port=1)


def _auto_pad(value):
    return "explicit" if value == "notset" else value


class _ConvBase(Op):
    strides = Ints(default=())
    pads_begin = Ints(default=())
    pads_end = Ints(default=())
    dilations = Ints(default=())
    auto_pad = Enum(*AUTO_PADS, default="explicit")
    filter_extra = 0  # filter dims beyond [out, in, *kernel] (1 for grouped filters)

    def num_spatial(self, data, filters):
        if data.shape is not None:
            return len(data.shape) - 2
        if filters.shape is not None:
            return len(filters.shape) - 2 - self.filter_extra
        for values in (self.strides, self.dilations, self.pads_begin, self.pads_end):
            if values:
                return len(values)
        return None

    def check_common(self, data, filters, spatial):
        require_rank(data.shape, (3, 4, 5), "data batch", 0)
        if data.shape is not None and filters.shape is not None and \
                len(filters.shape) != len(data.shape) + self.filter_extra:
            raise ShapeError(f"data batch {shape_str(data.shape)} and filters {shape_str(filters.shape)} ranks do "
                             f"not match", rule="port.rank", port=1)
        if filters.shape is not None and data.shape is None:
            require_rank(filters.shape, tuple(r + self.filter_extra for r in (3, 4, 5)), "filters", 1)
        _check_type(data, filters)
        strides, dilations = self.strides or (1,) * spatial, self.dilations or (1,) * spatial
        if len(strides) != spatial:
            raise ShapeError(f"strides {list(self.strides)} should be defined for all and only the {spatial} spatial "
                             f"dimensions", rule="attr.length")
        if len(dilations) != spatial:
            raise ShapeError(f"dilations {list(self.dilations)} should be defined for all and only the {spatial} "
                             f"spatial dimensions", rule="attr.length")
        pb, pe = self.pads_begin or (0,) * spatial, self.pads_end or (0,) * spatial
        if len(pb) != spatial or len(pe) != spatial:
            raise ShapeError(f"pads_begin {list(self.pads_begin)} and pads_end {list(self.pads_end)} should be "
                             f"defined for all and only the {spatial} spatial dimensions", rule="attr.length")
        require_positive_steps("strides", strides)
        require_positive_steps("dilations", dilations)
        if not self.strides or not self.dilations:
            refuse(ShapeError("strides and dilations must be given (OpenVINO reads 1 for each spatial axis when "
                              "one is missing or empty)", rule="attr.length.spec"))
        return list(pb), list(pe)

    def steps(self, spatial):
        """Strides and dilations as OpenVINO's inference reads them: 1 per axis when missing, negative ones
        wrapped to huge unsigned values (the checker infers on past such stricter-class errors)."""
        return unsigned(self.strides or (1,) * spatial), unsigned(self.dilations or (1,) * spatial)

    def kernel_dims(self, filters, spatial):
        return (None,) * spatial if filters.shape is None else tuple(filters.shape[-spatial:])


# ---------------------------------------------------------------- forward convolution

def forward_geometry(spatial_in, kernel, strides, dilations, pads_begin, pads_end, auto_pad):
    """Output dims and the pads used per spatial axis (None where unknown)."""
    out, begins, ends = [], [], []
    for axis, dim in enumerate(spatial_in):
        k, s, d = kernel[axis], strides[axis], dilations[axis]
        if auto_pad in ("same_upper", "same_lower"):
            if dim is None or k is None:
                pb = pe = 0 if k is None else None
            else:
                effective = (k - 1) * d + 1
                total = max(0, (-(-dim // s) - 1) * s + effective - dim)
                small, large = total // 2, total - total // 2
                pb, pe = (small, large) if auto_pad == "same_upper" else (large, small)
            begins.append(pb), ends.append(pe)
            out.append(None if dim is None else (dim + s - 1) % UNSIGNED // s)  # OpenVINO's ceil, wrapping
            continue
        pb, pe = (0, 0) if auto_pad == "valid" else (pads_begin[axis], pads_end[axis])
        begins.append(pb), ends.append(pe)
        if dim is None or k is None or d >= UNSIGNED // 2 and k > 1:  # OpenVINO: a wrapped dilation, an interval
            out.append(None)
            continue
        effective = (k - 1) * d + 1
        padded = dim + pb + pe
        if effective > padded:
            raise ShapeError(f"kernel {k} with dilation {d} spans {effective}, more than the padded input {padded} "
                             f"on spatial axis {axis}", rule="shape.kernel")
        out.append((padded - effective) // s + 1)
    return out, begins, ends


class _ForwardConv(_ConvBase):
    num_inputs = (2, 2)

    def channels(self, data, filters):
        """(output channels, groups); validates the channel match."""
        raise NotImplementedError

    def infer(self, inputs):
        data, filters = inputs
        spatial = self.num_spatial(data, filters)
        if spatial is None:
            return [TensorInfo(None, data.type)]
        pb, pe = self.check_common(data, filters, spatial)
        out_channels, _ = self.channels(data, filters)
        spatial_in = (None,) * spatial if data.shape is None else data.shape[2:]
        out, _, _ = forward_geometry(spatial_in, self.kernel_dims(filters, spatial), *self.steps(spatial),
                                     pb, pe, _auto_pad(self.auto_pad))
        batch = None if data.shape is None else data.shape[0]
        return [TensorInfo((batch, out_channels, *out), data.type)]

    def run(self, inputs, in_infos, out_infos):
        x, w = inputs
        _, groups = self.channels(in_infos[0], in_infos[1])
        if self._pointwise_attributes():
            result = conv_pointwise.product(x, w, groups, out_infos[0].type.storage)
            if result is not None:
                return [result]
        out, begins, w = self._geometry(x, w, groups)
        # constant weights only; no 1x1 kernel transforms its weights
        cache = self.prepared(inputs[1], w) if in_infos[1].value is not None and math.prod(w.shape[3:]) > 1 else None
        result = conv_forward(x, w, self.strides, self.dilations, begins, out, self.reserve, cache)
        return [_to_type(result, out_infos[0].type.storage)]

    def _geometry(self, x, w, groups):
        """(output dims, pads before each axis, w as [G, Og, Cg, *K] cut to the kernel offsets that reach the
        input), from shapes and attributes alone: kept for the last input shape while the weights are the same
        read-only (constant) array."""
        kept = getattr(self, "_kept_geometry", None)
        if kept is not None and kept[0] == x.shape and kept[1] is w:
            return kept[2]
        spatial = x.ndim - 2
        pb, pe = self.pads_begin or (0,) * spatial, self.pads_end or (0,) * spatial
        out, begins, _ = forward_geometry(x.shape[2:], w.shape[-spatial:], self.strides, self.dilations, pb, pe,
                                          _auto_pad(self.auto_pad))
        kernel = w.reshape(groups, -1, *w.shape[-spatial - 1:])
        kernel, begins = conv_taps.crop_to_input(kernel, x.shape[2:], self.strides, self.dilations, begins, out)
        geometry = tuple(out), tuple(begins), kernel
        if not w.flags.writeable:
            self._kept_geometry = (x.shape, w, geometry)
        return geometry

    def _pointwise_attributes(self) -> bool:
        allowed = getattr(self, "_pointwise", None)
        if allowed is None:
            allowed = self._pointwise = conv_pointwise.attributes_allow(self)
        return allowed

    def prepared(self, weights, kernel):
        """A cache for weights transformed by a fast path, kept while the layer's (constant) weights are the
        same read-only array cut to the same offsets (`kernel`: the view of them the layer runs with); None for
        weights that may change between runs."""
        if weights.flags.writeable:
            return None
        key = (kernel.shape, kernel.__array_interface__["data"][0])
        cached = getattr(self, "_prepared", None)
        if cached is None or cached[0] is not weights or cached[1] != key:
            self._prepared = cached = (weights, key, {})
        return cached[2]


@op("Convolution", 1)
class Convolution1(_ForwardConv):
    def channels(self, data, filters):
        if data.shape is not None and filters.shape is not None and None not in (data.shape[1], filters.shape[1]) \
                and data.shape[1] != filters.shape[1]:
            raise ShapeError(f"data batch channel count ({data.shape[1]}) does not match filter input channel count "
                             f"({filters.shape[1]})", rule="port.dims", port=1)
        return (None if filters.shape is None else filters.shape[0]), 1


@op("GroupConvolution", 1)
class GroupConvolution1(_ForwardConv):
    filter_extra = 1

    def channels(self, data, filters):
        if filters.shape is None:
            return None, None
        groups, out_per_group, in_per_group = filters.shape[:3]
        channels = None if data.shape is None else data.shape[1]
        if None not in (channels, groups, in_per_group) and channels != groups * in_per_group:
            raise ShapeError(f"data batch channel count ({channels}) is not groups ({groups}) times the filter input "
                             f"channel count ({in_per_group})", rule="port.dims", port=1)
        if groups is not None and channels is not None and in_per_group is None and channels % groups:
            raise ShapeError(f"data batch channel count ({channels}) is not a multiple of groups ({groups})",
                             rule="port.dims", port=1)
        out = None if None in (groups, out_per_group) else groups * out_per_group
        return out, groups


def _compute_dtype(dtype):
    if dtype.kind == "f":
        return np.float64 if dtype.itemsize > 4 else np.float32
    return np.int64


def _to_type(result, dtype):
    if result.dtype == dtype:
        return result
    with np.errstate(over="ignore", invalid="ignore"):
        return result.astype(dtype)


def _window(offsets, dilations, strides, out):
    return tuple(slice(o * d, o * d + (n - 1) * s + 1, s) for o, d, s, n in zip(offsets, dilations, strides, out))


def _padded(x, begins, out, kernel, strides, dilations):
    """x with the spatial padding applied: zeros for positive pads, cropped for negative ones, and just as large
    as the windows reach."""
    spatial = x.shape[2:]
    needed = [(o - 1) * s + (k - 1) * d + 1 if o > 0 else 0
              for o, s, k, d in zip(out, strides, kernel, dilations)]
    if all(b == 0 for b in begins) and all(n <= dim for n, dim in zip(needed, spatial)):
        return x
    padded = np.zeros((*x.shape[:2], *needed), dtype=x.dtype)
    src, dst = [], []
    for b, n, dim in zip(begins, needed, spatial):
        lo, hi = max(0, -b), min(dim, n - b)
        if hi <= lo:
            return padded
        src.append(slice(lo, hi))
        dst.append(slice(lo + b, hi + b))
    padded[(slice(None), slice(None), *dst)] = x[(slice(None), slice(None), *src)]
    return padded


DEPTHWISE_BLOCK_BYTES = 1 << 17  # a block of channels whose sums stay in the L2 cache


def depthwise(x, begins, w, strides, dilations, out, offsets, view, reserve):
    """view [N, G, Og, *out] = the sum of the contributions of each kernel offset: 2D as einsums over shifted
    copies written straight into the output (depthwise_direct) unless the channels-last einsum takes the
    layer (strided, or stride 1 with small outputs); 1D and 3D: stride 1 as einsums over shifted copies or
    sums over the flattened input (depthwise_flat), strides up to 4 over the stride phases
    (depthwise_phases); else, one cache-sized block of channels at a time, a product into a scratch buffer
    and an in-place add per offset."""
    kernel = w.shape[3:]
    direct = depthwise_direct.usable(kernel)
    if depthwise_nhwc.usable(view.shape[1], view.shape[2], out, strides, len(offsets)) and \
            (not direct or max(strides) > 1 or depthwise_direct.cedes_to_channels_last(view.shape[1], out)):
        return depthwise_nhwc.depthwise_channels_last(x, begins, w, strides, dilations, out, view, reserve)
    if direct:
        return depthwise_direct.depthwise_direct(x, begins, w, strides, dilations, out, view, reserve)
    if 1 < max(strides) <= 4:
        return depthwise_phases(x, begins, w, strides, dilations, out, offsets, view, reserve)
    padded = _padded(x, begins, out, kernel, strides, dilations)
    if padded is not x:
        reserve(padded.nbytes, f"padded convolution input {list(padded.shape)}")
    if all(st == 1 for st in strides):
        return depthwise_flat(padded, w, dilations, out, offsets, view, reserve)
    view[...] = 0
    n, groups, out_per_group = view.shape[:3]
    per_channel = out_per_group * math.prod(out) * view.itemsize
    block = max(1, min(groups, DEPTHWISE_BLOCK_BYTES // max(per_channel, 1)))
    scratch = np.empty((block, out_per_group, *out), view.dtype)
    windows = [_window(offs, dilations, strides, out) for offs in offsets]
    spatial_ones = (1,) * len(out)
    for b in range(n):
        for g0 in range(0, groups, block):
            g1 = min(groups, g0 + block)
            acc, tmp = view[b, g0:g1], scratch[:g1 - g0]
            for offs, window in zip(offsets, windows):
                taps = w[(slice(g0, g1), slice(None), 0, *offs)].reshape(g1 - g0, out_per_group, *spatial_ones)
                np.multiply(padded[(b, slice(g0, g1), None, *window)], taps, out=tmp)
                acc += tmp


def depthwise_flat(padded, w, dilations, out, offsets, view, reserve):
    """Stride 1: with the spatial dims flattened, each kernel offset's window is one contiguous run of the
    padded input, so the sums run over long contiguous rows (computed on the padded width, then cropped):
    one einsum per block of channels (depthwise_columns) or, for many channels over few positions, sums
    with the channels innermost (_flat_sums)."""
    padded = np.ascontiguousarray(padded)
    pitch = _pitch(padded.shape[2:])
    length = _run_length(out, pitch)
    if use_columns(view.shape[1], view.shape[2], length, len(offsets), math.prod(padded.shape[2:])):
        return depthwise_columns(padded, w, dilations, out, view, reserve)
    starts = [sum(o * d * p for o, d, p in zip(offs, dilations, pitch)) for offs in offsets]
    _flat_sums(padded, padded.shape[2:], starts, _taps(w, offsets), out, view, offsets, (1,) * len(out))


def use_columns(groups, out_per_group, run, taps, plane):
    """Whether depthwise_columns beats _flat_sums (measured, one thread: everywhere but where the channels
    go innermost over runs of fewer than 128 positions, the 7x7 layers of MobileNets and EfficientNets)."""
    return run >= 128 or not channels_last(groups, out_per_group, run, taps, plane)


COLUMN_BLOCK_BYTES = 1 << 21  # the shifted copies and sums of a block of channels (measured: 1-4 MiB best)


def depthwise_columns(padded, w, dilations, out, view, reserve):
    """Stride 1, one einsum per block of channels: the spatial dims flattened as in depthwise_flat, plus one
    shifted copy of the input per offset along the last kernel axis, so that every kernel offset lies a
    fixed stride of that buffer away from the output position. The einsum's inner loop then runs along the
    flattened output (multiply-adds fused, no temporaries) once per kernel offset."""
    padded = np.ascontiguousarray(padded)
    n, groups, out_per_group = view.shape[:3]
    kernel, dims = w.shape[3:], padded.shape[2:]
    pitch = _pitch(dims)
    flat = padded.reshape(n, groups, -1)
    length = _run_length(out, pitch)
    reach = [(k - 1) * d * p for k, d, p in zip(kernel[:-1], dilations[:-1], pitch[:-1])]
    span = length + sum(reach)  # the run one shifted copy holds
    rows = out[0] * pitch[0]
    per_channel = (kernel[-1] * span + out_per_group * rows) * view.itemsize
    block = max(1, min(groups, COLUMN_BLOCK_BYTES // per_channel))
    reserve(block * per_channel, "depthwise column buffers")
    columns = np.empty((block, kernel[-1], span), view.dtype)
    acc = np.empty((block, out_per_group, rows), view.dtype)
    weights = w[:, :, 0]  # [G, Og, *kernel]
    axes = _LETTERS[:len(kernel)]
    subscripts = f"gp{axes},go{axes}->gop"
    item = view.itemsize
    steps = [d * p * item for d, p in zip(dilations[:-1], pitch[:-1])]
    crop = (slice(None), slice(None), slice(None), *(slice(0, o) for o in out[1:]))
    for b in range(n):
        for g0 in range(0, groups, block):
            g1 = min(groups, g0 + block)
            cols = columns[:g1 - g0]
            for j in range(kernel[-1]):
                first = j * dilations[-1]
                cols[:, j] = flat[b, g0:g1, first:first + span]
            window = np.lib.stride_tricks.as_strided(cols, (g1 - g0, length, *kernel),
                                                     (cols.strides[0], item, *steps, cols.strides[1]),
                                                     writeable=False)
            a = acc[:g1 - g0]
            np.einsum(subscripts, window, weights[g0:g1], out=a[:, :, :length])
            view[b, g0:g1] = a.reshape(g1 - g0, out_per_group, out[0], *dims[1:])[crop]


def depthwise_phases(x, begins, w, strides, dilations, out, offsets, view, reserve):
    """Strides > 1: the padded input split into its stride phases (padded[..., p::s, q::s], read straight
    from the unpadded x: one copy of the input in all, each phase as large as the largest); an offset at
    position o * d along an axis reads phase (o * d) % s from (o * d) // s on with stride 1, so the sums
    run as in depthwise_flat."""
    n, groups = x.shape[:2]
    needed = [(o - 1) * st + (k - 1) * d + 1 for o, st, k, d in zip(out, strides, w.shape[3:], dilations)]
    phase_dims = [-(-e // st) for e, st in zip(needed, strides)]
    phases = list(itertools.product(*(range(st) for st in strides)))
    reserve(n * groups * len(phases) * math.prod(phase_dims) * x.itemsize, "stride phases of the input")
    stacked = np.zeros((n, groups, len(phases), *phase_dims), x.dtype)
    for index, phase in enumerate(phases):
        # phase position i holds padded position i * s + p, that is x position i * s + p - begin
        lows = [max(0, -((p - b) // st)) for p, b, st in zip(phase, begins, strides)]
        highs = [min(pd, -((p - b - dim) // st)) for p, b, st, pd, dim in zip(phase, begins, strides, phase_dims,
                                                                                x.shape[2:])]
        if any(hi <= lo for lo, hi in zip(lows, highs)):
            continue
        src = tuple(slice(lo * st + p - b, (hi - 1) * st + p - b + 1, st)
                    for lo, hi, p, b, st in zip(lows, highs, phase, begins, strides))
        stacked[(slice(None), slice(None), index, *(slice(lo, hi) for lo, hi in zip(lows, highs)))] = \
            x[(slice(None), slice(None), *src)]
    pitch, block = _pitch(phase_dims), math.prod(phase_dims)
    starts = []
    for offs in offsets:
        pos = [o * d for o, d in zip(offs, dilations)]
        phase = phases.index(tuple(p % st for p, st in zip(pos, strides)))
        starts.append(phase * block + sum(p // st * pt for p, st, pt in zip(pos, strides, pitch)))
    # offsets o apart by st / gcd(st, d) along an axis stay in one phase, (o * d) // st apart by d / gcd(st, d)
    periods = tuple(st // math.gcd(st, d) for st, d in zip(strides, dilations))
    _flat_sums(stacked, phase_dims, starts, _taps(w, offsets), out, view, offsets, periods)


def _pitch(dims):
    return [math.prod(dims[i + 1:]) for i in range(len(dims))]


def _run_length(out, pitch):
    """Flattened positions from the first output to the last, with rows `pitch` apart."""
    return sum((o - 1) * p for o, p in zip(out, pitch)) + 1


def _taps(w, offsets):
    return [w[(slice(None), slice(None), 0, *offs)] for offs in offsets]  # each [G, Og]


def _flat_sums(source, dims, starts, taps, out, view, offsets, periods):
    """view[b, g, :, *o] = sum_j taps[j][g, :] * flat(source[b, g])[starts[j] + position(o)], where
    position(o) = sum_i o_i * pitch_i over `dims`; a cache-sized block of channels at a time. taps[j] is
    the kernel offset offsets[j]; starts are linear in the offsets within each class of offsets equal
    modulo `periods` (the stride phases)."""
    n, groups, out_per_group = view.shape[:3]
    flat = source.reshape(n, groups, 1, -1)
    pitch = _pitch(dims)
    length = _run_length(out, pitch)
    rows = out[0] * pitch[0]
    if channels_last(groups, out_per_group, length, len(taps), flat.shape[-1]):
        return _flat_sums_channels_last(source, dims, starts, taps, tap_grids(offsets, periods, starts, taps), out,
                                        view, length, rows)
    per_channel = out_per_group * rows * view.itemsize
    block = max(1, min(groups, 2 * DEPTHWISE_BLOCK_BYTES // max(per_channel, 1)))
    acc = np.empty((block, out_per_group, rows), view.dtype)
    tmp = np.empty((block, out_per_group, length), view.dtype)
    crop = (slice(None), slice(None), slice(None), *(slice(0, o) for o in out[1:]))
    for b in range(n):
        for g0 in range(0, groups, block):
            g1 = min(groups, g0 + block)
            a, t = acc[:g1 - g0], tmp[:g1 - g0]
            for j, (tap, start) in enumerate(zip(taps, starts)):
                if j == 0:  # positions past `length` are never written: the crop drops them
                    np.multiply(flat[b, g0:g1, :, start:start + length], tap[g0:g1, :, None], out=a[:, :, :length])
                else:
                    np.multiply(flat[b, g0:g1, :, start:start + length], tap[g0:g1, :, None], out=t)
                    a[:, :, :length] += t
            view[b, g0:g1] = a.reshape(g1 - g0, out_per_group, out[0], *dims[1:])[crop]


def channels_last(groups, out_per_group, run, taps, plane):
    """Whether depthwise sums of `taps` offsets over runs of `run` positions per channel, read from planes
    of `plane` elements per channel, go faster with the channels innermost. Measured: per-channel runs
    under about 2,000 elements lose to NumPy's per-row overhead once there are 64 channels or more, if the
    sums save more than the two transposes cost (the planes of a strided layer are its stride phases,
    several times its output)."""
    return out_per_group == 1 and run < 2048 and groups >= 64 and taps * run >= 5 * plane


TRANSPOSE_CHUNK = 64


def tap_grids(offsets, periods, starts, taps):
    """The kernel offsets as regular grids: the offsets equal modulo `periods` (one class per stride phase)
    as (first start, grid shape, start step per grid axis, weights [*shape, G]), so that one einsum over
    a strided window view sums a whole class."""
    classes = {}
    for j, offs in enumerate(offsets):
        classes.setdefault(tuple(o % p for o, p in zip(offs, periods)), []).append(j)
    position = {offs: j for j, offs in enumerate(offsets)}
    grids = []
    for members in classes.values():
        first, last = offsets[members[0]], offsets[members[-1]]
        shape = tuple((b - a) // p + 1 for a, b, p in zip(first, last, periods))
        steps = []
        for axis, p in enumerate(periods):
            if shape[axis] == 1:
                steps.append(0)
                continue
            nxt = list(first)
            nxt[axis] += p
            steps.append(starts[position[tuple(nxt)]] - starts[members[0]])
        weights = np.stack([taps[j][:, 0] for j in members], axis=-1).reshape(-1, *shape)
        grids.append((starts[members[0]], shape, tuple(steps), np.ascontiguousarray(np.moveaxis(weights, 0, -1))))
    return grids


_LETTERS = "abdefhijk"


def _flat_sums_channels_last(source, dims, starts, taps, grids, out, view, length, rows):
    """_flat_sums with one output per group, for many channels over few positions: the source transposed to
    [positions, channels], so each product and sum runs over rows of all channels (per-channel rows would be
    too short for NumPy's loops); a cache-sized block of positions at a time. Where the kernel offsets form
    one grid (tap_grids: stride 1, or dilations that are multiples of the strides), one einsum over a
    window view sums them all with fused multiply-adds; else a product and a sum per offset (measured: an
    einsum per stride phase and the sums of the phases do not beat them)."""
    n, groups = view.shape[:2]
    block = max(1, 2 * DEPTHWISE_BLOCK_BYTES // (groups * view.itemsize))
    acc = np.empty((rows, groups), view.dtype)
    crop = (slice(None), *(slice(0, o) for o in out[1:]))
    planes = source.reshape(n, groups, -1)
    src = np.empty(planes.shape[:0:-1], view.dtype)
    chunks = [slice(c0, c0 + TRANSPOSE_CHUNK) for c0 in range(0, groups, TRANSPOSE_CHUNK)]
    if len(grids) == 1:
        start, shape, steps, grid_weights = grids[0]
        axes = _LETTERS[:len(shape)]
        subscripts = f"p{axes}c,{axes}c->pc"
        item = src.itemsize * groups
    else:
        weights = [np.ascontiguousarray(tap[:, 0]) for tap in taps]  # each [G], contiguous for the SIMD loops
        tmp = np.empty((min(block, length), groups), view.dtype)
    for b in range(n):
        for cs in chunks:  # transposed a few channels at a time, so the strided side stays in L1
            src[:, cs] = planes[b, cs].T
        for p0 in range(0, length, block):
            p1 = min(length, p0 + block)
            a = acc[p0:p1]
            if len(grids) == 1:
                window = np.lib.stride_tricks.as_strided(
                    src[start + p0:], (p1 - p0, *shape, groups), (item, *(st * item for st in steps), src.itemsize),
                    writeable=False)
                np.einsum(subscripts, window, grid_weights, out=a)
                continue
            t = tmp[:p1 - p0]
            for j, (weight, start) in enumerate(zip(weights, starts)):
                if j == 0:
                    np.multiply(src[start + p0:start + p1], weight, out=a)
                else:
                    np.multiply(src[start + p0:start + p1], weight, out=t)
                    a += t
        grid = acc.reshape(out[0], *dims[1:], groups)[crop]
        for cs in chunks:
            view[b, cs, 0] = np.moveaxis(grid[..., cs], -1, 0)


def conv_forward(x, w, strides, dilations, begins, out, reserve=None, prepared=None):
    """x [N, G*Cg, *D], w [G, Og, Cg, *K] -> [N, G*Og, *out] in the compute type. `reserve(nbytes, what)`
    checks temporaries against the memory budget; `prepared` (a dict or None) caches transformed weights."""
    dtype = _compute_dtype(x.dtype)
    x = x.astype(dtype, copy=False)
    w = w.astype(dtype, copy=False)
    groups, out_per_group, in_per_group = w.shape[:3]
    kernel = w.shape[3:]
    n = x.shape[0]
    positions = math.prod(out)
    shape = (n, groups * out_per_group, *out)
    if math.prod(shape) == 0 or in_per_group == 0 or math.prod(kernel) == 0:
        return np.zeros(shape, dtype=dtype)
    reserve = reserve or (lambda nbytes, what: None)
    offsets = list(itertools.product(*(range(k) for k in kernel)))
    if in_per_group == 1 and out_per_group <= 4:
        result = np.empty((n, groups, out_per_group, *out), dtype=dtype)
        depthwise(x, begins, w, strides, dilations, out, offsets, result, reserve)
        return result.reshape(shape)
    winograd = conv_winograd.run(x, w, strides, dilations, begins, out, reserve, prepared)
    if winograd is None:
        winograd = conv_winograd_2d.run(x, w, strides, dilations, begins, out, reserve, prepared)
    if winograd is not None:
        return winograd
    if conv_implicit.usable(x, w, strides, out):
        return conv_implicit.forward(x, w, strides, dilations, begins, out, reserve, prepared)
    ck = in_per_group * len(offsets)
    weights = w.reshape(groups, out_per_group, ck)
    if groups > 1 and in_per_group <= FLAT_MAX_IN and any(s > 1 for s in strides) and \
            _phase_columns_bytes(weights, kernel, strides, dilations, out) <= CHUNK_BYTES:
        result = np.empty((n, groups, out_per_group, positions), dtype=dtype)
        im2col_phases(x, weights, kernel, strides, dilations, begins, out, result, reserve)
        return result.reshape(shape)
    padded = _padded(x, begins, out, kernel, strides, dilations)
    if padded is not x:
        reserve(padded.nbytes, f"padded convolution input {list(padded.shape)}")
    result = np.empty((n, groups, out_per_group, positions), dtype=dtype)
    if len(offsets) == 1 and tuple(padded.shape[2:]) == tuple(out):
        # a pointwise product: the input is the column matrix, one matmul per batch item and group
        matmul(weights, padded.reshape(n, groups, in_per_group, positions), out=result)
        return result.reshape(shape)
    if conv_blocked.worth(len(kernel), len(offsets), groups, out_per_group, ck, weights.itemsize):
        conv_blocked.im2col_blocked(padded, w, strides, dilations, out, result, reserve)
        return result.reshape(shape)
    if in_per_group <= FLAT_MAX_IN and all(s == 1 for s in strides) and \
            math.prod(padded.shape[3:]) <= FLAT_WASTE * math.prod(out[1:]):
        im2col_flat(padded, weights, dilations, out, offsets, result, reserve)
        return result.reshape(shape)
    # im2col chunked over the batch, then over the first output axis, so the column buffer stays bounded;
    # each chunk's matmul writes its rows of the result. Strided layers spend most of their time in that
    # matmul (64 output channels: ~70 GFLOPS against ~90 at 128 rows, one thread); measured without gain
    # (issue 23: 7x7 stride-2 stems, 3x3 stride-2 layers, 2D and 3D): columns copied as contiguous runs of
    # the stride phases (conv_implicit.Phases), conv_blocked's cache-sized blocks for 2D layers
    per_row = ck * groups * (positions // out[0]) * dtype().itemsize
    rows_per_chunk = max(1, CHUNK_BYTES // max(per_row, 1))
    batch_per_chunk = max(1, rows_per_chunk // out[0]) if rows_per_chunk >= out[0] else 1
    rows_per_chunk = min(rows_per_chunk, out[0])
    reserve(min(n, batch_per_chunk) * rows_per_chunk * per_row, "convolution column buffer")
    view = result.reshape(n, groups, out_per_group, out[0], positions // out[0])
    for b0 in range(0, n, batch_per_chunk):
        bs = slice(b0, b0 + batch_per_chunk)
        nb = len(range(n)[bs])
        for r0 in range(0, out[0], rows_per_chunk):
            rows = min(rows_per_chunk, out[0] - r0)
            chunk_out = (rows, *out[1:])
            cols = np.empty((nb, groups, in_per_group, len(offsets), *chunk_out), dtype=dtype)
            for j, offs in enumerate(offsets):
                first = offs[0] * dilations[0] + r0 * strides[0]
                window = (slice(first, first + (rows - 1) * strides[0] + 1, strides[0]),
                          *_window(offs[1:], dilations[1:], strides[1:], out[1:]))
                cols[:, :, :, j] = padded[(bs, slice(None), *window)].reshape(nb, groups, in_per_group, *chunk_out)
            target = view[bs, :, :, r0:r0 + rows].reshape(nb, groups, out_per_group, -1)
            matmul(weights, cols.reshape(nb, groups, ck, -1), out=target)
    return result.reshape(shape)


FLAT_WASTE = 1.25  # im2col_flat computes products for this many times the output positions at most
FLAT_MAX_IN = 16   # and serves groups of this many input channels at most (measured: with more, the matmul
                   # dominates, and the products between the rows cost more than the plain copies save)


def im2col_flat(padded, weights, dilations, out, offsets, result, reserve):
    """Stride 1: with the spatial dims flattened, each kernel offset's window over a chunk of output rows
    (first axis) is one contiguous run of the padded input, so each column block is one plain copy. The
    products are computed on the padded pitch (positions between the rows included) and cropped."""
    padded = np.ascontiguousarray(padded)
    n = padded.shape[0]
    groups, out_per_group, ck = weights.shape
    in_per_group = ck // len(offsets)
    dims = padded.shape[2:]
    pitch = _pitch(dims)
    plane, row = math.prod(dims), pitch[0]
    starts = [sum(o * d * p for o, d, p in zip(offs, dilations, pitch)) for offs in offsets]
    flat = padded.reshape(n, groups, in_per_group, plane)
    itemsize = weights.itemsize
    per_row = (ck + out_per_group) * groups * row * itemsize
    rows_per_chunk = max(1, min(out[0], CHUNK_BYTES // per_row))
    reserve(rows_per_chunk * per_row, "convolution column buffer")
    cols = np.empty((groups, in_per_group, len(offsets), rows_per_chunk * row), weights.dtype)
    products = np.empty((groups, out_per_group, rows_per_chunk * row), weights.dtype)
    view = result.reshape(n, groups, out_per_group, *out)
    crop = (slice(None), slice(None), slice(None), *(slice(0, o) for o in out[1:]))
    for b in range(n):
        for r0 in range(0, out[0], rows_per_chunk):
            rows = min(rows_per_chunk, out[0] - r0)
            span = rows * row
            for j, start in enumerate(starts):
                first = start + r0 * row
                available = min(span, plane - first)  # the last chunk's final row may run past the input
                cols[:, :, j, :available] = flat[b, :, :, first:first + available]
                cols[:, :, j, available:span] = 0
            chunk = products[:, :, :span]
            matmul(weights, cols[..., :span].reshape(groups, ck, span), out=chunk)
            view[b, :, :, r0:r0 + rows] = chunk.reshape(groups, out_per_group, rows, *dims[1:])[crop]


def _phase_columns_bytes(weights, kernel, strides, dilations, out):
    """The column and product buffers of im2col_phases: one run of the phases' pitch per output row."""
    groups, out_per_group, ck = weights.shape
    reach = conv_implicit.phase_reach(out, kernel, strides, dilations)
    return (ck + out_per_group) * groups * out[0] * math.prod(reach[1:]) * weights.itemsize


def im2col_phases(x, weights, kernel, strides, dilations, begins, out, result, reserve):
    """Strided layers with few input channels per group (grouped convolutions, where the column copies take
    more time than the products): in the input split into its stride phases (conv_implicit.Phases), each kernel
    offset's window is one contiguous run per channel, as in im2col_flat, instead of rows a few elements long.
    The products are computed on the phases' pitch and cropped."""
    groups, out_per_group, ck = weights.shape
    phases = conv_implicit.Phases(x, kernel, strides, dilations, begins, out, groups, reserve,
                                  "convolution stride phases")
    reserve(_phase_columns_bytes(weights, kernel, strides, dilations, out), "convolution column buffer")
    cols = np.empty((groups, ck // len(phases.offsets), len(phases.offsets), phases.length), weights.dtype)
    products = np.empty((groups, out_per_group, phases.length), weights.dtype)
    view = result.reshape(x.shape[0], groups, out_per_group, *out)
    for b in range(x.shape[0]):
        for j, (phase, start) in enumerate(phases.taps):
            cols[:, :, j] = phases.planes[b, phase, :, :, start:start + phases.length]
        matmul(weights, cols.reshape(groups, ck, phases.length), out=products)
        view[b] = phases.crop(products, out)


# ---------------------------------------------------------------- transposed convolution

class _BackpropConv(_ConvBase):
    output_padding = Ints(default=())
    num_inputs = (2, 3)

    def channels(self, data, filters):
        raise NotImplementedError

    def output_shape_input(self, info, spatial):
        require_rank(info.shape, (1,), "output_shape", 2)
        if info.type.is_float or not info.type.is_integer:
            raise ShapeError(f"output_shape must hold integers, got {info.type}", rule="port.type", port=2)
        if info.shape is not None and info.shape[0] is not None and spatial is not None and info.shape[0] != spatial:
            raise ShapeError(f"output_shape has {info.shape[0]} elements, expected one per spatial dimension "
                             f"({spatial})", rule="port.dims", port=2)
        if info.value is None:
            return None
        values = as_index_array(info.value, "output_shape", 2).reshape(-1)
        if (values < 0).any():
            raise ShapeError(f"output_shape {values.tolist()} has a negative value", rule="attr.range", port=2)
        return tuple(int(v) for v in values)

    def geometry(self, data_spatial, kernel, output_shape, spatial):
        """Output spatial dims and the pads (crop at the begin) actually used."""
        pb, pe = self.pads_begin or (0,) * spatial, self.pads_end or (0,) * spatial
        op_ = self.output_padding or (0,) * spatial
        auto = _auto_pad(self.auto_pad)
        out, begins = [], []
        for axis in range(spatial):
            dim, k, s, d = data_spatial[axis], kernel[axis], self.strides[axis], self.dilations[axis]
            known = dim is not None and k is not None
            full = (dim - 1) * s + (k - 1) * d + 1 if known else None
            if output_shape is not None:
                target = output_shape[axis]
                if auto in ("same_upper", "same_lower"):
                    if known:
                        total = max(full - target + op_[axis], 0)
                        small = total // 2
                        begins.append(total - small if auto == "same_upper" else small)
                    else:
                        begins.append(0)
                else:
                    begins.append(0 if auto == "valid" else pb[axis])
                out.append(target)
                continue
            b, e = (pb[axis], pe[axis]) if auto == "explicit" else (0, 0)
            begins.append(b)
            out.append(None if full is None else full + op_[axis] - b - e)
        return out, begins

    def infer(self, inputs):
        data, filters = inputs[:2]
        output_shape, spatial_from_input = None, None
        if len(inputs) == 3:
            spatial_hint = self.num_spatial(data, filters)
            output_shape = self.output_shape_input(inputs[2], spatial_hint)
            if inputs[2].shape is not None:
                spatial_from_input = inputs[2].shape[0]
        spatial = self.num_spatial(data, filters)
        if spatial is None:
            spatial = spatial_from_input
        if spatial is None:
            return [TensorInfo(None, data.type)]
        self.check_common(data, filters, spatial)
        if self.steps(spatial) != (list(self.strides), list(self.dilations)):  # a stricter-class error, reported
            return [TensorInfo((None if data.shape is None else data.shape[0], self.channels(data, filters)[0],
                                *(None,) * spatial), data.type)]
        if self.output_padding and len(self.output_padding) != spatial:
            raise ShapeError(f"output_padding {list(self.output_padding)} should be defined for all and only the "
                             f"{spatial} spatial dimensions", rule="attr.length")
        out_channels, _ = self.channels(data, filters)
        batch = None if data.shape is None else data.shape[0]
        if len(inputs) == 3 and output_shape is None:
            return [TensorInfo((batch, out_channels, *(None,) * spatial), data.type)]
        data_spatial = (None,) * spatial if data.shape is None else data.shape[2:]
        out, _ = self.geometry(data_spatial, self.kernel_dims(filters, spatial), output_shape, spatial)
        if any(o is not None and o < 0 for o in out):
            # OpenVINO's reader makes such a dim dynamic and reads the file
            refuse(ShapeError(f"output spatial shape {out} is negative", rule="shape.infer.spec"))
            out = [None if o is not None and o < 0 else o for o in out]
        return [TensorInfo((batch, out_channels, *out), data.type)]

    def run(self, inputs, in_infos, out_infos):
        x, w = inputs[:2]
        spatial = x.ndim - 2
        _, groups = self.channels(in_infos[0], in_infos[1])
        output_shape = None if len(inputs) < 3 else tuple(int(v) for v in np.asarray(inputs[2]).reshape(-1))
        out, begins = self.geometry(x.shape[2:], w.shape[-spatial:], output_shape, spatial)
        w = w.reshape(groups, -1, *w.shape[-spatial - 1:])
        result = conv_transposed(x, w, self.strides, self.dilations, begins, out)
        return [_to_type(result, out_infos[0].type.storage)]


@op("ConvolutionBackpropData", 1)
class ConvolutionBackpropData1(_BackpropConv):
    def channels(self, data, filters):
        if data.shape is not None and filters.shape is not None and None not in (data.shape[1], filters.shape[0]) \
                and data.shape[1] != filters.shape[0]:
            raise ShapeError(f"data batch channel count ({data.shape[1]}) does not match filter input channel count "
                             f"({filters.shape[0]})", rule="port.dims", port=1)
        return (None if filters.shape is None else filters.shape[1]), 1


@op("GroupConvolutionBackpropData", 1)
class GroupConvolutionBackpropData1(_BackpropConv):
    filter_extra = 1

    def channels(self, data, filters):
        if filters.shape is None:
            return None, None
        groups, in_per_group, out_per_group = filters.shape[:3]
        channels = None if data.shape is None else data.shape[1]
        if None not in (channels, groups, in_per_group) and channels != groups * in_per_group:
            raise ShapeError(f"data batch channel count ({channels}) is not groups ({groups}) times the filter input "
                             f"channel count ({in_per_group})", rule="port.dims", port=1)
        out = None if None in (groups, out_per_group) else groups * out_per_group
        return out, groups


def conv_transposed(x, w, strides, dilations, begins, out):
    """x [N, G*Cg, *D], w [G, Cg, Og, *K] -> [N, G*Og, *out]: output position o gathers input i and kernel
    offset k where i * stride + k * dilation == o + begin."""
    dtype = _compute_dtype(x.dtype)
    x = x.astype(dtype, copy=False)
    w = w.astype(dtype, copy=False)
    groups, in_per_group, out_per_group = w.shape[:3]
    kernel = w.shape[3:]
    n, spatial_in = x.shape[0], x.shape[2:]
    kprod = math.prod(kernel)
    result_shape = (n, groups * out_per_group, *out)
    if math.prod(result_shape) == 0:
        return np.zeros(result_shape, dtype=dtype)
    # The buffer spans every position a contribution can reach and every output position.
    lo = [min(0, b) for b in begins]
    hi = [max((d_in - 1) * s + (k - 1) * d + 1 if d_in and k else 0, b + o)
          for d_in, s, k, d, b, o in zip(spatial_in, strides, kernel, dilations, begins, out)]
    buffer = np.zeros((n, groups, out_per_group, *(h - low for h, low in zip(hi, lo))), dtype=dtype)
    if x.size and kprod and in_per_group:
        # weights as [G, Og*K, Cg] so each group's columns are one matmul: [Og*K, Cg] @ [Cg, P]
        weights = np.moveaxis(w.reshape(groups, in_per_group, out_per_group * kprod), 1, 2)
        positions = math.prod(spatial_in)
        per_item = groups * out_per_group * kprod * positions * dtype().itemsize
        batch_per_chunk = max(1, CHUNK_BYTES // max(per_item, 1))
        offsets = list(itertools.product(*(range(k) for k in kernel)))
        for b0 in range(0, n, batch_per_chunk):
            bs = slice(b0, b0 + batch_per_chunk)
            xs = x[bs].reshape(-1, groups, in_per_group, positions)
            cols = matmul(weights, xs).reshape(len(xs), groups, out_per_group, kprod, *spatial_in)
            target = buffer[bs]
            for j, offs in enumerate(offsets):
                window = tuple(slice(o * d - low, o * d - low + (dim - 1) * s + 1, s)
                               for o, d, low, dim, s in zip(offs, dilations, lo, spatial_in, strides))
                target[(slice(None), slice(None), slice(None), *window)] += cols[:, :, :, j]
    crop = tuple(slice(b - low, b - low + o) for b, low, o in zip(begins, lo, out))
    return buffer[(slice(None), slice(None), slice(None), *crop)].reshape(result_shape)


# ---------------------------------------------------------------- Col2Im

def _blocks(size, pad_begin, pad_end, kernel, stride, dilation):
    """Sliding blocks along one axis, as OpenVINO counts them (C++ division truncates toward zero)."""
    span = size + pad_begin + pad_end - dilation * (kernel - 1) - 1
    return int(span / stride) + 1 if span < 0 else span // stride + 1


@op("Col2Im", 15)
class Col2Im15(Op):
    """Sums sliding blocks [N, C*kh*kw, L] (or unbatched [C*kh*kw, L]) back into images [N, C, H, W]."""

    strides = Ints(default=(1, 1))
    dilations = Ints(default=(1, 1))
    pads_begin = Ints(default=(0, 0), min=0, read_below=True)
    pads_end = Ints(default=(0, 0), min=0, read_below=True)
    num_inputs = (3, 3)

    def _pair(self, info, what, port):
        if info.type.name not in ("i32", "i64"):
            raise ShapeError(f"{what} must be i32 or i64, got {info.type}", rule="port.type", port=port)
        if info.shape is not None and tuple(info.shape) != (2,) and len(info.shape) == 1:
            # OpenVINO's reader refuses a dynamic length too ("to_shape was called on a dynamic shape")
            raise ShapeError(f"{what} must be a 1D input of shape [2], got {shape_str(info.shape)}",
                             rule="port.dims", port=port)
        require_rank(info.shape, (1,), what, port)
        if info.value is None:
            return None
        return tuple(int(v) for v in as_index_array(info.value, what, port).reshape(-1))

    def infer(self, inputs):
        data, size_info, kernel_info = inputs
        if data.type.storage is None or data.type.name in ("boolean", "string"):
            refuse(ShapeError(f"data element type {data.type} is not numeric", port=0,  # OpenVINO takes boolean
                              rule="port.type.spec" if data.type.name == "boolean" else "port.type"))
        if size_info.type != kernel_info.type:
            raise ShapeError(f"output_size ({size_info.type}) and kernel_size ({kernel_info.type}) must have one "
                             f"element type", rule="port.type", port=2)
        for name in ("strides", "dilations", "pads_begin", "pads_end"):
            if len(getattr(self, name)) != 2:
                raise ShapeError(f"attribute '{name}' has {len(getattr(self, name))} values, expected 2",
                                 rule="attr.length.spec")  # OpenVINO's reader does not check them
        if any(v <= 0 for v in (*self.strides, *self.dilations)):
            raise ShapeError(f"strides {list(self.strides)} and dilations {list(self.dilations)} must be positive",
                             rule="attr.range.spec")
        require_rank(data.shape, (2, 3), "data", 0)
        size = self._pair(size_info, "output_size", 1)
        kernel = self._pair(kernel_info, "kernel_size", 2)
        if kernel is not None and any(k <= 0 for k in kernel):
            raise ShapeError(f"kernel_size {list(kernel)} must be positive", rule="attr.range", port=2)
        if size is not None and any(s < -1 for s in size):  # OpenVINO crashes on these
            raise ShapeError(f"output_size {list(size)} has a value below -1", rule="attr.range", port=1)
        if size is not None and any(s < 0 for s in size):
            raise negative_size(f"output_size {list(size)} has a negative value", size_info, 1)
        if data.shape is None:
            return [TensorInfo(None, data.type)]
        batched = len(data.shape) == 3
        columns, blocks = data.shape[-2:]
        channels = None
        if kernel is not None and columns is not None:
            product = kernel[0] * kernel[1]
            if columns % product:
                raise ShapeError(f"dimension {columns} of data is not divisible by the kernel size product {product}",
                                 rule="port.dims", port=0)
            channels = columns // product
        if size is not None and kernel is not None and blocks is not None:
            expected = math.prod(_blocks(*args) for args in zip(size, self.pads_begin, self.pads_end, kernel,
                                                                self.strides, self.dilations))
            if expected != blocks:
                raise ShapeError(f"data holds {blocks} blocks; output_size {list(size)} with these kernel, strides, "
                                 f"dilations and pads gives {expected}", rule="port.dims", port=0)
        spatial = (None, None) if size is None else size
        shape = ((data.shape[0],) if batched else ()) + (channels, *spatial)
        return [TensorInfo(shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        data, size, kernel = inputs
        size = [int(v) for v in np.asarray(size).reshape(-1)]
        kernel = [int(v) for v in np.asarray(kernel).reshape(-1)]
        batched = data.ndim == 3
        x = data if batched else data[None]
        n, columns, _ = x.shape
        channels = columns // (kernel[0] * kernel[1])
        grid = [_blocks(*args) for args in zip(size, self.pads_begin, self.pads_end, kernel, self.strides,
                                               self.dilations)]
        dtype = _compute_dtype(x.dtype)
        x = x.astype(dtype, copy=False).reshape(n, channels, kernel[0], kernel[1], *grid)
        # the buffer spans the padded image and every position a block reaches
        extent = [max(pb + s + pe, (g - 1) * st + (k - 1) * d + 1) if g > 0 else pb + s + pe
                  for pb, s, pe, g, st, k, d in zip(self.pads_begin, size, self.pads_end, grid, self.strides,
                                                    kernel, self.dilations)]
        self.reserve(n * channels * math.prod(extent) * np.dtype(dtype).itemsize, f"col2im buffer {extent}")
        buffer = np.zeros((n, channels, *extent), dtype=dtype)
        if min(grid) > 0 and x.size:
            for i, j in itertools.product(range(kernel[0]), range(kernel[1])):
                window = _window((i, j), self.dilations, self.strides, grid)
                buffer[(slice(None), slice(None), *window)] += x[:, :, i, j]
        crop = tuple(slice(pb, pb + s) for pb, s in zip(self.pads_begin, size))
        result = buffer[(slice(None), slice(None), *crop)]
        result = _to_type(result, out_infos[0].type.storage)
        return [result if batched else result[0]]
