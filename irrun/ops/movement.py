"""Data movement: Transpose-1, Concat-1, Split-1, VariadicSplit-1, Pad-1/12, DepthToSpace-1,
SpaceToDepth-1, CumSum-3, Roll-7. Gather, scatter and slicing ops are in indexing.py."""
from __future__ import annotations


import numpy as np

from ..errors import ExecutionError, ShapeError
from .attrs import Bool, Enum, Int
from .registry import Op, TensorInfo, op
from .shape_ops import contiguous, int_values, merge_dim, normalize_axis, one_dim_length, require_max_rank, scalar_axis
from .shapes import require_rank, shape_str


# ---------------------------------------------------------------- Transpose

@op("Transpose", 1)
class Transpose1(Op):
    num_inputs = (2, 2)

    def order(self, data, order_info):
        require_rank(order_info.shape, (1,), "order", 1)
        values = int_values(order_info, "order", 1)
        if data.shape is None or values is None:
            return None
        rank = len(data.shape)
        order = values.reshape(-1).tolist()
        if not order:
            return list(range(rank))[::-1]
        if sorted(order) != list(range(rank)):
            raise ShapeError(f"order {order} is not a permutation of the input rank {rank}", rule="attr.value",
                             port=1)
        return order

    def infer(self, inputs):
        data, order_info = inputs
        order = self.order(data, order_info)
        if order is None:
            n = one_dim_length(order_info)
            if data.shape is not None:
                if n not in (None, 0, len(data.shape)):
                    raise ShapeError(f"order has {n} values, the input has rank {len(data.shape)}",
                                     rule="port.dims", port=1)
                return [TensorInfo((None,) * len(data.shape), data.type)]
            return [TensorInfo(None if not n else (None,) * n, data.type)]
        return [TensorInfo(tuple(data.shape[a] for a in order), data.type)]

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        order = np.asarray(inputs[1]).astype(np.int64).reshape(-1).tolist() or list(range(x.ndim))[::-1]
        return [contiguous(np.transpose(x, order))]


# ---------------------------------------------------------------- Concat

@op("Concat", 1)
class Concat1(Op):
    axis = Int()
    num_inputs = (1, 1 << 30)

    def infer(self, inputs):
        et = inputs[0].type
        for port, info in enumerate(inputs):
            if info.type != et:
                raise ShapeError(f"input types differ: {et} and {info.type}", rule="port.type", port=port)
        ranks = {info.rank for info in inputs if info.rank is not None}
        if len(ranks) > 1:
            raise ShapeError(f"inputs have different ranks {sorted(ranks)}", rule="port.rank")
        if not ranks:
            return [TensorInfo(None, et)]
        rank = ranks.pop()
        if rank == 0:
            raise ShapeError("cannot concatenate scalars", rule="port.rank")
        axis = normalize_axis(self.axis, rank)
        out = [None] * rank
        total = 0
        for port, info in enumerate(inputs):
            if info.shape is None:
                total = None
                continue
            for i, d in enumerate(info.shape):
                if i == axis:
                    total = None if total is None or d is None else total + d
                    continue
                merged = merge_dim(out[i], d)
                if merged is False:
                    raise ShapeError(f"input {port} shape {shape_str(info.shape)} differs from the others "
                                     f"outside axis {axis}", rule="port.dims", port=port)
                out[i] = merged
        out[axis] = total
        return [TensorInfo(tuple(out), et)]

    def run(self, inputs, in_infos, out_infos):
        axis = normalize_axis(self.axis, inputs[0].ndim)
        return [np.concatenate(inputs, axis=axis).astype(out_infos[0].type.storage, copy=False)]


# ---------------------------------------------------------------- Split / VariadicSplit

def _counted(op_, count: int, outputs) -> list:
    """Split's and VariadicSplit's `count` outputs (made by outputs() once the count is checked), checked after
    OpenVINO's own checks against the layer's ports: OpenVINO's reader takes a layer that declares fewer (the
    others are left unconnected); irrun refuses to run it (port.count.spec)."""
    try:
        op_.check_output_count(count)
    except ShapeError as exc:
        exc.rule = "port.count.spec"
        raise
    return outputs()


@op("Split", 1)
class Split1(Op):
    num_splits = Int()
    num_inputs = (2, 2)

    def infer(self, inputs):
        data, axis_info = inputs
        if self.num_splits <= 0:
            raise ShapeError(f"num_splits {self.num_splits} must be positive", rule="attr.range")
        if axis_info.rank not in (None, 0):  # VariadicSplit takes a [1] axis too, Split does not
            raise ShapeError(f"the axis input must be a scalar, got shape {list(axis_info.shape)}", rule="port.rank",
                             port=1)
        axis = scalar_axis(axis_info, data.rank, 1)
        if data.shape is None:
            return _counted(self, self.num_splits, lambda: [TensorInfo(None, data.type)] * self.num_splits)
        if axis is None:
            unknown = TensorInfo((None,) * len(data.shape), data.type)
            return _counted(self, self.num_splits, lambda: [unknown] * self.num_splits)
        shape = list(data.shape)
        if shape[axis] is not None:
            if shape[axis] % self.num_splits:
                raise ShapeError(f"dimension {shape[axis]} at axis {axis} is not divisible by num_splits "
                                 f"{self.num_splits}", rule="shape.split")
            shape[axis] //= self.num_splits
        return _counted(self, self.num_splits, lambda: [TensorInfo(tuple(shape), data.type)] * self.num_splits)

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        axis = normalize_axis(int(np.asarray(inputs[1]).reshape(-1)[0]), x.ndim)
        return [contiguous(p) for p in np.split(x, self.num_splits, axis=axis)]


@op("VariadicSplit", 1)
class VariadicSplit1(Op):
    num_inputs = (3, 3)

    def infer(self, inputs):
        data, axis_info, lengths_info = inputs
        require_rank(lengths_info.shape, (1,), "split_lengths", 2)
        for port, info in ((1, axis_info), (2, lengths_info)):
            if info.type.storage is not None and not info.type.is_integer:  # OpenVINO's reader takes it
                raise ShapeError(f"{('axis', 'split_lengths')[port - 1]} must be an integer tensor, got {info.type}",
                                 rule="port.type.spec", port=port)
        axis = scalar_axis(axis_info, data.rank, 1)
        lengths = int_values(lengths_info, "split_lengths", 2)
        if lengths is None:
            n = one_dim_length(lengths_info)
            if n is None:
                raise ShapeError("split_lengths has an unknown number of values", rule="port.dims", port=2)
            if data.shape is None or axis is None:
                unknown = TensorInfo(None if data.rank is None else (None,) * data.rank, data.type)
                return _counted(self, n, lambda: [unknown] * n)
            shape = tuple(None if i == axis else d for i, d in enumerate(data.shape))  # the other dims stay
            return _counted(self, n, lambda: [TensorInfo(shape, data.type)] * n)
        lengths = lengths.reshape(-1).tolist()
        if lengths.count(-1) > 1:
            raise ShapeError(f"split_lengths {lengths} has more than one -1", rule="attr.value", port=2)
        if any(v < -1 for v in lengths):
            raise ShapeError(f"split_lengths {lengths} has a value below -1", rule="attr.range", port=2)
        if data.shape is None or axis is None:
            rank = data.rank
            unknown = TensorInfo(None if rank is None else (None,) * rank, data.type)
            return _counted(self, len(lengths), lambda: [unknown] * len(lengths))
        dim = data.shape[axis]
        known = sum(v for v in lengths if v != -1)
        if dim is not None:
            if -1 in lengths:
                if known > dim:
                    raise ShapeError(f"split_lengths {lengths} sum to more than dimension {dim}",
                                     rule="shape.split", port=2)
            elif known != dim:
                raise ShapeError(f"split_lengths {lengths} sum to {known}, not dimension {dim} at axis {axis}",
                                 rule="shape.split", port=2)
        outputs = []
        for v in lengths:
            shape = list(data.shape)
            shape[axis] = (None if dim is None else dim - known) if v == -1 else v
            outputs.append(TensorInfo(tuple(shape), data.type))
        return _counted(self, len(outputs), lambda: outputs)

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        axis = normalize_axis(int(np.asarray(inputs[1]).reshape(-1)[0]), x.ndim)
        sizes = [info.shape[axis] for info in out_infos]
        bounds = np.cumsum([0] + sizes)
        index = [slice(None)] * x.ndim
        outs = []
        for lo, hi in zip(bounds[:-1], bounds[1:]):
            index[axis] = slice(int(lo), int(hi))
            outs.append(contiguous(x[tuple(index)]))
        return outs


# ---------------------------------------------------------------- Pad

def pad_source(n, size, begin, mode):
    """For each output position along one axis: the source index (clipped into range) and whether it is real."""
    pos = np.arange(size, dtype=np.int64) - begin
    valid = (pos >= 0) & (pos < n)
    if mode == "constant" or n == 0:
        return np.clip(pos, 0, max(n - 1, 0)), valid
    if mode == "edge":
        return np.clip(pos, 0, n - 1), valid | True
    if mode == "reflect":
        period = 2 * (n - 1) if n > 1 else 1
        p = np.mod(pos, period)
        return (np.where(p >= n, period - p, p) if n > 1 else np.zeros_like(pos)), valid | True
    period = 2 * n  # symmetric
    p = np.mod(pos, period)
    return np.where(p >= n, period - 1 - p, p), valid | True


@op("Pad", 1)
class Pad1(Op):
    pad_mode = Enum("constant", "edge", "reflect", "symmetric", default="constant")
    num_inputs = (3, 4)
    allow_negative = False

    def pads(self, inputs):
        data = inputs[0]
        out, lengths = [], None
        for port, what in ((1, "pads_begin"), (2, "pads_end")):
            require_rank(inputs[port].shape, (1,), what, port)
            n = one_dim_length(inputs[port])
            values = int_values(inputs[port], what, port)
            if n is not None and data.rank is not None and n != data.rank:
                problem = ShapeError(f"{what} has {n} values, the input has rank {data.rank}", rule="port.dims",
                                     port=port)
                if values is not None or n > data.rank:
                    raise problem
                lengths = lengths or problem  # OpenVINO's reader takes fewer unknown pads than the rank
            if values is not None:
                values = values.reshape(-1).tolist()
                if not self.allow_negative and any(v < 0 for v in values):
                    raise ShapeError(f"{what} {values} has a negative value", rule="attr.range.spec", port=port)
            out.append(values)
        if len(inputs) == 4:
            require_rank(inputs[3].shape, (0,), "pad_value", 3)
            if inputs[3].type != data.type:
                raise ShapeError(f"pad_value type {inputs[3].type} differs from data type {data.type}",
                                 rule="port.type", port=3)
        if lengths is not None:
            lengths.rule = "port.dims.spec"
            raise lengths
        return out

    def infer(self, inputs):
        data = inputs[0]
        begin, end = self.pads(inputs)
        if data.shape is None:
            return [TensorInfo(None, data.type)]
        if begin is None or end is None:
            return [TensorInfo((None,) * len(data.shape), data.type)]
        shape = []
        for axis, (d, b, e) in enumerate(zip(data.shape, begin, end)):
            if d is None:
                shape.append(None)
                continue
            size = d + b + e
            if size < 0:
                raise ShapeError(f"pads {b} and {e} make axis {axis} of size {d} negative",
                                 rule="attr.range.spec")
            if self.pad_mode in ("reflect", "symmetric"):
                limit = d - 1 if self.pad_mode == "reflect" else d
                if b > limit or e > limit:
                    raise ShapeError(f"{self.pad_mode} pads {b}, {e} exceed {limit} on axis {axis} of size {d}",
                                     rule="attr.range")
            if self.pad_mode == "edge" and d == 0 and (b > 0 or e > 0):
                raise ShapeError(f"edge padding of an empty axis {axis}", rule="attr.range")
            shape.append(size)
        return [TensorInfo(tuple(shape), data.type)]

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        begin, _ = self.pads(in_infos)
        out_shape = out_infos[0].shape
        sources = [pad_source(n, size, b, self.pad_mode) for n, size, b in zip(x.shape, out_shape, begin)]
        if self.pad_mode == "constant" or 0 in x.shape:
            value = np.asarray(inputs[3]).reshape(()) if len(inputs) == 4 else 0
            out = np.full(out_shape, value, dtype=x.dtype)
            dst, src = [], []
            for (idx, valid), _n, _b in zip(sources, x.shape, begin):
                where = np.flatnonzero(valid)
                if where.size == 0:
                    return [out]
                dst.append(slice(int(where[0]), int(where[-1]) + 1))
                src.append(slice(int(idx[where[0]]), int(idx[where[-1]]) + 1))
            out[tuple(dst)] = x[tuple(src)]
            return [out]
        return [x[np.ix_(*(idx for idx, _ in sources))] if x.ndim else x.copy()]


@op("Pad", 12)
class Pad12(Pad1):
    allow_negative = True


# ---------------------------------------------------------------- DepthToSpace / SpaceToDepth

class _BlockRearrange(Op):
    """DepthToSpace / SpaceToDepth: the attributes and checks they share."""

    mode = Enum("blocks_first", "depth_first")
    block_size = Int()  # no default: OpenVINO's reader takes a missing one as 0 and refuses it

    def infer(self, inputs):
        (data,) = inputs
        if self.block_size <= 0:
            raise ShapeError(f"block_size {self.block_size} must be positive", rule="attr.range")
        if data.shape is None:
            return [TensorInfo(None, data.type)]
        if len(data.shape) < 3:
            raise ShapeError(f"input rank {len(data.shape)} is below 3", rule="port.rank")
        return [TensorInfo(self.output_shape(data.shape), data.type)]


@op("DepthToSpace", 1)
class DepthToSpace1(_BlockRearrange):
    def output_shape(self, shape):
        k = len(shape) - 2
        div = self.block_size ** k
        c = shape[1]
        if c is not None and c % div:
            raise ShapeError(f"channels {c} are not divisible by block_size^{k} = {div}", rule="port.dims")
        return (shape[0], None if c is None else c // div,
                *(None if d is None else d * self.block_size for d in shape[2:]))

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        n, c, *spatial = x.shape
        k, bs = len(spatial), self.block_size
        cc = c // bs ** k
        if self.mode == "blocks_first":
            y = x.reshape(n, *([bs] * k), cc, *spatial)
            order = [0, k + 1] + [a for i in range(k) for a in (k + 2 + i, 1 + i)]
        else:
            y = x.reshape(n, cc, *([bs] * k), *spatial)
            order = [0, 1] + [a for i in range(k) for a in (k + 2 + i, 2 + i)]
        return [contiguous(y.transpose(order)).reshape(out_infos[0].shape)]


@op("SpaceToDepth", 1)
class SpaceToDepth1(_BlockRearrange):
    def output_shape(self, shape):
        k = len(shape) - 2
        bs = self.block_size
        for d in shape[2:]:
            if d is not None and d % bs:
                raise ShapeError(f"spatial dims {shape_str(shape[2:])} are not divisible by block_size {bs}",
                                 rule="port.dims")
        c = shape[1]
        return (shape[0], None if c is None else c * bs ** k, *(None if d is None else d // bs for d in shape[2:]))

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        n, c, *spatial = x.shape
        k, bs = len(spatial), self.block_size
        y = x.reshape(n, c, *[v for d in spatial for v in (d // bs, bs)])
        blocks = [3 + 2 * i for i in range(k)]
        positions = [2 + 2 * i for i in range(k)]
        order = [0] + blocks + [1] + positions if self.mode == "blocks_first" else [0, 1] + blocks + positions
        return [contiguous(y.transpose(order)).reshape(out_infos[0].shape)]


# ---------------------------------------------------------------- CumSum

@op("CumSum", 3)
class CumSum3(Op):
    """Running sums along an axis (input 1, a scalar or 1-element tensor, default 0), accumulated in the
    data type (integers wrap; f16 accumulates in f32 and rounds once). `exclusive` leaves out the element
    itself, `reverse` sums from the end. OpenVINO does not check the axis value when loading."""

    exclusive = Bool(default=False)
    reverse = Bool(default=False)
    num_inputs = (1, 2)

    def infer(self, inputs):
        data = inputs[0]
        if data.type.storage is None:
            raise ShapeError(f"element type {data.type} is not supported", rule="port.type", port=0)
        if len(inputs) > 1:
            axis = inputs[1]
            if axis.type.name not in ("i32", "i64"):
                raise ShapeError(f"axis must be i32 or i64, got {axis.type}", rule="port.type", port=1)
            if axis.shape is not None and not (len(axis.shape) == 0 or (len(axis.shape) == 1 and axis.shape[0] in (1, None))):
                raise ShapeError(f"axis must be a scalar or hold one value, got {shape_str(axis.shape)}",
                                 rule="port.rank", port=1)
        return [TensorInfo(data.shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        axis = int(np.asarray(inputs[1]).reshape(-1)[0]) if len(inputs) > 1 else 0
        if x.ndim == 0:
            if axis not in (0, -1):
                raise ExecutionError(f"axis {axis} is out of range for a scalar", rule="input.value", port=1)
            return [np.zeros_like(x) if self.exclusive else np.array(x, copy=True)]
        if not -x.ndim <= axis < x.ndim:
            raise ExecutionError(f"axis {axis} is out of range [{-x.ndim}, {x.ndim - 1}]", rule="input.value",
                                 port=1)
        dtype = x.dtype
        work = np.float32 if dtype.kind == "f" and dtype.itemsize < 4 else (np.int64 if dtype == np.bool_ else dtype)
        values = np.flip(x, axis) if self.reverse else x
        with np.errstate(over="ignore"):
            total = np.cumsum(values, axis=axis, dtype=work)
            if self.exclusive:
                total = np.subtract(total, values, dtype=work) if dtype.kind != "f" else _shift_right(total, axis)
        if self.reverse:
            total = np.flip(total, axis)
        return [contiguous(total.astype(dtype, copy=False))]


def _shift_right(total, axis):
    """An exclusive float scan: the inclusive one moved one step along the axis, zero first (subtracting
    the element back would not give the exact sums)."""
    out = np.zeros_like(total)
    n = total.shape[axis]
    if n > 1:
        dst = [slice(None)] * total.ndim
        src = [slice(None)] * total.ndim
        dst[axis], src[axis] = slice(1, None), slice(0, n - 1)
        out[tuple(dst)] = total[tuple(src)]
    return out


# ---------------------------------------------------------------- Roll

@op("Roll", 7)
class Roll7(Op):
    """Shifts elements along axes, wrapping around; shift (i32/i64 scalar or 1-D) pairs with axes (i32/i64
    scalar or 1-D; a scalar shift applies to every axis); shifts on a repeated axis add up."""

    num_inputs = (3, 3)

    def infer(self, inputs):
        data, shift, axes = inputs
        for port, info, what in ((1, shift, "shift"), (2, axes, "axes")):
            if info.type.name not in ("i32", "i64"):
                raise ShapeError(f"{what} must be i32 or i64, got {info.type}", rule="port.type", port=port)
            require_max_rank(info, 1, what, port)
        if shift.rank == 1:
            if axes.rank == 0 or merge_dim(shift.shape[0], None if axes.shape is None else axes.shape[0]) is False:
                raise ShapeError(f"shift {shape_str(shift.shape)} and axes {shape_str(axes.shape)} must be 1-D "
                                 f"of the same size", rule="port.dims", port=2)
        values = int_values(axes, "axes", 2)
        if values is not None and data.rank:
            for axis in values.reshape(-1):
                normalize_axis(int(axis), data.rank, "axis", port=2)
        return [TensorInfo(data.shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        x, shift, axes = inputs
        axes = np.asarray(axes, dtype=np.int64).reshape(-1)
        shift = np.broadcast_to(np.asarray(shift, dtype=np.int64).reshape(-1), axes.shape)
        if x.ndim == 0 or x.size == 0:
            return [np.array(x, copy=True)]
        total = [0] * x.ndim
        for s, a in zip(shift.tolist(), axes.tolist()):
            a = normalize_axis(a, x.ndim, "axis", port=2)
            total[a] = (total[a] + s) % x.shape[a]
        return [contiguous(np.roll(x, total, axis=tuple(range(x.ndim))))]
