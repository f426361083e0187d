"""Build the string-typed fuzz seeds in tests/data/fuzz_seeds/ (tools/fuzz.py's SEED_DIRS).

Dev-only script: it needs the `openvino` package, never irrun itself; deterministic for one OpenVINO
version. Each folder holds model.xml/model.bin as openvino.save_model writes them:

- strings_roundtrip: a string Parameter [?] unpacked (StringTensorUnpack-15), its begins, ends and symbols
  returned and packed again (StringTensorPack-15) into a string Result;
- strings_const: a string Const (OpenVINO's .bin layout of counts, offsets and bytes) concatenated with
  a string Parameter [?], gathered by an i32 Parameter, reshaped, unpacked and packed again;
- strings_pack: begins, ends (i32) and symbols (u8) Parameters packed into a string tensor, then unpacked;
  its feeds.npz holds valid inputs (keys `0/<input name>`, as tools/fuzz.py reads them).

    python tools/make_string_seeds.py
"""
from pathlib import Path

import numpy as np
import openvino as ov
from openvino import opset1, opset8, opset15

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "fuzz_seeds"


def roundtrip() -> ov.Model:
    text = opset1.parameter([-1], ov.Type.string, name="text")
    unpacked = opset15.string_tensor_unpack(text)
    packed = opset15.string_tensor_pack(*unpacked.outputs())
    return ov.Model([*unpacked.outputs(), packed.output(0)], [text], "strings_roundtrip")


def with_const() -> ov.Model:
    text = opset1.parameter([-1], ov.Type.string, name="text")
    indices = opset1.parameter([2], ov.Type.i32, name="indices")
    words = np.array(["Intel", "", "h\u00e9llo", "\u65e5\u672c\u8a9e"], dtype=str)
    const = ov.op.Constant(ov.Tensor(words))
    joined = opset1.concat([const, text], 0)
    picked = opset8.gather(joined, indices, np.int32(0))
    reshaped = opset1.reshape(picked, np.array([1, 2], np.int64), False)
    unpacked = opset15.string_tensor_unpack(reshaped)
    packed = opset15.string_tensor_pack(*unpacked.outputs())
    return ov.Model([packed.output(0), unpacked.output(2)], [text, indices], "strings_const")


def pack() -> ov.Model:
    begins = opset1.parameter([-1], ov.Type.i32, name="begins")
    ends = opset1.parameter([-1], ov.Type.i32, name="ends")
    symbols = opset1.parameter([-1], ov.Type.u8, name="symbols")
    packed = opset15.string_tensor_pack(begins, ends, symbols)
    unpacked = opset15.string_tensor_unpack(packed)
    return ov.Model([packed.output(0), *unpacked.outputs()], [begins, ends, symbols], "strings_pack")


def main():
    for model in (roundtrip(), with_const(), pack()):
        folder = OUT / model.get_friendly_name()
        folder.mkdir(parents=True, exist_ok=True)
        ov.save_model(model, folder / "model.xml", compress_to_fp16=False)
    np.savez(OUT / "strings_pack" / "feeds.npz", **{"0/begins": np.array([0, 2, 2], np.int32),
                                                   "0/ends": np.array([2, 2, 5], np.int32),
                                                   "0/symbols": np.frombuffer(b"ab\xc3\xa9z", np.uint8)})


if __name__ == "__main__":
    main()
