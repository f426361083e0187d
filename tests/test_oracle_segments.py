"""irrun vs OpenVINO on SliceScatter-15, SegmentMax-16 and SparseFillEmptyRows-16.

None has a reference evaluate in OpenVINO 2026.4.1; the oracle is the CPU plugin, compared bit-exact (data
movement and max). SparseFillEmptyRows entries outside dense_shape follow OpenVINO's reference source (kept,
sorted in) where the CPU plugin drops them; that difference is pinned below.
"""
from __future__ import annotations

import numpy as np
import pytest
from openvino import opset15
import openvino.opset16 as opset16

import oracle as O
from oracle import assert_cpu_many, assert_same, build, run_cpu, run_irrun

from irrun.errors import IRError


SLICES = [  # data shape, start, stop, step, axes
    ((3, 4), [-1], [-4], [-2], [1]), ((5,), [1], [100], [2], None), ((2, 3, 4), [0, 3], [2, -5], [1, -1], [0, 2]),
    ((4, 4), [10], [-10], [-1], [0]), ((3, 5), [1, 0], [1, 5], [1, 2], None), ((2, 6), [-100], [100], [3], [-1]),
    ((0, 3), [0], [2], [1], [1]),
]


def test_slice_scatter_sweep():
    rng = np.random.default_rng(15)
    cases = []
    for case, (shape, start, stop, step, axes) in enumerate(SLICES):
        dtype = ["float32", "int32", "int64", "float16", "uint8", "bool", "int8"][case % 7]
        data = rng.integers(0, 9, shape).astype(dtype)
        region = np.empty(shape)[tuple(slice(None) for _ in shape)]
        index = [slice(None)] * len(shape)
        for k, a in enumerate(axes if axes is not None else range(len(start))):
            index[a] = slice(start[k], stop[k], step[k])
        updates = (rng.integers(10, 20, region[tuple(index)].shape)).astype(dtype)
        itype = (np.int32, np.int64)[case % 2]
        consts = [O.constant(np.array(v, itype)) for v in (start, stop, step)]
        axes_const = [O.constant(np.array(axes, itype))] if axes is not None else []
        cases.append((build(lambda p: opset15.slice_scatter(p["d"], p["u"], *consts, *axes_const),
                            {"d": data, "u": updates}), f"SliceScatter case {case} {dtype}"))
    assert_cpu_many(cases)


def test_slice_scatter_refuses_a_wrong_updates_shape():
    from irrun.ir.types import ELEMENT_TYPES as T
    from irrun.ops.gather_scatter_nd import SliceScatter15
    from irrun.ops.registry import Context, TensorInfo
    const = lambda v: TensorInfo((1,), T["i64"], np.array(v))  # noqa: E731
    infos = [TensorInfo((3, 4), T["f32"]), TensorInfo((3, 3), T["f32"]), const([0]), const([4]), const([2]), const([1])]
    with pytest.raises(IRError) as info:
        SliceScatter15({}, Context()).infer(infos)
    assert info.value.rule == "port.dims"


@pytest.mark.parametrize("mode", ["ZERO", "LOWEST"])
def test_segment_max(mode):
    rng = np.random.default_rng(len(mode))
    specials = np.array([np.nan, -np.inf, np.inf, 0.0, -0.0, 1.5, -2.0], np.float32)
    cases = []
    for case, (shape, ids, count, dtype) in enumerate([
            ((6, 3), [0, 0, 1, 3, 3, 3], 5, np.float32), ((6,), [0, 0, 0, 2, 2, 4], None, np.float32),
            ((4, 2, 2), [1, 1, 2, 2], 2, np.int32), ((5,), [0, 1, 1, 1, 7], 3, np.int32),
            ((3, 2), [0, 0, 0], None, np.float16), ((4,), [0, 2, 2, 3], 4, np.uint8),
            ((8, 2), [0, 0, 0, 0, 1, 1, 1, 1], None, np.float32), ((3,), [0, 1, 2], 0, np.int8)]):
        if dtype == np.float32:
            data = rng.choice(specials, shape)
        else:
            data = rng.integers(0, 100, shape).astype(dtype)
        ids_const = O.constant(np.array(ids, (np.int32, np.int64)[case % 2]))
        count_const = O.constant(np.array(count, np.int64)) if count is not None else None
        cases.append((build(lambda p: opset16.segment_max(p["d"], ids_const, count_const, mode), {"d": data}),
                      f"SegmentMax {mode} case {case}"))
    assert_cpu_many(cases)


def test_segment_max_i64_lowest_cpu_plugin_narrows():
    """An empty i64 segment gets INT64_MIN; the CPU plugin computes i64 in i32 and gives INT32_MIN."""
    built = build(lambda p: opset16.segment_max(p["d"], O.constant(np.array([0, 0])), O.constant(np.int64(2)),
                                                "LOWEST"), {"d": np.array([5, -3], np.int64)})
    assert_same(run_irrun(built), [np.array([5, np.iinfo(np.int64).min])], built.output_names)
    assert run_cpu(built)[1][0].tolist() == [5, np.iinfo(np.int32).min]


def test_segment_max_empty_data():
    built = build(lambda p: opset16.segment_max(p["d"], p["i"], O.constant(np.int64(2)), "LOWEST"),
                  {"d": np.zeros((0, 3), np.float32), "i": np.zeros(0, np.int64)})
    low = np.finfo(np.float32).min
    assert_same(run_irrun(built), [np.full((2, 3), low, np.float32)], built.output_names)


def test_segment_max_hand_values():
    """NaN and -inf never win; a segment of only those gives the lowest value; the first of equal zeros stays."""
    data = np.array([[np.nan, -0.0], [np.nan, 0.0], [-np.inf, 0.0], [3, -0.0]], np.float32)
    built = build(lambda p: opset16.segment_max(p["d"], O.constant(np.array([0, 0, 1, 1])), None, "ZERO"),
                  {"d": data})
    want = np.array([[np.finfo(np.float32).min, -0.0], [3, 0.0]], np.float32)
    assert_same(run_irrun(built), [want], built.output_names)
    assert_same(run_cpu(built)[1], [want], built.output_names)


def test_sparse_fill_empty_rows():
    rng = np.random.default_rng(16)
    cases = [([5, 3], [[3, 1], [0, 0], [3, 0], [1, 2]], np.float32), ([4, 4], [[0, 1], [0, 0], [2, 3]], np.int32),
             ([3, 2], [], np.float32), ([2, 5], [[0, 4], [1, 0], [1, 3]], np.int64), ([6, 1], [[5, 0]], np.float16)]
    checks = []
    for case, (dense, idx, dtype) in enumerate(cases):
        itype = (np.int64, np.int32)[case % 2]
        idx = np.array(idx, itype).reshape(-1, 2)
        values = rng.integers(1, 50, idx.shape[0]).astype(dtype)
        checks.append((build(lambda p: opset16.sparse_fill_empty_rows(p["v"], p["s"], p["i"],
                                                                      O.constant(np.array(-7, dtype))),
                             {"v": values, "s": np.array(dense, itype), "i": idx}), f"SparseFillEmptyRows case {case}"))
    assert_cpu_many(checks)


def test_sparse_fill_empty_rows_out_of_range_entries_are_kept():
    values = np.array([1.0, 2.0], np.float32)
    idx = np.array([[5, 0], [0, 1]], np.int64)
    built = build(lambda p: opset16.sparse_fill_empty_rows(p["v"], O.constant(np.array([2, 3])), p["i"],
                                                           O.constant(np.float32(-7))), {"v": values, "i": idx})
    want = [np.array([[0, 1], [1, 0], [5, 0]]), np.array([2, -7, 1], np.float32), np.array([False, True])]
    assert_same(run_irrun(built), want, built.output_names)
    cpu = run_cpu(built)[1]
    assert cpu[0].tolist() == [[0, 1], [1, 0]]  # the CPU plugin drops the entry of row 5


def test_sparse_fill_empty_rows_no_rows():
    built = build(lambda p: opset16.sparse_fill_empty_rows(p["v"], O.constant(np.array([0, 3])), p["i"],
                                                           O.constant(np.float32(-7))),
                  {"v": np.zeros(0, np.float32), "i": np.zeros((0, 2), np.int64)})
    want = [np.zeros((0, 2), np.int64), np.zeros(0, np.float32), np.zeros(0, bool)]
    assert_same(run_irrun(built), want, built.output_names)
