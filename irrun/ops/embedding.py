"""Embedding bags: EmbeddingBagOffsetsSum-3, EmbeddingBagPackedSum-3, EmbeddingSegmentsSum-3,
EmbeddingBagOffsets-15 and EmbeddingBagPacked-15.

Each bag gathers rows of the table and sums them (optionally weighted, or averaged). The kernel gathers
all rows at once and accumulates them into their bag with one unbuffered np.add.at, which adds in index
order like OpenVINO does. Floats narrower than f32 compute in f32; integers accumulate in 64 bits and
wrap to the table type; an integer mean divides with truncation toward zero.

Run-time checks follow OpenVINO's CPU plugin (its only executable implementation in 2026.4): an index
outside the table, a negative or decreasing offset, an offset equal to the number of indices (so the
last bag cannot be empty, although the spec allows it) and a used default index outside the table are
errors; a default index of -1 means "fill empty bags with zeros" (EmbeddingSegmentsSum: an error when
used); segment ids outside [0, num_segments) are skipped. The CPU plugin assumes sorted segment ids, as
the spec demands; irrun sums unsorted ones into their segments as the reference kernel does."""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError, ShapeError
from .attrs import Enum
from .registry import Op, TensorInfo, op
from .shapes import as_index_array, negative_size, shape_str

INDEX_TYPES = ("i32", "i64")


def _check_index_type(info, what, port):
    if info.type.name not in INDEX_TYPES:
        raise ShapeError(f"{what} must be i32 or i64, got {info.type}", rule="port.type", port=port)


def _same_type(info, reference, what, port):
    if info.type != reference.type:
        raise ShapeError(f"{what} element type {info.type} does not match {reference.type}", rule="port.type",
                         port=port)


def _rank(info, ranks, what, port):
    if info.shape is not None and len(info.shape) not in ranks:
        expected = " or ".join(str(r) for r in ranks)
        raise ShapeError(f"{what} rank is {len(info.shape)} ({shape_str(info.shape)}), expected {expected}",
                         rule="port.rank", port=port)


def _compatible(a, b, what, port):
    """Shapes that must be equal where both are known; returns the merged shape."""
    if a is None:
        return b
    if b is None:
        return a
    if len(a) != len(b) or any(x is not None and y is not None and x != y for x, y in zip(a, b)):
        raise ShapeError(f"{what}: {shape_str(a)} and {shape_str(b)} must be the same", rule="port.dims", port=port)
    return tuple(x if x is not None else y for x, y in zip(a, b))


def _check_table(table):
    if table.type.storage is None or table.type.name in ("boolean", "string"):
        raise ShapeError(f"embedding table element type {table.type} is not numeric", rule="port.type", port=0)
    if table.shape is not None and len(table.shape) == 0:
        raise ShapeError("the embedding table cannot be a scalar", rule="port.rank", port=0)


def _out_shape(table, rows):
    if table.shape is None:
        return None
    return (rows, *table.shape[1:])


def _compute_dtype(dtype):
    if dtype.kind == "f":
        return np.float64 if dtype.itemsize == 8 else np.float32
    return np.uint64 if dtype.kind == "u" and dtype.itemsize == 8 else np.int64


def _check_indices(indices, table_rows):
    if indices.size and (indices.min() < 0 or indices.max() >= table_rows):
        bad = indices[(indices < 0) | (indices >= table_rows)][0]
        raise ExecutionError(f"index {int(bad)} is out of range [0, {table_rows - 1}] of the embedding table",
                             rule="input.index")


def _default_row(default_index, table_rows, needed):
    """The default index as an int; -1 fills empty bags with zeros, other values outside the table are
    errors when some bag is empty."""
    if default_index is None:
        return None
    value = int(np.asarray(default_index).reshape(-1)[0])
    if needed and (value >= table_rows or value < -1):
        raise ExecutionError(f"default index {value} is out of range [0, {table_rows - 1}] of the embedding table",
                             rule="input.index")
    return value


def bag_reduce(table, indices, bag_of_index, bags, weights, counts, default, mean, out_dtype):
    """Sum (or mean) of table rows per bag. bag_of_index: the bag of each index (-1: skipped); counts:
    the number of indices per bag; empty bags take table[default] when default >= 0, else zeros."""
    ctype = _compute_dtype(table.dtype)
    rows = table.reshape(table.shape[0], -1)
    depth = rows.shape[1]
    result = np.zeros((bags, depth), dtype=ctype)
    keep = bag_of_index >= 0
    if not keep.all():
        indices, bag_of_index = indices[keep], bag_of_index[keep]
        weights = None if weights is None else weights[keep]
    if indices.size:
        gathered = rows[indices].astype(ctype)
        if weights is not None:
            gathered = gathered * weights.astype(ctype)[:, None]
            if table.dtype.kind != "f":
                gathered = gathered.astype(table.dtype).astype(ctype)  # products wrap in the table type
        np.add.at(result, bag_of_index, gathered)
    if table.dtype.kind != "f":
        result = result.astype(table.dtype).astype(ctype)  # sums wrap in the table type
    empty = counts == 0
    if mean:
        divisor = np.where(empty, 1, counts).astype(ctype)[:, None]
        if table.dtype.kind == "f":
            result = result / divisor
        else:
            result = np.sign(result) * (np.abs(result) // divisor) if ctype is np.int64 else result // divisor
    if default is not None and default >= 0 and empty.any():
        result[empty] = rows[default].astype(ctype)
    return result.astype(out_dtype).reshape(bags, *table.shape[1:])


# ---------------------------------------------------------------- offsets

class _BagOffsets(Op):
    num_inputs = (3, 5)
    reduction = "sum"

    def infer(self, inputs):
        table, indices, offsets = inputs[:3]
        _check_table(table)
        _check_index_type(offsets, "offsets", 2)
        _check_index_type(indices, "indices", 1)
        _same_type(offsets, indices, "offsets", 2)
        if len(inputs) >= 4:
            _check_index_type(inputs[3], "default_index", 3)
            _same_type(inputs[3], indices, "default_index", 3)
        if len(inputs) == 5:
            if self.reduction != "sum":
                raise ShapeError("per_sample_weights are supported only with reduction 'sum'", rule="attr.value",
                                 port=4)
            _same_type(inputs[4], table, "per_sample_weights", 4)
        _rank(indices, (1,), "indices", 1)
        _rank(offsets, (1,), "offsets", 2)
        if len(inputs) >= 4:
            _rank(inputs[3], (0,), "default_index", 3)
        if len(inputs) == 5:
            _rank(inputs[4], (1,), "per_sample_weights", 4)
            _compatible(indices.shape, inputs[4].shape, "indices and per_sample_weights", 4)
        bags = None if offsets.shape is None else offsets.shape[0]
        return [TensorInfo(_out_shape(table, bags), table.type)]

    def run(self, inputs, in_infos, out_infos):
        table, indices, offsets = inputs[:3]
        indices = indices.astype(np.int64, copy=False)
        offsets = offsets.astype(np.int64, copy=False)
        count, bags = indices.shape[0], offsets.shape[0]
        if bags and ((offsets < 0).any() or (offsets >= count).any()):
            bad = offsets[(offsets < 0) | (offsets >= count)][0]
            raise ExecutionError(f"offset {int(bad)} is out of range [0, {count - 1}] of the indices",
                                 rule="input.index")
        if bags > 1 and (np.diff(offsets) < 0).any():
            raise ExecutionError(f"offsets {offsets.tolist()} decrease", rule="input.index")
        # bag of each index: the last offset not past it; indices before offsets[0] belong to no bag
        positions = np.arange(count, dtype=np.int64)
        bag_of_index = np.searchsorted(offsets, positions, side="right") - 1 if bags else np.full(count, -1)
        used = bag_of_index >= 0
        _check_indices(indices[used], table.shape[0])
        ends = np.append(offsets[1:], count) if bags else offsets
        counts = ends - offsets
        default = _default_row(inputs[3] if len(inputs) >= 4 else None, table.shape[0], bool((counts == 0).any()))
        weights = inputs[4] if len(inputs) == 5 else None
        return [bag_reduce(table, indices, bag_of_index, bags, weights, counts, default,
                           self.reduction == "mean", out_infos[0].type.storage)]


@op("EmbeddingBagOffsetsSum", 3)
class EmbeddingBagOffsetsSum3(_BagOffsets):
    pass


@op("EmbeddingBagOffsets", 15)
class EmbeddingBagOffsets15(_BagOffsets):
    reduction = Enum("sum", "mean", default="sum")


# ---------------------------------------------------------------- packed

class _BagPacked(Op):
    num_inputs = (2, 3)
    reduction = "sum"

    def infer(self, inputs):
        table, indices = inputs[:2]
        _check_table(table)
        _check_index_type(indices, "indices", 1)
        _rank(indices, (2,), "indices", 1)
        shape = indices.shape
        if len(inputs) == 3:
            if self.reduction != "sum":
                raise ShapeError("per_sample_weights are supported only with reduction 'sum'", rule="attr.value",
                                 port=2)
            _same_type(inputs[2], table, "per_sample_weights", 2)
            _rank(inputs[2], (2,), "per_sample_weights", 2)
            shape = _compatible(shape, inputs[2].shape, "indices and per_sample_weights", 2)
        bags = None if shape is None else shape[0]
        return [TensorInfo(_out_shape(table, bags), table.type)]

    def run(self, inputs, in_infos, out_infos):
        table, indices = inputs[:2]
        bags, per_bag = indices.shape
        if bags and per_bag == 0:
            raise ExecutionError(f"indices {shape_str(indices.shape)} make every bag empty", rule="shape.empty")
        indices = indices.astype(np.int64, copy=False).reshape(-1)
        _check_indices(indices, table.shape[0])
        weights = inputs[2].reshape(-1) if len(inputs) == 3 else None
        bag_of_index = np.repeat(np.arange(bags, dtype=np.int64), per_bag)
        counts = np.full(bags, per_bag, dtype=np.int64)
        return [bag_reduce(table, indices, bag_of_index, bags, weights, counts, None,
                           self.reduction == "mean", out_infos[0].type.storage)]


@op("EmbeddingBagPackedSum", 3)
class EmbeddingBagPackedSum3(_BagPacked):
    pass


@op("EmbeddingBagPacked", 15)
class EmbeddingBagPacked15(_BagPacked):
    reduction = Enum("sum", "mean", default="sum")


# ---------------------------------------------------------------- segments

@op("EmbeddingSegmentsSum", 3)
class EmbeddingSegmentsSum3(Op):
    num_inputs = (4, 6)

    def infer(self, inputs):
        table, indices, segment_ids, num_segments = inputs[:4]
        _check_table(table)
        _check_index_type(segment_ids, "segment_ids", 2)
        _check_index_type(indices, "indices", 1)
        _check_index_type(num_segments, "num_segments", 3)
        _same_type(segment_ids, indices, "segment_ids", 2)
        _same_type(num_segments, segment_ids, "num_segments", 3)
        if len(inputs) >= 5:
            _check_index_type(inputs[4], "default_index", 4)
            _same_type(inputs[4], indices, "default_index", 4)
        if len(inputs) == 6:
            _same_type(inputs[5], table, "per_sample_weights", 5)
        _rank(indices, (1,), "indices", 1)
        _rank(segment_ids, (1,), "segment_ids", 2)
        _compatible(indices.shape, segment_ids.shape, "indices and segment_ids", 2)
        _rank(num_segments, (0,), "num_segments", 3)
        if len(inputs) >= 5:
            _rank(inputs[4], (0,), "default_index", 4)
        if len(inputs) == 6:
            _rank(inputs[5], (1,), "per_sample_weights", 5)
            _compatible(indices.shape, inputs[5].shape, "indices and per_sample_weights", 5)
        segments = None
        if num_segments.value is not None:
            segments = int(as_index_array(num_segments.value, "num_segments", 3).reshape(-1)[0])
            if segments < 0:
                raise negative_size(f"num_segments {segments} is negative", num_segments, 3)
        return [TensorInfo(_out_shape(table, segments), table.type)]

    def run(self, inputs, in_infos, out_infos):
        table, indices, segment_ids, num_segments = inputs[:4]
        segments = out_infos[0].shape[0]
        indices = indices.astype(np.int64, copy=False)
        segment_ids = segment_ids.astype(np.int64, copy=False)
        bag_of_index = np.where((segment_ids >= 0) & (segment_ids < segments), segment_ids, -1)
        _check_indices(indices[bag_of_index >= 0], table.shape[0])
        counts = np.bincount(bag_of_index[bag_of_index >= 0], minlength=segments)[:segments]
        default = None
        if len(inputs) >= 5:
            needed = bool((counts == 0).any())
            default = _default_row(inputs[4], table.shape[0], needed)
            if needed and default < 0:
                raise ExecutionError(f"default index {default} is negative", rule="input.index")
        weights = inputs[5] if len(inputs) == 6 else None
        return [bag_reduce(table, indices, bag_of_index, segments, weights, counts, default, False,
                           out_infos[0].type.storage)]
