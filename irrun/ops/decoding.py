"""Sequence decoding: GatherTree-1 (beam search back-tracking)."""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError, ShapeError
from .registry import Op, TensorInfo, op
from .shape_ops import merge_dim
from .shapes import shape_str


@op("GatherTree", 1)
class GatherTree1(Op):
    """Full beams from per-step ids and parent beams ([max_time, batch, beam]): for each (batch, beam), walk
    back from step min(max_seq_len[batch], max_time) - 1 following parent_idx; steps from there on are
    end_token, and after the first end_token in a beam every step is end_token."""

    num_inputs = (4, 4)

    def infer(self, inputs):
        step_ids, parent_idx, max_seq_len, end_token = inputs
        for port, info in enumerate(inputs):
            if info.type != step_ids.type:
                raise ShapeError(f"input type {info.type} differs from step_ids type {step_ids.type}",
                                 rule="port.type", port=port)
        for port, info in ((0, step_ids), (1, parent_idx)):
            if info.rank is not None and info.rank != 3:
                raise ShapeError(f"input rank is {info.rank} ({shape_str(info.shape)}), expected 3", rule="port.rank",
                                 port=port)
        if max_seq_len.rank is not None and max_seq_len.rank != 1:
            raise ShapeError(f"max_seq_len must be 1-D, got {shape_str(max_seq_len.shape)}", rule="port.rank", port=2)
        if end_token.rank is not None and end_token.rank != 0:
            raise ShapeError(f"end_token must be a scalar, got {shape_str(end_token.shape)}", rule="port.rank", port=3)
        shape = step_ids.shape
        if shape is not None and parent_idx.shape is not None:
            if any(merge_dim(a, b) is False for a, b in zip(shape, parent_idx.shape)):
                raise ShapeError(f"parent_idx {shape_str(parent_idx.shape)} differs from step_ids {shape_str(shape)}",
                                 rule="port.dims", port=1)
            shape = tuple(merge_dim(a, b) for a, b in zip(shape, parent_idx.shape))
        batch = shape[1] if shape is not None else (parent_idx.shape[1] if parent_idx.shape is not None else None)
        if max_seq_len.shape is not None and merge_dim(max_seq_len.shape[0], batch) is False:
            raise ShapeError(f"max_seq_len {shape_str(max_seq_len.shape)} does not match the batch dim {batch}",
                             rule="port.dims", port=2)
        return [TensorInfo(shape if shape is not None else parent_idx.shape, step_ids.type)]

    def run(self, inputs, in_infos, out_infos):
        step_ids, parent_idx, max_seq_len, end_token = inputs
        time, batch, beam = step_ids.shape
        end = end_token.reshape(()).astype(step_ids.dtype)
        out = np.full(step_ids.shape, end, dtype=step_ids.dtype)
        if out.size == 0:
            return [out]
        lengths = np.minimum(max_seq_len.astype(np.int64), time)  # a float max_seq_len truncates
        parents = parent_idx.astype(np.int64) if parent_idx.dtype.kind != "f" else np.trunc(parent_idx).astype(np.int64)
        b_index = np.arange(batch)[:, None]
        current = np.broadcast_to(np.arange(beam), (batch, beam)).copy()
        for t in range(time - 1, -1, -1):  # the walk back is sequential in time
            live = t < lengths[:, None]
            if (live & ((current < 0) | (current >= beam))).any():
                raise ExecutionError(f"parent index out of range [0, {beam}) at step {t + 1}", rule="input.index",
                                     port=1)
            safe = np.where(live, current, 0)
            out[t] = np.where(live, step_ids[t, b_index, safe], out[t])
            current = np.where(live, parents[t, b_index, safe], current)
        finished = np.cumsum(out == end, axis=0) - (out == end) > 0  # an end_token earlier in the beam
        out[finished] = end
        return [out]
