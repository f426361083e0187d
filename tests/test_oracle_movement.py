"""irrun vs OpenVINO's reference kernels (Node.evaluate) on shape and data-movement ops.

Every op here moves or selects elements without arithmetic (Range and ConvertLike compute exactly
defined values), so every comparison is bit-exact (NaN equals NaN). Each case saves an IR file that
OpenVINO reads back, and both sides run that same file. Shape/axis inputs are given either as
Constants (irrun infers from their values at load) or as Parameters (irrun re-infers at run time).
Failures name the sweep, seed, case number and parameters.
"""
from __future__ import annotations

import re

import numpy as np
import openvino as ov
import pytest
from openvino.opset4.ops import range as range4
from openvino import opset1, opset3, opset6, opset7, opset8, opset12, opset15

import oracle as O
from oracle import assert_same, build, run_cpu, run_cpu_many

import irrun
from irrun.errors import IRError

DTYPES = (np.float32, np.float16, np.int32, np.int64, np.int8, np.uint8, np.bool_)


def rand(rng, shape, dtype):
    dtype = np.dtype(dtype)
    shape = tuple(int(s) for s in shape)
    if dtype == np.bool_:
        return np.asarray(rng.random(shape) < 0.5)
    if dtype.kind == "f":
        a = np.asarray((rng.standard_normal(shape) * 10).astype(dtype))
        m = rng.random(shape) < 0.1
        a[m] = rng.choice(np.array([np.nan, -np.inf, np.inf, -0.0], dtype), size=int(m.sum()))
        return a
    info = np.iinfo(dtype)
    return np.asarray(rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True))


reference = O.run_reference


def check(make, inputs, context, *, oracle="reference", patch=None):
    """Build, run OpenVINO (reference kernels, or the CPU plugin for ops without one) and irrun; compare
    bit-exact. Returns the built model.

    Node.evaluate hands back a scalar output as shape (1,) (Squeeze/Reshape to a scalar: the model
    declares [] and the CPU plugin gives ()), so a one-element result is compared in the declared shape."""
    built = build(make, inputs, patch=patch)
    compare(built, reference(built) if oracle == "reference" else run_cpu(built)[1], context)
    return built


def compare(built, expected, context):
    """irrun vs ``expected`` (OpenVINO's outputs for ``built``), bit-exact, as check() compares."""
    for k, out in enumerate(built.model.outputs):
        ps = out.get_partial_shape()
        if ps.is_static and len(ps) == 0 and expected[k].shape == (1,):
            expected[k] = expected[k].reshape(())
    model = irrun.load(str(built.xml))
    got = model.run(built.feed_dict)
    assert [t.element_type for t in model.outputs] == built.output_types, context
    assert_same(got, expected, built.output_names, context=context)


class Case:
    """Collects the Parameters of one case; `node(name, value, as_param)` returns a factory."""

    def __init__(self):
        self.inputs = {}

    def node(self, name, value, as_param=False):
        value = np.asarray(value)
        if as_param and value.ndim > 0:  # the oracle cannot feed a scalar Parameter (it becomes [1])
            self.inputs[name] = value
            return lambda p: p[name]
        return lambda p: const(value)


def const(value):
    value = np.asarray(value)
    if value.size == 0:  # opset1.constant refuses empty arrays
        return ov.op.Constant(O.ov_type(value.dtype), ov.Shape(list(value.shape)), [])
    return ov.op.Constant(ov.Tensor(np.array(value, order="C")))  # O.constant refuses f16 infinities


def describe(**kw):
    return ", ".join(f"{k}={v!r}" for k, v in kw.items())


# ============================================================== ShapeOf / Reshape / Squeeze / Unsqueeze

@pytest.mark.parametrize("version", [1, 3])
def test_shapeof(version):
    rng = np.random.default_rng(1)
    for case in range(12):
        shape = tuple(rng.integers(0, 4, rng.integers(0, 5)))
        x = rand(rng, shape, np.float32)
        out_type = ("i64", "i32")[case % 2]
        fac = (lambda p: opset1.shape_of(p["x"])) if version == 1 else (lambda p: opset3.shape_of(p["x"], out_type))
        check(fac, {"x": x}, describe(version=version, case=case, shape=shape, out_type=out_type))


def test_shapeof_folds_at_load():
    b = build(lambda p: opset1.reshape(p["x"], opset3.shape_of(p["y"], "i32"), False),
              {"x": np.arange(6, dtype=np.float32), "y": np.zeros((2, 3), np.float32)})
    model = irrun.load(str(b.xml))
    assert model.outputs[0].shape == (2, 3)
    assert_same(model.run(b.feed_dict), reference(b), b.output_names)


def test_reshape_sweep():
    rng = np.random.default_rng(2)
    for case in range(80):
        shape = tuple(int(d) for d in rng.integers(1, 5, rng.integers(0, 5)))
        if case % 13 == 0:
            shape = shape + (0,)
        n = int(np.prod(shape))
        # a random factorisation of n
        target = []
        rest = n
        for _ in range(rng.integers(0, 4)):
            divs = [d for d in range(1, rest + 1) if rest % d == 0] if rest else [0, 1, 2]
            d = int(rng.choice(divs))
            target.append(d)
            rest = rest // d if d else rest
        target.append(rest if n else 0)
        rng.shuffle(target)
        special_zero = bool(rng.integers(0, 2)) and n > 0  # see test_reshape_special_zero_skips_count_check
        pattern = list(target)
        if rng.random() < 0.5 and n:
            i = int(rng.integers(len(pattern)))
            pattern[i] = -1
        if special_zero:
            for i in range(min(len(pattern), len(shape))):
                if pattern[i] == shape[i] and rng.random() < 0.5 and pattern[i] != -1:
                    pattern[i] = 0
        dtype = DTYPES[case % len(DTYPES)]
        c = Case()
        x = c.node("x", rand(rng, shape, dtype), True)
        as_param = case % 3 == 0
        s = c.node("s", np.array(pattern, np.int64 if case % 2 else np.int32), as_param)
        ctx = describe(case=case, shape=shape, pattern=pattern, special_zero=special_zero, as_param=as_param)
        check(lambda p: opset1.reshape(x(p), s(p), special_zero), c.inputs, ctx)


def test_reshape_errors(tmp_path):
    for shape, pattern, sz in [((2, 3), [4, -1], False), ((2, 3), [-1, -1], False), ((2, 3), [7], False),
                               ((2, 3), [2, -2], False), ((2, 3), [2, 3, 0], True)]:
        c = Case()
        x = c.node("x", np.zeros(shape, np.float32), True)
        with pytest.raises(Exception):
            build(lambda p: opset1.reshape(x(p), O.constant(np.array(pattern)), sz), c.inputs)


def test_reshape_special_zero_skips_count_check():
    """OpenVINO compares element counts only when the pattern has no -1 and no special zero: [2,3] with
    [2,0,3] infers [2,3,3] (18 elements from 6). irrun infers the same shape and refuses to run it."""
    built = build(lambda p: opset1.reshape(p["x"], const(np.array([2, 0, 3])), True),
                  {"x": np.zeros((2, 3), np.float32)})
    assert tuple(built.model.output(0).get_shape()) == (2, 3, 3)
    model = irrun.load(str(built.xml))
    assert model.outputs[0].shape == (2, 3, 3)
    with pytest.raises(IRError, match="cannot reshape 6 elements"):
        model.run(built.feed_dict)


def test_reshape_minus_one_with_zero_sized_dims():
    """-1 is 1 when the other target dims multiply to 0 (as OpenVINO infers: [2,0] -> [0,-1] is [0,1])."""
    for shape, pattern, sz, expect in [((2, 0), [0, -1], False, (0, 1)), ((2, 0), [3, -1], False, (3, 0)),
                                       ((2, 0), [0, -1], True, (2, 0))]:
        c = Case()
        x = c.node("x", np.zeros(shape, np.float32), True)
        built = check(lambda p: opset1.reshape(x(p), const(np.array(pattern)), sz), c.inputs,
                      describe(shape=shape, pattern=pattern, special_zero=sz))
        assert tuple(built.model.output(0).get_shape()) == expect


@pytest.mark.parametrize("version", [1, 15])
def test_squeeze_sweep(version):
    rng = np.random.default_rng(3 + version)
    for case in range(40):
        rank = int(rng.integers(1, 5))
        shape = tuple(int(d) for d in rng.choice([1, 1, 2, 3], rank))
        dtype = DTYPES[case % len(DTYPES)]
        c = Case()
        x = c.node("x", rand(rng, shape, dtype), True)
        mode = case % 3
        patch = None
        if mode == 0:
            make = lambda p: opset15.squeeze(x(p))
            axes = None
            if version == 1:  # the Python factory of Squeeze-1 needs axes: write Squeeze-15's layer as opset1
                patch = lambda xml: re.sub(r'(type="Squeeze" version=")opset15"', r'\1opset1"', xml)
        else:
            k = int(rng.integers(0, rank + 1))
            axes = [int(a) for a in rng.choice(rank, k, replace=False)]
            # Also point at non-1 dims: OpenVINO leaves those in place.
            axes = [a - rank if rng.random() < 0.3 else a for a in axes]
            a = c.node("a", np.array(axes, np.int64), mode == 2)
            if version == 1:
                make = lambda p: opset1.squeeze(x(p), a(p))
            else:
                skip = bool(rng.integers(0, 2))
                make = lambda p: opset15.squeeze(x(p), a(p), skip)
        check(make, c.inputs, describe(version=version, case=case, shape=shape, axes=axes), patch=patch)


def test_unsqueeze_sweep():
    rng = np.random.default_rng(5)
    for case in range(40):
        rank = int(rng.integers(0, 4))
        shape = tuple(int(d) for d in rng.integers(1, 4, rank))
        k = int(rng.integers(1, 3))
        out_rank = rank + k
        axes = [int(v) for v in rng.choice(out_rank, k, replace=False)]
        axes = [a - out_rank if rng.random() < 0.4 else a for a in axes]
        if case % 7 == 0:
            axes = axes + [axes[0]]  # repeated values are ignored
        c = Case()
        x = c.node("x", rand(rng, shape, DTYPES[case % len(DTYPES)]), True)
        a = c.node("a", np.array(axes, np.int32), case % 4 == 0)
        check(lambda p: opset1.unsqueeze(x(p), a(p)), c.inputs, describe(case=case, shape=shape, axes=axes))


# ============================================================== Range

def test_range_v4_sweep():
    rng = np.random.default_rng(6)
    in_types = (np.float32, np.int32, np.int64, np.float16)
    out_types = ("f32", "i32", "i64", "f16", "i8", "u8", "f64")
    for case in range(80):
        in_type = in_types[case % len(in_types)]
        out_type = out_types[case % len(out_types)]
        if np.dtype(in_type).kind == "f":
            start, stop = rng.uniform(-10, 10, 2).round(2)
            step = rng.choice([-1, 1]) * rng.uniform(0.1, 3.5)
        else:
            start, stop = rng.integers(-20, 20, 2)
            step = rng.choice([-3, -2, -1, 1, 2, 3, 5])
        if out_type == "u8":
            start, stop, step = abs(start), abs(stop) + 5, abs(step)
        values = [np.array(v, in_type) for v in (start, stop, step)]
        c = Case()
        nodes = [c.node(n, v, case % 5 == 0) for n, v in zip("abc", values)]
        ctx = describe(case=case, in_type=in_type, out_type=out_type, values=[float(v) for v in values])
        check(lambda p: range4(*(f(p) for f in nodes), out_type), c.inputs, ctx)


def test_range_v1_sweep():
    rng = np.random.default_rng(7)
    types = (np.float32, np.int32, np.int64, np.float64, np.int8)  # Range-1 has no f16 reference kernel
    for case in range(40):
        t = types[case % len(types)]
        if np.dtype(t).kind == "f":
            start, stop = rng.uniform(-10, 10, 2)
            step = rng.choice([-1, 1]) * rng.uniform(0.2, 3)
        else:
            start, stop = rng.integers(-20, 20, 2)
            step = rng.choice([-3, -1, 1, 2, 4])
        c = Case()
        nodes = [c.node(n, np.array(v, t), case % 4 == 0) for n, v in zip("abc", (start, stop, step))]
        check(lambda p: opset1.range(*(f(p) for f in nodes)), c.inputs,
              describe(case=case, t=t, values=(start, stop, step)))


# ============================================================== Broadcast / Tile / ConvertLike

def test_broadcast_sweep():
    rng = np.random.default_rng(8)
    for case in range(80):
        version = (1, 3)[case % 2]
        modes = ["numpy", "explicit"] + (["bidirectional", "pdpd"] if version == 3 else [])
        mode = modes[case // 2 % len(modes)]
        out_rank = int(rng.integers(1, 5))
        target = [int(d) for d in rng.integers(1, 4, out_rank)]
        in_rank = int(rng.integers(0, out_rank + 1))
        mapping = None
        if mode == "explicit":
            mapping = sorted(int(a) for a in rng.choice(out_rank, in_rank, replace=False))
            shape = [target[a] if rng.random() < 0.7 else 1 for a in mapping]
        else:
            shape = [d if rng.random() < 0.6 else 1 for d in target[out_rank - in_rank:]]
            if mode == "pdpd":  # IR-read pdpd starts at axis 0: equal ranks, 1s on either side
                shape = [d if rng.random() < 0.6 else 1 for d in target]
                target = [1 if rng.random() < 0.3 else d for d in target]
            if mode == "bidirectional":
                # either side may be 1
                target = [1 if rng.random() < 0.3 else d for d in target]
                shape = shape if rng.random() < 0.5 else [1] * (out_rank - in_rank - 1) + shape if out_rank > in_rank else shape
        dtype = DTYPES[case % len(DTYPES)]
        c = Case()
        x = c.node("x", rand(rng, shape, dtype), True)
        t = c.node("t", np.array(target, np.int64), case % 5 == 0)
        fac = opset1.broadcast if version == 1 else opset3.broadcast
        if mode == "explicit":
            m = c.node("m", np.array(mapping, np.int64), False)
            make = lambda p: fac(x(p), t(p), m(p), mode)
        else:
            make = lambda p: fac(x(p), t(p), broadcast_spec=mode) if version == 3 else fac(x(p), t(p), mode=mode)
        check(make, c.inputs, describe(case=case, version=version, mode=mode, shape=shape, target=target,
                                       mapping=mapping))


def test_tile_sweep():
    rng = np.random.default_rng(9)
    for case in range(40):
        # zero-sized data crashes the reference Tile (segfault), so data is never empty here
        shape = tuple(int(d) for d in rng.integers(1, 4, rng.integers(0, 4)))
        reps = [int(r) for r in rng.integers(0 if case % 7 == 0 else 1, 4, rng.integers(0, 4))]
        if not shape and not reps:  # a scalar tiled by empty repeats also crashes the reference Tile
            reps = [2]
        c = Case()
        x = c.node("x", rand(rng, shape, DTYPES[case % len(DTYPES)]), True)
        r = c.node("r", np.array(reps, np.int64), case % 4 == 0)
        check(lambda p: opset1.tile(x(p), r(p)), c.inputs, describe(case=case, shape=shape, reps=reps))


def test_convert_like_sweep():
    rng = np.random.default_rng(10)
    types = (np.float32, np.float16, np.int32, np.int8, np.uint8, np.int64, np.bool_)
    for case in range(40):
        src, dst = types[case % len(types)], types[(case * 3 + 1) % len(types)]
        x = rand(rng, (3, 4), src)
        if np.dtype(src).kind == "f":
            x = np.where(np.isfinite(x), x, 1).astype(src)  # NaN/inf casts are implementation-defined
            if np.dtype(dst).kind in "iu":
                info = np.iinfo(dst)
                x = np.clip(x, info.min, info.max).astype(src)
        like = np.zeros((2,), dst)
        # ConvertLike has no reference kernel: the truth is the reference Convert to the same type.
        ctx = describe(case=case, src=src, dst=dst)
        built = build(lambda p: opset1.convert_like(p["x"], O.constant(like)), {"x": x})
        twin = build(lambda p: opset1.convert(p["x"], O.ov_type(dst)), {"x": x})
        assert_same(irrun.load(str(built.xml)).run(built.feed_dict), reference(twin), built.output_names,
                    context=ctx)


# ============================================================== Transpose / Concat / Split / VariadicSplit

def test_transpose_sweep():
    rng = np.random.default_rng(11)
    for case in range(40):
        rank = int(rng.integers(0, 5))
        shape = tuple(int(d) for d in rng.integers(1, 4, rank))
        order = [] if case % 6 == 0 else [int(a) for a in rng.permutation(rank)]
        c = Case()
        x = c.node("x", rand(rng, shape, DTYPES[case % len(DTYPES)]), True)
        o = c.node("o", np.array(order, np.int64), case % 4 == 1)
        check(lambda p: opset1.transpose(x(p), o(p)), c.inputs, describe(case=case, shape=shape, order=order))


def test_concat_sweep():
    rng = np.random.default_rng(12)
    for case in range(40):
        rank = int(rng.integers(1, 5))
        base = [int(d) for d in rng.integers(1, 4, rank)]
        axis = int(rng.integers(-rank, rank))
        n = int(rng.integers(1, 4))
        c = Case()
        nodes = []
        for i in range(n):
            shape = list(base)
            shape[axis] = int(rng.integers(0, 4))
            nodes.append(c.node(f"x{i}", rand(rng, shape, DTYPES[case % len(DTYPES)]), i != 1))
        check(lambda p: opset1.concat([f(p) for f in nodes], axis), c.inputs,
              describe(case=case, base=base, axis=axis, n=n))


def test_split_sweep():
    rng = np.random.default_rng(13)
    for case in range(40):
        rank = int(rng.integers(1, 4))
        shape = [int(d) for d in rng.integers(1, 4, rank)]
        axis = int(rng.integers(-rank, rank))
        k = int(rng.integers(1, 4))
        shape[axis] *= k
        c = Case()
        x = c.node("x", rand(rng, shape, DTYPES[case % len(DTYPES)]), True)
        a = c.node("a", np.array(axis, np.int64 if case % 2 else np.int32), case % 5 == 0)
        check(lambda p: opset1.split(x(p), a(p), k), c.inputs, describe(case=case, shape=shape, axis=axis, k=k))


def test_variadic_split_sweep():
    rng = np.random.default_rng(14)
    for case in range(40):
        rank = int(rng.integers(1, 4))
        shape = [int(d) for d in rng.integers(1, 6, rank)]
        axis = int(rng.integers(-rank, rank))
        dim = shape[axis]
        cuts = sorted(int(v) for v in rng.integers(0, dim + 1, rng.integers(0, 3)))
        lengths = [b - a for a, b in zip([0] + cuts, cuts + [dim])]
        if rng.random() < 0.5:
            lengths[int(rng.integers(len(lengths)))] = -1
        c = Case()
        x = c.node("x", rand(rng, shape, DTYPES[case % len(DTYPES)]), True)
        a = c.node("a", np.array(axis, np.int64), case % 5 == 0)
        s = c.node("s", np.array(lengths, np.int64 if case % 2 else np.int32), False)
        check(lambda p: opset1.variadic_split(x(p), a(p), s(p)), c.inputs,
              describe(case=case, shape=shape, axis=axis, lengths=lengths))


# ============================================================== Gather / GatherElements / ScatterUpdate

@pytest.mark.parametrize("version", [1, 7, 8])
def test_gather_sweep(version):
    rng = np.random.default_rng(15 + version)
    for case in range(50):
        rank = int(rng.integers(1, 5))
        shape = [int(d) for d in rng.integers(1, 4, rank)]
        axis = int(rng.integers(0, rank))
        batch_dims = 0 if version == 1 else int(rng.integers(0, axis + 1))
        idx_shape = shape[:batch_dims] + [int(d) for d in rng.integers(0 if case % 11 == 0 else 1, 4,
                                                                          rng.integers(0, 3))]
        dim = shape[axis]
        low, high = (-dim, dim) if version >= 7 else (0, dim)
        if version == 8 and case % 3 == 0:
            low, high = -dim - 2, dim + 2  # out of range gives 0
        idx = rng.integers(low, high, idx_shape)
        neg_axis = axis - rank if rng.random() < 0.4 else axis
        neg_bd = batch_dims - len(idx_shape) if version > 1 and batch_dims and rng.random() < 0.4 else batch_dims
        c = Case()
        x = c.node("x", rand(rng, shape, DTYPES[case % len(DTYPES)]), True)
        i = c.node("i", idx.astype(np.int64 if case % 2 else np.int32), case % 3 != 1)
        a = c.node("a", np.array(neg_axis, np.int64), case % 5 == 0)
        if version == 1:
            make = lambda p: opset1.gather(x(p), i(p), a(p))
        else:
            fac = opset7.gather if version == 7 else opset8.gather
            make = lambda p: fac(x(p), i(p), a(p), neg_bd)
        check(make, c.inputs, describe(version=version, case=case, shape=shape, axis=neg_axis,
                                       batch_dims=neg_bd, idx=idx.tolist()))


def test_gather_elements_sweep():
    rng = np.random.default_rng(18)
    cases = []
    for case in range(40):
        rank = int(rng.integers(1, 5))
        shape = [int(d) for d in rng.integers(1, 4, rank)]
        axis = int(rng.integers(-rank, rank))
        idx_shape = list(shape)
        idx_shape[axis] = int(rng.integers(1, 5))
        dim = shape[axis]
        idx = rng.integers(-dim, dim, idx_shape)
        c = Case()
        dtype = DTYPES[case % len(DTYPES)]
        data = rand(rng, shape, dtype)
        if dtype == np.int64:  # the CPU plugin narrows i64 data to i32
            data = data >> 40
        x = c.node("x", data, True)
        i = c.node("i", idx.astype(np.int64 if case % 2 else np.int32), case % 3 != 0)
        # GatherElements has no reference kernel: the CPU plugin is the oracle (i64 data kept small:
        # the plugin narrows it to i32).
        cases.append((build(lambda p: opset6.gather_elements(x(p), i(p), axis), c.inputs),
                      describe(case=case, shape=shape, axis=axis, idx=idx.tolist())))
    for (built, context), (_, expected) in zip(cases, run_cpu_many([built for built, _ in cases])):
        compare(built, expected, context)


def test_scatter_update_sweep():
    rng = np.random.default_rng(19)
    for case in range(40):
        rank = int(rng.integers(1, 4))
        shape = [int(d) for d in rng.integers(1, 5, rank)]
        axis = int(rng.integers(-rank, rank))
        a_pos = axis % rank
        dim = shape[a_pos]
        # 0-d indices crash the reference ScatterUpdate (vector range check), so indices have rank >= 1
        idx_shape = [int(d) for d in rng.integers(1, 3, rng.integers(1, 3))]
        # distinct indices (duplicates have an unspecified winner)
        count = int(np.prod(idx_shape))
        if count > dim:
            idx_shape, count = [dim], dim
        idx = rng.permutation(dim)[:count].reshape(idx_shape)
        dtype = DTYPES[case % len(DTYPES)]
        upd_shape = shape[:a_pos] + idx_shape + shape[a_pos + 1:]
        c = Case()
        x = c.node("x", rand(rng, shape, dtype), True)
        i = c.node("i", idx.astype(np.int64 if case % 2 else np.int32), case % 4 != 0)
        u = c.node("u", rand(rng, upd_shape, dtype), True)
        a = c.node("a", np.array(axis, np.int64), case % 5 == 0)
        check(lambda p: opset3.scatter_update(x(p), i(p), u(p), a(p)), c.inputs,
              describe(case=case, shape=shape, axis=axis, idx=idx.tolist()))


# ============================================================== Slice / StridedSlice

BIG = [np.iinfo(np.int64).max, np.iinfo(np.int64).min]


def _bound(rng, dim):
    r = rng.random()
    if r < 0.1:
        return int(rng.choice(BIG))
    if r < 0.25:
        return int(rng.integers(-2 * dim - 2, 2 * dim + 3))
    return int(rng.integers(-dim, dim + 1))


def test_slice_sweep():
    rng = np.random.default_rng(20)
    for case in range(80):
        rank = int(rng.integers(1, 5))
        shape = [int(d) for d in rng.integers(0 if case % 13 == 0 else 1, 6, rank)]
        use_axes = case % 2 == 0
        if use_axes:
            k = int(rng.integers(1, rank + 1))
            axes = [int(a) for a in rng.choice(rank, k, replace=False)]
            axes = [a - rank if rng.random() < 0.3 else a for a in axes]
        else:
            k = int(rng.integers(1, rank + 1))
            axes = list(range(k))
        start = [_bound(rng, shape[a]) for a in axes]
        stop = [_bound(rng, shape[a]) for a in axes]
        step = [int(rng.choice([-3, -2, -1, 1, 2, 3])) for _ in axes]
        itype = np.int64 if case % 3 else np.int32
        if itype == np.int32:
            start, stop = ([int(np.clip(v, -2**31, 2**31 - 1)) for v in vals] for vals in (start, stop))
        c = Case()
        x = c.node("x", rand(rng, shape, DTYPES[case % len(DTYPES)]), True)
        as_param = case % 4 == 1
        nodes = [c.node(n, np.array(v, itype), as_param) for n, v in (("b", start), ("e", stop), ("s", step))]
        if use_axes:
            ax = c.node("ax", np.array(axes, itype), False)
            make = lambda p: opset8.slice(*(f(p) for f in [x] + nodes), ax(p))
        else:
            make = lambda p: opset8.slice(*(f(p) for f in [x] + nodes))
        check(make, c.inputs, describe(case=case, shape=shape, start=start, stop=stop, step=step,
                                       axes=axes if use_axes else None))


def test_strided_slice_sweep():
    rng = np.random.default_rng(21)
    for case in range(120):
        rank = int(rng.integers(1, 5))
        shape = [int(d) for d in rng.integers(1, 6, rank)]
        n = int(rng.integers(1, rank + 2))
        begin, end, stride = [], [], []
        bm, em, nm, sm, elm = ([0] * n for _ in range(5))
        if case % 3 == 0:
            elm[int(rng.integers(n))] = 1
        axis = 0
        for i in range(n):
            if elm[i]:
                begin.append(0), end.append(0), stride.append(1)
                continue
            if rng.random() < 0.15:
                nm[i] = 1
                begin.append(0), end.append(0), stride.append(1)
                continue
            dim = shape[min(axis, rank - 1)]
            if rng.random() < 0.2:
                sm[i] = 1
                begin.append(int(rng.integers(-dim, dim))), end.append(0), stride.append(1)
            else:
                begin.append(_bound(rng, dim)), end.append(_bound(rng, dim))
                stride.append(int(rng.choice([-2, -1, 1, 1, 2, 3])))
                bm[i] = int(rng.random() < 0.3)
                em[i] = int(rng.random() < 0.3)
            axis += 1
        consumed = sum(1 for i in range(n) if not nm[i] and not elm[i])
        if consumed > rank:
            continue
        c = Case()
        x = c.node("x", rand(rng, shape, DTYPES[case % len(DTYPES)]), True)
        as_param = case % 5 == 2
        b, e, s = (c.node(nm_, np.array(v, np.int64), as_param) for nm_, v in (("b", begin), ("e", end),
                                                                             ("s", stride)))
        ctx = describe(case=case, shape=shape, begin=begin, end=end, stride=stride, bm=bm, em=em, nm=nm, sm=sm,
                       elm=elm)
        check(lambda p: opset1.strided_slice(x(p), b(p), e(p), s(p), bm, em, nm, sm, elm), c.inputs, ctx)


# ============================================================== Pad

@pytest.mark.parametrize("version", [1, 12])
def test_pad_sweep(version):
    rng = np.random.default_rng(22 + version)
    modes = ("constant", "edge", "reflect", "symmetric")
    for case in range(60):
        mode = modes[case % 4]
        rank = int(rng.integers(1, 4))
        shape = [int(d) for d in rng.integers(1, 5, rank)]
        limit = [d - 1 if mode == "reflect" else d for d in shape]
        lo = -2 if version == 12 else 0
        pb = [int(rng.integers(max(lo, -d), lim + 1)) for lim, d in zip(limit, shape)]
        pe = [int(rng.integers(max(lo, -d - b), lim + 1)) for lim, d, b in zip(limit, shape, pb)]
        dtype = DTYPES[case % len(DTYPES)]
        c = Case()
        x = c.node("x", rand(rng, shape, dtype), True)
        as_param = case % 5 == 0
        b = c.node("b", np.array(pb, np.int64), as_param)
        e = c.node("e", np.array(pe, np.int64), as_param)
        fac = opset1.pad if version == 1 else opset12.pad
        if mode == "constant" and case % 8 == 0:
            v = c.node("v", rand(rng, (), dtype), case % 16 == 0)
            make = lambda p: fac(x(p), b(p), e(p), mode, v(p))
        else:
            make = lambda p: fac(x(p), b(p), e(p), mode)
        check(make, c.inputs, describe(version=version, case=case, mode=mode, shape=shape, pb=pb, pe=pe))


# ============================================================== DepthToSpace / SpaceToDepth

@pytest.mark.parametrize("op", ["d2s", "s2d"])
def test_depth_space_sweep(op):
    rng = np.random.default_rng(24)
    for case in range(30):
        k = int(rng.integers(1, 4))
        bs = int(rng.integers(1, 4))
        mode = ("blocks_first", "depth_first")[case % 2]
        if op == "d2s":
            shape = [int(rng.integers(1, 3)), int(rng.integers(1, 3)) * bs ** k] + [int(d) for d in rng.integers(1, 3, k)]
            make = lambda p: opset1.depth_to_space(p["x"], mode, bs)
        else:
            shape = [int(rng.integers(1, 3)), int(rng.integers(1, 3))] + [int(d) * bs for d in rng.integers(1, 3, k)]
            make = lambda p: opset1.space_to_depth(p["x"], mode, bs)
        check(make, {"x": rand(rng, shape, DTYPES[case % len(DTYPES)])},
              describe(op=op, case=case, shape=shape, mode=mode, bs=bs))


def test_scatter_update_refuses_negative_indices():
    """OpenVINO's reference refuses negative indices (the spec does not say); irrun does too."""
    built = build(lambda p: opset3.scatter_update(p["x"], O.constant(np.array([-1])), p["u"], O.constant(np.array(0))),
                  {"x": np.zeros((3, 2), np.float32), "u": np.ones((1, 2), np.float32)})
    with pytest.raises(RuntimeError, match="out of bounds"):
        reference(built)
    with pytest.raises(IRError, match="out of range"):
        irrun.load(str(built.xml)).run(built.feed_dict)


@pytest.mark.parametrize("indices", [[0], [0, 1, 2, 3], [3, 2, 1, 0], [-4, 1, 2, 3], [[0, 1], [2, 3]], [0, 1, 2],
                                     [0, 1, 2, 4]])
def test_gather_in_order_and_take_paths(indices):
    """Gather-8 with batch_dims 0: indices that take every element in order (the kernel hands back its
    input), a permutation, a negative index, 2-D indices, a prefix, and one out of range (gives 0)."""
    rng = np.random.default_rng(7)
    c = Case()
    x = c.node("x", rng.standard_normal((2, 4, 3)).astype(np.float32), True)
    i = c.node("i", np.array(indices, np.int64), True)
    check(lambda p: opset8.gather(x(p), i(p), const(np.array(1, np.int64)), 0), c.inputs, f"indices={indices}")
