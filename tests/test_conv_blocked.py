"""Convolution from cache-sized column blocks over stride phases (irrun/ops/conv_blocked.py) against the
plain definition of tests/test_conv_fast_paths.py (float64 / int64, written independently of irrun) and
against the generic im2col kernel it replaces, on random layers (1D to 3D when forced, groups, strides,
dilations, positive and negative pads, batches) with blocks forced down to a few positions, and on
r3d_18-shaped layers."""
from __future__ import annotations

import numpy as np
import pytest

from irrun.ops import conv_blocked as B
from irrun.ops import convolution as C
from test_conv_fast_paths import arrays, check, plain_conv, random_case
from test_oracle_convolution import tolerance


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int32])
def test_blocks_match_plain_definition(dtype, monkeypatch):
    monkeypatch.setattr(B, "worth", lambda *args: True)
    rng = np.random.default_rng([17, np.dtype(dtype).num])
    for i in range(24):
        # tiny blocks (many per item, the last one short) or one block for everything
        monkeypatch.setattr(B, "BLOCK_BYTES", 16 if i % 2 else 1 << 19)
        monkeypatch.setattr(B, "MIN_SPAN", 1 + i % 5 if i % 2 else 32)
        case = random_case(rng, stride_one=i % 3 == 0)  # strides 1 to 3 otherwise: stride phases
        check(case, *arrays(rng, case, dtype))


def test_3d_layers_take_the_blocks(monkeypatch):
    calls = []
    real = B.im2col_blocked
    monkeypatch.setattr(B, "im2col_blocked", lambda *args: calls.append(1) or real(*args))
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 4, 5, 6, 7)).astype(np.float32)
    w = rng.standard_normal((1, 3, 4, 3, 3, 3)).astype(np.float32)
    C.conv_forward(x, w, [1, 1, 1], [1, 1, 1], [1, 1, 1], [5, 6, 7])
    assert calls == [1]
    C.conv_forward(x, w, [1, 2, 2], [1, 1, 1], [1, 1, 1], [5, 3, 4])  # strided: stride phases
    assert calls == [1, 1]
    C.conv_forward(x[:, :, 0], w[:, :, :, 0], [1, 1], [1, 1], [1, 1], [6, 7])  # 2D: unchanged paths
    assert calls == [1, 1]


def test_r3d_shaped_layer_equals_the_generic_columns(monkeypatch):
    """An r3d_18 layer3-like layer (many channels, several blocks, a short last block): the blocks against
    the generic im2col and the plain definition, with NaN and inf inside their windows."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 48, 4, 9, 10)).astype(np.float32)
    x[0, 5, 1, 2, 3], x[0, 40, 3, 8, 9] = np.nan, np.inf
    w = (rng.standard_normal((1, 40, 48, 3, 3, 3)) * 0.1).astype(np.float32)
    monkeypatch.setattr(B, "BLOCK_BYTES", 48 * 27 * 4 * 40)  # blocks of 40 positions over 6 * 11 * 12
    monkeypatch.setattr(B, "MIN_SPAN", 1)
    args = ([1, 1, 1], [1, 1, 1], [1, 1, 1], [4, 9, 10])
    blocked = C.conv_forward(x, w, *args)
    monkeypatch.setattr(B, "worth", lambda *args: False)
    generic = C.conv_forward(x, w, *args)
    want = plain_conv(x, w, *args)
    np.testing.assert_array_equal(np.isnan(blocked), np.isnan(want))
    np.testing.assert_allclose(blocked, generic, rtol=1e-5, atol=1e-5)
    finite = np.isfinite(want)
    np.testing.assert_allclose(blocked[finite], want[finite], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(blocked[~finite], generic[~finite])


def test_blocks_are_reserved_before_allocation(monkeypatch):
    seen = []
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 4, 5, 6)).astype(np.float32)
    w = rng.standard_normal((1, 2, 3, 2, 2, 2)).astype(np.float32)
    C.conv_forward(x, w, [1, 1, 1], [1, 1, 1], [0, 0, 0], [3, 4, 5], lambda nbytes, what: seen.append(what))
    assert "convolution column blocks" in seen


@pytest.mark.parametrize("layer", ["stem", "body"])
def test_r3d_shaped_layers_match_the_cpu_plugin(layer):
    """Shaped like r3d_18's 3x7x7 stride-1x2x2 stem and its 3x3x3 body layers (fewer channels), both
    routed to the blocks; the CPU plugin (f32 hint) is the oracle (no reference evaluate), within the summation-order
    tolerance of the convolution oracle tests (its kernels' order depends on the ISA)."""
    from openvino import opset1

    import oracle as O
    rng = np.random.default_rng(21)
    if layer == "stem":
        x = rng.standard_normal((1, 3, 4, 22, 22)).astype(np.float32)
        w = (rng.standard_normal((8, 3, 3, 7, 7)) * 0.1).astype(np.float32)
        strides, pads = [1, 2, 2], [1, 3, 3]
    else:
        x = rng.standard_normal((2, 16, 4, 9, 9)).astype(np.float32)
        w = (rng.standard_normal((8, 16, 3, 3, 3)) * 0.1).astype(np.float32)
        strides, pads = [1, 1, 1], [1, 1, 1]
    assert B.worth(3, int(np.prod(w.shape[2:])), 1, w.shape[0], int(np.prod(w.shape[1:])), 4)
    built = O.build(lambda p: opset1.convolution(p["x"], O.constant(w), strides, pads, pads, [1, 1, 1]), {"x": x})
    names, expected = O.run_cpu(built)
    O.assert_same(O.run_irrun(built), expected, names, atol=tolerance(int(np.prod(w.shape[1:]))))
