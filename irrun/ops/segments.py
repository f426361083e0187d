"""Segment and sparse ops: SegmentMax-16, SparseFillEmptyRows-16."""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError, ShapeError
from ..ir.types import ELEMENT_TYPES
from .attrs import Enum
from .registry import Op, TensorInfo, op
from .shape_ops import int_values, merge_dim
from .shapes import negative_size, shape_str
from .stricter import refuse


def lowest(dtype):
    return np.finfo(dtype).min if dtype.kind == "f" else np.iinfo(dtype).min


# ---------------------------------------------------------------- SegmentMax

@op("SegmentMax", 16)
class SegmentMax16(Op):
    """out[s] = the max of data[i] over the rows with segment_ids[i] == s (ids sorted, s < num_segments; rows
    with larger ids are dropped). As OpenVINO computes it, a segment starts from the type's lowest value and
    takes a row's value when it is greater: NaN and -inf never win (a segment of only those gives the lowest
    value) and among equal values (0.0, -0.0) the first stays. Empty segments get 0 (fill_mode ZERO) or the
    lowest value (LOWEST). num_segments defaults to the last id + 1."""

    fill_mode = Enum("zero", "lowest")
    num_inputs = (2, 3)

    def segment_count(self, inputs):
        ids = int_values(inputs[1], "segment_ids", 1)
        if ids is not None and ids.size and (np.diff(ids) < 0).any():
            raise ShapeError("segment_ids must be sorted", rule="attr.value", port=1)
        if len(inputs) == 3:
            info = inputs[2]
            if info.type.name not in ("i32", "i64"):
                raise ShapeError(f"num_segments must be i32 or i64, got {info.type}", rule="port.type", port=2)
            if info.shape is not None and len(info.shape) != 0:
                raise ShapeError(f"num_segments must be a scalar, got {shape_str(info.shape)}", rule="port.rank",
                                 port=2)
            count = int_values(info, "num_segments", 2)
            if count is None:
                return None
            if int(count) < 0:
                raise negative_size(f"num_segments {int(count)} must not be negative", info, 2)
            return int(count)
        if ids is None:
            return None
        return int(ids[-1]) + 1 if ids.size else 0

    def infer(self, inputs):
        data, ids = inputs[0], inputs[1]
        if ids.type.name not in ("i32", "i64"):
            raise ShapeError(f"segment_ids must be i32 or i64, got {ids.type}", rule="port.type", port=1)
        if data.rank == 0:
            raise ShapeError("data must have rank 1 or more", rule="port.rank", port=0)
        if ids.rank is not None and ids.rank != 1:
            raise ShapeError(f"segment_ids must be 1-D, got {shape_str(ids.shape)}", rule="port.rank", port=1)
        if data.shape is not None and ids.shape is not None and merge_dim(data.shape[0], ids.shape[0]) is False:
            raise ShapeError(f"segment_ids {shape_str(ids.shape)} and data {shape_str(data.shape)} differ in length",
                             rule="port.dims", port=1)
        count = self.segment_count(inputs)
        if data.shape is None:
            return [TensorInfo(None, data.type)]
        return [TensorInfo((count,) + data.shape[1:], data.type)]

    def run(self, inputs, in_infos, out_infos):
        data, ids = inputs[0], inputs[1].astype(np.int64)
        shape = out_infos[0].shape
        segments = shape[0]
        if ids.size and ids[0] < 0:
            raise ExecutionError(f"segment id {int(ids[0])} is negative", rule="input.index", port=1)
        columns = int(np.prod(shape[1:], dtype=np.int64))
        rows = data.reshape(data.shape[0], columns)
        keep = ids < segments
        rows, ids = rows[keep], ids[keep]
        low = lowest(data.dtype)
        best = np.full((segments, columns), low, dtype=data.dtype)
        candidates = np.where(np.isnan(rows), low, rows) if data.dtype.kind == "f" else rows
        np.maximum.at(best, ids, candidates)
        # the first row holding the max decides the result (the sign of a zero)
        wins = rows == best[ids]
        first = np.full((segments, columns), rows.shape[0], dtype=np.int64)
        row_index = np.broadcast_to(np.arange(rows.shape[0])[:, None], rows.shape)
        col_index = np.broadcast_to(np.arange(columns), rows.shape)
        np.minimum.at(first, (np.broadcast_to(ids[:, None], rows.shape)[wins], col_index[wins]), row_index[wins])
        out = best
        if rows.shape[0]:
            picked = rows[np.minimum(first, rows.shape[0] - 1), np.arange(columns)]
            out = np.where(first < rows.shape[0], picked, best)
        empty = np.bincount(ids, minlength=segments) == 0
        fill = data.dtype.type(0) if self.fill_mode == "zero" else low
        out[empty] = fill
        return [out.reshape(shape)]


# ---------------------------------------------------------------- SparseFillEmptyRows

@op("SparseFillEmptyRows", 16)
class SparseFillEmptyRows16(Op):
    """A 2-D sparse tensor (values [N], dense_shape [2], indices [N, 2]) with an entry (r, 0) = default_value
    added for every row r in [0, dense_shape[0]) that has none; entries sorted by (row, column). Outputs:
    indices [M, 2], values [M], empty_row_indicator [rows] (boolean). Entries outside dense_shape are kept,
    as OpenVINO's reference does (its CPU plugin drops them)."""

    num_inputs = (4, 4)

    def infer(self, inputs):
        values, dense_shape, indices, default = inputs
        for port, info, what in ((1, dense_shape, "dense_shape"), (2, indices, "indices")):
            if info.type.name not in ("i32", "i64"):
                raise ShapeError(f"{what} must be i32 or i64, got {info.type}", rule="port.type", port=port)
        if dense_shape.type != indices.type:
            raise ShapeError(f"indices type {indices.type} differs from dense_shape type {dense_shape.type}",
                             rule="port.type", port=2)
        if default.type != values.type:
            refuse(ShapeError(f"default_value type {default.type} differs from values type {values.type}",
                              rule="port.type.spec", port=3))  # OpenVINO's reader takes it
        if values.rank is not None and values.rank != 1:
            raise ShapeError(f"values must be 1-D, got {shape_str(values.shape)}", rule="port.rank", port=0)
        if dense_shape.shape is not None and dense_shape.shape not in ((2,), (None,)):
            raise ShapeError(f"dense_shape must have 2 elements, got {shape_str(dense_shape.shape)}",
                             rule="port.dims", port=1)
        if indices.shape is not None and (len(indices.shape) != 2 or merge_dim(indices.shape[1], 2) is False):
            raise ShapeError(f"indices must be [N, 2], got {shape_str(indices.shape)}", rule="port.dims", port=2)
        if indices.shape is not None and values.shape is not None and merge_dim(indices.shape[0],
                                                                               values.shape[0]) is False:
            raise ShapeError(f"indices {shape_str(indices.shape)} and values {shape_str(values.shape)} differ in "
                             f"length", rule="port.dims", port=2)
        if default.shape is not None and len(default.shape) != 0:
            raise ShapeError(f"default_value must be a scalar, got {shape_str(default.shape)}", rule="port.rank",
                             port=3)
        flag = ELEMENT_TYPES["boolean"]
        dims, idx = int_values(dense_shape, "dense_shape", 1), int_values(indices, "indices", 2)
        if dims is None:
            return [TensorInfo((None, 2), indices.type), TensorInfo((None,), values.type),
                    TensorInfo((None,), flag)]
        rows = int(dims.reshape(-1)[0])
        if rows < 0 or int(dims.reshape(-1)[1]) < 0:
            raise ShapeError(f"dense_shape {dims.tolist()} has a negative dim", rule="attr.range", port=1)
        if idx is None:
            return [TensorInfo((None, 2), indices.type), TensorInfo((None,), values.type),
                    TensorInfo((rows,), flag)]
        count = idx.shape[0] + self.empty_rows(idx, rows).sum()
        return [TensorInfo((int(count), 2), indices.type), TensorInfo((int(count),), values.type),
                TensorInfo((rows,), flag)]

    @staticmethod
    def empty_rows(idx, rows):
        present = np.zeros(rows, dtype=bool)
        row_ids = idx[:, 0]
        inside = (row_ids >= 0) & (row_ids < rows)
        present[row_ids[inside]] = True
        return ~present

    def run(self, inputs, in_infos, out_infos):
        values, dense_shape, indices, default = inputs
        rows = int(np.asarray(dense_shape).reshape(-1)[0])
        empty = self.empty_rows(indices.astype(np.int64), rows)
        fill_rows = np.flatnonzero(empty).astype(indices.dtype)
        all_indices = np.concatenate([indices.reshape(-1, 2), np.stack([fill_rows, np.zeros_like(fill_rows)], 1)])
        all_values = np.concatenate([values, np.full(fill_rows.size, default, dtype=values.dtype)])
        order = np.lexsort((all_indices[:, 1], all_indices[:, 0]))
        return [all_indices[order], all_values[order], empty]
