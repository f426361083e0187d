"""Ops that sort or search: Unique-10, Bucketize-3, SearchSorted-15.

Comparisons are C++'s: -0.0 equals 0.0, and a NaN compares false with everything. So in Unique every NaN is
its own element (sorted mode puts them last); SearchSorted's lower_bound gives 0 for a NaN value in both
modes, Bucketize gives 0 (right bound) or the bucket count (left bound)."""
from __future__ import annotations

import math

import numpy as np

from ..errors import ShapeError
from ..ir.types import ELEMENT_TYPES
from .attrs import Bool, Type
from .registry import Op, TensorInfo, op
from .shape_ops import int_values, merge_dim, normalize_axis
from .shapes import shape_str

I64 = ELEMENT_TYPES["i64"]


# ---------------------------------------------------------------- Unique

def unique_slices(x, axis, sort):
    """Unique slices of `x` along `axis` (None: elements of the flattened x). Returns (unique, first index,
    inverse, counts); in input order of first occurrence unless `sort`, then ascending (lexicographic for
    slices, NaN last)."""
    if axis is None:
        rows = x.reshape(-1, 1)
    else:
        moved = np.moveaxis(x, axis, 0)
        rows = moved.reshape(moved.shape[0], math.prod(moved.shape[1:]))
    n = rows.shape[0]
    if n == 0:
        empty = np.zeros(0, dtype=np.int64)
        return x.reshape(-1) if axis is None else x, empty, empty, empty
    keys = rows.astype(np.float64) if rows.dtype == np.float16 else rows
    order = np.lexsort(keys.T[::-1]) if keys.shape[1] else np.arange(n)  # stable: first occurrence first
    ordered = keys[order]
    new_group = np.ones(n, dtype=bool)
    new_group[1:] = (ordered[1:] != ordered[:-1]).any(axis=1)  # NaN != NaN: every NaN starts a group
    group_of_sorted = np.cumsum(new_group) - 1
    firsts = order[new_group]
    groups = firsts.size
    if not sort:  # number the groups by first occurrence
        rank = np.empty(groups, dtype=np.int64)
        rank[np.argsort(firsts, kind="stable")] = np.arange(groups)
        group_of_sorted = rank[group_of_sorted]
        firsts = np.sort(firsts)
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = group_of_sorted
    counts = np.bincount(inverse, minlength=groups)
    if axis is None:
        unique = rows[firsts, 0]
    else:
        unique = np.take(x, firsts, axis=axis)
    return unique, firsts, inverse, counts


@op("Unique", 10)
class Unique10(Op):
    """Outputs: the unique elements (or slices along `axis`, the optional second input), the index of each
    one's first occurrence, each input element's (slice's) index into the unique output, and the counts."""

    sorted = Bool(default=True)
    index_element_type = Type("i32", "i64", default=I64)
    count_element_type = Type("i32", "i64", default=I64)
    num_inputs = (1, 2)

    def axis(self, inputs):
        if len(inputs) < 2:
            return None, False
        axis_info = inputs[1]
        if axis_info.shape is not None and not (len(axis_info.shape) == 0 or axis_info.shape == (1,)):
            raise ShapeError(f"axis must be a scalar or hold one value, got {shape_str(axis_info.shape)}",
                             rule="port.rank", port=1)
        values = int_values(axis_info, "axis", 1)
        if values is None or inputs[0].rank is None:
            return None, True
        if inputs[0].rank == 0:
            raise ShapeError("an axis needs data of rank 1 or more", rule="port.rank", port=0)
        return normalize_axis(int(values.reshape(-1)[0]), inputs[0].rank, port=1), True

    def infer(self, inputs):
        data = inputs[0]
        axis, has_axis = self.axis(inputs)
        types = (data.type, self.index_element_type, self.index_element_type, self.count_element_type)
        if data.value is not None and (axis is not None or not has_axis):
            results = unique_slices(np.asarray(data.value), axis, self.sorted)
            values = [np.asarray(r).astype(t.storage) for r, t in zip(results, types)]
            return [TensorInfo(v.shape, t, v) for v, t in zip(values, types)]
        if has_axis and axis is None:
            unique = None if data.rank is None else (None,) * data.rank
            return [TensorInfo(unique, types[0]), TensorInfo((None,), types[1]), TensorInfo((None,), types[2]),
                    TensorInfo((None,), types[3])]
        if axis is None:
            count = None if not data.is_static else math.prod(data.shape)
            unique = (None,)
        else:
            count = data.shape[axis]
            unique = data.shape[:axis] + (None,) + data.shape[axis + 1:]
        return [TensorInfo(unique, types[0]), TensorInfo((None,), types[1]), TensorInfo((count,), types[2]),
                TensorInfo((None,), types[3])]

    def run(self, inputs, in_infos, out_infos):
        return [info.value for info in out_infos]


# ---------------------------------------------------------------- Bucketize

def _comparable(a, b):
    """Both arrays in one numpy type that holds both exactly enough to compare (f16 compares as f32)."""
    dtype = np.result_type(a.dtype, b.dtype)
    if dtype == np.float16:
        dtype = np.dtype(np.float32)
    return a.astype(dtype, copy=False), b.astype(dtype, copy=False)


@op("Bucketize", 3)
class Bucketize3(Op):
    """The bucket of each element: with_right_bound, buckets[i-1] < x <= buckets[i] (lower_bound), else
    buckets[i-1] <= x < buckets[i] (upper_bound). NaN gives 0 with the right bound, len(buckets) without."""

    output_type = Type("i32", "i64")  # no default: OpenVINO's reader refuses a Bucketize without it
    with_right_bound = Bool(default=True)
    num_inputs = (2, 2)

    def infer(self, inputs):
        data, buckets = inputs
        if buckets.rank is not None and buckets.rank != 1:
            raise ShapeError(f"buckets must be 1-D, got {shape_str(buckets.shape)}", rule="port.rank", port=1)
        for port, info in enumerate(inputs):
            if info.type.name == "boolean" or info.type.storage is None:
                raise ShapeError(f"input type {info.type} is not numeric", rule="port.type", port=port)
        return [TensorInfo(data.shape, self.output_type)]

    def run(self, inputs, in_infos, out_infos):
        data, buckets = _comparable(*inputs)
        side = "left" if self.with_right_bound else "right"
        out = np.searchsorted(buckets, data, side=side)
        if data.dtype.kind == "f" and self.with_right_bound:
            out = np.where(np.isnan(data), 0, out)
        return [out.astype(self.output_type.storage)]


# ---------------------------------------------------------------- SearchSorted

@op("SearchSorted", 15)
class SearchSorted15(Op):
    """For each value, the insertion position in the innermost row of sorted_sequence with the same leading
    coordinates (a 1-D sequence serves every value): the first element >= value (right_mode false) or >
    value (right_mode true). A NaN value gives 0."""

    right_mode = Bool(default=False)
    output_type = Type("i32", "i64", default=I64)
    num_inputs = (2, 2)

    def infer(self, inputs):
        sequence, values = inputs
        if sequence.type != values.type:
            raise ShapeError(f"values type {values.type} differs from sorted_sequence type {sequence.type}",
                             rule="port.type", port=1)
        if sequence.rank == 0 or values.rank == 0:
            raise ShapeError("sorted_sequence and values must have rank 1 or more", rule="port.rank",
                             port=0 if sequence.rank == 0 else 1)
        if sequence.shape is not None and values.shape is not None and len(sequence.shape) > 1:
            if len(sequence.shape) != len(values.shape) or any(
                    merge_dim(a, b) is False for a, b in zip(sequence.shape[:-1], values.shape[:-1])):
                raise ShapeError(f"sorted_sequence {shape_str(sequence.shape)} and values {shape_str(values.shape)} "
                                 f"differ outside the last dim", rule="port.dims", port=1)
        return [TensorInfo(values.shape, self.output_type)]

    def run(self, inputs, in_infos, out_infos):
        sequence, values = inputs
        if sequence.dtype == np.float16:
            sequence, values = sequence.astype(np.float32), values.astype(np.float32)
        side = "right" if self.right_mode else "left"
        if sequence.ndim == 1:
            out = np.searchsorted(sequence, values, side=side)
        else:
            rows = sequence.reshape(-1, sequence.shape[-1])
            vals = values.reshape(rows.shape[0], values.shape[-1])
            self.reserve(vals.size * rows.shape[1], "search comparisons")
            # sorted rows: lower_bound position = how many elements are below (or at, right mode) the value
            below = rows[:, None, :] <= vals[:, :, None] if self.right_mode else rows[:, None, :] < vals[:, :, None]
            out = below.sum(axis=2).reshape(values.shape)
        if values.dtype.kind == "f":
            out = np.where(np.isnan(values), 0, out)
        return [out.astype(self.output_type.storage)]
