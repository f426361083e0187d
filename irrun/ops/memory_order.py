"""Arrays that are permuted views of a C-contiguous array, such as the [N, C, *S] views of channels-last
results that irrun/ops/depthwise_nhwc.py hands on: elementwise ops compute on the array in its memory order
and hand on the same kind of view, so the layout flows through activations without a transposing copy."""
from __future__ import annotations

import numpy as np


def memory_order(x: np.ndarray) -> list[int] | None:
    """The axis order in which x is C-contiguous; None when x is C-contiguous already or is not a permuted
    dense array (a broadcast or strided slice)."""
    if x.ndim < 2 or x.flags.c_contiguous:
        return None
    order = sorted(range(x.ndim), key=lambda axis: -x.strides[axis])
    return order if x.transpose(order).flags.c_contiguous else None


def in_memory_order(elementwise, x: np.ndarray, order: list[int]) -> list[np.ndarray]:
    """elementwise(x in memory order) -> a list of arrays of that shape, each handed back as x's view."""
    inverse = np.argsort(order)
    return [result.transpose(inverse) for result in elementwise(x.transpose(order))]
