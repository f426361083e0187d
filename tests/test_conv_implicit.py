"""The implicit-GEMM convolution (irrun/ops/conv_implicit.py) and the accumulating products under it
(irrun/ops/blas_accumulate.py), against the plain definition of tests/test_conv_fast_paths.py (float64) and
the plain im2col kernel: strides, dilations, positive and negative pads, groups, odd sizes, batch > 1, f16,
f32 and f64, non-finite values, with the BLAS's accumulation and without it (a product and an add), and the
same bits on one and two workers."""
from __future__ import annotations

import numpy as np
import pytest

from irrun.ops import blas, blas_accumulate, conv_implicit
from irrun.ops import convolution as C
from test_blas_bits import at_workers  # noqa: F401 (a fixture)
from test_conv_fast_paths import plain_conv

CASES = [  # n, groups, out_per_group, in_per_group, dims, kernel, strides, dilations, begins, ends
    (2, 1, 8, 32, (31, 29), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1)),
    (1, 2, 5, 33, (30, 27), (3, 3), (2, 2), (1, 1), (1, 1), (1, 1)),
    (1, 1, 4, 32, (33, 31), (7, 7), (2, 2), (1, 1), (3, 3), (3, 3)),
    (1, 1, 3, 32, (40, 23), (3, 3), (1, 1), (2, 2), (2, 2), (2, 2)),
    (1, 1, 3, 32, (30, 30), (3, 3), (3, 3), (2, 2), (-1, -1), (0, 2)),
    (2, 1, 6, 32, (29, 31), (3, 5), (1, 2), (2, 1), (0, 2), (-2, 1)),
    (1, 3, 2, 5, (9, 7), (2, 3), (1, 3), (3, 1), (4, 0), (0, 5)),
    (1, 1, 2, 3, (1, 1), (3, 3), (1, 1), (1, 1), (1, 1), (1, 1)),
]


def geometry(dims, kernel, strides, dilations, begins, ends):
    return [(d + b + e - (k - 1) * dl - 1) // s + 1
            for d, k, s, dl, b, e in zip(dims, kernel, strides, dilations, begins, ends)]


def random_layer(rng, n, groups, out_per_group, in_per_group, dims, kernel, dtype):
    x = rng.standard_normal((n, groups * in_per_group, *dims)).astype(dtype)
    w = rng.standard_normal((groups, out_per_group, in_per_group, *kernel)).astype(dtype)
    return x, w


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("blas_sums", [True, False])
def test_forward_matches_the_plain_definition(case, dtype, blas_sums, monkeypatch):
    if not blas_sums:
        monkeypatch.setattr(blas_accumulate, "_gemm", lambda dtype: None)
    n, groups, out_per_group, in_per_group, dims, kernel, strides, dilations, begins, ends = case
    x, w = random_layer(np.random.default_rng(7), n, groups, out_per_group, in_per_group, dims, kernel, dtype)
    out = geometry(dims, kernel, strides, dilations, begins, ends)
    reserved = []
    got = conv_implicit.forward(x, w, strides, dilations, begins, out, lambda nbytes, what: reserved.append(nbytes))
    expected = plain_conv(x, w, strides, dilations, begins, out)
    assert got.dtype == dtype and got.shape == expected.shape and reserved and reserved[0] > 0
    tolerance = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance * np.sqrt(w[0, 0].size))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_conv_forward_takes_it_and_agrees_with_im2col(dtype, monkeypatch):
    """A ResNet-like layer (batch 2, odd map) through conv_forward: the implicit GEMM where it is taken, the
    plain im2col kernel with it turned off; f16 computes in f32."""
    rng = np.random.default_rng(3)
    x, w = random_layer(rng, 2, 1, 40, 36, (29, 27), (3, 3), dtype)
    args = ([1, 1], [1, 1], [1, 1], [29, 27])
    taken = []
    original = conv_implicit.forward
    monkeypatch.setattr(conv_implicit, "forward", lambda *a, **k: taken.append(1) or original(*a, **k))
    monkeypatch.setattr(conv_implicit, "MIN_POSITIONS", 1)
    fast = C.conv_forward(x, w, *args)
    monkeypatch.setattr(conv_implicit, "MIN_POSITIONS", 10 ** 9)
    plain = C.conv_forward(x, w, *args)
    assert taken == [1] and fast.dtype == plain.dtype == C._compute_dtype(np.dtype(dtype))
    np.testing.assert_allclose(fast, plain, rtol=1e-5 if fast.dtype == np.float32 else 1e-12, atol=1e-4)


def test_not_finite_values_spread_as_in_the_plain_kernel():
    rng = np.random.default_rng(5)
    x, w = random_layer(rng, 1, 1, 4, 32, (12, 11), (3, 3), np.float32)
    x[0, 3, 5, 4], x[0, 7, 0, 0], w[0, 1, 2, 0, 0] = np.inf, np.nan, -np.inf
    args = ([1, 1], [1, 1], [1, 1], [12, 11])
    got = conv_implicit.forward(x, w, *args, lambda nbytes, what: None)
    with np.errstate(invalid="ignore", over="ignore"):
        expected = plain_conv(x, w, *args)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-4, atol=1e-3)


def test_usable_only_where_measured_faster():
    x = np.zeros((1, 64, 56, 56), np.float32)
    w = np.zeros((1, 64, 64, 3, 3), np.float32)
    assert conv_implicit.usable(x, w, [1, 1], [56, 56]) == blas_accumulate.available(np.float32)
    assert not conv_implicit.usable(x, w, [2, 2], [28, 28])
    assert not conv_implicit.usable(x, w, [1, 1], [14, 14])
    assert not conv_implicit.usable(x, np.zeros((1, 256, 64, 3, 3), np.float32), [1, 1], [56, 56])
    assert not conv_implicit.usable(x[:, :16], np.zeros((1, 64, 16, 3, 3), np.float32), [1, 1], [56, 56])
    assert not conv_implicit.usable(x, np.zeros((1, 64, 64, 1, 1), np.float32), [1, 1], [56, 56])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_accumulate_reads_strided_rows_and_sums(dtype):
    rng = np.random.default_rng(11)
    base = rng.standard_normal((70, 900)).astype(dtype)
    a = rng.standard_normal((48, 70)).astype(dtype)
    out = np.full((48, 800), 2.0, dtype)
    blas_accumulate.accumulate(a, base[:, 3:803], out)
    blas_accumulate.accumulate(a[:, :0], base[:0, :800], out)  # no terms: out unchanged
    expected = 2.0 + a.astype(np.float64) @ base[:, 3:803].astype(np.float64)
    np.testing.assert_allclose(out, expected, rtol=1e-4 if dtype == np.float32 else 1e-12, atol=1e-3)
    blas_accumulate.accumulate(a, base[:, :800], out, first=True)
    np.testing.assert_allclose(out, a.astype(np.float64) @ base[:, :800], rtol=1e-4, atol=1e-3)


def test_accumulated_bits_do_not_depend_on_the_workers(at_workers):  # noqa: F811
    rng = np.random.default_rng(13)
    a = rng.standard_normal((64, 464)).astype(np.float32)
    b = rng.standard_normal((464, 2000)).astype(np.float32)
    assert blas._blocks(a, b) is not None  # large enough to be split into blocks

    def run():
        out = np.ones((64, 2000), np.float32)
        blas_accumulate.accumulate(a, b, out)
        return out
    one, two = at_workers(1, run), at_workers(2, run)
    np.testing.assert_array_equal(one, two)
