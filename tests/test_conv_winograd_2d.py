"""Winograd tiles for 2D layers (irrun/ops/conv_winograd_2d.py: conv_winograd on a depth of one) against the
plain definition of tests/test_conv_fast_paths.py (float64) and the kernel they replace: odd and even sizes,
positive and negative pads, batch 2, f16, f32 and f64, strided or dilated or grouped layers (not taken),
values that are not finite (the plain kernel runs), and a FCN-head-shaped layer against the CPU plugin."""
from __future__ import annotations

import numpy as np
import pytest

from irrun.ops import conv_winograd_2d as W2
from irrun.ops import convolution as C
from test_conv_fast_paths import plain_conv
from test_conv_winograd import transforms_in_two_runs
from test_oracle_convolution import tolerance


def run_both(x, w, strides, dilations, begins, out, monkeypatch):
    """(conv_forward with the 2D tiles forced on for any size, with them off), and whether they were taken."""
    taken = []
    real = W2.conv_winograd.forward
    monkeypatch.setattr(W2.conv_winograd, "forward", lambda *a: taken.append(1) or real(*a))
    monkeypatch.setattr(W2, "MIN_CHANNELS", 1)
    monkeypatch.setattr(W2, "MIN_TILES", 0)
    monkeypatch.setattr(W2.conv_winograd, "MIN_CHANNELS", 1)
    monkeypatch.setattr(W2.conv_winograd, "MIN_TILES", 0)
    fast = C.conv_forward(x, w, strides, dilations, begins, out, None, {})
    monkeypatch.setattr(W2, "MIN_CHANNELS", 1 << 30)
    return fast, C.conv_forward(x, w, strides, dilations, begins, out), bool(taken)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("dims,begins,ends", [((9, 8), (1, 1), (1, 1)), ((8, 11), (0, 2), (-1, 1)),
                                              ((12, 7), (-1, 0), (2, 0))])
def test_tiles_match_the_plain_definition(dtype, dims, begins, ends, monkeypatch):
    rng = np.random.default_rng([41, np.dtype(dtype).num, dims[0]])
    x = rng.standard_normal((2, 5, *dims)).astype(dtype)
    w = rng.standard_normal((1, 4, 5, 3, 3)).astype(dtype)
    out = [d + b + e - 2 for d, b, e in zip(dims, begins, ends)]
    fast, generic, taken = run_both(x, w, [1, 1], [1, 1], list(begins), out, monkeypatch)
    want = plain_conv(x, w, [1, 1], [1, 1], begins, out)
    tol = (1e-12 if dtype == np.float64 else 1e-6) * 45 + (1e-12 if dtype == np.float64 else 1e-5)
    assert taken and fast.shape == want.shape == generic.shape and fast.dtype == generic.dtype
    np.testing.assert_allclose(fast, want, rtol=tol, atol=tol)
    np.testing.assert_allclose(fast, generic, rtol=tol, atol=tol)


@pytest.mark.parametrize("strides,dilations,groups", [([2, 1], [1, 1], 1), ([1, 1], [1, 2], 1),
                                                       ([1, 1], [1, 1], 2)])
def test_other_layers_are_not_taken(strides, dilations, groups, monkeypatch):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 10, 10)).astype(np.float32)
    w = rng.standard_normal((groups, 3, 4 // groups, 3, 3)).astype(np.float32)
    out = [(10 + 2 - (2 * d + 1)) // s + 1 for s, d in zip(strides, dilations)]
    fast, generic, taken = run_both(x, w, strides, dilations, [1, 1], out, monkeypatch)
    assert not taken
    np.testing.assert_array_equal(fast, generic)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the plain kernel's own inf * 0
def test_values_that_are_not_finite_take_the_plain_kernel(monkeypatch):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
    w = rng.standard_normal((1, 2, 3, 3, 3)).astype(np.float32)
    x[0, 1, 2, 3], x[0, 0, 7, 7] = np.inf, np.nan
    fast, generic, taken = run_both(x, w, [1, 1], [1, 1], [1, 1], [8, 8], monkeypatch)
    assert not taken and not np.isfinite(generic).all()  # checked before any tile is computed
    np.testing.assert_array_equal(fast, generic)


def test_thresholds():
    assert W2.run(np.zeros((1, 128, 28, 28), np.float32), np.zeros((1, 256, 128, 3, 3), np.float32), [1, 1],
                  [1, 1], [1, 1], [28, 28], None, None) is None  # too few channels
    assert W2.run(np.zeros((1, 256, 26, 26), np.float32), np.zeros((1, 256, 256, 3, 3), np.float32), [1, 1],
                  [1, 1], [1, 1], [26, 26], None, None) is None  # too few tiles


def test_head_shaped_layer_matches_the_cpu_plugin():
    """256 -> 256 channels over 28x28 (as FCN's and RetinaNet's heads), taken as it is; the CPU plugin (f32
    hint) is the oracle, within the summation-order tolerance of the convolution oracle tests."""
    from openvino import opset1

    import oracle as O
    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 256, 28, 28)).astype(np.float32)
    w = (rng.standard_normal((256, 256, 3, 3)) * 0.05).astype(np.float32)
    assert W2.run(x, w[None], [1, 1], [1, 1], [1, 1], [28, 28], lambda nbytes, what: None, None) is not None
    built = O.build(lambda p: opset1.convolution(p["x"], O.constant(w), [1, 1], [1, 1], [1, 1], [1, 1]), {"x": x})
    names, expected = O.run_cpu(built)
    O.assert_same(O.run_irrun(built), expected, names, atol=tolerance(256 * 9))


def test_compressed_weights_are_transformed_once(tmp_path, monkeypatch):
    """f16 weights decompressed by a Convert (OpenVINO's compressed IRs) are folded at load into a read-only
    constant, so the transformed weights are cached as for a plain f32 Const."""
    from openvino import opset1

    import oracle as O
    monkeypatch.setattr(W2, "MIN_CHANNELS", 1)
    monkeypatch.setattr(W2, "MIN_TILES", 0)
    rng = np.random.default_rng(10)
    x = rng.standard_normal((1, 32, 20, 20)).astype(np.float32)
    w = (rng.standard_normal((8, 32, 3, 3)) * 0.1).astype(np.float16)
    weights = lambda: opset1.convert(O.constant(w), "f32")  # noqa: E731
    assert transforms_in_two_runs(tmp_path, monkeypatch, x, weights, 2) == 1
