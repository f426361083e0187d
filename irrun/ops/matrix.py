"""MatMul-1 and Einsum-7.

MatMul-1: transpose_a/transpose_b on the two innermost axes, 1-D operands unsqueezed (and the added axis
removed from the result), batch axes broadcast numpy-style. Floats narrower than f32 compute in f32;
integers compute in int64 and wrap to the output type."""
from __future__ import annotations

import math

import numpy as np

from ..errors import ExecutionError, ShapeError
from .attrs import Bool, Str
from .blas import matmul
from .broadcasting import broadcast_dim, numpy_shape
from .registry import Op, TensorInfo, op
from .shape_ops import merge_dim
from .shapes import shape_str


def _batch_dim(a, b, index):
    ok, dim = broadcast_dim(a, b)
    if not ok:
        raise ShapeError(f"batch dimension {index}: {a} and {b} do not broadcast", rule="shape.broadcast")
    return dim


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
        out = [_batch_dim(x, y, i) for i, (x, y) in enumerate(zip(sa[:-2], sb[:-2]))]
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
        rows = _rows(a) if a.ndim > 2 and b.ndim == 2 else None
        if rows is not None:
            # a stack of rows times one matrix (the weights): one BLAS call for all the rows
            result = matmul(rows, b).reshape(*a.shape[:-1], b.shape[-1])
        else:
            result = matmul(a, b)
        with np.errstate(over="ignore", invalid="ignore"):
            return [np.asarray(result).astype(dtype, copy=False).reshape(out_infos[0].shape)]


def _rows(a):
    """a's leading axes merged into one, [rows, K], when that is a view of a's memory (C-contiguous a, or rows
    read through strides such as a channels-last view of channels-first data, irrun/engine/mvn_transposes.py);
    else None."""
    dims = [(n, stride) for n, stride in zip(a.shape[:-1], a.strides[:-1]) if n != 1]
    if any(outer != inner * n for (_, outer), (n, inner) in zip(dims, dims[1:])):
        return None
    return a.reshape(-1, a.shape[-1])


# ---------------------------------------------------------------- Einsum

ELLIPSIS = "..."


def _subscript_labels(subscript, what):
    """A subscript's labels: ASCII letters and at most one "..."; raises ShapeError otherwise."""
    labels, i = [], 0
    while i < len(subscript):
        if subscript.startswith(ELLIPSIS, i) and ELLIPSIS not in labels:
            labels.append(ELLIPSIS)
            i += 3
        elif subscript[i].isascii() and subscript[i].isalpha():
            labels.append(subscript[i])
            i += 1
        else:
            raise ShapeError(f"{what} subscript {subscript!r} must hold only letters and at most one ellipsis",
                             rule="attr.value")
    return labels


def parse_einsum(equation):
    """OpenVINO's reading of an equation from IR (white space is not removed: it is an error): input label
    lists and the output label list. Without "->" the output is every label occurrence not found in another input, sorted (ASCII), after "..." when any
    input has one."""
    head, arrow, tail = equation.partition("->")
    inputs = [_subscript_labels(part, "input") for part in head.split(",")]
    if arrow:
        return inputs, _subscript_labels(tail, "output")
    output = []
    for k, labels in enumerate(inputs):
        others = {label for j, other in enumerate(inputs) if j != k for label in other}
        output += [label for label in labels if label != ELLIPSIS and label not in others]
    output.sort()
    if any(ELLIPSIS in labels for labels in inputs):
        output.insert(0, ELLIPSIS)
    return inputs, output


def contract_pair(operands, terms, out_term):
    """np.einsum(f"{terms[0]},{terms[1]}->{out_term}") of two operands of full (broadcast) shape, no label
    repeated within a term, as one batched matrix product (as the CPU plugin decomposes it): labels of one
    operand only and not in the output summed first, then [batch, kept by a, summed] @ [batch, summed, kept
    by b], then the output's order."""
    (a, b), (ta, tb) = operands, terms
    a, ta = _sum_alone(a, ta, tb + out_term)
    b, tb = _sum_alone(b, tb, ta + out_term)
    dims = dict(zip(ta, a.shape)) | dict(zip(tb, b.shape))
    batch = [label for label in out_term if label in ta and label in tb]
    summed = [label for label in ta if label in tb and label not in out_term]
    left = [label for label in ta if label not in tb]
    right = [label for label in tb if label not in ta]
    size = lambda labels: math.prod(dims[label] for label in labels)  # noqa: E731
    a = a.transpose([ta.index(label) for label in batch + left + summed])
    b = b.transpose([tb.index(label) for label in batch + summed + right])
    product = matmul(a.reshape(size(batch), size(left), size(summed)),
                     b.reshape(size(batch), size(summed), size(right)))
    order = batch + left + right
    product = product.reshape([dims[label] for label in order])
    return product.transpose([order.index(label) for label in out_term])


def _sum_alone(x, term, others):
    """x with the labels of `term` found nowhere in `others` summed out."""
    alone = [axis for axis, label in enumerate(term) if label not in others]
    if not alone:
        return x, term
    return x.sum(axis=tuple(alone)), "".join(label for label in term if label in others)


@op("Einsum", 7)
class Einsum7(Op):
    equation = Str()
    num_inputs = (1, 1 << 30)

    def _parse(self, count):
        inputs, output = parse_einsum(self.equation)
        if len(inputs) != count:
            raise ShapeError(f"equation {self.equation!r} has {len(inputs)} input subscripts for {count} inputs",
                             rule="port.count")
        return inputs, output

    def _label_dims(self, shapes, inputs):
        """label -> dim (or a tuple of dims for "..."), merged over the inputs; validates OpenVINO's rules."""
        dims = {}
        for port, (shape, labels) in enumerate(zip(shapes, inputs)):
            if shape is None:
                if ELLIPSIS in labels:
                    raise ShapeError("an input of dynamic rank must not have an ellipsis in its subscript",
                                     rule="port.rank", port=port)
                for label in labels:
                    dims.setdefault(label, None)
                continue
            if len(shape) < len(labels) - (ELLIPSIS in labels) or (ELLIPSIS not in labels and len(shape) > len(labels)):
                raise ShapeError(f"input rank {len(shape)} ({shape_str(shape)}) does not fit the "
                                 f"{len(labels)} labels of subscript {''.join(labels)!r}", rule="port.rank", port=port)
            own = {}
            for label, dim in zip(labels, self._split(shape, labels)):
                if label == ELLIPSIS:
                    merged, ok = (dim, True) if label not in dims else numpy_shape(dims[label], dim)
                    if not ok:
                        raise ShapeError(f"ellipsis dims {shape_str(dim)} do not broadcast with "
                                         f"{shape_str(dims[label])}", rule="shape.broadcast", port=port)
                    dims[label] = merged
                    continue
                if label in own and merge_dim(own[label], dim) is False:
                    raise ShapeError(f"label {label!r} repeats in one input with dims {own[label]} and {dim}",
                                     rule="port.dims", port=port)
                own[label] = dim if own.get(label) is None else own[label]
            for label, dim in own.items():
                ok, merged = (True, dim) if label not in dims else broadcast_dim(dims[label], dim)
                if not ok:
                    raise ShapeError(f"label {label!r} has dims {dims[label]} and {dim} that do not broadcast",
                                     rule="shape.broadcast", port=port)
                dims[label] = merged
        return dims

    @staticmethod
    def _split(shape, labels):
        """Each label's dim (a tuple of dims for "...")."""
        out, pos = [], 0
        extra = len(shape) - (len(labels) - (ELLIPSIS in labels))
        for label in labels:
            if label == ELLIPSIS:
                out.append(tuple(shape[pos:pos + extra]))
                pos += extra
            else:
                out.append(shape[pos])
                pos += 1
        return out

    def infer(self, inputs):
        self.check_inputs(len(inputs))
        first = inputs[0].type
        if first.storage is None or not (first.is_float or first.is_integer):
            raise ShapeError(f"element type {first} is not numeric", rule="port.type", port=0)
        for port, info in enumerate(inputs[1:], 1):
            if info.type != first:
                raise ShapeError(f"element types {first} and {info.type} differ", rule="port.type", port=port)
        subscripts, output = self._parse(len(inputs))
        dims = self._label_dims([info.shape for info in inputs], subscripts)
        shape = []
        for label in output:
            if label == ELLIPSIS:
                shape += list(dims.get(ELLIPSIS, ()))
            elif label not in dims:
                raise ShapeError(f"output label {label!r} is in no input subscript", rule="attr.value")
            else:
                shape.append(dims[label])
        return [TensorInfo(tuple(shape), first)]

    def run(self, inputs, in_infos, out_infos):
        subscripts, output = self._parse(len(inputs))
        letters = [label for label in output if label != ELLIPSIS]
        if len(set(letters)) != len(letters):  # OpenVINO infers a shape but no plugin runs it
            raise ExecutionError(f"output subscript {''.join(output)!r} repeats a label", rule="attr.value")
        dims = self._label_dims([x.shape for x in inputs], subscripts)
        ellipsis = dims.get(ELLIPSIS, ())
        used = {label for labels in subscripts for label in labels}
        spare = [c for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ" if c not in used]
        if len(ellipsis) > len(spare):
            raise ExecutionError("too many labels for one einsum", rule="attr.value")
        fresh = spare[:len(ellipsis)]
        dtype = out_infos[0].type.storage
        # floats as the CPU plugin computes them (f32 MatMul/ReduceSum; f64 stays f64); integers widened
        compute = (np.result_type(dtype, np.float32) if dtype.kind == "f" else
                   np.uint64 if dtype.kind == "u" else np.int64)
        operands, terms = [], []
        for x, labels in zip(inputs, subscripts):
            term, target = "", []
            for label, dim in zip(labels, self._split(x.shape, labels)):
                if label == ELLIPSIS:
                    names = fresh[len(fresh) - len(dim):] if dim else []
                    term += "".join(names)
                    target += [ellipsis[len(ellipsis) - len(dim) + i] for i in range(len(dim))]
                else:
                    term += label
                    target.append(dims[label])
            operands.append(np.broadcast_to(x.astype(compute, copy=False), tuple(target)))
            terms.append(term)
        out_term = "".join("".join(fresh) if label == ELLIPSIS else label for label in output)
        with np.errstate(over="ignore", invalid="ignore"):
            if len(operands) == 2 and dtype.kind == "f" and all(len(set(t)) == len(t) for t in terms):
                result = contract_pair(operands, terms, out_term)
            else:
                result = np.einsum(",".join(terms) + "->" + out_term, *operands, optimize=len(operands) > 2)
            return [np.asarray(result).astype(dtype, copy=False).reshape(out_infos[0].shape)]
