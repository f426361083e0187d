"""irrun vs OpenVINO on GatherND-5/8 and ScatterNDUpdate-4 (OpenVINO's v3 class) / -15.

Oracles: ScatterNDUpdate's reference evaluate (f32, f16, i32, i64, u32, u64, boolean), the CPU plugin for the
types evaluate refuses (i8, u8, i16, f64) and for GatherND, which has no evaluate in 2026.4.1. Everything is
data movement or a fold in the data type, so results are compared bit-exact. Out-of-range coordinates are an
error in irrun; OpenVINO's reference refuses them for ScatterNDUpdate and reads outside the slice for GatherND.
"""
from __future__ import annotations

import numpy as np
import pytest
from openvino import opset4, opset5, opset8, opset15

import oracle as O
from oracle import assert_same, build, run_cpu, run_cpu_many, run_irrun, run_reference

from irrun.errors import IRError

REFERENCE_SCATTER_TYPES = ("float32", "float16", "int32", "int64", "uint32", "uint64", "bool")


def values(rng, shape, dtype, specials=False):
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.kind == "f":
        x = rng.integers(-6, 7, shape).astype(dtype) / dtype.type(2)
        if specials and x.size:
            flat = x.reshape(-1)
            picks = rng.integers(0, flat.size, max(1, flat.size // 5))
            flat[picks] = rng.choice(np.array([np.nan, 0.0, -0.0, np.inf, -np.inf], dtype=dtype), picks.size)
        return x
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -9), min(info.max, 9), shape, endpoint=True).astype(dtype)


def coordinates(rng, count_shape, dims, index_dtype, negative=True):
    cols = [rng.integers(-d if negative else 0, d, count_shape + (1,)) for d in dims]
    idx = np.concatenate(cols, axis=-1) if cols else np.zeros(count_shape + (0,), np.int64)
    return idx.astype(index_dtype)


def same_update_for_the_same_place(indices, updates, dims):
    """The updates with every index row that repeats an earlier place (negative or not) given that earlier row's
    values: the CPU plugin writes repeated places on several threads in no fixed order (its result changed between
    runs), so against it only the values, not the order, may decide. The reference's order of repeated places is
    tested on its own (test_scatter_nd_update_duplicates_keep_openvino_order)."""
    rows = indices.reshape(-1, indices.shape[-1]).astype(np.int64) % np.maximum(np.array(dims, np.int64), 1)
    if rows.shape[0] == 0:
        return updates
    _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    flat = updates.reshape((rows.shape[0],) + updates.shape[indices.ndim - 1:])
    return flat[first[inverse.reshape(-1)]].reshape(updates.shape)


def check_many(cases):
    """irrun vs the oracle ("reference" or "cpu") on each (built, context, oracle) case; the CPU plugin's cases
    compile as one model."""
    cpu = iter(run_cpu_many([built for built, _, oracle in cases if oracle == "cpu"]))
    for built, context, oracle in cases:
        expected = run_reference(built) if oracle == "reference" else next(cpu)[1]
        assert_same(run_irrun(built, context), expected, built.output_names, context=context)


# ---------------------------------------------------------------- ScatterNDUpdate

SCATTER_CASES = [  # data shape, indices leading shape, k
    ((5,), (3,), 1), ((4, 3), (6,), 1), ((4, 3), (2, 3), 2), ((3, 4, 2), (5,), 2), ((2, 3, 4), (2, 2), 1),
    ((2, 3), (2,), 0), ((3, 2), (0,), 1), ((0, 3), (0,), 1), ((3, 0), (4,), 1), ((2, 2, 2), (7,), 3),
]


@pytest.mark.parametrize("reduction", [None, "none", "sum", "sub", "prod", "min", "max"])
def test_scatter_nd_update_sweep(reduction):
    seed = ["none", "sum", "sub", "prod", "min", "max", None].index(reduction)
    rng = np.random.default_rng(seed)
    dtypes = ["float32", "float16", "int32", "int64", "uint32", "bool", "int8", "uint8", "int16", "float64"]
    cases = []
    for case, (shape, lead, k) in enumerate(SCATTER_CASES):
        for dtype in (dtypes[(case + seed) % len(dtypes)],) + (("float32",) if case % 3 == 0 else ()):
            index_dtype = (np.int32, np.int64)[case % 2]
            if k == 0 and dtype not in REFERENCE_SCATTER_TYPES:
                continue  # the CPU plugin ignores updates when k = 0 (pinned below): the reference only
            # NaN, infinities and signed zeros where the reference is the oracle (the CPU plugin runs f64 in f32)
            specials = reduction in ("min", "max") and dtype in REFERENCE_SCATTER_TYPES
            data = values(rng, shape, dtype, specials)
            idx = coordinates(rng, lead, shape[:k], index_dtype)
            upd = values(rng, lead + shape[k:], dtype, specials)
            oracle = "reference" if dtype in REFERENCE_SCATTER_TYPES else "cpu"
            if oracle == "cpu" and reduction in (None, "none"):
                upd = same_update_for_the_same_place(idx, upd, shape[:k])

            def make(p):
                if reduction is None:
                    return opset4.scatter_nd_update(p["data"], p["indices"], p["updates"])
                return opset15.scatter_nd_update(p["data"], p["indices"], p["updates"], reduction)
            cases.append((build(make, {"data": data, "indices": idx, "updates": upd}),
                          f"{reduction} {shape} {lead} k={k} {dtype}", oracle))
    check_many(cases)


def test_scatter_nd_update_duplicates_keep_openvino_order():
    data = np.zeros((4, 2), np.float32)
    idx = np.array([[1], [3], [1], [-3], [1]], np.int64)
    upd = np.arange(10, dtype=np.float32).reshape(5, 2)
    built = build(lambda p: opset4.scatter_nd_update(p["data"], O.constant(idx), p["updates"]),
                  {"data": data, "updates": upd})
    got = run_irrun(built)
    expected = run_reference(built)
    assert_same(got, expected, built.output_names)
    np.testing.assert_array_equal(expected[0][1], [8, 9])  # the last of the three updates to row 1 wins


def test_scatter_nd_update_reductions_hand_values():
    """Spec-style hand values: booleans fold with or/xor/and; max keeps a NaN already present, never takes one."""
    b = np.array([True, False, True, False])
    bidx = np.array([[0], [0], [1], [3]], np.int64)
    bupd = np.array([True, True, True, False])
    hand = {"sum": [True, True, True, False], "sub": [True, True, True, False],
            "prod": [True, False, True, False], "max": [True, True, True, False], "min": [True, False, True, False]}
    for reduction, want in hand.items():
        built = build(lambda p: opset15.scatter_nd_update(p["d"], O.constant(bidx), p["u"], reduction),
                      {"d": b, "u": bupd})
        np.testing.assert_array_equal(run_reference(built)[0], want, err_msg=reduction)
        np.testing.assert_array_equal(list(run_irrun(built).values())[0], want, err_msg=reduction)
    f = np.array([1, np.nan, 3], np.float32)
    fidx = np.array([[0], [0], [1], [2], [2]], np.int64)
    fupd = np.array([np.nan, 5, 2, np.nan, 1], np.float32)
    built = build(lambda p: opset15.scatter_nd_update(p["d"], O.constant(fidx), p["u"], "max"), {"d": f, "u": fupd})
    assert_same(run_irrun(built), [np.array([5, np.nan, 3], np.float32)], built.output_names)
    assert_same(run_irrun(built), run_reference(built), built.output_names)


def test_scatter_nd_update_whole_tensor_updates_cpu_plugin_differs():
    """indices [..., 0]: every update replaces (or folds into) the whole tensor. The reference does so; the CPU
    plugin leaves the data unchanged. irrun follows the reference."""
    data = np.zeros((2, 3), np.float32)
    upd = np.arange(12, dtype=np.float32).reshape(2, 2, 3)
    idx = np.zeros((2, 0), np.int64)
    for reduction, want in (("none", upd[1]), ("sum", upd[0] + upd[1])):
        built = build(lambda p: opset15.scatter_nd_update(p["d"], p["i"], p["u"], reduction),
                      {"d": data, "i": idx, "u": upd})
        assert_same(run_irrun(built), [want], built.output_names, context=reduction)
        assert_same(run_reference(built), [want], built.output_names, context=reduction)
        assert_same(run_cpu(built)[1], [data], built.output_names, context=reduction)


def test_scatter_nd_update_integer_wraps_like_the_cpu_plugin():
    data = np.array([100, 100, 3], np.int8)
    idx = np.array([[0], [0], [1]], np.int64)
    upd = np.array([100, 100, -128], np.int8)
    built = build(lambda p: opset15.scatter_nd_update(p["d"], O.constant(idx), p["u"], "sum"), {"d": data, "u": upd})
    assert_same(run_irrun(built), [np.array([44, -28, 3], np.int8)], built.output_names)
    assert_same(run_irrun(built), run_cpu(built)[1], built.output_names)


@pytest.mark.parametrize("bad", [[0, 3], [2, 0], [0, -4]])
def test_scatter_nd_update_out_of_range_is_an_error(bad):
    data = np.zeros((2, 3), np.float32)
    idx = np.array([bad], np.int64)
    built = build(lambda p: opset4.scatter_nd_update(p["d"], O.constant(idx), p["u"]),
                  {"d": data, "u": np.ones(1, np.float32)})
    with pytest.raises(RuntimeError, match="out of bounds"):
        run_reference(built)
    with pytest.raises(IRError, match="out of range"):
        run_irrun(built)


def test_scatter_nd_update_checker_rules():
    from irrun.ops.gather_scatter_nd import ScatterNDUpdate4
    from irrun.ops.registry import TensorInfo, Context
    from irrun.ir.types import ELEMENT_TYPES as T
    op = ScatterNDUpdate4({}, Context())
    good = [TensorInfo((4, 3), T["f32"]), TensorInfo((2, 1), T["i64"]), TensorInfo((2, 3), T["f32"])]
    assert op.infer(good)[0].shape == (4, 3)
    for inputs, rule in [
        ([good[0], TensorInfo((2, 3), T["i64"]), good[2]], "port.dims"),   # k exceeds data rank
        ([good[0], TensorInfo((2, 1), T["f32"]), good[2]], "port.type"),
        ([good[0], good[1], TensorInfo((2, 4), T["f32"])], "port.dims"),
        ([good[0], good[1], TensorInfo((2, 3), T["f16"])], "port.type"),
        ([good[0], TensorInfo((), T["i64"]), good[2]], "port.rank"),
    ]:
        with pytest.raises(IRError) as info:
            op.infer(inputs)
        assert info.value.rule == rule


# ---------------------------------------------------------------- GatherND

GATHER_CASES = [  # data shape, indices shape (last dim k), batch_dims
    ((5,), (3, 1), 0), ((4, 3), (2, 2), 0), ((4, 3), (5, 1), 0), ((2, 3, 4), (2, 2, 1), 1),
    ((2, 3, 4), (2, 5, 2), 1), ((2, 3, 4, 2), (2, 3, 2, 1), 2), ((2, 3, 4), (6, 3), 0),
    ((2, 3, 4), (2, 0, 1), 1), ((3, 0, 2), (4, 1), 0), ((2, 3, 4), (2, 1, 4, 2, 1), 1),
]


@pytest.mark.parametrize("version", [5, 8])
def test_gather_nd_sweep_against_cpu_plugin(version):
    rng = np.random.default_rng(version)
    factory = opset5.gather_nd if version == 5 else opset8.gather_nd
    cases = []
    for case, (shape, ishape, b) in enumerate(GATHER_CASES):
        dtype = ["float32", "int32", "int64", "float16", "int8", "uint8", "bool"][case % 7]
        index_dtype = (np.int32, np.int64)[case % 2]
        data = values(rng, shape, dtype)
        idx = coordinates(rng, ishape[:-1], shape[b:b + ishape[-1]], index_dtype)
        cases.append((build(lambda p: factory(p["data"], p["indices"], b), {"data": data, "indices": idx}),
                      f"GatherND-{version} {shape} {ishape} b={b} {dtype}", "cpu"))
    check_many(cases)


def test_gather_nd_batch_output_shapes():
    data = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)
    idx = np.zeros((2, 3, 6, 1), np.int64)
    for version, factory, shape in ((5, opset5.gather_nd, (6, 6, 5)), (8, opset8.gather_nd, (2, 3, 6, 5))):
        built = build(lambda p: factory(p["data"], O.constant(idx), 2), {"data": data})
        got = list(run_irrun(built).values())[0]
        assert got.shape == shape, version
        assert_same([got], run_cpu(built)[1], context=str(version))


def test_gather_nd_empty_coordinates_take_whole_slices():
    """indices [..., 0]: each row selects the whole slice after the batch dims (OpenVINO's reference source;
    the pip package has no GatherND evaluate and its CPU plugin returns uninitialised memory here)."""
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    for factory, b, ishape, want in (
            (opset8.gather_nd, 0, (2, 0), np.stack([data, data])),
            (opset8.gather_nd, 1, (2, 0), data),
            (opset8.gather_nd, 2, (2, 3, 0), data),
            (opset5.gather_nd, 2, (2, 3, 0), data.reshape(6, 4))):
        built = build(lambda p: factory(p["d"], p["i"], b), {"d": data, "i": np.zeros(ishape, np.int64)})
        assert_same(run_irrun(built), [want], built.output_names, context=f"{b} {ishape}")


def test_gather_nd_out_of_range_is_an_error():
    data = np.zeros((2, 3), np.float32)
    built = build(lambda p: opset8.gather_nd(p["d"], O.constant(np.array([[0, 3]], np.int64))), {"d": data})
    with pytest.raises(IRError, match="out of range"):
        run_irrun(built)


def test_gather_nd_checker_rules():
    from irrun.ops.gather_scatter_nd import GatherND8
    from irrun.ops.registry import TensorInfo
    from irrun.ir.types import ELEMENT_TYPES as T
    for attrs, inputs, rule in [
        ({"batch_dims": 0}, [TensorInfo((2, 3), T["f32"]), TensorInfo((4, 3), T["i64"])], "port.dims"),
        ({"batch_dims": 2}, [TensorInfo((2, 3), T["f32"]), TensorInfo((2, 3, 1), T["i64"])], "attr.range"),
        ({"batch_dims": 1}, [TensorInfo((2, 3), T["f32"]), TensorInfo((3, 1), T["i64"])], "port.dims"),
        ({"batch_dims": 0}, [TensorInfo((2, 3), T["f32"]), TensorInfo((3, 1), T["f32"])], "port.type"),
    ]:
        with pytest.raises(IRError) as info:
            GatherND8(attrs, None).infer(inputs)
        assert info.value.rule == rule
