"""MatMul-1: transpose_a/transpose_b on the two innermost axes, 1-D operands unsqueezed (and the added axis
removed from the result), batch axes broadcast numpy-style. Floats narrower than f32 compute in f32;
integers compute in int64 and wrap to the output type."""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from .attrs import Bool
from .registry import Op, TensorInfo, op
from .shapes import shape_str


def _broadcast_dim(a, b, index):
    if a == 1:
        return b
    if b == 1:
        return a
    if a is None or b is None:
        return a if b is None else b
    if a != b:
        raise ShapeError(f"batch dimension {index}: {a} and {b} do not broadcast", rule="shape.broadcast")
    return a


@op("MatMul", 1)
class MatMul1(Op):
    transpose_a = Bool(default=False)
    transpose_b = Bool(default=False)
    num_inputs = (2, 2)

    def infer(self, inputs):
        a, b = inputs
        for port, info in enumerate(inputs):
            if info.type.name in ("boolean", "string", "dynamic") or info.type.storage is None:
                raise ShapeError(f"element type {info.type} is not numeric", rule="port.type", port=port)
        if a.type != b.type:
            raise ShapeError(f"element types {a.type} and {b.type} do not match", rule="port.type", port=1)
        if a.shape is None or b.shape is None:
            return [TensorInfo(None, a.type)]
        if not a.shape or not b.shape:
            raise ShapeError("scalars are not supported as MatMul inputs", rule="port.rank",
                             port=0 if not a.shape else 1)
        sa, sb = list(a.shape), list(b.shape)
        if self.transpose_a and len(sa) > 1:
            sa[-2], sa[-1] = sa[-1], sa[-2]
        if self.transpose_b and len(sb) > 1:
            sb[-2], sb[-1] = sb[-1], sb[-2]
        if len(sa) == 1:
            sa.insert(0, 1)
        if len(sb) == 1:
            sb.append(1)
        if sa[-1] is not None and sb[-2] is not None and sa[-1] != sb[-2]:
            raise ShapeError(f"matrix dimensions do not match: {shape_str(a.shape)} (inner {sa[-1]}) and "
                             f"{shape_str(b.shape)} (inner {sb[-2]})", rule="port.dims", port=1)
        rank = max(len(sa), len(sb))
        sa = [1] * (rank - len(sa)) + sa
        sb = [1] * (rank - len(sb)) + sb
        out = [_broadcast_dim(x, y, i) for i, (x, y) in enumerate(zip(sa[:-2], sb[:-2]))]
        out += [sa[-2], sb[-1]]
        if len(a.shape) == 1:
            del out[-2]
        if len(b.shape) == 1:
            del out[-1]
        return [TensorInfo(tuple(out), a.type)]

    def run(self, inputs, in_infos, out_infos):
        a, b = inputs
        dtype = out_infos[0].type.storage
        if dtype.kind == "f":
            compute = np.float64 if dtype.itemsize > 4 else np.float32
        else:
            compute = np.int64 if dtype.kind == "i" or dtype.itemsize < 8 else np.uint64
        a = a.astype(compute, copy=False)
        b = b.astype(compute, copy=False)
        if self.transpose_a and a.ndim > 1:
            a = np.swapaxes(a, -1, -2)
        if self.transpose_b and b.ndim > 1:
            b = np.swapaxes(b, -1, -2)
        result = np.matmul(a, b) if a.ndim > 1 or b.ndim > 1 else np.asarray(np.dot(a, b))
        with np.errstate(over="ignore", invalid="ignore"):
            return [np.asarray(result).astype(dtype, copy=False).reshape(out_infos[0].shape)]
