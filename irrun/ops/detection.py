"""Object-detection ops: NonMaxSuppression-1/3/4/5/9, PriorBox-1/8, PriorBoxClustered-1, RegionYolo-1,
ReorgYolo-2.

Greedy NMS selects through greedy_nms (blocks of candidates, IoUs only for overlapping pairs), Soft-NMS through
soft_nms (a vectorised step per selected box). Prior generators loop over prior templates, never over cells."""
from __future__ import annotations

import functools
import math

import numpy as np

from ..errors import ExecutionError, ShapeError
from ..ir.types import ELEMENT_TYPES
from .attrs import Bool, Enum, Float, Floats, Int, Ints, Type
from .greedy_nms import box_bounds, greedy_nms
from .nms_windowed import box_iou, windowed_selection
from .registry import Op, TensorInfo, ValueDependentOp, op
from .shapes import require_rank, shape_str
from .soft_nms import soft_nms

F32 = ELEMENT_TYPES["f32"]
I64 = ELEMENT_TYPES["i64"]


# ---------------------------------------------------------------- NonMaxSuppression

def _scalar(info, what, port, allow_1d):
    shape = info.shape
    if shape is not None and not (len(shape) == 0 or (allow_1d and len(shape) == 1 and shape[0] in (None, 1))):
        expected = "a scalar or a 1-element 1D tensor" if allow_1d else "a scalar"
        raise ShapeError(f"{what} must be {expected}, got {shape_str(shape)}", rule="port.rank", port=port)


def _scalar_value(info):
    return None if info.value is None else np.asarray(info.value).reshape(-1)[0]


def _corners(boxes, center):
    """(ymin, xmin, ymax, xmax) in f32 per box, as the CPU plugin normalises them."""
    b = boxes.astype(np.float32, copy=False)
    if center:
        xc, yc, w, h = b[..., 0], b[..., 1], b[..., 2], b[..., 3]
        half_w, half_h = w / np.float32(2), h / np.float32(2)
        return yc - half_h, xc - half_w, yc + half_h, xc + half_w
    return (np.minimum(b[..., 0], b[..., 2]), np.minimum(b[..., 1], b[..., 3]),
            np.maximum(b[..., 0], b[..., 2]), np.maximum(b[..., 1], b[..., 3]))


def _iou(corners, i, others):
    """IoU of box i (the candidate) with boxes `others`, f32 as the CPU plugin computes it."""
    y1, x1, y2, x2 = corners
    area_i = (y2[i] - y1[i]) * (x2[i] - x1[i])
    oy1, ox1, oy2, ox2 = y1[others], x1[others], y2[others], x2[others]
    area_o = (oy2 - oy1) * (ox2 - ox1)
    zero = np.float32(0)
    inter = (np.maximum(np.minimum(y2[i], oy2) - np.maximum(y1[i], oy1), zero)
             * np.maximum(np.minimum(x2[i], ox2) - np.maximum(x1[i], ox1), zero))
    with np.errstate(all="ignore"):
        iou = inter / (area_i + area_o - inter)
    return np.where((area_i <= 0) | (area_o <= 0), zero, iou).astype(np.float32)


def _pair_iou(corners, areas, a, b):
    """_iou of boxes a[k] and b[k] for every k, given every box's area: the same f32 operations, fewer passes."""
    y1, x1, y2, x2 = corners
    return box_iou((y1[a], x1[a], y2[a], x2[a], areas[a]), (y1[b], x1[b], y2[b], x2[b], areas[b]))


def _hard_nms(corners, scores, max_out, iou_threshold, score_threshold):
    """Selected box indices (in selection order) and their scores for one batch and class."""
    candidates = np.nonzero(scores > score_threshold)[0]
    order = candidates[np.lexsort((candidates, -scores[candidates].astype(np.float64)))]
    ranked = tuple(c[order] for c in corners)
    y1, x1, y2, x2 = ranked
    areas = (y2 - y1) * (x2 - x1)

    def suppresses(selected, later):  # a later candidate is suppressed when IoU >= threshold
        return _pair_iou(ranked, areas, later, selected) >= iou_threshold

    bounds = box_bounds(x1, y1, x2, y2, iou_at_least=iou_threshold) if iou_threshold > 0 else None
    positions = None
    if bounds is not None and max_out >= len(order):
        positions = windowed_selection(ranked, areas, iou_threshold, bounds)
    if positions is None:
        positions = greedy_nms(len(order), suppresses, max_out, bounds)
    selected = order[positions]
    return selected, scores[selected].astype(np.float32)


def non_max_suppression(boxes, scores, max_out, iou_threshold, score_threshold, sigma, center, sort_descending):
    """All selections as (batch, class, box) rows and their f32 scores, in OpenVINO's order."""
    batches, num_boxes = boxes.shape[:2]
    classes = scores.shape[1]
    max_out = min(max_out, num_boxes)
    rows, values = [], []
    if max_out > 0 and batches and classes and num_boxes:
        corners = _corners(boxes, center)
        all_scores = scores.astype(np.float32, copy=False)
        scale = np.float32(-0.5) / np.float32(sigma) if sigma > 0 else np.float32(0)
        for b in range(batches):
            box_corners = tuple(c[b] for c in corners)
            for c in range(classes):
                if sigma > 0:
                    picked, picked_scores = soft_nms(all_scores[b, c], functools.partial(_iou, box_corners),
                                                     max_out, score_threshold, scale)
                else:
                    picked, picked_scores = _hard_nms(box_corners, all_scores[b, c], max_out, iou_threshold,
                                                      score_threshold)
                rows.append(np.stack([np.full(len(picked), b), np.full(len(picked), c), picked], axis=1))
                values.append(picked_scores)
    if not rows:
        return np.zeros((0, 3), dtype=np.int64), np.zeros(0, dtype=np.float32)
    rows = np.concatenate(rows).astype(np.int64)
    values = np.concatenate(values).astype(np.float32)
    if sort_descending and len(rows):
        order = np.lexsort((rows[:, 2], rows[:, 1], rows[:, 0], -values.astype(np.float64)))
        rows, values = rows[order], values[order]
    return rows, values


class _NMSBase(ValueDependentOp):
    box_encoding = Enum("corner", "center", default="corner")
    sort_result_descending = Bool(default=True)
    num_inputs = (2, 5)
    scalar_1d = False  # v5/v9 also take 1-element 1D tensors
    has_sigma = False

    @property
    def index_type(self):
        return getattr(self, "output_type", I64)

    def _validate(self, inputs):
        boxes, scores = inputs[:2]
        require_rank(boxes.shape, (3,), "boxes", 0)
        require_rank(scores.shape, (3,), "scores", 1)
        for port, info in enumerate(inputs[:2]):
            if not info.type.is_float:
                raise ShapeError(f"{('boxes', 'scores')[port]} must be floating-point, got {info.type}",
                                 rule="port.type", port=port)
        names = ("max_output_boxes_per_class", "iou_threshold", "score_threshold", "soft_nms_sigma")
        for port, info in enumerate(inputs[2:], start=2):
            _scalar(info, names[port - 2], port, self.scalar_1d)
        if len(inputs) > 2 and not inputs[2].type.is_integer:
            raise ShapeError(f"max_output_boxes_per_class must be an integer, got {inputs[2].type}",
                             rule="port.type.spec", port=2)  # OpenVINO's reader takes it
        if boxes.shape is not None and scores.shape is not None:
            if None not in (boxes.shape[0], scores.shape[0]) and boxes.shape[0] != scores.shape[0]:
                raise ShapeError(f"boxes {shape_str(boxes.shape)} and scores {shape_str(scores.shape)} differ in "
                                 "the batch dimension", rule="port.dims", port=1)
            if None not in (boxes.shape[1], scores.shape[2]) and boxes.shape[1] != scores.shape[2]:
                raise ShapeError(f"boxes {shape_str(boxes.shape)} and scores {shape_str(scores.shape)} differ in "
                                 "the number of boxes", rule="port.dims", port=1)
        if boxes.shape is not None and boxes.shape[2] not in (None, 4):
            raise ShapeError(f"boxes {shape_str(boxes.shape)} must have 4 coordinates in the last dimension",
                             rule="port.dims", port=0)

    def _max_out(self, inputs):
        """The max_output_boxes_per_class value, 0 when the input is absent, None when unknown."""
        if len(inputs) <= 2:
            return 0
        value = _scalar_value(inputs[2])
        return None if value is None else int(value)

    def _compute(self, inputs):
        """NMS on known values, or None when some input's value is unknown."""
        if any(info.value is None for info in inputs):
            return None
        values = [np.asarray(info.value) for info in inputs]
        scalars = [v.reshape(-1)[0] for v in values[2:]]
        max_out = int(scalars[0]) if len(scalars) > 0 else 0
        if max_out < 0:  # the CPU plugin reads it into an unsigned size
            max_out = values[0].shape[1]
        iou = np.float32(scalars[1]) if len(scalars) > 1 else np.float32(0)
        score = np.float32(scalars[2]) if len(scalars) > 2 else np.float32(0)
        sigma = np.float32(scalars[3]) if len(scalars) > 3 and self.has_sigma else np.float32(0)
        return non_max_suppression(values[0], values[1], max_out, iou, score, sigma,
                                   self.box_encoding == "center", self.sort_result_descending)


@op("NonMaxSuppression", 1)
class NonMaxSuppression1(_NMSBase):
    """One output [rows, 3]: rows = min(num_boxes, max_output_boxes_per_class * num_classes) (OpenVINO's shape
    inference for v1 and v3); selections beyond the rows are dropped, missing ones are rows of -1."""

    def _rows(self, inputs):
        boxes, scores = inputs[:2]
        max_out = self._max_out(inputs)
        if boxes.shape is None or boxes.shape[1] is None or max_out is None:
            return None
        per_class = max_out
        if scores.shape is not None:
            if scores.shape[1] is None:
                return None
            per_class *= scores.shape[1]
        return min(boxes.shape[1], per_class)

    def infer(self, inputs):
        self._validate(inputs)
        rows = self._rows(inputs)
        result = self._compute(inputs) if rows is not None else None
        if result is None:
            return [TensorInfo((rows, 3), self.index_type)]
        selected, _ = result
        out = np.full((rows, 3), -1, dtype=self.index_type.storage)
        count = min(rows, len(selected))
        out[:count] = selected[:count]
        return [TensorInfo((rows, 3), self.index_type, out)]


@op("NonMaxSuppression", 3)
class NonMaxSuppression3(NonMaxSuppression1):
    output_type = Type("i32", "i64", default=I64)


@op("NonMaxSuppression", 4)
class NonMaxSuppression4(NonMaxSuppression3):
    """rows = min(num_boxes, max_output_boxes_per_class) * num_batches * num_classes."""

    def _rows(self, inputs):
        boxes, scores = inputs[:2]
        max_out = self._max_out(inputs)
        if boxes.shape is None or scores.shape is None or max_out is None:
            return None
        if None in (boxes.shape[1], scores.shape[0], scores.shape[1]):
            return None
        return max(min(boxes.shape[1], max_out), 0) * scores.shape[0] * scores.shape[1]


@op("NonMaxSuppression", 5)
class NonMaxSuppression5(_NMSBase):
    """Three outputs: selected_indices [N, 3], selected_scores [N, 3] (f32: batch, class, score) and
    valid_outputs [1]. N is known only at run time (dynamic at load)."""

    output_type = Type("i32", "i64", default=I64)
    num_inputs = (2, 6)
    scalar_1d = True
    has_sigma = True

    def infer(self, inputs):
        self._validate(inputs)
        if len(inputs) > 3:
            for port in range(3, len(inputs)):
                if not inputs[port].type.is_float:
                    raise ShapeError(f"input {port} must be floating-point, got {inputs[port].type}",
                                     rule="port.type", port=port)
        result = self._compute(inputs)
        index_type = self.index_type
        if result is None:
            return [TensorInfo((None, 3), index_type), TensorInfo((None, 3), F32), TensorInfo((1,), index_type)]
        selected, scores = result
        count = len(selected)
        indices = selected.astype(index_type.storage)
        score_rows = np.stack([selected[:, 0].astype(np.float32), selected[:, 1].astype(np.float32), scores],
                              axis=1) if count else np.zeros((0, 3), dtype=np.float32)
        valid = np.array([count], dtype=index_type.storage)
        return [TensorInfo((count, 3), index_type, indices), TensorInfo((count, 3), F32, score_rows),
                TensorInfo((1,), index_type, valid)]


@op("NonMaxSuppression", 9)
class NonMaxSuppression9(NonMaxSuppression5):
    pass


# ---------------------------------------------------------------- PriorBox

def _integer_pair(info, what, port):
    require_rank(info.shape, (1,), what, port)
    if not info.type.is_integer:
        raise ShapeError(f"{what} must hold integers, got {info.type}", rule="port.type", port=port)
    if info.shape is not None and info.shape[0] not in (None, 2):
        # OpenVINO's reader checks the length only of a value it knows
        raise ShapeError(f"{what} must have 2 elements (height, width), got {shape_str(info.shape)}",
                         rule="port.dims" if info.value is not None else "port.dims.spec", port=port)
    if info.value is None:
        return None
    value = np.asarray(info.value).reshape(-1)
    return int(value[0]), int(value[1])


def _variance(values):
    if len(values) not in (0, 1, 4):
        raise ShapeError(f"variance has {len(values)} values, expected 0, 1 or 4", rule="attr.length")
    return tuple(values) or (0.1,)


def _aspect_ratios(ratios, flip):
    """1 first, then each new ratio (within 1e-6 of none already there) and its inverse when flipping."""
    result = [np.float32(1.0)]
    for ratio in ratios:
        ratio = np.float32(ratio)
        if any(abs(float(ratio) - float(existing)) < 1e-6 for existing in result):
            continue
        result.append(ratio)
        if flip:
            result.append(np.float32(np.float32(1.0) / ratio))
    return result


@op("PriorBox", 1)
class PriorBox1(Op):
    min_size = Floats(default=())
    max_size = Floats(default=())
    aspect_ratio = Floats(default=())
    density = Floats(default=())
    fixed_ratio = Floats(default=())
    fixed_size = Floats(default=())
    clip = Bool(default=False)
    flip = Bool(default=False)
    step = Float(default=0.0)
    offset = Float()
    variance = Floats(default=())
    scale_all_sizes = Bool(default=True)
    num_inputs = (2, 2)
    min_max_aspect_ratios_order = True

    def number_of_priors(self):
        total = len(_aspect_ratios(self.aspect_ratio, self.flip))
        if self.scale_all_sizes:
            priors = total * len(self.min_size) + len(self.max_size)
        else:
            priors = total + len(self.min_size) - 1
        if self.fixed_size:
            priors = total * len(self.fixed_size)
        for density in self.density:
            extra = int(density) * int(density) - 1
            priors += (len(self.fixed_ratio) if self.fixed_ratio else total) * extra
        return priors

    def infer(self, inputs):
        layer, image = inputs
        _variance(self.variance)
        size = _integer_pair(layer, "output_size", 0)
        _integer_pair(image, "image_size", 1)
        if size is None:
            return [TensorInfo((2, None), F32)]
        return [TensorInfo((2, 4 * size[0] * size[1] * self.number_of_priors()), F32)]

    def _templates(self, image_h):
        """Prior templates per cell: (dx, dy, half width, half height, clip) in cell-centre units, and the
        step and min sizes after the mxnet-style rescaling."""
        f32 = np.float32
        ratios = _aspect_ratios(self.aspect_ratio, self.flip)
        min_sizes = [f32(s) for s in self.min_size]
        step = f32(self.step)
        templates = []
        for s, fixed in enumerate(self.fixed_size):
            fixed_int = int(fixed)
            half = f32(fixed_int * f32(0.5))

            def shifted(half_w, half_h, s=s, fixed=fixed, fixed_int=fixed_int):
                density = int(self.density[s])
                shift = int(f32(fixed) / f32(density))
                for r in range(density):
                    for c in range(density):
                        templates.append((-(fixed_int // 2), f32(shift / 2.0), c * shift, r * shift,
                                          half_w, half_h, True))

            if self.fixed_ratio:
                for ratio in self.fixed_ratio:
                    root = f32(np.sqrt(f32(ratio)))
                    shifted(f32(f32(f32(fixed) * f32(0.5)) * root), f32(f32(f32(fixed) * f32(0.5)) / root))
            else:
                if self.density:
                    shifted(half, half)
                for ratio in ratios:
                    if abs(float(ratio) - 1.0) < 1e-6:
                        continue
                    root = f32(np.sqrt(ratio))
                    shifted(f32(f32(f32(fixed) * f32(0.5)) * root), f32(f32(f32(fixed) * f32(0.5)) / root))
        return templates, ratios, min_sizes, step

    def run(self, inputs, in_infos, out_infos):
        f32 = np.float32
        layer_h, layer_w = (int(v) for v in np.asarray(inputs[0]).reshape(-1)[:2])
        image_h, image_w = (int(v) for v in np.asarray(inputs[1]).reshape(-1)[:2])
        templates, ratios, min_sizes, step = self._templates(image_h)
        if not self.scale_all_sizes:
            step = f32(f32(image_h) / f32(layer_h)) if step == -1 else f32(step * f32(image_h))
            min_sizes = [f32(s * f32(image_h)) for s in min_sizes]
        inv_w, inv_h = f32(f32(1) / f32(image_w)), f32(f32(1) / f32(image_h))
        w = np.arange(layer_w, dtype=np.int64)
        h = np.arange(layer_h, dtype=np.int64)
        with np.errstate(all="ignore"):
            if step == 0:
                step_x, step_y = f32(f32(image_w) / f32(layer_w)), f32(f32(image_h) / f32(layer_h))
                cx = ((w.astype(f32) + f32(0.5)) * step_x).astype(f32)
                cy = ((h.astype(f32) + f32(0.5)) * step_y).astype(f32)
            else:
                cx = ((f32(self.offset) + w.astype(f32)) * step).astype(f32)
                cy = ((f32(self.offset) + h.astype(f32)) * step).astype(f32)
            cx, cy = np.broadcast_arrays(cx[None, :], cy[:, None])
            boxes = []

            def emit(center_x, center_y, half_w, half_h, clip):
                xmin = ((center_x - half_w) * inv_w).astype(f32)
                ymin = ((center_y - half_h) * inv_h).astype(f32)
                xmax = ((center_x + half_w) * inv_w).astype(f32)
                ymax = ((center_y + half_h) * inv_h).astype(f32)
                if clip:
                    xmin, ymin = np.maximum(xmin, f32(0)), np.maximum(ymin, f32(0))
                    xmax, ymax = np.minimum(xmax, f32(1)), np.minimum(ymax, f32(1))
                boxes.append(np.stack([xmin, ymin, xmax, ymax], axis=-1))

            for base, half_shift, dx, dy, half_w, half_h, clip in templates:
                tx = ((cx + f32(base)).astype(f32) + half_shift).astype(f32) + f32(dx)
                ty = ((cy + f32(base)).astype(f32) + half_shift).astype(f32) + f32(dy)
                emit(tx.astype(f32), ty.astype(f32), half_w, half_h, clip)
            for index, size in enumerate(min_sizes):
                half = f32(size * f32(0.5))
                emit(cx, cy, half, half, False)
                with_ratios = self.scale_all_sizes or index == len(min_sizes) - 1
                base = min_sizes[index if self.scale_all_sizes else 0]
                ratio_boxes = []
                if with_ratios:
                    for ratio in ratios:
                        if abs(float(ratio) - 1.0) < 1e-6:
                            continue
                        root = f32(np.sqrt(ratio))
                        ratio_boxes.append((f32(f32(base * f32(0.5)) * root), f32(f32(base * f32(0.5)) / root)))
                max_box = None
                if index < len(self.max_size):
                    max_half = f32(f32(np.sqrt(f32(size * f32(self.max_size[index])))) * f32(0.5))
                    max_box = (max_half, max_half)
                ordered = ([max_box] if max_box else []) + ratio_boxes if self.min_max_aspect_ratios_order \
                    else ratio_boxes + ([max_box] if max_box else [])
                for half_w, half_h in ordered:
                    emit(cx, cy, half_w, half_h, False)
        count = out_infos[0].shape[1]
        if boxes:
            coords = np.stack(boxes, axis=2).reshape(-1)
        else:
            coords = np.zeros(0, dtype=f32)
        if coords.size != count:
            raise ExecutionError(f"generated {coords.size // 4} priors, shape inference gave {count // 4}",
                                 rule="input.value")
        if self.clip:
            coords = np.minimum(np.maximum(coords, f32(0)), f32(1))
        variance = np.array(_variance(self.variance), dtype=f32)
        variances = np.resize(variance, count) if variance.size == 4 or count else np.zeros(0, f32)
        return [np.stack([coords.astype(f32), variances.astype(f32)])]


@op("PriorBox", 8)
class PriorBox8(PriorBox1):
    min_max_aspect_ratios_order = Bool(default=True)


@op("PriorBoxClustered", 1)
class PriorBoxClustered1(Op):
    width = Floats(default=())
    height = Floats(default=())
    clip = Bool(default=True)
    step = Float(default=0.0)
    step_w = Float(default=0.0)
    step_h = Float(default=0.0)
    offset = Float()
    variance = Floats(default=())
    num_inputs = (2, 2)

    def infer(self, inputs):
        layer, image = inputs
        if len(self.width) != len(self.height):
            raise ShapeError(f"width has {len(self.width)} values and height {len(self.height)}; they must match",
                             rule="attr.length")
        _variance(self.variance)
        size = _integer_pair(layer, "output_size", 0)
        _integer_pair(image, "image_size", 1)
        if size is None:
            return [TensorInfo((2, None), F32)]
        return [TensorInfo((2, 4 * size[0] * size[1] * len(self.width)), F32)]

    def run(self, inputs, in_infos, out_infos):
        f32 = np.float32
        layer_h, layer_w = (int(v) for v in np.asarray(inputs[0]).reshape(-1)[:2])
        image_h, image_w = (int(v) for v in np.asarray(inputs[1]).reshape(-1)[:2])
        step_w = f32(self.step if self.step_w == 0 else self.step_w)
        step_h = f32(self.step if self.step_h == 0 else self.step_h)
        with np.errstate(all="ignore"):
            if step_w == 0 and step_h == 0:
                step_w, step_h = f32(f32(image_w) / f32(layer_w)), f32(f32(image_h) / f32(layer_h))
            cx = ((np.arange(layer_w, dtype=f32) + f32(self.offset)) * step_w).astype(f32)[None, :, None]
            cy = ((np.arange(layer_h, dtype=f32) + f32(self.offset)) * step_h).astype(f32)[:, None, None]
            half_w = (np.array(self.width, dtype=f32) / f32(2)).astype(f32)
            half_h = (np.array(self.height, dtype=f32) / f32(2)).astype(f32)
            iw, ih = f32(image_w), f32(image_h)
            parts = [(cx - half_w) / iw, (cy - half_h) / ih, (cx + half_w) / iw, (cy + half_h) / ih]
            parts = [np.broadcast_to(p.astype(f32), (layer_h, layer_w, len(self.width))) for p in parts]
        coords = np.stack(parts, axis=-1)
        if self.clip:
            coords = np.minimum(np.maximum(coords, f32(0)), f32(1))
        variance = np.array(_variance(self.variance), dtype=f32)
        variances = np.broadcast_to(np.resize(variance, 4), coords.shape)
        return [np.stack([coords.reshape(-1), variances.reshape(-1)]).astype(f32)]


# ---------------------------------------------------------------- RegionYolo / ReorgYolo

@op("RegionYolo", 1)
class RegionYolo1(Op):
    coords = Int()
    classes = Int()
    num = Int()
    do_softmax = Bool()
    mask = Ints(default=())
    axis = Int(default=1)
    end_axis = Int(default=1)
    anchors = Floats(default=())

    def infer(self, inputs):
        (data,) = inputs
        require_rank(data.shape, (4,), "data", 0)
        if not data.type.is_float:
            raise ShapeError(f"data must be floating-point, got {data.type}", rule="port.type", port=0)
        if data.shape is None:
            return [TensorInfo(None, data.type)]
        rank = len(data.shape)
        if self.do_softmax:
            axis = self.axis + rank if self.axis < 0 else self.axis
            end = self.end_axis + rank if self.end_axis < 0 else self.end_axis
            if not (0 <= axis < rank and 0 <= end < rank and axis <= end):
                raise ShapeError(f"axis {self.axis} and end_axis {self.end_axis} do not give a range of axes of a "
                                 f"rank-{rank} input", rule="attr.range")
            span = data.shape[axis:end + 1]
            flat = None if None in span else math.prod(span)
            shape = (*data.shape[:axis], flat, *data.shape[end + 1:])
        else:
            shape = (data.shape[0], (self.classes + self.coords + 1) * len(self.mask), *data.shape[2:])
        return [TensorInfo(shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        (x,) = inputs
        batches, channels, height, width = x.shape
        regions = self.num if self.do_softmax else len(self.mask)
        entry = self.classes + self.coords + 1
        if regions * entry > channels:
            raise ExecutionError(f"{regions} regions of {entry} entries need {regions * entry} channels, "
                                 f"the input has {channels}", rule="port.dims", port=0)
        block = x[:, :regions * entry].reshape(batches, regions, entry, height, width).astype(np.float32)
        out = block.copy()
        with np.errstate(all="ignore"):
            sigmoid = lambda v: (np.float32(1) / (np.float32(1) + np.exp(-v))).astype(np.float32)  # noqa: E731
            out[:, :, 0:2] = sigmoid(block[:, :, 0:2])
            if self.do_softmax:
                out[:, :, self.coords] = sigmoid(block[:, :, self.coords])
                logits = block[:, :, self.coords + 1:]
                shifted = np.exp(logits - logits.max(axis=2, keepdims=True)).astype(np.float32)
                out[:, :, self.coords + 1:] = shifted / shifted.sum(axis=2, keepdims=True, dtype=np.float32)
            else:
                out[:, :, self.coords:] = sigmoid(block[:, :, self.coords:])
        out = out.reshape(batches, regions * entry, height, width).astype(x.dtype)
        if self.do_softmax and regions * entry < channels:
            out = np.concatenate([out, x[:, regions * entry:]], axis=1)
        return [out.reshape(out_infos[0].shape)]


@op("ReorgYolo", 2)
class ReorgYolo2(Op):
    stride = Ints()

    def infer(self, inputs):
        (data,) = inputs
        require_rank(data.shape, (4,), "data", 0)
        if not self.stride or any(s != self.stride[0] for s in self.stride):
            raise ShapeError(f"stride {list(self.stride)} must hold equal values", rule="attr.value")
        s = self.stride[0]
        if s <= 0:
            raise ShapeError(f"stride {s} must be positive", rule="attr.range")
        if data.shape is None:
            return [TensorInfo((None,) * 4, data.type)]
        n, c, h, w = data.shape
        if c is not None and c < s * s:
            raise ShapeError(f"channels {c} are fewer than stride^2 = {s * s}", rule="port.dims", port=0)
        for dim, name in ((h, "height"), (w, "width")):
            if dim is not None and dim % s:
                raise ShapeError(f"{name} {dim} is not a multiple of stride {s}", rule="port.dims", port=0)
        return [TensorInfo((n, None if c is None else c * s * s, None if h is None else h // s,
                            None if w is None else w // s), data.type)]

    def run(self, inputs, in_infos, out_infos):
        (x,) = inputs
        n, c, h, w = x.shape
        s = self.stride[0]
        # The input read as [N, C / s^2, H * s, W * s], gathered into [N, C, H, W] and reshaped.
        inner = c // (s * s)
        if inner * s * s != c:
            raise ExecutionError(f"channels {c} are not a multiple of stride^2 = {s * s}", rule="port.dims", port=0)
        view = x.reshape(n, inner, h, s, w, s)
        out = view.transpose(0, 3, 5, 1, 2, 4).reshape(n, c, h, w)
        return [np.ascontiguousarray(out.reshape(out_infos[0].shape))]
