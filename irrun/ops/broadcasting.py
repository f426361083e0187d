"""Implicit broadcasting of elementwise ops (the `auto_broadcast` attribute), as OpenVINO infers it.

- numpy: right-aligned; dims merge when equal or one is 1. A dynamic dim merged with 1 stays dynamic,
  with n > 1 becomes n (it can only be 1 or n).
- pdpd: only the second input B broadcasts onto A (the output is A's shape): B's dims are placed from
  `axis` on (axis -1: rank(A) - rank(B)); each must be 1 or equal A's. OpenVINO 2026 does *not* drop
  B's trailing 1s (the spec says it does), requires rank(B) + axis <= rank(A), rejects axis < -1, and
  reads the axis from the XML attribute `auto_broadcast.auto_broadcast_axis`, default 0 (the spec says -1).
- none (also spelled explicit): shapes must be equal.

Element values are combined with NumPy broadcasting after `align` reshapes a pdpd B to A's rank.
"""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from .attrs import Enum, Int
from .shapes import shape_str

MODES = ("none", "explicit", "numpy", "pdpd")


def auto_broadcast_attr(default="numpy"):
    return Enum(*MODES, default=default)


def pdpd_axis_attr():
    """The pdpd start axis; OpenVINO's IR spelling has a dot, so the Python name is only an alias."""
    return Int(default=0, aliases=("auto_broadcast.auto_broadcast_axis",))


def broadcast_dim(a, b):
    """numpy rule for one dim pair (None: dynamic); returns (ok, dim)."""
    if a == 1:
        return True, b
    if b == 1:
        return True, a
    if a is None:
        return True, b
    if b is None:
        return True, a
    return a == b, a


def numpy_shape(a, b):
    """The numpy-broadcast shape of two partial shapes, or None when they are incompatible."""
    if a is None or b is None:
        return None, True
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        ok, d = broadcast_dim(x, y)
        if not ok:
            return None, False
        out.append(d)
    return tuple(out), True


def pdpd_shape(dst, src, axis):
    """B (src) broadcast onto A (dst) from `axis`; returns (shape, ok)."""
    if dst is None:
        return None, True
    if src is None:
        return tuple(dst), True
    if len(src) > len(dst) or axis < -1:
        return None, False
    start = len(dst) - len(src) if axis == -1 else axis
    if start + len(src) > len(dst):
        return None, False
    out = list(dst)
    for i, s in enumerate(src):
        d = out[start + i]
        if d is not None and s is not None and s > d:
            return None, False
        ok, merged = broadcast_dim(d, s)
        if not ok:
            return None, False
        out[start + i] = merged
    return tuple(out), True


def none_shape(a, b):
    """Equal shapes (dynamic dims merge); returns (shape, ok)."""
    if a is None:
        return (None if b is None else tuple(b)), True
    if b is None:
        return tuple(a), True
    if len(a) != len(b):
        return None, False
    out = []
    for x, y in zip(a, b):
        if x is not None and y is not None and x != y:
            return None, False
        out.append(x if x is not None else y)
    return tuple(out), True


def merge_into(dst, src, mode, axis, message="argument shapes are inconsistent", port=1):
    """`src` broadcast into `dst` with the op's rule; raises ShapeError when they do not broadcast."""
    if mode == "numpy":
        shape, ok = numpy_shape(dst, src)
    elif mode == "pdpd":
        shape, ok = pdpd_shape(dst, src, axis)
    else:
        shape, ok = none_shape(dst, src)
    if not ok:
        raise ShapeError(f"{message}: {shape_str(dst)} and {shape_str(src)} ({mode} broadcast"
                         f"{f', axis {axis}' if mode == 'pdpd' else ''})", rule="shape.broadcast", port=port)
    return shape


def binary_shape(a, b, mode, axis):
    return merge_into(a, b, "none" if mode == "explicit" else mode, axis)


def align(array: np.ndarray, target_rank: int, mode: str, axis: int) -> np.ndarray:
    """A pdpd B reshaped so that NumPy broadcasting places it from `axis`; others unchanged."""
    if mode != "pdpd" or array.ndim == target_rank:
        return array
    start = target_rank - array.ndim if axis == -1 else axis
    return array.reshape((1,) * start + array.shape + (1,) * (target_rank - start - array.ndim))


class BroadcastMixin:
    """For op classes with `auto_broadcast` and `pdpd_axis` attributes."""

    @property
    def broadcast_mode(self) -> str:
        return "none" if self.auto_broadcast == "explicit" else self.auto_broadcast
