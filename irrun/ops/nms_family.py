"""PaddlePaddle-style multi-class NMS: MulticlassNms-8/9 and MatrixNms-8.

OpenVINO 2026.4 has no reference evaluate() for them; the CPU plugin defines the behaviour: f32 arithmetic,
outputs sized by what is selected (selected_outputs [K, 6] = class, score, x1, y1, x2, y2; selected_indices
[K, 1]; selected_num [N]), so their first dimension is known only at run time. Selection loops over images
and classes; within one, MulticlassNms selects through greedy_nms (a step per kept box only with nms_eta < 1)."""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from ..ir.types import ELEMENT_TYPES
from .attrs import Bool, Enum, Float, Int, Type
from .greedy_nms import box_bounds, greedy_nms
from .registry import TensorInfo, ValueDependentOp, op
from .shapes import require_rank, shape_str

F32 = np.float32
I64 = ELEMENT_TYPES["i64"]


class _Selected:
    """Selections of one image and class: box positions (within the image's boxes) and their scores."""

    def __init__(self, batch, cls, boxes, positions, scores, indices):
        self.batch, self.cls = batch, cls
        self.coords = boxes[positions]
        self.scores = scores.astype(F32)
        self.indices = indices


class _MultiNmsBase(ValueDependentOp):
    sort_result_type = Enum("classid", "score", "none", default="none")
    sort_result_across_batch = Bool(default=False)
    output_type = Type("i32", "i64", default=I64)
    score_threshold = Float(default=0.0)
    nms_top_k = Int(default=-1)
    keep_top_k = Int(default=-1)
    background_class = Int(default=-1)
    normalized = Bool(default=True)
    num_inputs = (2, 2)
    takes_rois_num = False

    # ------------------------------------------------------------ inference

    def _check_attributes(self):
        for name in ("nms_top_k", "keep_top_k", "background_class"):
            if getattr(self, name) < -1:
                raise ShapeError(f"{name} {getattr(self, name)} must be -1 or more", rule="attr.range")

    def _num_images(self, inputs):
        boxes, scores = inputs[:2]
        per_class_boxes = scores.shape is not None and len(scores.shape) == 2
        if per_class_boxes:
            if len(inputs) < 3:
                raise ShapeError("2D scores need the roisnum input", rule="port.count", port=1)
            return None if inputs[2].shape is None else inputs[2].shape[0]
        return None if boxes.shape is None else boxes.shape[0]

    def infer(self, inputs):
        self._check_attributes()
        boxes, scores = inputs[:2]
        require_rank(boxes.shape, (3,), "boxes", 0)
        require_rank(scores.shape, (2, 3) if self.takes_rois_num and len(inputs) == 3 else (3,), "scores", 1)
        for port in (0, 1):
            if not inputs[port].type.is_float:
                raise ShapeError(f"{('boxes', 'scores')[port]} must be floating-point, got {inputs[port].type}",
                                 rule="port.type", port=port)
        if boxes.type != scores.type:
            raise ShapeError(f"boxes are {boxes.type}, scores {scores.type}", rule="port.type", port=1)
        if len(inputs) == 3:
            require_rank(inputs[2].shape, (1,), "roisnum", 2)
            if inputs[2].type.name not in ("i32", "i64"):
                raise ShapeError(f"roisnum must be i32 or i64, got {inputs[2].type}", rule="port.type", port=2)
        if boxes.shape is not None and boxes.shape[2] not in (None, 4):
            raise ShapeError(f"boxes {shape_str(boxes.shape)} must have 4 coordinates in the last dimension",
                             rule="port.dims", port=0)
        if boxes.shape is not None and scores.shape is not None:
            pairs = ((0, 0), (1, 2)) if len(scores.shape) == 3 else ((0, 0), (1, 1))
            for b, s in pairs:
                if None not in (boxes.shape[b], scores.shape[s]) and boxes.shape[b] != scores.shape[s]:
                    raise ShapeError(f"boxes {shape_str(boxes.shape)} and scores {shape_str(scores.shape)} disagree "
                                     f"(boxes dim {b}, scores dim {s})", rule="port.dims", port=1)
        images = self._num_images(inputs)
        out_type = boxes.type
        if all(i.value is not None for i in inputs):
            outputs, indices, counts = self._compute([np.asarray(i.value) for i in inputs])
            return [TensorInfo(outputs.shape, out_type, outputs.astype(out_type.storage)),
                    TensorInfo(indices.shape, self.output_type, indices.astype(self.output_type.storage)),
                    TensorInfo(counts.shape, self.output_type, counts.astype(self.output_type.storage))]
        return [TensorInfo((None, 6), out_type), TensorInfo((None, 1), self.output_type),
                TensorInfo((images,), self.output_type)]

    # ------------------------------------------------------------ selection

    def _images(self, values):
        """Per image: (boxes [C or 1, M, 4] as f32, scores [C, M] as f32, flat index of (box, class))."""
        boxes, scores = values[0].astype(F32, copy=False), values[1].astype(F32, copy=False)
        if scores.ndim == 3:
            num_boxes = boxes.shape[1]
            for b in range(boxes.shape[0]):
                yield b, boxes[b][None], scores[b], (lambda box, cls, b=b: b * num_boxes + box)
            return
        classes = boxes.shape[0]
        counts = values[2].astype(np.int64)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        for b, (start, count) in enumerate(zip(starts, counts)):
            if count <= 0:
                yield b, boxes[:, :0], scores[:, :0], None
                continue
            if start + count > boxes.shape[1]:
                raise ShapeError(f"roisnum {counts.tolist()} covers more than the {boxes.shape[1]} boxes",
                                 rule="input.value", port=2)
            rows = slice(int(start), int(start + count))
            yield b, boxes[:, rows], scores[:, rows], (lambda box, cls, s=start: (s + box) * classes + cls)

    def _compute(self, values):
        selections, counts = [], []
        for b, boxes, scores, flat in self._images(values):
            found = []
            for c in range(scores.shape[0]):
                if c == self.background_class or flat is None:
                    continue
                class_boxes = boxes[c] if boxes.shape[0] > 1 else boxes[0]
                positions, kept_scores = self._select(class_boxes, scores[c])
                if len(positions):
                    found.append(_Selected(b, c, class_boxes, positions, kept_scores, flat(positions, c)))
            batch = _merge(found, b)
            order = np.lexsort((batch["index"], batch["cls"], -batch["score"].astype(np.float64)))
            if self.keep_top_k > -1:
                order = order[:self.keep_top_k]
            batch = {k: v[order] for k, v in batch.items()}
            batch = self._sort_within_image(batch)
            selections.append(batch)
            counts.append(len(batch["score"]))
        merged = {k: np.concatenate([s[k] for s in selections]) for k in ("batch", "cls", "index", "score", "coords")} \
            if selections else _merge([], 0)
        if self.sort_result_across_batch and len(merged["score"]):
            negative = -merged["score"].astype(np.float64)
            if self.sort_result_type == "score":
                order = np.lexsort((merged["index"], merged["cls"], merged["batch"], negative))
            elif self.sort_result_type == "classid":
                order = np.lexsort((merged["index"], negative, merged["batch"], merged["cls"]))
            else:
                order = np.arange(len(negative))
            merged = {k: v[order] for k, v in merged.items()}
        outputs = np.concatenate([merged["cls"].astype(F32)[:, None], merged["score"][:, None],
                                  merged["coords"]], axis=1).astype(F32)
        return outputs, merged["index"].astype(np.int64)[:, None], np.array(counts, dtype=np.int64)

    def _sort_within_image(self, batch):
        return batch

    def _select(self, boxes, scores):
        raise NotImplementedError


def _merge(found, b):
    if not found:
        return {"batch": np.zeros(0, np.int64), "cls": np.zeros(0, np.int64), "index": np.zeros(0, np.int64),
                "score": np.zeros(0, F32), "coords": np.zeros((0, 4), F32)}
    return {"batch": np.concatenate([np.full(len(s.scores), s.batch) for s in found]).astype(np.int64),
            "cls": np.concatenate([np.full(len(s.scores), s.cls) for s in found]).astype(np.int64),
            "index": np.concatenate([s.indices for s in found]).astype(np.int64),
            "score": np.concatenate([s.scores for s in found]).astype(F32),
            "coords": np.concatenate([s.coords for s in found]).astype(F32)}


def _ranked(scores, keep):
    """Positions with `keep`, by score descending then position (the plugin's sort)."""
    positions = np.nonzero(keep)[0]
    return positions[np.lexsort((positions, -scores[positions].astype(np.float64)))]


# ---------------------------------------------------------------- MulticlassNms

@op("MulticlassNms", 8)
class MulticlassNms8(_MultiNmsBase):
    iou_threshold = Float(default=0.0)
    nms_eta = Float(default=1.0)

    def _check_attributes(self):
        super()._check_attributes()
        if not 0 <= self.nms_eta <= 1:
            raise ShapeError(f"nms_eta {self.nms_eta} must be in [0, 1]", rule="attr.range")

    def _select(self, boxes, scores):
        limit = boxes.shape[0] if self.nms_top_k == -1 else min(self.nms_top_k, boxes.shape[0])
        score_threshold = F32(self.score_threshold)
        order = _ranked(scores, scores >= score_threshold)[:limit]
        norm = F32(0) if self.normalized else F32(1)
        if 0 <= self.nms_eta < 1:
            kept = self._adaptive_select(boxes, scores, order, score_threshold, norm)
        else:
            kept = order[self._greedy_select(boxes[order], norm)]
        return kept, scores[kept]

    def _greedy_select(self, ranked, norm):
        threshold = F32(self.iou_threshold)

        def suppresses(selected, later):
            return _multiclass_iou(ranked, later, selected, norm) >= threshold

        x1, y1, x2, y2 = (ranked[:, k] for k in range(4))
        bounds = box_bounds(x1, y1, x2, y2, float(norm), threshold) if threshold > 0 else None
        return greedy_nms(len(ranked), suppresses, len(ranked), bounds)

    def _adaptive_select(self, boxes, scores, order, score_threshold, norm):
        """Greedy NMS whose threshold shrinks by nms_eta after each kept box: a step per candidate."""
        threshold = F32(self.iou_threshold)
        kept = []
        for position in order:
            if kept:
                # compared with the kept boxes, latest first
                previous = np.array(kept[::-1])
                hits = _multiclass_iou(boxes, np.full(len(previous), position), previous, norm) >= threshold
                if scores[position] <= score_threshold:
                    hits = hits[:1]  # the plugin stops after one comparison when the score is at the threshold
                if hits.any():
                    continue
            kept.append(position)
            if threshold > F32(0.5):
                threshold = F32(threshold * F32(self.nms_eta))
        return np.array(kept, dtype=np.int64)

    def _sort_within_image(self, batch):
        if self.sort_result_across_batch or self.sort_result_type != "classid":
            return batch
        order = np.lexsort((batch["index"], -batch["score"].astype(np.float64), batch["cls"]))
        return {k: v[order] for k, v in batch.items()}


def _multiclass_iou(boxes, i, others, norm):
    """IoU of boxes i with boxes others, pair by pair (MulticlassNms: boxes `norm` longer than x2 - x1)."""
    a, o = boxes[i], boxes[others]
    area_i = ((a[:, 2] - a[:, 0] + norm) * (a[:, 3] - a[:, 1] + norm)).astype(F32)
    area_o = ((o[:, 2] - o[:, 0] + norm) * (o[:, 3] - o[:, 1] + norm)).astype(F32)
    inter = (np.maximum(np.minimum(a[:, 2], o[:, 2]) - np.maximum(a[:, 0], o[:, 0]) + norm, F32(0))
             * np.maximum(np.minimum(a[:, 3], o[:, 3]) - np.maximum(a[:, 1], o[:, 1]) + norm, F32(0))).astype(F32)
    with np.errstate(all="ignore"):
        iou = (inter / (area_i + area_o - inter)).astype(F32)
    return np.where((area_i <= 0) | (area_o <= 0), F32(0), iou)


@op("MulticlassNms", 9)
class MulticlassNms9(MulticlassNms8):
    """Adds the roisnum input: boxes [C, M, 4] and scores [C, M], image i owning roisnum[i] consecutive boxes;
    selected_indices are then (box * C + class) over all M boxes."""

    num_inputs = (2, 3)
    takes_rois_num = True


# ---------------------------------------------------------------- MatrixNms

@op("MatrixNms", 8)
class MatrixNms8(_MultiNmsBase):
    decay_function = Enum("gaussian", "linear", default="linear")
    gaussian_sigma = Float(default=2.0)
    post_threshold = Float(default=0.0)

    def _select(self, boxes, scores):
        order = _ranked(scores, scores > F32(self.score_threshold))
        if self.nms_top_k > -1:
            order = order[:self.nms_top_k]
        if not len(order):
            return order, scores[order]
        count = len(order)
        self.reserve(count * count * 16, f"the {count}x{count} IoU matrix")
        iou = _matrix_iou(boxes[order], self.normalized)
        lower = np.tril(np.ones((count, count), dtype=bool), -1)
        iou = np.where(lower, iou, F32(0))
        iou_max = iou.max(axis=1)  # per candidate, its largest IoU with a better one (0 for the first)
        if self.decay_function == "linear":
            decay = ((1.0 - iou.astype(np.float64)) / (1.0 - iou_max.astype(np.float64)[None, :] + np.float64(F32(1e-10))))
            decay = decay.astype(F32)
        else:
            sigma = F32(self.gaussian_sigma)
            decay = np.exp(((iou_max[None, :] * iou_max[None, :] - iou * iou) * sigma).astype(F32)).astype(F32)
        decay = np.where(lower, decay, F32(1))
        decayed = (decay.min(axis=1, initial=F32(1)) * scores[order]).astype(F32)
        decayed[0] = scores[order[0]]
        keep = decayed > F32(self.post_threshold)
        return order[keep], decayed[keep]


def _matrix_iou(boxes, normalized):
    """Pairwise IoU as MatrixNms computes it: 0 for disjoint boxes, box area 0 when x2 < x1 or y2 < y1."""
    norm = F32(0) if normalized else F32(1)
    x1, y1, x2, y2 = (boxes[:, k] for k in range(4))
    area = np.where((x2 < x1) | (y2 < y1), F32(0), ((x2 - x1 + norm) * (y2 - y1 + norm)).astype(F32))
    disjoint = ((x1[None, :] > x2[:, None]) | (x2[None, :] < x1[:, None])
                | (y1[None, :] > y2[:, None]) | (y2[None, :] < y1[:, None]))
    width = (np.minimum(x2[:, None], x2[None, :]) - np.maximum(x1[:, None], x1[None, :]) + norm).astype(F32)
    height = (np.minimum(y2[:, None], y2[None, :]) - np.maximum(y1[:, None], y1[None, :]) + norm).astype(F32)
    inter = (width * height).astype(F32)
    with np.errstate(all="ignore"):
        iou = (inter / (area[:, None] + area[None, :] - inter)).astype(F32)
    return np.where(disjoint, F32(0), iou)
