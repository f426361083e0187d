"""irrun vs OpenVINO's reference kernels on Interpolate-4 and Interpolate-11.

Tolerances: 'nearest' selects elements, so it is bit-exact. linear, linear_onnx, cubic and the pillow
modes sum weighted neighbours; OpenVINO accumulates in float32 in its own order, irrun in float64, so
float results are compared with atol 1e-5 on data of magnitude <= 1 (a few f32 ulps), plus one f16 ulp
for f16 data. Integer data is compared exactly for nearest only.
"""
from __future__ import annotations

import numpy as np
import pytest
from openvino import opset11
from openvino.utils.node_factory import NodeFactory

from oracle import assert_same, build

import irrun
from test_oracle_movement import const, describe, reference

TRANSFORMS = ("half_pixel", "pytorch_half_pixel", "asymmetric", "tf_half_pixel_for_nn", "align_corners")
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil", "simple")


def interpolate4(x, sizes, scales, axes, attrs):
    inputs = [x, sizes, scales] + ([axes] if axes is not None else [])
    return NodeFactory("opset4").create("Interpolate", inputs, attrs)


def run_case(make, x, context, exact):
    built = build(make, {"x": x})
    expected = reference(built)
    got = irrun.load(str(built.xml)).run(built.feed_dict)
    atol = None if exact else 1e-5
    assert_same(got, expected, built.output_names, atol=atol, f16_ulp=x.dtype == np.float16, context=context)


def random_case(rng, mode, version):
    rank = int(rng.integers(3, 5)) if mode not in ("bilinear_pillow", "bicubic_pillow", "linear_onnx") else 4
    shape = [int(d) for d in rng.integers(1, 3, rank - 2)] + [int(d) for d in rng.integers(1, 6, 2)]
    if mode in ("linear_onnx",):
        # The reference accepts only the spatial axes or all axes, and with all axes it resizes N and C
        # wrongly (see test_linear_onnx_batch_axis_quirk); so N and C keep their size here.
        axes = list(range(2, rank)) if rng.random() < 0.7 else list(range(rank))
    elif mode in ("bilinear_pillow", "bicubic_pillow"):
        axes = [rank - 2, rank - 1]
    else:
        k = int(rng.integers(1, rank + 1))
        axes = sorted(int(a) for a in rng.choice(rank, k, replace=False))
    calc = "sizes" if rng.random() < 0.5 else "scales"
    sizes = [int(rng.integers(1, 9)) for _ in axes]
    scales = [float(np.float32(rng.choice([0.5, 0.75, 1.0, 1.5, 2.0, 2.5, 1 / 3, 0.6]))) for _ in axes]
    # no empty outputs: the reference pillow kernels crash on them
    scales = [sc if int(np.float32(shape[a]) * np.float32(sc)) > 0 else 1.0 for a, sc in zip(axes, scales)]
    if mode == "linear_onnx" and len(axes) == rank:
        sizes[:2], scales[:2] = shape[:2], [1.0, 1.0]
    pads = rng.random() < 0.2 and mode not in ("bilinear_pillow", "bicubic_pillow")
    pb = [int(rng.integers(0, 2)) for _ in range(rank)] if pads else [0]
    pe = [int(rng.integers(0, 2)) for _ in range(rank)] if pads else [0]
    attrs = dict(mode=mode, shape_calculation_mode=calc,
                 coordinate_transformation_mode=str(rng.choice(TRANSFORMS)),
                 nearest_mode=str(rng.choice(NEAREST)), antialias=bool(rng.random() < 0.3),
                 pads_begin=pb, pads_end=pe, cube_coeff=float(rng.choice([-0.75, -0.5])))
    return shape, axes, sizes, scales, attrs


def make_node(version, x, axes, sizes, scales, attrs, axes_given=True):
    ax = const(np.array(axes, np.int64)) if axes_given else None
    if version == 4:
        return interpolate4(x, const(np.array(sizes, np.int64)), const(np.array(scales, np.float32)), ax, attrs)
    value = np.array(sizes, np.int64) if attrs["shape_calculation_mode"] == "sizes" else np.array(scales, np.float32)
    kw = dict(attrs)
    mode = kw.pop("mode")
    calc = kw.pop("shape_calculation_mode")
    return opset11.interpolate(x, const(value), mode, calc, axes=ax, **kw)


@pytest.mark.parametrize("version,mode", [(v, m) for v in (4, 11) for m in (
    "nearest", "linear", "linear_onnx", "cubic", "bilinear_pillow", "bicubic_pillow") if v == 11 or "pillow" not in m])
def test_interpolate_sweep(version, mode):
    rng = np.random.default_rng(100 + version + len(mode))
    types = (np.float32, np.float16, np.uint8, np.int8) if mode == "nearest" else (np.float32, np.float16)
    for case in range(30):
        shape, axes, sizes, scales, attrs = random_case(rng, mode, version)
        dtype = types[case % len(types)]
        if np.dtype(dtype).kind == "f":
            x = rng.uniform(-1, 1, shape).astype(dtype)
        else:
            x = rng.integers(np.iinfo(dtype).min, np.iinfo(dtype).max, shape, dtype=dtype, endpoint=True)
        all_axes = axes == list(range(len(shape)))
        axes_given = not all_axes or rng.random() < 0.5
        ctx = describe(version=version, case=case, shape=shape, axes=axes, sizes=sizes, scales=scales,
                       dtype=np.dtype(dtype).name, axes_given=axes_given, **attrs)
        run_case(lambda p: make_node(version, p["x"], axes, sizes, scales, attrs, axes_given), x, ctx,
                 exact=mode == "nearest")


def test_linear_onnx_batch_axis_quirk():
    """OpenVINO's reference linear_onnx folds a 4-D input into [1, N, C, H, W] and loops over the input N
    only: resizing N (axes 0..3) leaves the extra output batches 0. irrun interpolates N properly, so the
    two differ; this pins the reference behaviour (not followed) so a change in OpenVINO is noticed."""
    x = np.arange(8, dtype=np.float32).reshape(2, 1, 2, 2)
    attrs = dict(mode="linear_onnx", shape_calculation_mode="sizes", coordinate_transformation_mode="half_pixel",
                 nearest_mode="round_prefer_floor", antialias=False, pads_begin=[0], pads_end=[0], cube_coeff=-0.75)
    built = build(lambda p: make_node(4, p["x"], [0, 1, 2, 3], [4, 1, 2, 2], [2.0, 1.0, 1.0, 1.0], attrs), {"x": x})
    expected = reference(built)[0]
    assert (expected[2:] == 0).all()
    got = list(irrun.load(str(built.xml)).run(built.feed_dict).values())[0]
    assert got.shape == expected.shape and (got[2:] != 0).any()
