"""Reductions: ReduceSum/Mean/Max/Min/Prod-1, ReduceL1/L2-4, ReduceLogicalAnd/Or-1; TopK-1/3/11.

OpenVINO's reference conventions: f16 reduces in f32 and rounds once; integers accumulate in their own type
(wrapping); ReduceMean on integers truncates toward zero; an empty reduction gives 0 (sum, mean, L1, L2),
1 (prod), the f32 lowest value for float max (so -inf in f16), +inf for float min, and the type's limits
for integers; max/min skip NaN (a NaN never compares greater or smaller)."""
from __future__ import annotations

import math

import numpy as np

from ..errors import ExecutionError, ShapeError
from ..ir.types import ELEMENT_TYPES
from .attrs import Bool, Enum, Int, Type
from .reduce_rows import sum_over
from .registry import Op, TensorInfo, op
from .shapes import as_index_array, readable_value, reject_nf4, shape_str
from .stricter import refuse


def normalize_axes(values, rank, port=1, what="axes"):
    axes = []
    for v in values:
        v = int(v)
        if not -rank <= v < rank:
            raise ShapeError(f"{what} {v} is out of range [{-rank}, {rank - 1}] for rank {rank}",
                             rule="attr.range", port=port)
        axes.append(v + rank if v < 0 else v)
    return tuple(sorted(set(axes)))


def axes_input(info, rank, port=1):
    """The constant axes (normalised, unique, sorted) or None when not known yet."""
    if info.shape is not None and len(info.shape) > 1:
        raise ShapeError(f"axes input must be a scalar or 1-D, got {shape_str(info.shape)}", rule="port.rank", port=port)
    reject_nf4(info, "axes input", port)
    if not info.type.is_integer:
        raise ShapeError(f"axes input must hold integers, got {info.type}", rule="port.type", port=port)
    if readable_value(info, "axes input", port) is None or rank is None:
        return None
    return normalize_axes(as_index_array(info.value, "axes", port).reshape(-1), rank, port)


class _Reduce(Op):
    keep_dims = Bool(default=False)
    num_inputs = (2, 2)
    allowed = "numeric"

    def check_type(self, info):
        name = info.type.name
        if self.allowed == "boolean":
            if name != "boolean":
                raise ShapeError(f"element type must be boolean, got {name}", rule="port.type", port=0)
        elif name in ("boolean", "string", "dynamic") or info.type.storage is None:
            raise ShapeError(f"element type {name} is not numeric", rule="port.type", port=0)

    def infer(self, inputs):
        data, axes_info = inputs
        self.check_type(data)
        rank = data.rank
        axes = axes_input(axes_info, rank)
        if data.shape is None:
            return [TensorInfo(None, data.type)]
        if axes is None:
            if self.keep_dims:
                return [TensorInfo((None,) * rank, data.type)]
            count = None
            if axes_info.shape is not None:
                count = 1 if len(axes_info.shape) == 0 else axes_info.shape[0]
            if count is not None and count == 0:
                return [TensorInfo(data.shape, data.type)]
            # Repeated axes make the output rank unknown until the values are.
            return [TensorInfo(None, data.type)]
        if self.keep_dims:
            shape = tuple(1 if i in axes else d for i, d in enumerate(data.shape))
        else:
            shape = tuple(d for i, d in enumerate(data.shape) if i not in axes)
        return [TensorInfo(shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        axes = normalize_axes(np.asarray(inputs[1]).reshape(-1), x.ndim)
        out_dtype = out_infos[0].type.storage
        work = x.astype(np.float32) if x.dtype == np.float16 else x
        if not axes:
            # No axes: each element is reduced alone (so ReduceL1 gives |x|, ReduceMax turns NaN into its start).
            work, axes = work[..., None], (x.ndim,)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            result = self.reduce(work, axes)
            # (keep_dims: the reshape to the inferred shape puts back the reduced axes as 1s)
            return [np.asarray(result).astype(out_dtype, copy=False).reshape(out_infos[0].shape)]

    def reduce(self, x, axes):
        raise NotImplementedError


@op("ReduceSum", 1)
class ReduceSum1(_Reduce):
    def reduce(self, x, axes):
        return sum_over(x, axes)


@op("ReduceProd", 1)
class ReduceProd1(_Reduce):
    def reduce(self, x, axes):
        return np.prod(x, axis=axes, dtype=x.dtype)


@op("ReduceMean", 1)
class ReduceMean1(_Reduce):
    def reduce(self, x, axes):
        count = math.prod(x.shape[a] for a in axes)
        total = sum_over(x, axes)
        if count == 0:
            return np.zeros_like(total)
        if x.dtype.kind == "f":
            return total / x.dtype.type(count)
        if x.dtype.kind == "u":
            return total // x.dtype.type(count)
        wide = total.astype(np.int64)
        return (np.sign(wide) * (np.abs(wide) // count)).astype(x.dtype)


@op("ReduceMax", 1)
class ReduceMax1(_Reduce):
    def reduce(self, x, axes):
        if x.dtype.kind == "f":
            start = np.finfo(np.float32).min if x.dtype.itemsize <= 4 else np.finfo(x.dtype).min
            return np.fmax.reduce(x, axis=axes, initial=start)
        return np.max(x, axis=axes, initial=np.iinfo(x.dtype).min)


@op("ReduceMin", 1)
class ReduceMin1(_Reduce):
    def reduce(self, x, axes):
        if x.dtype.kind == "f":
            return np.fmin.reduce(x, axis=axes, initial=np.inf)
        return np.min(x, axis=axes, initial=np.iinfo(x.dtype).max)


@op("ReduceL1", 4)
class ReduceL14(_Reduce):
    def reduce(self, x, axes):
        return np.sum(np.abs(x), axis=axes, dtype=x.dtype)


@op("ReduceL2", 4)
class ReduceL24(_Reduce):
    def reduce(self, x, axes):
        if x.dtype.kind == "f":
            return np.sqrt(np.sum(x * x, axis=axes, dtype=x.dtype))
        squares = np.sum(x * x, axis=axes, dtype=x.dtype)
        return np.trunc(np.sqrt(squares.astype(np.float64)))


@op("ReduceLogicalAnd", 1)
class ReduceLogicalAnd1(_Reduce):
    allowed = "boolean"

    def reduce(self, x, axes):
        return np.all(x, axis=axes)


@op("ReduceLogicalOr", 1)
class ReduceLogicalOr1(_Reduce):
    allowed = "boolean"

    def reduce(self, x, axes):
        return np.any(x, axis=axes)


# ---------------------------------------------------------------- TopK

@op("TopK", 1)
class TopK1(Op):
    axis = Int()
    mode = Enum("max", "min")
    sort = Enum("none", "index", "value")
    index_element_type = Type("i32", "i64", default=ELEMENT_TYPES["i32"])
    num_inputs = (2, 2)

    def k_value(self, info):
        if info.shape is not None and len(info.shape) != 0:
            raise ShapeError(f"the K input must be a scalar, got {shape_str(info.shape)}", rule="port.rank", port=1)
        if not info.type.is_integer:
            raise ShapeError(f"the K input must be an integer, got {info.type}", rule="port.type", port=1)
        if info.value is None:
            return None
        k = int(np.asarray(info.value).reshape(-1)[0])
        if k < 0:
            raise ShapeError(f"the value of K must be greater or equal to zero (got {k})", rule="attr.range", port=1)
        return k

    def infer(self, inputs):
        data, k_info = inputs
        if data.type.name in ("boolean", "string", "dynamic") or data.type.storage is None:
            # OpenVINO's reader takes boolean data
            refuse(ShapeError(f"element type {data.type} is not supported",
                              rule="port.type.spec" if data.type.name == "boolean" else "port.type", port=0))
        if self.index_element_type.name not in ("i32", "i64"):
            raise ShapeError(f"index_element_type must be i32 or i64, got {self.index_element_type}",
                             rule="attr.value")
        k = self.k_value(k_info)
        if data.shape is None:
            return [TensorInfo(None, data.type), TensorInfo(None, self.index_element_type)]
        if not data.shape:
            raise ShapeError("input rank must be greater than 0", rule="port.rank", port=0)
        (axis,) = normalize_axes([self.axis], len(data.shape), port=None, what="axis")
        shape = list(data.shape)
        shape[axis] = k
        return [TensorInfo(tuple(shape), data.type), TensorInfo(tuple(shape), self.index_element_type)]

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        k = int(np.asarray(inputs[1]).reshape(-1)[0])
        (axis,) = normalize_axes([self.axis], x.ndim, port=None, what="axis")
        if k > x.shape[axis]:
            raise ExecutionError(f"K {k} is larger than the dimension {x.shape[axis]} of axis {axis}",
                                 rule="input.k", port=1)
        values, indices = topk(x, k, axis, self.mode == "max", self.sort)
        return [values, indices.astype(self.index_element_type.storage)]


@op("TopK", 3)
class TopK3(TopK1):
    pass


@op("TopK", 11)
class TopK11(TopK1):
    stable = Bool(default=False)


def topk(x, k, axis, largest, sort):
    """The k best along `axis`, ties (==, so -0.0 and 0.0 tie) going to the lower index. sort=value orders by
    value then index, sort=index by index; sort=none (left to std::nth_element by OpenVINO) gives value order."""
    last = axis == x.ndim - 1
    moved = x if last else np.moveaxis(x, axis, -1)
    n = moved.shape[-1]
    if moved.size == n and 0 < 4 * k <= n and not (moved.dtype.kind == "f" and np.isnan(moved).any()):
        # one row, few of many: only the values at least as good as the k-th best need sorting
        row = moved.reshape(n)
        at = n - k if largest else k - 1
        kth = np.partition(row, at)[at]
        better = (row > kth if largest else row < kth).nonzero()[0]
        chosen = (row == kth).nonzero()[0][:k - len(better)]  # the tied ones, after the better ones, by index
        if len(better):
            chosen = np.concatenate([better[_stable_order(row[better], largest)], chosen])
        chosen = chosen.reshape(moved.shape[:-1] + (k,))
    else:
        chosen = _stable_order(moved, largest)[..., :k]
    if sort == "index":
        chosen = np.sort(chosen, axis=-1)
    values = moved[chosen] if moved.ndim == 1 else np.take_along_axis(moved, chosen, axis=-1)
    if last:
        return values, chosen
    return np.moveaxis(values, -1, axis), np.moveaxis(chosen, -1, axis)


def _stable_order(values, largest):
    """argsort along the last axis, best first, ties in index order."""
    if largest:
        # Stable ascending sort of the reversed row, read backwards: descending values, ascending indices on ties.
        order = np.argsort(values[..., ::-1], axis=-1, kind="stable")[..., ::-1]
        return (values.shape[-1] - 1) - order
    return np.argsort(values, axis=-1, kind="stable")
