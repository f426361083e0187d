"""Sequence decoding: GatherTree-1 (beam search back-tracking), CTCLoss-4."""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError, ShapeError
from .attrs import Bool
from .registry import Op, TensorInfo, op
from .shape_ops import merge_dim
from .shapes import shape_str
from .stricter import refuse


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


# ---------------------------------------------------------------- CTCLoss

def _decode_targets(labels, lengths, collapse, unique):
    """Per batch row, the target labels after OpenVINO's preprocessing (unique: first occurrences only, else
    collapse: consecutive repeats merged), moved to the front; returns (targets, new lengths)."""
    n, t = labels.shape
    positions = np.arange(t)
    keep = positions[None, :] < lengths[:, None]
    if unique:
        earlier = (labels[:, :, None] == labels[:, None, :]) & (positions[None, None, :] < positions[None, :, None])
        keep &= ~(earlier & keep[:, None, :]).any(axis=2)
    elif collapse:
        repeat = np.zeros_like(keep)
        repeat[:, 1:] = labels[:, 1:] == labels[:, :-1]
        keep &= ~repeat
    order = np.argsort(~keep, axis=1, kind="stable")
    return np.take_along_axis(labels, order, axis=1), keep.sum(axis=1)


@op("CTCLoss", 4)
class CTCLoss4(Op):
    """Negative log-likelihood of each batch row's target under the frame-wise softmax of logits [N, T, C]:
    ctc_merge_repeated true is standard CTC (a label spans a run of frames, a blank must separate equal
    neighbours); false: each label takes exactly one frame and every other frame is blank. As OpenVINO's
    reference computes it, an empty target gives loss 0. Computed in float64, rounded to the logits type."""

    preprocess_collapse_repeated = Bool(default=False)
    ctc_merge_repeated = Bool(default=True)
    unique = Bool(default=False)
    num_inputs = (4, 5)

    def infer(self, inputs):
        logits, logit_length, labels, label_length = inputs[:4]
        if not logits.type.is_float:
            raise ShapeError(f"logits must be floating-point, got {logits.type}", rule="port.type", port=0)
        for port, info in enumerate(inputs[1:], start=1):
            if info.type.name not in ("i32", "i64"):
                # OpenVINO's reader takes any integer type, mixed too
                refuse(ShapeError(f"input {port} must be i32 or i64, got {info.type}",
                                  rule="port.type.spec" if info.type.is_integer else "port.type", port=port))
            if info.type != inputs[1].type:
                refuse(ShapeError(f"input {port} type {info.type} differs from logit_length type {inputs[1].type}",
                                  rule="port.type.spec", port=port))
        for port, info, rank in ((0, logits, 3), (1, logit_length, 1), (2, labels, 2), (3, label_length, 1)):
            if info.rank is not None and info.rank != rank:
                raise ShapeError(f"input {port} rank is {info.rank} ({shape_str(info.shape)}), expected {rank}",
                                 rule="port.rank", port=port)
        if len(inputs) == 5 and inputs[4].rank is not None and inputs[4].rank != 0:
            raise ShapeError(f"blank_index must be a scalar, got {shape_str(inputs[4].shape)}", rule="port.rank",
                             port=4)
        batch = logits.shape[0] if logits.shape is not None else None
        for port, info in ((1, logit_length), (2, labels), (3, label_length)):
            if info.shape is not None:
                merged = merge_dim(batch, info.shape[0])
                if merged is False:
                    raise ShapeError(f"input {port} {shape_str(info.shape)} does not match the batch dim {batch}",
                                     rule="port.dims", port=port)
                batch = merged
        if logits.shape is not None and labels.shape is not None and merge_dim(logits.shape[1],
                                                                              labels.shape[1]) is False:
            raise ShapeError(f"labels {shape_str(labels.shape)} and logits {shape_str(logits.shape)} differ in "
                             f"time steps", rule="port.dims", port=2)
        return [TensorInfo((batch,), logits.type)]

    def run(self, inputs, in_infos, out_infos):
        logits, logit_length, labels, label_length = inputs[:4]
        n, time, classes = logits.shape
        blank = int(np.asarray(inputs[4]).reshape(())) if len(inputs) == 5 else classes - 1
        frames, lengths = logit_length.astype(np.int64), label_length.astype(np.int64)
        if ((frames > time) | (lengths > time) | (lengths > frames) | (frames < 0) | (lengths < 0)).any():
            raise ExecutionError(f"logit lengths {frames.tolist()} and label lengths {lengths.tolist()} must not exceed "
                                 f"{time}, and a label length not its logit length", rule="input.value", port=1)
        labels = labels.astype(np.int64)
        if not 0 <= blank < classes or ((labels < 0) | (labels >= classes))[
                np.arange(time)[None, :] < lengths[:, None]].any():
            raise ExecutionError(f"labels and blank_index must be class indices in [0, {classes})",
                                 rule="input.index", port=2)
        self.reserve(n * time * time, "label comparisons")
        targets, count = _decode_targets(labels, lengths, self.preprocess_collapse_repeated, self.unique)
        targets = np.clip(targets, 0, classes - 1)  # entries past a row's length are never used
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            x = logits.astype(np.float64)
            logp = x - np.log(np.exp(x).sum(axis=2, keepdims=True))
            if self.ctc_merge_repeated:
                loglik = self._merged(logp, targets, count, frames, blank)
            else:
                loglik = self._one_frame_each(logp, targets, count, frames, blank)
        loglik = np.where(count == 0, 0.0, loglik)
        return [(-loglik).astype(out_infos[0].type.storage)]

    @staticmethod
    def _merged(logp, targets, count, frames, blank):
        """Standard CTC forward pass over the blank-extended targets, frozen after each row's last frame."""
        n, time, _ = logp.shape
        states = 2 * targets.shape[1] + 1
        extended = np.full((n, states), blank, dtype=np.int64)
        extended[:, 1::2] = targets
        rows = np.arange(n)[:, None]
        skip = np.zeros((n, states), dtype=bool)  # s-2 -> s allowed: a label differing from the previous one
        skip[:, 3::2] = targets[:, 1:] != targets[:, :-1]
        alpha = np.full((n, states), -np.inf)
        if time == 0:
            return np.full(n, -np.inf)
        first = logp[:, 0][rows, extended]
        alpha[:, 0] = first[:, 0]
        if states > 1:
            alpha[:, 1] = first[:, 1]
        for t in range(1, time):  # the forward recursion is sequential in time
            stay = alpha
            step = np.concatenate([np.full((n, 1), -np.inf), alpha[:, :-1]], axis=1)
            jump = np.concatenate([np.full((n, 2), -np.inf), alpha[:, :-2]], axis=1)
            jump = np.where(skip, jump, -np.inf)
            total = np.logaddexp(np.logaddexp(stay, step), jump) + logp[:, t][rows, extended]
            alpha = np.where((t < frames)[:, None], total, alpha)
        last = 2 * count
        end = alpha[np.arange(n), last]
        before = alpha[np.arange(n), np.maximum(last - 1, 0)]
        return np.where(count > 0, np.logaddexp(end, before), end)

    @staticmethod
    def _one_frame_each(logp, targets, count, frames, blank):
        """ctc_merge_repeated false: beta[k] = log P(the first k labels took one frame each, the rest blank)."""
        n, time, _ = logp.shape
        width = targets.shape[1] + 1
        rows = np.arange(n)[:, None]
        beta = np.full((n, width), -np.inf)
        beta[:, 0] = 0.0
        for t in range(time):  # sequential in time
            label_lp = logp[:, t][rows, targets]  # [n, L]
            blank_lp = logp[:, t, blank][:, None]
            moved = np.concatenate([np.full((n, 1), -np.inf), beta[:, :-1] + label_lp], axis=1)
            total = np.logaddexp(beta + blank_lp, moved)
            beta = np.where((t < frames)[:, None], total, beta)
        return beta[np.arange(n), count]
