"""The string element type, StringTensorUnpack-15 and StringTensorPack-15 against OpenVINO's CPU plugin
(the pip package's core has no reference kernel for them: evaluate returns False).

irrun holds string tensors as NumPy object arrays of bytes; inputs may hold str (UTF-8). Cases: string
Parameters and Constants (from the .bin OpenVINO writes) of ranks 0-3, empty tensors, empty strings,
non-ASCII UTF-8, Pack of arbitrary (non-UTF-8) bytes, Pack -> Unpack and Unpack -> Pack chains, string
model outputs; hostile string Consts (bad counts and offsets) and out-of-range Pack indices are errors.
"""
from __future__ import annotations

import struct

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset15

import oracle as O
import irrun
from irrun.errors import IRError

WORDS = ["Intel", "OpenVINO", "", "ab", "é", "x", "日本語", "a b\tc", "\u00ff\u0100", "z" * 40]


def strings(rng, shape):
    picked = rng.choice(np.array(WORDS, dtype=object), size=int(np.prod(shape)))
    out = np.empty(len(picked), dtype=object)
    out[:] = [w.encode("utf-8") for w in picked]
    return out.reshape(shape)


def save(outputs, params, tmp_path) -> str:
    xml = str(tmp_path / "model.xml")
    ov.save_model(ov.Model(outputs, params, "strings"), xml)
    return xml


def run_cpu(xml, feeds):
    """CPU plugin outputs of the saved model: string outputs as object arrays of bytes (read through
    Tensor.bytes_data, a NumPy 'S' array: trailing NUL bytes are lost, so tests keep NUL out of string ends)."""
    model = O.core().read_model(xml)
    request = O.core().compile_model(model, "CPU", O.cpu_config()).create_infer_request()
    tensors = [ov.Tensor(np.array([s.decode("utf-8") for s in f.reshape(-1)] or [""], dtype=str)[:f.size]
                         .reshape(f.shape)) if f.dtype == object else ov.Tensor(np.require(f, requirements="C"))
               for f in feeds]
    request.infer(tensors)
    outs = []
    for i, output in enumerate(model.outputs):
        tensor = request.get_output_tensor(i)
        if output.get_element_type() == ov.Type.string:
            data = np.empty(tensor.get_size(), dtype=object)
            data[:] = [bytes(v) for v in np.asarray(tensor.bytes_data).reshape(-1)] if tensor.get_size() else []
            outs.append(data.reshape(tuple(tensor.get_shape())))
        else:
            outs.append(np.array(tensor.data, copy=True))
    return outs


def assert_same(got: dict, expected, context=""):
    got = list(got.values())
    assert len(got) == len(expected), context
    for g, e in zip(got, expected):
        assert g.shape == e.shape and g.dtype == e.dtype, f"{context}: {g.dtype}{g.shape} vs {e.dtype}{e.shape}"
        assert g.tolist() == e.tolist(), f"{context}:\n{g}\n{e}"


@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 1, 4), (0,), (4, 0), ()])
def test_unpack_parameter(tmp_path, shape):
    data = strings(np.random.default_rng(len(shape)), shape)
    param = opset1.parameter(list(shape), ov.Type.string, name="text")
    node = opset15.string_tensor_unpack(param)
    xml = save(node.outputs(), [param], tmp_path)
    assert_same(irrun.load(xml).run({"text": data}), run_cpu(xml, [data]), str(shape))


def test_unpack_accepts_str_elements(tmp_path):
    param = opset1.parameter([2], ov.Type.string, name="text")
    xml = save(opset15.string_tensor_unpack(param).outputs(), [param], tmp_path)
    got = irrun.load(xml).run({"text": np.array(["Intel", "é"], dtype=object)})
    assert [v.tolist() for v in got.values()] == [[0, 5], [5, 7], list(b"Intel\xc3\xa9")]


@pytest.mark.parametrize("index_type", [np.int32, np.int64])
@pytest.mark.parametrize("shape", [(3,), (2, 2), (0,), ()])
def test_pack_parameters(tmp_path, index_type, shape):
    rng = np.random.default_rng(len(shape) + index_type(0).itemsize)
    symbols = rng.integers(1, 256, 30).astype(np.uint8)  # arbitrary bytes (not UTF-8), no NUL
    count = int(np.prod(shape))
    bounds = np.sort(rng.integers(0, 31, (count, 2)), axis=1)
    begins, ends = bounds[:, 0].reshape(shape).astype(index_type), bounds[:, 1].reshape(shape).astype(index_type)
    params = [opset1.parameter(list(shape), ov.Type.i32 if index_type == np.int32 else ov.Type.i64, name=n)
              for n in ("begins", "ends")] + [opset1.parameter([30], ov.Type.u8, name="symbols")]
    xml = save([opset15.string_tensor_pack(*params).output(0)], params, tmp_path)
    feeds = [begins, ends, symbols]
    got = irrun.load(xml).run(dict(zip(("begins", "ends", "symbols"), feeds)))
    assert_same(got, run_cpu(xml, feeds), f"{shape} {index_type.__name__}")
    assert all(isinstance(v, bytes) for v in next(iter(got.values())).reshape(-1))


def test_pack_then_unpack_and_back(tmp_path):
    text = "IntelOpenVINOé".encode()
    params = [opset1.parameter([4], ov.Type.i64, name="b"), opset1.parameter([4], ov.Type.i64, name="e"),
              opset1.parameter([len(text)], ov.Type.u8, name="s")]
    packed = opset15.string_tensor_pack(*params)
    unpacked = opset15.string_tensor_unpack(packed)
    repacked = opset15.string_tensor_pack(*unpacked.outputs())
    xml = save(unpacked.outputs() + [repacked.output(0)], params, tmp_path)
    feeds = [np.array([0, 5, 5, 13], np.int64), np.array([5, 13, 5, 15], np.int64), np.frombuffer(text, np.uint8)]
    assert_same(irrun.load(xml).run(dict(zip("bes", feeds))), run_cpu(xml, feeds))


@pytest.mark.parametrize("shape", [(3,), (2, 3), (0,), ()])
def test_string_constant_from_bin(tmp_path, shape):
    """A string Const (OpenVINO's own .bin layout) unpacked, and returned as a model output."""
    data = strings(np.random.default_rng(7 + len(shape)), shape)
    const = ov.op.Constant(ov.Tensor(np.array([s.decode() for s in data.reshape(-1)], dtype=str).reshape(shape)
                                     if data.size else np.zeros(shape, dtype=str)))
    param = opset1.parameter([1], ov.Type.f32, name="unused")
    unpacked = opset15.string_tensor_unpack(const)
    xml = save(unpacked.outputs(), [param], tmp_path)
    model = irrun.load(xml)
    got = model.run({"unused": np.zeros(1, np.float32)})
    assert_same(got, run_cpu(xml, [np.zeros(1, np.float32)]), str(shape))


def test_string_model_output(tmp_path):
    param = opset1.parameter([3], ov.Type.string, name="text")
    reshaped = opset1.reshape(param, O.constant(np.array([3, 1], np.int64)), False)
    xml = save([reshaped.output(0)], [param], tmp_path)
    model = irrun.load(xml)
    assert model.outputs[0].element_type == "string"
    data = strings(np.random.default_rng(1), (3,))
    assert_same(model.run({"text": data}), run_cpu(xml, [data]))


def _string_const_ir(tmp_path, blob: bytes, count: int):
    """A model whose only Const is a string Const of `count` elements with the given .bin bytes."""
    const = ov.op.Constant(ov.Tensor(np.array(["ab"] * count, dtype=str)))
    param = opset1.parameter([1], ov.Type.f32, name="unused")
    xml = save(opset15.string_tensor_unpack(const).outputs(), [param], tmp_path)
    text = open(xml).read()
    import re
    text = re.sub(r'(element_type="string"[^>]*?)size="\d+"', rf'\g<1>size="{len(blob)}"', text)
    text = re.sub(r'(<data[^>]*element_type="string"[^>]*)size="\d+"', rf'\g<1>size="{len(blob)}"', text)
    open(xml, "w").write(text)
    open(xml[:-4] + ".bin", "wb").write(blob)
    return xml


@pytest.mark.parametrize("blob,count,message", [
    (b"\x02\x00", 2, "at least 4 bytes"),
    (struct.pack("<i", 3) + struct.pack("<3i", 0, 2, 4) + b"abab", 2, "holds 3 strings"),
    (struct.pack("<i", 2) + struct.pack("<2i", 0, 2), 2, "16-byte header"),
    (struct.pack("<i", 2) + struct.pack("<3i", 0, 3, 2) + b"abc", 2, "not increasing"),
    (struct.pack("<i", 2) + struct.pack("<3i", 0, 2, 9) + b"abab", 2, "not increasing"),
    (struct.pack("<i", 2) + struct.pack("<3i", -1, 2, 4) + b"abab", 2, "not increasing"),
])
def test_hostile_string_constants_are_errors(tmp_path, blob, count, message):
    xml = _string_const_ir(tmp_path, blob, count)
    with pytest.raises(IRError, match=message) as info:
        irrun.load(xml).run({"unused": np.zeros(1, np.float32)})
    assert "\n" not in str(info.value)


def test_valid_handmade_string_constant(tmp_path):
    xml = _string_const_ir(tmp_path, struct.pack("<i", 2) + struct.pack("<3i", 0, 2, 5) + b"ab\xffcd", 2)
    got = irrun.load(xml).run({"unused": np.zeros(1, np.float32)})
    assert [v.tolist() for v in got.values()] == [[0, 2], [2, 5], list(b"ab\xffcd")]


@pytest.mark.parametrize("begins,ends", [([3], [1]), ([0], [12]), ([-1], [2])])
def test_pack_out_of_range_is_an_error(tmp_path, begins, ends):
    """OpenVINO reads outside the symbols for these (undefined); irrun refuses them."""
    params = [opset1.parameter([1], ov.Type.i32, name="b"), opset1.parameter([1], ov.Type.i32, name="e"),
              opset1.parameter([10], ov.Type.u8, name="s")]
    xml = save([opset15.string_tensor_pack(*params).output(0)], params, tmp_path)
    with pytest.raises(IRError, match="outside the 10 symbols"):
        irrun.load(xml).run({"b": np.array(begins, np.int32), "e": np.array(ends, np.int32),
                             "s": np.zeros(10, np.uint8)})


def test_non_string_elements_are_an_input_error(tmp_path):
    param = opset1.parameter([2], ov.Type.string, name="text")
    xml = save(opset15.string_tensor_unpack(param).outputs(), [param], tmp_path)
    with pytest.raises(IRError, match="bytes or str"):
        irrun.load(xml).run({"text": np.array([b"a", 3], dtype=object)})


CASES = [  # (begins type, ends type, begins shape, ends shape, symbols type, symbols shape)
    ("i32", "i64", [3], [3], "u8", [10]), ("i64", "i64", [3], [3], "u8", [10]), ("u8", "u8", [3], [3], "u8", [10]),
    ("i32", "i32", [2, 3], [2, 3], "u8", [10]), ("i32", "i32", [3], [2], "u8", [10]),
    ("i32", "i32", [3], [3], "u8", [2, 5]), ("i32", "i32", [], [], "u8", [4]), ("i32", "i32", [3], [3], "i8", [10]),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_pack_validation_matches_openvino(case):
    from irrun.ir.types import ELEMENT_TYPES
    from irrun.ops.registry import Context, TensorInfo
    from irrun.ops.strings import StringTensorPack15
    bt, et, bs, es, st, ss = CASES[case]
    try:
        node = opset15.string_tensor_pack(opset1.parameter(bs, getattr(ov.Type, bt)),
                                          opset1.parameter(es, getattr(ov.Type, et)),
                                          opset1.parameter(ss, getattr(ov.Type, st)))
        expected = tuple(node.get_output_partial_shape(0).to_shape())
    except RuntimeError:
        expected = None
    infos = [TensorInfo(tuple(bs), ELEMENT_TYPES[bt]), TensorInfo(tuple(es), ELEMENT_TYPES[et]),
             TensorInfo(tuple(ss), ELEMENT_TYPES[st])]
    try:
        got = StringTensorPack15({}, Context()).infer(infos)[0].shape
    except IRError:
        got = None
    assert got == expected, CASES[case]


def test_string_inputs_from_numpy_and_the_cli(tmp_path):
    """String inputs may be str/bytes arrays of any NumPy string dtype; `run -o` saves string outputs as
    fixed-width bytes (readable without pickle), and the printed summary copes with them."""
    from click.testing import CliRunner

    from irrun.cli.main import cli

    param = opset1.parameter([3], ov.Type.string, name="text")
    unpack = opset15.string_tensor_unpack(param)
    xml = save([param.output(0), *unpack.outputs()], [param], tmp_path)
    words = ["Intel", "", "日本語"]
    expected = run_cpu(xml, [np.array([w.encode() for w in words], dtype=object)])
    model = irrun.load(xml)
    for given in (np.array(words), np.array([w.encode() for w in words]), np.array(words, dtype=object)):
        assert_same(model.run([given]), expected, str(given.dtype))
    np.save(tmp_path / "text.npy", np.array(words))
    result = CliRunner().invoke(cli, ["run", xml, "-i", str(tmp_path / "text.npy"), "-o", str(tmp_path / "out.npz")])
    assert result.exit_code == 0, result.output
    saved = np.load(tmp_path / "out.npz", allow_pickle=False)
    np.testing.assert_array_equal(saved[saved.files[0]], np.array([w.encode() for w in words]))
    result = CliRunner().invoke(cli, ["run", xml, "-i", str(tmp_path / "text.npy")])
    assert result.exit_code == 0 and "3" in result.output, result.output
