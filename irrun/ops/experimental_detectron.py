"""The ExperimentalDetectron* ops of opset6 (Detectron's Mask R-CNN pieces): TopKROIs, PriorGridGenerator,
ROIFeatureExtractor, GenerateProposalsSingleImage and DetectionOutput.

OpenVINO 2026.4 has no reference evaluate() for them: the CPU plugin defines the behaviour (f32 arithmetic;
outputs padded to the attribute sizes with zeros). Greedy NMS selects through greedy_nms."""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from ..ir.types import ELEMENT_TYPES
from .attrs import Bool, Float, Floats, Int, Ints
from .greedy_nms import box_bounds, greedy_nms
from .registry import Op, TensorInfo, op
from .roi_pooling import _roi_align_chunk, _roi_chunks, channels_last
from .shapes import require_rank, shape_str

F32 = np.float32
I32 = ELEMENT_TYPES["i32"]


def _float_input(info, what, port):
    if not info.type.is_float:
        raise ShapeError(f"{what} must be floating-point, got {info.type}", rule="port.type", port=port)


def _dim(info, axis, expected, what, port):
    if info.shape is not None and info.shape[axis] not in (None, expected):
        raise ShapeError(f"{what} {shape_str(info.shape)}: dimension {axis} must be {expected}",
                         rule="port.dims", port=port)


def _same_dims(a, b, what, port):
    if a is not None and b is not None and a != b:
        raise ShapeError(f"{what} differ ({a} and {b})", rule="port.dims", port=port)


def _descending(values):
    """Indices ordering `values` by value descending, ties by index (a stable sort)."""
    return np.argsort(-values.astype(np.float64), kind="stable")


# ---------------------------------------------------------------- TopKROIs

@op("ExperimentalDetectronTopKROIs", 6)
class ExperimentalDetectronTopKROIs6(Op):
    max_rois = Int(default=0, min=0)
    num_inputs = (2, 2)

    def infer(self, inputs):
        rois, probs = inputs
        require_rank(rois.shape, (2,), "input_rois", 0)
        require_rank(probs.shape, (1,), "rois_probs", 1)
        _dim(rois, 1, 4, "input_rois", 0)
        for port, info in enumerate(inputs):
            _float_input(info, ("input_rois", "rois_probs")[port], port)
        if rois.type != probs.type:
            raise ShapeError(f"input_rois is {rois.type}, rois_probs {probs.type}", rule="port.type", port=1)
        if rois.shape is not None and probs.shape is not None:
            _same_dims(rois.shape[0], probs.shape[0], "the numbers of ROIs and probabilities", 1)
        return [TensorInfo((self.max_rois, 4), rois.type)]

    def run(self, inputs, in_infos, out_infos):
        rois, probs = inputs
        out = np.zeros((self.max_rois, 4), rois.dtype)
        top = _descending(probs)[:self.max_rois]
        out[:len(top)] = rois[top]
        return [out]


# ---------------------------------------------------------------- PriorGridGenerator

@op("ExperimentalDetectronPriorGridGenerator", 6)
class ExperimentalDetectronPriorGridGenerator6(Op):
    flatten = Bool(default=True)
    h = Int(default=0, min=0)
    w = Int(default=0, min=0)
    stride_x = Float(default=0.0)
    stride_y = Float(default=0.0)
    num_inputs = (3, 3)

    def infer(self, inputs):
        priors, features, image = inputs
        require_rank(priors.shape, (2,), "priors", 0)
        require_rank(features.shape, (4,), "feature_map", 1)
        require_rank(image.shape, (4,), "im_data", 2)
        _dim(priors, 1, 4, "priors", 0)
        _float_input(priors, "priors", 0)
        for port, info in ((1, features), (2, image)):  # OpenVINO wants the priors' type for all three
            if info.type != priors.type:
                raise ShapeError(f"{('feature_map', 'im_data')[port - 1]} has type {info.type}, expected the "
                                 f"priors' {priors.type}", rule="port.type", port=port)
        if features.shape is not None and image.shape is not None:
            _same_dims(features.shape[0], image.shape[0], "the batch dimensions of feature_map and im_data", 2)
        count = None if priors.shape is None else priors.shape[0]
        # OpenVINO's shape inference takes the grid from the feature map, even when h or w is set
        height, width = (None, None) if features.shape is None else features.shape[2:]
        if self.flatten:
            shape = (None if None in (height, width, count) else height * width * count, 4)
        else:
            shape = (height, width, count, 4)
        return [TensorInfo(shape, priors.type)]

    def run(self, inputs, in_infos, out_infos):
        priors, features, image = inputs
        height = self.h or features.shape[2]
        width = self.w or features.shape[3]
        step_w = F32(self.stride_x) if self.stride_x else F32(image.shape[3]) / F32(width)
        step_h = F32(self.stride_y) if self.stride_y else F32(image.shape[2]) / F32(height)
        shift_x = (step_w * (np.arange(width, dtype=F32) + F32(0.5))).astype(F32)
        shift_y = (step_h * (np.arange(height, dtype=F32) + F32(0.5))).astype(F32)
        p = priors.astype(F32)
        grid = np.empty((height, width, len(p), 4), F32)
        grid[..., 0] = p[:, 0] + shift_x[None, :, None]
        grid[..., 1] = p[:, 1] + shift_y[:, None, None]
        grid[..., 2] = p[:, 2] + shift_x[None, :, None]
        grid[..., 3] = p[:, 3] + shift_y[:, None, None]
        shape = out_infos[0].shape
        if grid.size != np.prod(shape):
            # h/w attributes that disagree with the feature map: the output keeps the inferred size
            flat = np.zeros(int(np.prod(shape)), F32)
            count = min(flat.size, grid.size)
            flat[:count] = grid.reshape(-1)[:count]
            grid = flat
        return [grid.reshape(shape).astype(priors.dtype)]


# ---------------------------------------------------------------- ROIFeatureExtractor

@op("ExperimentalDetectronROIFeatureExtractor", 6)
class ExperimentalDetectronROIFeatureExtractor6(Op):
    output_size = Int(min=0)
    sampling_ratio = Int(min=0)
    pyramid_scales = Ints()
    aligned = Bool(default=False)
    num_inputs = (2, 1 << 30)

    def infer(self, inputs):
        rois, levels = inputs[0], inputs[1:]
        require_rank(rois.shape, (2,), "input_rois", 0)
        _dim(rois, 1, 4, "input_rois", 0)
        channels = None
        for port, level in enumerate(levels, start=1):
            require_rank(level.shape, (4,), f"pyramid level {port - 1}", port)
            _dim(level, 0, 1, f"pyramid level {port - 1}", port)
            if level.type != rois.type:
                raise ShapeError(f"pyramid level {port - 1} is {level.type}, input_rois {rois.type}",
                                 rule="port.type", port=port)
            if level.shape is not None and level.shape[1] is not None:
                _same_dims(channels, level.shape[1], "the pyramid levels' channel counts", port)
                channels = level.shape[1]
        _float_input(rois, "input_rois", 0)
        if len(self.pyramid_scales) < len(levels):
            raise ShapeError(f"pyramid_scales has {len(self.pyramid_scales)} values for {len(levels)} levels",
                             rule="attr.length")
        count = None if rois.shape is None else rois.shape[0]
        size = self.output_size
        return [TensorInfo((count, channels, size, size), rois.type), TensorInfo((count, 4), rois.type)]

    def run(self, inputs, in_infos, out_infos):
        rois, levels = inputs[0], inputs[1:]
        boxes = rois.astype(F32)
        size = self.output_size
        channels = levels[0].shape[1]
        out = np.zeros((len(boxes), channels, size, size), F32)
        level_of = _roi_levels(boxes, len(levels))
        offset = F32(0.5) if self.aligned else F32(0)
        for index, level in enumerate(levels):
            chosen = np.nonzero(level_of == index)[0]
            if not len(chosen) or size == 0:
                continue
            scale = F32(1) / F32(self.pyramid_scales[index])
            x1, y1, x2, y2 = ((boxes[chosen, i] * scale - offset).astype(F32) for i in range(4))
            roi_w = np.maximum(x2 - x1, F32(1))
            roi_h = np.maximum(y2 - y1, F32(1))
            bin_w, bin_h = roi_w / F32(size), roi_h / F32(size)
            if self.sampling_ratio > 0:
                ratio_x = ratio_y = np.full(len(chosen), self.sampling_ratio, np.int64)
            else:
                ratio_x = np.ceil(roi_w / F32(size)).astype(np.int64)
                ratio_y = np.ceil(roi_h / F32(size)).astype(np.int64)
            max_x, max_y = int(ratio_x.max()), int(ratio_y.max())
            features = channels_last(level.astype(F32, copy=False))
            batch = np.zeros(len(chosen), np.int64)
            per_roi = channels * size * size * max_x * max_y * 4
            self.reserve(min(len(chosen), 1 << 20) * per_roi * 4, "ROI sample gather")
            for part in _roi_chunks(len(chosen), per_roi):
                out[chosen[part]] = _roi_align_chunk(features, batch[part], x1[part], y1[part], bin_w[part],
                                                     bin_h[part], ratio_x[part], ratio_y[part], max_x, max_y,
                                                     size, size, "avg", F32)
        return [out.astype(rois.dtype), rois.copy()]


def _roi_levels(boxes, levels):
    """Detectron's FPN level of each ROI: floor(2 + log2(sqrt(area) / 224 + 1e-6)) clamped to the levels; an
    ROI of area <= 0 gets no level (its features stay zero)."""
    area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
    with np.errstate(all="ignore"):
        scaled = np.log2((np.sqrt(area) / F32(224)).astype(F32) + F32(1e-6)).astype(F32)
        target = np.floor(scaled + F32(2))
    target = np.clip(np.nan_to_num(target, nan=0, posinf=levels - 1, neginf=0), 0, levels - 1).astype(np.int64)
    return np.where(area > 0, target, levels)


# ---------------------------------------------------------------- box decoding and greedy NMS

def _decode(x0, y0, x1, y1, dx, dy, dlog_w, dlog_h, max_delta_log_wh):
    """Detectron's bbox_transform in f32 with coordinate offset 1: the decoded corners, not yet clipped."""
    one, half = F32(1), F32(0.5)
    ww = (x1 - x0 + one).astype(F32)
    hh = (y1 - y0 + one).astype(F32)
    ctr_x = (x0 + half * ww).astype(F32)
    ctr_y = (y0 + half * hh).astype(F32)
    pred_x = (dx * ww + ctr_x).astype(F32)
    pred_y = (dy * hh + ctr_y).astype(F32)
    with np.errstate(over="ignore"):
        pred_w = (np.exp(np.minimum(dlog_w, max_delta_log_wh)).astype(F32) * ww).astype(F32)
        pred_h = (np.exp(np.minimum(dlog_h, max_delta_log_wh)).astype(F32) * hh).astype(F32)
    return ((pred_x - half * pred_w).astype(F32), (pred_y - half * pred_h).astype(F32),
            (pred_x + half * pred_w - one).astype(F32), (pred_y + half * pred_h - one).astype(F32))


def _overlaps(boxes, i, others, offset, threshold):
    """Whether box i overlaps each of `others` with IoU > threshold (f32, Detectron's coordinate offset)."""
    x0, y0, x1, y1 = (boxes[:, k] for k in range(4))
    width = (np.minimum(x1[i], x1[others]) - np.maximum(x0[i], x0[others]) + offset).astype(F32)
    height = (np.minimum(y1[i], y1[others]) - np.maximum(y0[i], y0[others]) + offset).astype(F32)
    area_i = ((x1[i] - x0[i] + offset) * (y1[i] - y0[i] + offset)).astype(F32)
    area_o = ((x1[others] - x0[others] + offset) * (y1[others] - y0[others] + offset)).astype(F32)
    inter = (np.maximum(width, F32(0)) * np.maximum(height, F32(0))).astype(F32)
    with np.errstate(all="ignore"):
        iou = (inter / (area_i + area_o - inter)).astype(F32)
    return iou, (x0[i] <= x1[others]) & (y0[i] <= y1[others]) & (x0[others] <= x1[i]) & (y0[others] <= y1[i])


# ---------------------------------------------------------------- GenerateProposalsSingleImage

_MAX_DELTA_LOG_WH = F32(np.log(1000.0 / 16.0))


@op("ExperimentalDetectronGenerateProposalsSingleImage", 6)
class ExperimentalDetectronGenerateProposalsSingleImage6(Op):
    min_size = Float()
    nms_threshold = Float()
    post_nms_count = Int(min=0)
    pre_nms_count = Int(min=0)
    num_inputs = (4, 4)

    def infer(self, inputs):
        im_info, anchors, deltas, scores = inputs
        require_rank(im_info.shape, (1,), "im_info", 0)
        require_rank(anchors.shape, (2,), "anchors", 1)
        require_rank(deltas.shape, (3,), "deltas", 2)
        require_rank(scores.shape, (3,), "scores", 3)
        _dim(im_info, 0, 3, "im_info", 0)
        _dim(anchors, 1, 4, "anchors", 1)
        for port, info in enumerate(inputs):
            _float_input(info, ("im_info", "anchors", "deltas", "scores")[port], port)
            if info.type != im_info.type:
                raise ShapeError(f"input {port} is {info.type}, im_info {im_info.type}", rule="port.type", port=port)
        if deltas.shape is not None and scores.shape is not None:
            _same_dims(deltas.shape[1], scores.shape[1], "the heights of deltas and scores", 3)
            _same_dims(deltas.shape[2], scores.shape[2], "the widths of deltas and scores", 3)
        count = self.post_nms_count
        return [TensorInfo((count, 4), anchors.type), TensorInfo((count,), anchors.type)]

    def run(self, inputs, in_infos, out_infos):
        im_info, anchors, deltas, scores = (x.astype(F32, copy=False) for x in inputs)
        num_anchors, height, width = scores.shape
        total = num_anchors * height * width
        if anchors.shape[0] != total or deltas.shape[0] != 4 * num_anchors:
            raise ShapeError(f"anchors {list(anchors.shape)}, deltas {list(deltas.shape)} and scores "
                             f"{list(scores.shape)} do not describe the same {num_anchors} anchors per cell",
                             rule="port.dims", port=1)
        # proposals in (h, w, anchor) order, as the anchors are laid out
        d = deltas.reshape(num_anchors, 4, height, width).transpose(2, 3, 0, 1).reshape(total, 4)
        score = scores.transpose(1, 2, 0).reshape(total)
        x0, y0, x1, y1 = _decode(*(anchors[:, k] for k in range(4)), *(d[:, k] for k in range(4)),
                                 _MAX_DELTA_LOG_WH)
        img_h, img_w = F32(im_info[0]), F32(im_info[1])
        one, zero = F32(1), F32(0)
        x0 = np.maximum(zero, np.minimum(x0, img_w - one))
        y0 = np.maximum(zero, np.minimum(y0, img_h - one))
        x1 = np.maximum(zero, np.minimum(x1, img_w - one))
        y1 = np.maximum(zero, np.minimum(y1, img_h - one))
        min_size = F32(self.min_size)
        big = (min_size <= (x1 - x0 + one)) & (min_size <= (y1 - y0 + one))
        score = (big.astype(F32) * score).astype(F32)
        order = _descending(score)[:min(total, self.pre_nms_count)]
        boxes = np.stack([x0, y0, x1, y1], axis=1)[order]
        kept = proposal_nms(boxes, F32(self.nms_threshold), self.post_nms_count)
        rois = np.zeros((self.post_nms_count, 4), F32)
        out_scores = np.zeros(self.post_nms_count, F32)
        rois[:len(kept)] = boxes[kept]
        out_scores[:len(kept)] = score[order][kept]
        dtype = inputs[1].dtype
        return [rois.astype(dtype), out_scores.astype(dtype)]


def proposal_nms(boxes, threshold, limit, offset=F32(0), dead=None):  # noqa: B008 - an immutable NumPy scalar
    """Greedy NMS over boxes sorted best first: a box is dropped when a kept box touches it and their IoU
    (box sizes + `offset`) exceeds the threshold; boxes marked in `dead` start dropped; at most `limit` are
    kept."""

    def suppresses(kept, later):
        iou, touching = _overlaps(boxes, kept, later, offset, threshold)
        return (threshold < iou) & touching

    bounds = box_bounds(*(boxes[:, k] for k in range(4)))
    return greedy_nms(len(boxes), suppresses, limit, bounds, dead)


# ---------------------------------------------------------------- DetectionOutput

@op("ExperimentalDetectronDetectionOutput", 6)
class ExperimentalDetectronDetectionOutput6(Op):
    score_threshold = Float()
    nms_threshold = Float()
    max_delta_log_wh = Float()
    num_classes = Int(min=1)
    post_nms_count = Int()
    max_detections_per_image = Int(min=0)
    class_agnostic_box_regression = Bool(default=False)  # read, and ignored by OpenVINO's kernels
    deltas_weights = Floats()
    num_inputs = (4, 4)

    def infer(self, inputs):
        rois, deltas, scores, im_info = inputs
        names = ("input_rois", "input_deltas", "input_scores", "input_im_info")
        for port, info in enumerate(inputs):
            require_rank(info.shape, (2,), names[port], port)
            _float_input(info, names[port], port)
            if info.type != rois.type:
                raise ShapeError(f"{names[port]} is {info.type}, input_rois {rois.type}", rule="port.type", port=port)
        _dim(rois, 1, 4, "input_rois", 0)
        _dim(deltas, 1, self.num_classes * 4, "input_deltas (num_classes * 4)", 1)
        _dim(scores, 1, self.num_classes, "input_scores (num_classes)", 2)
        _dim(im_info, 0, 1, "input_im_info", 3)
        _dim(im_info, 1, 3, "input_im_info", 3)
        if all(i.shape is not None for i in inputs[:3]):
            counts = {i.shape[0] for i in inputs[:3]} - {None}
            if len(counts) > 1:
                raise ShapeError(f"input_rois, input_deltas and input_scores disagree on the number of ROIs "
                                 f"({sorted(counts)})", rule="port.dims", port=1)
        if len(self.deltas_weights) != 4:
            raise ShapeError(f"deltas_weights has {len(self.deltas_weights)} values, expected 4", rule="attr.length")
        count = self.max_detections_per_image
        return [TensorInfo((count, 4), rois.type), TensorInfo((count,), I32), TensorInfo((count,), rois.type)]

    def run(self, inputs, in_infos, out_infos):
        rois, deltas, scores, _ = (x.astype(F32, copy=False) for x in inputs)
        num_rois, classes = len(rois), self.num_classes
        weights = np.array(self.deltas_weights, F32)
        d = (deltas.reshape(num_rois, classes, 4) / weights).astype(F32)
        x0, y0, x1, y1 = (rois[:, k, None] for k in range(4))
        valid = ((x1 - x0) > 0) & ((y1 - y0) > 0)
        boxes = np.stack(_decode(x0, y0, x1, y1, *(d[..., k] for k in range(4)), F32(self.max_delta_log_wh)),
                         axis=-1)
        boxes = np.maximum(boxes, F32(0))
        one = F32(1)
        areas = ((boxes[..., 2] - boxes[..., 0] + one) * (boxes[..., 3] - boxes[..., 1] + one)).astype(F32)
        boxes = np.where(valid[..., None], boxes, F32(0))
        areas = np.where(valid, areas, F32(0))
        class_scores = np.where(valid, scores, F32(0))
        found = []  # (score, class, roi) in class order, NMS order within a class
        for c in range(1, classes):
            candidates = np.nonzero(class_scores[:, c] > F32(self.score_threshold))[0]
            order = candidates[_descending(class_scores[candidates, c])]
            kept = _detectron_nms(boxes[order, c], areas[order, c], F32(self.nms_threshold))
            if self.post_nms_count != -1:
                kept = kept[:max(self.post_nms_count, 0)]
            for roi in order[kept]:
                found.append((class_scores[roi, c], c, roi))
        limit = self.max_detections_per_image
        if len(found) > limit:
            found.sort(key=lambda item: (-float(item[0]), item[2]))
            found = found[:limit]
        out_boxes = np.zeros((limit, 4), F32)
        out_classes = np.zeros(limit, np.int32)
        out_scores = np.zeros(limit, F32)
        if found:
            score, cls, roi = (np.array(v) for v in zip(*found))
            out_boxes[:len(found)] = boxes[roi, cls]
            out_classes[:len(found)] = cls
            out_scores[:len(found)] = score
        dtype = inputs[0].dtype
        return [out_boxes.astype(dtype), out_classes, out_scores.astype(dtype)]


def _detectron_nms(boxes, areas, threshold):
    """Greedy NMS (candidates best first): a candidate is kept unless a kept box overlaps it with IoU >
    threshold (JaccardOverlap with coordinate offset 1). Returns the kept positions."""
    x0, y0, x1, y1 = (boxes[:, k] for k in range(4))

    def suppresses(kept, later):
        disjoint = (x0[kept] > x1[later]) | (x1[kept] < x0[later]) | (y0[kept] > y1[later]) | (y1[kept] < y0[later])
        width = (np.minimum(x1[later], x1[kept]) - np.maximum(x0[later], x0[kept]) + F32(1)).astype(F32)
        height = (np.minimum(y1[later], y1[kept]) - np.maximum(y0[later], y0[kept]) + F32(1)).astype(F32)
        inter = (width * height).astype(F32)
        with np.errstate(all="ignore"):
            iou = (inter / (areas[later] + areas[kept] - inter)).astype(F32)
        return np.where(disjoint | (width <= 0) | (height <= 0), F32(0), iou) > threshold

    # a disjoint pair has IoU 0, which suppresses only below a negative threshold
    bounds = box_bounds(x0, y0, x1, y1) if threshold >= 0 else None
    return greedy_nms(len(boxes), suppresses, len(boxes), bounds)
