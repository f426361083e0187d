"""Partial values of shape arithmetic, as OpenVINO's reader propagates them.

`Broadcast(0, Concat(Gather(ShapeOf(x), 0), [2, 0, 8]))` has the target shape [?, 2, 0, 8] in OpenVINO's
inference; knowing only fully constant values, irrun would see [?, ?, ?, ?] and miss what OpenVINO checks
with it (a ReadValue's `variable_shape` against its init, a broadcast that cannot work). The checker calls
`with_partial_values` after each op's inference: ShapeOf starts a partial value, Gather, Concat and the ops
that keep elements in order (Convert, Squeeze, Unsqueeze, Reshape) carry it; an op reading a shape input
uses `known_elements`.
"""
from __future__ import annotations

import numpy as np

from .registry import TensorInfo
from .shapes import numel

MAX_ELEMENTS = 64  # partial values are shapes: short
KEEPS_ORDER = {"Convert", "Squeeze", "Unsqueeze", "Reshape"}


def known_elements(info: TensorInfo) -> list | None:
    """The flattened elements of a small integer tensor, each an int or None (unknown), or None."""
    if info.value is not None and info.type.is_integer and np.asarray(info.value).size <= MAX_ELEMENTS:
        return [int(v) for v in np.asarray(info.value).reshape(-1)]
    return None if info.partial is None else list(info.partial)


def _gather(node, in_infos) -> list | None:
    data, indices = known_elements(in_infos[0]), known_elements(in_infos[1])
    axis = known_elements(in_infos[2]) if len(in_infos) > 2 else [0]
    if data is None or indices is None or axis not in ([0], [-1]) or in_infos[0].rank != 1 \
            or getattr(node.op, "batch_dims", 0) != 0 or any(i is None for i in indices):
        return None
    # OpenVINO's Gather evaluates an index out of range to 0, and its bounds with it
    return [data[i] if -len(data) <= i < len(data) else 0 for i in indices]


def _concat(node, in_infos) -> list | None:
    parts = [known_elements(info) for info in in_infos]
    if any(p is None or info.rank != 1 for p, info in zip(parts, in_infos)):
        return None
    return [e for p in parts for e in p]


def _elements(node, in_infos, outputs) -> list | None:
    if node.ref.type == "ShapeOf":
        shape = in_infos[0].shape
        return None if shape is None else list(shape)
    if node.ref.type == "Gather":
        return _gather(node, in_infos)
    if node.ref.type == "Concat":
        return _concat(node, in_infos)
    if node.ref.type in KEEPS_ORDER and outputs[0].type.is_integer:
        elements = known_elements(in_infos[0])
        if elements is not None and outputs[0].is_static and numel(outputs[0].shape) == len(elements):
            return elements
    return None


def with_partial_values(node, in_infos, outputs: list[TensorInfo]) -> list[TensorInfo]:
    """`outputs` with the partial value of a single-output shape op's result, or its value when that is
    fully known."""
    if len(outputs) != 1 or outputs[0].value is not None or not outputs[0].is_static \
            or numel(outputs[0].shape) > MAX_ELEMENTS:
        return outputs
    try:
        elements = _elements(node, in_infos, outputs)
    except (TypeError, ValueError, IndexError):
        return outputs
    out = outputs[0]
    if elements is None or len(elements) != numel(out.shape) or not out.type.is_integer:
        return outputs
    if all(e is not None for e in elements):
        return [TensorInfo(out.shape, out.type, np.array(elements, out.type.storage).reshape(out.shape))]
    return [TensorInfo(out.shape, out.type, None, tuple(elements))]
