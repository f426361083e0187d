"""ROIAlign's channels-last, in-place sampling gives the very bits of the kernel it replaced
(tests/roi_reference.py), inf and NaN features, f16 and f64, both modes and every alignment included."""
import numpy as np
import pytest
from roi_reference import roi_align_chunk

from irrun.ops import roi_pooling


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
            got = roi_pooling.roi_align(*args)
            with monkeypatch.context() as patch:
                patch.setattr(roi_pooling, "channels_last", lambda f: f)
                patch.setattr(roi_pooling, "_roi_align_chunk", roi_align_chunk)
                expected = roi_pooling.roi_align(*args)
            np.testing.assert_array_equal(got, expected, err_msg=f"{aligned} {ratio}")
