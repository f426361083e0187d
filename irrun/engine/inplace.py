"""In-place execution: an elementwise step whose input dies at that step writes its result into that
input's buffer instead of allocating a new one.

Two halves. While planning, `mark(plan, kept)` (called by `Plan.finish` once the freeing points are known)
flags the candidate steps: kernel steps with static shapes that run their op's own `run`, whose op has
`run_into(inputs, in_infos, out_infos, out)` and says `can_run_into(in_infos, out_infos, port)` (output 0
can take input `port`'s buffer: same shape and storage dtype) for one of its `inplace_ports` (input 0
unless the op says more, e.g. both operands of Add), where that input is freed by the step, read once by
it, and is neither a model input, a constant nor a model output. At run time `run_step` checks that the
array in that slot is the run's alone: nothing but the run's slot list refers to it (not the caller, not a
constant, not a second slot holding the same array, not a view of it), it owns its memory or is the only
view of an array that does, and it is writeable and C-contiguous. Otherwise the step runs as usual. Only
the fast loop of static plans without observers runs steps in place: observers see every layer's output
as an array of its own.
"""
from __future__ import annotations

import sys

import numpy as np


def _references(values: list, slot: int) -> int:
    return sys.getrefcount(values[slot])


def _base_references(array: np.ndarray) -> int:
    return sys.getrefcount(array.base)


_ONLY_IN_LIST = _references([np.empty(0)], 0)  # the count for an array that only a list refers to
_ONLY_VIEW = _base_references(np.empty(1)[:])  # the count for a base that only one view refers to


def owned_by_run(values: list, slot: int) -> bool:
    """The array in values[slot] can be overwritten: no one else can see its memory."""
    if _references(values, slot) != _ONLY_IN_LIST:
        return False
    array = values[slot]
    if not (array.flags.writeable and array.flags.c_contiguous):
        return False
    if array.base is None:
        return True
    # a view (e.g. a Reshape's output) of an array that owns its memory and that nothing else refers to
    return isinstance(array.base, np.ndarray) and array.base.base is None and \
        _base_references(array) == _ONLY_VIEW


ENABLED = True  # False: plans made from now on run no step in place (to compare with)


def mark(plan, kept: set, like=None) -> None:
    """Flag the plan's steps that may write output 0 into input 0 (see the module docstring). `like`: a plan
    of the same steps, slots and freeing points (Plan.finish checked it), whose flags hold wherever a step's
    infos are the very same objects."""
    if not ENABLED:
        for step in plan.steps:
            step.inplace = False
        return
    caller_owned = {slot for step in plan.steps if step.kind == "input" for slot in step.outputs}
    for index, step in enumerate(plan.steps):
        if like is not None:
            old = like.steps[index]
            if old.in_infos is step.in_infos and old.out_infos is step.out_infos and old.dynamic == step.dynamic:
                step.inplace, step.inplace_port = old.inplace, old.inplace_port
                continue
        step.inplace = False
        if step.kind != "kernel" or step.dynamic or step.state is not None or not step.inputs:
            continue
        op = step.node.op
        if not hasattr(op, "run_into") or step.kernel != op.run:  # (a fused step runs a kernel of its own)
            continue
        for port in getattr(op, "inplace_ports", (0,)):
            slot = step.inputs[port]
            if slot in step.frees and slot not in kept and slot not in caller_owned \
                    and step.inputs.count(slot) == 1 and plan.initial[slot] is None \
                    and op.can_run_into(step.in_infos, step.out_infos, port):
                step.inplace, step.inplace_port = True, port
                break


def run_step(step, values: list) -> list:
    """Run an in-place candidate: into its input's buffer if the run owns it, else as usual."""
    slot = step.inputs[step.inplace_port]
    if owned_by_run(values, slot):
        return step.node.op.run_into([values[s] for s in step.inputs], step.in_infos, step.out_infos,
                                     values[slot])
    return step.kernel([values[s] for s in step.inputs], step.in_infos, step.out_infos)
