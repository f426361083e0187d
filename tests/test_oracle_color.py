"""irrun vs OpenVINO on NV12toRGB-8, NV12toBGR-8, I420toRGB-8, I420toBGR-8, RGBtoNV12-17 and BGRtoNV12-17.

Oracles:
- YUV -> RGB/BGR: the CPU plugin (f32 hint); OpenVINO 2026.4.1's Node.evaluate returns False for these ops.
  Results are compared bit-exact: both sides compute in f32 with the same coefficients and operation order,
  u8 rounds half away from zero and clamps, float types only clamp to [0, 255].
- RGB/BGR -> NV12: OpenVINO 2026.4.1 reads these opset17 ops (its shape inference is the oracle for the
  output shapes, checked on every case) but has no kernel for them (evaluate returns False and the CPU plugin
  refuses the op), and the Python API has no factory: IRs are written with tests/irbuild.py. Values are
  checked against hand-computed pixels following the reference kernel's formulas (source:
  src/core/reference/include/openvino/reference/convert_color_to_nv12.hpp), and against the CPU plugin's
  NV12toRGB as an approximate inverse.
"""
from __future__ import annotations

import numpy as np
import pytest
from openvino import opset8
from openvino.exceptions import UserInputError

import irrun
import oracle as O
from irbuild import IRBuilder
from irrun.errors import IRError
from oracle import assert_same, build, run_cpu, run_cpu_many, run_irrun

DTYPES = (np.uint8, np.float32, np.float16)


def random_plane(rng, shape, dtype):
    if dtype == np.uint8:
        return rng.integers(0, 256, shape).astype(np.uint8)
    return rng.uniform(-30, 290, shape).astype(dtype)  # beyond [0, 255]: the clamp is exercised


def check(make, inputs, context):
    """irrun vs the CPU plugin, bit-exact except at u8 ties: a channel value of exactly k + 0.5 in f32 rounds
    half away from zero in OpenVINO's reference (and irrun) but to even on the CPU plugin, so there irrun may
    be one above an even CPU value (pinned in test_u8_ties_round_half_away_from_zero)."""
    return check_many([(build(make, inputs), context)])[0]


def check_many(cases):
    """check() on each (built, context) case, the cases compiled as one model; returns the expected outputs."""
    return [_compare(built, expected, context)
            for (built, context), (_, expected) in zip(cases, run_cpu_many([built for built, _ in cases]))]


def _compare(built, expected, context):
    got = run_irrun(built, context)
    if expected[0].dtype == np.uint8:
        value = list(got.values())[0]
        tie = (value.astype(int) == expected[0].astype(int) + 1) & (expected[0] % 2 == 0)
        assert tie.mean() < 0.05, context
        expected = [np.where(tie, value, expected[0])]
    assert_same(got, expected, built.output_names, context=context)
    return expected


def test_u8_ties_round_half_away_from_zero():
    # Y=195, U=136, V=131: B = 1.164 * 179 + 2.018 * 8 = 224.5 exactly in f32. OpenVINO's reference kernel
    # rounds with std::round (225); the CPU plugin rounds to even (224). irrun follows the reference.
    y = np.full((1, 2, 2, 1), 195, np.uint8)
    uv = np.array([136, 131], np.uint8).reshape(1, 1, 1, 2)
    built = build(lambda p: opset8.nv12_to_rgb(p["y"], p["uv"]), {"y": y, "uv": uv})
    _, cpu = run_cpu(built)
    assert (cpu[0][..., 2] == 224).all()
    got = run_irrun(built)[built.output_names[0]]
    assert (got[..., 2] == 225).all()
    np.testing.assert_array_equal(got[..., :2], cpu[0][..., :2])


@pytest.mark.parametrize("family", ["nv12", "i420"])
def test_yuv_to_rgb_sweep(family):
    rng = np.random.default_rng(200 + (family == "i420"))
    factories = {"nv12": (opset8.nv12_to_rgb, opset8.nv12_to_bgr), "i420": (opset8.i420_to_rgb, opset8.i420_to_bgr)}
    cases = []
    for case in range(12):
        dtype = DTYPES[case % 3]
        bgr = bool(rng.random() < 0.5)
        factory = factories[family][bgr]
        n, h, w = int(rng.integers(1, 3)), 2 * int(rng.integers(1, 6)), 2 * int(rng.integers(1, 6))
        separate = bool(case % 2)
        if not separate:
            inputs = {"yuv": random_plane(rng, (n, h * 3 // 2, w, 1), dtype)}
        elif family == "nv12":
            inputs = {"y": random_plane(rng, (n, h, w, 1), dtype), "uv": random_plane(rng, (n, h // 2, w // 2, 2),
                                                                                       dtype)}
        else:
            inputs = {"y": random_plane(rng, (n, h, w, 1), dtype), "u": random_plane(rng, (n, h // 2, w // 2, 1),
                                                                                      dtype),
                      "v": random_plane(rng, (n, h // 2, w // 2, 1), dtype)}
        names = list(inputs)
        cases.append((build(lambda p: factory(*[p[k] for k in names]), inputs),
                      f"{factory.__name__} case {case}: {np.dtype(dtype).name} n={n} h={h} w={w} planes={len(names)}"))
    check_many(cases)


def test_float_nan_and_inf():
    # f32 planes: infinities clamp to 0 or 255. A NaN stays NaN in OpenVINO's reference (std::max / std::min
    # with the NaN first return it) and in irrun; the CPU plugin clamps it to 0 (pinned).
    y = np.full((1, 2, 2, 1), 100, np.float32)
    y[0, 0, 0, 0], y[0, 0, 1, 0], y[0, 1, 0, 0] = np.nan, np.inf, -np.inf
    uv = np.full((1, 1, 1, 2), 128, np.float32)
    built = build(lambda p: opset8.nv12_to_rgb(p["y"], p["uv"]), {"y": y, "uv": uv})
    _, cpu = run_cpu(built)
    got = run_irrun(built)[built.output_names[0]]
    np.testing.assert_array_equal(cpu[0][0, 0, 0], [0, 0, 0])
    assert np.isnan(got[0, 0, 0]).all()
    np.testing.assert_array_equal(got[0, 0, 1], [255, 255, 255])
    np.testing.assert_array_equal(got[0, 1, 0], [0, 0, 0])
    np.testing.assert_array_equal(got.reshape(-1, 3)[1:], cpu[0].reshape(-1, 3)[1:])


def test_empty_batch():
    built = build(lambda p: opset8.i420_to_bgr(p["x"]), {"x": np.zeros((0, 6, 4, 1), np.uint8)})
    assert run_irrun(built)[built.output_names[0]].shape == tuple(built.model.outputs[0].get_shape()) == (0, 4, 4, 3)


def test_nv12_known_pixels():
    # hand-written: Y=16, U=V=128 is black; Y=235 is white (1.164 * 219 = 254.9 -> 255); Y=81, U=90, V=240 is
    # red (R = 1.164 * 65 + 1.596 * 112 = 254.4 -> 254, G = 75.66 + 14.858 - 91.056 = -0.538 -> 0 (clamped),
    # B = 75.66 - 76.684 = -1.024 -> 0)
    y = np.array([[16, 235], [81, 81]], np.uint8).reshape(1, 2, 2, 1)
    uv = np.array([[128, 128]], np.uint8).reshape(1, 1, 1, 2)
    got = check(lambda p: opset8.nv12_to_rgb(p["y"], p["uv"]), {"y": y, "uv": uv}, "grey")
    np.testing.assert_array_equal(got[0][0, 0], [[0, 0, 0], [255, 255, 255]])
    uv = np.array([[90, 240]], np.uint8).reshape(1, 1, 1, 2)
    got = check(lambda p: opset8.nv12_to_rgb(p["y"], p["uv"]), {"y": y, "uv": uv}, "red")
    np.testing.assert_array_equal(got[0][0, 1], [[254, 0, 0], [254, 0, 0]])


U8, F32_, I32 = np.uint8, np.float32, np.int32
INVALID = [  # (op type, input planes as (shape, dtype), rule)
    ("NV12toRGB", [((1, 7, 4, 1), U8)], "port.dims"),                          # height not 3k
    ("NV12toRGB", [((1, 6, 3, 1), U8)], "port.dims"),                          # odd width
    ("NV12toRGB", [((1, 6, 4, 2), U8)], "port.dims"),                          # two channels
    ("NV12toRGB", [((6, 4, 1), U8)], "port.rank"),
    ("NV12toRGB", [((1, 6, 4, 1), I32)], "port.type"),
    ("NV12toRGB", [((1, 4, 4, 1), U8), ((1, 2, 3, 2), U8)], "port.dims"),
    ("NV12toRGB", [((1, 4, 4, 1), U8), ((1, 2, 2, 1), U8)], "port.dims"),
    ("NV12toRGB", [((2, 4, 4, 1), U8), ((1, 2, 2, 2), U8)], "port.dims"),
    ("NV12toRGB", [((1, 4, 4, 1), U8), ((1, 2, 2, 2), F32_)], "port.type"),
    ("I420toRGB", [((1, 4, 4, 1), U8), ((1, 2, 2, 1), U8), ((1, 2, 3, 1), U8)], "port.dims"),
    ("I420toRGB", [((1, 4, 4, 1), U8), ((1, 2, 2, 2), U8), ((1, 2, 2, 1), U8)], "port.dims"),
    ("I420toRGB", [((1, 4, 4, 1), U8), ((1, 2, 2, 1), U8)], "port.count"),
]
FACTORIES = {"NV12toRGB": opset8.nv12_to_rgb, "I420toRGB": opset8.i420_to_rgb}


@pytest.mark.parametrize("case", range(len(INVALID)))
def test_invalid_planes_are_refused(case, tmp_path):
    op_type, planes, rule = INVALID[case]
    with pytest.raises((RuntimeError, UserInputError)):
        FACTORIES[op_type](*[O.parameter(f"in{i}", shape, dtype) for i, (shape, dtype) in enumerate(planes)])
    # the same layer in an IR written by hand: irrun refuses it with the rule
    builder = IRBuilder()
    sources = [(builder.parameter(shape, O.type_name(dtype), name=f"in{i}"), 0)
               for i, (shape, dtype) in enumerate(planes)]
    layer = builder.op(op_type, "opset8", sources, {}, [([1, 4, 4, 3], O.type_name(planes[0][1]))])
    builder.result((layer, 0))
    xml = builder.save(tmp_path)
    with pytest.raises(IRError) as error:
        irrun.load(str(xml))
    assert error.value.rule == rule, error.value


# ---------------------------------------------------------------- RGB / BGR -> NV12

def to_nv12_model(tmp_path, shape, et, bgr=False, single_plane=True, declared=None):
    """An IR with one RGBtoNV12 (or BGRtoNV12) layer; its declared outputs are what OpenVINO infers when
    `declared` is None (read back from a first save)."""
    n, h, w, _ = shape
    outputs = declared or ([([n, h * 3 // 2, w, 1], et)] if single_plane else
                           [([n, h, w, 1], et), ([n, h // 2, w // 2, 2], et)])
    builder = IRBuilder()
    source = builder.parameter(list(shape), et, name="image")
    layer = builder.op("BGRtoNV12" if bgr else "RGBtoNV12", "opset17", [(source, 0)],
                       {"single_plane": str(single_plane).lower()}, outputs)
    for port in range(len(outputs)):
        builder.result((layer, port), name=f"out{port}")
    return builder.save(tmp_path)


@pytest.mark.parametrize("single_plane", [True, False])
@pytest.mark.parametrize("et", ["u8", "f32", "f16"])
def test_to_nv12_shapes_match_openvino(tmp_path, single_plane, et):
    shape = (2, 4, 6, 3)
    xml = to_nv12_model(tmp_path, shape, et, single_plane=single_plane)
    ov_model = O.core().read_model(str(xml))
    assert ov_model.get_ordered_ops()[1].get_type_name() == "RGBtoNV12"
    ov_shapes = [tuple(o.get_shape()) for o in ov_model.outputs]
    ov_types = [o.get_element_type().get_type_name() for o in ov_model.outputs]
    model = irrun.load(str(xml))
    assert [tuple(t.shape) for t in model.outputs] == ov_shapes
    assert [t.element_type for t in model.outputs] == ov_types
    dtype = {"u8": np.uint8, "f32": np.float32, "f16": np.float16}[et]
    got = model.run({"image": np.zeros(shape, dtype)})
    assert [v.shape for v in got.values()] == ov_shapes


@pytest.mark.parametrize("shape", [(1, 3, 4, 3), (1, 4, 5, 3), (1, 4, 4, 4)])
def test_to_nv12_refuses_odd_sizes_and_other_channel_counts(tmp_path, shape):
    xml = to_nv12_model(tmp_path, shape, "u8", declared=[([1, 6, 4, 1], "u8")])
    with pytest.raises(RuntimeError):
        O.core().read_model(str(xml))
    with pytest.raises(IRError) as error:
        irrun.load(str(xml))
    assert error.value.rule == "port.dims"


# red, red / green, blue: per-pixel (Y, U, V) by the reference formulas, u8 rounding half away from zero:
#   red   (255, 0, 0): Y = 0.257 * 255 + 16 = 81.535 -> 82, U = -37.74 + 128 = 90.26 -> 90,
#                      V = 111.945 + 128 = 239.945 -> 240
#   green (0, 255, 0): Y = 128.52 + 16 = 144.52 -> 145, U = -74.205 + 128 = 53.795 -> 54, V = -93.84 + 128 -> 34
#   blue  (0, 0, 255): Y = 24.99 + 16 = 40.99 -> 41, U = 111.945 + 128 -> 240, V = -18.105 + 128 = 109.895 -> 110
# block U = (90 + 90 + 54 + 240) / 4 = 118.5 -> 119 (half away from zero), V = (240 + 240 + 34 + 110) / 4 = 156
BLOCK = np.array([[[255, 0, 0], [255, 0, 0]], [[0, 255, 0], [0, 0, 255]]], np.float32)


@pytest.mark.parametrize("bgr", [False, True])
def test_to_nv12_known_pixels_u8(tmp_path, bgr):
    image = BLOCK[None, ..., ::-1] if bgr else BLOCK[None]
    xml = to_nv12_model(tmp_path, (1, 2, 2, 3), "u8", bgr=bgr)
    got = list(irrun.load(str(xml)).run({"image": image.astype(np.uint8)}).values())[0]
    np.testing.assert_array_equal(got[0, :, :, 0], [[82, 82], [145, 41], [119, 156]])


def test_to_nv12_known_pixels_f32_two_planes(tmp_path):
    # floats are clamped, never rounded: U = (90.26 + 90.26 + 53.795 + 239.945) / 4 = 118.565
    xml = to_nv12_model(tmp_path, (1, 2, 2, 3), "f32", single_plane=False)
    y, uv = irrun.load(str(xml)).run({"image": BLOCK[None]}).values()
    np.testing.assert_allclose(y[0, :, :, 0], [[81.535, 81.535], [144.52, 40.99]], atol=1e-4)
    np.testing.assert_allclose(uv[0, 0, 0], [118.565, (111.945 * 2 + 34.16 + 109.895) / 4 + 64], atol=1e-3)


def test_to_nv12_clamps_per_pixel_before_averaging(tmp_path):
    # f32 input beyond [0, 255]: each pixel's U is clamped to [0, 255] before the block mean;
    # pixel (1000, 0, 0) has U = -148 + 128 = -20 -> 0 and V = 439 + 128 -> 255
    image = np.zeros((1, 2, 2, 3), np.float32)
    image[0, 0, 0] = (1000, 0, 0)
    xml = to_nv12_model(tmp_path, (1, 2, 2, 3), "f32", single_plane=False)
    y, uv = irrun.load(str(xml)).run({"image": image}).values()
    assert y[0, 0, 0, 0] == 255
    np.testing.assert_allclose(uv[0, 0, 0], [(0 + 3 * 128) / 4, (255 + 3 * 128) / 4], atol=1e-4)


def test_to_nv12_then_nv12_to_rgb_roughly_inverts(tmp_path):
    # a smooth u8 image through irrun's RGBtoNV12, then OpenVINO's CPU NV12toRGB: back within the colour
    # quantisation (BT.601 studio range plus chroma averaging over flat 2x2 blocks)
    rng = np.random.default_rng(210)
    block = rng.integers(40, 216, (1, 3, 4, 3)).astype(np.uint8)
    image = np.repeat(np.repeat(block, 2, axis=1), 2, axis=2)  # flat 2x2 blocks: averaging loses nothing
    xml = to_nv12_model(tmp_path, image.shape, "u8")
    nv12 = list(irrun.load(str(xml)).run({"image": image}).values())[0]
    built = build(lambda p: opset8.nv12_to_rgb(p["x"]), {"x": nv12})
    _, back = run_cpu(built)
    assert np.abs(back[0].astype(int) - image.astype(int)).max() <= 3
