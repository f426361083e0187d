"""Grid sampling: GridSample-9.

Every output pixel reads a few input pixels (1 for nearest, 4 for bilinear, 16 for bicubic) at integer
positions derived from its grid coordinate; the kernel loops over those taps and gathers all pixels of a
tap at once. Coordinates and weights are computed in f32 (f64 when data or grid is f64), as OpenVINO
does; integer data is interpolated in that float type and converted back by truncation toward zero."""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError, ShapeError
from .attrs import Bool, Enum
from .registry import Op, TensorInfo, op
from .shape_ops import merge_dim
from .shapes import numel, require_rank, shape_str
from .stricter import refuse

CUBIC_A = -0.75


@op("GridSample", 9)
class GridSample9(Op):
    align_corners = Bool(default=False)
    mode = Enum("bilinear", "bicubic", "nearest", default="bilinear")
    padding_mode = Enum("zeros", "border", "reflection", default="zeros")
    num_inputs = (2, 2)

    def infer(self, inputs):
        data, grid = inputs
        if not grid.type.is_float:
            raise ShapeError(f"the grid must have a floating point type, got {grid.type}", rule="port.type", port=1)
        if data.type.storage is None or data.type.name in ("boolean", "string"):
            refuse(ShapeError(f"data element type {data.type} is not numeric", port=0,  # OpenVINO takes boolean
                              rule="port.type.spec" if data.type.name == "boolean" else "port.type"))
        require_rank(data.shape, (4,), "data", 0)
        require_rank(grid.shape, (4,), "grid", 1)
        batch = channels = height = width = None
        if grid.shape is not None:
            if grid.shape[3] is not None and grid.shape[3] != 2:
                raise ShapeError(f"the last dimension of the grid {shape_str(grid.shape)} must be 2",
                                 rule="port.dims", port=1)
            batch, height, width = grid.shape[:3]
        if data.shape is not None:
            merged = merge_dim(batch, data.shape[0])
            if merged is False:
                raise ShapeError(f"data batch {data.shape[0]} does not match grid batch {batch}",
                                 rule="port.dims", port=1)
            batch, channels = merged, data.shape[1]
        return [TensorInfo((batch, channels, height, width), data.type)]

    def run(self, inputs, in_infos, out_infos):
        data, grid = inputs
        out_shape = out_infos[0].shape
        if numel(out_shape) == 0:
            return [np.zeros(out_shape, dtype=out_infos[0].type.storage)]
        n, c, h, w = data.shape
        if h == 0 or w == 0:
            raise ExecutionError(f"cannot sample an empty image {shape_str(data.shape)}", rule="shape.empty")
        ctype = np.float64 if np.float64 in (data.dtype, grid.dtype) else np.float32
        taps = max(1, {"nearest": 1, "bilinear": 4, "bicubic": 16}[self.mode])
        self.reserve(numel(out_shape) * np.dtype(ctype).itemsize * 3 + numel(grid.shape[:3]) * 8 * taps,
                     "grid sample taps")
        result = grid_sample(data, grid.astype(ctype, copy=False), ctype, self.align_corners, self.mode,
                             self.padding_mode)
        return [_to_type(result, out_infos[0].type.storage)]


def _to_type(values, dtype):
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return values.astype(dtype)
    # OpenVINO's CPU plugin rounds to nearest (ties to even) into 8-bit types and truncates into wider ones
    values = np.rint(values) if dtype.itemsize == 1 else np.trunc(values)
    info = np.iinfo(dtype)
    # float -> int conversion of an out-of-range value is undefined in C++; clamp so it stays defined here
    return np.clip(np.nan_to_num(values), info.min, info.max).astype(dtype)


def _denormalize(v, size, align, ctype):
    one, two = ctype(1), ctype(2)
    if align:
        return (v + one) * (ctype(size) - one) / two
    return ((v + one) * ctype(size) - one) / two


def _index(coord, size, padding, align):
    """Integer input positions (int64) and, for zeros padding, which of them are inside."""
    if padding == "zeros":
        inside = (coord >= 0) & (coord < size)
        return np.where(inside, coord, 0), inside
    if padding == "border":
        return np.clip(coord, 0, size - 1), None
    if align:
        period = 1 if size == 1 else 2 * (size - 1)
        coord = np.abs(coord) % period
        return np.where(coord >= size, period - coord, coord), None
    period = 2 * size
    coord = coord % period  # Python/NumPy modulo is already non-negative
    return np.where(coord >= size, period - 1 - coord, coord), None


def _cubic_coefficients(r, ctype):
    a = ctype(CUBIC_A)
    one, two = ctype(1), ctype(2)
    r1, s, s2 = r + one, one - r, two - r
    return (
        ((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a,
        ((a + 2) * r - (a + 3)) * r * r + one,
        ((a + 2) * s - (a + 3)) * s * s + one,
        ((a * s2 - 5 * a) * s2 + 8 * a) * s2 - 4 * a,
    )


def grid_sample(data, grid, ctype, align, mode, padding):
    n, c, h, w = data.shape
    _, ho, wo, _ = grid.shape
    flat = data.reshape(n, c, h * w)
    values_float = data.dtype.kind == "f" and data.dtype.itemsize >= np.dtype(ctype).itemsize
    with np.errstate(invalid="ignore", over="ignore"):
        x = _denormalize(grid[..., 0], w, align, ctype).reshape(n, 1, ho * wo)
        y = _denormalize(grid[..., 1], h, align, ctype).reshape(n, 1, ho * wo)

    def tap(iy, ix):
        """Input values at integer positions iy, ix ([N, 1, P] each): [N, C, P] in ctype."""
        iy, inside_y = _index(iy, h, padding, align)
        ix, inside_x = _index(ix, w, padding, align)
        index = np.broadcast_to(iy * w + ix, (n, c, ho * wo))
        values = np.take_along_axis(flat, index, axis=2)
        values = values if values_float else values.astype(ctype)
        if inside_y is not None:
            values = np.where(inside_y & inside_x, values, ctype(0))
        return values

    def floor_int(v):
        # positions far outside the image behave alike; keep them within int64
        return np.clip(np.nan_to_num(np.floor(v)), -(2 ** 40), 2 ** 40).astype(np.int64)

    if mode == "nearest":
        result = tap(floor_int(np.rint(y)), floor_int(np.rint(x)))
    elif mode == "bilinear":
        y0, x0 = np.floor(y), np.floor(x)
        dy, dx = y - y0, x - x0
        iy, ix = floor_int(y0), floor_int(x0)
        one = ctype(1)
        q0 = (one - dx) * tap(iy, ix) + dx * tap(iy, ix + 1)
        q1 = (one - dx) * tap(iy + 1, ix) + dx * tap(iy + 1, ix + 1)
        result = dy * q1 + (one - dy) * q0
    else:
        y0, x0 = np.floor(y), np.floor(x)
        cy = _cubic_coefficients(y - y0, ctype)
        cx = _cubic_coefficients(x - x0, ctype)
        iy, ix = floor_int(y0) - 1, floor_int(x0) - 1
        result = None
        for j in range(4):
            row = None
            for i in range(4):
                term = cx[i] * tap(iy + j, ix + i)
                row = term if row is None else row + term
            term = cy[j] * row
            result = term if result is None else result + term
    return result.reshape(n, c, ho, wo)
