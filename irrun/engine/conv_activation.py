"""Plan rewrite: a depthwise GroupConvolution and the activation that alone reads its output become one step that
applies the activation to each block of the convolution's output while the block is still in the cache
(ops/depthwise_direct.py computes the output a block of channels at a time), instead of a pass of its own over
the whole tensor afterwards: MobileNets' ReLU6 (Clamp), MnasNet's ReLU, EfficientNet's Swish, MobileNetV3's
HSwish.

The activation runs its own in-place kernel (`run_into`) on each block: the same elementwise function as the
unfused layer, so the outputs are the same to the bit. Matched only where both steps are static, the data is
f32 or f64 (the convolution's result is then already in the activation's work type), the convolution's output
is read by the activation alone and is no model output, and the activation's other inputs are constants.
Where the convolution takes another kernel than depthwise_direct, the activation runs on the whole result at
the end (as the unfused step would have, in place). The convolution's own output is not kept: runs whose
observer reads layer outputs (dumps, compare, precision) get plans without this rewrite; a profile sees the
fused step as the convolution's layer, labelled with both."""
from __future__ import annotations

import dataclasses

import numpy as np

from .plan import KERNEL, REWRITES, Step

ACTIVATIONS = {("Relu", 1), ("Clamp", 1), ("Swish", 4), ("HSwish", 4), ("HSigmoid", 5), ("Sigmoid", 1)}
WORK_TYPES = (np.dtype(np.float32), np.dtype(np.float64))


def fuse_conv_activations(plan) -> None:
    readers: dict[int, list] = {}
    for step in plan.steps:
        for slot in step.inputs:
            readers.setdefault(slot, []).append(step)
    for conv in list(plan.steps):
        if not (_static(conv) and _ref(conv) == ("GroupConvolution", 1) and _depthwise(conv)):
            continue
        after = readers.get(conv.outputs[0], [])
        if len(after) != 1 or conv.outputs[0] in plan.outputs:
            continue
        act = after[0]
        rest = act.inputs[1:]
        if not (_static(act) and _ref(act) in ACTIVATIONS and act.inputs[0] == conv.outputs[0]
                and conv.outputs[0] not in rest and all(plan.initial[slot] is not None for slot in rest)
                and act.in_infos[0].type.storage in WORK_TYPES and conv.out_infos[0].type == act.in_infos[0].type
                and act.node.op.can_run_into(act.in_infos, act.out_infos)):
            continue
        op = FusedConvActivation(conv, act, [plan.initial[slot] for slot in rest])
        fused = Step(KERNEL, dataclasses.replace(conv.node, op=op), conv.inputs, act.outputs, conv.in_infos,
                     act.out_infos, kernel=op.run, label=f"{conv.name} + {act.name} (activation per block)")
        plan.replace([conv, act], fused)


def _static(step) -> bool:
    return step.kind == KERNEL and not step.dynamic and step.state is None


def _ref(step):
    return step.node.ref.type, step.node.ref.version


def _depthwise(step) -> bool:
    """One input channel per group and at most 4 outputs: conv_forward's depthwise kernels."""
    weights = step.in_infos[1].shape
    return weights is not None and len(weights) >= 4 and weights[2] == 1 and weights[1] <= 4


class FusedConvActivation:
    """The fused step's op (its node is the convolution's with this op)."""

    unused_outputs = frozenset()

    def __init__(self, conv, act, constants):
        self.conv, self.conv_out_infos = conv.node.op, conv.out_infos
        self.act, self.act_infos, self.constants = act.node.op, (act.in_infos, act.out_infos), constants

    def run(self, inputs, in_infos, out_infos):
        return self.conv.run(inputs, in_infos, self.conv_out_infos, epilogue=self._activation)

    def _activation(self, block):
        self.act.run_into([block, *self.constants], *self.act_infos, block)


fuse_conv_activations.reusable = True  # (a plan holding a fused step gets no template: replan.make_template)
fuse_conv_activations.hides_layers = True
REWRITES.append(fuse_conv_activations)
