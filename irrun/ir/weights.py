"""The .bin file, mapped read-only, and decoding of every element type a Const can hold."""
from __future__ import annotations

import mmap
import os

import numpy as np

from ..errors import WeightsError
from .types import GROUPED, ElementType

RELEASE_BYTES = 16 << 20  # bytes handed out between two releases of the mapping's resident pages


class WeightsFile:
    """model.bin mapped read-only; opened on first use, so a model without Consts needs none."""

    def __init__(self, path: str):
        self.path = path
        self._buffer = None
        self._map = None
        self._handed_out = 0  # bytes of slices handed out since the last release

    @property
    def buffer(self) -> memoryview:
        if self._buffer is None:
            try:
                with open(self.path, "rb") as f:
                    size = os.fstat(f.fileno()).st_size
                    if size:
                        self._map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
                    self._buffer = memoryview(self._map) if size else memoryview(b"")
            except OSError as exc:
                raise WeightsError(f"cannot read the weights file {self.path}: {exc.strerror or exc}",
                                   rule="const.bin") from None
        return self._buffer

    def size(self) -> int:
        return len(self.buffer)

    def slice(self, offset: int, size: int) -> memoryview:
        """Bytes [offset, offset + size), checked with Python integers (no overflow)."""
        if offset < 0 or size < 0:
            raise WeightsError(f"negative offset {offset} or size {size}", rule="const.offset")
        total = self.size()
        if offset + size > total:
            raise WeightsError(
                f"offset {offset} + size {size} = {offset + size} is past the end of {os.path.basename(self.path)} "
                f"({total} bytes)", rule="const.offset")
        self._handed_out += size
        return self.buffer[offset:offset + size]

    def read_through(self, nbytes: int) -> None:
        """`nbytes` were copied from views of the mapping: released like slices handed out."""
        self._handed_out += nbytes
        self.release(RELEASE_BYTES)

    def release(self, at_least: int = 0) -> None:
        """Drop the mapping's pages from the process's resident memory once `at_least` bytes were handed
        out since the last release: weights converted at load (f16 -> f32) would otherwise stay resident
        beside their converted copies. Weights still read as they are come back from the page cache on
        their next use (the mapping is read-only, so no data is lost)."""
        if self._map is None or self._handed_out < at_least or not hasattr(mmap, "MADV_DONTNEED"):
            return
        self._map.madvise(mmap.MADV_DONTNEED)
        self._handed_out = 0


def decode(raw: memoryview, et: ElementType, count: int) -> np.ndarray:
    """`count` elements of type `et` from `raw` (already checked to be long enough), as a 1-D array."""
    if et.name == "string":
        return decode_strings(raw, count)
    if et.storage is None or et.name in _UNSUPPORTED:
        raise WeightsError(f"Const element type {et.name} is not supported yet", rule="const.type")
    if et.bits >= 8 and et.name in _NATIVE:
        return np.frombuffer(raw, dtype=et.storage.newbyteorder("<"), count=count)
    if et.name == "boolean":
        return np.frombuffer(raw, dtype=np.uint8, count=count) != 0
    if et.name == "bf16":
        halves = np.frombuffer(raw, dtype="<u2", count=count).astype(np.uint32)
        return (halves << 16).view(np.float32)
    if et.bits == 8:
        return _BYTE_TABLES[et.name][np.frombuffer(raw, dtype=np.uint8, count=count)]
    if et.name in GROUPED:
        return _unpack_grouped(np.frombuffer(raw, dtype=np.uint8, count=et.nbytes(count)), et.name, count)
    codes = _unpack_low_first(np.frombuffer(raw, dtype=np.uint8, count=et.nbytes(count)), et.bits, count) \
        if et.name != "u1" else np.unpackbits(np.frombuffer(raw, dtype=np.uint8), count=count, bitorder="big")
    if et.name == "i4":
        return ((codes.astype(np.int8) ^ 8) - 8).astype(np.int8)
    if et.name in _NIBBLE_TABLES:
        return _NIBBLE_TABLES[et.name][codes]
    return codes


def decode_strings(raw: memoryview, count: int) -> np.ndarray:
    """A string Const as OpenVINO serialises it: int32 element count N, N + 1 int32 offsets (the first 0,
    each string i is bytes [offset[i], offset[i+1]) of the symbols), then the symbols. Everything is checked
    against the Const's bytes before use."""
    size = len(raw)
    if size < 4:
        raise WeightsError(f"a string Const needs at least 4 bytes, size is {size}", rule="const.size")
    stored = int(np.frombuffer(raw, dtype="<i4", count=1)[0])
    if stored != count:
        raise WeightsError(f"the string Const holds {stored} strings, its shape has {count}", rule="const.weights")
    header = 4 * (count + 2)
    if header > size:
        raise WeightsError(f"{count} strings need a {header}-byte header, size is {size}", rule="const.size")
    offsets = np.frombuffer(raw, dtype="<i4", count=count + 1, offset=4).astype(np.int64)
    symbols = bytes(raw[header:])
    if offsets[0] != 0 or (np.diff(offsets) < 0).any() or offsets[-1] > len(symbols):
        raise WeightsError(f"string offsets are not increasing from 0 to at most {len(symbols)}",
                           rule="const.weights")
    out = np.empty(count, dtype=object)
    out[:] = [symbols[begin:end] for begin, end in zip(offsets[:-1].tolist(), offsets[1:].tolist())]
    return out


def _unpack_grouped(data: np.ndarray, name: str, count: int) -> np.ndarray:
    """u3: per 3 bytes, eight 2-bit low parts (first element in the high bits) then eight high bits;
    u6: per 3 bytes, four 4-bit low parts (first element in the high nibble) then four 2-bit high parts."""
    groups = data.reshape(-1, 3)
    if name == "u3":
        low = (groups[:, :2, None] >> np.array([6, 4, 2, 0], dtype=np.uint8)) & 3
        high = np.unpackbits(groups[:, 2:3], axis=1, bitorder="big")
        values = (high << 2) | low.reshape(-1, 8)
    else:
        low = (groups[:, :2, None] >> np.array([4, 0], dtype=np.uint8)) & 15
        high = (groups[:, 2:3] >> np.array([6, 4, 2, 0], dtype=np.uint8)) & 3
        values = (high << 4) | low.reshape(-1, 4)
    return values.reshape(-1)[:count].astype(np.uint8)


def _unpack_low_first(data: np.ndarray, bits: int, count: int) -> np.ndarray:
    per_byte = 8 // bits
    shifts = np.arange(per_byte, dtype=np.uint8) * bits
    codes = (data[:, None] >> shifts) & np.uint8((1 << bits) - 1)
    return codes.reshape(-1)[:count]


_NATIVE = {"f16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"}
_UNSUPPORTED = {"dynamic"}


def _f8_table(exp_bits: int, man_bits: int, bias: int, ieee_special: bool) -> np.ndarray:
    codes = np.arange(256)
    sign = np.where(codes >> 7, -1.0, 1.0)
    exp = (codes >> man_bits) & ((1 << exp_bits) - 1)
    man = codes & ((1 << man_bits) - 1)
    normal = (1 + man / (1 << man_bits)) * np.exp2(exp - bias)
    subnormal = (man / (1 << man_bits)) * np.exp2(1 - bias)
    values = sign * np.where(exp == 0, subnormal, normal)
    top = (1 << exp_bits) - 1
    if ieee_special:  # f8e5m2: IEEE infinities and NaNs
        values = np.where((exp == top) & (man == 0), sign * np.inf, values)
        values = np.where((exp == top) & (man != 0), np.nan, values)
    else:  # f8e4m3 (fn): no infinity, only S.1111.111 is NaN
        values = np.where((exp == top) & (man == (1 << man_bits) - 1), np.nan, values)
    return values.astype(np.float32)


def _f8e8m0_table() -> np.ndarray:
    codes = np.arange(256)
    return np.where(codes == 255, np.nan, np.exp2(codes - 127.0)).astype(np.float32)


_BYTE_TABLES = {
    "f8e4m3": _f8_table(4, 3, 7, ieee_special=False),
    "f8e5m2": _f8_table(5, 2, 15, ieee_special=True),
    "f8e8m0": _f8e8m0_table(),
}

_NIBBLE_TABLES = {
    "nf4": np.array([
        -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
        -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
        0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
        0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0], dtype=np.float32),
    "f4e2m1": np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6, -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=np.float32),
}
