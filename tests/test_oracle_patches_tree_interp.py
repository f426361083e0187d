"""irrun vs OpenVINO on GatherTree-1, ExtractImagePatches-3 and Interpolate-1 (OpenVINO's v0 class).

None has a reference evaluate in OpenVINO 2026.4.1; the oracle is the CPU plugin. GatherTree and
ExtractImagePatches move data: bit-exact. Interpolate-1 runs on the CPU as the Interpolate-4 its conversion pass
writes; integer-valued sizes and inputs on a 1/8 grid keep linear and nearest exact, cubic sums in a different
order: atol 1e-5 (inputs in [0, 8)).
"""
from __future__ import annotations

import numpy as np
import pytest
from openvino import opset1, opset3
from openvino.utils.node_factory import NodeFactory

import oracle as O
from oracle import assert_cpu_many, assert_same, build, run_cpu, run_cpu_many, run_irrun

from irrun.errors import IRError


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_gather_tree(dtype):
    rng = np.random.default_rng(len(dtype))
    cases = []
    for case, (t, b, w, lengths, end) in enumerate([(4, 2, 3, [3, 4], 2), (5, 1, 4, [5], 0), (3, 3, 2, [2, 1, 9], 1),
                                                    (6, 2, 5, [6, 2], 3), (1, 1, 1, [1], 0)]):
        step = rng.integers(0, 5, (t, b, w)).astype(dtype)
        parents = rng.integers(0, w, (t, b, w)).astype(dtype)
        cases.append((build(lambda p: opset1.gather_tree(p["s"], p["p"], p["m"], p["e"]),
                            {"s": step, "p": parents, "m": np.array(lengths, dtype), "e": np.array(end, dtype)}),
                      f"GatherTree {dtype} case {case}"))
    assert_cpu_many(cases)


def test_gather_tree_hand_values():
    """Back-tracking by hand: beam 0 reads ids 5, 3 (parent 1), 2; beam 1 reads 6, 4 (its end token, so step 2
    becomes 4), 1. A zero max_seq_len gives end tokens only (OpenVINO's reference; the CPU plugin leaves that
    batch's output uninitialised)."""
    step = np.array([[[1, 2]], [[3, 4]], [[5, 6]]], np.int32)
    parents = np.array([[[0, 0]], [[1, 0]], [[0, 1]]], np.int32)
    built = build(lambda p: opset1.gather_tree(p["s"], p["p"], p["m"], p["e"]),
                  {"s": step, "p": parents, "m": np.array([3], np.int32), "e": np.array(4, np.int32)})
    want = np.array([[[2, 1]], [[3, 4]], [[5, 4]]], np.int32)
    assert_same(run_irrun(built), [want], built.output_names)
    assert_same(run_cpu(built)[1], [want], built.output_names)
    built = build(lambda p: opset1.gather_tree(p["s"], p["p"], p["m"], p["e"]),
                  {"s": step, "p": parents, "m": np.array([0], np.int32), "e": np.array(7, np.int32)})
    assert_same(run_irrun(built), [np.full((3, 1, 2), 7, np.int32)], built.output_names)


def test_gather_tree_bad_parent_is_an_error():
    step = np.zeros((2, 1, 2), np.int32)
    built = build(lambda p: opset1.gather_tree(p["s"], p["p"], p["m"], p["e"]),
                  {"s": step, "p": np.full((2, 1, 2), 5, np.int32), "m": np.array([2], np.int32),
                   "e": np.array(9, np.int32)})
    with pytest.raises(IRError, match="parent index"):
        run_irrun(built)


def test_extract_image_patches():
    rng = np.random.default_rng(3)
    cases = []
    for case, (shape, sizes, strides, rates, pad) in enumerate([
            ((2, 1, 5, 5), [2, 2], [2, 2], [1, 1], "same_upper"), ((1, 3, 7, 6), [3, 2], [2, 3], [1, 2], "valid"),
            ((1, 2, 6, 6), [3, 3], [1, 1], [2, 2], "same_lower"), ((2, 2, 4, 5), [2, 3], [3, 2], [1, 1], "same_upper"),
            ((1, 1, 3, 3), [4, 4], [1, 1], [1, 1], "valid"), ((1, 2, 5, 4), [1, 1], [2, 2], [3, 3], "same_lower")]):
        dtype = ["float32", "int32", "uint8", "float16"][case % 4]
        x = rng.integers(0, 50, shape).astype(dtype)
        cases.append((build(lambda p: opset3.extract_image_patches(p["x"], sizes, strides, rates, pad), {"x": x}),
                      f"ExtractImagePatches case {case}"))
    assert_cpu_many(cases)


INTERPOLATE_CASES = [  # shape, axes, sizes, mode, align_corners, pads (0: none)
    ((1, 1, 2, 3), [2, 3], [4, 6], "linear", False, 0), ((1, 2, 4, 4), [2, 3], [2, 3], "nearest", False, 0),
    ((2, 3, 5), [2], [8], "linear", False, 0), ((1, 1, 3, 4), [3], [7], "linear", True, 0),
    ((1, 2, 3, 3), [2, 3], [5, 5], "cubic", False, 0), ((1, 1, 4, 4), [2, 3], [6, 2], "nearest", True, 0),
    ((1, 1, 2, 3, 4), [2, 3, 4], [3, 4, 5], "linear", False, 0), ((1, 1, 3, 3), [2, 3], [6, 6], "linear", False, [0, 0, 1, 2]),
    ((1, 1, 3, 4), [3], [9], "linear", False, [0, 0, 0, 1]), ((1, 2, 3, 3), [2, 3], [7, 7], "nearest", False, [0, 0, 1, 0]),
    ((1, 2, 6), [2], [3], "cubic", True, 0), ((1, 1, 4, 4), [1, 2], [2, 6], "linear_onnx", False, 0),
]


def as_interpolate_4(x, shape, axes, sizes, mode, align, pads):
    """The Interpolate-4 that OpenVINO's ConvertInterpolate1ToInterpolate4 writes, written out by hand."""
    rank = len(shape)
    mode4 = {"linear": "linear_onnx" if rank < 5 else "linear"}.get(mode, mode)
    if align:
        transform = "align_corners"
    elif mode4 in ("linear", "linear_onnx") and not pads and not (rank == 4 and sorted(axes) == [2, 3]):
        transform = "half_pixel"
    else:
        transform = "asymmetric"
    scales = np.array(sizes, np.float32) / np.array([shape[a] for a in axes], np.float32)
    attrs = {"mode": mode4, "shape_calculation_mode": "sizes", "coordinate_transformation_mode": transform,
             "nearest_mode": "simple", "cube_coeff": -0.75, "pads_begin": pads or [0] * rank,
             "pads_end": pads or [0] * rank}
    inputs = [x, O.constant(np.array(sizes, np.int64)), O.constant(scales), O.constant(np.array(axes, np.int64))]
    return NodeFactory("opset4").create("Interpolate", [i.output(0) if hasattr(i, "output") else i for i in inputs],
                                        attrs)


def test_interpolate_1():
    """Oracles: the CPU plugin on the Interpolate-1 file, and the reference evaluate of the Interpolate-4 its
    conversion pass writes (where that reference accepts the axes)."""
    rng = np.random.default_rng(1)
    cases = []
    for case, (shape, axes, sizes, mode, align, pads) in enumerate(INTERPOLATE_CASES):
        x = (rng.integers(0, 64, shape) / 8).astype(np.float32)
        attrs = {"axes": axes, "mode": mode, "align_corners": align, "antialias": False,
                 "pads_begin": pads or [0] * len(shape), "pads_end": pads or [0] * len(shape)}
        context = f"Interpolate-1 case {case} {mode}"
        built = build(lambda p: opset1.interpolate(p["x"], O.constant(np.array(sizes, np.int64)), attrs), {"x": x})
        got = run_irrun(built, context)
        twin = build(lambda p: as_interpolate_4(p["x"], shape, axes, sizes, mode, align, pads), {"x": x})
        try:
            reference = O.run_reference(twin)
        except RuntimeError as exc:  # the linear_onnx reference takes only the spatial axes, all of them
            assert "Axes are not correct" in str(exc) and mode in ("linear", "linear_onnx"), context
            reference = None
        if reference is not None:
            assert_same(got, reference, built.output_names, atol=1e-5, context=context)
        cases.append((got, built, context))
    for (got, built, context), (_, expected) in zip(cases, run_cpu_many([built for _, built, _ in cases])):
        assert_same(got, expected, built.output_names, atol=1e-5, context=context)


def test_interpolate_1_area_is_refused():
    x = np.zeros((1, 1, 4, 4), np.float32)
    built = build(lambda p: opset1.interpolate(p["x"], O.constant(np.array([2, 2], np.int64)),
                                               {"axes": [2, 3], "mode": "area"}), {"x": x})
    with pytest.raises(Exception):
        run_cpu(built)
    with pytest.raises(IRError, match="area"):
        run_irrun(built)
