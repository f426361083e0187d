"""N-d index ops: GatherND-5/8, ScatterNDUpdate-4 (OpenVINO's v3 class, first in opset4) and -15, SliceScatter-15.

The last dim of `indices` (k) holds coordinates into the first k dims of data (after `batch_dims` batch dims
for GatherND); each coordinate addresses a slice data[c0, ..., ck-1, ...]. Negative coordinates count from
the end. ScatterNDUpdate visits the updates in row-major order of `indices`, so among duplicate coordinates
the last update wins (reduction "none"), and reductions fold each update into the slice in that order:
sum/sub/prod are `acc op u`, max keeps `u` only when `acc < u`, min only when `u < acc`, so a NaN already
in the slice stays and a NaN update is never taken. On booleans sum and max are `or`, prod and min `and`,
sub `xor`. Integer arithmetic wraps."""
from __future__ import annotations

import math

import numpy as np

from ..errors import ExecutionError, ShapeError
from .attrs import Enum, Int
from .indexing import Slice8, as_slice, merged_batch_dims, slice_length, slice_range
from .registry import Op, TensorInfo, op
from .shape_ops import merge_dim
from .shapes import shape_str


def _require_index_type(info, port):
    if info.type.name not in ("i32", "i64"):
        raise ShapeError(f"indices must be i32 or i64, got {info.type}", rule="port.type", port=port)


def flat_coordinates(indices, dims, port=1):
    """Row-major flat positions of the coordinate rows of `indices` ([..., k]) into `dims` (k sizes), with
    negative coordinates counted from the end; raises for a coordinate outside [-dim, dim)."""
    k = len(dims)
    rows = indices.reshape(math.prod(indices.shape[:-1]), k)
    if k == 1 and rows.size:  # one coordinate per row: the flat position itself, checked through its range
        idx, size = rows[:, 0].astype(np.int64), dims[0]
        low = int(idx.min())
        if low >= -size and int(idx.max()) < size:
            return np.where(idx < 0, idx + size, idx) if low < 0 else idx
    idx = rows.astype(np.int64)
    sizes = np.array(dims, dtype=np.int64)
    idx = np.where(idx < 0, idx + sizes, idx)
    bad = (idx < 0) | (idx >= sizes)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        raise ExecutionError(f"index {int(rows[row, col])} is out of range for dimension "
                             f"{col} of size {dims[col]}", rule="input.index", port=port)
    if k == 0:
        return np.zeros(idx.shape[0], dtype=np.int64)
    return np.ravel_multi_index(tuple(idx.T), dims) if idx.size else np.zeros(0, dtype=np.int64)


# ---------------------------------------------------------------- GatherND

@op("GatherND", 5)
class GatherND5(Op):
    """Output [prod(batch dims)] + indices.shape[b:-1] + data.shape[b+k:] (one flattened batch dim when
    batch_dims > 0). An out-of-range coordinate is an error (OpenVINO's kernels read outside the slice)."""

    batch_dims = Int(default=0, min=0)
    num_inputs = (2, 2)
    flatten_batch = True

    def infer(self, inputs):
        data, indices = inputs
        if indices.type.is_integer and indices.type.name not in ("i32", "i64"):  # OpenVINO's reader takes it
            raise ShapeError(f"indices must be i32 or i64, got {indices.type}", rule="port.type.spec", port=1)
        _require_index_type(indices, 1)
        b = self.batch_dims
        if data.rank == 0 or indices.rank == 0:
            raise ShapeError("data and indices must have rank 1 or more", rule="port.rank",
                             port=0 if data.rank == 0 else 1)
        for rank in (data.rank, indices.rank):
            if rank is not None and b >= rank:
                raise ShapeError(f"batch_dims {b} must be less than the ranks of data and indices",
                                 rule="attr.range")
        if data.shape is None or indices.shape is None or indices.shape[-1] is None:
            return [TensorInfo(None, data.type)]
        k = indices.shape[-1]
        if b + k > len(data.shape):
            raise ShapeError(f"indices last dim {k} plus batch_dims {b} exceeds the data rank {len(data.shape)}",
                             rule="port.dims", port=1)
        batch = merged_batch_dims(data, indices, b)
        if self.flatten_batch and b > 0:
            batch = [None if None in batch else math.prod(batch)]
        shape = tuple(batch) + indices.shape[b:-1] + data.shape[b + k:]
        return [TensorInfo(shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        data, indices = inputs
        b = self.batch_dims
        k = indices.shape[-1]
        batch = math.prod(data.shape[:b])
        lead = data.shape[b:b + k]
        rest = data.shape[b + k:]
        flat = flat_coordinates(indices, lead).reshape(batch, math.prod(indices.shape[b:-1]))
        rows = data.reshape(batch * math.prod(lead), math.prod(rest))
        # one take over every batch's rows (a take is an order of magnitude faster than fancy indexing here)
        if batch > 1:
            flat = flat + np.arange(batch)[:, None] * math.prod(lead)
        out = np.take(rows, flat.reshape(-1), axis=0) if rows.size \
            else np.zeros((batch, flat.shape[1], math.prod(rest)), dtype=data.dtype)
        return [out.reshape(out_infos[0].shape)]


@op("GatherND", 8)
class GatherND8(GatherND5):
    """Like GatherND-5, but the batch dims stay as they are: indices.shape[:-1] + data.shape[b+k:]."""

    flatten_batch = False


# ---------------------------------------------------------------- ScatterNDUpdate

@op("ScatterNDUpdate", 4)
class ScatterNDUpdate4(Op):
    """OpenVINO's ov::op::v3::ScatterNDUpdate (first listed in opset4, so irrun calls it version 4)."""

    num_inputs = (3, 3)
    reduction = "none"

    def infer(self, inputs):
        data, indices, updates = inputs
        _require_index_type(indices, 1)
        if updates.type != data.type:
            raise ShapeError(f"updates type {updates.type} differs from data type {data.type}", rule="port.type",
                             port=2)
        if indices.rank == 0:
            raise ShapeError("indices must have rank 1 or more", rule="port.rank", port=1)
        if data.rank == 0:
            raise ShapeError("data must have rank 1 or more", rule="port.rank", port=0)
        if data.shape is None or indices.shape is None or indices.shape[-1] is None:
            return [TensorInfo(data.shape, data.type)]
        k = indices.shape[-1]
        if k > len(data.shape):
            raise ShapeError(f"indices last dim {k} exceeds the data rank {len(data.shape)}", rule="port.dims",
                             port=1)
        expected = indices.shape[:-1] + data.shape[k:]
        if updates.shape is not None and (len(updates.shape) != len(expected) or any(
                merge_dim(a, b) is False for a, b in zip(expected, updates.shape))):
            raise ShapeError(f"updates shape {shape_str(updates.shape)} must be {shape_str(expected)}",
                             rule="port.dims", port=2)
        return [TensorInfo(data.shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        data, indices, updates = inputs
        k = indices.shape[-1]
        targets = flat_coordinates(indices, data.shape[:k])
        out = np.array(data, copy=True)
        rows = out.reshape(math.prod(data.shape[:k]), math.prod(data.shape[k:]))
        values = updates.reshape(targets.size, rows.shape[1])
        if targets.size == 0 or rows.shape[1] == 0:
            return [out]
        if self.reduction == "none":
            last = targets.size - 1 - np.unique(targets[::-1], return_index=True)[1]
            rows[targets[last]] = values[last]
        else:
            fold_rows(rows, targets, values, self.reduction)
        return [out]


_BOOLEAN_FOLDS = {"sum": np.logical_or, "max": np.logical_or, "prod": np.logical_and, "min": np.logical_and,
                  "sub": np.logical_xor}
_FOLDS = {"sum": np.add, "sub": np.subtract, "prod": np.multiply}


def fold_rows(rows, targets, values, reduction):
    """rows[t] = rows[t] op values[i] for each i in order (t = targets[i]), in place."""
    if rows.dtype == np.bool_:
        ufunc = _BOOLEAN_FOLDS[reduction]
        if reduction == "sub":  # xor: parity of the true updates
            flips = np.zeros(rows.shape, dtype=np.int64)
            np.add.at(flips, targets, values.astype(np.int64))
            rows ^= (flips % 2).astype(bool)
        else:
            ufunc.at(rows, targets, values)
        return
    if reduction in _FOLDS:
        with np.errstate(over="ignore", invalid="ignore"):
            _FOLDS[reduction].at(rows, targets, values)
        return
    # max / min: `u` replaces acc when acc < u (max) or u < acc (min); a NaN acc stays, NaN updates never win,
    # and among equal values (0.0 and -0.0) the first one in the sequence stays.
    touched = np.unique(targets)
    start = rows[touched]
    if rows.dtype.kind == "f":
        extreme = np.fmax if reduction == "max" else np.fmin
        best = rows.copy()
        extreme.at(best, targets, values)
        best[touched] = np.where(np.isnan(start), start, best[touched])
        zero = best[touched] == 0
        if zero.any():  # the sign of a zero result is that of the first zero in the sequence
            seq_targets = np.concatenate([touched, targets])
            seq_values = np.concatenate([start, values])
            order = np.broadcast_to(np.arange(seq_targets.size)[:, None], seq_values.shape)
            first = np.full(rows.shape, seq_targets.size, dtype=np.int64)
            positions = np.broadcast_to(seq_targets[:, None], seq_values.shape)
            columns = np.broadcast_to(np.arange(rows.shape[1]), seq_values.shape)
            is_zero = seq_values == 0
            np.minimum.at(first, (positions[is_zero], columns[is_zero]), order[is_zero])
            signs = seq_values[np.minimum(first[touched], seq_targets.size - 1), np.arange(rows.shape[1])]
            best[touched] = np.where(zero, signs, best[touched])
        rows[touched] = best[touched]
    else:
        (np.maximum if reduction == "max" else np.minimum).at(rows, targets, values)


@op("ScatterNDUpdate", 15)
class ScatterNDUpdate15(ScatterNDUpdate4):
    reduction = Enum("none", "sum", "sub", "prod", "min", "max", default="none")


# ---------------------------------------------------------------- SliceScatter

@op("SliceScatter", 15)
class SliceScatter15(Op):
    """A copy of data with the elements Slice-8 would select (start, stop, step, optional axes; the same
    clamping rules) replaced by `updates`, whose shape must be that slice's shape."""

    num_inputs = (5, 6)

    def slicing(self, inputs):
        return Slice8({}, self.context, self.layer).plan([inputs[0], *inputs[2:]])

    def infer(self, inputs):
        data, updates = inputs[0], inputs[1]
        index = self.slicing(inputs)
        if index is not None and updates.shape is not None:
            expected = tuple(d if sl == slice(None) else slice_length(d, sl.start, sl.stop, sl.step)
                             for d, sl in zip(data.shape, index))
            if len(expected) != len(updates.shape) or any(
                    merge_dim(a, b) is False for a, b in zip(expected, updates.shape)):
                raise ShapeError(f"updates shape {shape_str(updates.shape)} must be the slice's shape "
                                 f"{shape_str(expected)}", rule="port.dims", port=1)
        elif data.rank is not None and updates.rank is not None and data.rank != updates.rank:
            raise ShapeError(f"updates rank {updates.rank} differs from data rank {data.rank}", rule="port.rank",
                             port=1)
        elif data.shape is not None and updates.shape is not None and any(
                d is not None and u is not None and u > d for d, u in zip(data.shape, updates.shape)):
            # the slice is not known, but no slice is longer than its axis (OpenVINO bounds each dim by it)
            raise ShapeError(f"updates {shape_str(updates.shape)} are larger than any slice of data "
                             f"{shape_str(data.shape)}", rule="port.dims", port=1)
        if updates.type != data.type:  # OpenVINO's reader takes it (checked last, after its own checks)
            raise ShapeError(f"updates type {updates.type} differs from data type {data.type}",
                             rule="port.type.spec", port=1)
        return [TensorInfo(data.shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        data, updates = inputs[0], inputs[1]
        index = self.slicing(in_infos)
        out = np.array(data, copy=True)
        out[tuple(sl if sl == slice(None) else as_slice(slice_range(d, sl.start, sl.stop, sl.step))
                  for sl, d in zip(index, data.shape))] = updates
        return [out]
