"""FakeConvert-13: quantise to an f8 type and back, with a scale and an optional shift.

OpenVINO's reference, in the data type T (f32, f16 or bf16, every step rounded to T; bf16 with
ov::bfloat16's own rounding, see ov_bf16):
    y = data * scale - shift;  y -> float16 (ov::float16's rounding, irrun/ir/narrow_floats.f16_bits);
    f8 emulation on the float16 bits (narrow_floats.fake_f8e*_on_f16: saturating, unlike Convert);
    -> T;  out = (y + shift) / scale
scale and shift broadcast onto data one way (numpy rules, never growing data); they must have the same
shape as each other and data's type.
"""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from ..ir.narrow_floats import f16_bits, fake_f8e4m3_on_f16, fake_f8e5m2_on_f16, ov_bf16
from .attrs import Str
from .registry import Op, TensorInfo, op

_EMULATE = {"f8e4m3": fake_f8e4m3_on_f16, "f8e5m2": fake_f8e5m2_on_f16}


@op("FakeConvert", 13)
class FakeConvert13(Op):
    destination_type = Str("f8e4m3", "f8e5m2", default="f8e4m3")
    num_inputs = (2, 3)

    def infer(self, inputs):
        data = inputs[0]
        if data.type.name not in ("f32", "f16", "bf16"):
            raise ShapeError(f"data must be f32, f16 or bf16, got {data.type}", rule="port.type", port=0)
        for port, info in enumerate(inputs[1:], start=1):
            if info.type != data.type:
                raise ShapeError(f"input {port} is {info.type}, data is {data.type} (mixed types)",
                                 rule="port.type", port=port)
        if len(inputs) == 3 and None not in (inputs[1].shape, inputs[2].shape):
            a, b = inputs[1].shape, inputs[2].shape
            if len(a) != len(b) or any(x is not None and y is not None and x != y for x, y in zip(a, b)):
                raise ShapeError(f"scale shape {list(a)} and shift shape {list(b)} differ", rule="port.dims",
                                 port=2)
        for port, info in enumerate(inputs[1:], start=1):
            if info.shape is None or data.shape is None:
                continue
            if len(info.shape) > len(data.shape):
                raise ShapeError(f"input {port} has rank {len(info.shape)}, above data's {len(data.shape)}",
                                 rule="shape.broadcast", port=port)
            for d, s in zip(reversed(data.shape), reversed(info.shape)):
                if s is not None and s != 1 and d is not None and d != s:
                    raise ShapeError(f"input {port} shape {list(info.shape)} does not broadcast onto data "
                                     f"shape {list(data.shape)}", rule="shape.broadcast", port=port)
        return [TensorInfo(data.shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        data, scale = inputs[0], inputs[1]
        shift = inputs[2] if len(inputs) == 3 else np.zeros_like(scale)
        self.reserve(4 * data.nbytes, "FakeConvert temporaries")
        name = in_infos[0].type.name
        round_t = ov_bf16 if name == "bf16" else (lambda v: v)
        with np.errstate(all="ignore"):
            y = round_t(round_t(data * scale) - shift)
            half = y.view(np.uint16) if name == "f16" else f16_bits(y)
            y = round_t(_EMULATE[self.destination_type](half).view(np.float16).astype(data.dtype))
            y = round_t(round_t(y + shift) / scale)
        return [np.ascontiguousarray(y, dtype=data.dtype)]
