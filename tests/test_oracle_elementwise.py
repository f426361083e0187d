"""irrun vs OpenVINO on elementwise binary ops, LogicalNot and Select: seeded sweeps and corner cases.

Oracle: OpenVINO's reference kernels (Node.evaluate) for every op/type pair that has one (measured in
2026.4.1, see REF_TYPES); the CPU plugin for the rest (Mod on floats, SquaredDifference beyond f32).
Exact comparison (bit for bit, any NaN equals any NaN) for integer, boolean and exactly rounded float
results (+ - * / max min, FloorMod); Power on floats within rtol 2e-7 (powf vs NumPy's pow, ~1 ulp),
plus one f16 ulp for f16 (a 1-ulp f32 difference can cross an f16 rounding boundary). CPU-plugin
results within rtol 1e-6.

Never fed to OpenVINO: integer division or modulo by zero and INT_MIN / -1 (the reference throws or
the process faults); irrun raises an ExecutionError for the first two (tested without the oracle).
"""

from __future__ import annotations

import numpy as np
import pytest
from openvino import opset1
from openvino.utils.node_factory import NodeFactory

import oracle as O
from oracle import assert_same, build, run_cpu, run_cpu_many, run_irrun, run_reference

NF = NodeFactory("opset1")
AXIS_KEY = "auto_broadcast.auto_broadcast_axis"

ARITH = ["Add", "Subtract", "Multiply", "Divide", "Power", "Maximum", "Minimum", "SquaredDifference", "FloorMod", "Mod"]
COMPARE = ["Equal", "NotEqual", "Less", "LessEqual", "Greater", "GreaterEqual"]
LOGICAL = ["LogicalAnd", "LogicalOr", "LogicalXor"]

# element types with a reference kernel (evaluate) in OpenVINO 2026.4.1
REF_TYPES = {
    "Add": ["f32", "f16", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"],
    "Subtract": ["f32", "f16", "i8", "u8", "i32", "u32", "i64", "u64"],
    "Multiply": ["f32", "f16", "f64", "i32", "u32", "i64", "u64"],
    "Divide": ["f32", "f16", "i32", "u32", "i64", "u64"],
    "Power": ["f32", "f16", "i32", "u32", "i64", "u64"],
    "Maximum": ["f32", "f16", "i32", "u32", "i64", "u64"],
    "Minimum": ["f32", "f16", "u8", "u16", "i32", "u32", "i64", "u64"],
    "SquaredDifference": ["f32"],
    "FloorMod": ["f32", "f16", "i8", "u8", "i32", "u32", "i64", "u64"],
    "Mod": ["i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64"],
    "Equal": ["f32", "f16", "f64", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "boolean"],
}
for _op in COMPARE[1:]:
    REF_TYPES[_op] = ["f32", "f16", "i32", "u32", "i64", "u64", "boolean"]
for _op in LOGICAL:
    REF_TYPES[_op] = ["boolean"]


def assert_close(got: dict, expected, names, *, rtol, atol=0.0, f16_ulp=False, context=""):
    got = list(got.values())
    assert len(got) == len(expected), context
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype and g.shape == e.shape, f"{context}\n{g.dtype}{g.shape} vs {e.dtype}{e.shape}"
        if e.dtype.kind != "f":
            assert np.array_equal(g, e), f"{context}\n{O.compare_outputs(g, e)}"
            continue
        g64, e64 = g.astype(np.float64), e.astype(np.float64)
        with np.errstate(invalid="ignore"):
            tol = atol + rtol * np.abs(e64)
            if f16_ulp or e.dtype == np.float16:
                tol = tol + np.spacing(np.abs(e).astype(np.float16)).astype(np.float64)
            bad = (np.isnan(g64) != np.isnan(e64)) | (~np.isnan(e64) & ~(np.abs(g64 - e64) <= tol) & ~(g64 == e64))
        assert not bad.any(), f"{context}\n{O._mismatch_report(g, e, bad)}"


# --------------------------------------------------------------------------- data

def gen(rng, shape, dtype, mode="mixed"):
    dtype = np.dtype(dtype)
    shape = tuple(shape)
    if dtype == np.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind == "f":
        a = np.asarray((rng.standard_normal(shape) * 4).astype(dtype))
        if mode == "mixed":
            m = rng.random(shape) < 0.3
            a[m] = rng.integers(-4, 5, int(m.sum())).astype(dtype)  # exact ties, zeros
            m = rng.random(shape) < 0.08
            a[m] = rng.choice(np.array([np.inf, -np.inf, np.nan, -0.0, 0.5, -0.5], dtype), int(m.sum()))
        return a
    info = np.iinfo(dtype)
    if mode == "small":
        lo = 0 if info.min == 0 else -9
        return np.asarray(rng.integers(lo, 10, shape).astype(dtype))
    a = np.asarray(rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True))
    m = rng.random(shape) < 0.5
    lo = 0 if info.min == 0 else -20
    a[m] = rng.integers(lo, 21, int(m.sum())).astype(dtype)
    return a


def shapes_for(rng, mode):
    """(shape A, shape B, pdpd axis) for a broadcast mode."""
    rank = int(rng.integers(0, 5))
    a = [int(v) for v in rng.integers(1, 5, rank)]
    if mode == "none":
        return a, list(a), None
    if mode == "numpy":
        rb = int(rng.integers(0, 5))
        full = [int(v) for v in rng.integers(1, 5, max(rank, rb))]
        a = [d if rng.random() < 0.7 else 1 for d in full[len(full) - rank:]]
        b = [d if rng.random() < 0.7 else 1 for d in full[len(full) - rb:]]
        if rng.random() < 0.5:
            a, b = b, a
        return a, b, None
    rb = int(rng.integers(min(rank, 1), rank + 1))  # the oracle turns 0-d feeds into shape [1]
    axis = int(rng.integers(0, rank - rb + 1))
    b = [a[axis + i] if rng.random() < 0.7 else 1 for i in range(rb)]
    if rng.random() < 0.3 and axis == rank - rb:
        axis = -1
    return a, b, axis


def binary_model(op_type, a, b, mode, axis):
    def make(p):
        attrs = {"auto_broadcast": mode}
        if mode == "pdpd":
            attrs[AXIS_KEY] = axis
        return NF.create(op_type, [p["a"].output(0), p["b"].output(0)], attrs)

    return build(make, {"a": a, "b": b})


def operands(rng, op_type, dtype, sa, sb):
    a = gen(rng, sa, dtype)
    b = gen(rng, sb, dtype)
    if np.dtype(dtype).kind in "iu":
        if op_type in ("Divide", "Mod") or (op_type == "FloorMod" and np.dtype(dtype).kind == "u"):
            b = np.where(b == 0, 3, b).astype(dtype)
            if np.dtype(dtype).kind == "i":
                a = np.where(a == np.iinfo(dtype).min, 5, a).astype(dtype)  # INT_MIN / -1 faults
        if op_type == "Power":
            a = gen(rng, sa, dtype, "small")
            b = np.array(np.abs(gen(rng, sb, dtype, "small")).astype(dtype) % 12)
            if np.dtype(dtype).kind == "i":
                b[rng.random(b.shape) < 0.2] = -1  # negative exponents
    return a, b


def tolerance(op_type, dtype):
    if np.dtype(dtype).kind == "f" and op_type == "Power":
        return dict(rtol=2e-7)
    return None


# --------------------------------------------------------------------------- sweeps

@pytest.mark.parametrize("op_type", ARITH + COMPARE + LOGICAL)
def test_binary_reference_sweep(op_type):
    rng = np.random.default_rng(sum(map(ord, op_type)))
    types = REF_TYPES[op_type]
    cases = []
    for case in range(3 * len(types) + 6):
        dtype = O.np_dtype(types[case % len(types)])
        mode = ("numpy", "pdpd", "none", "numpy", "explicit")[case % 5]
        # OpenVINO 2026.4.1's reference Greater/GreaterEqual get pdpd broadcasting wrong: the CPU plugin
        # (exact on f32, f16, i32) is the oracle there
        cpu_oracle = mode == "pdpd" and op_type in ("Greater", "GreaterEqual")
        if cpu_oracle and dtype.name not in ("float32", "float16", "int32"):
            mode = "numpy"
            cpu_oracle = False
        sa, sb, axis = shapes_for(rng, "none" if mode == "explicit" else mode)
        a, b = operands(rng, op_type, dtype, sa, sb)
        context = f"{op_type} case {case}: {dtype.name} {mode} axis={axis} A{sa} B{sb}"
        cases.append((binary_model(op_type, a, b, mode, axis), dtype, cpu_oracle, context))
    cpu = iter(run_cpu_many([built for built, _, cpu_oracle, _ in cases if cpu_oracle], keep_refusals=True))
    for built, dtype, cpu_oracle, context in cases:
        if cpu_oracle:
            result = next(cpu)
            # the CPU plugin rejects some pdpd layouts OpenVINO's core accepts
            if isinstance(result, O.OracleUnsupported):
                continue
            expected = result[1]
        else:
            expected = run_reference(built)
        got = run_irrun(built, context)
        tol = tolerance(op_type, dtype)
        if tol:
            assert_close(got, expected, built.output_names, context=context, **tol)
        else:
            assert_same(got, expected, built.output_names, context=context)


@pytest.mark.parametrize("op_type,dtype", [
    ("Mod", "f32"), ("Mod", "f16"), ("SquaredDifference", "f16"), ("SquaredDifference", "i32"),
    ("Add", "i16"), ("Maximum", "i8"),
])
def test_binary_cpu(op_type, dtype):
    """Op/type pairs without a reference kernel: the CPU plugin (rtol 1e-6; f16 one ulp)."""
    rng = np.random.default_rng(7)
    dtype = O.np_dtype(dtype)
    cases = []
    for case in range(4):
        sa, sb, axis = shapes_for(rng, "numpy")
        a = gen(rng, sa, dtype, "plain")
        b = gen(rng, sb, dtype, "plain")
        if dtype.kind in "iu":
            a, b = (gen(rng, s, dtype, "small") for s in (sa, sb))
        context = f"{op_type} cpu case {case}: {dtype.name} A{sa} B{sb}"
        cases.append((binary_model(op_type, a, b, "numpy", None), context))
    for (built, context), (_, expected) in zip(cases, run_cpu_many([built for built, _ in cases])):
        assert_close(run_irrun(built, context), expected, built.output_names, rtol=1e-6, atol=1e-6,
                     context=context)


def test_integer_semantics_exact():
    """Divide (python floor vs C truncation), FloorMod / Mod signs, Power through double, wrapping."""
    I = np.int32
    a = np.array([7, -7, 7, -7, 0, 5, -5, -2147483648, 3, 7, 2147483647, 1073741825], I)
    b = np.array([2, 2, -2, -2, 3, -3, 3, 1, -7, 3, 2, 3], I)
    for op_type in ("Divide", "FloorMod", "Mod", "Add", "Subtract", "Multiply"):
        for attrs in ([{}, {"m_pythondiv": False}] if op_type == "Divide" else [{}]):
            def make(p, op_type=op_type, attrs=attrs):
                return NF.create(op_type, [p["a"].output(0), p["b"].output(0)], {"auto_broadcast": "numpy", **attrs})
            built = build(make, {"a": a, "b": b})
            assert_same(run_irrun(built), run_reference(built), built.output_names, context=f"{op_type} {attrs}")
    # power: negative exponents, 0 ** -1, overflow to the indefinite value, u32/i64 wrapping through double
    for dtype, base, expo in [
        (np.int32, [2, -2, 0, 0, 3, -3, 1, -1, 2, 5], [3, 3, 0, -1, -1, -2, -5, -5, 40, 2]),
        (np.uint32, [2, 3, 0, 7], [31, 21, 0, 13]),
        (np.int64, [2, 3, -3, 7], [62, 39, 39, 23]),
        (np.uint64, [2, 3, 7, 10], [63, 40, 23, 19]),
    ]:
        built = build(lambda p: opset1.power(p["a"], p["b"]),
                      {"a": np.array(base, dtype), "b": np.array(expo, dtype)})
        assert_same(run_irrun(built), run_reference(built), built.output_names, context=f"Power {dtype}")
    # FloorMod by zero goes through double: NaN cast to the integer indefinite value
    built = build(lambda p: opset1.floor_mod(p["a"], p["b"]),
                  {"a": np.array([5, -5, 0], I), "b": np.array([0, 0, 0], I)})
    assert_same(run_irrun(built), run_reference(built), built.output_names, context="FloorMod by zero")


def test_float_corner_values_exact():
    f = np.float32
    a = np.array([np.nan, 1, np.nan, -0.0, 0.0, 5.3, -5.3, 5.3, -5.3, 7, 0, np.inf, -7, 3, 1e-30], f)
    b = np.array([1, np.nan, np.nan, 0.0, -0.0, 2.1, 2.1, -2.1, -2.1, 0, 0, 2, np.inf, -np.inf, 1e30], f)
    for op_type in ("Maximum", "Minimum", "FloorMod", "Divide", "SquaredDifference", "Add", "Multiply",
                    "Less", "Equal", "NotEqual", "GreaterEqual"):
        built = build(lambda p, t=op_type: NF.create(t, [p["a"].output(0), p["b"].output(0)], {}),
                      {"a": a, "b": b})
        assert_same(run_irrun(built), run_reference(built), built.output_names, context=op_type)


def test_integer_division_by_zero_is_an_error(tmp_path):
    """OpenVINO's reference throws (Divide) or faults (Mod, unsigned FloorMod); irrun raises an
    ExecutionError."""
    import irrun
    from irrun.errors import IRError

    for op_type, dtype in (("Divide", np.int32), ("Mod", np.int32), ("FloorMod", np.uint32), ("Divide", np.uint8)):
        built = build(lambda p, t=op_type: NF.create(t, [p["a"].output(0), p["b"].output(0)], {}),
                      {"a": np.array([1, 2], dtype), "b": np.array([1, 0], dtype)},
                      directory=tmp_path / f"{op_type}{np.dtype(dtype).name}")
        with pytest.raises(IRError, match="by zero"):
            irrun.load(str(built.xml)).run(built.feed_dict)


# --------------------------------------------------------------------------- shape inference

def _infer_irrun(xml):
    import irrun

    model = irrun.load(str(xml))
    return [tuple(t.shape) if t.shape is not None else None for t in model.outputs]


@pytest.mark.parametrize("sa,sb,axis", [
    ([2, 3, 4, 5], [3, 4], 1), ([2, 3, 4, 5], [3, 1], 1), ([2, 3, 4, 5], [3, 1, 1], 1),
    ([2, 3, 4, 5], [4, 5], -1), ([2, 3, 4, 5], [5], 3), ([2, 3, 4, 5], [], 2), ([2, 3, 4, 5], [1, 4], 1),
    ([2, 3, 4, 5], [1, 4, 1], 1), ([2, 3, 4, 5], [2, 3], 0), ([3, 4], [3, 1], -1),
    # rejected by OpenVINO 2026 (the spec's "trailing ones are ignored" does not hold; default axis is 0)
    ([2, 3, 4, 5], [3, 4, 5, 1], 1), ([2, 3, 4, 5], [4, 5], None), ([2, 3, 4, 5], [3, 4], -1),
    ([2, 3, 4, 5], [4, 5], -2), ([2, 3, 4, 5], [5], 4), ([3, 1], [3, 4], -1), ([2, 1, 4, 5], [3], 1),
    ([2, 3], [1, 1, 1, 1], 0),
])
def test_pdpd_shapes_agree(sa, sb, axis, tmp_path):
    """OpenVINO accepts or rejects each pdpd pair exactly as irrun does; accepted ones compute alike."""
    from irbuild import IRBuilder

    import irrun
    from irrun.errors import IRError

    b = IRBuilder()
    pa, pb = b.parameter(sa, "f32", name="a"), b.parameter(sb, "f32", name="b")
    attrs = {"auto_broadcast": "pdpd"}
    if axis is not None:
        attrs[AXIS_KEY] = str(axis)
    layer = b.op("Subtract", "opset1", [(pa, 0), (pb, 0)], attrs, [(sa, "f32")])
    b.result((layer, 0), name="out")
    xml = b.save(tmp_path)
    try:
        ov_model = O.core().read_model(str(xml))
    except RuntimeError as exc:
        assert "inconsistent" in str(exc)
        with pytest.raises(IRError):
            irrun.load(str(xml))
        return
    rng = np.random.default_rng(3)
    feeds = [rng.standard_normal(sa).astype(np.float32), rng.standard_normal(sb).astype(np.float32)]
    expected = run_reference(ov_model, feeds)
    got = irrun.load(str(xml)).run(feeds)
    assert_same(got, expected)


@pytest.mark.parametrize("mode,sa,sb", [
    ("numpy", [2, 3], [4]), ("numpy", [2, 1, 3], [4, 1]), ("none", [2, 3], [3]), ("none", [2, 3], [2, 3]),
    ("NUMPY", [2, 1], [1, 5]), ("Explicit", [2, 3], [2, 3]), ("explicit", [2, 3], [3]),
])
def test_broadcast_modes_accept_reject(mode, sa, sb, tmp_path):
    from irbuild import IRBuilder

    import irrun
    from irrun.errors import IRError

    b = IRBuilder()
    pa, pb = b.parameter(sa, "f32", name="a"), b.parameter(sb, "f32", name="b")
    layer = b.op("Add", "opset1", [(pa, 0), (pb, 0)], {"auto_broadcast": mode}, [(sa, "f32")])
    b.result((layer, 0))
    xml = b.save(tmp_path)
    try:
        ov_model = O.core().read_model(str(xml))
    except RuntimeError:
        with pytest.raises(IRError):
            irrun.load(str(xml))
        return
    assert _infer_irrun(xml) == [tuple(ov_model.outputs[0].get_shape())]


def test_dynamic_dims_numpy():
    from irrun.ops.broadcasting import numpy_shape, pdpd_shape

    assert numpy_shape((2, None, 3), (4, 1)) == ((2, 4, 3), True)
    assert numpy_shape((None, 3), (None, 1)) == ((None, 3), True)
    assert numpy_shape((None,), (1,)) == ((None,), True)
    assert numpy_shape((None,), (5,)) == ((5,), True)
    assert numpy_shape(None, (5,)) == (None, True)
    assert numpy_shape((2, 3), (4,))[1] is False
    assert pdpd_shape((2, None, 4, 5), (3,), 1) == ((2, 3, 4, 5), True)
    assert pdpd_shape((2, 1, 4, 5), (3,), 1)[1] is False


@pytest.mark.parametrize("types", [("f32", "i32"), ("boolean", "boolean"), ("f32", "f32", "logical"),
                                   ("i32", "i64", "compare")])
def test_type_validation(types):
    """Arithmetic rejects boolean; logical ops need boolean; inputs must share a type."""
    from irrun.errors import ShapeError
    from irrun.ir.types import ELEMENT_TYPES
    from irrun.ops.arithmetic import Add, Equal, LogicalAnd
    from irrun.ops.registry import TensorInfo

    cls = {"logical": LogicalAnd, "compare": Equal}.get(types[-1], Add)
    infos = [TensorInfo((2,), ELEMENT_TYPES[t]) for t in types[:2]]
    op_ = cls({"auto_broadcast": "numpy", "pdpd_axis": 0}, None)
    with pytest.raises(ShapeError):
        op_.infer(infos)
    # and OpenVINO agrees
    fac = {"logical": opset1.logical_and, "compare": opset1.equal}.get(types[-1], opset1.add)
    with pytest.raises(RuntimeError):
        fac(O.parameter("a", [2], types[0]), O.parameter("b", [2], types[1]))


# --------------------------------------------------------------------------- LogicalNot, Select

@pytest.mark.parametrize("dtype", ["boolean", "f32", "f16", "i32", "u8", "i64"])
def test_logical_not(dtype):
    """OpenVINO accepts any type (the spec: boolean only); the output keeps it and holds x == 0."""
    rng = np.random.default_rng(11)
    x = gen(rng, (3, 4), O.np_dtype(dtype))
    if x.dtype.kind in "iuf":
        x[0] = 0
    built = build(lambda p: opset1.logical_not(p["x"]), {"x": x})
    assert_same(run_irrun(built), run_reference(built), built.output_names, context=dtype)


def test_select_sweep():
    rng = np.random.default_rng(5)
    for case in range(24):
        dtype = O.np_dtype(("f32", "i32", "f16", "i64", "u8", "boolean")[case % 6])
        mode = ("numpy", "none", "pdpd")[case % 3]
        if mode == "numpy":
            sc, st = shapes_for(rng, "numpy")[:2]
            se = shapes_for(rng, "numpy")[1][-len(st):] if st else []
            se = [d if d == 1 or rng.random() < 0.5 else 1 for d in np.broadcast_shapes(tuple(sc), tuple(st), tuple(se))][-len(se):] if se else []
            axis = None
        elif mode == "none":
            st, _, axis = shapes_for(rng, "none")
            sc = se = list(st)
        else:
            st, se, axis = shapes_for(rng, "pdpd")
            _, sc, axis2 = shapes_for(rng, "pdpd")
            sc = se if axis2 is None or rng.random() < 0.5 else [1] * len(se)
        cond = gen(rng, sc, np.bool_)
        then, other = gen(rng, st, dtype), gen(rng, se, dtype)
        attrs = {"auto_broadcast": mode}
        if mode == "pdpd":
            attrs[AXIS_KEY] = axis

        def make(p, attrs=attrs):
            return NF.create("Select", [p["c"].output(0), p["t"].output(0), p["e"].output(0)], attrs)

        context = f"Select case {case}: {dtype.name} {mode} axis={axis} C{sc} T{st} E{se}"
        try:
            built = build(make, {"c": cond, "t": then, "e": other})
        except RuntimeError:
            continue  # a random combination OpenVINO rejects; accept/reject agreement is tested below
        try:
            expected = run_reference(built)
        except O.OracleUnsupported:
            _, expected = run_cpu(built)
        assert_same(run_irrun(built, context), expected, built.output_names, context=context)


@pytest.mark.parametrize("mode,sc,st,se", [
    ("pdpd", [3], [2, 3], [2, 3]), ("pdpd", [2, 3], [2, 3], [3]), ("pdpd", [2, 3], [2, 3], [2]),
    ("numpy", [2, 1], [4, 1, 3], [3]), ("none", [2, 3], [3], [2, 3]), ("numpy", [2], [3], [1]),
])
def test_select_shapes(mode, sc, st, se, tmp_path):
    from irbuild import IRBuilder

    import irrun
    from irrun.errors import IRError

    b = IRBuilder()
    pc, pt, pe = b.parameter(sc, "boolean", name="c"), b.parameter(st, "f32", name="t"), b.parameter(se, "f32", name="e")
    layer = b.op("Select", "opset1", [(pc, 0), (pt, 0), (pe, 0)], {"auto_broadcast": mode}, [(st, "f32")])
    b.result((layer, 0))
    xml = b.save(tmp_path)
    try:
        ov_model = O.core().read_model(str(xml))
    except RuntimeError:
        with pytest.raises(IRError):
            irrun.load(str(xml))
        return
    assert _infer_irrun(xml) == [tuple(ov_model.outputs[0].get_shape())]
