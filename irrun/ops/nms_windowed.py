"""NonMaxSuppression's hard selection over all candidates at once, when their sweep windows are short.

greedy_nms takes candidates in blocks, finds the pairs whose bounds touch, gathers each pair's corners and
computes its IoU. When every candidate touches few others in the order of one axis (SSD's tens of thousands of
anchors, the classes of a batched NMS moved apart), it is cheaper to compute the IoU of each candidate with the
next `width` ones in that order straight from strided windows of the sorted corners (no gathers, no pair list)
and to keep only the pairs that suppress. The IoU is box_iou, which NonMaxSuppression's pairwise test uses too
(detection._pair_iou), so the pairs, and the rounds that resolve them (greedy_nms.resolve_hits), select exactly
what greedy_nms selects."""
from __future__ import annotations

import numpy as np

from .greedy_nms import resolve_hits

WINDOW_LIMIT = 1 << 22  # candidates x window width, at most: beyond, greedy_nms's blocks do less work
ROWS_ELEMENTS = 1 << 16  # window entries computed at once: f32 temporaries that stay in the L2 cache (measured)
ROUNDS = 64  # resolve_hits rounds before deciding candidate by candidate (all candidates are resolved at once)

_FILL = (np.inf, np.inf, -np.inf, -np.inf, 0.0)  # (y1, x1, y2, x2, area) past the end: no overlap, zero area


def windowed_selection(ranked, areas, iou_threshold, bounds):
    """Every position (best first) the greedy hard NMS selects with no limit, or None when the windows would
    be too large. `ranked` = (y1, x1, y2, x2) f32 in rank order, `areas` their f32 areas, `bounds` box_bounds
    for iou_threshold (finite), so that pairs outside them never reach it."""
    count = len(areas)
    if not all(np.isfinite(b).all() for b in bounds):
        return None
    width, order = min((_sweep(bounds[axis], bounds[axis + 1]) for axis in (0, 2)), key=lambda found: found[0])
    if count * width > WINDOW_LIMIT:
        return None
    i, j = _suppressing_pairs(ranked, areas, iou_threshold, order, width)
    return np.flatnonzero(resolve_hits(count, i, j, ROUNDS))


def _sweep(low, high):
    """(width, order): boxes sorted on their low ends, and how many boxes after one, at most, start before it
    ends. The order among equal low ends does not matter: a box whose bounds are empty (high < low) meets none."""
    order = np.argsort(low)
    starts = low[order]
    width = int((np.searchsorted(starts, high[order], side="right") - np.arange(1, len(order) + 1)).max(initial=0))
    return width, order


def _suppressing_pairs(ranked, areas, iou_threshold, order, width):
    """(i, j) rank positions, i < j, of every pair with IoU >= iou_threshold among boxes at most `width`
    apart in `order`."""
    if width <= 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    columns = [c[order] for c in (*ranked, areas)]
    windows = [np.lib.stride_tricks.sliding_window_view(
        np.concatenate([c[1:], np.full(width, fill, dtype=c.dtype)]), width) for c, fill in zip(columns, _FILL)]
    found = []
    step = max(1, ROWS_ELEMENTS // width)
    empty_boxes = not (areas > 0).all()  # else only the windows' fill has no area, and its IoU is 0 anyway
    for first in range(0, len(order), step):
        rows = slice(first, first + step)
        iou = box_iou([c[rows, None] for c in columns], [w[rows] for w in windows], empty_boxes)
        p, k = np.divmod(np.flatnonzero(iou >= iou_threshold), width)  # faster than a 2-D nonzero
        p += first
        found.append((order[p], order[p + 1 + k]))
    a = np.concatenate([f[0] for f in found])
    b = np.concatenate([f[1] for f in found])
    return np.minimum(a, b), np.maximum(a, b)


def box_iou(box, other, empty_boxes=True):
    """IoU in f32 of boxes (y1, x1, y2, x2, area) with others, broadcast, as the CPU plugin computes it (0 where
    an area is <= 0; `empty_boxes` False: the caller knows that none is). The same for either order of the
    two (min, max, products and the sum of two areas do not depend on it)."""
    y1, x1, y2, x2, area = box
    other_y1, other_x1, other_y2, other_x2, other_area = other
    height = np.minimum(y2, other_y2)
    height -= np.maximum(y1, other_y1)
    width = np.minimum(x2, other_x2)
    width -= np.maximum(x1, other_x1)
    inter = np.maximum(height, np.float32(0), out=height)
    inter *= np.maximum(width, np.float32(0), out=width)
    union = area + other_area
    union -= inter
    with np.errstate(all="ignore"):
        inter /= union
    if empty_boxes:
        inter[(area <= 0) | (other_area <= 0)] = 0
    return inter
