"""Subnormal operands of matrix products. x86 cores multiply a subnormal float in microcode, tens of times
slower than a normal one, and a softmax over long rows yields many of them (random-weight attention: 13% of
the probabilities; swin_t's attention products took 6.5 ms instead of 0.4). A product whose operand has its
subnormal values replaced by zeros differs from the exact one by less than (inner length) * (smallest normal)
* max|other operand| in absolute value: below float32's rounding of any sum that is not itself that small,
the same order as the BLAS's own summation order."""
from __future__ import annotations

import numpy as np


def flush(a: np.ndarray, in_place: bool = False, nonnegative: bool = False) -> np.ndarray:
    """a with its subnormal values as zeros: `a` itself when it has none (or is not float); else a copy, or
    `a` changed in place when `in_place` (the caller owns it). `nonnegative` (a softmax's probabilities: no
    value below zero) first looks for values below the smallest normal float in one pass."""
    if a.dtype.kind != "f" or a.size == 0:
        return a
    tiny = np.finfo(a.dtype).tiny
    if nonnegative and not np.less(a, tiny).any():
        return a
    magnitude = np.abs(a)
    subnormal = np.less(magnitude, tiny)
    subnormal &= np.not_equal(magnitude, 0)
    if not subnormal.any():
        return a
    target = a if in_place else a.copy()
    target[subnormal] = 0
    return target
