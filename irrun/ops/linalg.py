"""Linear algebra: Inverse-14, GroupedMatMul-17."""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError, ShapeError
from .attrs import Bool
from .blas import matmul
from .registry import Op, TensorInfo, op
from .shape_ops import merge_dim
from .shapes import shape_str


# ---------------------------------------------------------------- Inverse

def lu_inverse(a: np.ndarray) -> np.ndarray:
    """Inverses of a batch [B, n, n] of matrices as OpenVINO's reference computes them: LU decomposition with
    partial pivoting (the first row of largest |pivot|), then forward and back substitution, all in the
    array's type. A singular matrix divides by zero (infinities and NaN), as OpenVINO does."""
    batch, n, _ = a.shape
    u = a.copy()
    lower = np.zeros_like(u)
    perm = np.broadcast_to(np.arange(n), (batch, n)).copy()
    rows = np.arange(batch)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for k in range(n):  # the elimination steps are sequential
            pivot = k + np.argmax(np.abs(u[:, k:, k]), axis=1)
            for m in (u, lower, perm):
                m[rows, [k] * batch], m[rows, pivot] = m[rows, pivot].copy(), m[rows, [k] * batch].copy()
            factors = u[:, k + 1:, k] / u[:, k:k + 1, k]
            lower[:, k + 1:, k] = factors
            u[:, k + 1:, k:] -= factors[:, :, None] * u[:, k:k + 1, k:]
        # solve L y = P e_c for every column c at once, then U x = y
        rhs = (perm[:, :, None] == np.arange(n)[None, None, :]).astype(a.dtype)
        y = np.zeros_like(u)
        for i in range(n):
            y[:, i] = rhs[:, i] - np.einsum("bj,bjc->bc", lower[:, i, :i], y[:, :i])
        x = np.zeros_like(u)
        for i in range(n - 1, -1, -1):
            x[:, i] = (y[:, i] - np.einsum("bj,bjc->bc", u[:, i, i + 1:], x[:, i + 1:])) / u[:, i, i:i + 1]
    return x


@op("Inverse", 14)
class Inverse14(Op):
    """The inverse of each innermost [n, n] matrix; with adjoint, its transpose (the conjugate transpose of the
    inverse, for real matrices). f16 and bf16 are computed in f32, as OpenVINO's reference does."""

    adjoint = Bool(default=False)

    def infer(self, inputs):
        (data,) = inputs
        if not data.type.is_float or data.type.storage is None:
            raise ShapeError(f"input must be a floating-point tensor, got {data.type}", rule="port.type", port=0)
        if data.rank is not None and data.rank < 2:
            raise ShapeError(f"input rank is {data.rank} ({shape_str(data.shape)}), expected 2 or more",
                             rule="port.rank", port=0)
        if data.shape is not None and merge_dim(data.shape[-1], data.shape[-2]) is False:
            raise ShapeError(f"input {shape_str(data.shape)} holds no square matrices", rule="port.dims", port=0)
        return [TensorInfo(data.shape, data.type)]

    def run(self, inputs, in_infos, out_infos):
        (data,) = inputs
        n = data.shape[-1]
        work = np.float64 if data.dtype == np.float64 else np.float32
        matrices = data.reshape(-1, n, n).astype(work)
        if self.adjoint:
            matrices = matrices.transpose(0, 2, 1)
        result = lu_inverse(np.ascontiguousarray(matrices)) if n else matrices
        return [result.reshape(data.shape).astype(out_infos[0].type.storage)]


# ---------------------------------------------------------------- GroupedMatMul

@op("GroupedMatMul", 17)
class GroupedMatMul17(Op):
    """Per-group products with the weights' last dim as the shared K (B is [G, N, K]):
    2-D A [T, K] with offsets [G] (cumulative row ends): rows offsets[g-1]:offsets[g] of A times B[g]^T;
    3-D A [G, M, K] without offsets: A[g] @ B[g]^T. Rows of A after the last offset give zeros."""

    num_inputs = (2, 3)

    def infer(self, inputs):
        a, b = inputs[0], inputs[1]
        for port, info in enumerate(inputs[:2]):
            if info.type != a.type:
                raise ShapeError(f"input types {a.type} and {info.type} differ", rule="port.type", port=port)
        if len(inputs) == 3 and inputs[2].type.name not in ("i32", "i64"):
            raise ShapeError(f"offsets must be i32 or i64, got {inputs[2].type}", rule="port.type", port=2)
        if a.rank is None or b.rank is None:
            return [TensorInfo(None, a.type)]
        if (a.rank, b.rank) not in ((2, 3), (3, 3)):
            raise ShapeError(f"unsupported ranks {a.rank}-D x {b.rank}-D (supported: 2-D x 3-D, 3-D x 3-D)",
                             rule="port.rank", port=0)
        if merge_dim(a.shape[-1], b.shape[-1]) is False:
            raise ShapeError(f"inner dims differ: A {shape_str(a.shape)}, B {shape_str(b.shape)}",
                             rule="port.dims", port=1)
        if a.rank == 2:
            if len(inputs) < 3:
                raise ShapeError("2-D x 3-D needs the offsets input", rule="port.count")
            offsets = inputs[2]
            if offsets.rank is not None and offsets.rank != 1:
                raise ShapeError(f"offsets must be 1-D, got {shape_str(offsets.shape)}", rule="port.rank", port=2)
            if offsets.shape is not None and merge_dim(offsets.shape[0], b.shape[0]) is False:
                raise ShapeError(f"offsets {shape_str(offsets.shape)} and B {shape_str(b.shape)} differ in the "
                                 f"group count", rule="port.dims", port=2)
            return [TensorInfo((a.shape[0], b.shape[1]), a.type)]
        groups = merge_dim(a.shape[0], b.shape[0])
        if groups is False:
            raise ShapeError(f"group counts differ: A {shape_str(a.shape)}, B {shape_str(b.shape)}",
                             rule="port.dims", port=1)
        return [TensorInfo((groups, a.shape[1], b.shape[1]), a.type)]

    def run(self, inputs, in_infos, out_infos):
        a, b = inputs[0], inputs[1]
        work = np.float64 if a.dtype == np.float64 else np.float32
        if a.ndim == 3:
            return [matmul(a.astype(work), b.astype(work).transpose(0, 2, 1)).astype(a.dtype)]
        ends = inputs[2].astype(np.int64).reshape(-1)
        starts = np.concatenate([[0], ends[:-1]])
        if (starts > ends).any() or (ends > a.shape[0]).any() or (ends < 0).any():
            raise ExecutionError(f"offsets {ends.tolist()} are not non-decreasing row ends within {a.shape[0]} rows",
                                 rule="input.index", port=2)
        out = np.zeros(out_infos[0].shape, dtype=work)
        for g, (start, end) in enumerate(zip(starts.tolist(), ends.tolist())):  # one product per group
            out[start:end] = matmul(a[start:end].astype(work), b[g].astype(work).T)
        return [out.astype(a.dtype)]
