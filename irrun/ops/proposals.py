"""Detection post-processing: DetectionOutput-1/8 and Proposal-1/4.

OpenVINO 2026.4 has no reference evaluate() for these ops, so the CPU plugin's kernels define the
behaviour (f32 arithmetic, the plugin's tie-breaking and marker rows). Greedy NMS loops in Python over
the boxes it keeps; every overlap test is a vector op over the remaining candidates. Candidate
selection loops over images and classes, never over boxes."""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError, ShapeError
from .attrs import Bool, Enum, Float, Floats, Int, Ints, Str
from .registry import Op, TensorInfo, op
from .shapes import require_rank, shape_str

_F32 = np.float32


def _compatible(dim, value):
    return dim is None or value is None or dim == value


def _mul(*dims):
    result = 1
    for dim in dims:
        if dim is None:
            return None
        result *= dim
    return result


def _require_float(info, what, port):
    if not info.type.is_float:
        raise ShapeError(f"{what} must be floating-point, got {info.type}", rule="port.type", port=port)


def _greedy_keep(order, overlap_above, limit=None):
    """Greedy NMS over candidates `order` (best first): a candidate survives when no kept one overlaps it.
    `overlap_above(i, rest)` says, for the candidate at position i, which of positions `rest` it suppresses."""
    alive = np.ones(len(order), dtype=bool)
    kept = []
    position = 0
    while limit is None or len(kept) < limit:
        rest = np.nonzero(alive[position:])[0]
        if not len(rest):
            break
        position += int(rest[0])
        kept.append(position)
        if limit is not None and len(kept) == limit:
            break
        later = np.arange(position + 1, len(order))
        if len(later):
            alive[position + 1:] &= ~overlap_above(position, later)
        position += 1
    return np.array(kept, dtype=np.int64)


# ---------------------------------------------------------------- DetectionOutput

def _jaccard_above(boxes, sizes, threshold):
    """For DetectionOutput: IoU (the CPU plugin's f32 JaccardOverlap) of one box with others > threshold."""
    xmin, ymin, xmax, ymax = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]

    def above(i, others):
        disjoint = ((xmin[others] > xmax[i]) | (xmax[others] < xmin[i])
                    | (ymin[others] > ymax[i]) | (ymax[others] < ymin[i]))
        width = np.minimum(xmax[i], xmax[others]) - np.maximum(xmin[i], xmin[others])
        height = np.minimum(ymax[i], ymax[others]) - np.maximum(ymin[i], ymin[others])
        inter = width * height
        with np.errstate(all="ignore"):
            iou = inter / (sizes[i] + sizes[others] - inter)
        iou = np.where(disjoint | (width <= 0) | (height <= 0), _F32(0), iou)
        return iou > threshold

    return above


def _ranked(scores, positions, top_k):
    """Positions sorted by score descending then position ascending, cut to top_k (-1: all)."""
    order = positions[np.lexsort((positions, -scores[positions].astype(np.float64)))]
    return order if top_k == -1 else order[:max(top_k, 0)]


class _DetectionOutputBase(Op):
    background_label_id = Int(default=0)
    top_k = Int(default=-1)
    variance_encoded_in_target = Bool(default=False)
    keep_top_k = Ints()
    code_type = Enum("caffe.priorboxparameter.corner", "caffe.priorboxparameter.center_size",
                     default="caffe.priorboxparameter.corner")
    share_location = Bool(default=True)
    nms_threshold = Float()
    confidence_threshold = Float(default=0.0)
    clip_after_nms = Bool(default=False)
    clip_before_nms = Bool(default=False)
    decrease_label_id = Bool(default=False)
    normalized = Bool(default=False)
    input_height = Int(default=1)
    input_width = Int(default=1)
    objectness_score = Float(default=0.0)
    num_inputs = (3, 5)

    attribute_classes = -1  # v1 reads num_classes from its attribute

    # ---- shape inference (OpenVINO's detection_output_shape_inference)

    def _deduce(self, shapes, prior_size):
        """compute_num_classes: the number of priors and classes from the inputs (0 when unknown)."""
        loc, conf, priors = shapes[:3]
        priors_count = classes = 0
        if priors is not None and priors[2] is not None:
            if priors[2] % prior_size:
                raise ShapeError(f"priors {shape_str(priors)}: the third dimension must be a multiple of "
                                 f"{prior_size}", rule="port.dims", port=2)
            priors_count = priors[2] // prior_size
            if priors_count <= 0:
                raise ShapeError("the number of priors must be positive", rule="port.dims", port=2)
        if not priors_count and len(shapes) == 5 and shapes[3] is not None and shapes[3][1] is not None:
            if shapes[3][1] % 2:
                raise ShapeError(f"additional class predictions {shape_str(shapes[3])}: the second dimension "
                                 "must be even", rule="port.dims", port=3)
            priors_count = shapes[3][1] // 2
            if priors_count <= 0:
                raise ShapeError("the number of priors must be positive", rule="port.dims", port=3)
        if priors_count:
            sources = [(conf, 1, priors_count)]
            if not self.share_location:
                sources += [(loc, 0, priors_count * 4)]
                if len(shapes) == 5:
                    sources += [(shapes[4], 4, priors_count * 4)]
            for shape, port, unit in sources:
                if shape is not None and shape[1] is not None:
                    if shape[1] % unit:
                        raise ShapeError(f"input {port} {shape_str(shape)}: the second dimension must be a "
                                         f"multiple of {unit}", rule="port.dims", port=port)
                    classes = shape[1] // unit
                    break
        return priors_count, classes

    @staticmethod
    def check_types(types, names):
        """OpenVINO's DetectionOutputBase: box logits and proposals are floats, class predictions of the box
        logits' type, the additional inputs of the type of their main ones."""
        for port in (0, 2):
            if not types[port].is_float:
                raise ShapeError(f"{names[port]} must be floating-point, got {types[port]}", rule="port.type",
                                 port=port)
        for port, like in ((1, 0), (3, 1), (4, 0))[:len(types) - 2]:
            if types[port] != types[like]:
                raise ShapeError(f"{names[port]} ({types[port]}) must have the type of the {names[like]} "
                                 f"({types[like]})", rule="port.type", port=port)

    def infer(self, inputs):
        self.check_inputs(len(inputs))
        if len(inputs) == 4:
            raise ShapeError("has 4 inputs, expects 3 or 5", rule="port.count")
        if not self.keep_top_k:
            raise ShapeError("keep_top_k is empty", rule="attr.length")
        shapes = [info.shape for info in inputs]
        names = ("box logits", "class predictions", "proposals", "additional class predictions",
                 "additional box predictions")
        self.check_types([info.type for info in inputs], names)
        for port, shape in enumerate(shapes):
            require_rank(shape, (3,) if port == 2 else (2,), names[port], port)
        prior_size = 4 if self.normalized else 5
        if self.attribute_classes == -1:
            priors_count, classes = self._deduce(shapes, prior_size)
        else:
            priors_count, classes = 0, self.attribute_classes
        loc_classes = 1 if self.share_location else classes
        loc, conf, priors = shapes[:3]
        images, images_known = None, False
        if loc is not None:
            images, images_known = loc[0], True
            if not priors_count and loc[1] is not None:
                if loc_classes == 0 or loc[1] % (loc_classes * 4):
                    raise ShapeError(f"box logits {shape_str(loc)}: the second dimension must be a multiple of "
                                     f"{loc_classes * 4}", rule="port.dims", port=0)
                priors_count = loc[1] // (loc_classes * 4)
            if priors_count > 0 and loc_classes > 0 and not _compatible(loc[1], priors_count * loc_classes * 4):
                raise ShapeError(f"box logits {shape_str(loc)}: expected {priors_count * loc_classes * 4} in the "
                                 "second dimension", rule="port.dims", port=0)
        if conf is not None:
            if (not images_known or images is None) and conf[0] is not None:
                images, images_known = conf[0], True
            elif not _compatible(conf[0], images):
                raise ShapeError(f"class predictions {shape_str(conf)}: the batch differs from the box logits' "
                                 f"{images}", rule="port.dims", port=1)
            if conf[1] is not None and classes:
                if not priors_count:
                    if conf[1] % classes:
                        raise ShapeError(f"class predictions {shape_str(conf)}: the second dimension must be a "
                                         f"multiple of num_classes {classes}", rule="port.dims", port=1)
                    priors_count = conf[1] // classes
                elif conf[1] != priors_count * classes:
                    raise ShapeError(f"class predictions {shape_str(conf)}: expected {priors_count * classes} in "
                                     "the second dimension", rule="port.dims", port=1)
        if priors is not None:
            if not (_compatible(priors[0], 1) or _compatible(priors[0], images)):
                raise ShapeError(f"proposals {shape_str(priors)}: the first dimension must be 1 or the batch "
                                 f"{images}", rule="port.dims", port=2)
            expected = 1 if self.variance_encoded_in_target else 2
            if not _compatible(priors[1], expected):
                raise ShapeError(f"proposals {shape_str(priors)}: expected {expected} in the second dimension",
                                 rule="port.dims", port=2)
            if priors[2] is not None:
                if not priors_count:
                    if priors[2] % prior_size:
                        raise ShapeError(f"proposals {shape_str(priors)}: the third dimension must be a multiple "
                                         f"of {prior_size}", rule="port.dims", port=2)
                    priors_count = priors[2] // prior_size
                elif priors[2] != priors_count * prior_size:
                    raise ShapeError(f"proposals {shape_str(priors)}: expected {priors_count * prior_size} in the "
                                     "third dimension", rule="port.dims", port=2)
        if len(shapes) == 5:
            arm_conf, arm_loc = shapes[3:]
            if arm_conf is not None:
                if not _compatible(arm_conf[0], images):
                    raise ShapeError(f"additional class predictions {shape_str(arm_conf)}: the batch differs "
                                     f"from {images}", rule="port.dims", port=3)
                if priors_count and not _compatible(arm_conf[1], priors_count * 2):
                    raise ShapeError(f"additional class predictions {shape_str(arm_conf)}: expected "
                                     f"{priors_count * 2} in the second dimension", rule="port.dims", port=3)
                if arm_conf[1] is not None:
                    priors_count = arm_conf[1] // 2
            if arm_loc is not None and loc is not None and not all(map(_compatible, arm_loc, loc)):
                raise ShapeError(f"additional box predictions {shape_str(arm_loc)} differ from the box logits "
                                 f"{shape_str(loc)}", rule="port.dims", port=4)
        keep = self.keep_top_k[0]
        dim_priors = priors_count or None
        dim_classes = classes or None
        if keep > 0:
            rows = _mul(images, keep)
        elif keep == -1 and self.top_k > 0:
            rows = _mul(images, self.top_k, dim_classes)
        else:
            rows = _mul(images, dim_priors, dim_classes)
        return [TensorInfo((1, 1, rows, 7), inputs[0].type)]

    # ---- kernel (the CPU plugin's DetectionOutput node)

    def _decode(self, priors, loc, variances, normalized_priors):
        """Decoded corners [..., 4] in f32; priors [..., 4] broadcast against loc [..., 4]."""
        if not normalized_priors:
            scale = np.array([self.input_width, self.input_height] * 2, dtype=_F32)
            priors = priors / scale
        if variances is not None:
            loc_scaled = variances * loc
        else:
            loc_scaled = loc
        if self.code_type == "caffe.priorboxparameter.corner":
            boxes = priors + loc_scaled
        else:
            width = priors[..., 2] - priors[..., 0]
            height = priors[..., 3] - priors[..., 1]
            center_x = (priors[..., 0] + priors[..., 2]) / _F32(2)
            center_y = (priors[..., 1] + priors[..., 3]) / _F32(2)
            new_cx = loc_scaled[..., 0] * width + center_x
            new_cy = loc_scaled[..., 1] * height + center_y
            new_w = np.exp(loc_scaled[..., 2]) * width
            new_h = np.exp(loc_scaled[..., 3]) * height
            half_w, half_h = new_w / _F32(2), new_h / _F32(2)
            boxes = np.stack([new_cx - half_w, new_cy - half_h, new_cx + half_w, new_cy + half_h], axis=-1)
        if self.clip_before_nms:
            boxes = np.clip(boxes, _F32(0), _F32(1))
        return boxes.astype(_F32, copy=False)

    def run(self, inputs, in_infos, out_infos):
        if self.decrease_label_id and self.background_label_id != 0:
            raise ExecutionError("decrease_label_id needs background_label_id 0 (the CPU plugin refuses it)",
                                 rule="attr.range")
        arrays = [np.asarray(a).astype(_F32, copy=False) for a in inputs]
        loc, conf, priors = arrays[:3]
        images = conf.shape[0]
        prior_size = 4 if self.normalized else 5
        count = priors.shape[2] // prior_size
        classes = conf.shape[1] // count if count else 0
        loc_classes = 1 if self.share_location else classes
        rows = out_infos[0].shape[2]
        out = np.zeros((1, 1, rows, 7), dtype=_F32)
        if count == 0 or images == 0 or classes == 0:
            if rows:
                out[0, 0, 0, 0] = -1
            return [out.astype(out_infos[0].type.storage)]
        if loc.shape[1] != count * loc_classes * 4 or conf.shape[1] != count * classes:
            raise ExecutionError(f"box logits {loc.shape} and class predictions {conf.shape} do not match "
                                 f"{count} priors of {classes} classes", rule="input.value")
        flat = priors.reshape(priors.shape[0], -1)
        offset = 0 if self.normalized else 1
        prior_boxes = flat[:, :count * prior_size].reshape(-1, count, prior_size)[..., offset:offset + 4]
        variances = None
        if not self.variance_encoded_in_target:
            variances = flat[:, count * prior_size:count * prior_size + count * 4].reshape(-1, count, 4)
        # priors after the first whose image id is -1 are absent (unnormalised priors only)
        actual = np.full(priors.shape[0], count)
        if not self.normalized:
            ends = flat[:, :count * prior_size].reshape(-1, count, prior_size)[..., 0] == -1
            actual = np.where(ends.any(axis=1), ends.argmax(axis=1), count)
        per_image = priors.shape[0] != 1
        pick = np.arange(images) if per_image else np.zeros(images, dtype=np.int64)
        actual = actual[pick]
        prior_boxes = prior_boxes[pick][:, None]            # [N, 1, P, 4]
        if variances is not None:
            variances = variances[pick][:, None]
        loc = loc.reshape(images, count, loc_classes, 4).transpose(0, 2, 1, 3)  # [N, L, P, 4]
        if len(arrays) == 5:
            arm_loc = arrays[4].reshape(images, count, loc_classes, 4).transpose(0, 2, 1, 3)
            refined = self._decode(prior_boxes, arm_loc, variances, self.normalized)
            boxes = self._decode(refined, loc, variances, self.normalized)
        else:
            boxes = self._decode(prior_boxes, loc, variances, self.normalized)
        sizes = (boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1])
        scores = conf.reshape(images, count, classes).transpose(0, 2, 1).copy()  # [N, C, P]
        if len(arrays) == 5:
            arm = arrays[3].reshape(images, count, 2)[..., 1] < _F32(self.objectness_score)
            background = (np.arange(classes) == self.background_label_id).astype(_F32)
            scores = np.where(arm[:, None, :], background[None, :, None], scores)
        threshold = _F32(self.confidence_threshold)
        nms_threshold = _F32(self.nms_threshold)
        keep_top_k = self.keep_top_k[0]
        written = 0
        for n in range(images):
            valid = np.arange(actual[n])
            per_class = self._candidates(scores[n], valid, threshold)
            kept = {}
            for c, order in per_class.items():
                box_set = 0 if self.share_location else c
                if not len(order):
                    continue
                survivors = _greedy_keep(order, _jaccard_above(boxes[n, box_set][order], sizes[n, box_set][order],
                                                               nms_threshold))
                kept[c] = order[survivors]
            total = sum(len(v) for v in kept.values())
            if keep_top_k > -1 and total > keep_top_k:
                cls = np.concatenate([np.full(len(v), c) for c, v in kept.items()])
                pri = np.concatenate(list(kept.values()))
                val = scores[n][cls, pri]
                chosen = np.lexsort((cls, pri, -val.astype(np.float64)))[:keep_top_k]
                chosen = np.sort(chosen)  # back to class-major, rank order within a class
                cls, pri = cls[chosen], pri[chosen]
                kept = {c: pri[cls == c] for c in np.unique(cls)}
            for c in sorted(kept):
                picks = kept[c]
                box_set = 0 if self.share_location else c
                found = boxes[n, box_set][picks]
                if self.clip_after_nms:
                    found = np.clip(found, _F32(0), _F32(1))
                take = min(len(picks), rows - written)
                block = out[0, 0, written:written + take]
                block[:, 0] = n
                block[:, 1] = c - 1 if self.decrease_label_id else c
                block[:, 2] = scores[n, c, picks[:take]]
                block[:, 3:] = found[:take]
                written += take
        if written < rows:
            out[0, 0, written, 0] = -1
        return [out.astype(out_infos[0].type.storage)]

    def _candidates(self, scores, valid, threshold):
        """Per class, the candidate priors in rank order (after top_k), before NMS."""
        classes = scores.shape[0]
        if not self.decrease_label_id:  # Caffe style: per class, score > threshold
            result = {}
            for c in range(classes):
                if c == self.background_label_id:
                    continue
                row = scores[c]
                result[c] = _ranked(row, valid[row[valid] > threshold], self.top_k)
            return result
        # MXNet style: each prior votes for its best class (1..C-1) with score >= threshold
        if classes < 2 or not len(valid):
            return {}
        votes = scores[1:, valid]
        eligible = (votes >= threshold) & (votes > _F32(-1))
        masked = np.where(eligible, votes, -np.inf)
        best = masked.argmax(axis=0)
        has = eligible.any(axis=0)
        cls = best[has] + 1
        pri = valid[has]
        val = scores[cls, pri]
        flat = cls * scores.shape[1] + pri
        order = np.lexsort((flat, -val.astype(np.float64)))
        if self.top_k != -1:
            order = order[:max(self.top_k, 0)]
        cls, pri = cls[order], pri[order]
        return {int(c): pri[cls == c] for c in np.unique(cls)}


@op("DetectionOutput", 1)
class DetectionOutput1(_DetectionOutputBase):
    num_classes = Int()

    @property
    def attribute_classes(self):
        return self.num_classes


@op("DetectionOutput", 8)
class DetectionOutput8(_DetectionOutputBase):
    pass


# ---------------------------------------------------------------- Proposal

def _round_half_away(x):
    whole = np.trunc(x)
    return (whole + np.sign(x) * (np.abs(x - whole) >= _F32(0.5))).astype(_F32)


class _ProposalBase(Op):
    base_size = Int(min=0)
    pre_nms_topn = Int(min=0)
    post_nms_topn = Int(min=0)
    nms_thresh = Float()
    feat_stride = Int(min=0)
    min_size = Int(min=0)
    ratio = Floats()
    scale = Floats()
    clip_before_nms = Bool(default=True)
    clip_after_nms = Bool(default=False)
    normalize = Bool(default=False)
    box_size_scale = Float(default=1.0)
    box_coordinate_scale = Float(default=1.0)
    framework = Str(default="")
    num_inputs = (3, 3)
    outputs = 1

    def infer(self, inputs):
        self.check_inputs(len(inputs))
        probs, deltas, image = inputs
        for port, (info, what) in enumerate(zip(inputs, ("class_probs", "bbox_deltas", "image_shape"))):
            _require_float(info, what, port)
        require_rank(probs.shape, (4,), "class_probs", 0)
        require_rank(deltas.shape, (4,), "bbox_deltas", 1)
        require_rank(image.shape, (1,), "image_shape", 2)
        if image.shape is not None and image.shape[0] not in (None, 3, 4):
            raise ShapeError(f"image_shape {shape_str(image.shape)} must have 3 or 4 elements", rule="port.dims",
                             port=2)
        batch = None
        if probs.shape is not None:
            batch = probs.shape[0]
            if deltas.shape is not None and not _compatible(deltas.shape[1], _mul(probs.shape[1], 2)):
                raise ShapeError(f"bbox_deltas {shape_str(deltas.shape)} must have twice the channels of "
                                 f"class_probs {shape_str(probs.shape)}", rule="port.dims", port=1)
        if deltas.shape is not None:
            if not _compatible(batch, deltas.shape[0]):
                raise ShapeError(f"class_probs {shape_str(probs.shape)} and bbox_deltas {shape_str(deltas.shape)} "
                                 "differ in the batch", rule="port.dims", port=1)
            batch = deltas.shape[0] if batch is None else batch
        rows = _mul(batch, self.post_nms_topn)
        result = [TensorInfo((rows, 5), probs.type)]
        if self.outputs == 2:
            result.append(TensorInfo((rows,), probs.type))
        return result

    def _anchors(self):
        """[4, A] corner offsets (x0, y0, x1, y1) per anchor, ratio-major, in f32."""
        tensorflow = self.framework == "tensorflow"
        offset = _F32(0 if tensorflow else 1)
        base = _F32(self.base_size)
        area = _F32(self.base_size * self.base_size)
        ratios = np.array(self.ratio, dtype=_F32)
        scales = np.array(self.scale, dtype=_F32)
        with np.errstate(all="ignore"):
            if tensorflow:
                width = np.sqrt(area / ratios).astype(_F32)
                height = (width * ratios).astype(_F32)
            else:
                width = _round_half_away(np.sqrt(area / ratios).astype(_F32))
                height = _round_half_away((width * ratios).astype(_F32))
        half_w = _F32(0.5) * (width[:, None] * scales[None, :] - offset)
        half_h = _F32(0.5) * (height[:, None] * scales[None, :] - offset)
        center = _F32(0.5) * (base - offset)
        anchors = np.stack([center - half_w, center - half_h, center + half_w, center + half_h]).reshape(4, -1)
        if tensorflow:
            anchors = anchors - base * _F32(0.5)
        return anchors.astype(_F32)

    def run(self, inputs, in_infos, out_infos):
        probs, deltas, image = (np.asarray(a).astype(_F32, copy=False) for a in inputs)
        tensorflow = self.framework == "tensorflow"
        anchors = self._anchors()
        count = anchors.shape[1]
        batch, _, height, width = probs.shape
        if probs.shape[1] != 2 * count or deltas.shape != (batch, 4 * count, height, width):
            raise ExecutionError(f"class_probs {probs.shape} and bbox_deltas {deltas.shape} do not match "
                                 f"{count} anchors (ratios x scales)", rule="input.value")
        image_h, image_w = (image[1], image[0]) if tensorflow else (image[0], image[1])
        if not (np.isfinite(image[:2]).all() and (image[:2] > 0).all()
                and (np.abs(image[:2]) >= np.finfo(_F32).tiny).all()):
            raise ExecutionError("image_shape must hold a positive image height and width", rule="input.value")
        scale_h = image[2]
        scale_w = image[3] if image.shape[0] == 4 else scale_h
        if not (np.isfinite([scale_h, scale_w]).all() and scale_h >= 0 and scale_w >= 0):
            raise ExecutionError("image_shape must hold non-negative scales", rule="input.value")
        offset = _F32(0 if tensorflow else 1)
        min_h = _F32(self.min_size) * scale_h
        min_w = _F32(self.min_size) * scale_w
        topn = self.post_nms_topn
        rois = np.zeros((batch, topn, 5), dtype=_F32)
        scores_out = np.zeros((batch, topn), dtype=_F32)
        total = count * height * width
        pre = min(total, self.pre_nms_topn)
        stride = _F32(self.feat_stride)
        hh, ww = np.meshgrid(np.arange(height, dtype=_F32), np.arange(width, dtype=_F32), indexing="ij")
        shift_x = (hh if tensorflow else ww) * stride
        shift_y = (ww if tensorflow else hh) * stride
        nms_thresh = _F32(self.nms_thresh)
        for n in range(batch):
            score = probs[n, count:].transpose(1, 2, 0).reshape(-1)               # (h, w, anchor)
            d = deltas[n].reshape(count, 4, height, width).transpose(2, 3, 0, 1)  # [H, W, A, 4]
            dx = (d[..., 0] / _F32(self.box_coordinate_scale)).reshape(-1)
            dy = (d[..., 1] / _F32(self.box_coordinate_scale)).reshape(-1)
            dw = (d[..., 2] / _F32(self.box_size_scale)).reshape(-1)
            dh = (d[..., 3] / _F32(self.box_size_scale)).reshape(-1)
            x0 = (shift_x[..., None] + anchors[0]).reshape(-1)
            y0 = (shift_y[..., None] + anchors[1]).reshape(-1)
            x1 = (shift_x[..., None] + anchors[2]).reshape(-1)
            y1 = (shift_y[..., None] + anchors[3]).reshape(-1)
            if tensorflow:
                x0, x1 = (np.maximum(_F32(0), np.minimum(v, image_w)) for v in (x0, x1))
                y0, y1 = (np.maximum(_F32(0), np.minimum(v, image_h)) for v in (y0, y1))
            box_w = x1 - x0 + offset
            box_h = y1 - y0 + offset
            center_x = x0 + _F32(0.5) * box_w
            center_y = y0 + _F32(0.5) * box_h
            pred_x = dx * box_w + center_x
            pred_y = dy * box_h + center_y
            pred_w = np.exp(dw) * box_w
            pred_h = np.exp(dh) * box_h
            x0, x1 = pred_x - _F32(0.5) * pred_w, pred_x + _F32(0.5) * pred_w
            y0, y1 = pred_y - _F32(0.5) * pred_h, pred_y + _F32(0.5) * pred_h
            if self.clip_before_nms:
                x0, x1 = (np.maximum(_F32(0), np.minimum(v, image_w - offset)) for v in (x0, x1))
                y0, y1 = (np.maximum(_F32(0), np.minimum(v, image_h - offset)) for v in (y0, y1))
            keep_size = ((min_w <= x1 - x0 + offset) & (min_h <= y1 - y0 + offset)).astype(_F32)
            score = keep_size * score
            order = np.argsort(-score.astype(np.float64), kind="stable")[:pre]
            bx0, by0, bx1, by1 = x0[order], y0[order], x1[order], y1[order]
            area = (bx1 - bx0 + offset) * (by1 - by0 + offset)

            def above(i, others, bx0=bx0, by0=by0, bx1=bx1, by1=by1, area=area):  # this iteration's boxes
                overlap = ((bx0[i] <= bx1[others]) & (by0[i] <= by1[others])
                           & (bx0[others] <= bx1[i]) & (by0[others] <= by1[i]))
                iw = np.maximum(_F32(0), np.minimum(bx1[i], bx1[others]) - np.maximum(bx0[i], bx0[others]) + offset)
                ih = np.maximum(_F32(0), np.minimum(by1[i], by1[others]) - np.maximum(by0[i], by0[others]) + offset)
                inter = iw * ih
                with np.errstate(all="ignore"):
                    iou = inter / (area[i] + area[others] - inter)
                return overlap & (nms_thresh < iou)

            picked = _greedy_keep(order, above, topn)
            found = np.stack([bx0[picked], by0[picked], bx1[picked], by1[picked]], axis=1)
            extent = np.array([image_w, image_h, image_w, image_h], dtype=_F32)
            if self.clip_after_nms:
                found = np.maximum(_F32(0), np.minimum(found, extent))
            if self.normalize:
                found = found / extent
            rois[n, :len(picked), 0] = n
            rois[n, :len(picked), 1:] = found
            scores_out[n, :len(picked)] = score[order[picked]]
            if len(picked) < topn:
                rois[n, len(picked), 0] = -1
        storage = out_infos[0].type.storage
        result = [rois.reshape(-1, 5).astype(storage)]
        if self.outputs == 2:
            result.append(scores_out.reshape(-1).astype(storage))
        return result


@op("Proposal", 1)
class Proposal1(_ProposalBase):
    pass


@op("Proposal", 4)
class Proposal4(_ProposalBase):
    """Adds a second output: the score of each box ([batch * post_nms_topn])."""

    outputs = 2
