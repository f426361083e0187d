"""Interpolate-4 and Interpolate-11, following OpenVINO's reference kernels.

Every mode is applied axis by axis: each interpolated axis gets a table of taps (input indices and
weights per output position); float data with finite values then goes through one matrix product per
axis with the dense (output, input) weights (in float32, float64 for f64 data), the axes in the order
with the fewest multiply-adds; non-finite float data and other data gathers and sums the K taps in
float64, a loop over K, never over elements. Coordinates are computed in float32 as OpenVINO does;
OpenVINO sums in float32 in its own order, so float results agree to rounding."""
from __future__ import annotations

import itertools
import math

import numpy as np

from ..errors import ShapeError
from .attrs import Bool, Enum, Float, Ints
from .blas import matmul
from .registry import Op, TensorInfo, op
from .shape_ops import int_values, normalize_axis, one_dim_length
from .shapes import negative_size, require_rank
from .stricter import refuse

F32 = np.float32
EPSILON = F32(1.0e-6)
MODES_4 = ("nearest", "linear", "linear_onnx", "cubic")
MODES_11 = MODES_4 + ("bilinear_pillow", "bicubic_pillow")


# ---------------------------------------------------------------- coordinates

def source_coords(mode, out_len, in_len, scale):
    """Input coordinate (float32) of each output position along one axis."""
    x = np.arange(out_len, dtype=F32)
    scale = F32(scale)
    if scale == F32(1.0) or out_len == in_len:
        return x
    half = F32(0.5)
    if mode == "half_pixel":
        return (x + half) / scale - half
    if mode == "pytorch_half_pixel":
        return (x + half) / scale - half if out_len > 1 else np.zeros(out_len, F32)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_half_pixel_for_nn":
        return (x + half) / scale
    # align_corners
    if out_len == 1:
        return np.zeros(out_len, F32)
    return x * F32(in_len - 1) / F32(out_len - 1)


def _round_half_away(x):
    x = x.astype(np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def nearest_index(mode, coords, downsample):
    c = coords.astype(np.float64)
    if mode == "round_prefer_floor":
        tie = coords == (np.trunc(c) + 0.5).astype(F32)
        idx = np.where(tie, np.floor(c), _round_half_away(c))
    elif mode == "round_prefer_ceil":
        idx = _round_half_away(c)
    elif mode == "floor":
        idx = np.floor(c)
    elif mode == "ceil":
        idx = np.ceil(c)
    else:  # simple
        idx = np.ceil(c) if downsample else np.trunc(c)
    return idx.astype(np.int64)


# ---------------------------------------------------------------- taps per mode (index (O, K), weight (O, K))

def taps_linear(coords, in_len, scale, a):
    """Triangle filter ('linear'): neighbours round(x) - r .. round(x) + r inside the input."""
    r = 2 if scale > 1.0 else int(math.ceil(F32(2.0) / F32(a)))
    centre = _round_half_away(coords).astype(np.int64)
    offsets = np.arange(-r, r + 1)
    idx = centre[:, None] + offsets[None, :]
    dz = (coords[:, None] - idx.astype(F32)).astype(F32)
    w = F32(a) * np.maximum(F32(0), F32(1) - np.abs(F32(a) * dz))
    valid = (idx >= 0) & (idx < in_len)
    return np.clip(idx, 0, max(in_len - 1, 0)), np.where(valid, w, 0).astype(np.float64)


def taps_linear_onnx(coords, in_len):
    c = np.clip(coords, F32(0), F32(in_len - 1))
    i1 = np.minimum(c.astype(np.int64), in_len - 1)
    i2 = np.minimum(i1 + 1, in_len - 1)
    d1 = np.abs(c - i1.astype(F32))
    d2 = np.abs(c - i2.astype(F32))
    same = i1 == i2
    d1 = np.where(same, F32(0.5), d1)
    d2 = np.where(same, F32(0.5), d2)
    return np.stack([i1, i2], 1), np.stack([d2, d1], 1).astype(np.float64)


def taps_cubic(coords, in_len, a):
    base = np.floor(coords).astype(np.int64)
    s = np.abs((coords - base.astype(F32)).astype(F32))
    a = F32(a)
    one, two = F32(1), F32(2)
    w = np.stack([
        ((a * (s + one) - F32(5) * a) * (s + one) + F32(8) * a) * (s + one) - F32(4) * a,
        ((a + two) * s - (a + F32(3))) * s * s + one,
        ((a + two) * (one - s) - (a + F32(3))) * (one - s) * (one - s) + one,
        ((a * (two - s) - F32(5) * a) * (two - s) + F32(8) * a) * (two - s) - F32(4) * a,
    ], 1)
    idx = np.clip(base[:, None] + np.arange(-1, 3)[None, :], 0, in_len - 1)
    return idx, w.astype(np.float64)


def taps_pillow(in_len, out_len, support, filter_fn):
    """Pillow's precompute_coeffs over the whole input (box = [0, in_len])."""
    scale = in_len / out_len
    filterscale = max(scale, 1.0)
    support = support * filterscale
    ksize = int(math.ceil(support)) * 2 + 1
    xx = np.arange(out_len, dtype=np.float64)
    centre = (xx + 0.5) * scale
    xmin = np.maximum(np.trunc(centre - support + 0.5).astype(np.int64), 0)
    xmax = np.minimum(np.trunc(centre + support + 0.5).astype(np.int64), in_len) - xmin
    k = np.arange(ksize)
    w = filter_fn((k[None, :] + xmin[:, None] - centre[:, None] + 0.5) * (1.0 / filterscale))
    w = np.where(k[None, :] < xmax[:, None], w, 0.0)
    total = w.sum(1, keepdims=True)
    w = np.where(total != 0, w / np.where(total != 0, total, 1), w)
    idx = np.clip(xmin[:, None] + k[None, :], 0, max(in_len - 1, 0))
    return idx, w


def _bilinear_filter(x):
    x = np.abs(x)
    return np.where(x < 1.0, 1.0 - x, 0.0)


def _bicubic_filter(a):
    def f(x):
        x = np.abs(x)
        return np.where(x < 1.0, ((a + 2.0) * x - (a + 3.0)) * x * x + 1,
                        np.where(x < 2.0, (((x - 5) * x + 8) * x - 4) * a, 0.0))
    return f


DENSE_LIMIT = 1 << 22  # entries of an (output, input) weight matrix worth a matmul


def dense_weights(idx, w, in_len, work):
    """The (output, input) matrix of one axis's taps, summed in float64, in the work type."""
    out_len = idx.shape[0]
    weights = np.zeros((out_len, in_len), np.float64)
    np.add.at(weights, (np.repeat(np.arange(out_len), idx.shape[1]), idx.reshape(-1)), w.reshape(-1))
    return weights.astype(work)


BAND_ROWS = 32  # output positions per block of a banded product


def bands(weights):
    """(o0, o1, lo, hi) blocks of BAND_ROWS output rows with the input span [lo, hi) of their nonzero
    weights (lo == hi: none), or None when the blocks would not save half the dense products."""
    out_len, in_len = weights.shape
    nonzero = weights != 0
    blocks = []
    for o0 in range(0, out_len, BAND_ROWS):
        cols = np.flatnonzero(nonzero[o0:o0 + BAND_ROWS].any(0))
        lo, hi = (int(cols[0]), int(cols[-1]) + 1) if cols.size else (0, 0)
        blocks.append((o0, min(o0 + BAND_ROWS, out_len), lo, hi))
    if 2 * sum((o1 - o0) * (hi - lo) for o0, o1, lo, hi in blocks) > out_len * in_len:
        return None
    return blocks


def matmul_axis(y, axis, weights):
    """weights @ y along `axis` (y and weights in one float type): one BLAS product over all the other
    axes when `axis` is first or last, else one per index of the axes before it; when the weights are
    banded (resizing by a large factor), one product per block of output positions over the inputs
    the block uses. Zero weights contribute 0 * x, so y must be finite."""
    out_len, in_len = weights.shape
    pre = int(np.prod(y.shape[:axis], dtype=np.int64))
    post = int(np.prod(y.shape[axis + 1:], dtype=np.int64))
    shape = y.shape[:axis] + (out_len,) + y.shape[axis + 1:]
    y = np.ascontiguousarray(y)
    blocks = bands(weights)
    if post == 1:  # rows [pre, in] @ weights.T: the output positions are the product's columns
        rows, right = y.reshape(pre, in_len), np.ascontiguousarray(weights.T)
        if blocks is None:
            return matmul(rows, right).reshape(shape)
        r = np.empty((pre, out_len), y.dtype)

        def product(o0, o1, lo, hi):
            matmul(rows[:, lo:hi], right[lo:hi, o0:o1], out=r[:, o0:o1])
    else:  # weights @ stack [pre, in, post]
        stack = y.reshape(pre, in_len, post)
        if blocks is None:
            return matmul(weights, stack[0] if pre == 1 else stack).reshape(shape)
        r = np.empty((pre, out_len, post), y.dtype)

        def product(o0, o1, lo, hi):
            matmul(weights[o0:o1, lo:hi], stack[:, lo:hi], out=r[:, o0:o1])
    for o0, o1, lo, hi in blocks:
        if lo == hi:
            r[:, o0:o1] = 0
        else:
            product(o0, o1, lo, hi)
    return r.reshape(shape)


def sum_taps(x, axis, idx, w):
    """sum_k w[o, k] * x[..., idx[o, k], ...] along `axis`, tap by tap in float64."""
    shape = [1] * x.ndim
    shape[axis] = idx.shape[0]
    out = None
    for k in range(idx.shape[1]):
        term = np.take(x, idx[:, k], axis=axis).astype(np.float64) * w[:, k].reshape(shape)
        out = term if out is None else out + term
    if out is None:
        new_shape = list(x.shape)
        new_shape[axis] = idx.shape[0]
        out = np.zeros(new_shape)
    return out


def _work_type(dtype):
    return np.float64 if dtype == np.float64 else np.float32


def apply_taps(x, axis, idx, w):
    """sum_k w[o, k] * x[..., idx[o, k], ...] along `axis`: for float data one matrix product with the
    (output, input) weights in the data's work type (f32, f64 for f64), else tap by tap in float64."""
    out_len, in_len = idx.shape[0], x.shape[axis]
    if x.dtype.kind == "f" and idx.size and out_len * in_len <= DENSE_LIMIT:
        work = _work_type(x.dtype)
        return matmul_axis(x.astype(work, copy=False), axis, dense_weights(idx, w, in_len, work))
    return sum_taps(x, axis, idx, w)


def product_order(shape, steps, gather=False):
    """The order of the axis steps (axis, idx, ...) with the fewest multiply-adds of the dense products,
    or with `gather` the fewest elements gathered (ties: the later axis first, whose product is one BLAS
    call over the whole array)."""
    def cost(order):
        dims, total = list(shape), 0
        for i in order:
            axis, idx = steps[i][0], steps[i][1]
            dims[axis] = idx.shape[0]
            total += int(np.prod(dims, dtype=np.int64)) * (1 if gather else shape[axis])
        return total
    orders = itertools.permutations(range(len(steps))) if len(steps) <= 4 else [tuple(range(len(steps)))]
    return min(orders, key=lambda order: (cost(order), [-steps[i][0] for i in order]))


def resample(x, steps):
    """Apply the taps (axis, idx, w) of several axes. Float data with finite values goes through dense
    products in the work type (f32; f64 for f64), in the cheapest axis order, identity axes skipped;
    non-finite float data tap by tap in float64 (a dense product would spread 0 * inf = NaN over the
    whole axis), other data too. The result is a new array."""
    # one pass without a temporary: a sum is finite only if every value is (an overflow only sends
    # the data to the slower exact path)
    finite = x.dtype.kind != "f" or bool(np.isfinite(x.sum(dtype=_work_type(x.dtype))))
    if finite and x.dtype.kind == "f" and all(
            idx.size and idx.shape[0] * x.shape[a] <= DENSE_LIMIT for a, idx, _ in steps):
        work = _work_type(x.dtype)
        y = x.astype(work, copy=False)
        for i in product_order(x.shape, steps):
            axis, idx, w = steps[i]
            weights = dense_weights(idx, w, x.shape[axis], work)
            if weights.shape[0] == weights.shape[1] and np.array_equal(weights, np.eye(len(weights), dtype=work)):
                continue
            y = matmul_axis(y, axis, weights)
        return y.copy() if y is x else y
    y = x
    for axis, idx, w in steps:
        y = apply_taps(y, axis, idx, w) if finite else sum_taps(y, axis, idx, w)
    return y


# ---------------------------------------------------------------- the op

# What OpenVINO's Interpolate-4/11 take for sizes and axes, and for scales (narrower than the spec's "integer").
INDEX_TYPES, SCALE_TYPES = ("i32", "i64", "u32", "u64"), ("f32", "f16", "bf16")


def require_type(info, names, what: str, port: int) -> None:
    """names None: any integer type (Interpolate-1's sizes)."""
    if not (info.type.is_integer if names is None else info.type.name in names):
        raise ShapeError(f"{what} must be of type {', '.join(names or ('integer',))}, got {info.type}",
                         rule="port.type", port=port)


class InterpolateBase(Op):
    mode = Enum(*MODES_4)
    shape_calculation_mode = Enum("sizes", "scales")
    coordinate_transformation_mode = Enum("half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn",
                                          "align_corners", default="half_pixel")
    nearest_mode = Enum("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple",
                        default="round_prefer_floor")
    antialias = Bool(default=False)
    pads_begin = Ints(default=(0,))
    pads_end = Ints(default=(0,))
    cube_coeff = Float(default=-0.75)

    sizes_types = INDEX_TYPES

    # ports: subclasses say where sizes, scales and axes come from
    def ports(self, inputs):
        raise NotImplementedError

    def pads(self, rank):
        def fit(p):
            p = list(p)[:rank]
            return p + [0] * (rank - len(p))
        return fit(self.pads_begin), fit(self.pads_end)

    def geometry(self, inputs):
        """(padded input shape, axes, sizes or None, scales or None, output shape); None when the rank is unknown."""
        data = inputs[0]
        if not (data.type.is_float or data.type.name in ("i8", "u8", "i32", "i64", "u32", "u64", "i16", "u16")):
            raise ShapeError(f"data type {data.type} is not supported", rule="port.type")
        sizes_info, scales_info, axes_info = self.ports(inputs)
        if sizes_info is not None:
            require_rank(sizes_info.shape, (1,), "sizes", self.sizes_port)
            require_type(sizes_info, self.sizes_types, "sizes", self.sizes_port)
        if scales_info is not None:
            require_rank(scales_info.shape, (1,), "scales", self.scales_port)
            require_type(scales_info, SCALE_TYPES, "scales", self.scales_port)
        if axes_info is not None:
            require_rank(axes_info.shape, (1,), "axes", self.axes_port)
            require_type(axes_info, INDEX_TYPES, "axes", self.axes_port)
        if data.shape is None:
            return None
        rank = len(data.shape)
        stricter = []  # problems OpenVINO's reader lets pass: raised after the checks it makes too
        if any(p < 0 for p in self.pads_begin) or any(p < 0 for p in self.pads_end):
            raise ShapeError("pads_begin and pads_end must not be negative", rule="attr.range")
        pb, pe = self.pads(rank)
        padded = tuple(None if d is None else d + b + e for d, b, e in zip(data.shape, pb, pe))
        if axes_info is None:
            axes = list(range(rank))
        else:
            values = int_values(axes_info, "axes", self.axes_port)
            if values is None:
                return padded, None, None, None, (None,) * rank
            if (values < 0).any():  # OpenVINO reads the axes unsigned: a negative axis is out of range
                raise ShapeError(f"axes {values.reshape(-1).tolist()} must lie in [0, {rank - 1}]", rule="attr.range",
                                 port=self.axes_port)
            axes = [normalize_axis(int(a), rank, "axes", self.axes_port) for a in values.reshape(-1).tolist()]
            if len(set(axes)) != len(axes):
                stricter.append(ShapeError(f"axes {axes} repeat a value", rule="attr.value.spec",
                                           port=self.axes_port))
        sizes = scales = None
        if self.shape_calculation_mode == "sizes":
            values = int_values(sizes_info, "sizes", self.sizes_port)
            _check_count(one_dim_length(sizes_info), len(axes), "sizes", self.sizes_port, stricter)
            if values is not None:
                sizes = [int(v) for v in values.reshape(-1)]
                if any(v < 0 for v in sizes):
                    error = negative_size(f"sizes {sizes} has a negative value", sizes_info, self.sizes_port)
                    if error.rule == "attr.range":
                        raise error
                    stricter.append(error)
        else:
            _check_count(one_dim_length(scales_info), len(axes), "scales", self.scales_port, stricter)
            if scales_info.value is not None:
                scales = [F32(v) for v in np.asarray(scales_info.value, dtype=F32).reshape(-1)]
        out = list(padded)
        for i, a in enumerate(axes):
            if sizes is not None:
                out[a] = sizes[i]
            elif scales is not None:
                out[a] = None if padded[a] is None else int(F32(padded[a]) * (scales[i] + EPSILON))
            else:
                out[a] = None
        if stricter:
            if any(d is not None and d < 0 for d in out):
                raise stricter[0]
            refuse(stricter[0])  # the checker goes on with OpenVINO's output shape
        return padded, axes, sizes, scales, tuple(out)

    def infer(self, inputs):
        data = inputs[0]
        geometry = self.geometry(inputs)
        if geometry is None:
            return [TensorInfo(None, data.type)]
        return [TensorInfo(geometry[4], data.type)]

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        padded, axes, sizes, scales, out_shape = self.geometry(in_infos)
        pb, pe = self.pads(x.ndim)
        if any(pb) or any(pe):
            x = np.pad(x, list(zip(pb, pe)))
        if scales is None:
            scales = [F32(out_shape[a]) / F32(padded[a]) if padded[a] else F32(0) for a in axes]
        dtype = x.dtype
        if 0 in out_shape or x.size == 0:
            return [np.zeros(out_shape, dtype)]
        mode = self.mode
        if mode == "nearest":
            return [self.nearest(x, axes, scales, out_shape)]
        if mode in ("bilinear_pillow", "bicubic_pillow"):
            return [self.pillow(x, axes, out_shape)]
        steps = []
        zero = None
        if mode == "linear":
            downsample = any(s < F32(1) for s in scales)
            antialias = self.antialias and downsample
            for a, s in zip(axes, scales):
                coords = source_coords(self.coordinate_transformation_mode, out_shape[a], x.shape[a], s)
                idx, w = taps_linear(coords, x.shape[a], s, s if antialias else F32(1))
                total = w.sum(1)
                bad = total == 0
                steps.append((a, idx, w / np.where(bad, 1, total)[:, None]))
                if bad.any():
                    shape = [1] * x.ndim
                    shape[a] = len(bad)
                    zero = bad.reshape(shape) if zero is None else (zero | bad.reshape(shape))
        else:
            for a, s in zip(axes, scales):
                coords = source_coords(self.coordinate_transformation_mode, out_shape[a], x.shape[a], s)
                if mode == "linear_onnx":
                    steps.append((a, *taps_linear_onnx(coords, x.shape[a])))
                else:
                    steps.append((a, *taps_cubic(coords, x.shape[a], self.cube_coeff)))
        y = resample(x, steps)  # a new array
        if zero is not None:
            y = np.where(zero, 0, y)
        if dtype.kind in "iu":
            y = _round_half_away(y) if mode == "linear" else np.trunc(y)
        return [_cast(y, dtype, copy=False)]

    def nearest(self, x, axes, scales, out_shape):
        steps = []
        for a, s in zip(axes, scales):
            coords = source_coords(self.coordinate_transformation_mode, out_shape[a], x.shape[a], s)
            steps.append((a, np.clip(nearest_index(self.nearest_mode, coords, s < F32(1)), 0, x.shape[a] - 1)))
        y = x
        for i in product_order(x.shape, steps, gather=True):  # shrinking axes first; a selection, so exact
            a, idx = steps[i]
            if not np.array_equal(idx, np.arange(x.shape[a])):
                y = np.take(y, idx, axis=a)
        return y.copy() if y is x else y

    def pillow(self, x, axes, out_shape):
        if len(axes) != 2:
            raise ShapeError("pillow modes need exactly two axes", rule="attr.value")
        if self.mode == "bilinear_pillow":
            support, fn = 1.0, _bilinear_filter
        else:
            support, fn = 2.0, _bicubic_filter(float(self.cube_coeff))
        h, w = axes
        y = x
        # Horizontal pass (axis w) first, then vertical. Integer data is rounded and clipped after each
        # pass; f16/bf16 run in f32 (OpenVINO's evaluate converts them) and round once at the end.
        store = np.float32 if x.dtype == np.float16 else x.dtype
        for a in (w, h):
            if out_shape[a] == x.shape[a]:
                continue
            idx, wt = taps_pillow(x.shape[a], out_shape[a], support, fn)
            r = apply_taps(y, a, idx, wt)
            if x.dtype.kind in "iu":
                info = np.iinfo(x.dtype)
                r = np.clip(np.trunc(np.where(r >= 0, r + 0.5, r - 0.5)), info.min, info.max)
            y = _cast(r, store)
        return _cast(y, x.dtype)


def _cast(y, dtype, copy=True):
    with np.errstate(invalid="ignore", over="ignore"):
        return y.astype(dtype, copy=copy)


@op("Interpolate", 4)
class Interpolate4(InterpolateBase):
    num_inputs = (3, 4)
    sizes_port, scales_port, axes_port = 1, 2, 3

    def ports(self, inputs):
        return inputs[1], inputs[2], inputs[3] if len(inputs) == 4 else None


@op("Interpolate", 11)
class Interpolate11(InterpolateBase):
    mode = Enum(*MODES_11)
    num_inputs = (2, 3)
    sizes_port = scales_port = 1
    axes_port = 2

    def ports(self, inputs):
        axes = inputs[2] if len(inputs) == 3 else None
        if self.shape_calculation_mode == "sizes":
            return inputs[1], None, axes
        return None, inputs[1], axes


def _check_count(n: int | None, axes: int, what: str, port: int, stricter: list) -> None:
    """sizes or scales against the axes: OpenVINO refuses fewer values than axes, and ignores extra ones."""
    if n is not None and n < axes:
        raise ShapeError(f"{what} has {n} values for {axes} axes", rule="port.dims", port=port)
    if n is not None and n > axes:
        stricter.append(ShapeError(f"{what} has {n} values for {axes} axes (OpenVINO ignores the extra ones)",
                                   rule="port.dims.spec", port=port))
