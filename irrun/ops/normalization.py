"""Normalisation: MVN-2, MVN-6, NormalizeL2-1, BatchNormInference-1/5, LRN-1, GroupNormalization-12.

Floats narrower than f32 compute in f32 and round once at the end."""
from __future__ import annotations

import functools

import numpy as np

from ..errors import ShapeError
from .attrs import Bool, Enum, Float, Int, Ints
from .reduction import axes_input, normalize_axes
from .registry import Op, TensorInfo, op, same_buffer
from .shapes import shape_str
from .stricter import refuse


def _require_float(info, port=0, rule="port.type"):
    if not info.type.is_float or info.type.storage is None:
        refuse(ShapeError(f"element type must be a float type, got {info.type}", rule=rule, port=port))


def _require_float_data(data):
    """MVN, NormalizeL2, LRN: OpenVINO's reader takes data of any type (checked last, after its own checks)."""
    _require_float(data, 0, "port.type.spec")


def _boolean_spec(info) -> str:
    """GroupNormalization: OpenVINO's reader takes boolean inputs."""
    return "port.type.spec" if info.type.name == "boolean" else "port.type"


def _require_integer_axes(axes):
    """MVN-6, NormalizeL2: OpenVINO's reader takes axes of a float or boolean type."""
    if axes.type.storage is not None and not axes.type.is_integer:
        raise ShapeError(f"axes input must hold integers, got {axes.type}", rule="port.type.spec", port=1)


def _refuse_axes(exc: ShapeError) -> None:
    """MVN's axes: OpenVINO's MVN-1 and MVN-6 shape inference do not check their range (stricter-class)."""
    if exc.rule == "attr.range":
        exc.rule = "attr.range.spec"
    refuse(exc)


def _work(x):
    return x.astype(np.float32) if x.dtype.itemsize < 4 else x


ROWS_BLOCK = 1 << 20  # elements of a block of rows normalised together (smaller tensors: one block)
EINSUM_ROW = 1024  # rows up to this long are summed by einsum (longer: np.mean's pairwise sums, more accurate)


def mvn(x, axes, normalize_variance, eps, inside_sqrt, out=None):
    """(x - mean) [/ sqrt(variance + eps) or / (sqrt(variance) + eps)] over `axes`, into `out` (a new array
    if None; it may be x itself when x is f32 or f64). Over the last axis alone (LayerNorm) a block of rows
    at a time (_Normalise.rows: the same operations on each row whatever the blocks)."""
    work = _work(x)
    result = np.empty(work.shape, work.dtype) if out is None else out
    normalise = _Normalise(normalize_variance, work.dtype.type(eps), inside_sqrt)
    axes = tuple(axes)
    if axes == (work.ndim - 1,) and work.flags.c_contiguous and work.size:
        rows, out_rows = work.reshape(-1, work.shape[-1]), result.reshape(-1, work.shape[-1])
        step = max(1, ROWS_BLOCK // work.shape[-1])
        by_rows = normalise.rows if work.shape[-1] <= EINSUM_ROW else functools.partial(normalise, axes=(1,))
        for start in range(0, rows.shape[0], step):
            by_rows(rows[start:start + step], out=out_rows[start:start + step])
    else:
        normalise(work, axes, result)
    return result.astype(x.dtype, copy=False)


class _Normalise:
    def __init__(self, normalize_variance, eps, inside_sqrt):
        self.normalize_variance, self.eps, self.inside_sqrt = normalize_variance, eps, inside_sqrt

    def __call__(self, work, axes, out):
        np.subtract(work, np.mean(work, axis=axes, keepdims=True, dtype=work.dtype), out=out)
        if self.normalize_variance:
            variance = np.mean(np.multiply(out, out), axis=axes, keepdims=True, dtype=work.dtype)
            out /= self.divisor(variance)

    def rows(self, work, out):
        """Over each row of a 2-D block, the sums by einsum: 3-8 times faster than np.mean over rows of
        40-768 (and a row's bits do not depend on the other rows)."""
        count = work.dtype.type(work.shape[1])
        means = np.einsum("ij->i", work)[:, None]
        means /= count
        np.subtract(work, means, out=out)
        if self.normalize_variance:
            variance = np.einsum("ij,ij->i", out, out)[:, None]
            variance /= count
            out /= self.divisor(variance)

    def divisor(self, variance):
        return np.sqrt(variance + self.eps) if self.inside_sqrt else np.sqrt(variance) + self.eps


@op("MVN", 2)
class MVN2(Op):
    across_channels = Bool(default=False)
    normalize_variance = Bool(default=True)
    eps = Float()
    reduction_axes = Ints(default=None)

    def axes(self, rank):
        if self.reduction_axes:
            return normalize_axes(self.reduction_axes, rank, port=None)
        return tuple(range(1 if self.across_channels else 2, rank))

    def infer(self, inputs):
        (data,) = inputs
        if data.shape is not None:
            if self.reduction_axes is None and len(data.shape) < 2:
                raise ShapeError(f"input rank {len(data.shape)} must be at least 2", rule="port.rank", port=0)
            try:
                self.axes(len(data.shape))
            except ShapeError as exc:
                _refuse_axes(exc)
        _require_float_data(data)
        return [TensorInfo(data.shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        (x,) = inputs
        return [mvn(x, self.axes(x.ndim), self.normalize_variance, self.eps, True)]

    def can_run_into(self, in_infos, out_infos, port=0):
        return in_infos[0].type.name in ("f32", "f64") and same_buffer(in_infos, out_infos)

    def run_into(self, inputs, in_infos, out_infos, out):
        return [mvn(inputs[0], self.axes(inputs[0].ndim), self.normalize_variance, self.eps, True, out)]


@op("MVN", 6)
class MVN6(Op):
    normalize_variance = Bool()
    eps = Float()
    eps_mode = Enum("inside_sqrt", "outside_sqrt")
    num_inputs = (2, 2)

    def infer(self, inputs):
        data, axes = inputs
        _require_integer_axes(axes)
        if axes.is_static and len(axes.shape) != 1:  # OpenVINO: a static axes shape must be 1-D, a scalar too
            raise ShapeError(f"axes must be a 1-D tensor, got {shape_str(axes.shape)}", rule="port.rank", port=1)
        if data.rank is not None and axes.shape is not None and axes.shape and axes.shape[0] is not None \
                and axes.shape[0] > data.rank:  # checked before the axes' range, which OpenVINO does not check
            raise ShapeError(f"{axes.shape[0]} axes given for rank {data.rank}", rule="port.dims", port=1)
        try:
            values = axes_input(axes, data.rank)
        except ShapeError as exc:
            _refuse_axes(exc)
            values = None
        if values is not None and axes.value is not None and len(values) != np.asarray(axes.value).size:
            refuse(ShapeError(f"axes {np.asarray(axes.value).tolist()} must be unique", rule="attr.value.spec", port=1))
        _require_float_data(data)
        return [TensorInfo(data.shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        x, axes = inputs
        axes = normalize_axes(np.asarray(axes).reshape(-1), x.ndim)
        return [mvn(x, axes, self.normalize_variance, self.eps, self.eps_mode == "inside_sqrt")]

    def can_run_into(self, in_infos, out_infos, port=0):
        return in_infos[0].type.name in ("f32", "f64") and same_buffer(in_infos, out_infos)

    def run_into(self, inputs, in_infos, out_infos, out):
        x, axes = inputs
        axes = normalize_axes(np.asarray(axes).reshape(-1), x.ndim)
        return [mvn(x, axes, self.normalize_variance, self.eps, self.eps_mode == "inside_sqrt", out)]


@op("NormalizeL2", 1)
class NormalizeL21(Op):
    eps = Float()
    eps_mode = Enum("add", "max")
    num_inputs = (2, 2)

    def infer(self, inputs):
        data, axes = inputs
        _require_integer_axes(axes)
        axes_input(axes, data.rank)
        _require_float_data(data)
        return [TensorInfo(data.shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        x, axes = inputs
        axes = normalize_axes(np.asarray(axes).reshape(-1), x.ndim)
        work = _work(x)
        total = np.sum(work * work, axis=axes, keepdims=True, dtype=work.dtype)
        eps = work.dtype.type(self.eps)
        total = total + eps if self.eps_mode == "add" else np.maximum(total, eps)
        return [(work / np.sqrt(total)).astype(x.dtype, copy=False)]


class _BatchNorm(Op):
    epsilon = Float()
    num_inputs = (5, 5)
    data_port = 0
    param_ports = (1, 2, 3, 4)  # gamma, beta, mean, variance

    def infer(self, inputs):
        data = inputs[self.data_port]
        _require_float(data, self.data_port)
        for port in range(5):
            if inputs[port].type != data.type:
                raise ShapeError(f"element types {data.type} and {inputs[port].type} do not match", rule="port.type",
                                 port=port)
        if self.epsilon < 0:
            raise ShapeError(f"epsilon {self.epsilon} must be greater than or equal to zero", rule="attr.range")
        if data.shape is not None and len(data.shape) < 2:
            raise ShapeError(f"data rank {len(data.shape)} must be at least 2", rule="port.rank", port=self.data_port)
        channels = None if data.shape is None else data.shape[1]
        for port in self.param_ports:
            shape = inputs[port].shape
            if shape is None:
                continue
            if len(shape) != 1:
                raise ShapeError(f"shape {shape_str(shape)} must be 1-D", rule="port.rank", port=port)
            if shape[0] is not None:
                if channels is not None and shape[0] != channels:
                    raise ShapeError(f"{shape[0]} elements do not match the {channels} channels of the data",
                                     rule="port.dims", port=port)
                channels = shape[0]
        shape = data.shape
        if shape is not None and shape[1] is None and channels is not None:
            shape = (shape[0], channels, *shape[2:])
        return [TensorInfo(shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        x = inputs[self.data_port]
        gamma, beta, mean, variance = (_work(inputs[p]) for p in self.param_ports)
        work = _work(x)
        scale = gamma / np.sqrt(variance + work.dtype.type(self.epsilon))
        shape = (-1,) + (1,) * (x.ndim - 2)
        result = (work - mean.reshape(shape)) * scale.reshape(shape) + beta.reshape(shape)
        return [result.astype(x.dtype, copy=False)]


@op("BatchNormInference", 1)
class BatchNormInference1(_BatchNorm):
    data_port = 2
    param_ports = (0, 1, 3, 4)


@op("BatchNormInference", 5)
class BatchNormInference5(_BatchNorm):
    pass


@op("LRN", 1)
class LRN1(Op):
    alpha = Float()
    beta = Float()
    bias = Float()
    size = Int()
    num_inputs = (2, 2)

    def infer(self, inputs):
        data, axes = inputs
        if axes.shape is not None and len(axes.shape) != 1:
            raise ShapeError(f"axes input must be 1-D, got {shape_str(axes.shape)}", rule="port.rank", port=1)
        if data.rank is not None and axes.shape is not None and axes.shape[0] is not None \
                and axes.shape[0] > data.rank:
            raise ShapeError(f"{axes.shape[0]} axes given for rank {data.rank}", rule="port.dims", port=1)
        axes_input(axes, data.rank)
        _require_float_data(data)
        return [TensorInfo(data.shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        x, axes = inputs
        axes = normalize_axes(np.asarray(axes).reshape(-1), x.ndim)
        work = _work(x)
        dtype = work.dtype.type
        half = (self.size - 1) // 2
        total = (work * work).astype(np.float64)
        for axis in axes:
            total = _window_sum(total, axis, half)
        scale = dtype(self.alpha) / dtype(float(self.size) ** len(axes))
        base = dtype(self.bias) + scale * total.astype(work.dtype)
        return [(work / np.power(base, dtype(self.beta))).astype(x.dtype, copy=False)]


def _window_sum(values, axis, half):
    """Sum over [i - half, i + half] along `axis`, clipped to the array."""
    n = values.shape[axis]
    if n == 0:
        return values
    prefix = np.concatenate([np.zeros_like(np.take(values, [0], axis=axis)), np.cumsum(values, axis=axis)], axis=axis)
    i = np.arange(n)
    upper = np.minimum(n, i + half + 1)
    lower = np.maximum(0, i - half)
    return np.take(prefix, upper, axis=axis) - np.take(prefix, lower, axis=axis)


@op("GroupNormalization", 12)
class GroupNormalization12(Op):
    """Per sample and group of C / num_groups channels: (x - mean) / sqrt(var + epsilon) * scale + bias,
    mean and (biased) variance over the group's channels and all spatial axes."""

    num_groups = Int()
    epsilon = Float()
    num_inputs = (3, 3)

    def infer(self, inputs):
        data, scale, bias = inputs
        for port, info in enumerate(inputs):
            if info.type.storage is None or not (info.type.is_float or info.type.is_integer):
                raise ShapeError(f"element type {info.type} is not numeric", rule=_boolean_spec(info), port=port)
        if self.num_groups < 1:
            raise ShapeError(f"num_groups {self.num_groups} must be a positive integer", rule="attr.range")
        if data.shape is not None and len(data.shape) < 2:
            raise ShapeError(f"data rank {len(data.shape)} must be at least 2", rule="port.rank", port=0)
        channels = None if data.shape is None else data.shape[1]
        for port in (1, 2):
            shape = inputs[port].shape
            if shape is None:
                continue
            if len(shape) != 1:
                raise ShapeError(f"{('scale', 'bias')[port - 1]} shape {shape_str(shape)} must be 1-D",
                                 rule="port.rank", port=port)
            if channels is not None and shape[0] is not None and shape[0] != channels:
                raise ShapeError(f"{shape[0]} elements do not match the {channels} channels of the data",
                                 rule="port.dims", port=port)
        if channels is not None and channels % self.num_groups:
            raise ShapeError(f"{channels} channels are not divisible into {self.num_groups} groups",
                             rule="port.dims", port=0)
        return [TensorInfo(data.shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        x, scale, bias = inputs
        dtype = out_infos[0].type.storage
        work_type = np.float64 if dtype.itemsize > 4 else np.float32
        n, c = x.shape[:2]
        grouped = x.astype(work_type).reshape(n, self.num_groups, -1)
        mean = np.mean(grouped, axis=2, keepdims=True, dtype=np.float64).astype(work_type)
        centred = grouped - mean
        variance = np.mean(centred * centred, axis=2, keepdims=True, dtype=np.float64).astype(work_type)
        normal = (centred / np.sqrt(variance + work_type(self.epsilon))).reshape(x.shape)
        shape = (c,) + (1,) * (x.ndim - 2)
        result = normal * scale.astype(work_type).reshape(shape) + bias.astype(work_type).reshape(shape)
        with np.errstate(invalid="ignore", over="ignore"):
            return [result.astype(dtype)]
