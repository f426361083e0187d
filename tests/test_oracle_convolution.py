"""irrun vs OpenVINO on Convolution-1, GroupConvolution-1, ConvolutionBackpropData-1 and
GroupConvolutionBackpropData-1.

Oracle: OpenVINO 2026.4 ships no core reference evaluate() for any convolution (Node.evaluate returns
False), so the CPU plugin (f32 inference precision) is the truth. Every case saves an IR file that both
OpenVINO and irrun read.

Tolerance: both sides accumulate L = C_in/group * prod(kernel) products in f32, in different orders. Data and
weights are N(0, 1), so a result has magnitude ~sqrt(L) and the rounding error grows like eps32 * L; we allow
atol = 4e-6 * L + 1e-5 (f32). f16 outputs are rounded once from f32 on both sides: one f16 ulp of the expected
value is added to that tolerance.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
from openvino import opset1

import oracle as O
from oracle import assert_same, build, run_cpu, run_cpu_many, run_irrun

AUTO_PADS = ("explicit", "valid", "same_upper", "same_lower")
KINDS = ("conv", "group", "backprop", "group_backprop")


def tolerance(reduction_length):
    return 4e-6 * reduction_length + 1e-5


def gen_case(rng, kind, i):
    nsp = 1 + i % 3
    maxd = {1: 10, 2: 7, 3: 4}[nsp]
    groups = int(rng.integers(1, 4)) if kind.startswith("group") else 1
    cin_g = int(rng.integers(1, 4))
    cout_g = int(rng.integers(1, 4))
    if kind == "group" and rng.random() < 0.3:
        cin_g, cout_g = 1, int(rng.integers(1, 3))  # depthwise-like path
    kernel = [int(v) for v in rng.integers(1, 4, nsp)]
    strides = [int(v) for v in rng.integers(1, 4, nsp)]
    dil = [int(v) for v in rng.choice([1, 1, 2], nsp)]
    eff = [(k - 1) * d + 1 for k, d in zip(kernel, dil)]
    auto_pad = AUTO_PADS[int(rng.integers(0, 4))]
    spatial = [int(rng.integers(max(1, e - 1), maxd + 1)) for e in eff]
    cfg = dict(kind=kind, groups=groups, cin_g=cin_g, cout_g=cout_g, spatial=spatial, kernel=kernel, strides=strides,
               dilations=dil, auto_pad=auto_pad, batch=int(rng.integers(1, 3)),
               dtype=("f32", "f32", "f16")[int(rng.integers(0, 3))], f16_weights=bool(rng.random() < 0.3))
    if kind.endswith("backprop"):
        cfg["pads_begin"] = [int(rng.integers(0, e)) for e in eff]
        cfg["pads_end"] = [int(rng.integers(0, e)) for e in eff]
        cfg["output_padding"] = [int(rng.integers(0, s)) for s in strides] if rng.random() < 0.5 else [0] * nsp
        if rng.random() < 0.4:
            # output_shape input: near the natural size
            natural = [(d - 1) * s + e for d, s, e in zip(spatial, strides, eff)]
            cfg["output_shape"] = [max(1, n + int(rng.integers(-2, 2))) for n in natural]
    else:
        cfg["pads_begin"] = [int(rng.integers(0, e + 1)) for e in eff]
        cfg["pads_end"] = [int(rng.integers(0, e + 1)) for e in eff]
        if auto_pad in ("explicit", "valid"):
            pb, pe = (cfg["pads_begin"], cfg["pads_end"]) if auto_pad == "explicit" else ([0] * nsp, [0] * nsp)
            cfg["spatial"] = [max(d, e - p - q) for d, e, p, q in zip(spatial, eff, pb, pe)]
    return cfg


def build_case(cfg, rng):
    kind, g = cfg["kind"], cfg["groups"]
    dtype = np.float32 if cfg["dtype"] == "f32" else np.float16
    cin, cout = g * cfg["cin_g"], g * cfg["cout_g"]
    x = rng.standard_normal((cfg["batch"], cin, *cfg["spatial"])).astype(dtype)
    if kind == "conv":
        wshape = (cout, cin, *cfg["kernel"])
    elif kind == "group":
        wshape = (g, cfg["cout_g"], cfg["cin_g"], *cfg["kernel"])
    elif kind == "backprop":
        wshape = (cin, cout, *cfg["kernel"])
    else:
        wshape = (g, cfg["cin_g"], cfg["cout_g"], *cfg["kernel"])
    w = rng.standard_normal(wshape).astype(dtype)
    auto_pad = cfg["auto_pad"]

    def weights():
        if cfg["f16_weights"] and dtype == np.float32:
            return opset1.convert(O.constant(w.astype(np.float16)), "f32")
        return O.constant(w)

    def make(p):
        args = dict(strides=cfg["strides"], pads_begin=cfg["pads_begin"], pads_end=cfg["pads_end"],
                    dilations=cfg["dilations"], auto_pad=auto_pad)
        if kind == "conv":
            return opset1.convolution(p["x"], weights(), **args)
        if kind == "group":
            return opset1.group_convolution(p["x"], weights(), **args)
        shape = O.constant(np.array(cfg["output_shape"], np.int64)) if "output_shape" in cfg else None
        factory = opset1.convolution_backprop_data if kind == "backprop" else opset1.group_convolution_backprop_data
        return factory(p["x"], weights(), output_shape=shape, output_padding=cfg["output_padding"], **args)

    built = build(make, {"x": x})
    if kind == "group_backprop" and g == 1:
        # The CPU plugin cannot compile a one-group GroupConvolutionBackpropData (oneDNN: "could not create a
        # primitive descriptor"): its truth is the equivalent ConvolutionBackpropData, run on the same input.
        w = w[0]
        kind = "backprop"
        built.info["twin"] = build(make, {"x": x})
    return built, cfg["cin_g"] * math.prod(cfg["kernel"])


def describe(cfg):
    return ", ".join(f"{k}={v}" for k, v in cfg.items())


@pytest.mark.parametrize("kind", KINDS)
def test_convolution_sweep(kind):
    rng = np.random.default_rng(1000 + KINDS.index(kind))
    checked, cases = 0, []
    for i in range(36):
        cfg = gen_case(rng, kind, i)
        context = f"{kind} case {i}: {describe(cfg)}"
        try:
            built, length = build_case(cfg, rng)
        except RuntimeError as exc:  # OpenVINO rejects the configuration: irrun must too
            assert "output_shape" in cfg or cfg["auto_pad"] != "explicit", f"{context}\nOpenVINO rejected: {exc}"
            continue
        cases.append((cfg, context, built, length))
    oracle = run_cpu_many([built.info.get("twin", built) for _, _, built, _ in cases])
    for (cfg, context, built, length), (names, expected) in zip(cases, oracle):
        got = run_irrun(built, context)
        assert_same(got, expected, built.output_names, atol=tolerance(length), f16_ulp=cfg["dtype"] == "f16", context=context)
        checked += 1
    assert checked >= 30


def test_strided_group_convolution_sweep():
    """Strided GroupConvolutions with 2-16 input channels per group (RegNet's, ResNeXt's), which irrun computes
    from the input's stride phases (ops/convolution.im2col_phases): 1D-3D, strides 2-3 on some axes, dilations,
    pads and auto_pad, batches of 1-2, against the CPU plugin."""
    rng = np.random.default_rng(2026)
    cases = []
    for i in range(24):
        cfg = gen_case(rng, "group", i)
        nsp = len(cfg["kernel"])
        cfg.update(groups=int(rng.integers(2, 5)), cin_g=int(rng.choice([2, 3, 8, 16])), cout_g=int(rng.integers(1, 9)),
                   strides=[int(v) for v in rng.integers(1, 4, nsp)])
        cfg["strides"][i % nsp] = 2 + i % 2
        try:
            built, length = build_case(cfg, rng)
        except RuntimeError:
            continue
        cases.append((cfg, f"strided group case {i}: {describe(cfg)}", built, length))
    assert len(cases) >= 20
    for (cfg, context, built, length), (_, expected) in zip(cases, run_cpu_many([c[2] for c in cases])):
        assert_same(run_irrun(built, context), expected, built.output_names, atol=tolerance(length),
                    f16_ulp=cfg["dtype"] == "f16", context=context)


def _single(make, x, atol=1e-4):
    built = build(make, {"x": x})
    names, expected = run_cpu(built)
    assert_same(run_irrun(built), expected, names, atol=atol)
    return expected[0]


def test_backprop_same_upper_with_output_shape_puts_larger_crop_first():
    # OpenVINO's backprop auto-pad: same_upper crops the larger half at the begin (the opposite of forward
    # convolution), same_lower at the end.
    x = np.arange(1, 5, dtype=np.float32).reshape(1, 1, 4)
    w = np.ones((1, 1, 3), np.float32)
    for auto_pad in ("same_upper", "same_lower"):
        out = _single(lambda p: opset1.convolution_backprop_data(
            p["x"], O.constant(w), [2], O.constant(np.array([6], np.int64)), [0], [0], [1], auto_pad), x)
        # full transposed output (length 9) is [1, 1, 3, 2, 5, 3, 7, 4, 4]; 3 positions are cropped, 2 at the
        # begin for same_upper
        expected = [3, 2, 5, 3, 7, 4] if auto_pad == "same_upper" else [1, 3, 2, 5, 3, 7]
        np.testing.assert_array_equal(out[0, 0], expected)


def test_backprop_same_without_output_shape_ignores_padding():
    x = np.ones((1, 2, 3, 3), np.float32)
    w = np.ones((2, 1, 3, 3), np.float32)
    out = _single(lambda p: opset1.convolution_backprop_data(p["x"], O.constant(w), [2, 2], None, [1, 1], [1, 1],
                                                             [1, 1], "same_upper"), x)
    assert out.shape == (1, 1, 7, 7)


def test_conv_negative_pads_crop():
    # OpenVINO's shape inference accepts negative pads; its CPU plugin cannot compile them ("could not construct
    # a memory descriptor"), so the truth is OpenVINO's own twin: Slice the input, then convolve with the
    # remaining non-negative pads.
    from openvino import opset8

    x = np.random.default_rng(5).standard_normal((1, 2, 8, 8)).astype(np.float32)
    w = np.random.default_rng(6).standard_normal((3, 2, 3, 3)).astype(np.float32)
    # (A negative pad sum makes OpenVINO's inferred dim an open interval such as "6..": not tested.)
    built = build(lambda p: opset1.convolution(p["x"], O.constant(w), [1, 1], [-1, -1], [2, 3], [1, 1]), {"x": x})
    assert list(built.model.outputs[0].get_shape()) == [1, 3, 7, 8]
    twin = build(lambda p: opset1.convolution(
        opset8.slice(p["x"], O.constant(np.array([1, 1])), O.constant(np.array([8, 8])), O.constant(np.array([1, 1])),
                     O.constant(np.array([2, 3]))),
        O.constant(w), [1, 1], [0, 0], [2, 3], [1, 1]), {"x": x})
    names, expected = run_cpu(twin)
    assert_same(run_irrun(built), expected, built.output_names, atol=tolerance(18))


def test_resnet_block_shapes():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 16, 20, 20)).astype(np.float32)
    w = rng.standard_normal((32, 16, 3, 3)).astype(np.float32)
    _single(lambda p: opset1.convolution(p["x"], O.constant(w), [2, 2], [1, 1], [1, 1], [1, 1]), x,
            atol=tolerance(16 * 9))


def test_dynamic_batch(tmp_path):
    import irrun

    rng = np.random.default_rng(8)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    x = rng.standard_normal((2, 3, 6, 6)).astype(np.float32)
    built = build(lambda p: opset1.convolution(p["x"], O.constant(w), [1, 1], [1, 1], [1, 1], [1, 1]), {"x": x},
                  patch=lambda t: t.replace('shape="2,3,6,6"', 'shape="?,3,6,6"'))
    model = irrun.load(str(built.xml))
    assert model.outputs[0].shape[0] is None
    names, expected = run_cpu(built)
    assert_same(model.run(built.feed_dict), expected, names, atol=tolerance(27))


def _both_reject(built, old, new):
    """Edit the saved XML; OpenVINO's reader and irrun's loader must both refuse it."""
    import irrun
    from irrun.errors import IRError

    text = built.xml.read_text()
    assert old in text
    built.xml.write_text(text.replace(old, new, 1))
    with pytest.raises(RuntimeError):
        O.core().read_model(str(built.xml))
    with pytest.raises(IRError) as info:
        irrun.load(str(built.xml))
    return info.value


def test_invalid_channel_mismatch():
    x = np.zeros((1, 3, 5, 5), np.float32)
    w = np.zeros((2, 3, 3, 3), np.float32)
    built = build(lambda p: opset1.convolution(p["x"], O.constant(w), [1, 1], [0, 0], [0, 0], [1, 1]), {"x": x})
    err = _both_reject(built, 'shape="1,3,5,5"', 'shape="1,4,5,5"')
    assert err.rule == "port.dims"


def test_invalid_strides_length_and_zero():
    x = np.zeros((1, 3, 5, 5), np.float32)
    w = np.zeros((2, 3, 3, 3), np.float32)
    built = build(lambda p: opset1.convolution(p["x"], O.constant(w), [1, 1], [0, 0], [0, 0], [1, 1]), {"x": x})
    assert _both_reject(built, 'strides="1, 1"', 'strides="1"').rule == "attr.length"
    built = build(lambda p: opset1.convolution(p["x"], O.constant(w), [1, 1], [0, 0], [0, 0], [1, 1]), {"x": x})
    assert _both_reject(built, 'strides="1, 1"', 'strides="1, 0"').rule == "attr.range"


def test_invalid_kernel_larger_than_padded_input():
    x = np.zeros((1, 3, 5, 5), np.float32)
    w = np.zeros((2, 3, 3, 3), np.float32)
    built = build(lambda p: opset1.convolution(p["x"], O.constant(w), [1, 1], [0, 0], [0, 0], [1, 1]), {"x": x})
    assert _both_reject(built, 'dilations="1, 1"', 'dilations="3, 1"').rule == "shape.kernel"
