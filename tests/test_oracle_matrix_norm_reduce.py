"""irrun vs OpenVINO on MatMul-1, MVN-2/6, NormalizeL2-1, BatchNormInference-1/5, LRN-1, the Reduce* ops and
TopK-1/3/11.

Oracles:
  * MatMul, MVN-6, Reduce*, TopK: OpenVINO's core reference kernels (Node.evaluate), called by `reference()`
    below, which keeps scalar tensors 0-d (oracle.run_reference feeds np.ascontiguousarray, which turns a
    0-d array into shape [1], and TopK then rejects its K). Reference types (measured): Sum/Mean/Prod on
    f16 f32 i32 i64 u32 u64; Max/Min also i8 u8; L1 f16 f32 i32 i64; L2 f16 f32 only; f16 reduces in f32.
  * MVN-2, NormalizeL2, BatchNormInference, LRN have no reference evaluate(): the CPU plugin (f32) is the truth.

Tolerances (atol; f16 outputs add one f16 ulp of the expected value):
  * integer and boolean outputs, ReduceMax/Min, TopK: exact.
  * MatMul f32: data N(0, 1), K products per output: 4e-6 * K + 1e-5.
  * ReduceSum/Mean/L1/L2/Prod f32: OpenVINO sums with compensation, numpy pairwise: 2e-6 * n * max|x| + 1e-6
    (Prod on data in [0.5, 1.5]).
  * MVN, NormalizeL2, BatchNorm, LRN: results are O(1): 2e-5 (f32).
"""
from __future__ import annotations

import math

import numpy as np
import openvino as ov
import pytest
from openvino import opset1, opset2, opset3, opset4, opset5, opset6, opset11

import oracle as O
from oracle import assert_same, build, run_cpu_many, run_irrun

reference = O.run_reference


def axes_const(values, dtype=np.int64):
    """An axes Constant; an empty one needs the explicit constructor."""
    values = np.asarray(values, dtype)
    if values.size == 0:
        return ov.op.Constant(O.ov_type(dtype), ov.Shape([0]), [])
    return O.constant(values)


def describe(d):
    return ", ".join(f"{k}={v}" for k, v in d.items())


def check(built, expected, atol=None, f16=False, context=""):
    assert_same(run_irrun(built, context), expected, built.output_names, atol=atol, f16_ulp=f16, context=context)


def check_cpu(cases, atol):
    """check() each (built, context) case against the CPU plugin, the cases compiled as one model."""
    for (built, context), (_, expected) in zip(cases, run_cpu_many([built for built, _ in cases])):
        check(built, expected, atol, context=context)


def data(rng, shape, dtype, low=-3, high=4):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(max(low, info.min), min(high, info.max), shape).astype(dtype)


# ============================================================================ MatMul

def test_matmul_sweep():
    rng = np.random.default_rng(11)
    for i in range(60):
        dtype = ("f32", "f32", "f16", "i32", "i64")[i % 5]
        ra, rb = int(rng.integers(1, 5)), int(rng.integers(1, 5))
        ta, tb = bool(rng.integers(0, 2)), bool(rng.integers(0, 2))
        m, k, n = (int(v) for v in rng.integers(1, 6, 3))
        batch = [int(v) for v in rng.integers(1, 4, max(ra, rb) - 2)] if max(ra, rb) > 2 else []
        def operand(rank, rows, cols, transpose):
            if rank == 1:
                return [cols if rows is None else rows]
            b = [d if rng.random() < 0.7 else 1 for d in batch[len(batch) - (rank - 2):]]
            return b + ([cols, rows] if transpose else [rows, cols])
        sa = operand(ra, m, k, ta) if ra > 1 else [k]
        sb = operand(rb, k, n, tb) if rb > 1 else [k]
        cfg = dict(a=sa, b=sb, ta=ta, tb=tb, dtype=dtype)
        a, b = data(rng, sa, O.np_dtype(dtype)), data(rng, sb, O.np_dtype(dtype))
        const_b = rng.random() < 0.5
        inputs = {"a": a} if const_b else {"a": a, "b": b}
        built = build(lambda p: opset1.matmul(p["a"], O.constant(b) if const_b else p["b"], ta, tb), inputs)
        atol = None if dtype[0] == "i" else 4e-6 * k + 1e-5
        check(built, reference(built), atol, dtype == "f16", f"matmul {i}: {describe(cfg)}")


def test_matmul_1d_by_1d_is_scalar():
    rng = np.random.default_rng(12)
    a, b = rng.standard_normal(5).astype(np.float32), rng.standard_normal(5).astype(np.float32)
    built = build(lambda p: opset1.matmul(p["a"], p["b"], True, True), {"a": a, "b": b})
    expected = reference(built)
    assert expected[0].shape == ()
    check(built, expected, 1e-5)


def test_matmul_mismatch_rejected():
    import irrun
    from irrun.errors import ShapeError

    built = build(lambda p: opset1.matmul(p["a"], p["b"], False, False),
                  {"a": np.zeros((2, 3), np.float32), "b": np.zeros((3, 4), np.float32)})
    text = built.xml.read_text().replace('shape="3,4"', 'shape="5,4"')
    built.xml.write_text(text)
    with pytest.raises(RuntimeError):
        O.core().read_model(str(built.xml))
    with pytest.raises(ShapeError):
        irrun.load(str(built.xml))


# ============================================================================ Reductions

REDUCE = {
    "reduce_sum": (opset1, ("f32", "f16", "i32", "i64", "u32")),
    "reduce_mean": (opset1, ("f32", "f16", "i32", "i64", "u64")),
    "reduce_prod": (opset1, ("f32", "f16", "i32", "i64")),
    "reduce_max": (opset1, ("f32", "f16", "i32", "i8", "u8", "i64")),
    "reduce_min": (opset1, ("f32", "f16", "i32", "i8", "u8", "i64")),
    "reduce_l1": (opset4, ("f32", "f16", "i32", "i64")),
    "reduce_l2": (opset4, ("f32", "f16")),
}


@pytest.mark.parametrize("name", sorted(REDUCE))
def test_reduce_sweep(name):
    module, types = REDUCE[name]
    rng = np.random.default_rng(20 + sorted(REDUCE).index(name))
    for i in range(24):
        dtype = types[i % len(types)]
        rank = int(rng.integers(1, 5))
        shape = [int(v) for v in rng.integers(1, 5, rank)]
        if rng.random() < 0.1:
            shape[int(rng.integers(0, rank))] = 0  # empty reductions / empty outputs
        naxes = int(rng.integers(0, rank + 1))
        axes = [int(a) for a in rng.choice(rank, naxes, replace=False)]
        axes = [a - rank if rng.random() < 0.4 else a for a in axes]
        keep = bool(rng.integers(0, 2))
        scalar_axis = len(axes) == 1 and rng.random() < 0.5
        axes_value = np.array(axes[0] if scalar_axis else axes, np.int64 if rng.random() < 0.5 else np.int32)
        np_type = O.np_dtype(dtype)
        if name == "reduce_prod" and np_type.kind == "f":
            x = rng.uniform(0.5, 1.5, shape).astype(np_type)
        else:
            x = data(rng, shape, np_type, low=0 if name == "reduce_prod" else -3)
        if np_type.kind == "f" and name in ("reduce_max", "reduce_min") and x.size and rng.random() < 0.5:
            x.flat[rng.integers(0, x.size, max(1, x.size // 3))] = np.nan  # NaN is skipped
        cfg = dict(shape=shape, axes=axes_value.tolist(), keep=keep, dtype=dtype)
        built = build(lambda p: getattr(module, name)(p["x"], axes_const(axes_value, axes_value.dtype), keep),
                      {"x": x})
        n = max(1, math.prod(shape[a] for a in axes))
        scale = float(np.nanmax(np.abs(x.astype(np.float64)), initial=1.0))
        atol = None if np_type.kind != "f" or name in ("reduce_max", "reduce_min") else 2e-6 * n * scale ** 2 + 1e-6
        check(built, reference(built), atol, dtype == "f16", f"{name} {i}: {describe(cfg)}")


def test_reduce_empty_values():
    """Empty reductions: 0 for sum/mean, 1 for prod, f32 lowest for max (so -inf in f16), +inf for min."""
    for dtype in (np.float32, np.float16, np.int32):
        x = np.zeros((2, 0, 3), dtype)
        for name, (module, _) in REDUCE.items():
            if np.dtype(dtype).kind == "i" and name == "reduce_l2":
                continue
            built = build(lambda p: getattr(module, name)(p["x"], O.constant(np.array([1])), False), {"x": x})
            expected = reference(built)
            check(built, expected, context=f"{name} {np.dtype(dtype)}")


def test_reduce_logical():
    rng = np.random.default_rng(30)
    for i in range(10):
        x = rng.random((3, 4, 2)) < 0.5
        axes = np.array([int(a) for a in rng.choice(3, int(rng.integers(1, 4)), replace=False)])
        for factory in (opset1.reduce_logical_and, opset1.reduce_logical_or):
            built = build(lambda p: factory(p["x"], O.constant(axes), bool(i % 2)), {"x": x})
            check(built, reference(built), context=f"{factory.__name__} axes={axes}")


# ============================================================================ TopK

TOPK_TYPES = ("f32", "f16", "i32", "i64")


@pytest.mark.parametrize("version", (1, 3, 11))
def test_topk_sweep(version):
    module = {1: opset1, 3: opset3, 11: opset11}[version]
    rng = np.random.default_rng(40 + version)
    types = TOPK_TYPES  # no TopK version has an i8/u8 reference kernel
    for i in range(40):
        dtype = O.np_dtype(types[i % len(types)])
        rank = int(rng.integers(1, 4))
        shape = [int(v) for v in rng.integers(1, 7, rank)]
        axis = int(rng.integers(-rank, rank))
        k = int(rng.integers(0, shape[axis] + 1))
        mode = ("max", "min")[int(rng.integers(0, 2))]
        sort = ("value", "index", "none")[int(rng.integers(0, 3))]
        index_type = ("i32", "i64")[int(rng.integers(0, 2))]
        ties = rng.random() < 0.6
        x = data(rng, shape, dtype, -2, 2) if ties else data(rng, shape, dtype, -100, 100)
        if dtype.kind == "f" and ties:
            x[(x == 0) & (rng.random(shape) < 0.5)] = -0.0  # 0.0 and -0.0 tie
        cfg = dict(shape=shape, axis=axis, k=k, mode=mode, sort=sort, index_type=index_type, dtype=dtype.name)
        args = (O.constant(np.array(k, (np.int64, np.int32)[i % 2])), axis, mode, sort, index_type)
        if version == 11:
            args = args + (sort != "none" and bool(rng.integers(0, 2)),)  # stable needs a sort
        built = build(lambda p: module.topk(p["x"], *args).outputs(), {"x": x})
        expected = reference(built)
        got = list(run_irrun(built).values())
        context = f"TopK-{version} {i}: {describe(cfg)}"
        if sort == "none":
            # OpenVINO leaves this order to std::nth_element: compare as sets ordered by index.
            def canonical(values, indices):
                order = np.argsort(indices, axis=axis, kind="stable")
                return [np.take_along_axis(values, order, axis), np.take_along_axis(indices, order, axis)]
            got, expected = canonical(*got), canonical(*expected)
        assert_same(got, expected, context=context)


def test_topk_k_larger_than_dim_fails_at_run():
    import irrun
    from irrun.errors import IRError

    # OpenVINO's shape inference gives dim K (7 here); its reference kernel crashes the process on it.
    built = build(lambda p: opset11.topk(p["x"], O.constant(np.array(7, np.int64)), 1, "max", "value").outputs(),
                  {"x": np.zeros((2, 5), np.float32)})
    assert list(built.model.outputs[0].get_shape()) == [2, 7]
    model = irrun.load(str(built.xml))
    assert model.outputs[0].shape == (2, 7)
    with pytest.raises(IRError):
        model.run(built.feed_dict)


# ============================================================================ MVN

def test_mvn6_sweep():
    rng = np.random.default_rng(50)
    cases = []
    for i in range(40):
        dtype = (np.float32, np.float32, np.float16)[i % 3]
        rank = int(rng.integers(1, 5))
        shape = [int(v) for v in rng.integers(1, 6, rank)]
        naxes = int(rng.integers(1, rank + 1))
        axes = [int(a) - (rank if rng.random() < 0.4 else 0) for a in rng.choice(rank, naxes, replace=False)]
        variance, eps_mode = bool(rng.integers(0, 2)), ("inside_sqrt", "outside_sqrt")[int(rng.integers(0, 2))]
        eps = float(rng.choice([1e-9, 1e-5, 1e-2]))
        x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
        cfg = dict(shape=shape, axes=axes, variance=variance, eps=eps, eps_mode=eps_mode, dtype=np.dtype(dtype).name)
        built = build(lambda p: opset6.mvn(p["x"], O.constant(np.array(axes, np.int64)), variance, eps, eps_mode),
                      {"x": x})
        cases.append((built, dtype, f"MVN-6 {i}: {describe(cfg)}"))
    # MVN-6 has no f16 reference kernel: f16 uses the CPU plugin
    cpu = iter(run_cpu_many([built for built, dtype, _ in cases if dtype != np.float32]))
    for built, dtype, context in cases:
        expected = reference(built) if dtype == np.float32 else next(cpu)[1]
        check(built, expected, 2e-5, dtype == np.float16, context)


def test_mvn6_layer_norm_rows():
    """MVN over the last axis of LayerNorm-sized rows (irrun sums rows up to 1024 long by einsum; longer by
    np.mean), data with an offset of 5 to 50 standard deviations, against the reference kernel."""
    rng = np.random.default_rng(52)
    for shape, spread, offset in [((1, 197, 768), 1.0, 0.0), ((1, 56, 56, 40), 0.1, 5.0), ((300, 96), 3.0, 1.0),
                                  ((2, 1024), 0.2, 10.0), ((3, 1500), 1.0, 0.0)]:
        x = (rng.standard_normal(shape) * spread + offset).astype(np.float32)
        built = build(lambda p: opset6.mvn(p["x"], O.constant(np.array([-1], np.int64)), True, 1e-6, "inside_sqrt"),
                      {"x": x})
        check(built, reference(built), 2e-5, context=f"MVN-6 over the last axis of {shape}")


def test_mvn2_sweep():
    rng = np.random.default_rng(51)
    cases = []
    for i in range(12):
        rank = int(rng.integers(3, 6))
        shape = [int(v) for v in rng.integers(1, 5, rank)]
        across, variance = bool(rng.integers(0, 2)), bool(rng.integers(0, 2))
        eps = float(rng.choice([1e-9, 1e-5, 1e-2]))
        x = (rng.standard_normal(shape) * 2 - 1).astype(np.float32)
        built = build(lambda p: opset2.mvn(p["x"], across, variance, eps), {"x": x})
        cases.append((built, f"MVN-2 {i}: shape={shape} across={across} variance={variance} eps={eps}"))
    check_cpu(cases, 2e-5)


# ============================================================================ NormalizeL2, BatchNorm, LRN

def test_normalize_l2_sweep():
    rng = np.random.default_rng(60)
    cases = []
    for i in range(24):
        rank = int(rng.integers(1, 5))
        shape = [int(v) for v in rng.integers(1, 6, rank)]
        naxes = int(rng.integers(0 if i % 6 == 0 else 1, rank + 1))
        axes = [int(a) for a in rng.choice(rank, naxes, replace=False)]
        eps_mode = ("add", "max")[int(rng.integers(0, 2))]
        eps = float(rng.choice([1e-10, 1e-3, 0.5]))
        x = rng.standard_normal(shape).astype(np.float32)
        x[rng.random(shape) < 0.1] = 0
        built = build(lambda p: opset1.normalize_l2(p["x"], axes_const(axes), eps, eps_mode),
                      {"x": x})
        cases.append((built, f"NormalizeL2 {i}: shape={shape} axes={axes} eps={eps} {eps_mode}"))
    check_cpu(cases, 2e-5)


@pytest.mark.parametrize("version", (1, 5))
def test_batch_norm(version):
    rng = np.random.default_rng(70 + version)
    cases = []
    for i in range(8):
        rank = int(rng.integers(2, 6))
        shape = [int(v) for v in rng.integers(1, 5, rank)]
        c = shape[1]
        gamma, beta, mean = (rng.standard_normal(c).astype(np.float32) for _ in range(3))
        var = rng.uniform(0.1, 2, c).astype(np.float32)
        eps = float(rng.choice([1e-5, 1e-3]))
        x = rng.standard_normal(shape).astype(np.float32)
        factory = opset1.batch_norm_inference if version == 1 else opset5.batch_norm_inference
        built = build(lambda p: factory(p["x"], *(O.constant(v) for v in (gamma, beta, mean, var)), eps), {"x": x})
        cases.append((built, f"BatchNormInference-{version} {i}: shape={shape}"))
    check_cpu(cases, 2e-5)


def test_lrn():
    rng = np.random.default_rng(80)
    cases = []
    for i in range(12):
        shape = [int(v) for v in rng.integers(1, 6, 4)]
        axes = [[1], [2, 3]][i % 2]
        size = int(rng.choice([1, 3, 5]))
        # The CPU plugin ignores `bias` (it computes with 1.0; OpenVINO's reference kernel adds bias), so the
        # CPU comparison uses bias 1.
        alpha, beta, bias = float(rng.uniform(1e-4, 1)), float(rng.uniform(0.5, 1)), 1.0
        x = rng.standard_normal(shape).astype(np.float32)
        built = build(lambda p: opset1.lrn(p["x"], O.constant(np.array(axes, np.int64)), alpha, beta, bias, size),
                      {"x": x})
        cases.append((built, f"LRN {i}: shape={shape} axes={axes} size={size} a={alpha} b={beta}"))
    check_cpu(cases, 2e-5)
