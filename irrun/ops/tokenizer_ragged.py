"""Truncate, CombineSegments, RaggedToDense and FuzeRagged: the ragged-tensor plumbing around the tokenizer models
(NumPy on offsets, no per-string work)."""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError, ShapeError
from .attrs import Bool, Int
from .registry import TensorInfo, extension_op
from .tokenizer_base import (
    BOOL,
    I32,
    TokenizerOp,
    const_string,
    expect_offsets,
    expect_scalar_string,
    expect_type,
    ragged_out,
)


def _flat(array) -> np.ndarray:
    return np.asarray(array).reshape(-1).astype(np.int64)


@extension_op("Truncate")
class Truncate(TokenizerOp):
    """Cut one ragged tensor (or a pair) to max_length elements per row, from the side the `side` string
    input names; a pair is cut by `mode` (longest_first, only_first, only_second) with the extension's
    arithmetic."""

    m_num_inputs = Int(default=0)
    num_inputs = (5, 9)

    def _pairs(self, count: int) -> int:
        pairs = (count - 2) // 3
        if pairs not in (1, 2):
            raise ShapeError(f"has {count} inputs: expects one or two ragged tensors, max_length, side[, mode]",
                             rule="port.count")
        return pairs

    def output_infos(self, inputs):
        pairs = self._pairs(len(inputs))
        for index in range(pairs):
            expect_offsets(inputs, 3 * index)
        expect_type(inputs, 3 * pairs, "i32")
        for port in range(3 * pairs + 1, len(inputs)):
            expect_scalar_string(inputs, port)
        return [info for index in range(pairs) for info in
                ragged_out(inputs[3 * index].shape, inputs[3 * index + 2].type)]

    def compute(self, arrays):
        pairs = self._pairs(len(arrays))
        max_length = int(np.asarray(arrays[3 * pairs]).reshape(-1)[0])
        side = const_string(arrays[3 * pairs + 1]).decode("utf-8", "replace")
        mode = const_string(arrays[3 * pairs + 2]).decode("utf-8", "replace") if len(arrays) > 3 * pairs + 2 else ""
        if side not in ("left", "right"):
            raise ExecutionError(f"unknown truncation side {side!r}", rule="input.value")
        if pairs == 2 and mode not in ("only_first", "only_second", "longest_first"):
            raise ExecutionError(f"unknown truncation mode {mode!r}", rule="input.value")
        spans = [(_flat(arrays[3 * i]), _flat(arrays[3 * i + 1])) for i in range(pairs)]
        lengths = [np.minimum(end - begin, max_length) if pairs == 1 else end - begin for begin, end in spans]
        if pairs == 2:
            lengths = _pair_lengths(*lengths, max_length, mode)
        outputs = []
        for index, ((begin, end), length) in enumerate(zip(spans, lengths)):
            if side == "right":
                end = begin + length
            else:
                begin = end - length
            shape = np.asarray(arrays[3 * index]).shape
            outputs += [begin.astype(np.int32).reshape(shape), end.astype(np.int32).reshape(shape),
                        np.asarray(arrays[3 * index + 2])]
        return outputs


def _pair_lengths(first, second, max_length: int, mode: str):
    over = first + second > max_length
    if mode == "only_first":
        return np.where(over & (first > max_length), max_length, first), second
    if mode == "only_second":
        return first, np.where(over & (second > max_length), max_length, second)
    half, odd = max_length // 2, max_length % 2
    first_rest = odd * (first >= second)
    second_rest = odd * (first < second)
    first_long = (first >= half + odd) & (second <= half)
    second_long = (first < half + odd) & (second > half)
    both = ~first_long & ~second_long
    new_first = np.where(first_long, max_length - second, np.where(both, half + first_rest, first))
    new_second = np.where(second_long, max_length - first, np.where(both, half + second_rest, second))
    return np.where(over, new_first, first), np.where(over, new_second, second)


@extension_op("CombineSegments")
class CombineSegments(TokenizerOp):
    """Concatenate, row by row, ragged segments (a one-row segment, such as a special token, repeats in every
    row) and give each element the id of its segment (the last input holds one id per segment)."""

    num_inputs = (4, 64)
    # Segments whose ends are taken as 0 (openvino_genai's add_special_tokens=false selects 0 for the ends of the
    # special-token segments); set by irrun.text, not read from the IR.
    dropped_segments: frozenset = frozenset()

    def output_infos(self, inputs):
        if (len(inputs) - 1) % 3:
            raise ShapeError(f"has {len(inputs)} inputs: expects 3 per segment and the segment ids",
                             rule="port.count")
        segments = (len(inputs) - 1) // 3
        shape, element = (None,), inputs[2].type
        for index in range(segments):
            expect_offsets(inputs, 3 * index)
            if inputs[3 * index + 2].type != element:
                raise ShapeError(f"segment {index} holds {inputs[3 * index + 2].type}, segment 0 {element}",
                                 rule="port.type", port=3 * index + 2)
            if inputs[3 * index].rank:
                shape = inputs[3 * index].shape
        return [*ragged_out(shape, element), *ragged_out(shape, inputs[-1].type)]

    def compute(self, arrays):
        segments = (len(arrays) - 1) // 3
        ids = np.asarray(arrays[-1]).reshape(-1)
        if ids.size != segments:
            raise ExecutionError(f"{ids.size} segment ids for {segments} segments", rule="input.value")
        begins = [_flat(arrays[3 * i]) for i in range(segments)]
        ends = [_flat(arrays[3 * i + 1]) * (i not in self.dropped_segments) for i in range(segments)]
        elements = [np.asarray(arrays[3 * i + 2]).reshape(-1) for i in range(segments)]
        rows = max(b.size for b in begins)
        shape = (rows,)
        for i in range(segments):
            if np.asarray(arrays[3 * i]).ndim:
                shape = np.asarray(arrays[3 * i]).shape
        bases = np.cumsum([0] + [e.size for e in elements[:-1]])
        starts = np.stack([np.broadcast_to(bases[i] + begins[i], (rows,)) for i in range(segments)], axis=1)
        lengths = np.stack([np.broadcast_to(ends[i] - begins[i], (rows,)) for i in range(segments)], axis=1)
        lengths_flat, starts_flat = lengths.reshape(-1), starts.reshape(-1)
        offsets = np.cumsum(lengths_flat) - lengths_flat
        source = np.repeat(starts_flat - offsets, lengths_flat) + np.arange(int(lengths_flat.sum()))
        combined = np.concatenate(elements)[source]
        segment_ids = np.repeat(np.tile(ids, rows), lengths_flat)
        row_ends = np.cumsum(lengths.sum(axis=1))
        row_begins = (row_ends - lengths.sum(axis=1)).astype(np.int32).reshape(shape)
        row_ends = row_ends.astype(np.int32).reshape(shape)
        return [row_begins, row_ends, combined, row_begins.copy(), row_ends.copy(), segment_ids]


@extension_op("RaggedToDense")
class RaggedToDense(TokenizerOp):
    """Rows of a ragged tensor into a [rows, target, ...] tensor padded with `value`, and its mask; rows longer
    than target are cut; pad_right (attribute, or the optional 6th input) puts the padding after the data."""

    pad_right = Bool(default=True)
    m_pad_max_length = Bool(default=False)
    num_inputs = (5, 6)

    def output_infos(self, inputs):
        expect_offsets(inputs, 0)
        if not inputs[3].type.is_integer:
            raise ShapeError(f"input 3 (target length) must be an integer, got {inputs[3].type}", rule="port.type",
                             port=3)
        if inputs[4].type != inputs[2].type:
            raise ShapeError(f"the pad value is {inputs[4].type}, the data {inputs[2].type}", rule="port.type",
                             port=4)
        if inputs[0].shape is None or inputs[2].shape is None:
            return [TensorInfo(None, inputs[2].type), TensorInfo(None, BOOL)]
        target = None if inputs[3].value is None else int(np.asarray(inputs[3].value).reshape(-1)[0])
        shape = (*inputs[0].shape, target, *inputs[2].shape[1:])
        return [TensorInfo(shape, inputs[2].type), TensorInfo(shape, BOOL)]

    def compute(self, arrays):
        begins, ends = _flat(arrays[0]), _flat(arrays[1])
        data = np.asarray(arrays[2])
        target = int(np.asarray(arrays[3]).reshape(-1)[0])
        if target < 0:
            raise ExecutionError(f"target length {target} is negative", rule="input.value")
        pad_right = bool(np.asarray(arrays[5]).reshape(-1)[0]) if len(arrays) == 6 else self.pad_right
        lengths = np.full(begins.shape, target) if self.m_pad_max_length else np.minimum(ends - begins, target)
        position = np.arange(target)
        if pad_right:
            mask = position < lengths[:, None]
            source = begins[:, None] + position
        else:
            padding = target - lengths
            mask = position >= padding[:, None]
            source = begins[:, None] + position - padding[:, None]
        mask &= (source >= 0) & (source < data.shape[0])
        values = data[np.clip(source, 0, max(data.shape[0] - 1, 0))] if data.shape[0] else \
            np.zeros((*source.shape, *data.shape[1:]), data.dtype)
        inner = (slice(None), slice(None)) + (None,) * (data.ndim - 1)
        dense = np.where(mask[inner], values, np.asarray(arrays[4]).astype(data.dtype))
        shape = (*np.asarray(arrays[0]).shape, target, *data.shape[1:])
        full_mask = np.broadcast_to(mask[inner], dense.shape)
        if self.m_pad_max_length:  # the extension copies target elements whatever the row length
            full_mask = np.ones(dense.shape, dtype=bool)
        return [dense.reshape(shape), full_mask.reshape(shape).copy()]


@extension_op("FuzeRagged")
class FuzeRagged(TokenizerOp):
    """Each row of a ragged tensor of strings as one string: from its first string's begin to its last one's
    end (an empty row takes the begin and end of the element at its position)."""

    num_inputs = (4, 4)

    def output_infos(self, inputs):
        for port in range(4):
            expect_type(inputs, port, "i32")
        return [TensorInfo(inputs[0].shape, I32), TensorInfo(inputs[0].shape, I32)]

    def compute(self, arrays):
        ragged_begins, ragged_ends = _flat(arrays[0]), _flat(arrays[1])
        begins, ends = _flat(arrays[2]), _flat(arrays[3])
        last = np.where(ragged_ends > ragged_begins, ragged_ends - 1, ragged_ends)
        for name, index, table in (("begin", ragged_begins, begins), ("end", last, ends)):
            if index.size and (index.min() < 0 or index.max() >= table.size):
                raise ExecutionError(f"a row's {name} points outside the {table.size} strings", rule="input.index")
        shape = np.asarray(arrays[0]).shape
        return [begins[ragged_begins].astype(np.int32).reshape(shape), ends[last].astype(np.int32).reshape(shape)]


@extension_op("RaggedToSparse")
class RaggedToSparse(TokenizerOp):
    """(begins, ends) -> [elements, 2] indices (row, position in the row) of every element, row by row."""

    num_inputs = (2, 2)

    def output_infos(self, inputs):
        expect_offsets(inputs, 0)
        return [TensorInfo((None, 2), I32)]

    def compute(self, arrays):
        begins, ends = _flat(arrays[0]), _flat(arrays[1])
        lengths = np.maximum(ends - begins, 0)
        rows = np.repeat(np.arange(lengths.size), lengths)
        positions = np.arange(rows.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        return [np.stack([rows, positions], axis=1).astype(np.int32).reshape(-1, 2)]


@extension_op("RaggedToRagged")
class RaggedToRagged(TokenizerOp):
    """(sorted row ids of elements, number of rows) -> (begins, ends) of each row; ids from the first one that
    is not a row are ignored."""

    num_inputs = (2, 2)

    def output_infos(self, inputs):
        expect_type(inputs, 0, "i32")
        expect_type(inputs, 1, "i32")
        rows = None if inputs[1].value is None else int(np.asarray(inputs[1].value).reshape(-1)[0])
        return [TensorInfo((rows,), I32), TensorInfo((rows,), I32)]

    def compute(self, arrays):
        row_ids = _flat(arrays[0])
        rows = int(np.asarray(arrays[1]).reshape(-1)[0])
        if row_ids.size and row_ids.min() < 0:
            raise ExecutionError("row ids must be non-negative", rule="input.value")
        outside = np.flatnonzero(row_ids >= rows)
        row_ids = row_ids[:outside[0]] if outside.size else row_ids
        wanted = np.arange(max(rows, 0))
        return [np.searchsorted(row_ids, wanted, "left").astype(np.int32),
                np.searchsorted(row_ids, wanted, "right").astype(np.int32)]


@extension_op("RaggedTensorPack")
class RaggedTensorPack(TokenizerOp):
    """(begins, ends, data) -> data: the extension's marker for a ragged tensor, passing its elements through."""

    num_inputs = (3, 3)

    def output_infos(self, inputs):
        expect_offsets(inputs, 0)
        return [TensorInfo(inputs[2].shape, inputs[2].type)]

    def compute(self, arrays):
        return [np.asarray(arrays[2])]
