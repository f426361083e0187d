"""Small tensor ops: Identity-16, Eye-9, OneHot-16, ConvertPromoteTypes-14."""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from ..ir.types import ELEMENT_TYPES
from .attrs import Bool, Enum, Type
from .conversion import convert_array
from .registry import Op, TensorInfo, op
from .scatter import OneHot1
from .shape_ops import int_values
from .shapes import shape_str


@op("Identity", 16)
class Identity16(Op):
    """Its input, unchanged."""

    def infer(self, inputs):
        return [TensorInfo(inputs[0].shape, inputs[0].type, inputs[0].value)]

    def run(self, inputs, in_infos, out_infos):
        return [inputs[0]]


# ---------------------------------------------------------------- OneHot-16

@op("OneHot", 16)
class OneHot16(OneHot1):
    """OneHot-1 plus negative_indices_mode: "normalize" maps an index i in [-depth, -1] to i + depth."""

    negative_indices_mode = Enum("ignore_negative", "normalize", default="ignore_negative")

    def run(self, inputs, in_infos, out_infos):
        indices, depth = inputs[0], inputs[1]
        if self.negative_indices_mode == "normalize":
            count = int(np.asarray(depth).reshape(-1)[0])
            idx = indices.astype(np.int64)
            indices = np.where(idx < 0, idx + count, idx)
        return super().run([indices, *inputs[1:]], in_infos, out_infos)


# ---------------------------------------------------------------- Eye

def _one_value(info, what, port):
    if info.shape is not None and not (len(info.shape) == 0 or (len(info.shape) == 1 and info.shape[0] in (1, None))):
        raise ShapeError(f"{what} must be a scalar or a 1-element 1-D tensor, got {shape_str(info.shape)}",
                         rule="port.rank", port=port)
    if info.type.name not in ("i32", "i64"):
        raise ShapeError(f"{what} must be i32 or i64, got {info.type}", rule="port.type", port=port)
    values = int_values(info, what, port)
    return None if values is None else int(values.reshape(-1)[0])


@op("Eye", 9)
class Eye9(Op):
    """Matrices [*batch_shape, num_rows, num_columns] with ones where column - row == diagonal_index; a
    diagonal outside the matrix gives all zeros."""

    output_type = Type()
    num_inputs = (3, 4)

    def geometry(self, inputs):
        rows = _one_value(inputs[0], "num_rows", 0)
        cols = _one_value(inputs[1], "num_columns", 1)
        _one_value(inputs[2], "diagonal_index", 2)
        for value, what, port in ((rows, "num_rows", 0), (cols, "num_columns", 1)):
            if value is not None and value < 0:
                raise ShapeError(f"{what} {value} must not be negative", rule="attr.range", port=port)
        batch = ()
        if len(inputs) == 4:
            info = inputs[3]
            if info.rank is not None and info.rank != 1:
                raise ShapeError(f"batch_shape must be 1-D, got {shape_str(info.shape)}", rule="port.rank", port=3)
            if info.type.name not in ("i32", "i64"):
                raise ShapeError(f"batch_shape must be i32 or i64, got {info.type}", rule="port.type", port=3)
            values = int_values(info, "batch_shape", 3)
            if values is None:
                batch = None if info.shape is None or info.shape[0] is None else (None,) * info.shape[0]
            else:
                if (values < 0).any():
                    raise ShapeError(f"batch_shape {values.tolist()} has a negative dim", rule="attr.range", port=3)
                batch = tuple(int(v) for v in values)
        return batch, rows, cols

    def infer(self, inputs):
        if self.output_type.storage is None:
            raise ShapeError(f"output type {self.output_type} is not supported", rule="attr.value")
        batch, rows, cols = self.geometry(inputs)
        if batch is None:
            return [TensorInfo(None, self.output_type)]
        return [TensorInfo(batch + (rows, cols), self.output_type)]

    def run(self, inputs, in_infos, out_infos):
        shape = out_infos[0].shape
        rows, cols = shape[-2], shape[-1]
        diagonal = int(np.asarray(inputs[2]).reshape(-1)[0])
        matrix = np.arange(cols)[None, :] - np.arange(rows)[:, None] == diagonal
        out = np.broadcast_to(matrix.astype(self.output_type.storage), shape)
        return [np.array(out)]


# ---------------------------------------------------------------- ConvertPromoteTypes

_PROMOTABLE = {"boolean", "f16", "f32", "f64", "i4", "i8", "i16", "i32", "i64", "u1", "u4", "u8", "u16", "u32", "u64",
               "f8e4m3", "f8e5m2", "bf16"}
_SIGNED_BY_BITS = {4: "i4", 8: "i8", 16: "i16", 32: "i32"}


@op("ConvertPromoteTypes", 14)
class ConvertPromoteTypes14(Op):
    """Both inputs converted to one common type, by OpenVINO's promotion rules (core op, shape inference):
    boolean yields to the other type; float and integer mixed give the float type (safe mode: only when it
    has at least twice the integer's bits); same kind: with pytorch_scalar_promotion a scalar takes the
    non-scalar's type; signed with unsigned gives the signed type wide enough for both (u64 only in unsafe
    mode, as u64_integer_promotion_target); else the wider type; in unsafe mode f8e4m3 + f8e5m2 is f16 and
    f16 + bf16 is f32. Anything else is an error."""

    promote_unsafe = Bool(default=False)
    pytorch_scalar_promotion = Bool(default=False)
    u64_integer_promotion_target = Type(default=ELEMENT_TYPES["f32"])
    num_inputs = (2, 2)

    def common_type(self, a, b):
        for port, info in enumerate((a, b)):
            if info.type.name not in _PROMOTABLE:
                raise ShapeError(f"element type {info.type} cannot be promoted", rule="port.type", port=port)
        ta, tb = a.type, b.type
        if ta == tb:
            return ta
        if ta.name == "boolean":
            return tb
        if tb.name == "boolean":
            return ta
        if ta.is_float != tb.is_float:
            real, integer = (ta, tb) if ta.is_float else (tb, ta)
            if not self.promote_unsafe and real.bits < 2 * integer.bits:
                raise ShapeError(f"integer {integer} cannot be safely promoted to floating-point {real}",
                                 rule="port.type", port=1)
            return real
        if self.pytorch_scalar_promotion:
            if a.rank is None or b.rank is None:
                return None
            if (a.rank == 0) != (b.rank == 0):
                target, scalar = (tb, ta) if a.rank == 0 else (ta, tb)
                safe = ((_signed(target) == _signed(scalar) and target.bits >= scalar.bits)
                        or (_signed(target) and not _signed(scalar) and target.bits * 2 >= scalar.bits))
                if not self.promote_unsafe and not safe:
                    raise ShapeError(f"scalar {scalar} cannot be promoted to {target} by the safe rules",
                                     rule="port.type", port=1)
                return target
        if _signed(ta) != _signed(tb):
            unsigned, signed = (ta, tb) if not _signed(ta) else (tb, ta)
            if unsigned.bits <= 32 and (self.promote_unsafe or unsigned.bits * 2 <= signed.bits):
                return ELEMENT_TYPES[_SIGNED_BY_BITS.get(max(unsigned.bits * 2, signed.bits), "i64")]
            if not self.promote_unsafe:
                raise ShapeError(f"unsigned {unsigned} cannot be safely promoted to a signed integer",
                                 rule="port.type", port=1)
            return self.u64_integer_promotion_target
        if ta.bits != tb.bits:
            return ta if ta.bits > tb.bits else tb
        if self.promote_unsafe:
            if {ta.name, tb.name} == {"f8e4m3", "f8e5m2"}:
                return ELEMENT_TYPES["f16"]
            if {ta.name, tb.name} == {"f16", "bf16"}:
                return ELEMENT_TYPES["f32"]
        raise ShapeError(f"types {ta} and {tb} have no common type with these attributes", rule="port.type", port=1)

    def infer(self, inputs):
        a, b = inputs
        common = self.common_type(a, b)
        if common is None:
            raise ShapeError("pytorch_scalar_promotion needs the ranks of both inputs", rule="port.rank")
        if common.storage is None:
            raise ShapeError(f"promoted type {common} is not supported", rule="attr.value")
        return [TensorInfo(a.shape, common), TensorInfo(b.shape, common)]

    def run(self, inputs, in_infos, out_infos):
        target = out_infos[0].type
        return [convert_array(x, info.type, target) if info.type != target else x
                for x, info in zip(inputs, in_infos)]


def _signed(t):
    """OpenVINO's is_signed: floats are signed, boolean and unsigned integers are not."""
    return t.is_float or (t.is_integer and t.is_signed)

