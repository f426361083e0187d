"""Test inputs and OpenVINO raw-tensor helpers for the narrow element types (f8*, f4e2m1, nf4, bf16, i4,
u1-u6): OpenVINO tensors of these types are fed and read as raw packed bytes; irrun's widened values are
decoded from the same bytes with irrun.ir.weights.decode."""
from __future__ import annotations

import numpy as np
import openvino as ov
from openvino import opset1

from irrun.ir.types import ELEMENT_TYPES
from irrun.ir.weights import _BYTE_TABLES, _NIBBLE_TABLES, decode

WIDE = ["f32", "f16", "bf16", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "boolean"]
NARROW_FLOAT = ["f8e4m3", "f8e5m2", "f8e8m0", "f4e2m1", "nf4"]
NARROW_INT = ["i4", "u4", "u1", "u2", "u3", "u6"]
NARROW = NARROW_FLOAT + NARROW_INT
NP = {"f32": np.float32, "f16": np.float16, "f64": np.float64, "i8": np.int8, "i16": np.int16, "i32": np.int32,
      "i64": np.int64, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64, "boolean": np.bool_}


def code_values() -> np.ndarray:
    """Every value any narrow float type can hold (f32)."""
    tables = list(_BYTE_TABLES.values()) + list(_NIBBLE_TABLES.values())
    return np.unique(np.concatenate(tables)).astype(np.float32)


def float_corners(rng, count=5000) -> np.ndarray:
    """float64 values: every narrow code value, the midpoints between neighbours (exact ties) and the
    float32 values either side of them, overflow and underflow edges, signed zeros, infinities, NaN, float32
    subnormals and extremes, random bit patterns and random values at many scales."""
    codes = code_values()
    codes = codes[~np.isnan(codes)]
    for name in ("f8e4m3", "f8e5m2", "f4e2m1", "nf4"):
        table = np.sort(np.unique(np.concatenate([_BYTE_TABLES.get(name, _NIBBLE_TABLES.get(name))])))
        table = table[np.isfinite(table)]
        codes = np.concatenate([codes, (table[1:] + table[:-1]) / 2])
    pos = np.abs(np.concatenate([codes, 2.0 ** np.arange(-150, 129)])).astype(np.float32)
    near = np.concatenate([pos, np.nextafter(pos, np.float32(np.inf)), np.nextafter(pos, np.float32(0))])
    edges = np.array([448, 464, 480, 496, 512, 57344, 61439, 61440, 65504, 65519, 65520, 1e6, 6, 5, 7, 1e-7,
                      3.4028235e38, 1.5 * 2.0 ** 127, 1.4e-45, 1.1754942e-38, 1.1754944e-38, 0.0], dtype=np.float32)
    bits = rng.integers(0, 2 ** 32, count, dtype=np.uint64).astype(np.uint32).view(np.float32)
    scaled = (rng.standard_normal(count) * 10.0 ** rng.integers(-12, 12, count)).astype(np.float32)
    values = np.concatenate([near, edges, bits, scaled]).astype(np.float64)
    values = np.concatenate([values, -values, [np.inf, -np.inf, np.nan, -np.nan]])
    return values


def wide_inputs(src: str, rng) -> np.ndarray:
    """Inputs of wide type `src` as a NumPy array (bf16 as its float32 values)."""
    if src == "f16":
        return np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    if src == "bf16":
        return (np.arange(65536, dtype=np.uint32) << 16).view(np.float32)
    if src == "boolean":
        return np.array([False, True, True, False])
    if src in ("f32", "f64"):
        values = float_corners(rng)
        if src == "f64":  # values a hair off float32 ties: rounded twice through float32 or not
            ties = values[np.isfinite(values)]
            values = np.concatenate([values, ties * (1 + 2.0 ** -30), ties * (1 - 2.0 ** -30), [1e300, -1e300]])
        with np.errstate(over="ignore"):
            return values.astype(NP[src])
    info = np.iinfo(NP[src])
    small = np.arange(max(info.min, -70000), min(info.max, 70000) + 1, dtype=np.int64)
    powers = np.array([2 ** k + d for k in range(64) for d in (-1, 0, 1)], dtype=object)
    big = np.array([v for v in list(powers) + [-v for v in powers] + [info.min, info.max]
                    if info.min <= v <= info.max], dtype=object).astype(NP[src])
    rand = rng.integers(info.min, info.max, 5000, dtype=NP[src], endpoint=True)
    return np.concatenate([small.astype(NP[src]), big, rand])


def narrow_codes(name: str) -> np.ndarray:
    """Every code of a narrow type, as unsigned codes (i4 as 0..15)."""
    bits = ELEMENT_TYPES[name].bits
    return np.arange(1 << bits, dtype=np.uint8)


def pack(codes: np.ndarray, name: str) -> bytes:
    """Codes -> OpenVINO's packed bytes (u3/u6 are packed by OpenVINO's own Convert from u8)."""
    bits = ELEMENT_TYPES[name].bits
    if bits == 8:
        return codes.astype(np.uint8).tobytes()
    if name == "u1":
        return np.packbits(codes.astype(np.uint8), bitorder="big").tobytes()
    if name in ("u3", "u6"):
        tensor = evaluate_convert(ov.Tensor(codes.astype(np.uint8)), "u8", name)
        return np.array(tensor.data, copy=True).view(np.uint8).tobytes()
    per = 8 // bits
    padded = np.zeros(-(-codes.size // per) * per, np.uint8)
    padded[:codes.size] = codes
    shifted = padded.reshape(-1, per).astype(np.uint16) << (np.arange(per, dtype=np.uint16) * bits)
    return shifted.sum(axis=1).astype(np.uint8).tobytes()


def raw_tensor(name: str, count: int, raw: bytes) -> ov.Tensor:
    tensor = ov.Tensor(getattr(ov.Type, name), ov.Shape([count]))
    view = np.asarray(tensor.data).view(np.uint8).reshape(-1)
    view[:] = np.frombuffer(raw, np.uint8)[:view.size]
    return tensor


def to_tensor(values: np.ndarray, name: str) -> ov.Tensor:
    """A wide-type array as an OpenVINO tensor (bf16 from its float32 values, which are bf16 exact)."""
    if name == "bf16":
        return raw_tensor("bf16", values.size, (values.astype(np.float32).view(np.uint32) >> 16).astype("<u2").tobytes())
    return ov.Tensor(np.require(values, requirements="C"))


def from_tensor(tensor: ov.Tensor, name: str, count: int) -> np.ndarray:
    """An OpenVINO output as irrun holds it (narrow types and bf16 widened, via irrun's decoder)."""
    if name in NP:
        return np.array(tensor.data, copy=True).reshape(-1)[:count]
    raw = np.array(tensor.data, copy=True).view(np.uint8).tobytes()
    return decode(memoryview(raw), ELEMENT_TYPES[name], count)


def evaluate_convert(tensor: ov.Tensor, src: str, dst: str) -> ov.Tensor | None:
    """OpenVINO's reference Convert (Node.evaluate), or None when it has none for this pair."""
    count = int(np.prod(tensor.get_shape()))
    node = opset1.convert(opset1.parameter([count], getattr(ov.Type, src)), getattr(ov.Type, dst))
    out = ov.Tensor(getattr(ov.Type, dst), ov.Shape([count]))
    return out if node.evaluate([out], [tensor]) else None
