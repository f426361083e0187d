"""StringTensorUnpack-15 and StringTensorPack-15.

irrun holds a string tensor as a NumPy object array of Python bytes (irrun/ir/types.py); a str element
(a model input given as str) is taken as its UTF-8 bytes. Strings are Python objects, so these kernels go
through them with bytes.join / slicing (one C-level pass each), not element-wise NumPy.
"""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError, ShapeError
from ..ir.types import ELEMENT_TYPES
from .registry import Op, TensorInfo, op
from .shapes import numel

_I32, _U8, _STRING = ELEMENT_TYPES["i32"], ELEMENT_TYPES["u8"], ELEMENT_TYPES["string"]


def as_bytes_list(strings: np.ndarray) -> list[bytes]:
    """The elements of a string tensor as bytes (str as UTF-8); anything else is an input error."""
    flat = strings.reshape(-1).tolist()
    try:
        return [s if isinstance(s, bytes) else s.encode("utf-8") for s in flat]
    except (AttributeError, UnicodeEncodeError):
        raise ExecutionError("string tensor elements must be bytes or str (UTF-8 encodable)",
                             rule="input.value") from None


def string_tensor(items: list[bytes], shape) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out.reshape(shape)


@op("StringTensorUnpack", 15)
class StringTensorUnpack15(Op):
    """string tensor -> (begins i32, ends i32, symbols u8): each string's [begin, end) in the
    concatenation of all strings in row-major order."""

    def infer(self, inputs):
        (data,) = inputs
        if data.type.name != "string":
            raise ShapeError(f"input must be a string tensor, got {data.type}", rule="port.type", port=0)
        total = None
        if data.value is not None:
            total = sum(len(s) for s in as_bytes_list(data.value))
        return [TensorInfo(data.shape, _I32), TensorInfo(data.shape, _I32), TensorInfo((total,), _U8)]

    def run(self, inputs, in_infos, out_infos):
        strings = as_bytes_list(inputs[0])
        lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
        ends = np.cumsum(lengths)
        if ends.size and ends[-1] > np.iinfo(np.int32).max:
            raise ExecutionError(f"the strings hold {ends[-1]} bytes, more than i32 offsets reach",
                                 rule="input.value")
        self.reserve(int(ends[-1]) if ends.size else 0, "StringTensorUnpack symbols")
        symbols = np.frombuffer(b"".join(strings), dtype=np.uint8).copy()
        shape = inputs[0].shape
        return [(ends - lengths).astype(np.int32).reshape(shape), ends.astype(np.int32).reshape(shape), symbols]


@op("StringTensorPack", 15)
class StringTensorPack15(Op):
    """(begins, ends, symbols u8) -> string tensor of begins' shape: string i is symbols[begins[i]:ends[i]].
    OpenVINO does not check the indices (out-of-range ones read outside the symbols); irrun requires
    0 <= begin <= end <= len(symbols)."""

    num_inputs = (3, 3)

    def infer(self, inputs):
        begins, ends, symbols = inputs
        for port, info in ((0, begins), (1, ends)):
            if info.type.name not in ("i32", "i64"):
                raise ShapeError(f"input {port} must be i32 or i64, got {info.type}", rule="port.type", port=port)
        if begins.type != ends.type:
            raise ShapeError(f"begins are {begins.type}, ends {ends.type}: they must have the same type",
                             rule="port.type", port=1)
        if symbols.type.name != "u8":
            raise ShapeError(f"symbols must be u8, got {symbols.type}", rule="port.type", port=2)
        if symbols.rank is not None and symbols.rank != 1:
            raise ShapeError(f"symbols must be 1-D, got rank {symbols.rank}", rule="port.rank", port=2)
        shape = begins.shape
        if begins.shape is not None and ends.shape is not None:
            if len(begins.shape) != len(ends.shape) or any(
                    a is not None and b is not None and a != b for a, b in zip(begins.shape, ends.shape)):
                raise ShapeError(f"begins shape {list(begins.shape)} and ends shape {list(ends.shape)} differ",
                                 rule="port.dims", port=1)
            shape = tuple(a if a is not None else b for a, b in zip(begins.shape, ends.shape))
        elif shape is None:
            shape = ends.shape
        return [TensorInfo(shape, _STRING)]

    def run(self, inputs, in_infos, out_infos):
        begins, ends, symbols = (np.asarray(a) for a in inputs)
        starts, stops = begins.reshape(-1).astype(np.int64), ends.reshape(-1).astype(np.int64)
        size = symbols.shape[0]
        bad = (starts < 0) | (stops < starts) | (stops > size)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ExecutionError(f"string {i} spans [{starts[i]}, {stops[i]}), outside the {size} symbols "
                                 f"(or ending before it begins)", rule="input.index")
        self.reserve(int((stops - starts).sum()) + numel(begins.shape) * 40, "StringTensorPack strings")
        data = symbols.tobytes()
        items = [data[a:b] for a, b in zip(starts.tolist(), stops.tolist())]
        return [string_tensor(items, begins.shape)]
