"""Rotated-box ops: ROIAlignRotated-15 and NMSRotated-13.

Boxes are (x_center, y_center, width, height, angle in radians). OpenVINO 2026.4 has no reference evaluate()
for either; the CPU plugin is the oracle, its rotated IoU being detectron2's (intersection polygon of the
two rectangles). irrun computes that polygon's area in f64 (the plugin in f32), so an IoU within a few ulps
of the threshold may decide differently."""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError, ShapeError
from ..ir.types import ELEMENT_TYPES
from .attrs import Bool, Float, Int, Type
from .detection import _scalar, _scalar_value
from .registry import Op, TensorInfo, ValueDependentOp, op
from .roi_pooling import _roi_chunks
from .shapes import require_rank, shape_str

F32 = np.float32
I64 = ELEMENT_TYPES["i64"]
F32_TYPE = ELEMENT_TYPES["f32"]


# ---------------------------------------------------------------- ROIAlignRotated

@op("ROIAlignRotated", 15)
class ROIAlignRotated15(Op):
    pooled_h = Int(min=1)
    pooled_w = Int(min=1)
    sampling_ratio = Int(min=0)
    spatial_scale = Float()
    clockwise_mode = Bool(default=False)
    num_inputs = (3, 3)

    def infer(self, inputs):
        data, rois, batch_indices = inputs
        require_rank(data.shape, (4,), "feature map", 0)
        require_rank(rois.shape, (2,), "ROIs", 1)
        require_rank(batch_indices.shape, (1,), "batch indices", 2)
        if data.type != rois.type or not data.type.is_float:
            raise ShapeError(f"feature map and ROIs must share one floating-point type, got {data.type} and "
                             f"{rois.type}", rule="port.type", port=1)
        if not batch_indices.type.is_integer:
            raise ShapeError(f"batch indices must be integers, got {batch_indices.type}", rule="port.type", port=2)
        if rois.shape is not None and rois.shape[1] not in (None, 5):
            raise ShapeError(f"ROIs {shape_str(rois.shape)} must be [num_rois, 5] (x_ctr, y_ctr, w, h, angle)",
                             rule="port.dims", port=1)
        count = None if rois.shape is None else rois.shape[0]
        if batch_indices.shape is not None and batch_indices.shape[0] is not None:
            if count is not None and count != batch_indices.shape[0]:
                raise ShapeError(f"batch indices {shape_str(batch_indices.shape)} and ROIs {shape_str(rois.shape)} "
                                 "disagree on the number of ROIs", rule="port.dims", port=2)
            count = batch_indices.shape[0]
        channels = None if data.shape is None else data.shape[1]
        return [TensorInfo((count, channels, self.pooled_h, self.pooled_w), data.type)]

    def run(self, inputs, in_infos, out_infos):
        features, rois, batch_indices = inputs
        batch_ids = batch_indices.astype(np.int64)
        bad = (batch_ids < 0) | (batch_ids >= features.shape[0])
        if bad.any():
            first = int(np.argmax(bad))
            raise ExecutionError(f"ROI {first} has batch index {batch_ids[first]}, outside "
                                 f"[0, {features.shape[0] - 1}]", rule="input.roi", port=2)
        boxes = rois.astype(F32)
        scale = F32(self.spatial_scale)
        cx = (boxes[:, 0] * scale - F32(0.5)).astype(F32)
        cy = (boxes[:, 1] * scale - F32(0.5)).astype(F32)
        width = (boxes[:, 2] * scale).astype(F32)
        height = (boxes[:, 3] * scale).astype(F32)
        angle = -boxes[:, 4] if self.clockwise_mode else boxes[:, 4]
        cos, sin = np.cos(angle.astype(np.float64)).astype(F32), np.sin(angle.astype(np.float64)).astype(F32)
        ph, pw = self.pooled_h, self.pooled_w
        bin_w, bin_h = (width / F32(pw)).astype(F32), (height / F32(ph)).astype(F32)
        if self.sampling_ratio > 0:
            ratio_x = ratio_y = np.full(len(boxes), self.sampling_ratio, np.int64)
        else:
            ratio_x, ratio_y = np.ceil(bin_w).astype(np.int64), np.ceil(bin_h).astype(np.int64)
            if (ratio_x < 0).any() or (ratio_y < 0).any():
                raise ExecutionError("an ROI has a negative size, giving a negative adaptive sampling ratio",
                                     rule="input.roi", port=1)
        out = np.zeros((len(boxes), features.shape[1], ph, pw), F32)
        max_x, max_y = int(ratio_x.max(initial=0)), int(ratio_y.max(initial=0))
        if out.size == 0 or max_x == 0 or max_y == 0:
            return [out.astype(features.dtype)]
        per_roi = features.shape[1] * ph * pw * max_x * max_y * 4
        self.reserve(min(len(boxes), 1 << 20) * per_roi * 4, "ROI sample gather")
        geometry = (cx, cy, cos, sin, (-width / F32(2)).astype(F32), (-height / F32(2)).astype(F32), bin_w, bin_h,
                    ratio_x, ratio_y)
        for part in _roi_chunks(len(boxes), per_roi):
            out[part] = _rotated_chunk(features, batch_ids[part], [g[part] for g in geometry], max_x, max_y, ph, pw)
        return [out.astype(features.dtype)]


def _rotated_chunk(features, batch_ids, geometry, max_x, max_y, ph, pw):
    """Average of bilinear samples on each rotated bin's grid (samples beyond [-1, size] weigh 0)."""
    cx, cy, cos, sin, x1, y1, bin_w, bin_h, ratio_x, ratio_y = geometry
    height, width = features.shape[2:]
    r = (slice(None), None, None, None, None)  # index layout (R, PH, SY, PW, SX)
    sy = np.arange(max_y, dtype=F32)[None, None, :, None, None]
    sx = np.arange(max_x, dtype=F32)[None, None, None, None, :]
    by = np.arange(ph, dtype=F32)[None, :, None, None, None]
    bx = np.arange(pw, dtype=F32)[None, None, None, :, None]
    dist_y = (bin_h / np.maximum(ratio_y, 1).astype(F32)).astype(F32)[r]
    dist_x = (bin_w / np.maximum(ratio_x, 1).astype(F32)).astype(F32)[r]
    pre_y = (y1[r] + by * bin_h[r] + dist_y * (sy + F32(0.5))).astype(F32)
    pre_x = (x1[r] + bx * bin_w[r] + dist_x * (sx + F32(0.5))).astype(F32)
    y = (pre_y * cos[r] - pre_x * sin[r] + cy[r]).astype(F32)
    x = (pre_y * sin[r] + pre_x * cos[r] + cx[r]).astype(F32)
    inside = (np.arange(max_y)[None, None, :, None, None] < ratio_y[r]) & \
             (np.arange(max_x)[None, None, None, None, :] < ratio_x[r])
    valid = inside & (x >= -1) & (x <= F32(width)) & (y >= -1) & (y <= F32(height))
    y = np.maximum(np.where(valid, y, F32(0)), F32(0))
    x = np.maximum(np.where(valid, x, F32(0)), F32(0))
    y_lo, x_lo = y.astype(np.int64), x.astype(np.int64)
    y_edge, x_edge = y_lo >= height - 1, x_lo >= width - 1
    y_lo = np.where(y_edge, height - 1, y_lo)
    x_lo = np.where(x_edge, width - 1, x_lo)
    y_hi = np.where(y_edge, height - 1, y_lo + 1)
    x_hi = np.where(x_edge, width - 1, x_lo + 1)
    y = np.where(y_edge, y_lo.astype(F32), y)
    x = np.where(x_edge, x_lo.astype(F32), x)
    ly, lx = (y - y_lo.astype(F32)).astype(F32), (x - x_lo.astype(F32)).astype(F32)
    hy, hx = (F32(1) - ly).astype(F32), (F32(1) - lx).astype(F32)
    b = batch_ids[r]
    sample = None
    for yy, xx, weight in ((y_lo, x_lo, hy * hx), (y_lo, x_hi, hy * lx), (y_hi, x_lo, ly * hx), (y_hi, x_hi, ly * lx)):
        term = np.where(valid, weight.astype(F32), F32(0))[..., None] * features[b, :, yy, xx].astype(F32)
        sample = term if sample is None else sample + term
    count = (ratio_x * ratio_y).astype(F32)[:, None, None, None, None, None]
    result = (sample / count).astype(F32).sum(axis=(2, 4))
    return np.moveaxis(result, -1, 1)


# ---------------------------------------------------------------- NMSRotated

def _vertices(boxes):
    """Corners (K, 4, 2) of rotated boxes (x_ctr, y_ctr, w, h, angle), in f32 as detectron2 orders them."""
    angle = boxes[:, 4].astype(F32)
    cos2 = (np.cos(angle.astype(np.float64)).astype(F32) * F32(0.5)).astype(F32)
    sin2 = (np.sin(angle.astype(np.float64)).astype(F32) * F32(0.5)).astype(F32)
    x, y, w, h = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    p0 = np.stack([x - sin2 * h - cos2 * w, y + cos2 * h - sin2 * w], axis=1)
    p1 = np.stack([x + sin2 * h - cos2 * w, y - cos2 * h - sin2 * w], axis=1)
    centre = np.stack([x, y], axis=1)
    return np.stack([p0, p1, 2 * centre - p0, 2 * centre - p1], axis=1).astype(F32)


def _cross(a, b):
    return a[..., 0] * b[..., 1] - b[..., 0] * a[..., 1]


def _inside(points, rect):
    """Which of points (K, 4, 2) lie in the rectangles rect (K, 4, 2) (projection test, borders included)."""
    ab = (rect[:, 1] - rect[:, 0])[:, None]
    da = (rect[:, 0] - rect[:, 3])[:, None]
    ap = points - rect[:, 0][:, None]
    ap_ab = (ap * ab).sum(-1)
    ap_ad = -(ap * da).sum(-1)
    return (ap_ab >= 0) & (ap_ad >= 0) & (ap_ab <= (ab * ab).sum(-1)) & (ap_ad <= (da * da).sum(-1))


def rotated_intersection(box, others):
    """Area of the intersection of one rotated box with each of `others` (detectron2's box_iou_rotated)."""
    pts1 = np.broadcast_to(_vertices(box[None]), (len(others), 4, 2))
    pts2 = _vertices(others)
    vec1 = np.roll(pts1, -1, axis=1) - pts1
    vec2 = np.roll(pts2, -1, axis=1) - pts2
    # edge i of box 1 against edge j of box 2: (K, 4, 4)
    v1, v2 = vec1[:, :, None, :], vec2[:, None, :, :]
    det = _cross(v2, v1)
    d12 = pts2[:, None, :, :] - pts1[:, :, None, :]
    with np.errstate(all="ignore"):
        t1 = _cross(v2, d12) / det
        t2 = _cross(v1, d12) / det
    hit = (np.abs(det) > F32(1e-14)) & (t1 >= 0) & (t1 <= 1) & (t2 >= 0) & (t2 <= 1)
    crossings = pts1[:, :, None, :] + v1 * np.where(hit, t1, 0)[..., None]
    points = np.concatenate([crossings.reshape(-1, 16, 2), pts1, pts2], axis=1).astype(np.float64)
    valid = np.concatenate([hit.reshape(-1, 16), _inside(pts1, pts2), _inside(pts2, pts1)], axis=1)
    # the points are the corners of a convex polygon (with repeats): order them by angle around their mean
    count = valid.sum(axis=1)
    centre = np.where(valid[..., None], points, 0).sum(axis=1) / np.maximum(count, 1)[:, None]
    rel = points - centre[:, None, :]
    theta = np.where(valid, np.arctan2(rel[..., 1], rel[..., 0]), np.inf)
    order = np.argsort(theta, axis=1)
    ordered = np.take_along_axis(rel, order[..., None], axis=1)
    keep = np.take_along_axis(valid, order, axis=1)
    first = ordered[:, :1]
    ordered = np.where(keep[..., None], ordered, first)  # padding repeats the first point: adds no area
    area = np.abs(_cross(ordered, np.roll(ordered, -1, axis=1)).sum(axis=1)) / 2
    return np.where(count > 2, area, 0.0)


def rotated_iou(box, others):
    inter = rotated_intersection(box, others)
    area_i = float(F32(box[2] * box[3]))
    area_o = (others[:, 2] * others[:, 3]).astype(F32).astype(np.float64)
    with np.errstate(all="ignore"):
        iou = inter / (area_i + area_o - inter)
    return np.where((area_i <= 0) | (area_o <= 0), 0.0, iou)


@op("NMSRotated", 13)
class NMSRotated13(ValueDependentOp):
    sort_result_descending = Bool(default=True)
    output_type = Type("i32", "i64", default=I64)
    clockwise = Bool(default=True)
    num_inputs = (5, 5)

    def infer(self, inputs):
        boxes, scores = inputs[:2]
        require_rank(boxes.shape, (3,), "boxes", 0)
        require_rank(scores.shape, (3,), "scores", 1)
        for port in (0, 1):
            if not inputs[port].type.is_float:
                raise ShapeError(f"{('boxes', 'scores')[port]} must be floating-point, got {inputs[port].type}",
                                 rule="port.type", port=port)
        names = ("max_output_boxes_per_class", "iou_threshold", "score_threshold")
        for port in (2, 3, 4):
            _scalar(inputs[port], names[port - 2], port, True)
        if not inputs[2].type.is_integer:
            raise ShapeError(f"max_output_boxes_per_class must be an integer, got {inputs[2].type}",
                             rule="port.type", port=2)
        for port in (3, 4):  # OpenVINO's NMSRotated wants floating-point thresholds
            if not inputs[port].type.is_float:
                raise ShapeError(f"{names[port - 2]} must be floating-point, got {inputs[port].type}",
                                 rule="port.type", port=port)
        if boxes.shape is not None and boxes.shape[2] not in (None, 5):
            raise ShapeError(f"boxes {shape_str(boxes.shape)} must have 5 values (x, y, w, h, angle) per box",
                             rule="port.dims", port=0)
        if boxes.shape is not None and scores.shape is not None:
            for b, s, what in ((0, 0, "batch"), (1, 2, "number of boxes")):
                if None not in (boxes.shape[b], scores.shape[s]) and boxes.shape[b] != scores.shape[s]:
                    raise ShapeError(f"boxes {shape_str(boxes.shape)} and scores {shape_str(scores.shape)} differ in "
                                     f"the {what}", rule="port.dims", port=1)
        index_type = self.output_type
        if any(i.value is None for i in inputs):
            return [TensorInfo((None, 3), index_type), TensorInfo((None, 3), F32_TYPE), TensorInfo((1,), index_type)]
        rows, values = self._compute([np.asarray(i.value) for i in inputs])
        score_rows = np.concatenate([rows[:, :2].astype(F32), values[:, None]], axis=1).astype(F32)
        return [TensorInfo(rows.shape, index_type, rows.astype(index_type.storage)),
                TensorInfo(score_rows.shape, F32_TYPE, score_rows),
                TensorInfo((1,), index_type, np.array([len(rows)], index_type.storage))]

    def _compute(self, values):
        boxes, scores = values[0].astype(F32), values[1].astype(F32)
        max_out = int(_scalar_value(TensorInfo(None, None, values[2])))
        iou_threshold = F32(_scalar_value(TensorInfo(None, None, values[3])))
        score_threshold = F32(_scalar_value(TensorInfo(None, None, values[4])))
        if not self.clockwise:
            boxes = boxes.copy()
            boxes[..., 4] = -boxes[..., 4]
        rows, picked = [], []
        for b in range(scores.shape[0]):
            for c in range(scores.shape[1]):
                s = scores[b, c]
                candidates = np.nonzero(s > score_threshold)[0]
                order = candidates[np.lexsort((candidates, -s[candidates].astype(np.float64)))]
                kept = []
                for box in order:
                    if len(kept) >= max(max_out, 0):
                        break
                    if kept and (rotated_iou(boxes[b, box], boxes[b, np.array(kept[::-1])]) > iou_threshold).any():
                        continue
                    kept.append(box)
                rows += [(b, c, k) for k in kept]
                picked += [s[k] for k in kept]
        rows = np.array(rows, dtype=np.int64).reshape(-1, 3)
        picked = np.array(picked, dtype=F32)
        if self.sort_result_descending and len(rows):
            order = np.lexsort((rows[:, 2], rows[:, 1], rows[:, 0], -picked.astype(np.float64)))
            rows, picked = rows[order], picked[order]
        return rows, picked
