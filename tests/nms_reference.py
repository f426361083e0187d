"""The box-by-box greedy NMS kernels irrun used before greedy_nms: the readable reference that the vectorised
selections are compared with (tests/test_greedy_nms.py, tests/test_soft_nms.py). Kept as they were, one Python
step per candidate (soft_nms: one per heap pop), except that soft_nms drops a score that is not above the threshold
(NaN: it pushed a NaN score back forever)."""
import heapq

import numpy as np

from irrun.ops.detection import _iou
from irrun.ops.experimental_detectron import _overlaps

F32 = np.float32


def hard_nms(corners, scores, max_out, iou_threshold, score_threshold):
    """Selected box indices (in selection order) and their scores for one batch and class."""
    candidates = np.nonzero(scores > score_threshold)[0]
    order = candidates[np.lexsort((candidates, -scores[candidates].astype(np.float64)))]
    selected = []
    alive = np.ones(len(order), dtype=bool)
    position = 0
    while len(selected) < max_out:
        rest = np.nonzero(alive[position:])[0]
        if not len(rest):
            break
        position += int(rest[0])
        box = order[position]
        selected.append(box)
        alive[position] = False
        later = order[position + 1:]
        if len(later):
            # a later candidate is suppressed by a selected box when IoU >= threshold
            alive[position + 1:] &= ~(_iou(corners, later, np.full(len(later), box)) >= iou_threshold)
        position += 1
    selected = np.array(selected, dtype=np.int64)
    return selected, scores[selected].astype(np.float32)


def multiclass_select(boxes, scores, nms_top_k, score_threshold, iou_threshold, nms_eta, normalized):
    """MulticlassNms-8's selection for one image and class."""
    limit = boxes.shape[0] if nms_top_k == -1 else min(nms_top_k, boxes.shape[0])
    score_threshold = F32(score_threshold)
    positions = np.nonzero(scores >= score_threshold)[0]
    order = positions[np.lexsort((positions, -scores[positions].astype(np.float64)))][:limit]
    threshold = F32(iou_threshold)
    adaptive = 0 <= nms_eta < 1
    norm = F32(0) if normalized else F32(1)
    kept = []
    for position in order:
        if kept:
            ious = multiclass_iou(boxes, position, np.array(kept[::-1]), norm)
            hits = ious >= threshold
            if adaptive and scores[position] <= score_threshold:
                hits = hits[:1]
            if hits.any():
                continue
        kept.append(position)
        if adaptive and threshold > F32(0.5):
            threshold = F32(threshold * F32(nms_eta))
    kept = np.array(kept, dtype=np.int64)
    return kept, scores[kept]


def multiclass_iou(boxes, i, others, norm):
    a, o = boxes[i], boxes[others]
    area_i = F32((a[2] - a[0] + norm) * (a[3] - a[1] + norm))
    area_o = ((o[:, 2] - o[:, 0] + norm) * (o[:, 3] - o[:, 1] + norm)).astype(F32)
    inter = (np.maximum(np.minimum(a[2], o[:, 2]) - np.maximum(a[0], o[:, 0]) + norm, F32(0))
             * np.maximum(np.minimum(a[3], o[:, 3]) - np.maximum(a[1], o[:, 1]) + norm, F32(0))).astype(F32)
    with np.errstate(all="ignore"):
        iou = (inter / (area_i + area_o - inter)).astype(F32)
    return np.where((area_i <= 0) | (area_o <= 0), F32(0), iou)


def proposal_nms(boxes, threshold, limit, offset, dead=None):
    """Greedy NMS over boxes sorted best first (ExperimentalDetectronGenerateProposalsSingleImage,
    GenerateProposals)."""
    dead = np.zeros(len(boxes), dtype=bool) if dead is None else dead.copy()
    kept = []
    for box in range(len(boxes)):
        if len(kept) >= limit:
            break
        if dead[box]:
            continue
        kept.append(box)
        if len(kept) == limit:
            break
        later = np.arange(box + 1, len(boxes))
        iou, touching = _overlaps(boxes, box, later, offset, threshold)
        dead[box + 1:] |= (threshold < iou) & touching
    return np.array(kept, dtype=np.int64)


def detectron_nms(boxes, areas, threshold):
    """ExperimentalDetectronDetectionOutput's greedy NMS (candidates best first)."""
    kept = []
    for i in range(len(boxes)):
        if kept:
            others = np.array(kept)
            x0, y0, x1, y1 = (boxes[:, k] for k in range(4))
            disjoint = (x0[others] > x1[i]) | (x1[others] < x0[i]) | (y0[others] > y1[i]) | (y1[others] < y0[i])
            width = (np.minimum(x1[i], x1[others]) - np.maximum(x0[i], x0[others]) + F32(1)).astype(F32)
            height = (np.minimum(y1[i], y1[others]) - np.maximum(y0[i], y0[others]) + F32(1)).astype(F32)
            inter = (width * height).astype(F32)
            with np.errstate(all="ignore"):
                iou = (inter / (areas[i] + areas[others] - inter)).astype(F32)
            iou = np.where(disjoint | (width <= 0) | (height <= 0), F32(0), iou)
            if (iou > threshold).any():
                continue
        kept.append(i)
    return np.array(kept, dtype=np.int64)


def soft_nms(corners, scores, max_out, score_threshold, scale):
    """Soft-NMS (Gaussian decay exp(scale * iou^2)) with lazy re-scoring, as OpenVINO's CPU plugin does:
    a candidate whose score decays is pushed back; it is selected only when its score is unchanged."""
    heap = [(-float(scores[i]), int(i), 0) for i in np.nonzero(scores > score_threshold)[0]]
    heapq.heapify(heap)
    chosen, chosen_scores = [], []
    threshold = np.float32(score_threshold)
    while heap and len(chosen) < max_out:
        negative, box, begin = heapq.heappop(heap)
        original = np.float32(-negative)
        score = original
        if begin < len(chosen):
            previous = np.array(chosen[begin:][::-1], dtype=np.int64)
            ious = _iou(corners, np.full(len(previous), box), previous)
            weights = np.exp(np.float32(scale) * ious * ious).astype(np.float32)
            suppressed = False
            for weight in weights:  # sequential f32 products, stopping at the threshold
                score = np.float32(score * weight)
                if not score > threshold:
                    suppressed = True
                    break
            if suppressed:
                continue
        if score == original:
            chosen.append(box)
            chosen_scores.append(score)
        else:
            heapq.heappush(heap, (-float(score), box, len(chosen)))
    return np.array(chosen, dtype=np.int64), np.array(chosen_scores, dtype=np.float32)
