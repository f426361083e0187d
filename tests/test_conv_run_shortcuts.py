"""Shortcuts of Convolution/GroupConvolution's run, which must not change a bit:

- pointwise layers (irrun/ops/conv_pointwise.py): 1x1 layers with stride 1 and no padding computed as their one
  product without conv_forward's geometry. It must give conv_forward's bits exactly (the same product) and leave
  every other layer to conv_forward; the outputs are checked against OpenVINO's CPU plugin too;
- the geometry (output dims, pads, kernel offsets cut to those reaching the input) kept for the last input shape
  while the weights are the same constant: a run with another shape in between computes it again."""
from __future__ import annotations

import numpy as np
import pytest
from openvino import opset1

import irrun
import oracle as O
from irrun.ops import conv_pointwise

# (input shape, groups or None for Convolution, output channels, strides, pads, dtype, shortcut taken)
CASES = [
    ((1, 576, 1, 1), None, 144, 1, 0, np.float32, True),     # squeeze-excite reduce
    ((2, 24, 7, 9), None, 40, 1, 0, np.float32, True),       # batch 2, odd map
    ((1, 12, 5), None, 7, 1, 0, np.float32, True),           # 1D
    ((2, 8, 3, 4, 5), None, 6, 1, 0, np.float64, True),      # 3D, f64
    ((2, 12, 6, 6), 3, 9, 1, 0, np.float32, True),           # grouped 4 -> 3 channels per group
    ((1, 6, 4, 4), 6, 30, 1, 0, np.float32, True),           # one input channel, 5 outputs per group
    ((1, 6, 4, 4), 6, 12, 1, 0, np.float32, False),          # one input channel, 2 outputs: depthwise sums
    ((1, 16, 6, 6), None, 8, 2, 0, np.float32, False),       # stride 2
    ((1, 16, 6, 6), None, 8, 1, 1, np.float32, False),       # padded
    ((1, 16, 6, 6), None, 8, 1, 0, np.float16, False),       # f16 computes in f32 and rounds
]


def build(case, tmp_path):
    shape, groups, out_channels, stride, pad, dtype, _ = case
    rng = np.random.default_rng(list(shape) + [out_channels, stride, pad])
    spatial = len(shape) - 2
    x = rng.standard_normal(shape).astype(dtype)
    kernel = [1] * spatial
    attrs = dict(strides=[stride] * spatial, pads_begin=[pad] * spatial, pads_end=[pad] * spatial,
                 dilations=[1] * spatial)
    if groups is None:
        w = rng.standard_normal((out_channels, shape[1], *kernel)).astype(dtype)
        return O.build(lambda p: opset1.convolution(p["x"], O.constant(w), **attrs), {"x": x}, tmp_path)
    w = rng.standard_normal((groups, out_channels // groups, shape[1] // groups, *kernel)).astype(dtype)
    return O.build(lambda p: opset1.group_convolution(p["x"], O.constant(w), **attrs), {"x": x}, tmp_path)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-g{c[1]}-o{c[2]}-s{c[3]}-p{c[4]}-"
                                                  f"{np.dtype(c[5]).name}")
def test_pointwise_shortcut_gives_conv_forward_bits(case, tmp_path, monkeypatch):
    built = build(case, tmp_path)
    model = irrun.load(str(built.xml))
    taken = []
    product = conv_pointwise.product

    def spy(*args):
        result = product(*args)
        taken.append(result is not None)
        return result
    monkeypatch.setattr(conv_pointwise, "product", spy)
    got = model.run(built.feed_dict)
    assert (taken == [True]) == case[-1]  # not even tried where the attributes rule it out
    monkeypatch.setattr(conv_pointwise, "product", lambda *args: None)
    plain = irrun.load(str(built.xml)).run(built.feed_dict)
    for name in got:
        assert got[name].dtype == plain[name].dtype and np.array_equal(got[name], plain[name]), name
    names, expected = O.run_cpu(built)  # the pip package has no reference evaluate for convolutions
    O.assert_same(got, expected, names, atol=1e-4, f16_ulp=case[5] == np.float16)


def test_non_contiguous_input_and_weights():
    """Views (a transposed input, sliced weights) give the product of their values."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((1, 5, 4, 8)).astype(np.float32).transpose(0, 1, 3, 2)
    w = rng.standard_normal((6, 10, 1, 1)).astype(np.float32)[:, ::2]
    got = conv_pointwise.product(x, w, 1, np.dtype(np.float32))
    want = np.einsum("oc,nchw->nohw", w[:, :, 0, 0].astype(np.float64), x.astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def dynamic_spatial(text: str) -> str:
    """The saved model with the 9x9 input (and the 9x5 output) made dynamic."""
    for static in ("9", "5"):
        text = text.replace(f"<dim>{static}</dim>", "<dim>-1</dim>")
    return text.replace('shape="1,4,9,9"', 'shape="1,4,?,?"')


@pytest.mark.parametrize("group", [False, True])
def test_geometry_kept_per_input_shape(group, tmp_path):
    """Input sizes alternate on one loaded model (dynamic spatial dims): each run equals a fresh model's run, bit
    for bit, and the CPU plugin's values. Dilation 3 with pads 3 over a 2x2 map reads only the kernel's centre
    (the other offsets are cut), over 9x9 all of them."""
    rng = np.random.default_rng(11)
    w = rng.standard_normal((4, 1, 1, 3, 3) if group else (4, 4, 3, 3)).astype(np.float32)
    conv = opset1.group_convolution if group else opset1.convolution
    attrs = dict(strides=[1, 2], pads_begin=[3, 3], pads_end=[3, 3], dilations=[3, 3])
    first = rng.standard_normal((1, 4, 9, 9)).astype(np.float32)
    built = O.build(lambda p: conv(p["x"], O.constant(w), **attrs), {"x": first}, tmp_path,
                    patch=dynamic_spatial)
    model = irrun.load(str(built.xml))
    assert model.inputs[0].shape == (1, 4, None, None)
    for shape in ((1, 4, 9, 9), (1, 4, 2, 2), (1, 4, 9, 9), (1, 4, 5, 7)):
        x = rng.standard_normal(shape).astype(np.float32)
        got = model.run({"x": x})
        fresh = irrun.load(str(built.xml)).run({"x": x})
        (name,) = got
        assert np.array_equal(got[name], fresh[name]), shape
        names, expected = O.run_cpu(built, [x])
        O.assert_same(got, expected, names, atol=1e-5, context=str(shape))
