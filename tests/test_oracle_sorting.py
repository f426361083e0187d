"""irrun vs OpenVINO on Unique-10, Bucketize-3 and SearchSorted-15.

None of them has a reference evaluate in OpenVINO 2026.4.1, so the oracle is the CPU plugin, compared
bit-exact (they move data or count). Two CPU-plugin faults are pinned instead of followed:
- sorted Unique on NaN breaks (its sort needs a strict weak order); irrun treats every NaN as its own element
  (as the reference's `==` does) and sorts them last;
- Unique with an axis: the CPU plugin can keep two equal slices apart, and gives garbage indices/counts for
  u8 unsorted. Axis cases are checked against `reference_unique`, a plain transcription of the algorithm of
  OpenVINO's reference kernel (src/core/reference/include/openvino/reference/unique.hpp: stable sort of slice
  descriptors, then first occurrences), written here for the test.
"""
from __future__ import annotations

import numpy as np
import pytest
from openvino import opset3, opset10, opset15

import oracle as O
from oracle import assert_cpu_many, assert_same, build, run_cpu, run_cpu_many, run_irrun


def check(make, inputs, context):
    built = build(make, inputs)
    assert_same(run_irrun(built, context), run_cpu(built)[1], built.output_names, context=context)


def sample(rng, shape, dtype, distinct=4):
    """Few distinct values, so there are duplicates; floats include -0.0 next to 0.0."""
    dtype = np.dtype(dtype)
    x = rng.integers(-distinct // 2, distinct // 2 + 1, shape)
    if dtype.kind == "f":
        x = x.astype(dtype) / dtype.type(2)
        x[x == 0] = np.where(rng.integers(0, 2, int((x == 0).sum())), dtype.type(-0.0), dtype.type(0.0))
        return x
    if dtype.kind == "u":
        x = np.abs(x)
    return x.astype(dtype)


UNIQUE_CASES = [((9,), None), ((3, 4), None), ((5, 3), 0), ((3, 5), 1), ((2, 3, 4), -1), ((4, 2, 2), 0),
                ((0,), None), ((3, 0), 0), ((1,), 0), ((), None), ((2, 6), -2), ((7, 1), 1), ((4, 6), None),
                ((2, 2, 3), None), ((12,), None)]


def reference_unique(x, axis, sort):
    """OpenVINO's reference algorithm, one slice at a time (test oracle; NaN-free inputs)."""
    slices = [np.take(x, i, axis=axis).reshape(-1).tolist() for i in range(x.shape[axis])]
    order = sorted(range(len(slices)), key=lambda i: slices[i]) if sort else list(range(len(slices)))
    uniques, counts, inverse = [], [], [0] * len(slices)
    for i in order:
        found = next((u for u, j in enumerate(uniques) if slices[j] == slices[i]), None)
        if found is None:
            uniques.append(i)
            counts.append(1)
            inverse[i] = len(uniques) - 1
        else:
            counts[found] += 1
            inverse[i] = found
    return [np.take(x, uniques, axis=axis), np.array(uniques), np.array(inverse), np.array(counts)]


def unique_model(x, axis, sort, itype, ctype, axis_type=np.int64):
    def make(p):
        args = [p["x"]] + ([O.constant(np.array(axis, axis_type))] if axis is not None else [])
        return opset10.unique(*args, sorted=sort, index_element_type=itype, count_element_type=ctype)
    return build(make, {"x": x})


@pytest.mark.parametrize("sort", [True, False])
def test_unique_sweep(sort):
    rng = np.random.default_rng(int(sort))
    cases, on_cpu = [], []
    for case, (shape, axis) in enumerate(UNIQUE_CASES):
        dtype = ["float32", "int32", "int64", "uint8", "int8", "float16"][case % 6]
        itype, ctype = (("i64", "i32"), ("i32", "i64"))[case % 2]
        x = sample(rng, shape, dtype, distinct=2 if axis is not None else 4)
        built = unique_model(x, axis, sort, itype, ctype, (np.int32, np.int64)[case % 2])
        context = f"Unique sorted={sort} {shape} axis={axis} {dtype}"
        types = [x.dtype, O.np_dtype(itype), O.np_dtype(itype), O.np_dtype(ctype)]
        if axis is not None:
            expected = [e.astype(t) for e, t in zip(reference_unique(x, axis, sort), types)]
        elif x.size == 0:  # the CPU plugin cannot run an empty Unique
            expected = [np.zeros(0, t) for t in types]
        else:
            expected = None
            on_cpu.append(built)
        cases.append((built, context, expected))
    cpu = iter(run_cpu_many(on_cpu))
    for built, context, expected in cases:
        if expected is None:
            _, expected = next(cpu)
        # the CPU plugin may write an equal element of the other zero sign; the reference writes the first
        assert_same(run_irrun(built, context), expected, built.output_names, context=context, zero_sign=False)


def test_unique_keeps_the_first_occurrence_zero_sign():
    x = np.array([1, -0.0, 0.0, 2, 0.0], np.float32)
    built = unique_model(x, None, True, "i64", "i64")
    assert_same(run_irrun(built), [np.array([-0.0, 1, 2], np.float32), np.array([1, 0, 3]), np.array([1, 0, 0, 2, 0]),
                                   np.array([3, 1, 1])], built.output_names)


def test_unique_axis_cpu_plugin_keeps_equal_slices_apart():
    x = np.array([[0, 1, 1, 1, 1], [1, 0, 0, 1, 1], [1, 1, 1, 1, 1]], np.int32)
    built = unique_model(x, 1, True, "i64", "i64")
    want = [x[:, [0, 1, 3]], np.array([0, 1, 3]), np.array([0, 1, 1, 2, 2]), np.array([1, 2, 2])]
    assert_same(run_irrun(built), want, built.output_names)
    cpu = run_cpu(built)[1]
    assert cpu[0].shape == (3, 4) and cpu[3].tolist() == [1, 2, 1, 1]  # columns 3 and 4 kept apart


def test_unique_nan_each_its_own_element_unsorted():
    x = np.array([3, 1, np.nan, 1, -0.0, 0.0, np.nan, 2], np.float32)
    built = build(lambda p: opset10.unique(p["x"], sorted=False), {"x": x})
    got = run_irrun(built)
    assert_same(got, run_cpu(built)[1], built.output_names)
    assert_same(got, [np.array([3, 1, np.nan, -0.0, np.nan, 2], np.float32), np.array([0, 1, 2, 4, 6, 7]),
                      np.array([0, 1, 2, 1, 3, 3, 4, 5]), np.array([1, 2, 1, 2, 1, 1])], built.output_names)


def test_unique_sorted_nan_last():
    x = np.array([np.nan, 2, 1, np.nan], np.float32)
    built = build(lambda p: opset10.unique(p["x"], sorted=True), {"x": x})
    assert_same(run_irrun(built), [np.array([1, 2, np.nan, np.nan], np.float32), np.array([2, 1, 0, 3]),
                                   np.array([2, 1, 0, 3]), np.array([1, 1, 1, 1])], built.output_names)


def test_unique_feeds_a_downstream_op():
    """The unique output's length is known only at run time; the ops after it see the actual shape."""
    from openvino import opset1
    x = np.array([4, 4, 1, 7, 1], np.int32)
    check(lambda p: opset1.multiply(opset10.unique(p["x"]).output(0), O.constant(np.int32(3))), {"x": x}, "chain")


BUCKET_VALUES = np.array([-1, 0, 1, 2, 2.5, 3, 5, np.nan, np.inf, -np.inf, -0.0], np.float32)


@pytest.mark.parametrize("right", [True, False])
def test_bucketize(right):
    rng = np.random.default_rng(int(right))
    cases = [(BUCKET_VALUES, np.array([0, 2, 3], np.float32), "i32"),
             (BUCKET_VALUES, np.array([], np.float32), "i64"),
             (BUCKET_VALUES.reshape(11, 1), np.array([-np.inf, 0, 0, 2, np.inf], np.float32), "i64"),
             (rng.integers(-5, 6, (3, 4)).astype(np.int32), np.array([-2, 0, 0, 3], np.int64), "i64"),
             (rng.integers(-5, 6, (2, 5)).astype(np.int64), np.array([-1.5, 0.5, 2.5], np.float16), "i32"),
             (rng.integers(0, 9, (7,)).astype(np.uint8), np.array([1, 4, 4, 8], np.int32), "i32"),
             (rng.standard_normal((2, 3, 4)).astype(np.float16), np.array([-1, 0, 1], np.float32), "i64"),
             (np.zeros((0, 3), np.float32), np.array([1, 2], np.float32), "i64")]
    assert_cpu_many([(build(lambda p: opset3.bucketize(p["x"], p["b"], otype, right), {"x": x, "b": b}),
                      f"Bucketize right={right} case {i}") for i, (x, b, otype) in enumerate(cases)])


@pytest.mark.parametrize("right", [True, False])
def test_search_sorted(right):
    rng = np.random.default_rng(10 + int(right))
    cases = []
    for seq_shape, val_shape, dtype in [((6,), (9,), np.float32), ((6,), (2, 5), np.int32), ((3, 5), (3, 4), np.float32),
                                        ((2, 3, 4), (2, 3, 6), np.int64), ((4,), (0,), np.float32),
                                        ((2, 1), (2, 3), np.float16), ((1, 8), (1, 8), np.uint8)]:
        seq = np.sort(sample(rng, seq_shape, dtype, 6), axis=-1)
        vals = sample(rng, val_shape, dtype, 8)
        cases.append((seq, vals))
    cases.append((np.array([0, 2, 2, 3], np.float32), np.array([2, -1, np.nan, np.inf, -0.0, 3], np.float32)))
    assert_cpu_many([(build(lambda p: opset15.search_sorted(p["s"], p["v"], right), {"s": seq, "v": vals}),
                      f"SearchSorted right={right} case {i}") for i, (seq, vals) in enumerate(cases)])


def test_search_sorted_i32_output():
    seq = np.array([[0, 1, 1, 5]], np.float32)
    vals = np.array([[1, 6, -3]], np.float32)
    built = build(lambda p: opset15.search_sorted(p["s"], p["v"], True), {"s": seq, "v": vals},
                  patch=lambda t: O.patch_layer(t, "SearchSorted", {"output_type": "i32"}))
    got = run_irrun(built)
    assert_same(got, run_cpu(built)[1], built.output_names)
    assert list(got.values())[0].dtype == np.int32
