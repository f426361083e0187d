"""Plan rewrite: a Transpose read only by an MVN-6 over its output's last axis (a LayerNorm of channels-last data,
as PyTorch exports ConvNeXt's) and the Transpose that alone reads that MVN's output become one step: MVN over the
same axis of the first Transpose's input, in that input's layout, transposed once at the end, and not at all
when the second Transpose undoes the first (irrun/ops/mvn_axis.py says why that is faster). When a MatMul
alone reads the MVN's output (ConvNeXt-tiny's LayerNorm -> Linear), the Transpose and the MVN become one step
whose output is the transposed view of the MVN in the input's layout: the MatMul reads its rows through strides
(the BLAS's transposed operand, ops/matrix.py), so no transposing copy is made at all. Elsewhere the layers stay
(a transposing copy at the end of the fused step costs as much as the Transpose's; measured on ConvNeXt-tiny).

Matched only where every step is static, the orders and axes are constants, the moved axis is not already last,
and the data is f16, f32 or f64. The Transposes' and the MVN's own outputs are not computed: runs whose observer
reads layer outputs (dumps, compare, precision) get plans without this rewrite; a profile sees the fused step as
its last layer."""
from __future__ import annotations

import dataclasses

import numpy as np

from ..ops.mvn_axis import transposed_mvn
from .plan import KERNEL, REWRITES, Step

FLOATS = (np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64))


def fuse_mvn_transposes(plan) -> None:
    producers = {slot: step for step in plan.steps for slot in step.outputs}
    readers: dict[int, list] = {}
    for step in plan.steps:
        for slot in step.inputs:
            readers.setdefault(slot, []).append(step)
    for step in list(plan.steps):
        if not (_is(step, "MVN", 6) and step.in_infos[0].shape is not None):
            continue
        axes = plan.initial[step.inputs[1]]
        first = producers.get(step.inputs[0])
        order = _order(plan, first) if len(readers.get(step.inputs[0], [])) == 1 else None
        rank = len(step.in_infos[0].shape)
        if axes is None or order is None or first.in_infos[0].type.storage not in FLOATS or \
                np.asarray(axes).reshape(-1).tolist() not in ([-1], [rank - 1]) or order[-1] == rank - 1:
            continue
        after = readers.get(step.outputs[0], [])
        back = _order(plan, after[0]) if len(after) == 1 else None
        if back is not None:
            fused, out_order, view = [first, step, after[0]], [order[axis] for axis in back], False
        elif len(after) == 1 and _rows_reader(after[0], step.outputs[0]):
            fused, out_order, view = [first, step], order, True
        else:
            continue
        last = fused[-1]
        op = FusedMVN(step.node.op, order[-1], out_order, view)
        fused_step = Step(KERNEL, dataclasses.replace(last.node, op=op), (first.inputs[0],), last.outputs,
                          [first.in_infos[0]], last.out_infos, kernel=op.run,
                          label=" + ".join(s.name for s in fused) + " (MVN in the first input's layout)")
        plan.replace(fused, fused_step)
        for slot in fused_step.outputs:  # its Transpose back is gone: an MVN reading that (LayerNorms in a row) stays
            del producers[slot]


def _is(step, kind: str, version: int) -> bool:
    return step is not None and step.kind == KERNEL and not step.dynamic and step.state is None and \
        step.node.ref.type == kind and step.node.ref.version == version


def _rows_reader(step, slot) -> bool:
    """A MatMul reading `slot` as its data (port 0, rank 3 or more, not transposed) times a 2-D matrix: it computes
    on the rows of a strided view without copying them (MatMul-1's run)."""
    return _is(step, "MatMul", 1) and step.inputs[0] == slot and step.inputs.count(slot) == 1 and \
        not step.node.op.transpose_a and len(step.in_infos[0].shape) >= 3 and len(step.in_infos[1].shape) == 2


def _order(plan, step) -> list | None:
    """A static Transpose's constant order."""
    if not _is(step, "Transpose", 1):
        return None
    order, rank = plan.initial[step.inputs[1]], len(step.out_infos[0].shape)
    if order is None:
        return None
    order = np.asarray(order).reshape(-1).astype(np.int64).tolist()
    return order or list(range(rank))[::-1]


class FusedMVN:
    """The fused step's op (its node is the last layer's with this op): the kernel, and when the result keeps the
    input's layout or is a view of it, the same written into the input's buffer (in-place execution,
    irrun/engine/inplace.py)."""

    unused_outputs = frozenset()

    def __init__(self, mvn_op, axis: int, order: list, view: bool):
        self.axis, self.order, self.view = axis, order, view
        self.attrs = (mvn_op.normalize_variance, mvn_op.eps, mvn_op.eps_mode == "inside_sqrt")

    def run(self, inputs, in_infos, out_infos):
        return [transposed_mvn(inputs[0], self.axis, self.order, *self.attrs, view=self.view)]

    def can_run_into(self, in_infos, out_infos, port=0):
        in_place = self.view or self.order == sorted(self.order)
        return in_place and in_infos[0].type.name in ("f32", "f64") and \
            in_infos[0].type.storage == out_infos[0].type.storage

    def run_into(self, inputs, in_infos, out_infos, out):
        return [transposed_mvn(inputs[0], self.axis, self.order, *self.attrs, out=out, view=self.view)]


# A fused step replaces three steps: irrun/engine/replan.py makes no template of a plan holding one, so such a
# plan is never reused for other shapes; plans without one stay reusable.
fuse_mvn_transposes.reusable = True
fuse_mvn_transposes.hides_layers = True
REWRITES.append(fuse_mvn_transposes)
