"""Kernel offsets that read only padding are dropped before a forward convolution (irrun/ops/conv_taps.py):
the reach test against brute force, cropped layers against the plain definition of
tests/test_conv_fast_paths.py, and ASPP-style dilated layers (an inf weight on a dropped offset included)
against OpenVINO's CPU plugin."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from openvino import opset1

import oracle as O
from irrun.ops import conv_taps
from irrun.ops import convolution as C
from test_conv_fast_paths import plain_conv


def test_reaches_input_matches_brute_force():
    for k, size, s, d, b, o in itertools.product(range(1, 5), range(1, 7), range(1, 4), range(1, 4), range(-2, 8),
                                                 range(1, 6)):
        for i in range(k):
            want = any(0 <= j * s + i * d - b < size for j in range(o))
            assert conv_taps.reaches_input(i, size, s, d, b, o) == want, (k, size, s, d, b, o, i)


@pytest.mark.parametrize("dtype", [np.float32, np.int32])
def test_cropped_kernels_give_the_plain_definition(dtype):
    rng = np.random.default_rng(np.dtype(dtype).num)
    cropped = 0
    for _ in range(40):
        spatial = int(rng.integers(1, 4))
        groups, in_per_group, out_per_group = int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(1, 3))
        kernel = [int(v) for v in rng.integers(1, 4, spatial)]
        strides = [int(v) for v in rng.integers(1, 3, spatial)]
        dil = [int(v) for v in rng.integers(1, 8, spatial)]
        dims = [int(v) for v in rng.integers(1, 7, spatial)]
        begins = [int(v) for v in rng.integers(-1, 9, spatial)]
        ends = [int(v) for v in rng.integers(0, 9, spatial)]
        if any((k - 1) * d + 1 > n + b + e for k, d, n, b, e in zip(kernel, dil, dims, begins, ends)):
            continue
        out, used, _ = C.forward_geometry(dims, kernel, strides, dil, begins, ends, "explicit")
        x = (rng.standard_normal((2, groups * in_per_group, *dims)) * 10).astype(dtype)
        w = (rng.standard_normal((groups, out_per_group, in_per_group, *kernel)) * 10).astype(dtype)
        small, small_begins = conv_taps.crop_to_input(w, dims, strides, dil, used, out)
        cropped += small is not w
        got = C.conv_forward(x, small, strides, dil, small_begins, out)
        want = plain_conv(x, w, strides, dil, used, out)
        if x.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
        else:
            np.testing.assert_array_equal(got, want)
    assert cropped >= 10, cropped


@pytest.mark.parametrize("dilation, grouped", [(9, False), (12, False), (5, False), (9, True)])
def test_aspp_layers_match_the_cpu_plugin(dilation, grouped, tmp_path):
    """3x3 layers dilated over a 7x7 input with pads equal to the dilation: 9 and 12 read only the centre
    offset (a 1x1 product), 5 reads every offset in part; an inf weight in a corner the input never reaches
    (dilations 9 and 12) stays out of the result, as in the CPU plugin."""
    rng = np.random.default_rng(dilation)
    x = rng.standard_normal((1, 8, 7, 7)).astype(np.float32)
    w = rng.standard_normal((8, 1, 3, 3) if grouped else (6, 8, 3, 3)).astype(np.float32)
    if dilation >= 7:
        w[0, 0, 0, 0] = np.inf
    pads = [dilation] * 2

    def make(p):
        if grouped:
            return opset1.group_convolution(p["x"], O.constant(w.reshape(8, 1, 1, 3, 3)), [1, 1], pads, pads,
                                            [dilation] * 2)
        return opset1.convolution(p["x"], O.constant(w), [1, 1], pads, pads, [dilation] * 2)

    built = O.build(make, {"x": x}, tmp_path)
    names, expected = O.run_cpu(built)
    assert np.isfinite(expected[0]).all() if dilation >= 7 else True
    O.assert_same(O.run_irrun(built), expected, names, atol=1e-5)
