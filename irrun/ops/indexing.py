"""Indexing ops: Gather-1/7/8, GatherElements-6, ScatterUpdate-3, Slice-8, StridedSlice-1."""
from __future__ import annotations

import math

import numpy as np

from ..errors import ExecutionError, ShapeError
from .attrs import Int, Ints
from .partial import known_elements
from .registry import Op, TensorInfo, op
from .shape_ops import contiguous, int_values, merge_dim, normalize_axis, one_dim_length, require_max_rank, scalar_axis
from .shapes import reject_nf4, require_rank, shape_str


def merged_batch_dims(data, indices, count: int) -> list:
    """The first `count` dims that data and indices share (batch_dims of Gather and GatherND), merged."""
    batch = []
    for i in range(count):
        merged = merge_dim(data.shape[i], indices.shape[i])
        if merged is False:
            raise ShapeError(f"batch dims of data {shape_str(data.shape)} and indices {shape_str(indices.shape)} "
                             f"differ", rule="port.dims", port=1)
        batch.append(merged)
    return batch


# ---------------------------------------------------------------- Gather

def gather_kernel(data, indices, axis, batch_dims):
    """OpenVINO's Gather: negative indices count from the end, indices still out of range give 0."""
    batch = data.shape[:batch_dims]
    b = math.prod(batch)
    o = math.prod(data.shape[batch_dims:axis])
    a = data.shape[axis]
    n = math.prod(data.shape[axis + 1:])
    idx_shape = indices.shape[batch_dims:]
    i = math.prod(idx_shape)
    out_shape = data.shape[:axis] + idx_shape + data.shape[axis + 1:]
    if math.prod(out_shape) == 0:
        return np.zeros(out_shape, dtype=data.dtype)
    if batch_dims == 0 and -a <= int(indices.min()) and int(indices.max()) < a:
        # every index in range: np.take counts negative ones from the end as OpenVINO does
        if indices.ndim == 1 and i == a and np.array_equal(indices, np.arange(a)):
            return data  # every element in order (an LLM's beam_idx of one beam): nothing to copy
        if axis == 0:
            return np.take(data, indices, axis=0)
        # along a later axis, indexing copies a few elements per row several times faster than take
        leading = (slice(None),) * axis
        return data[leading + (int(indices),)].copy() if indices.ndim == 0 else data[leading + (indices,)]
    idx = indices.reshape(b, i).astype(np.int64)
    idx = np.where(idx < 0, idx + a, idx)
    valid = (idx >= 0) & (idx < a)
    safe = np.where(valid, idx, 0)
    if a == 0:
        return np.zeros(out_shape, dtype=data.dtype)
    d = data.reshape(b, o, a, n)
    out = d[np.arange(b)[:, None, None], np.arange(o)[None, :, None], safe[:, None, :]]
    if not valid.all():
        out = np.where(valid[:, None, :, None], out, np.zeros((), dtype=data.dtype))
    return out.reshape(out_shape)


@op("Gather", 1)
class Gather1(Op):
    any_index_type = True
    num_inputs = (3, 3)

    def get_batch_dims(self, indices_rank):
        return 0

    def geometry(self, data, indices, axis_info):
        reject_nf4(indices, "indices", 1)
        reject_nf4(axis_info, "axis", 2)
        # the axis's type is checked before its rank, which OpenVINO does not always check
        for port, what, info in ((1, "indices", indices), (2, "axis", axis_info)):
            if not info.type.is_integer:  # Gather-1: OpenVINO's reader takes it
                raise ShapeError(f"{what} must be integers, got {info.type}", port=port,
                                 rule="port.type.spec" if self.any_index_type else "port.type")
        require_max_rank(axis_info, 1, "axis", 2, static_only=True)
        axis = scalar_axis(axis_info, data.rank, 2)
        batch_dims = self.get_batch_dims(indices.rank)
        if batch_dims is not None and indices.rank is not None:
            if not 0 <= batch_dims <= indices.rank:
                raise ShapeError(f"batch_dims {batch_dims} is out of range [{-indices.rank}, {indices.rank}]",
                                 rule="attr.range")
        if batch_dims is not None and data.rank is not None and batch_dims > data.rank:
            raise ShapeError(f"batch_dims {batch_dims} exceeds the data rank {data.rank}", rule="attr.range")
        if axis is not None and batch_dims is not None and batch_dims > axis:
            raise ShapeError(f"batch_dims {batch_dims} must not exceed axis {axis}", rule="attr.range")
        return axis, batch_dims

    def infer(self, inputs):
        data, indices, axis_info = inputs
        axis, batch_dims = self.geometry(data, indices, axis_info)
        if data.shape is None or indices.shape is None or batch_dims is None:
            return [TensorInfo(None, data.type)]
        batch = merged_batch_dims(data, indices, batch_dims)
        if axis is None:
            rank = len(data.shape) + len(indices.shape) - 1 - batch_dims
            return [TensorInfo((None,) * rank, data.type)]
        shape = tuple(batch) + data.shape[batch_dims:axis] + indices.shape[batch_dims:] + data.shape[axis + 1:]
        return [TensorInfo(shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        # inference checked the geometry on these very infos (while planning, or at run time): only its numbers
        data, indices, axis = inputs
        axis = int(axis.reshape(-1)[0])
        return [gather_kernel(data, indices, axis + data.ndim if axis < 0 else axis, self.get_batch_dims(indices.ndim))]


@op("Gather", 7)
class Gather7(Gather1):
    any_index_type = False
    batch_dims = Int(default=0)

    def get_batch_dims(self, indices_rank):
        if self.batch_dims >= 0:
            return self.batch_dims
        if indices_rank is None:
            return None
        if self.batch_dims < -indices_rank:
            raise ShapeError(f"batch_dims {self.batch_dims} is out of range for indices rank {indices_rank}",
                             rule="attr.range")
        return self.batch_dims + indices_rank


@op("Gather", 8)
class Gather8(Gather7):
    pass


# ---------------------------------------------------------------- GatherElements

@op("GatherElements", 6)
class GatherElements6(Op):
    axis = Int()
    num_inputs = (2, 2)

    def infer(self, inputs):
        data, indices = inputs
        if indices.type.name not in ("i32", "i64"):
            raise ShapeError(f"indices must be i32 or i64, got {indices.type}", rule="port.type", port=1)
        rank = data.rank if data.rank is not None else indices.rank
        if rank is None:
            return [TensorInfo(None, data.type)]
        if data.rank is not None and indices.rank is not None and data.rank != indices.rank:
            raise ShapeError(f"data rank {data.rank} and indices rank {indices.rank} differ", rule="port.rank",
                             port=1)
        if rank == 0:
            raise ShapeError("data must not be a scalar", rule="port.rank")
        axis = normalize_axis(self.axis, rank)
        if indices.shape is None:
            out = [None] * rank
        else:
            out = list(indices.shape)
        if data.shape is not None:
            for i in range(rank):
                if i == axis:
                    continue
                merged = merge_dim(data.shape[i], out[i])
                if merged is False:
                    raise ShapeError(f"data {shape_str(data.shape)} and indices {shape_str(indices.shape)} "
                                     f"differ outside axis {axis}", rule="port.dims", port=1)
                out[i] = merged
        return [TensorInfo(tuple(out), data.type)]

    def run(self, inputs, in_infos, out_infos):
        data, indices = inputs
        axis = normalize_axis(self.axis, data.ndim)
        size = data.shape[axis]
        idx = indices.astype(np.int64)
        idx = np.where(idx < 0, idx + size, idx)
        if idx.size and ((idx < 0) | (idx >= size)).any():
            bad = indices.reshape(-1)[np.argmax(((idx < 0) | (idx >= size)).reshape(-1))]
            raise ExecutionError(f"index {bad} is out of range for axis {axis} of size {size}",
                                 rule="input.index", port=1)
        return [np.take_along_axis(data, idx, axis=axis)]


# ---------------------------------------------------------------- ScatterUpdate

@op("ScatterUpdate", 3)
class ScatterUpdate3(Op):
    num_inputs = (4, 4)

    def infer(self, inputs):
        data, indices, updates, axis_info = inputs
        if not indices.type.is_integer:
            raise ShapeError(f"indices must be integers, got {indices.type}", rule="port.type", port=1)
        if updates.type != data.type:
            raise ShapeError(f"updates type {updates.type} differs from data type {data.type}", rule="port.type",
                             port=2)
        axis = scalar_axis(axis_info, data.rank, 3)
        ranks = (data.rank, indices.rank, updates.rank)
        if None not in ranks and ranks[2] != ranks[0] + ranks[1] - 1:  # checked whether the axis is known or not
            raise ShapeError(f"updates rank is {ranks[2]}, expected rank(indices) + rank(data) - 1 = "
                             f"{ranks[0] + ranks[1] - 1}", rule="port.rank", port=2)
        if axis is not None and data.shape is not None and indices.shape is not None and updates.shape is not None:
            expected = data.shape[:axis] + indices.shape + data.shape[axis + 1:]
            if len(expected) != len(updates.shape) or any(
                    merge_dim(a, b) is False for a, b in zip(expected, updates.shape)):
                raise ShapeError(f"updates shape {shape_str(updates.shape)} must be {shape_str(expected)}",
                                 rule="port.dims", port=2)
        return [TensorInfo(data.shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        data, indices, updates, axis_value = inputs
        axis = normalize_axis(int(np.asarray(axis_value).reshape(-1)[0]), data.ndim)
        size = data.shape[axis]
        idx = indices.astype(np.int64).reshape(-1)
        bad = (idx < 0) | (idx >= size)
        if bad.any():  # OpenVINO's reference refuses negative indices too
            raise ExecutionError(f"index {int(idx[np.argmax(bad)])} is out of range [0, {size - 1}] for axis {axis}",
                                 rule="input.index", port=1)
        out = np.array(data, copy=True)
        moved = np.moveaxis(out, axis, 0)
        upd = np.moveaxis(updates.reshape(data.shape[:axis] + (idx.size,) + data.shape[axis + 1:]), axis, 0)
        moved[idx] = upd
        return [out]


# ---------------------------------------------------------------- Slice

def slice_range(dim, start, stop, step) -> range:
    """The indices OpenVINO's Slice/StridedSlice select on an axis of size `dim`: a negative start or stop
    counts from the end, then start is clipped to [0, dim] (step > 0) or [0, dim - 1] (step < 0), stop to
    [0, dim] or [-1, dim]. Unlike Python, a negative step with a start before the beginning still takes
    element 0. None stands for a masked bound (the whole extent in the step's direction)."""
    if start is None:
        first = 0 if step > 0 else dim - 1
    else:
        first = start + dim if start < 0 else start
        first = min(max(first, 0), dim if step > 0 else dim - 1)
    if stop is None:
        last = dim if step > 0 else -1
    else:
        last = stop + dim if stop < 0 else stop
        last = min(max(last, 0 if step > 0 else -1), dim)
    if dim == 0:
        return range(0)
    return range(first, last, step)


def slice_length(dim, start, stop, step):
    return None if dim is None else len(slice_range(dim, start, stop, step))


def as_slice(r: range) -> slice:
    """A numpy slice selecting the indices of `r` (non-negative bounds, None for 'through index 0')."""
    if len(r) == 0:
        return slice(0, 0)
    end = r[-1] + (1 if r.step > 0 else -1)
    return slice(r[0], end if end >= 0 else None, r.step)


@op("Slice", 8)
class Slice8(Op):
    num_inputs = (4, 5)

    def plan(self, inputs):
        data = inputs[0]
        vals = []
        for port, what in ((1, "start"), (2, "stop"), (3, "step")):
            require_rank(inputs[port].shape, (1,), what, port)
            vals.append(int_values(inputs[port], what, port))
        if len(inputs) == 5:
            require_rank(inputs[4].shape, (1,), "axes", 4)
            axes = int_values(inputs[4], "axes", 4)
        else:
            axes = None
        lengths = {one_dim_length(inputs[p]) for p in range(1, len(inputs))} - {None}
        if len(lengths) > 1:
            raise ShapeError(f"start, stop, step and axes have different lengths {sorted(lengths)}",
                             rule="port.dims")
        if vals[2] is not None and (vals[2] == 0).any():
            raise ShapeError("step must not be zero", rule="attr.range", port=3)
        if axes is not None and data.shape is not None:  # checked even while starts or stops are unknown
            axes = [normalize_axis(int(a), len(data.shape), "axes", 4) for a in axes.reshape(-1).tolist()]
            if len(set(axes)) != len(axes):
                raise ShapeError(f"axes {axes} repeat a value", rule="attr.value", port=4)
        if data.shape is None or any(v is None for v in vals) or (len(inputs) == 5 and axes is None):
            return None
        start, stop, step = (v.reshape(-1).tolist() for v in vals)
        rank = len(data.shape)
        if axes is None:
            axes = list(range(len(start)))
            if len(start) > rank:
                raise ShapeError(f"{len(start)} slices for input rank {rank}", rule="port.dims", port=1)
        index = [slice(None)] * rank
        for a, b, e, s in zip(axes, start, stop, step):
            index[a] = slice(b, e, s)
        return index

    def infer(self, inputs):
        data = inputs[0]
        index = self.plan(inputs)
        if index is None:
            return [TensorInfo(self.partly_known_shape(inputs), data.type)]
        shape = tuple(d if sl == slice(None) else slice_length(d, sl.start, sl.stop, sl.step)
                      for d, sl in zip(data.shape, index))
        return [TensorInfo(shape, data.type)]

    @staticmethod
    def partly_known_shape(inputs):
        """With some starts, stops or steps unknown, as OpenVINO: only the axes sliced change, each known
        where its own start, stop and step are (their elements partly known: irrun/ops/partial.py)."""
        data = inputs[0]
        if data.shape is None:
            return None
        shape = [None] * len(data.shape)
        params = [known_elements(info) for info in inputs[1:4]]
        axes = known_elements(inputs[4]) if len(inputs) == 5 else \
            None if params[0] is None else list(range(len(params[0])))
        if axes is None or None in axes or any(a < -len(shape) or a >= len(shape) for a in axes):
            return tuple(shape)
        shape = list(data.shape)
        for i, axis in enumerate(axes):
            start, stop, step = (None if p is None or i >= len(p) else p[i] for p in params)
            known = None not in (start, stop, step) and step != 0
            shape[axis] = slice_length(shape[axis], start, stop, step) if known else None
        return tuple(shape)

    def run(self, inputs, in_infos, out_infos):
        index = self.plan(in_infos)
        x = inputs[0]
        return [contiguous(x[tuple(sl if sl == slice(None) else as_slice(slice_range(d, sl.start, sl.stop, sl.step))
                                   for sl, d in zip(index, x.shape))])]


# ---------------------------------------------------------------- StridedSlice

def _mask(values, n):
    values = list(values)
    return [bool(v) for v in values[:n]] + [False] * max(0, n - len(values))


@op("StridedSlice", 1)
class StridedSlice1(Op):
    begin_mask = Ints()
    end_mask = Ints()
    new_axis_mask = Ints(default=())
    shrink_axis_mask = Ints(default=())
    ellipsis_mask = Ints(default=())
    num_inputs = (3, 4)

    MASKS = ("begin_mask", "end_mask", "new_axis_mask", "shrink_axis_mask", "ellipsis_mask")

    def check_masks(self):
        """OpenVINO: every mask element is 0 or 1; every non-empty mask is as long as begin_mask."""
        masks = [tuple(getattr(self, name)) for name in self.MASKS]
        for name, mask in zip(self.MASKS, masks):
            if any(v not in (0, 1) for v in mask):
                raise ShapeError(f"{name} {list(mask)} must hold only 0 and 1", rule="attr.value")
            if mask and len(mask) != len(masks[0]):
                raise ShapeError(f"{name} has {len(mask)} values, begin_mask {len(masks[0])}: every non-empty "
                                 f"mask must have begin_mask's length", rule="attr.length")

    def plan(self, inputs):
        """The slicing as a list of items over the input axes: ('new',), ('index', axis, i),
        ('slice', axis, start, stop, step); None when not known."""
        data = inputs[0]
        vals = []
        for port, what in ((1, "begin"), (2, "end"), (3, "strides")):
            if port < len(inputs):
                require_rank(inputs[port].shape, (1,), what, port)
                if port == 3 and inputs[port].type.storage is not None and not inputs[port].type.is_integer:
                    raise ShapeError(f"strides must be an integer tensor, got {inputs[port].type}",
                                     rule="port.type.spec", port=port)  # OpenVINO's reader takes it
                vals.append(int_values(inputs[port], what, port))
        lengths = {one_dim_length(inputs[p]) for p in range(1, min(len(inputs), 3))} - {None}
        if len(lengths) > 1:
            raise ShapeError(f"begin and end have different lengths {sorted(lengths)}", rule="port.dims")
        lengths |= {one_dim_length(inputs[p]) for p in range(3, len(inputs))} - {None}
        if len(lengths) > 1:  # OpenVINO's reader does not compare the strides' length
            raise ShapeError(f"begin, end and strides have different lengths {sorted(lengths)}", rule="port.dims.spec")
        if len(vals) == 3 and vals[2] is not None and (vals[2] == 0).any():
            raise ShapeError("strides must not be zero", rule="attr.range", port=3)
        if data.shape is None or any(v is None for v in vals):
            return None
        begin, end = vals[0].reshape(-1).tolist(), vals[1].reshape(-1).tolist()
        n = len(begin)
        strides = vals[2].reshape(-1).tolist() if len(vals) == 3 else [1] * n
        bm, em = _mask(self.begin_mask, n), _mask(self.end_mask, n)
        nm, sm, elm = (_mask(m, n) for m in (self.new_axis_mask, self.shrink_axis_mask, self.ellipsis_mask))
        rank = len(data.shape)
        ellipsis_at = elm.index(True) if any(elm) else None
        consumed = sum(1 for i in range(n) if not nm[i] and i != ellipsis_at)
        items, axis = [], 0
        for i in range(n):
            if i == ellipsis_at:
                for _ in range(max(0, rank - consumed)):
                    items.append(("slice", axis, None, None, 1))
                    axis += 1
            elif nm[i]:
                items.append(("new",))
            elif axis >= rank:
                raise ShapeError(f"slice spec {i} indexes past the input rank {rank}", rule="port.dims", port=1)
            elif sm[i]:
                items.append(("index", axis, begin[i]))
                axis += 1
            else:
                items.append(("slice", axis, None if bm[i] else begin[i], None if em[i] else end[i], strides[i]))
                axis += 1
        while axis < rank:
            items.append(("slice", axis, None, None, 1))
            axis += 1
        return items

    def infer(self, inputs):
        data = inputs[0]
        self.check_masks()
        items = self.plan(inputs)
        if items is None:
            return [TensorInfo(None, data.type)]
        shape = []
        for item in items:
            if item[0] == "new":
                shape.append(1)
            elif item[0] == "slice":
                shape.append(slice_length(data.shape[item[1]], *item[2:]))
            else:
                dim = data.shape[item[1]]
                if dim is not None and not -dim <= item[2] < dim:
                    raise ShapeError(f"shrink index {item[2]} is out of range for dimension {dim}",
                                     rule="attr.range", port=1)
        return [TensorInfo(tuple(shape), data.type)]

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        index = []
        for item in self.plan(in_infos):
            if item[0] == "new":
                index.append(None)
            elif item[0] == "index":
                index.append(item[2])
            else:
                index.append(as_slice(slice_range(x.shape[item[1]], *item[2:])))
        return [contiguous(x[tuple(index)])]
