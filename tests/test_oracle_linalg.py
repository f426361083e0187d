"""irrun vs OpenVINO on Inverse-14 and GroupedMatMul-17.

Inverse has no reference evaluate in OpenVINO 2026.4.1: the oracle is the CPU plugin, which (like the
reference source) runs LU decomposition with partial pivoting in f32; the order of operations differs, so
values are compared with a tolerance scaled by the result (well-conditioned random matrices: diagonally
dominated, condition number < 50: atol 1e-4 * max|inverse| for f32, one f16 ulp + 2e-3 for f16).
GroupedMatMul has neither an evaluate nor a CPU-plugin kernel in 2026.4.1: its shape inference is compared with
OpenVINO's (the same shapes, the same refusals) and its values with the per-group products the spec defines,
written out in the test.
"""
from __future__ import annotations

import numpy as np
import openvino as ov
import pytest
from openvino import opset14
import openvino.opset17 as opset17

from oracle import assert_same, build, run_cpu, run_cpu_many, run_irrun

from irrun.errors import IRError


def well_conditioned(rng, shape, dtype):
    n = shape[-1]
    a = rng.uniform(-1, 1, shape) + np.eye(n) * (n + 1) * rng.choice([-1, 1], shape[:-2] + (1, 1))
    return a.astype(dtype)


@pytest.mark.parametrize("adjoint", [False, True])
def test_inverse_against_cpu_plugin(adjoint):
    rng = np.random.default_rng(int(adjoint))
    cases = [((1, 1), np.float32), ((3, 3), np.float32), ((2, 4, 4), np.float32), ((2, 3, 5, 5), np.float32),
             ((6, 6), np.float16), ((2, 2, 2), np.float32), ((0, 3, 3), np.float32), ((8, 8), np.float32)]
    builts = [build(lambda p: opset14.inverse(p["a"], adjoint), {"a": well_conditioned(rng, shape, dtype)})
              for shape, dtype in cases]
    for (shape, dtype), built, (_, expected) in zip(cases, builts, run_cpu_many(builts)):
        scale = float(np.abs(expected[0]).max()) if expected[0].size else 1.0
        tol = 2e-3 if dtype == np.float16 else 1e-4 * scale
        assert_same(run_irrun(built), expected, built.output_names, atol=tol, f16_ulp=dtype == np.float16,
                    context=f"{shape} {dtype} adjoint={adjoint}")


def test_inverse_pivots_and_adjoint_hand_values():
    a = np.array([[0, 2], [4, 0]], np.float32)  # needs a row swap
    for adjoint, want in ((False, [[0, 0.25], [0.5, 0]]), (True, [[0, 0.5], [0.25, 0]])):
        built = build(lambda p: opset14.inverse(p["a"], adjoint), {"a": a})
        assert_same(run_irrun(built), [np.array(want, np.float32)], built.output_names)
        assert_same(run_cpu(built)[1], [np.array(want, np.float32)], built.output_names)


def test_inverse_singular_gives_nan_like_openvino():
    built = build(lambda p: opset14.inverse(p["a"], False), {"a": np.zeros((2, 2), np.float32)})
    got = list(run_irrun(built).values())[0]
    assert np.isnan(got).all() and np.isnan(run_cpu(built)[1][0]).all()


def _param(shape, et=ov.Type.f32):
    return ov.op.Parameter(et, ov.PartialShape(shape))


def test_grouped_matmul_shape_inference_matches_openvino():
    from irrun.ir.types import ELEMENT_TYPES as T
    from irrun.ops.linalg import GroupedMatMul17
    from irrun.ops.registry import TensorInfo
    cases = [([6, 4], [3, 5, 4], [3]), ([2, 6, 4], [2, 5, 4], None), ([6, 4], [4, 5], None), ([6, 4], [3, 4, 5], [3]),
             ([2, 6, 4], [2, 4, 5], None), ([6, 4], [3, 5, 4], None), ([2, 6, 4], [3, 5, 4], None), ([0, 4], [2, 3, 4], [2])]
    for a, b, offsets in cases:
        try:
            inputs = [_param(a), _param(b)] + ([_param(offsets, ov.Type.i32)] if offsets else [])
            want = tuple(opset17.grouped_matmul(*inputs).get_output_partial_shape(0).to_shape())
        except Exception:  # noqa: BLE001 - OpenVINO refuses it
            want = None
        infos = [TensorInfo(tuple(a), T["f32"]), TensorInfo(tuple(b), T["f32"])]
        infos += [TensorInfo(tuple(offsets), T["i32"])] if offsets else []
        try:
            got = GroupedMatMul17({}, None).infer(infos)[0].shape
        except IRError:
            got = None
        assert got == want, (a, b, offsets)


def test_grouped_matmul_values_follow_the_spec():
    rng = np.random.default_rng(7)
    a2 = rng.standard_normal((7, 4)).astype(np.float32)
    b = rng.standard_normal((3, 5, 4)).astype(np.float32)
    offsets = np.array([2, 2, 6], np.int32)  # group 1 is empty, row 6 belongs to no group
    built = build(lambda p: opset17.grouped_matmul(p["a"], p["b"], p["o"]), {"a": a2, "b": b, "o": offsets})
    want = np.zeros((7, 5), np.float32)
    for g, (start, end) in enumerate([(0, 2), (2, 2), (2, 6)]):
        for r in range(start, end):
            want[r] = [np.dot(a2[r].astype(np.float64), b[g, n].astype(np.float64)) for n in range(5)]
    assert_same(run_irrun(built), [want], built.output_names, atol=1e-5)
    a3 = rng.standard_normal((3, 2, 4)).astype(np.float16)
    built = build(lambda p: opset17.grouped_matmul(p["a"], p["b"]), {"a": a3, "b": b.astype(np.float16)})
    want = np.stack([a3[g].astype(np.float32) @ b[g].astype(np.float16).astype(np.float32).T for g in range(3)])
    assert_same(run_irrun(built), [want.astype(np.float16)], built.output_names, atol=1e-3, f16_ulp=True)


def test_grouped_matmul_bad_offsets_are_an_error():
    a = np.zeros((4, 2), np.float32)
    b = np.zeros((2, 3, 2), np.float32)
    built = build(lambda p: opset17.grouped_matmul(p["a"], p["b"], p["o"]),
                  {"a": a, "b": b, "o": np.array([3, 1], np.int64)})
    with pytest.raises(IRError, match="offsets"):
        run_irrun(built)
