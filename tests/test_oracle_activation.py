"""irrun vs OpenVINO on unary math and activation ops: seeded sweeps over types, shapes, attributes.

Oracle: OpenVINO's reference kernels (Node.evaluate). Elu, Gelu-2 and LogSoftmax-5 have none in
2026.4.1: the CPU plugin is their oracle (f32 inference precision), on float inputs.

Tolerances:
  * exact (bit for bit): integer and boolean outputs, and ops exactly rounded in IEEE arithmetic
    (Abs, Negative, Floor, Ceiling, Sign, Relu, Round, Clamp, HSigmoid, HSwish, PRelu);
  * f32 transcendental ops vs the reference (glibc's expf/sinf/... vs NumPy's SIMD kernels; Erf from
    irrun's own series): rtol 2e-6, atol 1e-7 (a few ulp) plus one f16 ulp for f16 outputs;
  * ops vs the CPU plugin, which uses its own approximations: rtol 1e-5, atol 1e-6 (+ f16 ulp).
"""

from __future__ import annotations

import numpy as np
import pytest
from openvino.utils.node_factory import NodeFactory

import oracle as O
from oracle import assert_same, build, run_cpu_many, run_reference
from test_oracle_elementwise import assert_close, run_irrun

FACTORIES = {}


def node(opset, op_type, inputs, attrs=None):
    if opset not in FACTORIES:
        FACTORIES[opset] = NodeFactory(opset)
    return FACTORIES[opset].create(op_type, [i.output(0) for i in inputs], attrs or {})


def float_data(rng, shape, dtype, scale=3.0, special=True):
    a = np.asarray((rng.standard_normal(shape) * scale).astype(dtype))
    if special and a.size:
        m = rng.random(a.shape) < 0.25
        pool = np.array([0.0, -0.0, 0.5, -0.5, 1.5, -2.5, 3.0, -3.0, np.inf, -np.inf, np.nan], dtype)
        a[m] = rng.choice(pool, int(m.sum()))
    return a


def int_data(rng, shape, dtype):
    info = np.iinfo(dtype)
    a = np.asarray(rng.integers(max(info.min, -30), min(info.max, 30), shape, endpoint=True).astype(dtype))
    m = rng.random(a.shape) < 0.15
    a[m] = rng.choice(np.array([info.min, info.max, 0, 1], dtype=dtype), int(m.sum()))
    return a


def data(rng, shape, dtype, **kw):
    dtype = O.np_dtype(dtype)
    return float_data(rng, shape, dtype, **kw) if dtype.kind == "f" else int_data(rng, shape, dtype)


def rand_shape(rng, max_rank=4):
    return [int(v) for v in rng.integers(1, 5, int(rng.integers(1, max_rank + 1)))]


# element types with a reference kernel (2026.4.1), and how close the answer must be
UNARY = {
    # op: (opset, attrs, types, exact_float)
    "Abs": ("opset1", {}, ["f32", "f16", "i32", "u32", "i64", "u64"], True),
    "Negative": ("opset1", {}, ["f32", "f16", "i32", "i64"], True),
    "Floor": ("opset1", {}, ["f32", "f16", "i8", "u8", "i32", "u32", "i64"], True),
    "Ceiling": ("opset1", {}, ["f32", "f16", "i16", "u16", "i32", "i64"], True),
    "Sign": ("opset1", {}, ["f32", "f16", "i32", "u32", "i64"], True),
    "Relu": ("opset1", {}, ["f32", "f16", "i32", "u32", "i64"], True),
    "Sqrt": ("opset1", {}, ["f32", "f16", "f64", "i32", "u32", "i64"], False),
    "Exp": ("opset1", {}, ["f32", "f16", "i32", "u32", "i64"], False),
    "Log": ("opset1", {}, ["f32", "f16", "i32", "u32", "i64"], False),
    "Erf": ("opset1", {}, ["f32", "f16", "i32", "u32", "i64"], False),
    "Sin": ("opset1", {}, ["f32", "f16", "i32", "u32", "i64"], False),
    "Cos": ("opset1", {}, ["f32", "f16", "i32", "u32", "i64"], False),
    "Tanh": ("opset1", {}, ["f32", "f16", "i32", "u32", "i64"], False),
    "Sigmoid": ("opset1", {}, ["f32", "f16", "i32", "u32", "i64"], False),
    "HSwish": ("opset4", {}, ["f32", "f16"], True),
    "HSigmoid": ("opset5", {}, ["f32", "f16"], True),
    "Mish": ("opset4", {}, ["f32", "f16"], False),
    "SoftPlus": ("opset4", {}, ["f32", "f16"], False),
    "Swish": ("opset4", {}, ["f32", "f16"], False),
    "Gelu": ("opset7", {}, ["f32", "f16"], False),
}


def check(built, expected, exact, context, cpu=False):
    got = run_irrun(built, context)
    if exact:
        assert_same(got, expected, built.output_names, context=context)
    elif cpu:
        assert_close(got, expected, built.output_names, rtol=1e-5, atol=1e-6, context=context)
    else:
        assert_close(got, expected, built.output_names, rtol=2e-6, atol=1e-7, context=context)


@pytest.mark.parametrize("op_type", sorted(UNARY))
def test_unary_reference_sweep(op_type):
    opset, attrs, types, exact = UNARY[op_type]
    rng = np.random.default_rng(sum(map(ord, op_type)))
    for case in range(2 * len(types)):
        t = types[case % len(types)]
        x = data(rng, rand_shape(rng), t)
        built = build(lambda p: node(opset, op_type, [p["x"]], attrs), {"x": x})
        check(built, run_reference(built), exact or x.dtype.kind != "f", f"{op_type} case {case}: {t} {x.shape}")


@pytest.mark.parametrize("op_type", ["Sqrt", "Exp", "Log", "Erf", "Sin", "Cos", "Tanh", "Sigmoid"])
@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64])
def test_unary_integer_semantics(op_type, dtype):
    """Integer forms go through double: rounded (Sqrt, Erf, Cos, Tanh) or truncated (Exp, Log, Sin);
    Sigmoid is 1 / (1 + T(exp(-x))) in integers; NaN and overflow give the indefinite value."""
    values = [0, 1, 2, 3, 4, 8, 9, 15, 16, 5, 10, 20, 21, 22, 44, 45, -1, -2, -3, -21, -22, -44]
    info = np.iinfo(dtype)
    values += [info.min, info.max, info.max - 1, info.min + 1]
    if dtype == np.int64:
        values += [2**53 + 1, -(2**53) - 1]
    x = np.array([v for v in values if info.min <= v <= info.max], dtype)
    built = build(lambda p: node("opset1", op_type, [p["x"]]), {"x": x})
    assert_same(run_irrun(built), run_reference(built), built.output_names, context=f"{op_type} {x.dtype}")


def test_round_modes():
    rng = np.random.default_rng(21)
    ties = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.49999997, -0.4, 0.0, -0.0, np.nan,
                     np.inf, -np.inf, 8388607.5, 1e30, 3.5000002], np.float32)
    for mode in ("half_to_even", "half_away_from_zero", "HALF_AWAY_FROM_ZERO"):
        for t in ("f32", "f16", "i32", "u8", "boolean"):
            if t == "f32":
                x = ties
            elif t == "boolean":
                x = rng.random(7) < 0.5
            else:
                x = data(rng, (3, 5), t, scale=4)
                if t == "f16":
                    x[0, :5] = np.array([0.5, 1.5, 2.5, -0.5, -2.5], np.float16)

            def make(p, mode=mode):
                return node("opset5", "Round", [p["x"]], {"mode": mode.lower()})

            built = build(make, {"x": x}, patch=lambda s, m=mode: O.patch_layer(s, "Round", {"mode": m}))
            assert_same(run_irrun(built), run_reference(built), built.output_names, context=f"Round {mode} {t}")


def test_clamp_sweep():
    rng = np.random.default_rng(22)
    bounds = [(-1.5, 1.5), (-1.4, 0.6), (1.5, 1.7), (-2.5, -2.5), (0.2, 0.3), (-1e10, 1e10), (0.0, 6.0),
              (-np.inf, 0.45), (-300.0, 300.0), (1.0, 1.0)]
    for case, (lo, hi) in enumerate(bounds * 2):
        t = ("f32", "f16", "i32", "u8", "i64", "i8", "u32", "f32")[case % 8]
        x = data(rng, rand_shape(rng), t)
        attrs = {"min": lo, "max": hi}
        built = build(lambda p: node("opset1", "Clamp", [p["x"]], attrs), {"x": x})
        assert_same(run_irrun(built), run_reference(built), built.output_names,
                    context=f"Clamp case {case}: {t} [{lo}, {hi}]")


def test_clamp_min_above_max_rejected(tmp_path):
    import irrun
    from irbuild import IRBuilder
    from irrun.errors import IRError

    b = IRBuilder()
    p = b.parameter([3], "f32", name="x")
    layer = b.op("Clamp", "opset1", [(p, 0)], {"min": "2", "max": "1"}, [([3], "f32")])
    b.result((layer, 0))
    xml = b.save(tmp_path)
    with pytest.raises(RuntimeError):
        O.core().read_model(str(xml))
    with pytest.raises(IRError):
        irrun.load(str(xml))


@pytest.mark.parametrize("mode", ["erf", "tanh"])
def test_gelu7_modes(mode):
    rng = np.random.default_rng(23)
    for case in range(6):
        t = ("f32", "f16")[case % 2]
        x = data(rng, rand_shape(rng), t, scale=4)
        built = build(lambda p: node("opset7", "Gelu", [p["x"]], {"approximation_mode": mode}), {"x": x})
        check(built, run_reference(built), False, f"Gelu-7 {mode} case {case}: {t}")


def test_swish_beta_input():
    rng = np.random.default_rng(24)
    for case in range(6):
        t = ("f32", "f16")[case % 2]
        x = data(rng, rand_shape(rng), t)
        beta = np.asarray(O.np_dtype(t).type(rng.uniform(-2, 3)))
        # the oracle turns a 0-d feed into [1], which Swish rejects: beta is a Constant here
        built = build(lambda p, beta=beta: node("opset4", "Swish", [p["x"], O.constant(beta)]), {"x": x})
        check(built, run_reference(built), False, f"Swish case {case}: {t} beta={beta}")


def test_prelu_slopes():
    """A 1-D slope of the channel length runs along axis 1 (axis 0 for 1-D data); other slopes
    broadcast numpy-style onto the data."""
    rng = np.random.default_rng(25)
    cases = [([2, 3, 4], [3]), ([2, 3, 4], [4]), ([2, 4, 4], [4]), ([2, 3, 4], [1, 2, 3, 4]), ([2, 3], [3]),
             ([2, 3, 4], [2, 1, 1]), ([3], [3]), ([2, 3, 4], [3, 1]), ([2, 3, 4], [1]), ([2, 3], [2, 1]),
             ([2, 3, 3], [3]), ([1, 3, 2, 2], [3, 1, 1]), ([2, 5, 3, 2], [5])]
    for case, (sx, ss) in enumerate(cases * 2):
        t = ("f32", "f16", "i8")[case % 3]
        x, slope = data(rng, sx, t), data(rng, ss, t)
        built = build(lambda p: node("opset1", "PRelu", [p["x"], p["s"]]), {"x": x, "s": slope})
        assert_same(run_irrun(built), run_reference(built), built.output_names, context=f"PRelu {t} {sx} {ss}")


def test_prelu_bad_slope_rejected():
    """OpenVINO loads a slope that does not broadcast and then reads out of bounds; irrun rejects it."""
    from irrun.errors import ShapeError
    from irrun.ir.types import ELEMENT_TYPES
    from irrun.ops.activation import PRelu
    from irrun.ops.registry import TensorInfo

    f32 = ELEMENT_TYPES["f32"]
    with pytest.raises(ShapeError):
        PRelu({}, None).infer([TensorInfo((2, 3, 4), f32), TensorInfo((5,), f32)])
    with pytest.raises(ShapeError):
        PRelu({}, None).infer([TensorInfo((2, 3), f32), TensorInfo((2,), f32)])
    assert PRelu({}, None).infer([TensorInfo((2, None, 4), f32), TensorInfo((3,), f32)])[0].shape == (2, None, 4)


@pytest.mark.parametrize("opset", ["opset1", "opset8"])
def test_softmax_axes(opset):
    rng = np.random.default_rng(26)
    for case in range(12):
        shape = rand_shape(rng)
        rank = len(shape)
        axis = int(rng.integers(-rank if opset == "opset8" else 0, rank))
        t = ("f32", "f16", "f64")[case % 3]
        x = data(rng, shape, t, special=case % 4 == 0)
        built = build(lambda p: node(opset, "Softmax", [p["x"]], {"axis": axis}), {"x": x})
        check(built, run_reference(built), False, f"Softmax {opset} case {case}: {t} {shape} axis {axis}")


@pytest.mark.parametrize("opset,axis,rank,ok", [
    ("opset1", -1, 2, False), ("opset1", 2, 2, False), ("opset1", 1, 2, True),
    ("opset8", -1, 2, True), ("opset8", -3, 2, False), ("opset8", 2, 2, False), ("opset8", 0, 0, True),
])
def test_softmax_axis_validation(opset, axis, rank, ok, tmp_path):
    import irrun
    from irbuild import IRBuilder
    from irrun.errors import IRError

    shape = [2, 3][:rank]
    b = IRBuilder()
    p = b.parameter(shape, "f32", name="x")
    layer = b.op("SoftMax", opset, [(p, 0)], {"axis": str(axis)}, [(shape, "f32")])
    b.result((layer, 0))
    xml = b.save(tmp_path)
    if ok:
        O.core().read_model(str(xml))
        irrun.load(str(xml))
    else:
        with pytest.raises(RuntimeError):
            O.core().read_model(str(xml))
        with pytest.raises(IRError):
            irrun.load(str(xml))


def test_cpu_only_ops():
    """Elu, Gelu-2 and LogSoftmax-5 have no reference kernel: the CPU plugin is the oracle."""
    rng = np.random.default_rng(27)
    cases = []
    for case in range(18):
        t = ("f32", "f16")[case % 2]
        shape = rand_shape(rng)
        x = data(rng, shape, t, special=False)
        kind = case % 3
        if kind == 0:
            alpha = float(rng.choice([0.5, 1.0, 2.0, 0.1]))
            make = lambda p, alpha=alpha: node("opset1", "Elu", [p["x"]], {"alpha": alpha})  # noqa: E731
            what = f"Elu alpha={alpha}"
        elif kind == 1:
            make = lambda p: node("opset2", "Gelu", [p["x"]])  # noqa: E731
            what = "Gelu-2"
        else:
            axis = int(rng.integers(-len(shape), len(shape)))
            make = lambda p, axis=axis: node("opset5", "LogSoftmax", [p["x"]], {"axis": axis})  # noqa: E731
            what = f"LogSoftmax axis={axis}"
        cases.append((build(make, {"x": x}), f"{what} case {case}: {t} {shape}"))
    for (built, context), (_, expected) in zip(cases, run_cpu_many([built for built, _ in cases])):
        check(built, expected, False, context, cpu=True)


@pytest.mark.parametrize("op_type,opset,dtype", [
    ("Gelu", "opset7", "i32"), ("Swish", "opset4", "i32"), ("Mish", "opset4", "i32"),
    ("SoftPlus", "opset4", "i32"), ("Relu", "opset1", "boolean"), ("Exp", "opset1", "boolean"),
    ("Clamp", "opset1", "boolean"),
])
def test_type_validation(op_type, opset, dtype, tmp_path):
    import irrun
    from irbuild import IRBuilder
    from irrun.errors import IRError

    b = IRBuilder()
    p = b.parameter([3], dtype, name="x")
    attrs = {"min": "0", "max": "1"} if op_type == "Clamp" else {}
    layer = b.op(op_type, opset, [(p, 0)], attrs, [([3], dtype)])
    b.result((layer, 0))
    xml = b.save(tmp_path)
    with pytest.raises(RuntimeError):
        O.core().read_model(str(xml))
    with pytest.raises(IRError):
        irrun.load(str(xml))
