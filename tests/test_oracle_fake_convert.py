"""FakeConvert-13 against OpenVINO's reference kernel (Node.evaluate): f32 and f16 through whole saved
models (run_reference), bf16 through evaluate on raw bf16 tensors (NumPy cannot hold bf16, so the
oracle harness cannot); both destination types; 2 and 3 inputs; per-tensor, per-channel and general
broadcast scale/shift; values across every scale with zeros, infinities, NaN, overflow and f8 subnormals.
Exact comparison (bit for bit, any NaN equals any NaN). Shape/type rules: OpenVINO's rejections match
irrun's ShapeError."""
from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from openvino import opset13

import oracle as O
from narrow_values import float_corners, from_tensor
from irrun.errors import IRError
from irrun.ir.types import ELEMENT_TYPES
from irrun.ops.fake_convert import FakeConvert13, ov_bf16
from irrun.ops.registry import Context, TensorInfo

LAYOUTS = [((4, 3, 5), ()), ((4, 3, 5), (1,)), ((4, 3, 5), (1, 3, 1)), ((4, 3, 5), (5,)), ((2, 3, 4, 5), (3, 1, 5)),
           ((6,), (6,)), ((0, 3), (1, 3))]


def data(rng, shape, dtype):
    with np.errstate(all="ignore"):
        values = float_corners(rng, 500)
        picked = values[rng.integers(0, values.size, int(np.prod(shape)))]
        scaled = picked * 10.0 ** rng.integers(-3, 3, picked.size)
        return scaled.astype(np.float32).astype(dtype).reshape(shape)


def scales(rng, shape, dtype):
    s = (rng.uniform(0.01, 300, shape) * rng.choice([1, -1], shape)).astype(np.float32).astype(dtype)
    h = rng.standard_normal(shape).astype(np.float32).astype(dtype)
    return s, h


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
@pytest.mark.parametrize("dst", ["f8e4m3", "f8e5m2"])
@pytest.mark.parametrize("layout", range(len(LAYOUTS)))
@pytest.mark.parametrize("with_shift", [True, False])
def test_fake_convert_reference(tmp_path, dtype, dst, layout, with_shift):
    rng = np.random.default_rng(layout * 7 + len(dst) + with_shift)
    shape, sshape = LAYOUTS[layout]
    s, h = scales(rng, sshape, dtype)
    feeds = {"x": data(rng, shape, dtype), "s": s}
    if with_shift:
        feeds["h"] = h
    built = O.build(lambda p: opset13.fake_convert(p["x"], p["s"], p.get("h"), dst), feeds, tmp_path)
    O.assert_same(O.run_irrun(built), O.run_reference(built), built.output_names,
                  context=f"{dtype.__name__} {dst} {shape} {sshape} shift={with_shift}")


def evaluate_bf16(x, s, h, dst):
    count = x.size
    node = opset13.fake_convert(opset13.parameter(list(x.shape), ov.Type.bf16),
                                opset13.parameter(list(s.shape), ov.Type.bf16),
                                opset13.parameter(list(h.shape), ov.Type.bf16), dst)
    out = ov.Tensor(ov.Type.bf16, ov.Shape(list(x.shape)))
    ins = []
    for v in (x, s, h):
        tensor = ov.Tensor(ov.Type.bf16, ov.Shape(list(v.shape)))
        np.asarray(tensor.data).view(np.uint16).reshape(-1)[:] = (v.astype(np.float32).view(np.uint32) >> 16).reshape(-1)
        ins.append(tensor)
    assert node.evaluate([out], ins)
    return from_tensor(out, "bf16", count).reshape(x.shape)


@pytest.mark.parametrize("dst", ["f8e4m3", "f8e5m2"])
@pytest.mark.parametrize("layout", [0, 2, 4])
def test_fake_convert_bf16(dst, layout):
    rng = np.random.default_rng(layout + len(dst))
    shape, sshape = LAYOUTS[layout]
    x = ov_bf16(data(rng, shape, np.float32))
    s, h = (ov_bf16(v) for v in scales(rng, sshape, np.float32))
    expected = evaluate_bf16(x, s, h, dst)
    op = FakeConvert13({"destination_type": dst}, Context())
    bf16 = ELEMENT_TYPES["bf16"]
    got = op.run([x, s, h], [TensorInfo(v.shape, bf16) for v in (x, s, h)], None)[0]
    assert O.compare_outputs(got, expected) is None, O.compare_outputs(got, expected)


def test_hand_checked_saturation():
    """Unlike Convert, FakeConvert saturates: f8e4m3 at 448 (infinities and even NaN too), f8e5m2 at 57344
    (infinities too; NaN stays NaN)."""
    x = np.array([1e6, -np.inf, 470, np.nan, 60000, 1e-4], np.float32)
    one = np.ones(1, np.float32)
    info = [TensorInfo(x.shape, ELEMENT_TYPES["f32"]), TensorInfo((1,), ELEMENT_TYPES["f32"])]
    e4 = FakeConvert13({"destination_type": "f8e4m3"}, Context()).run([x, one], info, None)[0]
    e5 = FakeConvert13({"destination_type": "f8e5m2"}, Context()).run([x, one], info, None)[0]
    assert O.compare_outputs(e4, np.array([448, -448, 448, 448, 448, 0], np.float32)) is None, e4
    assert O.compare_outputs(e5, np.array([57344, -57344, 448, np.nan, 57344, 2 ** -14 * 1.75], np.float32)) is None, e5


CASES = [  # (data type, data shape, scale type, scale shape, shift shape or None, destination)
    ("f64", [2, 3], "f64", [1], None, "f8e4m3"),
    ("i32", [2, 3], "i32", [1], None, "f8e4m3"),
    ("f32", [2, 3], "f16", [1], None, "f8e4m3"),
    ("f32", [2, 3], "f32", [4], None, "f8e4m3"),
    ("f32", [2, 3], "f32", [1, 2, 3], None, "f8e4m3"),
    ("f32", [2, 3], "f32", [3], [2, 1], "f8e4m3"),
    ("f32", [2, 3], "f32", [1, 3], [1, 3], "f4e2m1"),
    ("f32", [2, 3], "f32", [2, 1], [2, 1], "f8e5m2"),
]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_fake_convert_validation_matches_openvino(case):
    dtype, shape, stype, sshape, hshape, dst = CASES[case]
    try:
        opset13.fake_convert(opset13.parameter(shape, getattr(ov.Type, dtype)),
                             opset13.parameter(sshape, getattr(ov.Type, stype)),
                             None if hshape is None else opset13.parameter(hshape, getattr(ov.Type, stype)), dst)
        openvino_accepts = True
    except RuntimeError:
        openvino_accepts = False
    infos = [TensorInfo(tuple(shape), ELEMENT_TYPES[dtype]), TensorInfo(tuple(sshape), ELEMENT_TYPES[stype])]
    if hshape is not None:
        infos.append(TensorInfo(tuple(hshape), ELEMENT_TYPES[stype]))
    try:
        if dst not in ("f8e4m3", "f8e5m2"):
            raise IRError("destination")  # rejected when the attribute is parsed (Str choices)
        FakeConvert13({"destination_type": dst}, Context()).infer(infos)
        irrun_accepts = True
    except IRError:
        irrun_accepts = False
    assert irrun_accepts == openvino_accepts, CASES[case]
