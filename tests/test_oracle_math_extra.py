"""irrun vs OpenVINO on the extra unary math ops (Tan, Asin, Acos, Atan, Sinh, Cosh, Asinh, Acosh, Atanh,
SoftSign, ErfInv, Selu, IsNaN, IsInf, IsFinite) and the bitwise ops (BitwiseAnd/Or/Xor/Not,
BitwiseLeftShift/RightShift): seeded sweeps over types, shapes, broadcasting and attributes.

Oracles (OpenVINO 2026.4.1, measured):
  * reference kernels (Node.evaluate): the trig/hyperbolic ops on f32, f16, i32, u32, i64, u64; SoftSign on
    f32 and f64; the shifts on i32 only;
  * the CPU plugin (f32 inference precision) for everything else: ErfInv, Selu, IsNaN/IsInf/IsFinite,
    BitwiseAnd/Or/Xor/Not, SoftSign f16, the shifts on other types. The CPU plugin narrows i64, u64 and
    u32 to i32 inside: those types are only fed values (and shift counts) where that cannot matter.

Tolerances:
  * exact: integer and boolean outputs; SoftSign (x / (1 + |x|) is exactly rounded in f32/f64, and the
    CPU's f32 result rounds once to f16);
  * trig vs the reference (glibc tanf/asinf/... against irrun's double computation rounded to f32):
    rtol 2e-6, atol 1e-7, plus one f16 ulp for f16 outputs;
  * Selu vs the CPU plugin (its own exp): rtol 1e-5, atol 1e-6 (+ f16 ulp);
  * ErfInv vs the CPU plugin: rtol 2e-4, atol 1e-6 (+ f16 ulp). irrun implements OpenVINO's reference
    (Giles' rational approximation evaluated in double); the CPU plugin's version of it is measured to
    differ by up to 1.04e-4 relative.
"""

from __future__ import annotations

import numpy as np
import oracle as O
import pytest
from oracle import assert_same, build, run_cpu, run_cpu_many, run_reference
from test_oracle_activation import data, node, rand_shape
from test_oracle_elementwise import assert_close, gen, run_irrun, shapes_for

TRIG = {
    # op: (opset, input range for floats)
    "Tan": ("opset1", 4.0),
    "Asin": ("opset1", 1.2),
    "Acos": ("opset1", 1.2),
    "Atan": ("opset1", 6.0),
    "Sinh": ("opset1", 4.0),
    "Cosh": ("opset1", 4.0),
    "Asinh": ("opset4", 6.0),
    "Acosh": ("opset4", 6.0),
    "Atanh": ("opset4", 1.2),
}
REF_TYPES = ["f32", "f16", "i32", "u32", "i64", "u64"]
SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, np.inf, -np.inf, np.nan]


def float_input(rng, shape, dtype, scale):
    a = np.asarray(rng.uniform(-scale, scale, shape).astype(dtype))
    m = rng.random(a.shape) < 0.2
    a[m] = rng.choice(np.array(SPECIAL, dtype), int(m.sum()))
    return a


def unary(opset, op_type, attrs=None):
    return lambda p: node(opset, op_type, [p["x"]], attrs)


def cpu_outputs(cases):
    """The CPU plugin's outputs for each (built, ...) case, the cases compiled as one model."""
    return [outputs for _, outputs in run_cpu_many([built for built, *_ in cases])]


@pytest.mark.parametrize("op_type", sorted(TRIG))
def test_trig_reference_sweep(op_type):
    opset, scale = TRIG[op_type]
    rng = np.random.default_rng(sum(map(ord, op_type)) + 1000)
    for case in range(2 * len(REF_TYPES)):
        t = REF_TYPES[case % len(REF_TYPES)]
        shape = rand_shape(rng)
        dtype = O.np_dtype(t)
        x = float_input(rng, shape, dtype, scale) if dtype.kind == "f" else data(rng, shape, t)
        built = build(unary(opset, op_type), {"x": x})
        context = f"{op_type} case {case}: {t} {x.shape}"
        expected = run_reference(built)
        if dtype.kind == "f":
            assert_close(run_irrun(built, context), expected, built.output_names, rtol=2e-6, atol=1e-7,
                         context=context)
        else:
            assert_same(run_irrun(built, context), expected, built.output_names, context=context)


@pytest.mark.parametrize("op_type", sorted(TRIG))
@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64])
def test_trig_integer_semantics(op_type, dtype):
    """Integers go through double: rounded half away from zero (Tan, Acos, Atan, Sinh, Cosh, Asinh,
    Acosh) or truncated (Asin); NaN and overflow give the x86 'indefinite' value; Atanh gives the
    type's max / min / 0 by the sign of x."""
    values = [0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 13, 14, 20, 21, 22, 30, 40, 50, 100, 1000,
              -1, -2, -3, -4, -5, -7, -11, -14, -21, -22, -30, -50, -1000]
    info = np.iinfo(dtype)
    values += [info.min, info.max, info.max - 1, info.min + 1]
    if dtype == np.int64:
        values += [2**53 + 1, -(2**53) - 1]
    x = np.array([v for v in values if info.min <= v <= info.max], dtype)
    built = build(unary(TRIG[op_type][0], op_type), {"x": x})
    assert_same(run_irrun(built), run_reference(built), built.output_names, context=f"{op_type} {x.dtype}")


def test_softsign():
    """x / (1 + |x|): reference on f32 and f64, CPU plugin on f16; exact."""
    rng = np.random.default_rng(31)
    cases = []
    for case in range(9):
        t = ("f32", "f64", "f16")[case % 3]
        x = data(rng, rand_shape(rng), t, scale=5)
        if case == 0:
            x.flat[:4] = [1e38, -3e38, 1e-40, 8388607.5][: x.size]
        cases.append((build(unary("opset9", "SoftSign"), {"x": x}), case, t))
    cpu = iter(cpu_outputs([c for c in cases if c[2] == "f16"]))
    for built, case, t in cases:
        expected = next(cpu) if t == "f16" else run_reference(built)
        assert_same(run_irrun(built), expected, built.output_names, context=f"SoftSign case {case}: {t}")


def test_erfinv_vs_cpu():
    rng = np.random.default_rng(32)
    cases = []
    for case in range(8):
        t = ("f32", "f16", "f32", "f64")[case % 4]
        dtype = O.np_dtype(t)
        shape = rand_shape(rng)
        x = np.asarray(rng.uniform(-1.0, 1.0, shape).astype(dtype))
        m = rng.random(x.shape) < 0.2
        pool = [0.0, 0.5, -0.9, 0.999, -0.9999, 1.5, -2.0, np.nan, np.inf, -np.inf, 1e-30, -1e-6]
        if t != "f64":  # the CPU plugin computes f64 in f32 and gives +-FLT_MAX for +-1
            pool += [1.0, -1.0]
        x[m] = rng.choice(np.array(pool, dtype), int(m.sum()))
        cases.append((build(unary("opset17", "ErfInv"), {"x": x}), f"ErfInv case {case}: {t} {shape}"))
    for (built, context), expected in zip(cases, cpu_outputs(cases)):
        assert_close(run_irrun(built, context), expected, built.output_names, rtol=2e-4, atol=1e-6,
                     context=context)


def test_erfinv_reference_special_values():
    """The reference's special cases (the CPU plugin agrees except that it keeps the sign of -0)."""
    x = np.array([0.0, -0.0, 1.0, -1.0, 1.0000001, -1.5, np.inf, -np.inf, np.nan], np.float32)
    built = build(unary("opset17", "ErfInv"), {"x": x})
    got = run_irrun(built)[built.output_names[0]]
    with np.errstate(invalid="ignore"):
        assert got.tolist()[:4] == [0.0, 0.0, np.inf, -np.inf] and not np.signbit(got[:2]).any()
    assert np.isnan(got[4:]).all()
    assert_same(run_irrun(built), run_cpu(built)[1], built.output_names, zero_sign=False, context="ErfInv specials")


def test_selu_vs_cpu():
    """lambda * x for x > 0, else alpha * lambda * (exp(x) - 1); alpha and lambda of one element, or longer
    (the CPU plugin reads their first element)."""
    rng = np.random.default_rng(33)
    cases = []
    for case in range(12):
        t = ("f32", "f16", "f64")[case % 3]
        dtype = O.np_dtype(t)
        x = data(rng, rand_shape(rng), t, scale=3, special=t != "f64")
        shape_a = [(), (1,), (3,), (1, 1)][case % 4]
        shape_l = [(), (1,), (1,), (2,)][(case // 2) % 4]
        alpha = np.asarray(rng.uniform(0.2, 2.5, shape_a).astype(dtype))
        lam = np.asarray(rng.uniform(0.5, 1.5, shape_l).astype(dtype))

        def make(p, alpha=alpha, lam=lam):
            return node("opset1", "Selu", [p["x"], O.constant(alpha), O.constant(lam)])

        cases.append((build(make, {"x": x}), f"Selu case {case}: {t} {x.shape} alpha {alpha} lambda {lam}"))
    for (built, context), expected in zip(cases, cpu_outputs(cases)):
        assert_close(run_irrun(built, context), expected, built.output_names, rtol=1e-5, atol=1e-6,
                     context=context)


@pytest.mark.parametrize("op_type,attrs", [
    ("IsNaN", {}), ("IsFinite", {}), ("IsInf", {}),
    ("IsInf", {"detect_negative": False}), ("IsInf", {"detect_positive": False}),
    ("IsInf", {"detect_negative": False, "detect_positive": False}),
])
def test_float_classification(op_type, attrs):
    rng = np.random.default_rng(34 + len(attrs))
    cases = []
    for case in range(6):
        t = ("f32", "f16", "f64")[case % 3]
        x = data(rng, rand_shape(rng), t, special=t != "f64")
        if t == "f64":  # the CPU plugin turns f64 +-inf (and |x| > FLT_MAX) into +-FLT_MAX
            x.flat[0] = np.nan
        else:
            x.flat[: min(x.size, 3)] = [np.nan, np.inf, -np.inf][: min(x.size, 3)]
        if t == "f16":
            x.flat[-1] = 65504.0
        cases.append((build(unary("opset10", op_type, attrs), {"x": x}), t))
    for (built, t), expected in zip(cases, cpu_outputs(cases)):
        assert_same(run_irrun(built), expected, built.output_names, context=f"{op_type} {attrs} {t}")


# --------------------------------------------------------------------------- bitwise

BITWISE_TYPES = ["boolean", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"]


def narrow_safe(rng, shape, t):
    """Values the CPU plugin's i32 narrowing keeps intact (u32/i64/u64 within [0 or -2**31, 2**31))."""
    dtype = O.np_dtype(t)
    if t in ("u32", "u64"):
        return np.asarray(rng.integers(0, 2**31, shape, dtype=np.int64).astype(dtype))
    if t == "i64":
        return np.asarray(rng.integers(-(2**31), 2**31, shape, dtype=np.int64))
    return gen(rng, shape, dtype)


@pytest.mark.parametrize("op_type", ["BitwiseAnd", "BitwiseOr", "BitwiseXor"])
def test_bitwise_binary_vs_cpu(op_type):
    rng = np.random.default_rng(sum(map(ord, op_type)))
    cases = []
    for case in range(18):
        t = BITWISE_TYPES[case % len(BITWISE_TYPES)]
        mode = ("numpy", "none", "numpy")[case % 3]
        sa, sb, _ = shapes_for(rng, mode)
        a, b = narrow_safe(rng, sa, t), narrow_safe(rng, sb, t)
        built = build(lambda p, mode=mode: node("opset13", op_type, [p["a"], p["b"]], {"auto_broadcast": mode}),
                      {"a": a, "b": b})
        cases.append((built, f"{op_type} case {case}: {t} {sa} {sb} {mode}"))
    for (built, context), expected in zip(cases, cpu_outputs(cases)):
        assert_same(run_irrun(built), expected, built.output_names, context=context)


def test_bitwise_not_vs_cpu():
    rng = np.random.default_rng(35)
    cases = [(build(lambda p: node("opset13", "BitwiseNot", [p["x"]]), {"x": narrow_safe(rng, rand_shape(rng), t)}),
              f"BitwiseNot {case}: {t}") for case, t in enumerate(BITWISE_TYPES * 2)]
    for (built, context), expected in zip(cases, cpu_outputs(cases)):
        assert_same(run_irrun(built), expected, built.output_names, context=context)


SHIFT_COUNTS = [0, 1, 3, 7, 8, 9, 15, 16, 17, 30, 31, 32, 33, 63, 64, 65, 100, -1, -2, -31, -32, -33, -100]


def shift_case(rng, t, n=40):
    dtype = O.np_dtype(t)
    info = np.iinfo(dtype)
    counts = np.array([c % (info.max + 1) if info.min == 0 and c < 0 else c for c in SHIFT_COUNTS
                       if info.min <= c <= info.max or info.min == 0], dtype=np.int64)
    counts = np.concatenate([counts, [info.max, info.max - 1]] if info.max < 2**31 else [counts])
    b = rng.choice(counts, n).astype(dtype)
    a = gen(rng, (n,), dtype)
    return a, b


@pytest.mark.parametrize("op_type", ["BitwiseLeftShift", "BitwiseRightShift"])
def test_shift_i32_reference(op_type):
    """i32 has a reference kernel: counts are taken modulo 32 (negative ones too), like x86 SHL/SAR."""
    rng = np.random.default_rng(36)
    cases = []
    for case in range(4):
        a, b = shift_case(rng, "i32")
        a[:4] = [5, -5, 2**31 - 1, -(2**31)]
        if case % 2:
            a, b = a[:1].reshape(()), b.reshape(4, 10)
        cases.append((build(lambda p: node("opset15", op_type, [p["a"], p["b"]]), {"a": a, "b": b}), case))
    for (built, case), cpu in zip(cases, cpu_outputs(cases)):
        expected = run_reference(built)
        assert_same(run_irrun(built), expected, built.output_names, context=f"{op_type} i32 case {case}")
        assert_same(cpu, expected, built.output_names, context=f"{op_type} i32 CPU", who="CPU")


@pytest.mark.parametrize("op_type", ["BitwiseLeftShift", "BitwiseRightShift"])
@pytest.mark.parametrize("t", ["i8", "u8", "i16", "u16", "u32"])
def test_shift_narrow_types_vs_cpu(op_type, t):
    """Types up to 32 bits: promoted to int, count modulo 32, truncated back to the type."""
    rng = np.random.default_rng(37)
    cases = []
    for case in range(3):
        a, b = shift_case(rng, t)
        if t == "u32" and op_type == "BitwiseRightShift":  # the CPU plugin shifts u32 as i32
            a = a & np.uint32(2**31 - 1)
        sb = [[40], [4, 10], [2, 1, 20]][case]
        a = a.reshape(sb) if case < 2 else a[:2].reshape(2, 1, 1)
        b = b.reshape(sb) if case < 2 else b[:20].reshape(1, 1, 20)
        cases.append((build(lambda p: node("opset15", op_type, [p["a"], p["b"]]), {"a": a, "b": b}), case))
    for (built, case), expected in zip(cases, cpu_outputs(cases)):
        assert_same(run_irrun(built), expected, built.output_names, context=f"{op_type} {t} case {case}")


@pytest.mark.parametrize("op_type", ["BitwiseLeftShift", "BitwiseRightShift"])
@pytest.mark.parametrize("t", ["i64", "u64"])
def test_shift_wide_types_vs_cpu(op_type, t):
    """64-bit types: the CPU plugin computes in i32, so only cases where that agrees with the 64-bit
    reference (operands and results within i32, counts 0..30) are compared."""
    rng = np.random.default_rng(38)
    a = rng.integers(0 if t == "u64" else -(2**15), 2**15, 60).astype(O.np_dtype(t))
    b = rng.integers(0, 16, 60).astype(O.np_dtype(t))
    built = build(lambda p: node("opset15", op_type, [p["a"], p["b"]]), {"a": a, "b": b})
    assert_same(run_irrun(built), run_cpu(built)[1], built.output_names, context=f"{op_type} {t}")


def test_shift_wide_types_semantics(tmp_path):
    """64-bit shift counts are taken modulo 64 (C++ `a << b` on x86-64); no executable OpenVINO kernel
    covers this in 2026.4.1 (no i64 reference, the CPU plugin narrows to i32), so it is checked
    against the C semantics directly."""
    from irbuild import IRBuilder

    import irrun

    cases = {
        "i64": ([5, -5, 1, -(2**63), 2**62, 7], [33, 63, 64, 1, -1, -62]),
        "u64": ([5, 2**64 - 1, 1, 2**63, 3, 7], [33, 63, 64, 1, 2**64 - 1, 2**64 - 62]),
    }
    for t, (av, bv) in cases.items():
        dtype = O.np_dtype(t)
        a, b = np.array(av, dtype), np.array(bv, dtype)
        counts = [int(c) % 64 for c in bv]
        mask = (1 << 64) - 1
        left = [((int(x) << c) & mask) for x, c in zip(av, counts)]
        right = [int(x) >> c for x, c in zip(av, counts)]
        for op_type, want in (("BitwiseLeftShift", left), ("BitwiseRightShift", right)):
            want = np.array([w - (1 << 64) if t == "i64" and w >= 2**63 else w for w in want], dtype)
            bld = IRBuilder()
            pa, pb = bld.parameter([6], t, name="a"), bld.parameter([6], t, name="b")
            layer = bld.op(op_type, "opset15", [(pa, 0), (pb, 0)], {"auto_broadcast": "numpy"}, [([6], t)])
            bld.result((layer, 0))
            xml = bld.save(tmp_path / f"{op_type}_{t}")
            got = next(iter(irrun.load(str(xml)).run({"a": a, "b": b}).values()))
            assert np.array_equal(got, want), f"{op_type} {t}: {got} != {want}"


# --------------------------------------------------------------------------- validation

@pytest.mark.parametrize("op_type,opset,types", [
    ("Tan", "opset1", ["boolean"]), ("Asinh", "opset4", ["boolean"]), ("SoftSign", "opset9", ["i32"]),
    ("ErfInv", "opset17", ["i32"]), ("IsNaN", "opset10", ["i32"]), ("IsInf", "opset10", ["u8"]),
    ("IsFinite", "opset10", ["boolean"]), ("BitwiseNot", "opset13", ["f32"]),
    ("BitwiseAnd", "opset13", ["f32", "f32"]), ("BitwiseOr", "opset13", ["i32", "i64"]),
    ("BitwiseLeftShift", "opset15", ["boolean", "boolean"]), ("BitwiseRightShift", "opset15", ["f16", "f16"]),
    ("Selu", "opset1", ["i32", "i32", "i32"]), ("Selu", "opset1", ["f32", "f16", "f32"]),
    ("Asinh", "opset3", ["f32"]),
])
def test_type_validation(op_type, opset, types, tmp_path):
    from irbuild import IRBuilder

    import irrun
    from irrun.errors import IRError

    b = IRBuilder()
    ports = [(b.parameter([3], t, name=f"x{i}"), 0) for i, t in enumerate(types)]
    out = "boolean" if op_type.startswith("Is") else types[0]
    layer = b.op(op_type, opset, ports, {}, [([3], out)])
    b.result((layer, 0))
    xml = b.save(tmp_path)
    with pytest.raises(RuntimeError):
        O.core().read_model(str(xml))
    with pytest.raises(IRError):
        irrun.load(str(xml))


def test_dynamic_shapes_infer():
    from irrun.errors import ShapeError
    from irrun.ir.types import ELEMENT_TYPES
    from irrun.ops.activation import IsInf, Selu, Tan
    from irrun.ops.arithmetic import BitwiseAnd, BitwiseLeftShift
    from irrun.ops.registry import TensorInfo

    i32, f32, boolean = ELEMENT_TYPES["i32"], ELEMENT_TYPES["f32"], ELEMENT_TYPES["boolean"]
    dyn = ELEMENT_TYPES["dynamic"]
    assert Tan({}, None).infer([TensorInfo(None, f32)])[0].shape is None
    assert IsInf({}, None).infer([TensorInfo((None, 3), f32)])[0] == TensorInfo((None, 3), boolean)
    numpy = {"auto_broadcast": "numpy", "pdpd_axis": 0}
    out = BitwiseAnd(numpy, None).infer([TensorInfo((None, 1, 4), i32), TensorInfo((3, 1), i32)])[0]
    assert out.shape == (None, 3, 4) and out.type.name == "i32"
    assert BitwiseLeftShift(numpy, None).infer([TensorInfo(None, i32), TensorInfo((2,), i32)])[0].shape is None
    with pytest.raises(ShapeError):
        BitwiseAnd(numpy, None).infer([TensorInfo((2, 3), i32), TensorInfo((4,), i32)])
    with pytest.raises(ShapeError):
        BitwiseAnd(numpy, None).infer([TensorInfo((2,), ELEMENT_TYPES["f32"]), TensorInfo((2,), f32)])
    assert Selu({}, None).infer([TensorInfo((None,), dyn), TensorInfo((), f32), TensorInfo((1,), dyn)])[0].type == f32
