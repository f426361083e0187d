"""Convert: element type conversion with OpenVINO's C-style casts."""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from ..ir.narrow_floats import NARROW_FLOATS, nf4_to_bf16, round_to
from ..ir.types import ElementType
from .attrs import Type
from .registry import Op, TensorInfo, op


def convert_array(x: np.ndarray, src: ElementType, dst: ElementType) -> np.ndarray:
    """Floats to integers truncate toward zero and wrap like a C cast through int32 (int64 for 64-bit
    targets); out-of-range and NaN give the x86 'integer indefinite' value. Anything to boolean is x != 0."""
    if dst.name == "boolean":
        return x != 0
    if dst.name == "bf16":
        if src.name == "nf4":
            return nf4_to_bf16(x)
        return round_to_bf16(x.astype(np.float32))
    if dst.name in NARROW_FLOATS:  # through float32, as OpenVINO's narrow types are built from a float
        with np.errstate(over="ignore", invalid="ignore"):
            return round_to(x.astype(np.float32), dst.name)
    if src.is_float and dst.is_integer:
        # f8 values reach u32 through a 64-bit conversion (NaN and infinities give 0)
        wide = np.int64 if dst.bits == 64 or (dst.name == "u32" and src.name in NARROW_FLOATS) else np.int32
        with np.errstate(invalid="ignore", over="ignore"):
            truncated = np.trunc(x.astype(np.float64))
            limits = np.iinfo(wide)
            in_range = (truncated >= limits.min) & (truncated <= limits.max)
            as_int = np.where(in_range, truncated, limits.min).astype(wide)
        if dst.name == "u64" and src.name in NARROW_FLOATS:  # C's float -> uint64: +inf - 2**63 wraps to 0
            as_int = np.where(x == np.inf, 0, as_int)
        return _wrap(as_int, dst)
    with np.errstate(over="ignore", invalid="ignore"):
        return _wrap(x, dst) if dst.is_integer else x.astype(dst.storage)


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
        if self.destination_type.storage is None:
            raise ShapeError(f"conversion to {self.destination_type} is not supported", rule="attr.value")
        return [TensorInfo(data.shape, self.destination_type)]

    def run(self, inputs, in_infos, out_infos):
        return [convert_array(inputs[0], in_infos[0].type, self.destination_type)]
