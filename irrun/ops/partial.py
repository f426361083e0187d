"""Partial values of shape arithmetic, as OpenVINO's reader propagates them.

`Broadcast(0, Concat(Gather(ShapeOf(x), 0), [2, 0, 8]))` has the target shape [?, 2, 0, 8] in OpenVINO's
inference; knowing only fully constant values, irrun would see [?, ?, ?, ?] and miss what OpenVINO checks
with it (a ReadValue's `variable_shape` against its init, a broadcast that cannot work). The checker calls
`with_partial_values` after each op's inference: ShapeOf starts a partial value, Gather, Concat, Slice,
StridedSlice and the ops that keep elements in order (Convert, Squeeze, Unsqueeze, Reshape) carry it, and
integer arithmetic (Add, Subtract, Multiply, Divide, Maximum, Minimum) computes the elements known on both
sides; an op reading a shape input uses `known_elements`.

OpenVINO evaluates lower and upper bounds; an element is known when the two meet. Any other small integer
tensor (a Parameter's, a ReduceSum's) has unknown elements but does not stop the others: OpenVINO's
Concat of a Parameter [1] and [5] gives the target shape [?, 5].
"""
from __future__ import annotations

import numpy as np

from ..errors import IRError
from .registry import TensorInfo
from .shape_ops import shape_value_limit
from .shapes import numel

MAX_ELEMENTS = 64  # partial values are shapes: short
KEEPS_ORDER = {"Convert", "Squeeze", "Unsqueeze", "Reshape"}
SLICES = {"Slice", "StridedSlice"}  # their kernels, run on the elements as an object array
ARITHMETIC = {
    "Add": lambda a, b: a + b, "Subtract": lambda a, b: a - b, "Multiply": lambda a, b: a * b,
    "Maximum": max, "Minimum": min,
}


def known_elements(info: TensorInfo) -> list | None:
    """The flattened elements of a small integer tensor, each an int or None (unknown), or None."""
    if info.value is not None and info.type.is_integer and np.asarray(info.value).size <= MAX_ELEMENTS:
        return [int(v) for v in np.asarray(info.value).reshape(-1)]
    return None if info.partial is None else list(info.partial)


def _elements_or_unknown(info: TensorInfo) -> list | None:
    """`known_elements`, or every element unknown for a small static integer tensor without a known value."""
    elements = known_elements(info)
    if elements is None and info.type.is_integer and info.is_static and numel(info.shape) <= MAX_ELEMENTS:
        return [None] * numel(info.shape)
    return elements


def _gather(node, in_infos) -> list | None:
    data, indices = known_elements(in_infos[0]), known_elements(in_infos[1])
    axis = known_elements(in_infos[2]) if len(in_infos) > 2 else [0]
    if data is None or indices is None or axis not in ([0], [-1]) or in_infos[0].rank != 1 \
            or getattr(node.op, "batch_dims", 0) != 0 or any(i is None for i in indices):
        return None
    # OpenVINO's Gather evaluates an index out of range to 0, and its bounds with it
    return [data[i] if -len(data) <= i < len(data) else 0 for i in indices]


def _concat(node, in_infos) -> list | None:
    parts = [_elements_or_unknown(info) for info in in_infos]
    if any(p is None or info.rank != 1 for p, info in zip(parts, in_infos)):
        return None
    return [e for p in parts for e in p]


def _divide(node):
    def divide(a, b):
        if b == 0:
            return None
        if getattr(node.op, "m_pythondiv", True):
            return a // b
        return abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)
    return divide


def _arithmetic(node, in_infos, outputs) -> list | None:
    """Elementwise integer arithmetic, NumPy-broadcast: an element is known where both operands' are."""
    function = _divide(node) if node.ref.type == "Divide" else ARITHMETIC[node.ref.type]
    operands = []
    for info in in_infos[:2]:
        elements = _elements_or_unknown(info)
        if elements is None:
            return None
        operands.append(np.array(elements, dtype=object).reshape(info.shape))
    a, b = np.broadcast_arrays(*operands)
    return [None if x is None or y is None else function(x, y) for x, y in zip(a.reshape(-1), b.reshape(-1))]


def _sliced(node, in_infos, outputs) -> list | None:
    """Slice and StridedSlice of a partial value by constant begins, ends and steps: the op's own kernel."""
    data = known_elements(in_infos[0])
    if data is None or in_infos[0].shape is None or any(info.value is None for info in in_infos[1:]):
        return None
    array = np.array(data, dtype=object).reshape(in_infos[0].shape)
    result = node.op.run([array, *(info.value for info in in_infos[1:])], in_infos, outputs)[0]
    return list(np.asarray(result, dtype=object).reshape(-1))


def _elements(node, in_infos, outputs) -> list | None:
    if node.ref.type == "ShapeOf":
        shape, limit = in_infos[0].shape, shape_value_limit(outputs[0].type)
        return None if shape is None else [None if d is None or d >= limit else d for d in shape]
    if node.ref.type == "Gather":
        return _gather(node, in_infos)
    if node.ref.type == "Concat":
        return _concat(node, in_infos)
    if node.ref.type in SLICES:
        return _sliced(node, in_infos, outputs)
    if (node.ref.type in ARITHMETIC or node.ref.type == "Divide") and outputs[0].type.is_integer:
        return _arithmetic(node, in_infos, outputs)
    if node.ref.type in KEEPS_ORDER and outputs[0].type.is_integer:
        elements = known_elements(in_infos[0])
        if elements is not None and outputs[0].is_static and numel(outputs[0].shape) == len(elements):
            return elements
    return None


def _bounded(node, in_infos) -> bool:
    """Whether OpenVINO evaluates bounds of the op's output: a ShapeOf, or an op whose inputs all have them.
    A value with every element unknown still has a known length then (Broadcast checks it against the rank)."""
    return node.ref.type == "ShapeOf" or all(info.value is not None or info.partial is not None for info in in_infos)


def with_partial_values(node, in_infos, outputs: list[TensorInfo]) -> list[TensorInfo]:
    """`outputs` with the partial value of a single-output shape op's result, or its value when that is
    fully known."""
    if len(outputs) != 1 or outputs[0].value is not None or not outputs[0].is_static \
            or numel(outputs[0].shape) > MAX_ELEMENTS:
        return outputs
    try:
        elements = _elements(node, in_infos, outputs)
    except (TypeError, ValueError, IndexError, IRError):  # a kernel on object elements: no partial value
        return outputs
    out = outputs[0]
    if elements is None or len(elements) != numel(out.shape) or not out.type.is_integer \
            or all(e is None for e in elements) and not _bounded(node, in_infos):
        return outputs
    if all(e is not None for e in elements):
        return [TensorInfo(out.shape, out.type, np.array(elements, out.type.storage).reshape(out.shape))]
    return [TensorInfo(out.shape, out.type, None, tuple(elements))]
