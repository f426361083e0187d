"""ScaledDotProductAttention-13.

softmax((Q * scale) K^T + bias) V over the last two axes, batch dims broadcast NumPy-style. The bias is
triu(-inf, k=1) on [L, S] when `causal` (the mask input is then ignored), else the float mask, or 0 / -inf
from a boolean mask (true keeps a position). scale defaults to 1 / sqrt(E). The query is scaled before the
product, as OpenVINO's reference decomposition (ScaledDotProductAttentionDecomposition) does: one pass over
[L, E] instead of [L, S]."""
from __future__ import annotations

import numpy as np

from ..errors import ShapeError
from . import subnormals
from .attrs import Bool
from .blas import matmul
from .registry import Op, TensorInfo, op
from .shape_ops import merge_dim
from .shapes import shape_str


def _merge_batch(dims, other):
    """NumPy-style broadcast of two batch-dim tuples (right-aligned): (merged, ok)."""
    size = max(len(dims), len(other))
    a = (1,) * (size - len(dims)) + tuple(dims)
    b = (1,) * (size - len(other)) + tuple(other)
    merged = []
    for x, y in zip(a, b):
        ok, m = _dim_merge(x, y)
        if not ok:
            return None, False
        merged.append(m)
    return tuple(merged), True


BLOCK_BYTES = 1 << 23  # the scores of one block of query rows


@op("ScaledDotProductAttention", 13)
class ScaledDotProductAttention13(Op):
    causal = Bool(default=False)
    num_inputs = (3, 5)

    def infer(self, inputs):
        self.check_inputs(len(inputs))
        query, key, value = inputs[:3]
        if not query.type.is_float:
            raise ShapeError(f"query must be floating-point, got {query.type}", rule="port.type", port=0)
        for port in (1, 2):
            if inputs[port].type != query.type:
                raise ShapeError(f"input {port} has type {inputs[port].type}, expected the query's {query.type}",
                                 rule="port.type", port=port)
        if len(inputs) > 3 and inputs[3].type.name != "boolean" and inputs[3].type != query.type:
            raise ShapeError(f"attention_mask must be boolean or {query.type}, got {inputs[3].type}",
                             rule="port.type", port=3)
        if len(inputs) > 4 and inputs[4].type != query.type:
            raise ShapeError(f"scale must be {query.type}, got {inputs[4].type}", rule="port.type", port=4)

        batch, l_dim, e_dim, s_dim, ev_dim = None, None, None, None, None
        if query.shape is not None:
            if len(query.shape) < 3:
                raise ShapeError(f"query {shape_str(query.shape)} must have rank 3 or more", rule="port.rank", port=0)
            batch, l_dim, e_dim = tuple(query.shape[:-2]), query.shape[-2], query.shape[-1]
        for port, name in ((1, "key"), (2, "value")):
            shape = inputs[port].shape
            if shape is None:
                continue
            if len(shape) < 3:
                raise ShapeError(f"{name} {shape_str(shape)} must have rank 3 or more", rule="port.rank", port=port)
            merged, ok = (None, True) if batch is None else _merge_batch(batch, tuple(shape[:-2]))
            # OpenVINO 2026 merges E (query, key) and S (key, value) strictly: a 1 does not broadcast there
            if port == 1:
                e_dim = merge_dim(e_dim, shape[-1])
                s_dim = shape[-2]
                ok2 = e_dim is not False
            else:
                s_dim = merge_dim(s_dim, shape[-2])
                ev_dim = shape[-1]
                ok2 = s_dim is not False
            if not ok or not ok2:
                raise ShapeError(f"{name} {shape_str(shape)} is not compatible with query {shape_str(query.shape)}",
                                 rule="shape.broadcast", port=port)
            batch = merged
        if len(inputs) > 3 and not self.causal:
            mask = inputs[3].shape
            if mask is not None and len(mask) != 0:
                ok = len(mask) >= 2
                if ok:
                    ok_l, l_dim = _dim_merge(l_dim, mask[-2])
                    ok_s, s_dim = _dim_merge(s_dim, mask[-1])
                    ok = ok_l and ok_s
                if ok and len(mask) >= 3 and batch is not None:
                    batch, ok = _merge_batch(batch, tuple(mask[:-2]))
                if not ok:
                    raise ShapeError(f"attention_mask {shape_str(mask)} is not compatible with the other inputs",
                                     rule="shape.broadcast", port=3)
        if len(inputs) > 4:
            scale = inputs[4].shape
            # OpenVINO: rank 0, or rank 1 of one element (or a dynamic dim); other ranks even when dynamic
            if scale is not None and not (len(scale) == 0 or (len(scale) == 1 and scale[0] in (None, 1))):
                raise ShapeError(f"scale {shape_str(scale)} must be a scalar or have one element",
                                 rule="port.dims", port=4)
        if batch is None:
            return [TensorInfo(None, query.type)]
        return [TensorInfo((*batch, l_dim, ev_dim), query.type)]

    def run(self, inputs, in_infos, out_infos):
        query, key, value = inputs[:3]
        dtype = query.dtype
        ctype = np.float64 if dtype == np.float64 else np.float32
        q, k, v = (a.astype(ctype, copy=False) for a in (query, key, value))
        e = max(q.shape[-1], k.shape[-1])
        if q.shape[-1] != e:
            q = np.broadcast_to(q, (*q.shape[:-1], e))
        if k.shape[-1] != e:
            k = np.broadcast_to(k, (*k.shape[:-1], e))
        s = max(k.shape[-2], v.shape[-2])
        if k.shape[-2] != s:
            k = np.broadcast_to(k, (*k.shape[:-2], s, k.shape[-1]))
        if v.shape[-2] != s:
            v = np.broadcast_to(v, (*v.shape[:-2], s, v.shape[-1]))
        if len(inputs) > 4:
            scale = ctype(np.asarray(inputs[4]).reshape(-1)[0])
        else:
            scale = ctype(1) / np.sqrt(ctype(query.shape[-1]))
        mask = None if self.causal or len(inputs) <= 3 else inputs[3]
        out = self.attend(q, k, v, scale, mask, ctype)
        out_shape = out_infos[0].shape
        if out.shape != tuple(out_shape):
            out = np.broadcast_to(out, out_shape)
        return [np.ascontiguousarray(out.astype(dtype))]

    def attend(self, q, k, v, scale, mask, ctype):
        """softmax((q * scale) k^T + mask) v, a block of query rows at a time: the scores of a block are
        one buffer of at most BLOCK_BYTES (or one row), updated in place."""
        length, source = q.shape[-2], k.shape[-2]
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
        scores_shape = batch + (length, source)
        if mask is not None:
            mask = np.broadcast_to(mask, np.broadcast_shapes(mask.shape, scores_shape))
            batch = mask.shape[:-2]
        out = np.empty(np.broadcast_shapes(batch, v.shape[:-2]) + (length, v.shape[-1]), ctype)
        row_bytes = max(1, int(np.prod(batch, dtype=np.int64))) * source * np.dtype(ctype).itemsize
        rows = max(1, min(length, BLOCK_BYTES // max(row_bytes, 1)))
        self.reserve(rows * row_bytes * 2 + q.size * np.dtype(ctype).itemsize, "attention scores and scaled query")
        k_t = np.swapaxes(k, -1, -2)
        with np.errstate(invalid="ignore", over="ignore"):
            q = np.multiply(q, scale, dtype=ctype)
            for r0 in range(0, length, rows):
                r1 = min(length, r0 + rows)
                scores = matmul(q[..., r0:r1, :], k_t)
                if self.causal:
                    blocked = np.arange(source)[None, :] > np.arange(r0, r1)[:, None]
                    scores = np.where(blocked, ctype(-np.inf), scores)
                elif mask is not None:
                    block = mask[..., r0:r1, :]
                    if block.dtype == np.bool_:
                        scores = np.where(block, scores, ctype(-np.inf))
                    else:
                        scores = np.add(scores, block.astype(ctype, copy=False), dtype=ctype)
                scores -= np.max(scores, axis=-1, keepdims=True)
                np.exp(scores, out=scores)
                scores /= np.sum(scores, axis=-1, keepdims=True)
                out[..., r0:r1, :] = matmul(subnormals.flush(scores, in_place=True, nonnegative=True), v)
        return out


def _dim_merge(a, b):
    """Dimension::broadcast_merge for one dim pair: (ok, merged)."""
    if a is None and b is None:
        return True, None
    if a is None:
        return True, b if b != 1 else None
    if b is None:
        return True, a if a != 1 else None
    if a == b or b == 1:
        return True, a
    if a == 1:
        return True, b
    return False, None
