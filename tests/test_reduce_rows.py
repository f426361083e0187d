"""ReduceSum/ReduceMean over trailing axes of float data sum rows with one matrix-vector product (irrun/ops/reduce_rows.py):
within rounding of float64 sums and of OpenVINO's reference kernel on the squeeze-excite shapes of mobile nets,
and taken only where it applies (other axes, non-contiguous data, integers and rows longer than MAX_ROW keep
np.sum: the same bits as before)."""
from __future__ import annotations

import numpy as np
import pytest
from openvino import opset1

import oracle as O
from irrun.ops import reduce_rows

# (shape, axes, keep_dims, dtype, einsum taken)
CASES = [
    ((1, 576, 7, 7), [2, 3], True, np.float32, True),      # MobileNetV3's squeeze-excite pool
    ((2, 16, 56, 56), [-2, -1], True, np.float32, True),   # batch 2, negative axes
    ((1, 32, 112, 112), [2, 3], False, np.float32, True),  # a 112x112 map: MAX_ROW elements
    ((3, 5, 7), [1, 2], False, np.float64, True),
    ((4, 9), [1], True, np.float16, True),                 # f16 sums in f32
    ((6, 5, 4), [0, 1, 2], False, np.float32, True),       # everything: one row
    ((1, 24, 6, 6), [1], True, np.float32, False),         # channels: not trailing
    ((1, 4, 130, 130), [2, 3], True, np.float32, False),   # rows longer than MAX_ROW
    ((2, 8, 5), [2], True, np.int32, False),               # integers wrap in their own type
]


@pytest.mark.parametrize("op", ["mean", "sum"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{'x'.join(map(str, c[0]))}-{c[1]}-{np.dtype(c[3]).name}")
def test_trailing_row_sums_against_the_reference(op, case, tmp_path, monkeypatch):
    shape, axes, keep, dtype, taken = case
    rng = np.random.default_rng([len(shape), *shape])
    x = (rng.standard_normal(shape) + 0.5 if np.dtype(dtype).kind == "f" else rng.integers(-9, 9, shape)).astype(dtype)
    calls = []
    sums = reduce_rows.trailing_sums

    def spy(data, axes_):
        result = sums(data, axes_)
        calls.append(result is not None)
        return result
    monkeypatch.setattr("irrun.ops.reduce_rows.trailing_sums", spy)
    factory = opset1.reduce_mean if op == "mean" else opset1.reduce_sum
    built = O.build(lambda p: factory(p["x"], O.constant(np.array(axes, np.int64)), keep_dims=keep), {"x": x},
                    tmp_path)
    (got,) = O.run_irrun(built).values()
    assert calls == [taken]
    # the reference kernel has no f64 reductions: f64 is held to the float64 sums alone
    (want,) = O.run_reference(built) if dtype != np.float64 else (got,)
    assert got.shape == want.shape and got.dtype == want.dtype
    wide = x.astype(np.float64)
    exact = wide.mean(axis=tuple(axes), keepdims=keep) if op == "mean" else wide.sum(axis=tuple(axes), keepdims=keep)
    if np.dtype(dtype).kind != "f":
        np.testing.assert_array_equal(got, want)
        return
    length = wide.size // exact.size
    scale = np.abs(wide).max() * (1 if op == "sum" else 1 / length)
    tol = {np.float16: 1e-3, np.float32: 2e-7, np.float64: 1e-15}[dtype] * max(8, np.sqrt(length)) * scale * length
    np.testing.assert_allclose(got.astype(np.float64), exact, rtol=0, atol=tol)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=0, atol=2 * tol)


def test_non_contiguous_rows_keep_np_sum():
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)[:, :, ::2]
    assert reduce_rows.trailing_sums(x, (2,)) is None
    assert reduce_rows.trailing_sums(np.zeros((2, 0), np.float32), (1,)) is None


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_products_on_edge_values(dtype):
    """The matrix-vector product with ones against np.sum on rows holding NaN, +-inf, both infs, -0.0 only, a
    constant, huge values and zeros: the same NaN and inf rows, the rest within rounding."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((8, 3, 5)).astype(dtype)
    x[0, 0, 1] = np.nan
    x[1, 1, 2] = np.inf
    x[2, 2] = [np.inf, -np.inf, 1, 2, 3]
    x[3, 0] = -0.0
    x[4, 1] = 2.5
    x[5, 2] = np.finfo(dtype).max / 4
    x[6] = 0.0
    with np.errstate(all="ignore"):
        got = reduce_rows.trailing_sums(x, (2,))
        want = np.sum(x, axis=2, dtype=dtype)
    assert got.dtype == x.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(got) & (got > 0), np.isinf(want) & (want > 0))
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-6, atol=1e-6)
    assert got[4, 1] == 12.5 and got[6].tolist() == [0, 0, 0]
