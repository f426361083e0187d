"""Plan rewrite: a MatMul or Einsum reading a Softmax output reads it with its subnormal values as zeros
(irrun/ops/subnormals.py says why and by how little that changes the product)."""
from __future__ import annotations

from ..ops import subnormals
from .plan import KERNEL, REWRITES, Step

SOURCES = ("Softmax",)
PRODUCTS = ("MatMul", "Einsum")


def flush_softmax_operands(plan) -> None:
    producers = {slot: step for step in plan.steps for slot in step.outputs}
    for step in list(plan.steps):
        if step.kind != KERNEL or step.node.ref.type not in PRODUCTS:
            continue
        ports = [port for port, slot in enumerate(step.inputs)
                 if slot in producers and producers[slot].kind == KERNEL and producers[slot].node.ref.type in SOURCES]
        if ports:
            plan.replace([step], Step(KERNEL, step.node, step.inputs, step.outputs, step.in_infos, step.out_infos,
                                      kernel=_flushing(step.kernel, ports), dynamic=step.dynamic,
                                      label=f"{step.name} (softmax's subnormals as zeros)"))


def _flushing(kernel, ports):
    def run(arrays, in_infos, out_infos):
        arrays = list(arrays)
        for port in ports:
            arrays[port] = subnormals.flush(arrays[port], nonnegative=True)
        return kernel(arrays, in_infos, out_infos)
    return run


flush_softmax_operands.reusable = True  # one step of the same layer and slots for one, whatever the shapes
REWRITES.append(flush_softmax_operands)
