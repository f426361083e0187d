"""Partial shapes as IR files write them, and small helpers for shape inference."""
from __future__ import annotations

import math
import re

import numpy as np

from ..errors import ShapeError
from .stricter import refuse

_INTERVAL = re.compile(r"^(-?\d*)\.\.(-?\d*)$")


def parse_dim(text: str) -> tuple[int, int | None]:
    """A dimension as (lower, upper) bounds, upper None when unbounded: "3", "-1", "?", "2..8", "..5", "4..".

    Raises ValueError."""
    text = text.strip()
    if text in ("?", "-1"):
        return 0, None
    match = _INTERVAL.match(text)
    if match:
        low = int(match.group(1)) if match.group(1) else 0
        high = int(match.group(2)) if match.group(2) not in ("", "-1") else None
        if low < 0 or (high is not None and high < low):
            raise ValueError(f"bad interval dimension {text!r}")
        return low, high
    value = int(text)
    if not 0 <= value < 1 << 63:  # OpenVINO reads a dim as int64
        raise ValueError(f"dimension {text!r} is out of range")
    return value, value


def parse_partial_shape(text: str) -> tuple[tuple[int, int | None], ...] | None:
    """A Parameter's `shape`: "1,3,?,8", "[2,?]", "2..8", "" (a scalar), "..." (None: any rank)."""
    text = text.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1].strip()
    if text == "...":
        return None
    if not text:
        return ()
    return tuple(parse_dim(part) for part in text.split(","))


def static_dims(bounds) -> tuple | None:
    """Bounds to an inferred shape: a dim is an int when its bounds meet, else None."""
    if bounds is None:
        return None
    return tuple(low if low == high else None for low, high in bounds)


def numel(shape) -> int:
    return math.prod(shape)


def shape_str(shape) -> str:
    if shape is None:
        return "[...]"
    return "[" + ",".join("?" if d is None else str(d) for d in shape) + "]"


def require_rank(shape, ranks, what="input", port=0):
    if shape is not None and len(shape) not in ranks:
        expected = " or ".join(str(r) for r in ranks)
        raise ShapeError(f"{what} rank is {len(shape)} ({shape_str(shape)}), expected {expected}",
                         rule="port.rank", port=port)


def as_index_array(value, what, port) -> np.ndarray:
    """A constant input holding integers (sizes, axes), as int64."""
    array = np.asarray(value)
    if array.dtype.kind not in "iu":
        raise ShapeError(f"{what} must hold integers, got {array.dtype}", rule="port.type", port=port)
    return array.astype(np.int64)


def refuse_unsigned_dilations(kernel, dilations, spatial_dims) -> None:
    """OpenVINO reads a negative dilation as a huge unsigned one: a window of more than one element then spans
    more than any known input dim, and OpenVINO refuses the file (a kernel of 1 still spans 1)."""
    for axis, (k, d, dim) in enumerate(zip(kernel, dilations, spatial_dims)):
        if d < 0 and k is not None and k > 1 and dim is not None:
            raise ShapeError(f"dilation {d} on spatial axis {axis} (read as {d + (1 << 64)}) makes the window of "
                             f"{k} larger than the input", rule="shape.kernel")


def require_positive_steps(name: str, values) -> None:
    """Strides and dilations: OpenVINO refuses a 0 (attr.range) but reads a negative value as a huge unsigned
    one and accepts the file, so irrun refusing it is stricter (attr.range.spec; inference goes on with
    `stricter.unsigned` steps)."""
    if any(v == 0 for v in values):
        raise ShapeError(f"{name} {list(values)} must be positive", rule="attr.range")
    if any(v < 0 for v in values):
        refuse(ShapeError(f"{name} {list(values)} must be positive (OpenVINO reads a negative value as a huge "
                          f"unsigned one)", rule="attr.range.spec"))


def negative_size(message: str, info, port: int) -> ShapeError:
    """A negative value of a size input (a target shape, repeats, output_size, num_segments): OpenVINO reads one
    from a Constant layer (as a dim 0, -1 as a dynamic dim), so refusing it is stricter, and refuses one that
    other layers compute (its bounds evaluation needs values >= 0)."""
    return ShapeError(message, rule="attr.range.spec" if info.literal else "attr.range", port=port)


def sizes_as_read(values, message: str, info, port: int, minus_one=None) -> list:
    """A size input's values as OpenVINO's inference takes them. A negative value computed by other layers is
    refused (`negative_size`); one read from a Constant layer is a stricter-class error (`refuse`) and inference
    goes on with -1 as `minus_one` (None: a dynamic dim) and a value below -1 as 0."""
    values = [int(v) for v in values]
    if min(values, default=0) >= 0:
        return values
    refuse(negative_size(message, info, port))
    return [v if v >= 0 else minus_one if v == -1 else 0 for v in values]


def reject_nf4(info, what: str, port: int) -> None:
    """nf4 is an "integral number" to OpenVINO's type checks (indices, axes, shapes): a stricter-class error."""
    if info.type.name == "nf4":
        raise ShapeError(f"{what} must be integers, got nf4", rule="port.type.spec", port=port)


# Types whose constant values OpenVINO's shape inference cannot read (Constant::cast_vector): an op that reads
# such an input's known value (a Slice start, a Reshape target) is refused, "Element not supported".
UNREADABLE_VALUES = {"u1", "u2", "u3", "u6", "f8e4m3", "f8e5m2", "f8e8m0", "f4e2m1"}


def readable_value(info, what: str, port: int) -> np.ndarray | None:
    """A known input value an op's shape inference reads (None when not known), refused as OpenVINO refuses
    it when its type is one OpenVINO cannot read."""
    if info.value is not None and info.type.name in UNREADABLE_VALUES:
        raise ShapeError(f"OpenVINO cannot read the values of {what} of type {info.type} (Element not supported)",
                         rule="port.type", port=port)
    return info.value
