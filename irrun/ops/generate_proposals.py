"""GenerateProposals-9: the batched, normalized-aware successor of ExperimentalDetectronGenerateProposalsSingleImage.

Outputs are sized by what NMS keeps (rois [K, 4], roi_scores [K], rois_num [N]), known only at run time.
OpenVINO 2026.4 has no reference evaluate(); the CPU plugin defines the behaviour (f32)."""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from ..ir.types import ELEMENT_TYPES
from .attrs import Bool, Float, Int, Type
from .experimental_detectron import _MAX_DELTA_LOG_WH, _descending, _float_input, proposal_nms
from .registry import TensorInfo, ValueDependentOp, op
from .shapes import require_rank, shape_str

F32 = np.float32
I64 = ELEMENT_TYPES["i64"]


@op("GenerateProposals", 9)
class GenerateProposals9(ValueDependentOp):
    min_size = Float()
    nms_threshold = Float()
    pre_nms_count = Int(min=1)
    post_nms_count = Int(min=1)
    normalized = Bool(default=True)
    nms_eta = Float(default=1.0)
    roi_num_type = Type("i32", "i64", default=I64)
    num_inputs = (4, 4)

    def infer(self, inputs):
        im_info, anchors, deltas, scores = inputs
        names = ("im_info", "anchors", "deltas", "scores")
        require_rank(im_info.shape, (2,), "im_info", 0)
        for port in (1, 2, 3):
            require_rank(inputs[port].shape, (4,), names[port], port)
        for port, info in enumerate(inputs):
            _float_input(info, names[port], port)
            if info.type != im_info.type:
                raise ShapeError(f"{names[port]} is {info.type}, im_info {im_info.type}", rule="port.type", port=port)
        if self.nms_eta != 1.0:
            raise ShapeError(f"nms_eta {self.nms_eta}: only 1.0 is supported (as in OpenVINO)", rule="attr.range")
        if im_info.shape is not None and im_info.shape[1] not in (None, 3, 4):
            raise ShapeError(f"im_info {shape_str(im_info.shape)} must be [N, 3] or [N, 4]", rule="port.dims", port=0)
        if anchors.shape is not None and anchors.shape[3] not in (None, 4):
            raise ShapeError(f"anchors {shape_str(anchors.shape)} must end in 4", rule="port.dims", port=1)
        batches = [None if i.shape is None else i.shape[0] for i in (im_info, deltas, scores)]
        known = {b for b in batches if b is not None}
        if len(known) > 1:
            raise ShapeError(f"im_info, deltas and scores disagree on the batch ({sorted(known)})",
                             rule="port.dims", port=2)
        if deltas.shape is not None and scores.shape is not None:
            expected = (None if scores.shape[1] is None else scores.shape[1] * 4, scores.shape[2], scores.shape[3])
            for axis, want in zip((1, 2, 3), expected):
                if None not in (deltas.shape[axis], want) and deltas.shape[axis] != want:
                    raise ShapeError(f"deltas {shape_str(deltas.shape)} do not match scores {shape_str(scores.shape)}",
                                     rule="port.dims", port=2)
        if anchors.shape is not None and scores.shape is not None:
            for a_axis, s_axis in ((0, 2), (1, 3), (2, 1)):
                a, s = anchors.shape[a_axis], scores.shape[s_axis]
                if None not in (a, s) and a != s:
                    raise ShapeError(f"anchors {shape_str(anchors.shape)} do not match scores "
                                     f"{shape_str(scores.shape)}", rule="port.dims", port=1)
        batch = next(iter(known), None)
        if all(i.value is not None for i in inputs):
            rois, roi_scores, counts = self._compute([np.asarray(i.value) for i in inputs])
            dtype = anchors.type.storage
            return [TensorInfo(rois.shape, anchors.type, rois.astype(dtype)),
                    TensorInfo(roi_scores.shape, anchors.type, roi_scores.astype(dtype)),
                    TensorInfo(counts.shape, self.roi_num_type, counts.astype(self.roi_num_type.storage))]
        return [TensorInfo((None, 4), anchors.type), TensorInfo((None,), anchors.type),
                TensorInfo((batch,), self.roi_num_type)]

    def _compute(self, values):
        im_info, anchors, deltas, scores = (v.astype(F32, copy=False) for v in values)
        _, num_anchors, height, width = scores.shape
        total = num_anchors * height * width
        flat_anchors = anchors.reshape(total, 4)  # (h, w, anchor) order
        offset = F32(0) if self.normalized else F32(1)
        rois, roi_scores, counts = [], [], []
        for b in range(scores.shape[0]):
            d = deltas[b].reshape(num_anchors, 4, height, width).transpose(2, 3, 0, 1).reshape(total, 4)
            score = scores[b].transpose(1, 2, 0).reshape(total)
            info = im_info[b]
            scale_h = info[2]
            scale_w = info[3] if len(info) == 4 else info[2]
            boxes, big = _refine(flat_anchors, d, F32(info[0]), F32(info[1]), F32(self.min_size) * F32(scale_h),
                                 F32(self.min_size) * F32(scale_w), offset)
            order = _descending(score)[:min(total, self.pre_nms_count)]
            kept = proposal_nms(boxes[order], F32(self.nms_threshold), self.post_nms_count, offset, dead=~big[order])
            rois.append(boxes[order][kept])
            roi_scores.append(score[order][kept])
            counts.append(len(kept))
        return (np.concatenate(rois) if rois else np.zeros((0, 4), F32),
                np.concatenate(roi_scores) if roi_scores else np.zeros(0, F32), np.array(counts, np.int64))


def _refine(anchors, d, img_h, img_w, min_h, min_w, offset):
    """Decoded and clipped boxes (f32) and whether each is at least the minimum size."""
    x0, y0, x1, y1 = (anchors[:, k] for k in range(4))
    half = F32(0.5)
    ww = (x1 - x0 + offset).astype(F32)
    hh = (y1 - y0 + offset).astype(F32)
    ctr_x = (x0 + half * ww).astype(F32)
    ctr_y = (y0 + half * hh).astype(F32)
    pred_x = (d[:, 0] * ww + ctr_x).astype(F32)
    pred_y = (d[:, 1] * hh + ctr_y).astype(F32)
    with np.errstate(over="ignore"):
        pred_w = (np.exp(np.minimum(d[:, 2], _MAX_DELTA_LOG_WH)).astype(F32) * ww).astype(F32)
        pred_h = (np.exp(np.minimum(d[:, 3], _MAX_DELTA_LOG_WH)).astype(F32) * hh).astype(F32)
    zero = F32(0)
    nx0 = np.maximum(zero, np.minimum((pred_x - half * pred_w).astype(F32), img_w - offset))
    ny0 = np.maximum(zero, np.minimum((pred_y - half * pred_h).astype(F32), img_h - offset))
    nx1 = np.maximum(zero, np.minimum((pred_x + half * pred_w - offset).astype(F32), img_w - offset))
    ny1 = np.maximum(zero, np.minimum((pred_y + half * pred_h - offset).astype(F32), img_h - offset))
    big = (min_w <= (nx1 - nx0 + offset).astype(F32)) & (min_h <= (ny1 - ny0 + offset).astype(F32))
    return np.stack([nx0, ny0, nx1, ny1], axis=1).astype(F32), big


