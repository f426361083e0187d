"""irrun vs OpenVINO on DFT-7, IDFT-7, RDFT-9, IRDFT-9, STFT-15 and ISTFT-16.

Oracle: the CPU plugin (f32 inference precision). OpenVINO 2026.4.1 has no Node.evaluate for any of these
ops (evaluate returns False). Where the CPU plugin cannot run a case (RDFT with a signal size larger than
the input: "not supported yet"), the truth is the CPU plugin on the equivalent model: the input zero-padded
by hand and transformed at its full size.

irrun computes every transform in float64 and rounds once; the CPU plugin computes in f32 (a radix-2 FFT
for power-of-two lengths, a direct O(n^2) DFT otherwise). With inputs N(0, 1) a result element sums n
terms of magnitude ~1 per transformed axis, and the f32 error grows with the direct DFT's length:
atol = 2e-6 * N + 1e-5, N the product of the transformed lengths (measured worst cases are 4x below).
f16 outputs add one f16 ulp of the expected value (both sides round once from f32 / f64).
ISTFT divides by the overlap-added squared window; windows are drawn in [0.5, 1.5] so that sum stays
away from 0 and the same tolerance holds.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from openvino import opset1, opset7, opset9, opset15, opset16

import irrun
import oracle as O
from oracle import assert_same, build, run_cpu, run_cpu_many, run_irrun
from irrun.errors import IRError


def tolerance(n):
    return 2e-6 * n + 1e-5


def const(value, dtype=np.int64):
    return opset1.constant(np.asarray(value, dtype))


def random_axes(rng, rank):
    """A non-empty subset of [0, rank) in random order, some written negative."""
    count = int(rng.integers(1, rank + 1))
    axes = [int(a) for a in rng.permutation(rank)[:count]]
    return [a - rank if rng.random() < 0.4 else a for a in axes]


def check(make, inputs, context, n, f16=False):
    return check_many([(build(make, inputs), context, n, f16)])[0]


def check_many(cases, twins=None):
    """Compare irrun with the CPU plugin on each (built, context, n, f16) case, or on the same-position model
    of ``twins``, all compiled as one model; returns the CPU plugin's outputs."""
    oracle = [expected for _, expected in run_cpu_many(twins or [built for built, *_ in cases])]
    for (built, context, n, f16), expected in zip(cases, oracle):
        assert_same(run_irrun(built, context), expected, built.output_names, atol=tolerance(n), f16_ulp=f16,
                    context=context)
    return oracle


# ---------------------------------------------------------------- DFT / IDFT

@pytest.mark.parametrize("inverse", [False, True])
def test_dft_sweep(inverse):
    rng = np.random.default_rng(100 + inverse)
    factory = opset7.idft if inverse else opset7.dft
    cases = []
    for case in range(12):
        crank = int(rng.integers(1, 4))
        shape = [int(d) for d in rng.integers(1, 9, crank)]
        dtype = np.float16 if case % 4 == 3 else np.float32
        x = rng.standard_normal((*shape, 2)).astype(dtype)
        axes = random_axes(rng, crank)
        sizes = None
        if rng.random() < 0.6:
            sizes = [int(rng.choice([-1, max(1, shape[a] - 3), shape[a] + int(rng.integers(1, 5))])) for a in axes]
        index_type = np.int32 if rng.random() < 0.3 else np.int64
        n = math.prod(shape[a] if sizes is None or s == -1 else s
                      for a, s in zip(axes, sizes or [-1] * len(axes)))

        def make(p):
            args = [p["x"], const(axes, index_type)] + ([const(sizes, index_type)] if sizes else [])
            return factory(*args)

        cases.append((build(make, {"x": x}), f"{factory.__name__} case {case}: shape={shape} axes={axes} "
                                             f"sizes={sizes} {np.dtype(dtype).name}", n, dtype == np.float16))
    check_many(cases)


def test_idft_scales_by_the_transformed_size():
    # hand-written: the inverse DFT of a unit impulse over 4 points is 1/4 everywhere
    x = np.zeros((4, 2), np.float32)
    x[0, 0] = 1.0
    expected = check(lambda p: opset7.idft(p["x"], const([0])), {"x": x}, "impulse", 4)
    np.testing.assert_array_equal(expected[0][:, 0], [0.25] * 4)


def test_dft_signal_size_zero_gives_an_empty_axis():
    x = np.ones((3, 4, 2), np.float32)
    built = build(lambda p: opset7.dft(p["x"], const([1]), const([0])), {"x": x})
    assert list(built.model.outputs[0].get_shape()) == [3, 0, 2]
    assert run_irrun(built)[built.output_names[0]].shape == (3, 0, 2)


# ---------------------------------------------------------------- RDFT / IRDFT

def test_rdft_sweep():
    rng = np.random.default_rng(110)
    cases, twins = [], []
    for case in range(12):
        rank = int(rng.integers(1, 4))
        shape = [int(d) for d in rng.integers(1, 9, rank)]
        dtype = np.float16 if case % 4 == 3 else np.float32
        x = rng.standard_normal(shape).astype(dtype)
        axes = random_axes(rng, rank)
        # the CPU plugin supports signal sizes up to the input size only: larger ones in the padding test
        sizes = [int(rng.choice([-1, rng.integers(1, shape[a] + 1)])) for a in axes] if rng.random() < 0.6 else None
        n = math.prod(shape[a] if sizes is None or s == -1 else s for a, s in zip(axes, sizes or [-1] * len(axes)))

        def make(p, sizes=sizes):
            return opset9.rdft(p["x"], const(axes), *([const(sizes)] if sizes else []))

        context = f"rdft case {case}: shape={shape} axes={axes} sizes={sizes}"
        built = build(make, {"x": x})
        # the CPU plugin cannot compile a signal size of -1 (see the next test): its twin spells sizes out
        resolved = None if sizes is None else [shape[a] if s == -1 else s for a, s in zip(axes, sizes)]
        twins.append(build(lambda p: make(p, resolved), {"x": x}))
        cases.append((built, context, n, dtype == np.float16))
    check_many(cases, twins)


def test_cpu_plugin_cannot_compile_rdft_with_signal_size_minus_one():
    # pinned CPU-plugin limitation: irrun (like the shape inference) reads -1 as "the input's size"
    x = np.ones((3, 6), np.float32)
    built = build(lambda p: opset9.rdft(p["x"], const([1]), const([-1])), {"x": x})
    assert list(built.model.outputs[0].get_shape()) == [3, 4, 2]
    with pytest.raises(O.OracleUnsupported):
        run_cpu(built)
    got = run_irrun(built)[built.output_names[0]]
    np.testing.assert_array_equal(got[:, 0], [[6, 0]] * 3)  # hand-written: the sum, then zeros
    np.testing.assert_array_equal(got[:, 1:], np.zeros((3, 3, 2)))


def test_rdft_signal_size_larger_than_input_zero_pads():
    rng = np.random.default_rng(111)
    x = rng.standard_normal((3, 5, 4)).astype(np.float32)
    built = build(lambda p: opset9.rdft(p["x"], const([2, -2]), const([7, 9])), {"x": x})
    padded = np.zeros((3, 9, 7), np.float32)
    padded[:, :5, :4] = x
    twin = build(lambda p: opset9.rdft(p["x"], const([2, 1])), {"x": padded})
    _, expected = run_cpu(twin)
    assert_same(run_irrun(built), expected, built.output_names, atol=tolerance(63))


def test_irdft_sweep():
    rng = np.random.default_rng(120)
    cases, twins = [], []
    for case in range(12):
        crank = int(rng.integers(1, 4))
        shape = [int(d) for d in rng.integers(1, 7, crank)]
        axes = random_axes(rng, crank)
        shape[axes[-1]] = max(2, shape[axes[-1]])  # a default output length 2 * (n - 1) > 0
        dtype = np.float16 if case % 4 == 3 else np.float32
        x = rng.standard_normal((*shape, 2)).astype(dtype)
        sizes = None
        if rng.random() < 0.6:
            sizes = [int(rng.choice([-1, max(1, shape[a] - 2), shape[a] + int(rng.integers(1, 5))])) for a in axes]
        last = axes[-1]
        lengths = [shape[a] if sizes is None or s == -1 else s for a, s in zip(axes, sizes or [-1] * len(axes))]
        if sizes is None or sizes[-1] == -1:
            lengths[-1] = 2 * (shape[last] - 1)
        n = math.prod(lengths)

        def make(p, sizes=sizes):
            return opset9.irdft(p["x"], const(axes), *([const(sizes)] if sizes else []))

        context = f"irdft case {case}: shape={shape} axes={axes} sizes={sizes}"
        built = build(make, {"x": x})
        # the CPU plugin cannot compile a signal size of -1 and zero-pads wrongly (see below): its twin spells
        # the sizes out and gets the input zero-padded by hand
        twins.append(irdft_twin(x, axes, lengths))
        cases.append((built, context, n, dtype == np.float16))
    check_many(cases, twins)


def test_signal_size_below_minus_one_is_refused():
    # OpenVINO's shape inference turns a size of -2 into an empty axis (it reads the file); irrun refuses to
    # run it, with the stricter rule attr.range.spec
    built = build(lambda p: opset7.dft(p["x"], p["a"], p["s"]),
                  {"x": np.zeros((3, 4, 2), np.float32), "a": np.array([1]), "s": np.array([-2])})
    node = opset7.dft(O.parameter("x", (3, 4, 2), np.float32), const([1]), const([-2]))
    assert list(node.get_output_shape(0)) == [3, 0, 2]
    with pytest.raises(IRError) as error:
        irrun.load(str(built.xml)).run(built.feed_dict)
    assert error.value.rule == "attr.range.spec"


def irdft_twin(x, axes, lengths):
    """IRDFT to these output lengths as the CPU plugin gets it right: every signal size spelled out and the
    input trimmed or zero-padded by hand to the bins it needs (the size on outer axes, length // 2 + 1 on
    the last), so the plugin itself neither trims nor pads."""
    rank = x.ndim - 1
    axes = [a % rank for a in axes]
    needed = [*lengths[:-1], lengths[-1] // 2 + 1]
    pads = [(0, 0)] * x.ndim
    index = [slice(None)] * x.ndim
    for axis, n in zip(axes, needed):
        pads[axis] = (0, max(0, n - x.shape[axis]))
        index[axis] = slice(0, n)
    fitted = np.pad(x[tuple(index)], pads)
    return build(lambda p: opset9.irdft(p["x"], const(axes), const(lengths)), {"x": fitted})


@pytest.mark.parametrize("shape, axes, lengths", [((4, 3), [0, 1], [4, 6]), ((4, 6, 6), [0, 1, 2], [4, 4, 10])])
def test_cpu_plugin_irdft_resizing_is_wrong(shape, axes, lengths):
    # pinned: the CPU plugin's IRDFT gives wrong values when a signal size needs more input than there is
    # (2 axes) or trims an outer axis (3 axes); the reference (and irrun) zero-pads and trims, which the
    # twin with a hand-fitted input confirms
    x = np.random.default_rng(121).standard_normal((*shape, 2)).astype(np.float32)
    built = build(lambda p: opset9.irdft(p["x"], const(axes), const(lengths)), {"x": x})
    _, direct = run_cpu(built)
    _, expected = run_cpu(irdft_twin(x, axes, lengths))
    assert not np.allclose(direct[0], expected[0], atol=1e-2)
    assert_same(run_irrun(built), expected, built.output_names, atol=tolerance(math.prod(lengths)))


def test_irdft_ignores_the_imaginary_part_of_bin_zero():
    # hand-written: a spectrum [1 + 5i, 0, 0] over output length 4 is the constant 1/4
    x = np.zeros((3, 2), np.float32)
    x[0] = (1.0, 5.0)
    expected = check(lambda p: opset9.irdft(p["x"], const([0])), {"x": x}, "dc", 4)
    np.testing.assert_array_equal(expected[0], [0.25] * 4)


# ---------------------------------------------------------------- invalid inputs

@pytest.mark.parametrize("factory, shape, axes, sizes, rule", [
    (opset7.dft, (3, 4, 2), [2], None, "attr.range"),        # the complex pair is not an axis
    (opset7.dft, (3, 4, 2), [-3], None, "attr.range"),
    (opset7.dft, (3, 4, 2), [1, -1], None, "attr.range"),     # the same axis twice
    (opset9.irdft, (3, 4, 2), [-3], None, "attr.range"),
    (opset9.rdft, (3, 4), [2], None, "attr.range"),
    (opset9.rdft, (3, 4), [-3], None, "attr.range"),
])
def test_invalid_axes_are_refused(factory, shape, axes, sizes, rule):
    with pytest.raises(RuntimeError):
        factory(O.parameter("x", shape, np.float32), const(axes), *([const(sizes)] if sizes else []))
    inputs = {"x": np.zeros(shape, np.float32), "a": np.array(axes, np.int64)}
    if sizes:
        inputs["s"] = np.array(sizes, np.int64)
    built = build(lambda p: factory(p["x"], p["a"], *([p["s"]] if sizes else [])), inputs)
    with pytest.raises(IRError) as info:
        irrun.load(str(built.xml)).run(built.feed_dict)
    assert info.value.rule == rule, info.value


def info(shape, type_name="f32", value=None):
    from irrun.ir.types import ELEMENT_TYPES
    from irrun.ops.registry import TensorInfo

    return TensorInfo(tuple(shape), ELEMENT_TYPES[type_name], None if value is None else np.asarray(value))


def refused(op_class, attrs, infos):
    """irrun's inference (the checker's rules) on these input infos: the rule of the error it raises."""
    from irrun.ops.registry import Context

    values = {name: attr.default for name, attr in op_class.attributes.items()}
    values.update(attrs)
    with pytest.raises(IRError) as error:
        op_class(values, Context()).infer(infos)
    return error.value.rule


def ones(n, dtype=np.float32):
    return const(np.ones(n), dtype)


STFT_ATTRS = {"transpose_frames": False}
ISTFT_ATTRS = {"center": False, "normalized": False}
I64 = "i64"

# (OpenVINO factory call that must fail, irrun op, attributes, input infos, rule)
INVALID = [
    (lambda: opset7.dft(O.parameter("x", (3, 4, 3), np.float32), const([0])),
     "DFT", {}, [info((3, 4, 3)), info((1,), I64, [0])], "port.dims"),
    (lambda: opset7.dft(O.parameter("x", (2,), np.float32), const([0])),
     "DFT", {}, [info((2,)), info((1,), I64, [0])], "port.rank"),
    (lambda: opset7.dft(O.parameter("x", (3, 2), np.float64), const([0])),
     "DFT", {}, [info((3, 2), "f64"), info((1,), I64, [0])], "port.type"),
    (lambda: opset7.dft(O.parameter("x", (3, 4, 2), np.float32), const([0, 1, 2])),
     "DFT", {}, [info((3, 4, 2)), info((3,), I64, [0, 1, 2])], "port.dims"),
    (lambda: opset7.dft(O.parameter("x", (3, 4, 2), np.float32), const([0]), const([3, 3])),
     "DFT", {}, [info((3, 4, 2)), info((1,), I64, [0]), info((2,), I64, [3, 3])], "port.dims"),
    (lambda: opset7.dft(O.parameter("x", (3, 2), np.float32), const([0], np.float32)),
     "DFT", {}, [info((3, 2)), info((1,), "f32", [0])], "port.type"),
    (lambda: opset7.dft(O.parameter("x", (3, 2), np.float32), const([[0]])),
     "DFT", {}, [info((3, 2)), info((1, 1), I64, [[0]])], "port.rank"),
    (lambda: opset15.stft(O.parameter("x", (2, 2, 20), np.float32), ones(4), const(6), const(3), False),
     "STFT", STFT_ATTRS, [info((2, 2, 20)), info((4,)), info((), I64, 6), info((), I64, 3)], "port.rank"),
    (lambda: opset15.stft(O.parameter("x", (2, 20), np.float32), ones(7), const(6), const(3), False),
     "STFT", STFT_ATTRS, [info((2, 20)), info((7,)), info((), I64, 6), info((), I64, 3)], "port.dims"),
    (lambda: opset15.stft(O.parameter("x", (2, 5), np.float32), ones(4), const(6), const(3), False),
     "STFT", STFT_ATTRS, [info((2, 5)), info((4,)), info((), I64, 6), info((), I64, 3)], "attr.range"),
    (lambda: opset15.stft(O.parameter("x", (2, 9), np.float32), ones(4), const(6), const(0), False),
     "STFT", STFT_ATTRS, [info((2, 9)), info((4,)), info((), I64, 6), info((), I64, 0)], "attr.range"),
    (lambda: opset15.stft(O.parameter("x", (2, 9), np.float32), ones(4, np.float16), const(6), const(3), False),
     "STFT", STFT_ATTRS, [info((2, 9)), info((4,), "f16"), info((), I64, 6), info((), I64, 3)], "port.type"),
    (lambda: opset15.stft(O.parameter("x", (2, 9), np.float32), ones(4), const([6]), const(3), False),
     "STFT", STFT_ATTRS, [info((2, 9)), info((4,)), info((1,), I64, [6]), info((), I64, 3)], "port.rank"),
    (lambda: opset16.istft(O.parameter("x", (2, 5, 5, 2), np.float32), ones(6), const(6), const(3), False, False),
     "ISTFT", ISTFT_ATTRS, [info((2, 5, 5, 2)), info((6,)), info((), I64, 6), info((), I64, 3)], "port.dims"),
    (lambda: opset16.istft(O.parameter("x", (4, 2), np.float32), ones(6), const(6), const(3), False, False),
     "ISTFT", ISTFT_ATTRS, [info((4, 2)), info((6,)), info((), I64, 6), info((), I64, 3)], "port.rank"),
    (lambda: opset16.istft(O.parameter("x", (2, 4, 5, 2), np.float32), ones(6), const(6), const(0), False, False),
     "ISTFT", ISTFT_ATTRS, [info((2, 4, 5, 2)), info((6,)), info((), I64, 6), info((), I64, 0)], "attr.range"),
]


@pytest.mark.parametrize("case", range(len(INVALID)))
def test_invalid_inputs_are_refused(case):
    from irrun.ops.registry import lookup

    make, op_type, attrs, infos, rule = INVALID[case]
    with pytest.raises(RuntimeError):
        make()
    version = {"DFT": 7, "STFT": 15, "ISTFT": 16}[op_type]
    assert refused(lookup(op_type, version), attrs, infos) == rule


# ---------------------------------------------------------------- STFT / ISTFT

def test_stft_sweep():
    rng = np.random.default_rng(130)
    cases = []
    for case in range(12):
        frame_size = int(rng.integers(1, 12))
        length = frame_size + int(rng.integers(0, 20))
        batch = [] if rng.random() < 0.3 else [int(rng.integers(1, 4))]
        window_length = int(rng.integers(1, frame_size + 1))
        step = int(rng.integers(1, 2 * frame_size + 2))
        transpose = bool(rng.random() < 0.5)
        dtype = np.float16 if case % 4 == 3 else np.float32
        signal = rng.standard_normal((*batch, length)).astype(dtype)
        window = rng.uniform(0.5, 1.5, window_length).astype(dtype)
        index_type = np.int32 if rng.random() < 0.3 else np.int64
        as_param = rng.random() < 0.3  # frame sizes known only at run time

        def make(p):
            size, step_node = (p["fs"], p["st"]) if as_param else (const(frame_size, index_type),
                                                                    const(step, index_type))
            return opset15.stft(p["x"], p["w"], size, step_node, transpose)

        inputs = {"x": signal, "w": window}
        if as_param:
            inputs.update(fs=np.array(frame_size, index_type), st=np.array(step, index_type))
        cases.append((build(make, inputs), f"stft case {case}: signal {signal.shape} window {window_length} "
                                           f"frame {frame_size} step {step} transpose {transpose} "
                                           f"{np.dtype(dtype).name}", frame_size, dtype == np.float16))
    check_many(cases)


def test_istft_sweep():
    rng = np.random.default_rng(140)
    cases = []
    for case in range(12):
        frame_size = int(rng.integers(1, 12))
        frames = int(rng.integers(1, 7))
        batch = [] if rng.random() < 0.3 else [int(rng.integers(1, 4))]
        window_length = int(rng.integers(1, frame_size + 1))
        step = int(rng.integers(1, frame_size + 3))
        center, normalized = bool(rng.random() < 0.5), bool(rng.random() < 0.5)
        dtype = np.float16 if case % 4 == 3 else np.float32
        data = rng.standard_normal((*batch, frame_size // 2 + 1, frames, 2)).astype(dtype)
        window = rng.uniform(0.5, 1.5, window_length).astype(dtype)
        full = (frames - 1) * step + frame_size
        natural = full - 2 * (frame_size // 2) if center else full
        length = None if rng.random() < 0.5 else int(rng.integers(1, full + 4))
        if natural <= 0 and length is None:
            length = int(rng.integers(1, full + 4))

        def make(p):
            extra = [] if length is None else [const(length)]
            return opset16.istft(p["x"], p["w"], const(frame_size), const(step), center, normalized, *extra)

        cases.append((build(make, {"x": data, "w": window}),
                      f"istft case {case}: data {data.shape} window {window_length} frame {frame_size} step {step} "
                      f"center {center} normalized {normalized} length {length} {np.dtype(dtype).name}",
                      frame_size, dtype == np.float16))
    check_many(cases)


def test_istft_inverts_stft():
    # hand-checkable property: with a window whose squares overlap-add to a constant, ISTFT(STFT(x)) == x
    rng = np.random.default_rng(150)
    x = rng.standard_normal((2, 32)).astype(np.float32)
    window = np.ones(8, np.float32)

    def make(p):
        spectrum = opset15.stft(p["x"], const(window, np.float32), const(8), const(4), True)
        return opset16.istft(spectrum, const(window, np.float32), const(8), const(4), False, False, const(32))

    expected = check(make, {"x": x}, "roundtrip", 8)
    np.testing.assert_allclose(expected[0], x, atol=1e-5)


def test_istft_length_zero_gives_an_empty_signal():
    # OpenVINO's shape inference gives [2, 0] for a length of 0, and irrun follows it; its reference kernel
    # would write the natural length into that empty buffer and its CPU plugin crashes the process (not run)
    data = np.random.default_rng(160).standard_normal((2, 4, 5, 2)).astype(np.float32)
    built = build(lambda p: opset16.istft(p["x"], const(np.ones(6), np.float32), const(6), const(3), True, False,
                                          const(0)), {"x": data})
    assert list(built.model.outputs[0].get_shape()) == [2, 0]
    assert run_irrun(built)[built.output_names[0]].shape == (2, 0)


def test_istft_negative_length_is_refused():
    data = np.random.default_rng(161).standard_normal((2, 4, 5, 2)).astype(np.float32)
    built = build(lambda p: opset16.istft(p["x"], const(np.ones(6), np.float32), const(6), const(3), True, False,
                                          p["n"]), {"x": data, "n": np.array(-1, np.int64)})
    if O.cpu_reports_run_time_errors():
        with pytest.raises(RuntimeError, match="not in range"):
            run_cpu(built)
    with pytest.raises(IRError) as error:
        irrun.load(str(built.xml)).run(built.feed_dict)
    assert error.value.rule == "attr.range"


# ---------------------------------------------------------------- models from OpenVINO's ONNX frontend

ONNX_MODELS = sorted((Path(__file__).parent / "data" / "onnx_signal").iterdir())


@pytest.mark.parametrize("folder", ONNX_MODELS, ids=lambda p: p.name)
def test_onnx_frontend_model(folder):
    """IRs made by tools/make_onnx_signal_models.py: ONNX DFT-17 (-> DFT/IDFT/RDFT with dft_length trimming
    and padding) and STFT-17 (-> Slice/Concat/Multiply/RDFT); expected outputs from the CPU plugin."""
    model = irrun.load(str(folder / "model.xml"))
    inputs = dict(np.load(folder / "inputs.npz"))
    expected = dict(np.load(folder / "expected.npz"))
    got = model.run(inputs)
    assert list(got) == list(expected)
    assert_same(got, list(expected.values()), list(expected), atol=tolerance(16), context=folder.name)


@pytest.mark.parametrize("name", ["dft", "dft_pad", "rdft", "irdft", "stft", "istft"])
def test_empty_tensors(name):
    """Empty batches (and an empty axis zero-padded to a size): OpenVINO's inferred shapes, zero values."""
    window = const(np.ones(3), np.float32)
    make, x = {
        "dft": (lambda p: opset7.dft(p["x"], const([1])), np.zeros((0, 4, 2), np.float32)),
        "dft_pad": (lambda p: opset7.dft(p["x"], const([0]), const([3])), np.zeros((0, 4, 2), np.float32)),
        "rdft": (lambda p: opset9.rdft(p["x"], const([1])), np.zeros((0, 4), np.float32)),
        "irdft": (lambda p: opset9.irdft(p["x"], const([1])), np.zeros((0, 4, 2), np.float32)),
        "stft": (lambda p: opset15.stft(p["x"], window, const(4), const(2), False), np.zeros((0, 10), np.float32)),
        "istft": (lambda p: opset16.istft(p["x"], window, const(4), const(2), False, False),
                  np.zeros((0, 3, 4, 2), np.float32)),
    }[name]
    built = build(make, {"x": x})
    got = run_irrun(built)[built.output_names[0]]
    assert got.shape == tuple(built.model.outputs[0].get_shape())
    assert not got.any()


@pytest.mark.parametrize("factory", [opset7.dft, opset7.idft, opset9.irdft])
def test_nan_spreads_through_its_transform_only(factory):
    # a NaN makes every output of its transform NaN, real and imaginary parts (OpenVINO multiplies each input
    # by complex twiddles); the other transforms stay finite and match
    x = np.random.default_rng(170).standard_normal((3, 4, 2)).astype(np.float32)
    x[0, 1, 0] = np.nan
    built = build(lambda p: factory(p["x"], const([1])), {"x": x})
    _, expected = run_cpu(built)
    got = run_irrun(built)[built.output_names[0]]
    assert np.isnan(expected[0][0]).all() and np.isnan(got[0]).all()
    assert_same([got[1:]], [expected[0][1:]], atol=tolerance(6))


def test_nan_in_rdft_and_stft():
    x = np.random.default_rng(171).standard_normal((2, 12)).astype(np.float32)
    x[0, 5] = np.nan
    rdft = build(lambda p: opset9.rdft(p["x"], const([1])), {"x": x})
    stft = build(lambda p: opset15.stft(p["x"], const(np.ones(4), np.float32), const(4), const(4), False), {"x": x})
    for built, (_, expected) in zip((rdft, stft), run_cpu_many([rdft, stft])):
        assert_same(run_irrun(built), expected, built.output_names, atol=tolerance(12))
