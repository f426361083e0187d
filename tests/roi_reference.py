"""ROIAlign's sampling as irrun computed it before the channels-last gather (tests/test_roi_align_fast.py
compares the two bit for bit)."""
import numpy as np

from irrun.ops.roi_pooling import _sample_axis


def roi_align_chunk(features, batch_ids, x1, y1, bin_w, bin_h, ratio_x, ratio_y, max_x, max_y,
                    pooled_h, pooled_w, mode, ctype):
    height, width = features.shape[2:]
    y_lo, y_hi, wy_lo, wy_hi, vy = _sample_axis(y1, bin_h, ratio_y, max_y, pooled_h, height, ctype)
    x_lo, x_hi, wx_lo, wx_hi, vx = _sample_axis(x1, bin_w, ratio_x, max_x, pooled_w, width, ctype)
    b = batch_ids[:, None, None, None, None]
    ys = {0: y_lo[:, :, :, None, None], 1: y_hi[:, :, :, None, None]}
    xs = {0: x_lo[:, None, None, :, :], 1: x_hi[:, None, None, :, :]}
    wy = {0: wy_lo[:, :, :, None, None], 1: wy_hi[:, :, :, None, None]}
    wx = {0: wx_lo[:, None, None, :, :], 1: wx_hi[:, None, None, :, :]}
    sample = None
    for iy, ix in ((0, 0), (0, 1), (1, 0), (1, 1)):
        weight = (wy[iy] * wx[ix]).astype(ctype)[..., None]
        term = weight * features[b, :, ys[iy], xs[ix]].astype(ctype)
        sample = term if sample is None else sample + term
    valid = (vy[:, :, :, None, None] & vx[:, None, None, :, :])[..., None]
    if mode == "max":
        sample = np.where(valid, sample, ctype(0))
        result = np.maximum(sample.max(axis=(2, 4)), ctype(0))
    else:
        count = (ratio_x * ratio_y).astype(ctype)[:, None, None, None, None, None]
        result = np.where(valid, sample / count, ctype(0)).sum(axis=(2, 4))
    return np.moveaxis(result, -1, 1).astype(features.dtype)
