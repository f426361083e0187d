"""Shape ops: ShapeOf-1/3, Reshape-1, Squeeze-1/15, Unsqueeze-1, Range-1/4, Broadcast-1/3, Tile-1, ConvertLike-1.

Shape inference reads constant inputs (TensorInfo.value) when known and gives dynamic dims otherwise."""
from __future__ import annotations

import math

import numpy as np

from ..errors import ExecutionError, ShapeError
from ..ir.types import ELEMENT_TYPES
from .attrs import Bool, Enum, Type
from .conversion import convert_array
from .registry import Op, TensorInfo, op
from .shapes import readable_value, reject_nf4, require_rank, shape_str, sizes_as_read

I64 = ELEMENT_TYPES["i64"]


# ---------------------------------------------------------------- helpers shared with movement.py and indexing.py

def contiguous(a: np.ndarray) -> np.ndarray:
    """A C-contiguous array of the same shape (np.ascontiguousarray turns 0-d into 1-d)."""
    return a if a.flags.c_contiguous else np.array(a, order="C")


def int_values(info: TensorInfo, what: str, port: int, any_number: bool = False) -> np.ndarray | None:
    """A constant integer input as an int64 array (None when not known); refuses non-integer types, unless
    any_number: OpenVINO takes Squeeze's and Unsqueeze's axes of any type, cast to integers (truncated)."""
    reject_nf4(info, what, port)
    if not info.type.is_integer and not (any_number and info.type.storage is not None):
        raise ShapeError(f"{what} must be an integer tensor, got {info.type}", rule="port.type", port=port)
    if any_number and info.type.name == "boolean" and info.value is not None:  # measured: Squeeze, Unsqueeze
        raise ShapeError(f"OpenVINO cannot read the values of {what} of type boolean (Element not supported)",
                         rule="port.type", port=port)
    if readable_value(info, what, port) is None:
        return None
    return np.asarray(info.value).astype(np.int64)


def require_max_rank(info: TensorInfo, rank: int, what: str, port: int, static_only: bool = False) -> None:
    """static_only: OpenVINO checks the rank only of a fully static shape (Squeeze's axes, Gather's axis), so
    for a partly dynamic one the error is of the stricter class (it still stops a run)."""
    if info.shape is not None and len(info.shape) > rank:
        lenient = static_only and None in info.shape
        raise ShapeError(f"{what} must have rank {rank} or less, got {shape_str(info.shape)}",
                         rule="port.rank.spec" if lenient else "port.rank", port=port)


def normalize_axis(axis: int, rank: int, what: str = "axis", port=None) -> int:
    if not -rank <= axis < rank:
        raise ShapeError(f"{what} {axis} is out of range [{-rank}, {rank - 1}]", rule="attr.range", port=port)
    return axis + rank if axis < 0 else axis


def scalar_axis(info: TensorInfo, rank, port: int, what="axis") -> int | None:
    """An axis given as a one-element constant input, normalized (None when not known)."""
    if info.shape is not None and math.prod(d for d in info.shape if d is not None) > 1:
        raise ShapeError(f"{what} must hold one value, got shape {shape_str(info.shape)}", rule="port.dims", port=port)
    values = int_values(info, what, port)
    if values is None or rank is None:
        return None
    if values.size != 1:
        raise ShapeError(f"{what} must hold one value, got {values.size}", rule="port.dims", port=port)
    return normalize_axis(int(values.reshape(-1)[0]), rank, what, port)


def one_dim_length(info: TensorInfo) -> int | None:
    """Number of elements of a 1-D (or scalar) input from its shape, None when unknown."""
    if info.shape is None:
        return None
    if len(info.shape) == 0:
        return 1
    return info.shape[0] if len(info.shape) == 1 else None


def merge_dim(a, b):
    """Two dims that must agree: the known one, or an error marker (False) when both known and differ."""
    if a is None:
        return b
    if b is None or a == b:
        return a
    return False


# ---------------------------------------------------------------- ShapeOf

def shape_value_limit(out_type) -> int:
    """OpenVINO's bounds give a dynamic dim the type's maximum, so a ShapeOf element that reaches it (an i32
    ShapeOf of a dim of 2**31 - 1 or more) is unknown to its inference rather than wrapped."""
    return int(np.iinfo(out_type.storage).max)


@op("ShapeOf", 1)
class ShapeOf1(Op):
    num_inputs = (1, 1)

    @property
    def out_type(self):
        return I64

    def infer(self, inputs):
        (data,) = inputs
        out_type = self.out_type
        if data.shape is None:
            return [TensorInfo((None,), out_type)]
        value = None
        if data.is_static and max(data.shape, default=0) < shape_value_limit(out_type):
            value = np.array(data.shape, dtype=np.int64).astype(out_type.storage)
        return [TensorInfo((len(data.shape),), out_type, value)]

    def run(self, inputs, in_infos, out_infos):
        return [np.array(inputs[0].shape, dtype=np.int64).astype(self.out_type.storage)]


@op("ShapeOf", 3)
class ShapeOf3(ShapeOf1):
    output_type = Type("i32", "i64")  # no default: OpenVINO's reader refuses a ShapeOf-3 without it

    @property
    def out_type(self):
        return self.output_type


# ---------------------------------------------------------------- Reshape

@op("Reshape", 1)
class Reshape1(Op):
    special_zero = Bool()
    num_inputs = (2, 2)

    def target(self, data, pattern_info):
        """OpenVINO's rules: special-zero positions drop out of both element counts; -1 is the input count
        over the output count (1 when the output count is 0, which needs a zero-sized input); the counts
        are compared only when there is no -1 and no special zero."""
        require_rank(pattern_info.shape, (1,), "target shape", 1)  # OpenVINO refuses a scalar target too
        pattern = int_values(pattern_info, "target shape", 1)
        if pattern is None and pattern_info.partial is not None and pattern_info.rank == 1:
            pattern = np.array(pattern_info.partial, dtype=object)  # partly known (irrun/ops/partial.py)
        if pattern is None:
            n = one_dim_length(pattern_info)
            return None if n is None else (None,) * n
        pattern = pattern.reshape(-1)
        rank = data.rank
        out, minus_one, zeros = [], None, False
        in_count, out_count = 1, 1
        static_in = 1  # OpenVINO's product of the known input dims (special-zero positions left out)
        unknown = False  # a partly known pattern: its unknown entries are dynamic dims
        for i, v in enumerate(pattern.tolist()):
            special = v == 0 and self.special_zero
            zeros = zeros or special
            if v is None:
                unknown = True
                out.append(None)
            elif v == -1:
                if minus_one is not None:
                    raise ShapeError("more than one dimension of the target shape is -1", rule="attr.value", port=1)
                minus_one = i
                out.append(None)
            elif v < -1:
                raise ShapeError(f"target shape value {v} at {i} is below -1", rule="attr.range", port=1)
            elif special:
                if rank is None:
                    out.append(None)
                elif i >= rank:
                    raise ShapeError(f"special zero at {i} copies a dimension the input of rank {rank} lacks",
                                     rule="attr.range", port=1)
                else:
                    out.append(data.shape[i])
            else:
                out.append(v)
                out_count *= v
            if rank is not None and i < rank and not special:
                in_count = None if in_count is None or data.shape[i] is None else in_count * data.shape[i]
                static_in *= 1 if data.shape[i] is None else data.shape[i]
        if rank is not None:
            for d in data.shape[len(pattern):]:
                in_count = None if in_count is None or d is None else in_count * d
                static_in *= 1 if d is None else d
        # OpenVINO refuses a 0 beside a -1 unless a known input dim is 0 too: dynamic dims (and a dynamic rank)
        # count as non-zero there.
        if minus_one is not None and out_count == 0 and static_in != 0:
            raise ShapeError("cannot infer the -1 dimension with a zero-sized output dimension unless an "
                             "input dimension is zero-sized too", rule="shape.reshape", port=1)
        if rank is None or unknown:
            return tuple(out)
        if minus_one is not None:
            if out_count == 0:
                out[minus_one] = 1
            elif in_count is not None:
                if in_count % out_count:
                    raise ShapeError(f"input {shape_str(data.shape)} cannot be reshaped to {pattern.tolist()}: the "
                                     f"other dimensions do not divide the element count", rule="shape.reshape",
                                     port=1)
                out[minus_one] = in_count // out_count
        elif not zeros and in_count is not None and in_count != out_count:
            raise ShapeError(f"input {shape_str(data.shape)} ({in_count} elements) cannot be reshaped to "
                             f"{shape_str(tuple(out))} ({out_count} elements)", rule="shape.reshape", port=1)
        return tuple(out)

    def infer(self, inputs):
        data, pattern = inputs
        return [TensorInfo(self.target(data, pattern), data.type)]

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        if x.size != math.prod(out_infos[0].shape):
            # OpenVINO's inference lets a special zero hide a count mismatch; no data can fill it.
            raise ExecutionError(f"cannot reshape {x.size} elements to {shape_str(out_infos[0].shape)}",
                                 rule="shape.reshape")
        return [x.reshape(out_infos[0].shape)]


# ---------------------------------------------------------------- Squeeze / Unsqueeze

@op("Squeeze", 1)
class Squeeze1(Op):
    num_inputs = (1, 2)
    skip_dynamic = False  # Squeeze-15 allow_axis_skip

    def infer(self, inputs):
        data = inputs[0]
        shape = data.shape
        axes = None
        if len(inputs) == 2:
            axes_info = inputs[1]
            require_max_rank(axes_info, 1, "axes", 1, static_only=True)
            values = int_values(axes_info, "axes", 1, any_number=True)
            if shape is None:
                return [TensorInfo(None, data.type)]
            if values is None:
                if one_dim_length(axes_info) == 1 and len(shape) > 0:
                    squeezable = any(d is None or d == 1 for d in shape)
                    return [TensorInfo((None,) * (len(shape) - 1) if squeezable else shape, data.type)]
                return [TensorInfo(None, data.type)]
            axes = {normalize_axis(int(a), len(shape), "axes", 1) for a in values.reshape(-1).tolist()} \
                if len(shape) else set(self._scalar_axes(values))
        if shape is None:
            return [TensorInfo(None, data.type)]
        if not axes:
            if any(d is None for d in shape):
                return [TensorInfo(None, data.type)]
            return [TensorInfo(tuple(d for d in shape if d != 1), data.type)]
        if self.skip_dynamic and any(shape[a] is None for a in axes):
            return [TensorInfo(None, data.type)]
        out = tuple(d for i, d in enumerate(shape) if not (i in axes and (d is None or d == 1)))
        return [TensorInfo(out, data.type)]

    @staticmethod
    def _scalar_axes(values):
        # A rank-0 input: OpenVINO normalizes against rank 0, so any axis is out of range.
        for a in values.reshape(-1).tolist():
            normalize_axis(int(a), 0, "axes", 1)
        return []

    def run(self, inputs, in_infos, out_infos):
        return [inputs[0].reshape(out_infos[0].shape)]


@op("Squeeze", 15)
class Squeeze15(Squeeze1):
    allow_axis_skip = Bool(default=False)

    @property
    def skip_dynamic(self):
        return self.allow_axis_skip


@op("Unsqueeze", 1)
class Unsqueeze1(Op):
    num_inputs = (2, 2)

    def infer(self, inputs):
        data, axes_info = inputs
        require_max_rank(axes_info, 1, "axes", 1)
        values = int_values(axes_info, "axes", 1, any_number=True)
        if values is None or data.shape is None:
            if data.shape is not None and axes_info.shape is not None and tuple(axes_info.shape) == (1,):
                return [TensorInfo((None,) * (len(data.shape) + 1), data.type)]
            return [TensorInfo(None, data.type)]
        raw = values.reshape(-1).tolist()
        if not raw:
            raise ShapeError("axes must not be empty", rule="port.dims", port=1)
        unique = set(raw)
        expanded = len(data.shape) + len(unique)
        axes = sorted({normalize_axis(int(a), expanded, "axes", 1) for a in unique})
        out = list(data.shape)
        for a in axes:
            if a <= len(out):
                out.insert(a, 1)
            else:
                out.append(1)
        return [TensorInfo(tuple(out), data.type)]

    def run(self, inputs, in_infos, out_infos):
        return [inputs[0].reshape(out_infos[0].shape)]


# ---------------------------------------------------------------- Range

def _scalar_value(info, port, what):
    if info.shape is not None and len(info.shape) != 0:
        raise ShapeError(f"'{what}' must be a scalar, got {shape_str(info.shape)}", rule="port.rank", port=port)
    if readable_value(info, what, port) is None:
        return None
    return np.asarray(info.value).reshape(-1)[0]


def range_length(start, stop, step, integral, step_allows_zero):
    values = []
    for v, what in ((start, "start"), (stop, "stop"), (step, "step")):
        v = float(v)
        if not math.isfinite(v):
            raise ShapeError(f"'{what}' cannot be NaN or infinite", rule="attr.range")
        values.append(v)
    start, stop, step = values
    if integral:
        start, stop, step = math.trunc(start), math.trunc(stop), math.trunc(step)
    if (step > 0 and start >= stop) or (step < 0 and start <= stop):
        span = 0.0
    else:
        span = float(stop) - float(start)
    if step == 0:  # a fractional step truncated to 0 for an integer output: OpenVINO gives 0 elements
        return 0
    return int(np.uint32(math.ceil(abs(span) / abs(float(step))) % (1 << 32)))


def range_values(start, step, count, out_type):
    dtype = out_type.storage
    if out_type.is_float:
        # f16/bf16 compute in f32 and round once; f32/f64 in their own type.
        work = np.float64 if dtype == np.float64 else np.float32
        i = np.arange(count).astype(work)
        return (work(work(start) + i * work(step))).astype(dtype)
    i = np.arange(count, dtype=np.uint64 if dtype.kind == "u" else np.int64)
    with np.errstate(over="ignore"):
        wide = i.dtype.type
        out = wide(start) + i * wide(step) if dtype.kind == "u" else np.int64(start) + i * np.int64(step)
    return out.astype(dtype)


def _cast_scalar(value, src, dst):
    return convert_array(np.asarray(value).reshape(1), src, dst)[0]


@op("Range", 1)
class Range1(Op):
    num_inputs = (3, 3)

    def out_type(self, inputs):
        types = {i.type.name for i in inputs}
        if len(types) != 1:
            raise ShapeError(f"start, stop and step types differ: {', '.join(str(i.type) for i in inputs)}",
                             rule="port.type")
        if inputs[0].type.name == "boolean":
            raise ShapeError("start, stop and step must not be boolean", rule="port.type")
        return inputs[0].type

    step_allows_zero = False

    def infer(self, inputs):
        out_type = self.out_type(inputs)
        values = [_scalar_value(info, port, what) for port, (info, what) in
                  enumerate(zip(inputs, ("start", "stop", "step")))]
        # OpenVINO checks each value it knows, the others unknown: Range(Parameter, 10, 0) is refused
        for port, (value, what) in enumerate(zip(values, ("start", "stop", "step"))):
            if value is not None and not math.isfinite(float(value)):
                raise ShapeError(f"'{what}' cannot be NaN or infinite", rule="attr.range", port=port)
        if values[2] is not None and float(values[2]) == 0:
            raise ShapeError("'step' cannot be zero", rule="attr.range", port=2)
        if any(v is None for v in values):
            return [TensorInfo((None,), out_type)]
        values = [self.cast(v, info.type, out_type) for v, info in zip(values, inputs)]
        length = range_length(*values, out_type.is_integer, self.step_allows_zero)
        return [TensorInfo((length,), out_type)]

    def cast(self, value, src, dst):
        return value

    def run(self, inputs, in_infos, out_infos):
        out_type = out_infos[0].type
        start, _, step = (self.cast(np.asarray(x).reshape(-1)[0], info.type, out_type)
                          for x, info in zip(inputs, in_infos))
        return [range_values(start, step, out_infos[0].shape[0], out_type)]


@op("Range", 4)
class Range4(Range1):
    output_type = Type()
    step_allows_zero = True

    def out_type(self, inputs):
        et = self.output_type
        if et.name == "boolean" or et.storage is None or et.name in ("dynamic", "string"):
            raise ShapeError(f"output_type {et} is not a numeric type", rule="attr.value")
        for port, info in enumerate(inputs):
            if info.type.name == "boolean":
                raise ShapeError("start, stop and step must be numeric", rule="port.type", port=port)
        return et

    def cast(self, value, src, dst):
        """Integer outputs take the inputs cast (truncated, wrapped) to the output type; float outputs
        compute from the input values in f32 (f64 for an f64 output) and round once."""
        if dst.is_float:
            return value
        return _cast_scalar(value, src, dst)


# ---------------------------------------------------------------- Broadcast

def numpy_broadcast_target(in_shape, target, port=0):
    """Input shape broadcast to `target` numpy-style (target wins; input dims must be 1 or equal)."""
    if len(in_shape) > len(target):
        raise ShapeError(f"input rank {len(in_shape)} exceeds the target rank {len(target)}",
                         rule="shape.broadcast", port=port)
    out = list(target)
    offset = len(target) - len(in_shape)
    for i, d in enumerate(in_shape):
        t = target[offset + i]
        if d is None or d == 1:
            continue
        if t is None:
            out[offset + i] = d if d != 1 else None
        elif t != d:
            raise ShapeError(f"input {shape_str(in_shape)} does not broadcast to {shape_str(tuple(target))}",
                             rule="shape.broadcast", port=port)
    return tuple(out)


def bidirectional_shape(a, b):
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x == 1:
            out.append(y)
        elif y == 1:
            out.append(x)
        elif x is None or y is None:
            out.append(x if y is None else y)
        elif x == y:
            out.append(x)
        else:
            raise ShapeError(f"shapes {shape_str(a)} and {shape_str(b)} do not broadcast", rule="shape.broadcast")
    return tuple(out)


@op("Broadcast", 1)
class Broadcast1(Op):
    mode = Enum("numpy", "explicit", "pdpd", "none", default="numpy")
    num_inputs = (2, 3)

    def pdpd_axis(self):
        return -1

    @property
    def mode_name(self):
        return "explicit" if self.mode == "none" else self.mode

    def output_shape(self, inputs):
        data, target_info = inputs[0], inputs[1]
        require_rank(target_info.shape, (1,), "target shape", 1)
        target = int_values(target_info, "target shape", 1)
        mode = self.mode_name
        if mode == "explicit":
            if len(inputs) != 3:
                raise ShapeError("explicit mode needs the axes_mapping input", rule="port.count")
            self.check_axes_mapping_length(data.shape, inputs[2])
        n = one_dim_length(target_info)
        known = target is not None or target_info.partial is not None  # OpenVINO: a target it can evaluate
        if mode == "numpy" and known and n is not None and data.shape is not None and n < len(data.shape):
            raise ShapeError(f"target shape has {n} values, fewer than the data rank {len(data.shape)}",
                             rule="shape.broadcast", port=1)
        if target is None and target_info.partial is not None and mode in ("numpy", "bidirectional"):
            return self.partial_shape(data, target_info.partial, mode)
        if target is None:
            if mode == "bidirectional" and data.shape is not None and n is not None:
                return (None,) * max(n, len(data.shape))
            return None if n is None else (None,) * n
        target = tuple(sizes_as_read(target.reshape(-1), f"target shape {target.reshape(-1).tolist()} has a negative "
                                     f"value", target_info, 1))
        if None in target and mode in ("numpy", "bidirectional"):  # -1 read from a Const layer: a dynamic dim
            return self.partial_shape(data, target, mode)
        if data.shape is None:
            return (None,) * len(target) if mode != "bidirectional" else None
        if mode == "numpy":
            return numpy_broadcast_target(data.shape, target)
        if mode == "bidirectional":
            return bidirectional_shape(data.shape, target)
        if mode == "pdpd":
            return self.pdpd_shape(data.shape, target)
        return self.explicit_shape(data.shape, target, inputs[2])

    @staticmethod
    def partial_shape(data, target, mode):
        """A target shape partly known (irrun/ops/partial.py): the known dims are checked as OpenVINO does."""
        if any(t is not None and t < 0 for t in target):
            raise ShapeError(f"target shape {['?' if t is None else t for t in target]} has a negative value",
                             rule="attr.range", port=1)
        if data.shape is None:
            return tuple(target) if mode != "bidirectional" else None
        if mode == "numpy":
            return numpy_broadcast_target(data.shape, tuple(target))
        return bidirectional_shape(data.shape, tuple(target))

    def pdpd_start(self, in_rank, out_rank):
        axis = self.pdpd_axis()
        start = out_rank - in_rank if axis == -1 else axis
        if start < 0:
            raise ShapeError(f"pdpd start axis {start} is negative (input rank {in_rank}, target rank {out_rank})",
                             rule="shape.broadcast")
        return start

    def pdpd_shape(self, in_shape, target):
        """From the start axis on, a target dim 1 takes the input's dim, an input dim 1 the target's."""
        start = self.pdpd_start(len(in_shape), len(target))
        if len(in_shape) < len(target) - start:
            raise ShapeError(f"input {shape_str(in_shape)} is too short for {shape_str(target)} from axis {start}",
                             rule="shape.broadcast")
        out = list(target)
        for i in range(start, len(target)):
            d, t = in_shape[i - start], target[i]
            if d == 1:
                continue
            if t == 1:
                out[i] = d
            elif d is not None and t is not None and d != t:
                raise ShapeError(f"input {shape_str(in_shape)} does not broadcast to {shape_str(target)} "
                                 f"from axis {start}", rule="shape.broadcast")
        return tuple(out)

    @staticmethod
    def check_axes_mapping_length(in_shape, mapping_info):
        """OpenVINO checks axes_mapping's rank and length from its shape, its values unknown or not."""
        require_rank(mapping_info.shape, (1,), "axes_mapping", 2)
        n = one_dim_length(mapping_info)
        if in_shape is not None and n is not None and n != max(len(in_shape), min(n, 1)):  # a scalar takes 0 or 1
            raise ShapeError(f"axes_mapping has {n} values, the input has rank {len(in_shape)}",
                             rule="port.dims", port=2)

    def explicit_shape(self, in_shape, target, mapping_info):
        mapping = int_values(mapping_info, "axes_mapping", 2)
        if mapping is None:
            return tuple(target)
        mapping = mapping.reshape(-1).tolist()
        if sorted(mapping) != mapping or len(set(mapping)) != len(mapping):
            raise ShapeError(f"axes_mapping {mapping} is not sorted ascending", rule="attr.value", port=2)
        for d, a in zip(in_shape, mapping):
            if not 0 <= a < len(target):
                raise ShapeError(f"axes_mapping value {a} is out of range for target rank {len(target)}",
                                 rule="attr.range", port=2)
            if d is not None and d != 1 and target[a] is not None and d != target[a]:
                raise ShapeError(f"input dim {d} does not broadcast to target dim {target[a]} at axis {a}",
                                 rule="shape.broadcast", port=2)
        return tuple(target)

    def infer(self, inputs):
        return [TensorInfo(self.output_shape(inputs), inputs[0].type)]

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        out_shape = out_infos[0].shape
        mode = self.mode_name
        if mode == "explicit":
            mapping = np.asarray(inputs[2]).astype(np.int64).reshape(-1).tolist()
            shape = [1] * len(out_shape)
            for d, a in zip(x.shape, mapping):
                shape[a] = d
            x = x.reshape(shape)
        elif mode == "pdpd":
            start = self.pdpd_start(x.ndim, len(out_shape))
            dims = list(x.shape[:len(out_shape) - start])
            x = x.reshape([1] * start + dims)
        return [contiguous(np.broadcast_to(x, out_shape))]


@op("Broadcast", 3)
class Broadcast3(Broadcast1):
    """Read from IR, pdpd mode starts at axis 0 (BroadcastModeSpec's default), not numpy-aligned."""
    mode = Enum("numpy", "explicit", "bidirectional", "pdpd", default="numpy")

    def pdpd_axis(self):
        return 0


# ---------------------------------------------------------------- Tile

@op("Tile", 1)
class Tile1(Op):
    num_inputs = (2, 2)

    def infer(self, inputs):
        data, repeats_info = inputs
        require_rank(repeats_info.shape, (1,), "repeats", 1)
        if repeats_info.type.name == "boolean":  # OpenVINO's reader takes boolean repeats
            raise ShapeError("repeats must be an integer tensor, got boolean", rule="port.type.spec", port=1)
        repeats = int_values(repeats_info, "repeats", 1)
        partial = repeats_info.partial or ()
        if repeats is None and any(r is not None and r < 0 for r in partial):  # OpenVINO's bounds must be >= 0
            raise ShapeError(f"repeats {['?' if r is None else r for r in partial]} has a negative value",
                             rule="attr.range", port=1)
        if repeats is None:
            n = one_dim_length(repeats_info)
            if n is None or data.shape is None:
                return [TensorInfo(None, data.type)]
            return [TensorInfo((None,) * max(n, len(data.shape)), data.type)]
        repeats = sizes_as_read(repeats.reshape(-1), f"repeats {repeats.reshape(-1).tolist()} has a negative value",
                                repeats_info, 1, minus_one=0)
        if data.shape is None:
            return [TensorInfo(None, data.type)]
        rank = max(len(repeats), len(data.shape))
        shape = (1,) * (rank - len(data.shape)) + tuple(data.shape)
        reps = (1,) * (rank - len(repeats)) + tuple(repeats)
        return [TensorInfo(tuple(None if d is None else d * r for d, r in zip(shape, reps)), data.type)]

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        reps = np.asarray(inputs[1]).astype(np.int64).reshape(-1).tolist()
        rank = len(out_infos[0].shape)
        x = x.reshape((1,) * (rank - x.ndim) + x.shape)
        reps = [1] * (rank - len(reps)) + reps
        return [np.tile(x, reps)]


# ---------------------------------------------------------------- ConvertLike

@op("ConvertLike", 1)
class ConvertLike1(Op):
    num_inputs = (2, 2)

    def infer(self, inputs):
        data, like = inputs
        if like.type.storage is None:
            raise ShapeError(f"conversion to {like.type} is not supported", rule="port.type", port=1)
        return [TensorInfo(data.shape, like.type)]

    def run(self, inputs, in_infos, out_infos):
        return [convert_array(inputs[0], in_infos[0].type, out_infos[0].type)]
