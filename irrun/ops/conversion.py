"""Convert: element type conversion with OpenVINO's C-style casts."""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from ..ir.narrow_floats import NARROW_FLOATS, f16_bits, ov_bf16, round_to
from ..ir.types import ElementType
from .attrs import Type
from .registry import Op, TensorInfo, op


def convert_array(x: np.ndarray, src: ElementType, dst: ElementType) -> np.ndarray:
    """Element type conversion as OpenVINO's reference Convert does it (docs/semantics.md): floats to
    integers truncate toward zero like x86's C casts (through int32, or int64 for 64-bit targets and u32;
    out-of-range and NaN give the 'integer indefinite' value, then wrap); anything to boolean is x != 0;
    bf16, f8, f4 and nf4 targets are built from float32 with OpenVINO's rounding."""
    if dst.name == "boolean":
        return x != 0
    with np.errstate(over="ignore", invalid="ignore"):
        if dst.name == "bf16":  # OpenVINO builds ov::bfloat16 from a float (not round-to-nearest-even)
            return ov_bf16(x.astype(np.float32))
        if dst.name in NARROW_FLOATS:
            return round_to(x.astype(np.float32), dst.name)
        if dst.name == "f16" and src.name == "f64":  # through float and ov::float16's constructor
            return f16_bits(x.astype(np.float32)).view(np.float16)
        if src.is_float and dst.is_integer:
            return _wrap(_float_to_int(x, src, dst), dst)
        return _wrap(x, dst) if dst.is_integer else x.astype(dst.storage)


def _float_to_int(x: np.ndarray, src: ElementType, dst: ElementType) -> np.ndarray:
    """x86's truncating conversions as OpenVINO's reference compiles them. To int32 (and narrower) and int64:
    out of range and NaN give the 'integer indefinite' minimum. To u64 (and f32 -> u32): from 2**63 (2**31)
    up the value less 2**63 (2**31) is converted and the top bit set again, so anything past the type (+inf
    too) gives 0. Other floats -> u32 go through int64 and keep the low 32 bits (2**32, infinities, NaN: 0)."""
    truncated = np.trunc(x.astype(np.float64))
    if dst.name == "u64" or (dst.name == "u32" and src.name == "f32"):
        return _unsigned_from_signed(truncated, dst.bits)
    return _signed(truncated, np.int64 if dst.bits == 64 or dst.name == "u32" else np.int32)


def _signed(truncated: np.ndarray, wide) -> np.ndarray:
    limits = np.iinfo(wide)
    return np.where((truncated >= limits.min) & (truncated <= limits.max), truncated, limits.min).astype(wide)


def _unsigned_from_signed(truncated: np.ndarray, bits: int) -> np.ndarray:
    half = 2.0 ** (bits - 1)
    wide, unsigned = (np.int64, np.uint64) if bits == 64 else (np.int32, np.uint32)
    low = _signed(truncated, wide).view(unsigned)
    high = _signed(truncated - half, wide).view(unsigned) ^ unsigned(1 << (bits - 1))
    return np.where(truncated >= half, high, low)


def _wrap(x: np.ndarray, dst: ElementType) -> np.ndarray:
    if dst.bits >= 8:
        return x.astype(dst.storage)
    mask = (1 << dst.bits) - 1
    low = x.astype(np.int64) & mask
    if dst.is_signed:
        low = (low ^ (1 << (dst.bits - 1))) - (1 << (dst.bits - 1))
    return low.astype(dst.storage)


def round_to_bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 values to the nearest bfloat16 (ties to even), kept in float32."""
    bits = np.require(x, dtype=np.float32, requirements="C").view(np.uint32)
    rounding = ((bits >> 16) & 1) + np.uint32(0x7FFF)
    rounded = ((bits + rounding) & np.uint32(0xFFFF0000)).view(np.float32)
    return np.where(np.isnan(x), x, rounded)


@op("Convert", 1)
class Convert(Op):
    destination_type = Type()

    def infer(self, inputs):
        (data,) = inputs
        if self.destination_type.name == "dynamic":  # OpenVINO reads it: the output type is dynamic
            raise ShapeError("conversion to dynamic cannot be computed", rule="attr.value.spec")
        if self.destination_type.storage is None:
            raise ShapeError(f"conversion to {self.destination_type} is not supported", rule="attr.value")
        if "string" in (data.type.name, self.destination_type.name) and data.type != self.destination_type:
            # OpenVINO reads it; neither its reference kernel nor the CPU plugin converts to or from strings
            raise ShapeError(f"conversion from {data.type} to {self.destination_type} cannot be computed",
                             rule="attr.value.spec")
        return [TensorInfo(data.shape, self.destination_type)]

    def run(self, inputs, in_infos, out_infos):
        return [convert_array(inputs[0], in_infos[0].type, self.destination_type)]
