"""The faster kernels of issue 11 against OpenVINO and against irrun's plain forms.

- ScaledDotProductAttention in blocks of query rows (tiny blocks forced) vs the CPU plugin, on the
  attention sweep's cases;
- Mish and Gelu in the far negative tail vs the reference kernels (Mish computes in the element type:
  exp(x) + 1 rounds to 1 below x = -16.6, so the result is -0 there);
- Interpolate's matrix-product path vs its tap-by-tap path (float64) on random resizes.
"""
from __future__ import annotations

import numpy as np
import pytest

from oracle import assert_same, build, run_cpu, run_irrun, run_reference
from test_oracle_activation import node
from test_oracle_sequence_attention import attention_node, gen_attention

from irrun.ops import attention, interpolate


def test_attention_in_blocks_of_query_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(attention, "BLOCK_BYTES", 16)  # one query row per block
    rng = np.random.default_rng(611)
    for i in range(12):
        cfg, arrays = gen_attention(rng, i)
        built = build(lambda p: attention_node(p, cfg, arrays["q"].dtype), arrays, tmp_path / f"a{i}")
        names, cpu = run_cpu(built)
        f32 = cfg["dtype"] == "float32"
        assert_same(run_irrun(built), cpu, names, atol=1e-5 if f32 else 2e-3, f16_ulp=not f32, context=str(cfg))


def test_mish_and_gelu_tails_match_the_reference():
    x = np.array([-40, -20, -17, -16.6, -16.5, -16, -12, -10, -6, -5, -3, -1e-3, -0.0, 0.0, 0.5, 3, 15, 20, 90],
                 np.float32)
    for opset, op_type, attrs, atol in [("opset4", "Mish", {}, 1e-9), ("opset7", "Gelu", {}, 1e-9),
                                        ("opset7", "Gelu", {"approximation_mode": "tanh"}, 1e-9)]:
        built = build(lambda p: node(opset, op_type, [p["x"]], attrs), {"x": x})
        want = run_reference(built)[0]
        got = list(run_irrun(built).values())[0]
        tol = atol + 2e-6 * np.abs(want.astype(np.float64))
        assert np.all(np.abs(got.astype(np.float64) - want) <= tol), (op_type, attrs, got, want)
        assert np.array_equal(np.signbit(got), np.signbit(want)), (op_type, attrs, got, want)


@pytest.mark.parametrize("case", range(8))
def test_interpolate_matrix_product_matches_taps(case):
    rng = np.random.default_rng(case)
    in_len, out_len = (int(v) for v in rng.integers(1, 40, 2))
    x = rng.standard_normal((2, 3, in_len, 5)).astype(np.float32)
    coords = rng.uniform(-1, in_len, out_len).astype(np.float32)
    idx, w = (interpolate.taps_cubic(coords, in_len, -0.75) if case % 2 else
              interpolate.taps_linear(coords, in_len, 1.0, np.float32(1)))
    fast = interpolate.apply_taps(x, 2, idx, w)
    plain = sum(np.take(x, idx[:, k], axis=2).astype(np.float64) * w[:, k].reshape(1, 1, -1, 1)
                for k in range(idx.shape[1]))
    assert fast.dtype == np.float32 and fast.shape == plain.shape
    np.testing.assert_allclose(fast, plain, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("case", range(10))
def test_depthwise_flat_matches_per_offset_windows(case, monkeypatch):
    """The stride-1 depthwise kernel (flattened rows, channel blocks) vs the plain sum over kernel
    offsets of strided windows, in float64, on random shapes, pads, dilations and 1-3 spatial dims."""
    from irrun.ops import convolution as C
    monkeypatch.setattr(C, "DEPTHWISE_BLOCK_BYTES", 256 if case % 2 else 1 << 17)  # many blocks / one
    rng = np.random.default_rng(100 + case)
    spatial = 1 + case % 3
    n, groups, out_per_group = int(rng.integers(1, 3)), int(rng.integers(1, 9)), int(rng.integers(1, 5))
    kernel = [int(v) for v in rng.integers(1, 4, spatial)]
    dil = [int(v) for v in rng.integers(1, 3, spatial)]
    dims = [int(v) for v in rng.integers(4, 9, spatial)]
    begins = [int(v) for v in rng.integers(-1, 3, spatial)]
    ends = [int(v) for v in rng.integers(0, 3, spatial)]
    out = [d + b + e - (k - 1) * dd for d, b, e, k, dd in zip(dims, begins, ends, kernel, dil)]
    x = rng.standard_normal((n, groups, *dims)).astype(np.float32)
    w = rng.standard_normal((groups, out_per_group, 1, *kernel)).astype(np.float32)
    got = C.conv_forward(x, w, [1] * spatial, dil, begins, out)
    padded = C._padded(x.astype(np.float64), begins, out, kernel, [1] * spatial, dil)
    want = np.zeros((n, groups, out_per_group, *out))
    for offs in np.ndindex(*kernel):
        window = padded[(slice(None), slice(None), *C._window(offs, dil, [1] * spatial, out))]
        want += w[(slice(None), slice(None), 0, *offs)].reshape(groups, out_per_group, *[1] * spatial) \
            * window[:, :, None]
    np.testing.assert_allclose(got, want.reshape(got.shape), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", range(10))
def test_depthwise_strided_matches_per_offset_windows(case, monkeypatch):
    """The strided depthwise kernel (stride phases) vs the plain sum of strided windows."""
    from irrun.ops import convolution as C
    monkeypatch.setattr(C, "DEPTHWISE_BLOCK_BYTES", 256 if case % 2 else 1 << 17)
    rng = np.random.default_rng(200 + case)
    spatial = 1 + case % 3
    n, groups, out_per_group = int(rng.integers(1, 3)), int(rng.integers(1, 9)), int(rng.integers(1, 5))
    kernel = [int(v) for v in rng.integers(1, 4, spatial)]
    dil = [int(v) for v in rng.integers(1, 3, spatial)]
    strides = [int(v) for v in rng.integers(1, 4, spatial)]
    strides[0] = max(strides[0], 2)
    dims = [int(v) for v in rng.integers(5, 11, spatial)]
    begins = [int(v) for v in rng.integers(-1, 3, spatial)]
    ends = [int(v) for v in rng.integers(0, 3, spatial)]
    out = [(d + b + e - (k - 1) * dd - 1) // st + 1
           for d, b, e, k, dd, st in zip(dims, begins, ends, kernel, dil, strides)]
    x = rng.standard_normal((n, groups, *dims)).astype(np.float32)
    w = rng.standard_normal((groups, out_per_group, 1, *kernel)).astype(np.float32)
    got = C.conv_forward(x, w, strides, dil, begins, out)
    padded = C._padded(x.astype(np.float64), begins, out, kernel, strides, dil)
    want = np.zeros((n, groups, out_per_group, *out))
    for offs in np.ndindex(*kernel):
        window = padded[(slice(None), slice(None), *C._window(offs, dil, strides, out))]
        want += w[(slice(None), slice(None), 0, *offs)].reshape(groups, out_per_group, *[1] * spatial) \
            * window[:, :, None]
    np.testing.assert_allclose(got, want.reshape(got.shape), rtol=1e-5, atol=1e-5)
