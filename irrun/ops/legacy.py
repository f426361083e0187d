"""Older ops still common in real IRs: HardSigmoid-1, GRN-1, ShuffleChannels-1, ReverseSequence-1,
Reverse-1, Xor-1, BatchToSpace-2, SpaceToBatch-2, CTCGreedyDecoder-1 and CTCGreedyDecoderSeqLen-6.

Values follow OpenVINO 2026.4 (reference kernels where it has them, the CPU plugin otherwise):
- HardSigmoid: max(0, min(1, alpha * x + beta)); f16/bf16 compute in f32 and round once.
- GRN: x / sqrt(sum over axis 1 of x^2 + bias), in f32 for the narrow float types.
- OpenVINO checks fewer types than the spec: HardSigmoid and GRN take any data type, CTCGreedyDecoder
  any data and mask types, CTCGreedyDecoderSeqLen any data, lengths and output index types.
- Reverse: negative axes count from the end.
- BatchToSpace/SpaceToBatch: block_shape[0] must be 1 at run time (OpenVINO's kernels break otherwise).
- ReverseSequence: a length 0 behaves like 1 (nothing reversed); a length above the sequence axis is an
  error.
- CTCGreedyDecoder*: the class of a step is the first arg-max; the blank (class C - 1, or the
  blank_index input) is dropped, and with merging a class equal to the previous step's class
  (blank included) is dropped too; CTCGreedyDecoder-1 stops at a sequence's first zero mask value.
"""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError, ShapeError
from ..ir.types import ELEMENT_TYPES
from .arithmetic import Logical, finish, work_dtype
from .attrs import Bool, Enum, Float, Int, Type
from .registry import Op, TensorInfo, op
from .shape_ops import merge_dim
from .shapes import require_rank, shape_str


def _check_integer(info, what, port):
    if info.type.name != "dynamic" and not info.type.is_integer:
        raise ShapeError(f"{what} must be integers, got {info.type}", rule="port.type", port=port)


def _normalize_axis(axis, rank, what):
    if not -rank <= axis < rank:
        raise ShapeError(f"{what} {axis} is outside [{-rank}, {rank - 1}]", rule="attr.range")
    return axis + rank if axis < 0 else axis


# ---------------------------------------------------------------- HardSigmoid, GRN

@op("HardSigmoid", 1)
class HardSigmoid1(Op):
    num_inputs = (3, 3)

    def infer(self, inputs):
        data, alpha, beta = inputs  # OpenVINO takes any data type (the spec says floats)
        for port, (info, what) in enumerate(((alpha, "alpha"), (beta, "beta")), start=1):
            if info.type.name not in (data.type.name, "dynamic") and data.type.name != "dynamic":
                raise ShapeError(f"{what} has type {info.type}, expected the data type {data.type}",
                                 rule="port.type", port=port)
            if info.shape is not None and len(info.shape) != 0:
                raise ShapeError(f"{what} must be a scalar, got shape {shape_str(info.shape)}", rule="port.rank",
                                 port=port)
        return [TensorInfo(data.shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        x, alpha, beta = inputs
        et = out_infos[0].type
        work = work_dtype(et)
        alpha = np.asarray(alpha, dtype=work).reshape(())
        beta = np.asarray(beta, dtype=work).reshape(())
        y = np.clip(x.astype(work) * alpha + beta, 0, 1)
        return [finish(y, et)]


@op("GRN", 1)
class GRN1(Op):
    bias = Float()

    def infer(self, inputs):
        (data,) = inputs  # OpenVINO takes any data type (the spec says floats)
        require_rank(data.shape, (2, 3, 4), "data")
        return [TensorInfo(data.shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        (x,) = inputs
        et = out_infos[0].type
        xw = x.astype(work_dtype(et))
        norm = np.sqrt(np.sum(xw * xw, axis=1, keepdims=True) + xw.dtype.type(self.bias))
        return [finish(xw / norm, et)]


# ---------------------------------------------------------------- data movement

@op("ShuffleChannels", 1)
class ShuffleChannels1(Op):
    axis = Int(default=1)
    group = Int(default=1)

    def infer(self, inputs):
        (data,) = inputs
        if self.group < 1:
            raise ShapeError(f"group {self.group} must be at least 1", rule="attr.range")
        if data.shape is None:
            return [TensorInfo(None, data.type)]
        rank = len(data.shape)
        if rank < 1:
            raise ShapeError("data must not be a scalar", rule="port.rank")
        axis = _normalize_axis(self.axis, rank, "axis")
        channels = data.shape[axis]
        if channels is not None and channels % self.group:
            raise ShapeError(f"channel dimension {channels} (axis {self.axis}) is not a multiple of group "
                             f"{self.group}", rule="port.dims", port=0)
        return [TensorInfo(data.shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        (x,) = inputs
        axis = self.axis + x.ndim if self.axis < 0 else self.axis
        outer = int(np.prod(x.shape[:axis], dtype=np.int64))
        inner = int(np.prod(x.shape[axis + 1:], dtype=np.int64))
        channels = x.shape[axis]
        y = x.reshape(outer, self.group, channels // self.group, inner).transpose(0, 2, 1, 3)
        return [np.ascontiguousarray(y).reshape(x.shape)]


@op("ReverseSequence", 1)
class ReverseSequence1(Op):
    batch_axis = Int(default=0)
    seq_axis = Int(default=1)
    num_inputs = (2, 2)

    def infer(self, inputs):
        data, lengths = inputs
        if lengths.type.name != "dynamic" and not (lengths.type.is_integer or lengths.type.is_float):
            raise ShapeError(f"sequence lengths must be numbers, got {lengths.type}", rule="port.type", port=1)
        require_rank(lengths.shape, (1,), "sequence lengths", 1)
        if data.shape is None:
            return [TensorInfo(None, data.type)]
        rank = len(data.shape)
        if rank < 2:
            raise ShapeError(f"data rank is {rank}, expected at least 2", rule="port.rank")
        batch_axis = _normalize_axis(self.batch_axis, rank, "batch_axis")
        _normalize_axis(self.seq_axis, rank, "seq_axis")
        shape = list(data.shape)
        if lengths.shape is not None:
            got, want = lengths.shape[0], shape[batch_axis]
            if got is not None and want is not None and got != want:
                raise ShapeError(f"sequence lengths has {got} values, the batch axis {self.batch_axis} has "
                                 f"{want}", rule="port.dims", port=1)
            shape[batch_axis] = merge_dim(want, got)
        return [TensorInfo(tuple(shape), data.type)]

    def run(self, inputs, in_infos, out_infos):
        x, lengths = inputs
        rank = x.ndim
        batch_axis = self.batch_axis % rank
        seq_axis = self.seq_axis % rank
        steps = x.shape[seq_axis]
        lengths = np.asarray(lengths)
        if lengths.dtype.kind == "f":
            lengths = lengths.astype(np.int64)  # C cast (truncation), as the kernels index with it
        lengths = lengths.astype(np.int64)
        if (lengths > steps).any() or (lengths < 0).any():
            raise ExecutionError(f"sequence lengths {lengths.tolist()} are outside [0, {steps}] (the sequence "
                                 f"axis size)", rule="input.value", port=1)
        lengths = np.maximum(lengths, 1)
        t = np.arange(steps)
        if batch_axis == seq_axis:
            # each index along the shared axis uses its own length
            source = np.where(t < lengths, lengths - 1 - t, t)
            shape = [1] * rank
            shape[seq_axis] = steps
            return [np.take_along_axis(x, source.reshape(shape), axis=seq_axis)]
        source = np.where(t[None, :] < lengths[:, None], lengths[:, None] - 1 - t[None, :], t[None, :])
        shape = [1] * rank
        shape[batch_axis] = len(lengths)
        shape[seq_axis] = steps
        order = np.argsort([batch_axis, seq_axis])  # source's (batch, step) axes in data order
        source = source.transpose(order).reshape(shape)
        return [np.take_along_axis(x, np.broadcast_to(source, _index_shape(x.shape, seq_axis, steps)),
                                   axis=seq_axis)]


def _index_shape(shape, axis, size):
    shape = list(shape)
    shape[axis] = size
    return tuple(shape)


@op("Reverse", 1)
class Reverse1(Op):
    mode = Enum("index", "mask")
    num_inputs = (2, 2)

    def infer(self, inputs):
        data, axes = inputs
        require_rank(axes.shape, (1,), "axes", 1)
        rank = data.rank
        if self.mode == "index":
            _check_integer(axes, "axes in index mode", 1)
        elif axes.type.name not in ("boolean", "dynamic"):
            raise ShapeError(f"axes in mask mode must be boolean, got {axes.type}", rule="port.type", port=1)
        if self.mode == "mask" and rank is not None and axes.shape is not None and axes.shape[0] is not None \
                and axes.shape[0] != rank:
            raise ShapeError(f"the mask has {axes.shape[0]} values, the data rank is {rank}", rule="port.dims",
                             port=1)
        if axes.value is not None and rank is not None:
            self._axes(np.asarray(axes.value), rank)
        return [TensorInfo(data.shape, data.type)]

    def _axes(self, axes, rank):
        if self.mode == "mask":
            return tuple(int(i) for i in np.flatnonzero(axes.reshape(-1)))
        values = [int(v) for v in axes.reshape(-1)]
        bad = [v for v in values if not -rank <= v < rank]  # negative axes count from the end
        if bad:
            raise ShapeError(f"axes {values} are out of bounds for rank {rank}", rule="attr.range", port=1)
        return tuple(sorted({v % rank for v in values}))

    def run(self, inputs, in_infos, out_infos):
        x, axes = inputs
        dims = self._axes(np.asarray(axes), x.ndim)
        return [np.ascontiguousarray(np.flip(x, dims)) if dims else x.copy()]


@op("Xor", 1)
class Xor1(Logical):
    function = np.logical_xor


# ---------------------------------------------------------------- BatchToSpace, SpaceToBatch

class _BlockOp(Op):
    num_inputs = (4, 4)
    names = ("block_shape", "pads_begin", "pads_end")
    negative_rule = "attr.range.spec"  # OpenVINO reads negative pads; it refuses negative crops
    same_types = False  # OpenVINO's BatchToSpace wants one type for its three inputs, SpaceToBatch does not
    unknown_length_spec = False  # SpaceToBatch: OpenVINO compares the inputs' length with the rank only if known

    def _check_inputs(self, inputs):
        data = inputs[0]
        types = [inputs[port].type for port in (1, 2, 3)]
        if self.same_types and len(set(types)) > 1:
            raise ShapeError(f"{', '.join(self.names)} must have one element type, got {', '.join(map(str, types))}",
                             rule="port.type", port=1 + [t != types[0] for t in types].index(True))
        same = None
        for port in (1, 2, 3):
            info = inputs[port]
            _check_integer(info, self.names[port - 1], port)
            if info.shape is None:
                continue
            if same is not None and (len(same) != len(info.shape) or any(
                    a is not None and b is not None and a != b for a, b in zip(same, info.shape))):
                raise ShapeError(f"{', '.join(self.names)} must have the same shape", rule="port.dims", port=port)
            same = info.shape if same is None else tuple(merge_dim(a, b) for a, b in zip(same, info.shape))
        if same is not None and len(same) != 1:
            raise ShapeError(f"{self.names[0]} and the other inputs must have rank 1, got {len(same)}",
                             rule="port.rank", port=1)
        if data.shape is None:
            return None
        if len(data.shape) < 2:
            raise ShapeError(f"data rank is {len(data.shape)}, expected at least 2", rule="port.rank")
        values = [inputs[p].value for p in (1, 2, 3)]
        if same is not None and same[0] is not None and same[0] != len(data.shape):
            lenient = self.unknown_length_spec and any(v is None for v in values)
            raise ShapeError(f"{self.names[0]} has {same[0]} values, the data rank is {len(data.shape)}",
                             rule="port.dims.spec" if lenient else "port.dims", port=1)
        if any(v is None for v in values):
            return (None,) * len(data.shape), None
        block, begin, end = (np.asarray(v).astype(np.int64).reshape(-1) for v in values)
        if (block < 1).any():
            raise ShapeError(f"{self.names[0]} {block.tolist()} has a value below 1", rule="attr.range", port=1)
        if (begin < 0).any() or (end < 0).any():
            raise ShapeError(f"{self.names[1]} {begin.tolist()} and {self.names[2]} {end.tolist()} must not be "
                             f"negative", rule=self.negative_rule, port=2)
        return data.shape, (block, begin, end)

    def infer(self, inputs):
        data = inputs[0]
        checked = self._check_inputs(inputs)
        if checked is None:
            return [TensorInfo(None, data.type)]
        shape, values = checked
        if values is None:
            return [TensorInfo(shape, data.type)]
        return [TensorInfo(self.output_shape(shape, *values), data.type)]


def _block_values(inputs):
    block, begin, end = (np.asarray(v).astype(np.int64).reshape(-1) for v in inputs[1:])
    if block[0] != 1:
        # OpenVINO's shape inference accepts it, but its kernels then read or write out of bounds (the
        # reference crashes or returns garbage, the CPU plugin a tensor of the wrong size)
        raise ExecutionError(f"block_shape {block.tolist()} must start with 1: OpenVINO cannot run other values",
                             rule="input.value", port=1)
    return block, begin, end


@op("BatchToSpace", 2)
class BatchToSpace2(_BlockOp):
    names = ("block_shape", "crops_begin", "crops_end")
    negative_rule = "attr.range"
    same_types = True

    def output_shape(self, shape, block, begin, end):
        total = int(np.prod(block))
        out = []
        batch = shape[0]
        if batch is not None and batch % total:
            raise ShapeError(f"batch {batch} is not a multiple of the block product {total}", rule="port.dims")
        out.append(None if batch is None else batch // total)
        for axis in range(1, len(shape)):
            dim = shape[axis]
            if dim is None:
                out.append(None)
                continue
            size = dim * int(block[axis])
            crop = int(begin[axis] + end[axis])
            if crop > size:
                raise ShapeError(f"crops {crop} exceed block_shape * input dim {size} on axis {axis}",
                                 rule="attr.range", port=2)
            out.append(size - crop)
        return tuple(out)

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        block, begin, end = _block_values(inputs)
        rank = x.ndim
        batch = x.shape[0] // int(np.prod(block))
        # data as [B0, ..., B(n-1), batch, D1, ..., D(n-1)], then each Bi moved after Di
        y = x.reshape(*(int(b) for b in block), batch, *x.shape[1:])
        order = [rank]
        for axis in range(1, rank):
            order += [rank + axis, axis]
        y = y[0]
        order = [o - 1 for o in order]
        y = y.transpose(order).reshape(batch, *(x.shape[a] * int(block[a]) for a in range(1, rank)))
        index = tuple(slice(int(begin[a]), y.shape[a] - int(end[a])) for a in range(rank))
        return [np.ascontiguousarray(y[index])]


@op("SpaceToBatch", 2)
class SpaceToBatch2(_BlockOp):
    unknown_length_spec = True

    def output_shape(self, shape, block, begin, end):
        out = []
        for axis, dim in enumerate(shape):
            if dim is None:
                out.append(None)
                continue
            padded = dim + int(begin[axis] + end[axis])
            if padded % int(block[axis]):
                raise ShapeError(f"padded dim {padded} on axis {axis} is not a multiple of block_shape "
                                 f"{int(block[axis])}", rule="port.dims")
            out.append(padded // int(block[axis]))
        if out[0] is not None:
            out[0] = out[0] * int(np.prod(block))
        return tuple(out)

    def run(self, inputs, in_infos, out_infos):
        x = inputs[0]
        block, begin, end = _block_values(inputs)
        rank = x.ndim
        padded = np.pad(x, [(int(b), int(e)) for b, e in zip(begin, end)])
        # split every axis a into (D_a / B_a, B_a), move the blocks in front
        split = []
        for axis in range(rank):
            split += [padded.shape[axis] // int(block[axis]), int(block[axis])]
        y = padded.reshape(split)
        order = [2 * a + 1 for a in range(rank)] + [2 * a for a in range(rank)]
        y = y.transpose(order)
        return [np.ascontiguousarray(y).reshape(out_infos[0].shape)]


# ---------------------------------------------------------------- CTC greedy decoders

def _greedy(classes, valid, blank, merge):
    """classes, valid: (N, T). Decoded (N, T) padded with -1, and the lengths (N,)."""
    keep = valid & (classes != blank)
    if merge:
        previous = np.concatenate([np.full((classes.shape[0], 1), -1, classes.dtype), classes[:, :-1]], axis=1)
        keep &= classes != previous
    lengths = keep.sum(axis=1)
    decoded = np.full(classes.shape, -1, dtype=np.int64)
    position = np.cumsum(keep, axis=1) - 1
    rows = np.broadcast_to(np.arange(classes.shape[0])[:, None], classes.shape)
    decoded[rows[keep], position[keep]] = classes[keep]
    return decoded, lengths


@op("CTCGreedyDecoder", 1)
class CTCGreedyDecoder1(Op):
    ctc_merge_repeated = Bool(default=True)
    num_inputs = (2, 2)

    def infer(self, inputs):
        data, mask = inputs  # OpenVINO checks neither type (the spec says floats)
        require_rank(data.shape, (3,), "data")
        require_rank(mask.shape, (2,), "seq_mask", 1)
        steps, batch = (None, None) if data.shape is None else data.shape[:2]
        if mask.shape is not None:
            for what, a, b in (("time", steps, mask.shape[0]), ("batch", batch, mask.shape[1])):
                if a is not None and b is not None and a != b:
                    raise ShapeError(f"the {what} dims of data {shape_str(data.shape)} and seq_mask "
                                     f"{shape_str(mask.shape)} differ", rule="port.dims", port=1)
            steps, batch = merge_dim(steps, mask.shape[0]), merge_dim(batch, mask.shape[1])
        return [TensorInfo((batch, steps, 1, 1), data.type)]

    def run(self, inputs, in_infos, out_infos):
        data, mask = inputs
        steps, batch, classes = data.shape
        if classes == 0 or steps == 0:
            return [np.full((batch, steps, 1, 1), -1, dtype=out_infos[0].type.storage)]
        best = np.argmax(data.astype(work_dtype(in_infos[0].type)), axis=2).T  # (N, T)
        valid = np.cumprod(mask.T != 0, axis=1).astype(bool)
        decoded, _ = _greedy(best, valid, classes - 1, self.ctc_merge_repeated)
        return [decoded.astype(out_infos[0].type.storage).reshape(batch, steps, 1, 1)]


@op("CTCGreedyDecoderSeqLen", 6)
class CTCGreedyDecoderSeqLen6(Op):
    merge_repeated = Bool(default=True)
    # the spec allows i32 and i64; OpenVINO takes any type (an f32 index output holds 0., -1., ...)
    classes_index_type = Type(default=ELEMENT_TYPES["i32"])
    sequence_length_type = Type(default=ELEMENT_TYPES["i32"])
    num_inputs = (2, 3)

    def infer(self, inputs):
        data, lengths = inputs[:2]
        for name in ("classes_index_type", "sequence_length_type"):
            et = getattr(self, name)
            if et.storage is None or et.name == "boolean":
                raise ShapeError(f"{name} {et} cannot hold indices", rule="attr.value")
        # OpenVINO checks neither input's type (the spec says float data and integer lengths)
        require_rank(data.shape, (3,), "data")
        require_rank(lengths.shape, (1,), "sequence_length", 1)
        batch, steps = (None, None) if data.shape is None else data.shape[:2]
        if lengths.shape is not None:
            if batch is not None and lengths.shape[0] is not None and batch != lengths.shape[0]:
                raise ShapeError(f"sequence_length {shape_str(lengths.shape)} does not match the batch of data "
                                 f"{shape_str(data.shape)}", rule="port.dims", port=1)
            batch = merge_dim(batch, lengths.shape[0])
        if len(inputs) == 3:
            blank = inputs[2]
            _check_integer(blank, "blank_index", 2)
            if blank.shape is not None and not (len(blank.shape) == 0 or tuple(blank.shape) in ((1,), (None,))):
                raise ShapeError(f"blank_index must be a scalar or hold one value, got {shape_str(blank.shape)}",
                                 rule="port.rank", port=2)
        return [TensorInfo((batch, steps), self.classes_index_type),
                TensorInfo((batch,), self.sequence_length_type)]

    def run(self, inputs, in_infos, out_infos):
        data, lengths = inputs[:2]
        batch, steps, classes = data.shape
        blank = classes - 1 if len(inputs) < 3 else int(np.asarray(inputs[2]).reshape(-1)[0])
        lengths = np.asarray(lengths).astype(np.int64)
        if (lengths < 0).any() or (lengths > steps).any():
            raise ExecutionError(f"sequence lengths {lengths.tolist()} are outside [0, {steps}]",
                                 rule="input.value", port=1)
        if classes == 0 or steps == 0:
            decoded = np.full((batch, steps), -1, dtype=np.int64)
            found = np.zeros(batch, dtype=np.int64)
        else:
            best = np.argmax(data.astype(work_dtype(in_infos[0].type)), axis=2)
            valid = np.arange(steps)[None, :] < lengths[:, None]
            decoded, found = _greedy(best, valid, blank, self.merge_repeated)
        return [decoded.astype(out_infos[0].type.storage), found.astype(out_infos[1].type.storage)]
