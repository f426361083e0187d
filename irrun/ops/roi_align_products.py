"""ROIAlign's average mode as two small matrix products per ROI.

An average-mode bin is a weighted sum of the feature cells its samples' bilinear corners fall on, and its weight
on cell (y, x) is a product: (the bin row's weights on row y) * (the bin column's weights on column x), each the
sum over that axis's samples of their bilinear weights divided by the axis's sample count. So each ROI's
[C, pooled_h, pooled_w] result is Wy @ window @ Wx^T over the window of cells its samples reach: two BLAS products
instead of four gathered corners per sample. The sums are those of the sample-by-sample kernel
(roi_pooling._roi_align_chunk) in another order (its results to rounding). ROIs are taken in groups of similar
window sizes (each group's window is its largest); a ROI is left to that kernel where its window has more than
a quarter as many cells as that kernel gathers corners, and so is a group whose cells are not all finite (an
infinite cell must only reach the bins whose samples touch it, not every bin of the window through a zero
weight)."""
from __future__ import annotations

import numpy as np

from .blas import matmul

# The products pay off when a window has at most a quarter as many cells as the other kernel gathers corners (per
# channel); measured: 100 cells for 784 corners 3.5x faster, 770 for 784 1.6x slower.
WINDOW_COST = 4


def roi_align_avg(features, batch_ids, y_axis, x_axis, ratio_x, ratio_y, pooled_h, pooled_w, ctype):
    """(result, done): [R, C, pooled_h, pooled_w] in ctype for some ROIs on channels_last features [N, H, W, C],
    and which ROIs it holds (the others are for the sample-by-sample kernel). y_axis and x_axis are
    roi_pooling._sample_axis's results for these ROIs."""
    height, width, channels = features.shape[1:]
    count = len(batch_ids)
    row_first, row_length = _reach(y_axis)
    column_first, column_length = _reach(x_axis)
    corners = 4 * y_axis[0].shape[1] * y_axis[0].shape[2] * x_axis[0].shape[1] * x_axis[0].shape[2]
    done = row_length * column_length * WINDOW_COST <= corners
    result = np.empty((count, channels, pooled_h, pooled_w), dtype=ctype)
    # groups: lengths up to the same power of two along both axes
    group_of = _log2_ceil(row_length) * 64 + _log2_ceil(column_length)
    for group in np.unique(group_of[done]):
        rois = np.flatnonzero(done & (group_of == group))
        window_h, window_w = int(row_length[rois].max()), int(column_length[rois].max())
        row_start = np.minimum(row_first[rois], height - window_h)
        column_start = np.minimum(column_first[rois], width - window_w)
        cells = features[batch_ids[rois, None, None], (row_start[:, None] + np.arange(window_h))[:, :, None],
                         (column_start[:, None] + np.arange(window_w))[:, None, :]]
        if not np.isfinite(cells).all():
            done[rois] = False
            continue
        rows = _weights([a[rois] for a in y_axis], ratio_y[rois], row_start, window_h, ctype)
        columns = _weights([a[rois] for a in x_axis], ratio_x[rois], column_start, window_w, ctype)
        result[rois] = _products(cells.astype(ctype, copy=False), rows, columns)
    return result, done


def _products(cells, rows, columns):
    """[R, C, PH, PW] from cells [R, window_h, window_w, C] and weights rows [R, PH, window_h], columns
    [R, PW, window_w]."""
    count, window_h, window_w, channels = cells.shape
    pooled_h, pooled_w = rows.shape[1], columns.shape[1]
    by_row = matmul(rows, cells.reshape(count, window_h, window_w * channels))  # [R, PH, window_w * C]
    by_row = np.ascontiguousarray(by_row.reshape(count, pooled_h, window_w, channels).transpose(0, 2, 1, 3))
    result = matmul(columns, by_row.reshape(count, window_w, pooled_h * channels))  # [R, PW, PH * C]
    return result.reshape(count, pooled_w, pooled_h, channels).transpose(0, 3, 2, 1)


def _reach(axis):
    """Per ROI along one axis: the first cell its valid samples' corners touch and how many cells they span
    (1 from cell 0 when it has no valid sample: its weights are all zero)."""
    low, high, _, _, valid = axis
    first = np.where(valid, low, np.iinfo(np.int64).max).min(axis=(1, 2))
    last = np.where(valid, high, -1).max(axis=(1, 2))
    none = first > last
    return np.where(none, 0, first), np.where(none, 1, last - first + 1)


def _log2_ceil(lengths):
    return np.ceil(np.log2(lengths)).astype(np.int64)


def _weights(axis, ratio, start, window, ctype):
    """[R, pooled, window] weights of the window's cells along one axis: each bin's bilinear weights summed over
    its samples, divided by its sample count."""
    low, high, w_low, w_high, _ = axis
    count, pooled = low.shape[:2]
    bins = (np.arange(count)[:, None, None] * pooled + np.arange(pooled)[:, None]) * window
    weights = np.zeros(count * pooled * window)
    for cell, weight in ((low, w_low), (high, w_high)):
        # a sample outside the window is not valid and weighs 0: clipped in only to keep its index in range
        at = bins + np.clip(cell - start[:, None, None], 0, window - 1)
        weights += np.bincount(at.reshape(-1), weight.reshape(-1), minlength=weights.size)
    weights = weights.reshape(count, pooled, window).astype(ctype)
    weights /= np.maximum(ratio, 1).astype(ctype)[:, None, None]
    return weights
