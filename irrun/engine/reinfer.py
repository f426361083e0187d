"""Run-time inference of a dynamic step, reused while its input shapes repeat.

A step is dynamic when its output shapes were unknown while planning. Many are so only because an input's shape
was (a Gather, GatherND, ShapeOf or Convert after a NonZero): their output shapes follow from the input shapes
alone, not from values computed at run time. The first time such a step runs, its inference is made twice: with
the input values, as always, and with only the values the plan knew (its constants). When the second gives the
same static shapes and types, the step is `shape_only`: inference without those values holds for any of them,
exactly as for a static step of a plan. From then on a run whose input shapes equal the last run's takes the
last output infos (without values) instead of inferring again; any other run infers with the values and keeps
that result for the next. A step whose output shapes need values (NonZero, a Reshape to a computed shape, TopK
with a computed K) is inferred at every run, as is a step reading or writing a variable. A reused inference that
gives only empty outputs needs no kernel at all (`known_empty`).
"""
from __future__ import annotations

import numpy as np

from ..errors import IRError
from ..ops import TensorInfo
from . import layers
from .plan import Step, all_static

NEVER = False  # Step.inferred of a step whose output shapes depend on run-time values


def infer_at_run(model, step: Step, in_arrays: list, in_infos: list) -> list[TensorInfo]:
    """`step`'s output infos for these inputs (`in_infos`: their shapes, types and values)."""
    last = step.inferred
    if last is NEVER or step.state is not None:
        return model._infer(step.node, in_infos)
    shapes = tuple([None if array is None else array.shape for array in in_arrays])
    if last is not None and last[0] == shapes:
        return last[1]
    out_infos = model._infer(step.node, in_infos)
    if last is None and not _shape_only(model, step, in_infos, out_infos):
        step.inferred = NEVER
    else:
        step.inferred = shapes, [TensorInfo(info.shape, info.type) for info in out_infos]
    return out_infos


def known_empty(step: Step, in_arrays: list) -> list | None:
    """Empty arrays for a dynamic step whose last inference, for input shapes equal to these, gave only empty
    outputs (an MoE expert no token was routed to): nothing to compute, so its kernel need not run; else None."""
    last = step.inferred
    if not last:
        return None
    shapes, out_infos = last
    if not out_infos or not all(0 in info.shape for info in out_infos):
        return None
    if tuple([None if array is None else array.shape for array in in_arrays]) != shapes:
        return None
    return [np.empty(info.shape, info.type.storage) for info in out_infos]


def _shape_only(model, step: Step, in_infos: list, out_infos: list) -> bool:
    """Inference with only the values the plan knew gives the same static shapes and types."""
    planned = [TensorInfo(info.shape, info.type, plan_info.value) for info, plan_info in zip(in_infos, step.in_infos)]
    try:
        without = layers.infer(step.node, planned, model.path)
    except IRError:
        return False
    return all_static(without) and len(without) == len(out_infos) and all(
        a.shape == b.shape and a.type == b.type for a, b in zip(without, out_infos))
