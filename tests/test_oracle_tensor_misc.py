"""irrun vs OpenVINO on Identity-16, OneHot-16, Eye-9 and ConvertPromoteTypes-14.

Oracles: the reference evaluate for OneHot-16 and Eye-9; the CPU plugin for Identity-16 (no evaluate) and
ConvertPromoteTypes-14 (the plugin lowers it to Converts). The promoted type is checked against the type
OpenVINO's own shape inference gives for every pair of supported types and attribute combination (a model
OpenVINO refuses must be refused by irrun too). Values are compared bit-exact.
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest
import openvino as ov
from openvino import opset9, opset14
import openvino.opset16 as opset16

import oracle as O
from oracle import assert_cpu_many, assert_same, build, run_cpu, run_irrun, run_reference

from irrun.errors import IRError


def check(make, inputs, context, oracle="reference"):
    built = build(make, inputs)
    expected = run_reference(built) if oracle == "reference" else run_cpu(built)[1]
    assert_same(run_irrun(built, context), expected, built.output_names, context=context)


@pytest.mark.parametrize("dtype", ["float32", "int8", "int64", "bool", "float16", "uint16"])
def test_identity(dtype):
    x = np.arange(-3, 9).reshape(3, 4).astype(dtype)
    assert_cpu_many([(build(lambda p: opset16.identity(p["x"]), {"x": x}), dtype),
                     (build(lambda p: opset16.identity(p["x"]), {"x": np.zeros((0, 2), dtype)}), dtype + " empty")])


@pytest.mark.parametrize("mode", [None, "ignore_negative", "normalize"])
def test_one_hot_16(mode):
    rng = np.random.default_rng(3)
    for case, (shape, depth, axis, vtype, itype) in enumerate([
            ((2, 3), 3, -1, np.float32, np.int32), ((4,), 5, 0, np.int64, np.int64), ((2, 2, 2), 4, 1, np.int8, np.int32),
            ((), 3, 0, np.float16, np.int64), ((3, 0), 2, -2, np.float32, np.int32), ((5,), 0, -1, np.int32, np.int64),
            ((3, 3), 2, 2, np.bool_, np.int64)]):
        idx = rng.integers(-depth - 2, depth + 2, shape).astype(itype)
        on, off = np.array(5, vtype), np.array(0 if vtype == np.bool_ else 2, vtype)
        check(lambda p: opset16.one_hot(p["i"], O.constant(np.int64(depth)), O.constant(on), O.constant(off), axis,
                                        mode), {"i": idx}, f"OneHot-16 {mode} case {case}")


def test_one_hot_16_normalize_hand_values():
    idx = np.array([0, -1, 2, -3, 3, -4], np.int32)
    built = build(lambda p: opset16.one_hot(p["i"], O.constant(np.int64(3)), O.constant(np.float32(1)),
                                            O.constant(np.float32(0)), -1, "normalize"), {"i": idx})
    want = np.array([[1, 0, 0], [0, 0, 1], [0, 0, 1], [1, 0, 0], [0, 0, 0], [0, 0, 0]], np.float32)
    assert_same(run_irrun(built), [want], built.output_names)


@pytest.mark.parametrize("out", ["f32", "i8", "i64", "f16", "u8", "boolean", "u32"])
def test_eye(out):
    cases = [(3, 4, -1, None), (4, 4, 0, [2]), (2, 5, 3, [2, 3]), (3, 2, -3, None), (3, 3, 7, [1]), (0, 3, 0, None),
             (3, 0, 0, [2]), (1, 1, 0, [0])]
    checks = []
    for case, (rows, cols, diag, batch) in enumerate(cases):
        if case % 2 != len(out) % 2 and case not in (2, 5):  # half the cases per type, all of them over the types
            continue
        itype = (np.int32, np.int64)[case % 2]
        feeds = {"r": np.array(rows, itype), "c": np.array([cols], itype), "d": np.array(diag, np.int64)}
        if batch is not None:
            feeds["b"] = np.array(batch, itype)
        make = lambda p: opset9.eye(p["r"], p["c"], p["d"], out, p.get("b"))  # noqa: E731
        checks.append((build(make, feeds), f"Eye {out} case {case}"))
    if out in ("boolean", "u32"):
        assert_cpu_many(checks)
    else:
        for built, context in checks:
            assert_same(run_irrun(built, context), run_reference(built), built.output_names, context=context)


PROMOTE_TYPES = ["boolean", "f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64"]


def _promote_node(a_shape, a_type, b_shape, b_type, attrs):
    a = ov.op.Parameter(getattr(ov.Type, a_type), ov.PartialShape(a_shape))
    b = ov.op.Parameter(getattr(ov.Type, b_type), ov.PartialShape(b_shape))
    return opset14.convert_promote_types(a, b, **attrs)


def test_convert_promote_types_matches_openvino_type_inference():
    """Every pair of types, with each attribute combination: irrun's inferred type (or refusal) is OpenVINO's."""
    from irrun.ir.types import ELEMENT_TYPES as T
    from irrun.ops.registry import Context, TensorInfo
    from irrun.ops.tensor_misc import ConvertPromoteTypes14
    checked = 0
    for unsafe, scalar, target in [(False, False, "f32"), (True, False, "f32"), (True, False, "i64"),
                                   (False, True, "f32"), (True, True, "f64")]:
        attrs = {"promote_unsafe": unsafe, "pytorch_scalar_promotion": scalar, "u64_integer_promotion_target": target}
        op = ConvertPromoteTypes14(dict(attrs, u64_integer_promotion_target=T[target]), Context())
        for ta, tb in itertools.product(PROMOTE_TYPES, repeat=2):
            for a_shape, b_shape in (([2, 3], [3]), ([], [3])):
                try:
                    want = _promote_node(a_shape, ta, b_shape, tb, attrs).get_output_element_type(0).get_type_name()
                except Exception:  # noqa: BLE001 - OpenVINO refuses the pair
                    want = None
                inputs = [TensorInfo(tuple(a_shape), T[ta]), TensorInfo(tuple(b_shape), T[tb])]
                try:
                    got = op.infer(inputs)[0].type.name
                except IRError:
                    got = None
                assert got == want, (ta, tb, a_shape, attrs)
                checked += 1
    assert checked == 5 * 2 * len(PROMOTE_TYPES) ** 2


@pytest.mark.parametrize("pair", [("int16", "float32", {}), ("uint8", "int16", {}), ("float16", "float32", {}),
                                  ("bool", "int16", {}), ("int64", "float16", {"promote_unsafe": True}),
                                  ("uint32", "int32", {"promote_unsafe": True}),
                                  ("uint64", "int8", {"promote_unsafe": True, "u64_integer_promotion_target": "i32"}),
                                  ("float32", "int8", {"pytorch_scalar_promotion": True, "scalar": True})])
def test_convert_promote_types_values(pair):
    ta, tb, attrs = pair
    attrs = dict(attrs)
    scalar = attrs.pop("scalar", False)
    rng = np.random.default_rng(5)
    # unsigned inputs stay below 2**31: the CPU plugin reads u32/u64 through i32
    a = (rng.standard_normal(() if scalar else (2, 3)) * 100)
    a = (np.abs(a) if np.dtype(ta).kind == "u" else a).astype(ta)
    b = (rng.standard_normal((3,)) * 100)
    b = (np.abs(b) if np.dtype(tb).kind == "u" else b).astype(tb)
    check(lambda p: opset14.convert_promote_types(p["a"], p["b"], **attrs), {"a": a, "b": b}, str(pair), "cpu")
