"""Winograd F(2x2, 3x3) tiles for 3D convolutions (irrun/ops/conv_winograd.py) against the plain definition of
tests/test_conv_fast_paths.py (float64, written independently of irrun) and the kernel they replace: random
layers (depth kernels 1-3, depth strides 1-3, positive and negative pads, odd and even sizes, batches; f16,
f32, f64), values that are not finite (the plain kernel runs), the transformed weights' cache, the memory
budget, and an r3d_18-shaped layer against the CPU plugin."""
from __future__ import annotations

import numpy as np
import pytest

from irrun.ops import conv_winograd as W
from irrun.ops import convolution as C
from test_conv_fast_paths import plain_conv
from test_oracle_convolution import tolerance


def random_layer(rng):
    """A 3D layer Winograd serves: 3x3 over height and width, stride and dilation 1 there."""
    kd, sd = int(rng.integers(1, 4)), int(rng.integers(1, 4))
    begins = [int(v) for v in rng.integers(-1, 3, 3)]
    ends = [int(v) for v in rng.integers(-1, 3, 3)]
    dims = [int(rng.integers(kd + 1, 7)), int(rng.integers(3, 12)), int(rng.integers(3, 12))]
    kernel = [kd, 3, 3]
    out = [(d + b + e - k) // s + 1 for d, b, e, k, s in zip(dims, begins, ends, kernel, [sd, 1, 1])]
    n, channels, outputs = int(rng.integers(1, 3)), int(rng.integers(1, 6)), int(rng.integers(1, 5))
    return dict(x=(n, channels, *dims), w=(1, outputs, channels, *kernel), strides=[sd, 1, 1], begins=begins,
                out=out)


def run_both(x, w, layer, monkeypatch):
    """(Winograd, the kernel it replaces), each through conv_forward."""
    args = (layer["strides"], [1, 1, 1], layer["begins"], layer["out"])
    monkeypatch.setattr(W, "MIN_CHANNELS", 1)
    monkeypatch.setattr(W, "MIN_TILES", 0)
    fast = C.conv_forward(x, w, *args, None, {})
    monkeypatch.setattr(W, "MIN_CHANNELS", 1 << 30)
    return fast, C.conv_forward(x, w, *args)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_tiles_match_plain_definition(dtype, monkeypatch):
    monkeypatch.setattr(W, "FRAMES_PER_CHUNK", 2)  # chunks of frames, the last one short
    rng = np.random.default_rng([23, np.dtype(dtype).num])
    for _ in range(30):
        layer = random_layer(rng)
        if min(layer["out"]) <= 0:
            continue
        x = rng.standard_normal(layer["x"]).astype(dtype)
        w = rng.standard_normal(layer["w"]).astype(dtype)
        fast, generic = run_both(x, w, layer, monkeypatch)
        want = plain_conv(x, w, layer["strides"], [1, 1, 1], layer["begins"], layer["out"])
        length = int(np.prod(layer["w"][2:]))
        tol = (1e-12 if dtype == np.float64 else 1e-6) * length + (1e-12 if dtype == np.float64 else 1e-5)
        assert fast.dtype == generic.dtype and fast.shape == want.shape, layer
        np.testing.assert_allclose(fast, want, rtol=tol, atol=tol, err_msg=str(layer))
        np.testing.assert_allclose(fast, generic, rtol=tol, atol=tol, err_msg=str(layer))


def test_input_transformed_a_block_of_channels_at_a_time_gives_the_same_bits(monkeypatch):
    """The input transform runs a frame's block of channels at a time, the inverse a block of output channels
    (ROWS_BYTES; the last block short): the same operations per element as one pass over all channels."""
    rng = np.random.default_rng(11)
    for _ in range(6):
        layer = random_layer(rng)
        if min(layer["out"]) <= 0:
            continue
        x = rng.standard_normal(layer["x"]).astype(np.float32)
        w = rng.standard_normal(layer["w"]).astype(np.float32)
        results = []
        for nbytes in (1, 2 * 8 * 4 * 56, 1 << 30):  # one channel, a few (up to 56 tiles: two), all
            monkeypatch.setattr(W, "ROWS_BYTES", nbytes)
            results.append(run_both(x, w, layer, monkeypatch)[0])
        for result in results[:2]:
            np.testing.assert_array_equal(result, results[2], err_msg=str(layer))


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the plain kernel's own overflow, inf * 0
@pytest.mark.parametrize("where", ["input", "weights", "overflow"])
def test_values_that_are_not_finite_take_the_plain_kernel(where, monkeypatch):
    """Winograd mixes the values of a tile: with inf or NaN in the input or weights, or a result that
    overflows, the result is the plain kernel's, bit for bit."""
    rng = np.random.default_rng(5)
    layer = dict(strides=[1, 1, 1], begins=[1, 1, 1], out=[3, 6, 6])
    x = rng.standard_normal((1, 2, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((1, 2, 2, 3, 3, 3)).astype(np.float32)
    if where == "input":
        x[0, 1, 1, 2, 3], x[0, 0, 2, 5, 5] = np.inf, np.nan
    elif where == "weights":
        w[0, 1, 0, 1, 1, 1] = -np.inf
    else:
        x[0, 0, 1, 2:4, 2:4] = np.float32(3e38)
    fast, generic = run_both(x, w, layer, monkeypatch)
    assert not np.isfinite(generic).all()
    np.testing.assert_array_equal(fast, generic)


def test_weights_are_transformed_once_per_constant(monkeypatch):
    monkeypatch.setattr(W, "MIN_CHANNELS", 1)
    monkeypatch.setattr(W, "MIN_TILES", 0)
    calls = []
    real = W.transformed_weights
    monkeypatch.setattr(W, "transformed_weights", lambda w: calls.append(1) or real(w))
    rng = np.random.default_rng(6)
    x = rng.standard_normal((1, 2, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((1, 2, 2, 3, 3, 3)).astype(np.float32)
    cache = {}
    first = C.conv_forward(x, w, [1, 1, 1], [1, 1, 1], [1, 1, 1], [3, 6, 6], None, cache)
    second = C.conv_forward(x, w, [1, 1, 1], [1, 1, 1], [1, 1, 1], [3, 6, 6], None, cache)
    assert calls == [1]
    np.testing.assert_array_equal(first, second)
    conv = C.Convolution1.__new__(C.Convolution1)
    constant = w.reshape(2, 2, 3, 3, 3)
    constant.flags.writeable = False
    assert conv.prepared(constant, constant) is conv.prepared(constant, constant)
    assert conv.prepared(constant, constant[..., 1:]) is not conv.prepared(constant, constant[..., :2])  # cut apart
    assert conv.prepared(constant.copy(), constant) is None  # writeable: may change between runs, nothing cached


def test_weights_and_tiles_are_reserved_before_allocation(monkeypatch):
    monkeypatch.setattr(W, "MIN_CHANNELS", 1)
    monkeypatch.setattr(W, "MIN_TILES", 0)
    seen = []
    rng = np.random.default_rng(7)
    x = rng.standard_normal((1, 2, 3, 6, 6)).astype(np.float32)
    w = rng.standard_normal((1, 2, 2, 3, 3, 3)).astype(np.float32)
    C.conv_forward(x, w, [1, 1, 1], [1, 1, 1], [1, 1, 1], [3, 6, 6], lambda nbytes, what: seen.append((what, nbytes)),
                   prepared={})
    assert [what for what, _ in seen] == ["Winograd-transformed weights", "Winograd tiles"]
    assert seen[0][1] >= 16 * 2 * 2 * 3 * 4  # the cached U [16, O, kd * C] in f32 at least


def test_only_3d_layers_with_3x3_kernels_over_enough_channels_and_tiles():
    x = np.zeros((1, 32, 4, 20, 20), np.float32)
    w = np.zeros((1, 8, 32, 3, 3, 3), np.float32)
    assert W.usable(x, w, [1, 1, 1], [1, 1, 1])
    assert W.usable(x, w, [2, 1, 1], [1, 1, 1])
    assert not W.usable(x, w, [1, 2, 2], [1, 1, 1])
    assert not W.usable(x, w, [1, 1, 1], [2, 1, 1])
    assert not W.usable(x[:, :16], w[:, :, :16], [1, 1, 1], [1, 1, 1])  # too few channels
    assert not W.usable(x[..., :14, :14], w, [1, 1, 1], [1, 1, 1])  # too few tiles
    assert not W.usable(x, w[..., :2, :], [1, 1, 1], [1, 1, 1])
    assert not W.usable(x.astype(np.int64), w.astype(np.int64), [1, 1, 1], [1, 1, 1])
    assert not W.usable(x[:, :, 0], w[:, :, :, 0], [1, 1], [1, 1])


def test_r3d_shaped_layer_matches_the_cpu_plugin():
    """An r3d_18 body layer (fewer channels and frames), taken by Winograd as it is; the CPU plugin (f32 hint)
    is the oracle, within the summation-order tolerance of the convolution oracle tests."""
    from openvino import opset1

    import oracle as O
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 32, 4, 21, 20)).astype(np.float32)
    w = (rng.standard_normal((16, 32, 3, 3, 3)) * 0.1).astype(np.float32)
    assert W.usable(x, w[None], [1, 1, 1], [1, 1, 1])
    built = O.build(lambda p: opset1.convolution(p["x"], O.constant(w), [1, 1, 1], [1, 1, 1], [1, 1, 1],
                                                 [1, 1, 1]), {"x": x})
    names, expected = O.run_cpu(built)
    O.assert_same(O.run_irrun(built), expected, names, atol=tolerance(32 * 27))


def transforms_in_two_runs(tmp_path, monkeypatch, x, weights, spatial):
    """How many times a one-convolution model (x [N, C, *D], `weights()` its filters node) transformed its
    weights over two runs, which give the same bits."""
    from openvino import opset1

    import irrun
    import oracle as O
    calls = []
    real = W.transformed_weights
    monkeypatch.setattr(W, "transformed_weights", lambda w: calls.append(1) or real(w))
    ones = [1] * spatial
    built = O.build(lambda p: opset1.convolution(p["x"], weights(), ones, ones, ones, ones), {"x": x}, tmp_path)
    model = irrun.load(str(built.xml))
    first = model.run(built.feed_dict)
    second = model.run(built.feed_dict)
    for key in first:
        np.testing.assert_array_equal(first[key], second[key])
    return len(calls)


def test_a_model_transforms_its_constant_weights_once(tmp_path, monkeypatch):
    import oracle as O
    rng = np.random.default_rng(10)
    x = rng.standard_normal((1, 32, 3, 20, 20)).astype(np.float32)
    w = (rng.standard_normal((8, 32, 3, 3, 3)) * 0.1).astype(np.float32)
    assert transforms_in_two_runs(tmp_path, monkeypatch, x, lambda: O.constant(w), 3) == 1
