"""irrun vs OpenVINO on Einsum-7, GroupNormalization-12, CumSum-3, Roll-7, ScatterElementsUpdate-3/12,
OneHot-1 and NonZero-3.

Oracles: the reference kernels (Node.evaluate) where OpenVINO 2026.4.1 has them for the input types
(CumSum f32; ScatterElementsUpdate f32/f16/i32/i64/boolean; OneHot; NonZero), the CPU plugin otherwise
(Einsum, GroupNormalization and Roll have no evaluate(); CumSum and ScatterElementsUpdate on other types).
Integer and boolean results, data movement (Roll, OneHot, NonZero, scatter without arithmetic) and the
reference scans/scatters are compared bit-exact. Tolerances, where arithmetic order differs:
- Einsum f32: the CPU plugin decomposes into MatMul/ReduceSum in f32, and so does irrun for two operands
  (one batched matrix product; np.einsum in f32 otherwise), in another order: atol 1e-5 + rtol 1e-5 of
  the sum of |terms| bound (inputs are in [-2, 2], at most 16 terms summed: atol 1e-4).
- Einsum f16: the CPU plugin (f32 hint) computes in f32 and rounds to f16: one f16 ulp plus 1e-3.
- GroupNormalization f32: mean/variance reduction order differs; outputs are O(scale): atol 1e-5 * (1 + |scale|)
  taken as 5e-5 for scales in [-2, 2]; f16: one f16 ulp + 1e-3.
- CumSum f16 on the CPU: accumulates in f32, irrun too: one f16 ulp.
Failures name the sweep, seed and case parameters.
"""
from __future__ import annotations

import numpy as np
import pytest
from openvino import opset1, opset3, opset7, opset12

import oracle as O
from oracle import assert_same, build, run_cpu, run_cpu_many, run_irrun, run_reference

import irrun
from irrun.errors import IRError


def _fix_scalars(built, expected):
    for k, out in enumerate(built.model.outputs):
        ps = out.get_partial_shape()
        if ps.is_static and len(ps) == 0 and expected[k].shape == (1,):
            expected[k] = expected[k].reshape(())
    return expected


def check(make, inputs, context, *, oracle="reference", atol=None, f16_ulp=False, patch=None):
    built = build(make, inputs, patch=patch)
    expected = run_reference(built) if oracle == "reference" else run_cpu(built)[1]
    _compare(built, expected, context, atol, f16_ulp)
    return built


def check_many(cases, *, oracle="reference", atol=None, f16_ulp=False):
    """check() on each (built, context) case; with the CPU plugin as oracle the cases compile as one model."""
    builts = [built for built, _ in cases]
    expected = [run_reference(b) for b in builts] if oracle == "reference" else \
        [outputs for _, outputs in run_cpu_many(builts)]
    for (built, context), outputs in zip(cases, expected):
        _compare(built, outputs, context, atol, f16_ulp)


def _compare(built, expected, context, atol, f16_ulp):
    expected = _fix_scalars(built, expected)
    model = irrun.load(str(built.xml))
    got = model.run(built.feed_dict)
    assert [t.element_type for t in model.outputs] == built.output_types, context
    assert_same(got, expected, built.output_names, atol=atol, f16_ulp=f16_ulp, context=context)


def const(value):
    return opset1.constant(np.asarray(value))


def rand_float(rng, shape, dtype, scale=2.0):
    return (rng.uniform(-scale, scale, shape)).astype(dtype)


def rand_int(rng, shape, dtype, low=None, high=None):
    info = np.iinfo(dtype)
    low = info.min if low is None else low
    high = info.max if high is None else high
    return rng.integers(low, high, shape, dtype=dtype, endpoint=True)


def expect_load_error(make, inputs, patch, rule=None):
    """OpenVINO refuses the patched file; irrun raises an IRError (with `rule` when given)."""
    built_ok = False
    try:
        build(make, inputs, patch=patch)
        built_ok = True
    except Exception:  # noqa: BLE001 - OpenVINO's read_model raised: the expected outcome
        pass
    assert not built_ok, "OpenVINO accepted the model"
    import tempfile
    from pathlib import Path
    directory = Path(tempfile.mkdtemp(prefix="irrun_extra_"))
    # save without reading back: build() reads back and fails, so redo its steps by hand
    import openvino as ov
    params = {k: O.parameter(k, v.shape, v.dtype) for k, v in inputs.items()}
    node = make(params)
    model = ov.Model(node.outputs(), list(params.values()), "oracle")
    xml = directory / "model.xml"
    ov.save_model(model, str(xml), compress_to_fp16=False)
    xml.write_text(patch(xml.read_text()))
    with pytest.raises(IRError) as info:
        irrun.load(str(xml)).run({k: v for k, v in inputs.items()})
    if rule is not None:
        assert info.value.rule == rule, info.value


# ---------------------------------------------------------------- Einsum

EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ji,jk", [(3, 2), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii->", [(4, 4)]),
    ("iij->j", [(2, 2, 3)]),
    ("i,j->ij", [(3,), (4,)]),
    ("ij->", [(2, 5)]),
    ("ij->ji", [(2, 3)]),
    ("...ij,...jk->...ik", [(5, 2, 3), (3, 4)]),
    ("...ij,...jk", [(5, 2, 3), (2, 1, 3, 4)]),
    ("a...b,b...->...", [(2, 3, 4, 5), (5, 3, 4)]),
    ("...ij->ij", [(2, 2, 3)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("ij,jk->ik", [(2, 1), (3, 4)]),
    ("i,i->i", [(1,), (3,)]),
    ("ij,ij->ij", [(1, 3), (2, 1)]),
    ("...i,...i->...", [(2, 1, 3), (4, 3)]),
    ("Ba,b", [(2, 3), (4,)]),
    ("abc,cd,de->ae", [(2, 3, 4), (4, 2), (2, 3)]),
    ("bhqd,bhkd->bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("BGHID,BGHJD->BGHIJ", [(1, 2, 3, 9, 16), (1, 2, 3, 7, 16)]),  # MaxViT's attention
    ("BGHIJ,BGHJD->BGHID", [(1, 2, 3, 9, 7), (1, 2, 3, 7, 16)]),
    ("xay,yb->bx", [(2, 3, 4), (4, 5)]),  # a label of one operand only, summed first
    ("ab,cd->dbca", [(2, 3), (4, 5)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
    ("ij,", [(2, 3), ()]),
    ("...", [()]),
    ("ij->...", [(2, 3)]),
]


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int64, np.float16])
def test_einsum_sweep(dtype):
    rng = np.random.default_rng(7)
    cases = []
    for n, (equation, shapes) in enumerate(EINSUM_CASES):
        if np.dtype(dtype).kind == "f":
            arrays = [rand_float(rng, s, dtype) for s in shapes]
        else:
            arrays = [rand_int(rng, s, dtype, -20, 20) for s in shapes]
        inputs = {f"x{i}": a for i, a in enumerate(arrays)}
        cases.append((build(lambda p: opset7.einsum([p[f"x{i}"] for i in range(len(arrays))], equation), inputs),
                      f"einsum case {n} {equation} {shapes} {np.dtype(dtype).name}"))
    atol = {np.float32: 1e-4, np.float16: 1e-3}.get(dtype)
    check_many(cases, oracle="cpu", atol=atol, f16_ulp=dtype == np.float16)


def test_einsum_implicit_uppercase_order():
    # implicit output is sorted by ASCII code: 'B' before 'a'
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.arange(4, dtype=np.float32)
    built = check(lambda p: opset7.einsum([p["a"], p["b"]], "Ba,b"), {"a": a, "b": b}, "Ba,b", oracle="cpu")
    assert tuple(built.model.outputs[0].get_shape()) == (2, 3, 4)


def _einsum_patch(equation, old="ij,jk->ik"):
    """oracle.patch_layer cannot edit an equation: its <data .../> pattern stops at the '>' of "->"."""
    def patch(text):
        assert f'equation="{old}"' in text
        return text.replace(f'equation="{old}"', f'equation="{equation}"')
    return patch


@pytest.mark.parametrize("equation, rule", [
    ("i1,jk->ik", "attr.value"),
    ("ij , jk->ik", "attr.value"),  # the python factory strips white space, reading IR does not
    ("i..j,jk->ik", "attr.value"),
    ("ij,jk->i.", "attr.value"),
    ("......,jk->ik", "attr.value"),
    ("ij,jk->iz", "attr.value"),
    ("ij->ij->", "attr.value"),
    ("ij,jk,kl->il", "port.count"),
    ("ijk,jk->ik", "port.rank"),
    ("ik,jk->ij", "shape.broadcast"),
    ("ii,jk->ik", "port.dims"),
])
def test_einsum_invalid(equation, rule):
    """A valid model for [2,3] x [3,4] whose saved equation is replaced: OpenVINO refuses to read it."""
    rng = np.random.default_rng(0)
    inputs = {"x0": rand_float(rng, (2, 3), np.float32), "x1": rand_float(rng, (3, 4), np.float32)}
    expect_load_error(lambda p: opset7.einsum([p["x0"], p["x1"]], "ij,jk->ik"), inputs, _einsum_patch(equation), rule)


def test_einsum_ellipsis_must_broadcast():
    rng = np.random.default_rng(1)
    inputs = {"x0": rand_float(rng, (2, 2, 3), np.float32), "x1": rand_float(rng, (3, 3, 4), np.float32)}
    expect_load_error(lambda p: opset7.einsum([p["x0"], p["x1"]], "aij,bjk->abik"), inputs,
                      _einsum_patch("...ij,...jk->...ik", "aij,bjk->abik"), "shape.broadcast")


def test_einsum_repeated_output_label_fails_at_run():
    # OpenVINO's shape inference accepts 'ii' (implicit output 'ii'), but no plugin runs it
    a = np.ones((3, 3), np.float32)
    built = build(lambda p: opset7.einsum([p["a"]], "ii"), {"a": a})
    assert tuple(built.model.outputs[0].get_shape()) == (3, 3)
    with pytest.raises(O.OracleUnsupported):
        run_cpu(built)
    model = irrun.load(str(built.xml))
    assert model.outputs[0].shape == (3, 3)
    with pytest.raises(IRError) as info:
        model.run({"a": a})
    assert info.value.rule == "attr.value"


# ---------------------------------------------------------------- GroupNormalization

@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_group_normalization_sweep(dtype):
    rng = np.random.default_rng(12)
    cases = []
    for n in range(14):
        rank = int(rng.integers(2, 6))
        groups = int(rng.choice([1, 2, 3]))
        channels = groups * int(rng.integers(1, 4))
        shape = (int(rng.integers(1, 3)), channels) + tuple(int(d) for d in rng.integers(1, 5, rank - 2))
        eps = float(rng.choice([1e-5, 1e-3, 0.5]))
        x = rand_float(rng, shape, dtype, 3.0) + dtype(rng.uniform(-2, 2))
        scale = rand_float(rng, (channels,), dtype)
        bias = rand_float(rng, (channels,), dtype)
        const_params = bool(rng.integers(2))
        inputs = {"x": x} if const_params else {"x": x, "s": scale, "b": bias}

        def make(p):
            s, b = (const(scale), const(bias)) if const_params else (p["s"], p["b"])
            return opset12.group_normalization(p["x"], s, b, groups, eps)

        cases.append((build(make, inputs),
                      f"groupnorm case {n} shape={shape} groups={groups} eps={eps} {np.dtype(dtype).name}"))
    atol = 5e-5 if dtype == np.float32 else 2e-3
    check_many(cases, oracle="cpu", atol=atol, f16_ulp=dtype == np.float16)


@pytest.mark.parametrize("groups, scale_shape, rule", [
    (3, (4,), "port.dims"), (0, (4,), "attr.range"), (2, (5,), "port.dims"), (2, (4, 1), "port.rank")])
def test_group_normalization_invalid(groups, scale_shape, rule):
    x = np.zeros((2, 4, 3), np.float32)
    good = lambda p: opset12.group_normalization(p["x"], const(np.ones(4, np.float32)),  # noqa: E731
                                                   const(np.zeros(4, np.float32)), 2, 1e-5)
    if scale_shape == (4,):
        expect_load_error(good, {"x": x}, lambda t: O.patch_layer(t, "GroupNormalization",
                                                                  {"num_groups": str(groups)}), rule)
    else:
        expect_load_error(lambda p: opset12.group_normalization(p["x"], p["s"], const(np.zeros(4, np.float32)), 2,
                                                                1e-5),
                          {"x": x, "s": np.ones(4, np.float32)},
                          lambda t: _reshape_parameter(t, "s", scale_shape), rule)


def _reshape_parameter(text, name, shape):
    """Give Parameter `name` another shape (its <data shape> and its port dims)."""
    import re
    layer = re.search(r'<layer[^>]*name="%s"[^>]*type="Parameter".*?</layer>' % name, text, re.S).group(0)
    fixed = re.sub(r'shape="[^"]*"', 'shape="%s"' % ",".join(map(str, shape)), layer, count=1)
    fixed = re.sub(r'(<port[^>]*>)\s*(<dim>\d+</dim>\s*)+', lambda m: m.group(1) + "".join(
        f"<dim>{d}</dim>" for d in shape), fixed, count=1)
    return text.replace(layer, fixed)


# ---------------------------------------------------------------- CumSum

@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.int32, np.int64, np.int8, np.uint8])
def test_cumsum_sweep(dtype):
    rng = np.random.default_rng(3)
    cases = []
    for n in range(10):
        rank = int(rng.integers(1, 4))
        shape = tuple(int(d) for d in rng.integers(1, 6, rank))
        # the CPU plugin narrows i64 to i32: keep i64 sums in the i32 range
        x = rand_float(rng, shape, dtype, 10) if np.dtype(dtype).kind == "f" else \
            rand_int(rng, shape, dtype, *((-2**20, 2**20) if dtype == np.int64 else (None, None)))
        axis = int(rng.integers(-rank, rank))
        exclusive, reverse = bool(rng.integers(2)), bool(rng.integers(2))
        axis_type = np.int32 if rng.integers(2) else np.int64
        as_param = bool(rng.integers(2))
        inputs = {"x": x, "a": np.array(axis, axis_type)} if as_param else {"x": x}

        def make(p):
            a = p["a"] if as_param else const(np.array(axis, axis_type))
            return opset3.cumsum(p["x"], a, exclusive, reverse)

        cases.append((build(make, inputs), f"cumsum case {n} shape={shape} axis={axis} ex={exclusive} "
                                           f"rev={reverse} {np.dtype(dtype).name} param={as_param}"))
    oracle = "reference" if dtype == np.float32 else "cpu"
    check_many(cases, oracle=oracle, atol=0.0 if dtype == np.float16 else None, f16_ulp=dtype == np.float16)


def test_cumsum_integer_wrap():
    x = np.array([[100, 100], [100, -128], [27, 1]], np.int8)
    check(lambda p: opset3.cumsum(p["x"], const(np.int64(0))), {"x": x}, "i8 wrap", oracle="cpu")


def test_cumsum_axis_out_of_range_is_a_run_error():
    x = np.zeros((2, 3), np.float32)
    built = build(lambda p: opset3.cumsum(p["x"], p["a"]), {"x": x, "a": np.array(2, np.int64)})
    with pytest.raises(IRError) as info:
        irrun.load(str(built.xml)).run(built.feed_dict)
    assert info.value.rule == "input.value"


# ---------------------------------------------------------------- Roll

@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8, np.bool_])
def test_roll_sweep(dtype):
    rng = np.random.default_rng(21)
    cases = []
    for n in range(12):
        rank = int(rng.integers(1, 5))
        shape = tuple(int(d) for d in rng.integers(1, 5, rank))
        x = (rng.random(shape) < 0.5) if dtype == np.bool_ else rng.integers(0, 100, shape).astype(dtype)
        count = int(rng.integers(1, 5))
        axes = rng.integers(-rank, rank, count).astype(rng.choice([np.int32, np.int64]))
        scalar_shift = bool(rng.integers(2))
        shift_type = rng.choice([np.int32, np.int64])
        shift = np.array(rng.integers(-9, 10), shift_type) if scalar_shift else \
            rng.integers(-9, 10, count).astype(shift_type)
        if scalar_shift:  # the CPU plugin wants as many shifts as axes: a scalar shift goes with one axis
            axes = axes[:1].reshape(()) if rng.integers(2) else axes[:1]
        as_param = bool(rng.integers(2))
        inputs = {"x": x, "s": shift, "a": axes} if as_param else {"x": x}

        def make(p):
            s, a = (p["s"], p["a"]) if as_param else (const(shift), const(axes))
            return opset7.roll(p["x"], s, a)

        cases.append((build(make, inputs), f"roll case {n} shape={shape} shift={shift.tolist()} "
                                           f"axes={axes.tolist()} param={as_param}"))
    check_many(cases, oracle="cpu")


@pytest.mark.parametrize("axes", [2, -3])
def test_roll_axis_out_of_range(axes):
    with pytest.raises(RuntimeError):
        opset7.roll(O.parameter("x", (2, 3), np.float32), const(np.int64(1)), const(np.int64(axes)))
    built = build(lambda p: opset7.roll(p["x"], const(np.int64(1)), p["a"]),
                  {"x": np.zeros((2, 3), np.float32), "a": np.array([axes], np.int64)})
    with pytest.raises(IRError) as info:
        irrun.load(str(built.xml)).run(built.feed_dict)
    assert info.value.rule == "attr.range"


@pytest.mark.parametrize("name, shape, rule", [("a", (2,), "port.dims"), ("a", (), "port.dims"),
                                               ("s", (1, 3), "port.rank")])
def test_roll_invalid_shapes(name, shape, rule):
    inputs = {"x": np.zeros((2, 3), np.float32), "s": np.ones(3, np.int64), "a": np.zeros(3, np.int64)}
    expect_load_error(lambda p: opset7.roll(p["x"], p["s"], p["a"]), inputs,
                      lambda t: _reshape_parameter(t, name, shape), rule)


# ---------------------------------------------------------------- ScatterElementsUpdate

SEU_TYPES = [np.float32, np.float16, np.int32, np.int64]


def _seu_case(rng, dtype, small_targets):
    rank = int(rng.integers(1, 4))
    data_shape = tuple(int(d) for d in rng.integers(1, 5, rank))
    axis = int(rng.integers(-rank, rank))
    ax = axis % rank
    idx_shape = tuple(int(rng.integers(1, d + 1)) if k != ax else int(rng.integers(1, 7))
                      for k, d in enumerate(data_shape))
    size = data_shape[ax]
    span = min(size, 2) if small_targets else size
    indices = rng.integers(-span, span, idx_shape)
    indices = np.where(indices < 0, indices - (size - span), indices)  # negative ones count from the end
    if dtype == np.bool_:
        data, updates = rng.random(data_shape) < 0.5, rng.random(idx_shape) < 0.5
    elif np.dtype(dtype).kind == "f":
        data = rng.integers(-8, 9, data_shape).astype(dtype) / dtype(4)
        updates = rng.integers(-8, 9, idx_shape).astype(dtype) / dtype(4)
        special = rng.random(idx_shape) < 0.15
        updates[special] = rng.choice(np.array([np.nan, -0.0, 0.0, np.inf], dtype), int(special.sum()))
        data[rng.random(data_shape) < 0.1] = np.nan
    else:
        data = rand_int(rng, data_shape, dtype, -50, 50)
        updates = rand_int(rng, idx_shape, dtype, -50, 50)
    return data, indices.astype(rng.choice([np.int32, np.int64])), updates, axis


@pytest.mark.parametrize("dtype", SEU_TYPES + [np.bool_])
def test_scatter_elements_update3_sweep(dtype):
    rng = np.random.default_rng(5)
    for n in range(10):
        data, indices, updates, axis = _seu_case(rng, dtype, bool(n % 2))
        as_param = bool(rng.integers(2))
        inputs = {"d": data, "i": indices, "u": updates} if as_param else {"d": data}

        def make(p):
            i, u = (p["i"], p["u"]) if as_param else (const(indices), const(updates))
            return opset3.scatter_elements_update(p["d"], i, u, const(np.int64(axis)))

        check(make, inputs, f"seu3 case {n} data={data.shape} idx={indices.tolist()} axis={axis}")


@pytest.mark.parametrize("reduction", ["none", "sum", "prod", "min", "max", "mean"])
@pytest.mark.parametrize("dtype", SEU_TYPES)
def test_scatter_elements_update12_sweep(reduction, dtype):
    rng = np.random.default_rng(abs(hash((reduction, np.dtype(dtype).name))) % 2**32)
    for n in range(8):
        data, indices, updates, axis = _seu_case(rng, dtype, n % 2 == 0)
        use_init_val = bool(rng.integers(2))

        def make(p):
            return opset12.scatter_elements_update(p["d"], p["i"], p["u"], const(np.array([axis], np.int32)),
                                                   reduction, use_init_val)

        check(make, {"d": data, "i": indices, "u": updates},
              f"seu12 case {n} {reduction} init={use_init_val} data={data.tolist()} idx={indices.tolist()} "
              f"upd={updates.tolist()} axis={axis}")


@pytest.mark.parametrize("reduction", ["sum", "prod", "min", "max", "none"])
def test_scatter_elements_update12_bool(reduction):
    rng = np.random.default_rng(8)
    for n in range(4):
        data, indices, updates, axis = _seu_case(rng, np.bool_, True)
        check(lambda p: opset12.scatter_elements_update(p["d"], const(indices), const(updates),
                                                        const(np.int64(axis)), reduction, bool(n % 2)),
              {"d": data}, f"seu12 bool case {n} {reduction}")


def test_scatter_elements_update_integer_mean_rounds_down():
    # the reference floors (-3 + 0) / 2 = -1.5 to -2; the CPU plugin truncates to -1: irrun follows the reference
    data = np.zeros((3, 2), np.int32)
    indices = np.array([[1, 1], [1, 1]])
    updates = np.array([[-3, -4], [0, -1]], np.int32)
    built = check(lambda p: opset12.scatter_elements_update(p["d"], const(indices), const(updates),
                                                            const(np.int64(0)), "mean", False),
                  {"d": data}, "int mean")
    assert irrun.load(str(built.xml)).run(built.feed_dict)[built.output_names[0]][1].tolist() == [-2, -3]


def test_scatter_elements_update_out_of_range_index():
    data = np.zeros((3, 2), np.float32)
    built = build(lambda p: opset12.scatter_elements_update(p["d"], p["i"], const(np.ones((1, 1), np.float32)),
                                                            const(np.int64(0)), "sum"),
                  {"d": data, "i": np.array([[3]], np.int64)})
    with pytest.raises(Exception):
        run_reference(built)
    with pytest.raises(IRError) as info:
        irrun.load(str(built.xml)).run(built.feed_dict)
    assert info.value.rule == "input.index"


# ---------------------------------------------------------------- OneHot

@pytest.mark.parametrize("out_type", [np.float32, np.int32, np.int8, np.bool_, np.float16])
def test_one_hot_sweep(out_type):
    rng = np.random.default_rng(11)
    for n in range(8):
        rank = int(rng.integers(0, 4))
        shape = tuple(int(d) for d in rng.integers(1, 4, rank))
        depth = int(rng.integers(0, 6))
        # OpenVINO accepts any integer indices, but neither oracle runs u8/i8 ones: i32 and i64 only
        index_type = rng.choice([np.int32, np.int64])
        indices = rng.integers(-2, depth + 3, shape).astype(index_type)
        axis = int(rng.integers(-rank - 1, rank + 1))
        on, off = (np.bool_(True), np.bool_(False)) if out_type == np.bool_ else \
            (np.array(rng.integers(1, 9), out_type), np.array(rng.integers(-9, 1), out_type))
        depth_type = rng.choice([np.int32, np.int64])
        check(lambda p: opset1.one_hot(p["i"], const(np.array(depth, depth_type)), const(on), const(off), axis),
              {"i": indices}, f"one_hot case {n} shape={shape} depth={depth} axis={axis} idx={indices.tolist()}")


def test_one_hot_negative_depth():
    with pytest.raises(RuntimeError):
        opset1.one_hot(O.parameter("i", (2,), np.int64), const(np.int64(-1)), const(np.float32(1)),
                       const(np.float32(0)), -1)
    built = build(lambda p: opset1.one_hot(p["i"], p["d"], const(np.float32(1)), const(np.float32(0)), -1),
                  {"i": np.array([0, 1], np.int64), "d": np.array(-1, np.int64)})
    with pytest.raises(IRError) as info:
        irrun.load(str(built.xml)).run(built.feed_dict)
    assert info.value.rule == "attr.range"


# ---------------------------------------------------------------- NonZero

@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_, np.float16])
def test_non_zero_sweep(dtype):
    rng = np.random.default_rng(17)
    for n in range(8):
        rank = int(rng.integers(1, 5))
        shape = tuple(int(d) for d in rng.integers(0 if n == 3 else 1, 4, rank))
        x = (rng.random(shape) < 0.4).astype(dtype)
        if np.dtype(dtype).kind == "f":
            x[rng.random(shape) < 0.2] = np.nan
            x[rng.random(shape) < 0.2] = -0.0
        out_type = str(rng.choice(["i32", "i64"]))
        as_const = bool(rng.integers(2))
        if as_const:  # folded at load: the Convert keeps the model from being all constant
            inputs = {"y": np.zeros((1,), np.float32)}
            make = lambda p: [opset3.non_zero(const(x), out_type).output(0), p["y"].output(0)]  # noqa: E731
        else:
            inputs = {"x": x}
            make = lambda p: opset3.non_zero(p["x"], out_type)  # noqa: E731
        check(make, inputs, f"nonzero case {n} shape={shape} {out_type} const={as_const}")


def test_non_zero_dynamic_shape_at_load():
    x = np.array([[0, 1], [2, 0], [0, 3]], np.float32)
    built = build(lambda p: opset3.non_zero(p["x"], "i32"), {"x": x})
    model = irrun.load(str(built.xml))
    assert model.outputs[0].shape == (2, None)
    out = model.run(built.feed_dict)[built.output_names[0]]
    assert out.dtype == np.int32 and out.tolist() == [[0, 1, 2], [1, 0, 1]]


def test_non_zero_scalar():
    # the CPU plugin gives [1, count]; the reference gives [1, 1] for a non-zero scalar and [0, 0] for zero
    check_many([(build(lambda p: opset3.non_zero(p["x"], "i64"), {"x": np.array(value, np.float32)}), f"scalar {value}")
                for value in (5.0, 0.0)], oracle="cpu")


def test_einsum_ellipsis_with_a_zero_dim(tmp_path):
    """A 0-sized ellipsis dim broadcasts like any other (it used to be taken for a conflict)."""
    from openvino import opset7

    a, b = np.zeros((0, 2, 3), np.float32), np.zeros((0, 3, 4), np.float32)
    built = build(lambda p: opset7.einsum([p["a"], p["b"]], "...ij,...jk->...ik"), {"a": a, "b": b}, tmp_path)
    expected = tuple(built.model.outputs[0].get_shape())
    (got,) = run_irrun(built).values()
    assert got.shape == expected == (0, 2, 4)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_scatter_elements_update_whole_rows(axis):
    """Indices equal along every other axis (torchvision's MultiScaleRoIAlign: one index per ROI, broadcast)
    move whole rows, repeated and negative rows included, partial rows when indices are smaller than the data."""
    rng = np.random.default_rng(11 + axis)
    data = rng.standard_normal((5, 4, 3)).astype(np.float32)
    shape = list(data.shape)
    shape[axis] = 6
    for partial in (False, True):
        if partial:
            shape[(axis + 1) % 3] -= 1
        rows = rng.integers(-data.shape[axis], data.shape[axis], 6)
        view = [1, 1, 1]
        view[axis] = 6
        indices = np.broadcast_to(rows.reshape(view), shape).copy()
        updates = rng.standard_normal(shape).astype(np.float32)
        check(lambda p: opset12.scatter_elements_update(p["d"], p["i"], p["u"], const(np.int64(axis))),
              {"d": data, "i": indices, "u": updates}, f"rows {rows.tolist()} axis {axis} partial {partial}")
