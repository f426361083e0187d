"""Elementwise binary ops with auto_broadcast (arithmetic, comparison, logical, bitwise), LogicalNot,
BitwiseNot and Select-1.

Values follow OpenVINO's reference kernels:
- f16 and bf16 compute in f32 and round once at the end (OpenVINO converts them to f32 and back).
- Integers wrap on overflow. Where the reference goes through `double` (Power, FloorMod, the integer
  forms of the unary math ops) the result is cast back like an x86 C cast: `c_cast`.
- Integer Divide by zero, and integer Mod by zero, are errors (the reference throws or faults).
- Bit shifts are C++ `a << b` / `a >> b` on x86-64: types up to 32 bits are promoted to int (unsigned
  for u32), the count is taken modulo 32 (modulo 64 for 64-bit types; a negative count by its low
  bits), the result truncated back to the type; `>>` is arithmetic for signed types.
"""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError, ShapeError
from ..ir.types import ELEMENT_TYPES, ElementType
from .attrs import Bool
from .broadcasting import (
    BroadcastMixin,
    align,
    auto_broadcast_attr,
    merge_into,
    pdpd_axis_attr,
)
from .conversion import round_to_bf16
from .registry import Op, TensorInfo, op, same_buffer

BOOLEAN = ELEMENT_TYPES["boolean"]


# ---------------------------------------------------------------- numeric helpers

def c_cast(x: np.ndarray, dtype) -> np.ndarray:
    """float64 values to `dtype` as a C static_cast compiled for x86-64 does it: truncation toward zero;
    8/16/32-bit signed and 8/16-bit unsigned targets go through int32, u32 and i64 through int64 (out of
    range and NaN give the 'integer indefinite' minimum, then the low bits); u64 splits at 2**63."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return x.astype(dtype)
    if dtype.kind == "b":
        return x != 0
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        t = np.trunc(x)
        if dtype.kind == "u" and dtype.itemsize == 8:
            big = t >= 2.0 ** 63
            low = _to_int64(np.where(big, t - 2.0 ** 63, t))
            return np.asarray(np.where(big, low ^ np.int64(-2 ** 63), low)).view(np.uint64)
        if dtype.itemsize == 8 or (dtype.kind == "u" and dtype.itemsize == 4):
            return _to_int64(t).astype(dtype)
        inside = (t >= -2.0 ** 31) & (t <= 2.0 ** 31 - 1)
        return np.where(inside, t, -2.0 ** 31).astype(np.int32).astype(dtype)


def _to_int64(t):
    inside = (t >= -2.0 ** 63) & (t < 2.0 ** 63)
    return np.where(inside, t, -2.0 ** 63).astype(np.int64)


def work_dtype(et: ElementType) -> np.dtype:
    """The NumPy type floats compute in: f32 for f16/bf16/f32 (and the narrow float types), f64 for f64."""
    return np.dtype(np.float64) if et.name == "f64" else np.dtype(np.float32)


def finish(result, et: ElementType) -> np.ndarray:
    """Round a float result to the element type and give it irrun's storage dtype."""
    result = np.asarray(result)
    with np.errstate(over="ignore", invalid="ignore"):
        return _finish(result, et)


def _finish(result, et):
    if et.name == "bf16":
        return round_to_bf16(result.astype(np.float32))
    if et.is_float:
        return result.astype(et.storage, copy=False)
    return c_cast(result, et.storage) if result.dtype.kind == "f" else result.astype(et.storage, copy=False)


def as_work(x: np.ndarray, et: ElementType) -> np.ndarray:
    return x.astype(work_dtype(et), copy=False) if et.is_float else x


def check_same_type(inputs, what="Arguments"):
    first = inputs[0].type
    for i, info in enumerate(inputs[1:], start=1):
        if info.type.name != first.name and "dynamic" not in (info.type.name, first.name):
            raise ShapeError(f"{what} do not have the same element type ({first} and {info.type})",
                             rule="port.type", port=i)


def check_bitwise_type(info, boolean=True, port=0):
    """Bitwise ops take integers, and (except the shifts) boolean."""
    name = info.type.name
    if name == "dynamic" or info.type.is_integer or (boolean and name == "boolean"):
        return
    kinds = "integer or boolean" if boolean else "integer"
    raise ShapeError(f"the element type must be {kinds}, got {info.type}", rule="port.type", port=port)


def reject_boolean(info, port=0):
    if info.type.name == "boolean":
        raise ShapeError("this operation does not support boolean inputs", rule="port.type", port=port)


# ---------------------------------------------------------------- binary base

class BinaryElementwise(BroadcastMixin, Op):
    auto_broadcast = auto_broadcast_attr()
    pdpd_axis = pdpd_axis_attr()
    num_inputs = (2, 2)
    kind = "arithmetic"  # arithmetic (no boolean), comparison (boolean out), logical (boolean only),
    # bitwise (integers and boolean), shift (integers)

    def infer(self, inputs):
        a, b = inputs
        check_same_type(inputs)
        if self.kind == "arithmetic":
            reject_boolean(a)
        elif self.kind == "logical":
            for port, info in enumerate(inputs):
                if info.type.name not in ("boolean", "dynamic"):
                    raise ShapeError(f"operands of logical operators must be boolean, got {info.type}",
                                     rule="port.type", port=port)
        elif self.kind in ("bitwise", "shift"):
            check_bitwise_type(a, boolean=self.kind == "bitwise")
        shape = merge_into(a.shape, b.shape, self.broadcast_mode, self.pdpd_axis)
        out_type = BOOLEAN if self.kind == "comparison" else a.type
        return [TensorInfo(shape, out_type)]

    def run(self, inputs, in_infos, out_infos):
        a, b = inputs
        b = align(b, a.ndim, self.broadcast_mode, self.pdpd_axis)
        et = in_infos[0].type
        with np.errstate(all="ignore"):
            result = self.compute(a, b, et)
        out = out_infos[0]
        result = finish(result, out.type)
        if result.shape != tuple(out.shape):
            result = np.broadcast_to(result, out.shape).copy()
        return [result]

    def compute(self, a, b, et):
        raise NotImplementedError


def _floats(fn):
    """compute() for ops whose integer form is NumPy's wrapping integer arithmetic."""
    def compute(self, a, b, et):
        return fn(as_work(a, et), as_work(b, et))
    return compute


class FloatIntoOperand:
    """f32/f64 data written into the buffer of an operand that has the output's shape, by `ufunc`
    (in-place execution, irrun/engine/inplace.py): the same operation as `compute` on float data."""

    inplace_ports = (0, 1)
    ufunc = None

    def can_run_into(self, in_infos, out_infos, port=0):
        et = in_infos[0].type
        return et.is_float and et.storage == work_dtype(et) and same_buffer(in_infos, out_infos, port)

    def run_into(self, inputs, in_infos, out_infos, out):
        a, b = inputs
        b = align(b, a.ndim, self.broadcast_mode, self.pdpd_axis)
        with np.errstate(all="ignore"):
            return [type(self).ufunc(a, b, out=out)]


@op("Add", 1)
class Add(FloatIntoOperand, BinaryElementwise):
    compute = _floats(np.add)
    ufunc = np.add


@op("Subtract", 1)
class Subtract(FloatIntoOperand, BinaryElementwise):
    compute = _floats(np.subtract)
    ufunc = np.subtract


@op("Multiply", 1)
class Multiply(FloatIntoOperand, BinaryElementwise):
    compute = _floats(np.multiply)
    ufunc = np.multiply


@op("Divide", 1)
class Divide(FloatIntoOperand, BinaryElementwise):
    m_pythondiv = Bool(default=True)
    ufunc = np.divide

    def compute(self, a, b, et):
        if et.is_float:
            return np.divide(as_work(a, et), as_work(b, et))
        if np.any(b == 0):
            raise ExecutionError("integer division by zero", rule="input.divzero")
        quotient = np.floor_divide(a, b)
        if self.m_pythondiv or et.storage.kind == "u":
            return quotient
        # C truncation: round the floor quotient up where the remainder is non-zero and signs differ
        inexact = np.multiply(quotient, b) != a
        return np.where(inexact & ((a < 0) != (b < 0)), quotient + 1, quotient).astype(a.dtype)


@op("Power", 1)
class Power(BinaryElementwise):
    def compute(self, a, b, et):
        if et.is_float:
            return np.power(as_work(a, et), as_work(b, et))
        return np.power(a.astype(np.float64), b.astype(np.float64))  # std::pow in double, then C cast


@op("Maximum", 1)
class Maximum(BinaryElementwise):
    def compute(self, a, b, et):
        return np.where(a < b, b, a)  # (a < b) ? b : a: a NaN in `a` wins, one in `b` loses


@op("Minimum", 1)
class Minimum(BinaryElementwise):
    def compute(self, a, b, et):
        return np.where(b < a, b, a)


@op("SquaredDifference", 1)
class SquaredDifference(BinaryElementwise):
    def compute(self, a, b, et):
        diff = np.subtract(as_work(a, et), as_work(b, et))
        return np.multiply(diff, diff)


@op("FloorMod", 1)
class FloorMod(BinaryElementwise):
    def compute(self, a, b, et):
        if et.storage.kind == "u":
            # unsigned: the integer remainder (by zero the reference faults)
            if np.any(b == 0):
                raise ExecutionError("integer modulo by zero", rule="input.divzero")
            return np.mod(a, b)
        # floats and signed integers: x - y * floor(x / y), all in double (so i64 beyond 2**53 loses
        # precision, and a signed integer divisor 0 gives NaN, cast to the indefinite value)
        x, y = a.astype(np.float64), b.astype(np.float64)
        return x - y * np.floor(x / y)


@op("Mod", 1)
class Mod(BinaryElementwise):
    def compute(self, a, b, et):
        if et.is_float:
            return np.fmod(as_work(a, et), as_work(b, et))
        if np.any(b == 0):
            raise ExecutionError("integer modulo by zero", rule="input.divzero")
        # C remainder: the sign of the dividend
        return np.fmod(a, b)


# ---------------------------------------------------------------- comparisons

class Comparison(BinaryElementwise):
    kind = "comparison"
    function = None

    def compute(self, a, b, et):
        return type(self).function(a, b)


@op("Equal", 1)
class Equal(Comparison):
    function = np.equal


@op("NotEqual", 1)
class NotEqual(Comparison):
    function = np.not_equal


@op("Less", 1)
class Less(Comparison):
    function = np.less


@op("LessEqual", 1)
class LessEqual(Comparison):
    function = np.less_equal


@op("Greater", 1)
class Greater(Comparison):
    function = np.greater


@op("GreaterEqual", 1)
class GreaterEqual(Comparison):
    function = np.greater_equal


# ---------------------------------------------------------------- logical

class Logical(BinaryElementwise):
    kind = "logical"
    function = None

    def compute(self, a, b, et):
        return type(self).function(a, b)


@op("LogicalAnd", 1)
class LogicalAnd(Logical):
    function = np.logical_and


@op("LogicalOr", 1)
class LogicalOr(Logical):
    function = np.logical_or


@op("LogicalXor", 1)
class LogicalXor(Logical):
    function = np.logical_xor


@op("LogicalNot", 1)
class LogicalNot(Op):
    """OpenVINO accepts any element type (the spec: boolean only): the output has the input's type and
    holds 1 where the input is 0, else 0 (NaN counts as non-zero)."""

    def infer(self, inputs):
        (x,) = inputs
        return [TensorInfo(x.shape, x.type)]

    def run(self, inputs, in_infos, out_infos):
        (x,) = inputs
        return [np.asarray(x == 0).astype(x.dtype, copy=False)]


# ---------------------------------------------------------------- bitwise

class Bitwise(BinaryElementwise):
    kind = "bitwise"
    function = None

    def compute(self, a, b, et):
        return type(self).function(a, b)


@op("BitwiseAnd", 13)
class BitwiseAnd(Bitwise):
    function = np.bitwise_and


@op("BitwiseOr", 13)
class BitwiseOr(Bitwise):
    function = np.bitwise_or


@op("BitwiseXor", 13)
class BitwiseXor(Bitwise):
    function = np.bitwise_xor


@op("BitwiseNot", 13)
class BitwiseNot(Op):
    """~x on integers, logical not on boolean."""

    def infer(self, inputs):
        (x,) = inputs
        check_bitwise_type(x)
        return [TensorInfo(x.shape, x.type)]

    def run(self, inputs, in_infos, out_infos):
        return [np.invert(inputs[0])]


class Shift(BinaryElementwise):
    kind = "shift"
    left = True

    def compute(self, a, b, et):
        dtype = a.dtype
        if dtype.itemsize == 8:
            count = (b.astype(np.int64) & 63).astype(dtype)
            return np.left_shift(a, count) if self.left else np.right_shift(a, count)
        # promoted to 32 bits (held in int64: sign- or zero-extended like the C promotion), count mod 32
        wide = a.astype(np.int64)
        count = b.astype(np.int64) & 31
        shifted = np.left_shift(wide, count) if self.left else np.right_shift(wide, count)
        return shifted.astype(dtype)


@op("BitwiseLeftShift", 15)
class BitwiseLeftShift(Shift):
    left = True


@op("BitwiseRightShift", 15)
class BitwiseRightShift(Shift):
    left = False


# ---------------------------------------------------------------- Select

@op("Select", 1)
class Select(BroadcastMixin, Op):
    auto_broadcast = auto_broadcast_attr()
    pdpd_axis = pdpd_axis_attr()
    num_inputs = (3, 3)

    def infer(self, inputs):
        cond, then, other = inputs
        if cond.type.name not in ("boolean", "dynamic"):
            raise ShapeError(f"argument 0 must have boolean element type, got {cond.type}", rule="port.type", port=0)
        if then.type.name != other.type.name and "dynamic" not in (then.type.name, other.type.name):
            raise ShapeError(f"argument 1 and 2 element types must match ({then.type} and {other.type})",
                             rule="port.type", port=2)
        mode = self.broadcast_mode
        if mode == "pdpd":
            # pdpd merges one way: 'else' into 'then', then 'cond' into the result
            shape = merge_into(then.shape, other.shape, mode, self.pdpd_axis, "'else' does not broadcast to 'then'", 2)
            shape = merge_into(shape, cond.shape, mode, self.pdpd_axis, "'cond' does not broadcast to the result", 0)
        else:
            shape = merge_into(then.shape, other.shape, mode, self.pdpd_axis, "argument shapes are inconsistent", 2)
            shape = merge_into(shape, cond.shape, mode, self.pdpd_axis, "argument shapes are inconsistent", 0)
        out_type = then.type if then.type.name != "dynamic" else other.type
        return [TensorInfo(shape, out_type)]

    def run(self, inputs, in_infos, out_infos):
        cond, then, other = inputs
        shape = tuple(out_infos[0].shape)
        mode = self.broadcast_mode
        cond = align(cond, len(shape), mode, self.pdpd_axis)
        other = align(other, len(shape), mode, self.pdpd_axis)
        result = np.where(cond, then, other)
        if result.shape != shape:
            result = np.broadcast_to(result, shape)
        return [np.array(result, dtype=out_infos[0].type.storage)]
