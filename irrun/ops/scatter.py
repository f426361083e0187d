"""Index ops: ScatterElementsUpdate-3/12, OneHot-1, NonZero-3.

ScatterElementsUpdate follows OpenVINO's reference kernel: indices (negative ones count from the end) are
visited in row-major order, so among duplicates the last update wins (reduction "none") and reductions fold
the updates into the target in that order. max/min fold with `a > b ? a : b` / `a < b ? a : b`, which
differs from NaN-propagating maximum: a NaN is kept only when it is the last value folded in, and a value
after it replaces it. An integer mean rounds down (floor), a float mean divides in the data type."""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError, ShapeError
from ..ir.types import ELEMENT_TYPES
from .attrs import Bool, Enum, Int, Type
from .registry import Op, TensorInfo, ValueDependentOp, op
from .shape_ops import int_values, merge_dim, normalize_axis
from .shapes import shape_str


# ---------------------------------------------------------------- ScatterElementsUpdate

def _boolean_spec(info) -> str:
    """Boolean indices, axis or depth: OpenVINO's reader takes them (it refuses float ones)."""
    return "port.type.spec" if info.type.name == "boolean" else "port.type"


def _scalar_or_1(info, what, port):
    if info.shape is not None and not (len(info.shape) == 0 or (len(info.shape) == 1 and info.shape[0] in (1, None))):
        raise ShapeError(f"{what} must be a scalar or a 1-element 1-D tensor, got {shape_str(info.shape)}",
                         rule="port.rank", port=port)


@op("ScatterElementsUpdate", 3)
class ScatterElementsUpdate3(Op):
    num_inputs = (4, 4)
    reduction = "none"
    use_init_val = True

    def infer(self, inputs):
        data, indices, updates, axis = inputs
        if not indices.type.is_integer:
            raise ShapeError(f"indices must be integers, got {indices.type}", rule=_boolean_spec(indices), port=1)
        if not axis.type.is_integer:
            raise ShapeError(f"axis must be an integer, got {axis.type}", rule=_boolean_spec(axis), port=3)
        if updates.type != data.type:
            raise ShapeError(f"updates type {updates.type} differs from data type {data.type}", rule="port.type",
                             port=2)
        if self.reduction == "mean" and data.type.name == "boolean":
            raise ShapeError("reduction 'mean' does not take boolean data", rule="port.type", port=0)
        _scalar_or_1(axis, "axis", 3)
        if data.rank is not None and indices.rank is not None and data.rank != indices.rank:
            raise ShapeError(f"indices rank {indices.rank} differs from data rank {data.rank}", rule="port.rank",
                             port=1)
        if indices.shape is not None and updates.shape is not None and (
                len(indices.shape) != len(updates.shape)
                or any(merge_dim(a, b) is False for a, b in zip(indices.shape, updates.shape))):
            raise ShapeError(f"updates shape {shape_str(updates.shape)} differs from indices shape "
                             f"{shape_str(indices.shape)}", rule="port.dims", port=2)
        values = int_values(axis, "axis", 3)
        if values is not None and data.rank is not None:
            normalize_axis(int(values.reshape(-1)[0]), data.rank, port=3)
        return [TensorInfo(data.shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        data, indices, updates, axis_value = inputs
        axis = normalize_axis(int(np.asarray(axis_value).reshape(-1)[0]), data.ndim, port=3)
        if any(i > d for k, (i, d) in enumerate(zip(indices.shape, data.shape)) if k != axis):
            raise ExecutionError(f"indices shape {shape_str(indices.shape)} exceeds data shape "
                                 f"{shape_str(data.shape)} outside axis {axis}", rule="input.index", port=1)
        size = data.shape[axis]
        out = np.array(data, copy=True)
        flat = out.reshape(-1)
        if indices.size == 0:
            return [out]
        rows = _row_indices(indices, axis) if self.reduction == "none" else None
        idx = (indices if rows is None else rows).astype(np.int64, copy=False)  # rows: every index, once
        low, high = int(idx.min()), int(idx.max())
        if low < -size or high >= size:
            bad = (idx < -size) | (idx >= size)
            raise ExecutionError(f"index {int(idx[bad][0])} is out of range [{-size}, {size - 1}] for axis {axis}",
                                 rule="input.index", port=1)
        if low < 0:
            idx = np.where(idx < 0, idx + size, idx)
        if rows is not None:
            _scatter_rows(out, idx, indices.shape, updates, axis)
            return [out]
        coords = list(np.indices(idx.shape, sparse=True))
        coords[axis] = idx
        targets = np.ravel_multi_index(tuple(np.broadcast_arrays(*coords)), data.shape).reshape(-1)
        values = updates.reshape(-1)
        if self.reduction == "none":
            if _all_distinct(targets, flat.size):
                flat[targets] = values
                return [out]
            last = targets.size - 1 - np.unique(targets[::-1], return_index=True)[1]
            flat[targets[last]] = values[last]
            return [out]
        scatter_reduce(flat, targets, values, self.reduction, self.use_init_val)
        return [out]


def _row_indices(indices, axis):
    """The index of each row along `axis` when indices are the same along every other axis (a converter's
    broadcast of one index per row, as in torchvision's MultiScaleRoIAlign), else None."""
    moved = np.moveaxis(indices, axis, 0).reshape(indices.shape[axis], -1)
    if moved.shape[1] == 0:
        return None
    rows = moved[:, 0]
    return rows if (moved == rows[:, None]).all() else None


def _scatter_rows(out, rows, shape, updates, axis):
    """out[rows[k]] = updates[k] along `axis` over the indices' extent `shape`, the last of equal rows winning."""
    last = len(rows) - 1 - np.unique(rows[::-1], return_index=True)[1]
    target = np.moveaxis(out, axis, 0)[(slice(None),) + tuple(slice(0, n) for n in np.delete(shape, axis))]
    target[rows[last]] = np.moveaxis(updates, axis, 0)[last]


def _all_distinct(targets, size) -> bool:
    """Whether no target repeats (then the order the updates are written in does not matter)."""
    seen = np.zeros(size, dtype=bool)
    seen[targets] = True
    return int(np.count_nonzero(seen)) == targets.size


def _neutral(dtype, reduction):
    if reduction in ("sum", "mean"):
        return dtype.type(0)
    if reduction == "prod":
        return dtype.type(1)
    if dtype == np.bool_:
        return np.bool_(reduction == "min")
    if dtype == np.float16:  # the reference computes f16 in f32, whose limits become infinities in f16
        return dtype.type(-np.inf if reduction == "max" else np.inf)
    info = np.finfo(dtype) if dtype.kind == "f" else np.iinfo(dtype)
    return info.min if reduction == "max" else info.max


def scatter_reduce(flat, targets, values, reduction, use_init_val):
    """Fold `values` into flat[targets] in order, in place."""
    dtype = flat.dtype
    touched = np.unique(targets)
    if not use_init_val:
        flat[touched] = _neutral(dtype, reduction)
    if reduction in ("sum", "mean"):
        np.add.at(flat, targets, values)
        if reduction == "mean":
            count = np.bincount(targets, minlength=flat.size)[touched] + int(use_init_val)
            if dtype.kind == "f":
                work = np.float64 if dtype.itemsize > 4 else np.float32
                flat[touched] = (flat[touched].astype(work) / count.astype(work)).astype(dtype)
            else:
                flat[touched] = np.floor_divide(flat[touched], count.astype(dtype))
        return
    if reduction == "prod":
        np.multiply.at(flat, targets, values)
        return
    # max / min: the sequence per target is its current value, then its updates in order
    seq_targets = np.concatenate([touched, targets])
    seq_values = np.concatenate([flat[touched], values])
    order = np.arange(seq_values.size)
    last = np.full(flat.size, -1, dtype=np.int64)
    np.maximum.at(last, seq_targets, order)
    last_nan = np.full(flat.size, -1, dtype=np.int64)
    if dtype.kind == "f":
        nan = np.isnan(seq_values)
        np.maximum.at(last_nan, seq_targets[nan], order[nan])
    valid = order > last_nan[seq_targets]
    best = np.array(flat, copy=True)
    best[touched] = seq_values[last[touched]]
    np.maximum.at(best, seq_targets[valid], seq_values[valid]) if reduction == "max" else \
        np.minimum.at(best, seq_targets[valid], seq_values[valid])
    # ties (only -0.0 and 0.0 differ) go to the last equal value
    equal = valid & (seq_values == best[seq_targets])
    pick = np.full(flat.size, -1, dtype=np.int64)
    np.maximum.at(pick, seq_targets[equal], order[equal])
    chosen = np.where(last_nan[touched] == last[touched], last[touched], pick[touched])
    flat[touched] = seq_values[chosen]


@op("ScatterElementsUpdate", 12)
class ScatterElementsUpdate12(ScatterElementsUpdate3):
    reduction = Enum("none", "sum", "prod", "min", "max", "mean", default="none")
    use_init_val = Bool(default=True)


# ---------------------------------------------------------------- OneHot

def _require_scalar(info, what, port):
    if info.shape is not None and len(info.shape) != 0:
        raise ShapeError(f"{what} must be a scalar, got {shape_str(info.shape)}", rule="port.rank", port=port)


@op("OneHot", 1)
class OneHot1(Op):
    """out[..., i, ...] = on_value where indices == i (i on the new axis), else off_value; indices outside
    [0, depth) (negative ones too) give off_value everywhere."""

    axis = Int()
    num_inputs = (4, 4)

    def infer(self, inputs):
        indices, depth, on_value, off_value = inputs
        if not indices.type.is_integer:
            raise ShapeError(f"indices must be integers, got {indices.type}", rule=_boolean_spec(indices), port=0)
        if not depth.type.is_integer:
            raise ShapeError(f"depth must be an integer, got {depth.type}", rule=_boolean_spec(depth), port=1)
        if on_value.type != off_value.type:
            raise ShapeError(f"on_value type {on_value.type} differs from off_value type {off_value.type}",
                             rule="port.type", port=3)
        _require_scalar(depth, "depth", 1)
        _require_scalar(on_value, "on_value", 2)
        _require_scalar(off_value, "off_value", 3)
        count = None
        if depth.value is not None:
            count = int(np.asarray(depth.value).reshape(-1)[0])
            if count < 0:
                raise ShapeError(f"depth {count} must not be negative", rule="attr.range", port=1)
        if indices.shape is None:
            return [TensorInfo(None, on_value.type)]
        rank = len(indices.shape) + 1
        axis = normalize_axis(self.axis, rank)
        shape = indices.shape[:axis] + (count,) + indices.shape[axis:]
        return [TensorInfo(shape, on_value.type)]

    def run(self, inputs, in_infos, out_infos):
        indices, depth, on_value, off_value = inputs
        count = int(np.asarray(depth).reshape(-1)[0])
        axis = normalize_axis(self.axis, indices.ndim + 1)
        dtype = out_infos[0].type.storage
        self.reserve(indices.size * count * (dtype.itemsize + 1), "one-hot output")
        idx = np.expand_dims(indices.astype(np.int64), axis)
        positions = np.arange(count, dtype=np.int64).reshape((-1,) + (1,) * (indices.ndim - axis))
        hot = idx == positions
        on = np.asarray(on_value, dtype=dtype).reshape(())
        off = np.asarray(off_value, dtype=dtype).reshape(())
        return [np.where(hot, on, off)]


# ---------------------------------------------------------------- NonZero

@op("NonZero", 3)
class NonZero3(ValueDependentOp):
    """Indices of the non-zero elements (NaN counts, -0.0 does not) as [rank, count], row-major order.
    A scalar gives [1, count] (count 0 or 1) with index 0, as the CPU plugin does. Computed once, by `infer`
    (at run time it is handed the input's values)."""

    output_type = Type("i32", "i64", default=ELEMENT_TYPES["i64"])

    def infer(self, inputs):
        (data,) = inputs
        if data.type.storage is None:
            raise ShapeError(f"element type {data.type} is not supported", rule="port.type", port=0)
        rows = None if data.shape is None else max(len(data.shape), 1)
        if data.value is None:
            return [TensorInfo((rows, None), self.output_type)]
        result = self._nonzero(np.asarray(data.value))
        return [TensorInfo(result.shape, self.output_type, result)]

    def _nonzero(self, x):
        if x.ndim == 0:
            return np.zeros((1, int(bool(x != 0))), dtype=self.output_type.storage)
        mask = x != 0
        return np.array(np.nonzero(mask), dtype=self.output_type.storage).reshape(x.ndim, -1)
