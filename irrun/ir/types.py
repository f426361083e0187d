"""Element types: names as IR files spell them, bit widths, and how irrun stores their values.

Types NumPy lacks are stored widened: bf16, nf4 and the f8/f4 types as float32, i4 as int8,
u1-u6 as uint8. The graph still tracks the IR type, so shapes and types are checked exactly.
`string` tensors are NumPy object arrays whose elements are Python bytes (OpenVINO's strings are byte
strings; model inputs may hold str, taken as UTF-8).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ElementType:
    name: str
    bits: int
    storage: np.dtype | None  # None: irrun cannot hold values of this type
    is_float: bool = False
    is_signed: bool = True

    @property
    def is_integer(self) -> bool:
        return not self.is_float and self.name not in ("boolean", "dynamic")

    def nbytes(self, count: int) -> int:
        """Bytes that `count` packed elements take in a .bin (Python ints: no overflow)."""
        if self.name in GROUPED:  # u3 and u6 are stored in whole 3-byte groups
            per_group = GROUPED[self.name]
            return 3 * ((count + per_group - 1) // per_group)
        return (count * self.bits + 7) // 8

    def __str__(self) -> str:
        return self.name


GROUPED = {"u3": 8, "u6": 4}  # elements per 3-byte group


def _et(name, bits, storage, is_float=False, is_signed=True):
    return ElementType(name, bits, np.dtype(storage) if storage else None, is_float, is_signed)


ELEMENT_TYPES = {
    t.name: t
    for t in (
        _et("boolean", 8, np.bool_, is_signed=False),
        _et("bf16", 16, np.float32, True),
        _et("f16", 16, np.float16, True),
        _et("f32", 32, np.float32, True),
        _et("f64", 64, np.float64, True),
        _et("i4", 4, np.int8),
        _et("i8", 8, np.int8),
        _et("i16", 16, np.int16),
        _et("i32", 32, np.int32),
        _et("i64", 64, np.int64),
        _et("u1", 1, np.uint8, is_signed=False),
        _et("u2", 2, np.uint8, is_signed=False),
        _et("u3", 3, np.uint8, is_signed=False),
        _et("u4", 4, np.uint8, is_signed=False),
        _et("u6", 6, np.uint8, is_signed=False),
        _et("u8", 8, np.uint8, is_signed=False),
        _et("u16", 16, np.uint16, is_signed=False),
        _et("u32", 32, np.uint32, is_signed=False),
        _et("u64", 64, np.uint64, is_signed=False),
        _et("nf4", 4, np.float32, True),
        _et("f8e4m3", 8, np.float32, True),
        _et("f8e5m2", 8, np.float32, True),
        _et("f8e8m0", 8, np.float32, True, is_signed=False),
        _et("f4e2m1", 4, np.float32, True),
        _et("string", 0, object, is_signed=False),
        _et("dynamic", 0, None),
    )
}

# Port precision spellings (upper-case legacy forms) that differ from the element type names.
_PRECISION_ALIASES = {
    "fp16": "f16", "fp32": "f32", "fp64": "f64", "bool": "boolean", "bin": "u1",
    "undefined": "dynamic", "unspecified": "dynamic", "?": "dynamic",
}

_BY_DTYPE = {
    np.dtype(np.bool_): "boolean", np.dtype(np.float16): "f16", np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64", np.dtype(np.int8): "i8", np.dtype(np.int16): "i16",
    np.dtype(np.int32): "i32", np.dtype(np.int64): "i64", np.dtype(np.uint8): "u8",
    np.dtype(np.uint16): "u16", np.dtype(np.uint32): "u32", np.dtype(np.uint64): "u64",
}


def element_type(text: str) -> ElementType | None:
    """The element type named by an attribute or a port precision (case-insensitive), or None."""
    key = text.strip().lower()
    return ELEMENT_TYPES.get(_PRECISION_ALIASES.get(key, key))


def from_dtype(dtype) -> ElementType | None:
    name = _BY_DTYPE.get(np.dtype(dtype))
    return ELEMENT_TYPES[name] if name else None


def lowest(et: ElementType):
    """The lowest finite value of a type, as OpenVINO's numeric_limits<T>::lowest() gives it."""
    if et.name == "boolean":
        return False
    if et.is_float:
        return np.finfo(et.storage).min if et.name in ("f16", "f32", "f64") else _FLOAT_LOWEST[et.name]
    if et.storage == np.int8 and et.name == "i4":
        return -8
    return np.iinfo(et.storage).min if et.is_signed else 0


_FLOAT_LOWEST = {
    "bf16": np.float32(-3.3895313892515355e38),
    "nf4": np.float32(-1.0),
    "f8e4m3": np.float32(-448.0),
    "f8e5m2": np.float32(-57344.0),
    "f8e8m0": np.float32(5.877471754111438e-39),
    "f4e2m1": np.float32(-6.0),
}
