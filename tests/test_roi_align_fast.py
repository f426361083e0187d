"""ROIAlign's channels-last, in-place sampling gives the very bits of the kernel it replaced
(tests/roi_reference.py), inf and NaN features, f16 and f64, both modes and every alignment included; the
average mode's two products per ROI (irrun/ops/roi_align_products.py) give that kernel's values to rounding, and
its NaN and inf exactly where a window holds a non-finite value."""
import numpy as np
import pytest
from roi_reference import roi_align_chunk

from irrun.ops import roi_pooling


def _nothing_done(features, batch_ids, *_):
    return None, np.zeros(len(batch_ids), dtype=bool)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
@pytest.mark.parametrize("mode", ["avg", "max"])
def test_roi_align_is_unchanged(monkeypatch, dtype, mode):
    rng = np.random.default_rng(3)
    features = rng.standard_normal((2, 5, 9, 11)).astype(dtype)
    features[0, 1, 2, 3], features[1, 2, 4, 4] = np.inf, np.nan
    corner = rng.random((30, 2)) * 80 - 8
    rois = np.concatenate([corner, corner + rng.random((30, 2)) * 50], axis=1).astype(dtype)
    rois[:3, 2:] = rois[:3, :2]  # empty ROIs
    batch = rng.integers(0, 2, 30)
    for aligned in ("asymmetric", "half_pixel_for_nn", "half_pixel"):
        for ratio in (0, 2):
            args = (features, rois, batch, 3, 4, ratio, 0.125, mode, aligned)
            with monkeypatch.context() as patch:
                patch.setattr(roi_pooling, "roi_align_avg", _nothing_done)
                got = roi_pooling.roi_align(*args)
            with monkeypatch.context() as patch:
                patch.setattr(roi_pooling, "roi_align_avg", _nothing_done)
                patch.setattr(roi_pooling, "channels_last", lambda f: f)
                patch.setattr(roi_pooling, "_roi_align_chunk", roi_align_chunk)
                expected = roi_pooling.roi_align(*args)
            np.testing.assert_array_equal(got, expected, err_msg=f"{aligned} {ratio}")


def _sample_by_sample(monkeypatch, args):
    with monkeypatch.context() as patch:
        patch.setattr(roi_pooling, "roi_align_avg", _nothing_done)
        return roi_pooling.roi_align(*args)


def _rois(rng, count, low, span, dtype):
    corner = rng.random((count, 2)) * span + low
    rois = np.concatenate([corner, corner + rng.random((count, 2)) * span / 2], axis=1)
    rois[:2, 2:] = rois[:2, :2]  # empty ROIs
    rois[2] = [-40, -40, -20, -20]  # every sample beyond -1: weighs nothing
    rois[3] = [-8, -8, 190, 190]  # covers the whole map and more
    rois[4] = [5, 5, 5.5, 40]  # a thin one
    return rois.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_products_give_the_sample_by_sample_values(monkeypatch, dtype):
    rng = np.random.default_rng(11)
    features = rng.standard_normal((3, 6, 13, 17)).astype(dtype)
    rois = _rois(rng, 40, -10, 150, dtype)
    batch = rng.integers(0, 3, 40)
    used = []
    original = roi_pooling.roi_align_avg

    def products(*args):
        result = original(*args)
        used.append(int(result[1].sum()))  # ROIs the products computed
        return result
    monkeypatch.setattr(roi_pooling, "roi_align_avg", products)
    for aligned in ("asymmetric", "half_pixel_for_nn", "half_pixel"):
        for ratio, scale, pooled in ((0, 0.125, (3, 4)), (2, 0.125, (7, 7)), (1, 0.5, (2, 5)), (0, 0.0625, (1, 1)),
                                     (4, 0.0625, (7, 7))):
            args = (features, rois, batch, *pooled, ratio, scale, "avg", aligned)
            got = roi_pooling.roi_align(*args)
            expected = _sample_by_sample(monkeypatch, args)
            tolerance = {np.float16: 2e-3, np.float32: 2e-6, np.float64: 1e-13}[dtype]
            np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance, err_msg=f"{aligned} {ratio}")
            assert got.dtype == dtype
    assert sum(used) >= 100


def test_products_leave_non_finite_windows_to_the_sample_by_sample_kernel(monkeypatch):
    """A NaN or inf reaches exactly the bins whose samples touch it, as in the sample-by-sample kernel."""
    rng = np.random.default_rng(5)
    features = rng.standard_normal((1, 4, 10, 10)).astype(np.float32)
    features[0, 1, 4, 4], features[0, 2, 7, 1] = np.inf, np.nan
    rois = _rois(rng, 12, 0, 70, np.float32)
    args = (features, rois, np.zeros(12, dtype=np.int64), 2, 2, 2, 0.125, "avg", "asymmetric")
    got, expected = roi_pooling.roi_align(*args), _sample_by_sample(monkeypatch, args)
    assert not np.isfinite(expected).all()
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(got[np.isinf(expected)], expected[np.isinf(expected)])
    np.testing.assert_allclose(got, expected, rtol=2e-6, atol=2e-6, equal_nan=True)


def test_products_on_one_roi_by_hand():
    """A 1x1 bin, one sample at (1.5, 2.25) of a 4x4 map: the bilinear mix of cells (1..2, 2..3)."""
    features = np.arange(16, dtype=np.float32).reshape(1, 1, 4, 4)
    rois = np.array([[1.75, 1.0, 2.75, 2.0]], dtype=np.float32)  # x from 1.75 to 2.75, y from 1 to 2
    got = roi_pooling.roi_align(features, rois, np.zeros(1, dtype=np.int64), 1, 1, 1, 1.0, "avg", "asymmetric")
    # sample at x = 2.25, y = 1.5: rows 1 and 2 half each, columns 2 and 3 at 0.75 and 0.25
    expected = 0.5 * (0.75 * 6 + 0.25 * 7) + 0.5 * (0.75 * 10 + 0.25 * 11)
    np.testing.assert_allclose(got.reshape(-1), [expected], rtol=1e-6)
