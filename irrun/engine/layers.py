"""One layer at a time: infer its outputs, run its kernel (its outputs checked against the memory budget
first and against inference after), every error located at the layer. The loader folds with these and a
Model plans and runs with them."""
from __future__ import annotations

import numpy as np

from ..errors import ExecutionError, IRError, ShapeError
from ..ops import TensorInfo
from ..ops.shapes import numel, shape_str
from .graph import Node
from .timeline import CHECKS, KERNEL_TIME

FAILURES = (ValueError, IndexError, TypeError, ArithmeticError, MemoryError)  # a kernel's bug or a bad model


def infer(node: Node, in_infos: list[TensorInfo], path) -> list[TensorInfo]:
    try:
        node.op.check_inputs(len(in_infos))
        out_infos = node.op.infer(in_infos)
        produced = 0 if node.ref.type == "Result" else len(out_infos)
        if len(node.layer.outputs) > produced:
            raise ShapeError(f"the layer declares {len(node.layer.outputs)} output ports; "
                             f"{node.ref.type}-{node.ref.version} has {produced}", rule="port.count")
        return out_infos
    except IRError as exc:
        raise exc.located(file=path, layer=node.ref) from None
    except FAILURES as exc:
        raise ShapeError(f"shape inference failed: {type(exc).__name__}: {exc}", file=path,
                         layer=node.ref) from exc


def execute(node: Node, in_arrays, in_infos, out_infos, budget, path, kernel=None, mark=None,
            out_bytes: int | None = None) -> list[np.ndarray]:
    """Run a layer's kernel after its budget checks; `mark` (timeline.py) is told when each part ends.
    `out_bytes`: the outputs' bytes, when the caller knows them (every shape static): outputs that fit the
    budget all together pass each output's check, which is then skipped."""
    if out_bytes is None or budget.live < 0 or budget.live + out_bytes > budget.limit:
        check_budget(node, out_infos, budget, path)
    if mark:
        mark(CHECKS)
    try:
        outputs = (kernel or node.op.run)(in_arrays, in_infos, out_infos)
        if mark:
            mark(KERNEL_TIME, node)
    except IRError as exc:
        raise exc.located(file=path, layer=node.ref) from None
    except FAILURES as exc:
        raise ExecutionError(f"kernel failed: {type(exc).__name__}: {exc}", file=path, layer=node.ref) from exc
    check_outputs(node, outputs, out_infos, path)
    if mark:
        mark(CHECKS)
    return outputs


def check_budget(node: Node, out_infos, budget, path) -> None:
    """Each output, before it is allocated, against the budget (beside the bytes alive, `budget.live`)."""
    for index, info in enumerate(out_infos):
        if not info.is_static:
            raise ExecutionError(f"output {index} shape {shape_str(info.shape)} is not known at run time",
                                 file=path, layer=node.ref)
        if node.ref.type not in ("Result", "Constant"):
            nbytes = numel(info.shape) * info.type.storage.itemsize
            try:
                budget.check(nbytes, lambda index=index, info=info: f"output {index} of shape {shape_str(info.shape)} "
                                                                f"{info.type}")
            except IRError as exc:
                raise exc.located(file=path, layer=node.ref) from None


def fold(node: Node, in_infos, out_infos, budget, path) -> list[np.ndarray]:
    """Compute a layer whose inputs are all known, every output included."""
    saved, node.op.unused_outputs = node.op.unused_outputs, frozenset()
    try:
        return execute(node, [i.value for i in in_infos], in_infos, out_infos, budget, path)
    finally:
        node.op.unused_outputs = saved


ARRAYS = (np.ndarray, np.generic)  # a kernel may give a 0-d result as a NumPy scalar


def check_outputs(node: Node, outputs, out_infos, path) -> None:
    """What a kernel returned agrees with inference (outputs nothing reads may be None)."""
    for array, info in zip(outputs, out_infos):
        if array.__class__ is not np.ndarray or array.shape != info.shape or array.dtype != info.type.storage:
            break
    else:
        return
    for index, (array, info) in enumerate(zip(outputs, out_infos)):
        if array is None and index in node.op.unused_outputs:
            continue
        if not isinstance(array, ARRAYS) or array.shape != tuple(info.shape) or array.dtype != info.type.storage:
            got = f"{array.dtype}{list(array.shape)}" if isinstance(array, ARRAYS) else \
                "missing" if array is None else type(array).__name__
            raise ExecutionError(
                f"internal error: output {index} is {got}, inference said "
                f"{info.type.storage}{shape_str(info.shape)}", file=path, layer=node.ref)
