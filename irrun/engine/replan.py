"""A new plan made from a cached one whose signature differs only in some dims (an LLM's KV length).

Building a plan infers every layer; a decode step of an LLM changes the shapes of only the few layers that
see the KV cache. `replan` walks a cached plan's steps as they were before `Plan.finish` (its `template`:
steps, bound kernels, slots, the rewrites' fused steps) with the new input and state shapes:

- a step whose inputs' infos equal those the cached plan had (shape, type and any known value) keeps its
  outputs' infos: inference is a function of those, so running it again would give the same;
- any other step is inferred again, exactly as `Model._build_plan` infers it: a ReadValue from the new
  state, shape arithmetic computed while planning (ShapeOf of the KV cache -> Gather -> Concat) computed
  again with its new values;
- a dynamic step that keeps its input infos keeps what the base plan's step learned at run time (reinfer.py);
- then freeing points, memory figures and the budget check of every static step are computed by
  `Plan.finish` as for a new plan.

Whenever the new shapes would change the plan's structure (a step computed while planning would have to
run, or the other way round), `replan` gives up and the caller builds the plan from scratch. Plans are
reused only when every rewrite that made the cached plan declares `reusable = True` (its fused steps compute
what their layer computes from the same input slots, whatever the shapes), and only between signatures with
the same ranks and the same set variables (so the same pruned init subgraphs).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ops.registry import TensorInfo
from .plan import CONSTANT, INPUT, KERNEL, RESULT, REWRITES, Plan, Step, all_static, any_value


def reuse_key(signature: tuple, state: dict) -> tuple:
    """Plans with equal keys have the same structure unless a shape-dependent choice differs."""
    ranks = tuple(None if shape is None else len(shape) for shape in signature)
    return ranks, tuple(sorted((var_id, len(info.shape), info.type.name) for var_id, info in state.items()))


def rewrites_reusable() -> bool:
    return all(getattr(rewrite, "reusable", False) for rewrite in REWRITES)


def same_info(a: TensorInfo, b: TensorInfo) -> bool:
    if a is b:
        return True
    if a.shape != b.shape or a.type != b.type:
        return False
    if a.value is None or b.value is None:
        return a.value is None and b.value is None
    return a.value is b.value or (a.value.dtype == b.value.dtype and a.value.shape == b.value.shape
                                  and np.array_equal(a.value, b.value, equal_nan=True))


def unchanged(slots, infos: list, built: list) -> bool:
    """Every one of these slots still holds the template's info object."""
    for slot in slots:
        if infos[slot] is not built[slot]:
            return False
    return True


def same_infos(new: list, old: list) -> bool:
    for a, b in zip(new, old):
        if not same_info(a, b):
            return False
    return len(new) == len(old)


@dataclass(eq=False)
class Template:
    """A plan as built, for `replan`: every step before pruning and rewrites (pruned init subgraphs are
    inferred too: a ReadValue's output info may depend on them), each with (kernel, label) of the step the
    plan runs in its place (None: pruned), and the plan's slot infos and initial values before `finish`."""

    entries: list
    infos: list
    initial: list
    slot_of: dict


def replan(model, base: Plan, signature: tuple, state: dict) -> Plan | None:
    """The plan for `signature` and `state` (variable id -> TensorInfo of the variables set) made from
    `base`'s template, or None when it needs building from scratch. Raises what building it would raise."""
    template: Template = base.template
    built = template.infos  # a slot's info is the very object of the template while it is unchanged
    infos = list(built)
    initial = list(template.initial)
    shapes = dict(zip(model.graph.parameters, signature))
    slot_of = template.slot_of
    steps: list[Step] = []
    append = steps.append
    model.budget.live = 0
    learned = {id(step.node): (step.in_infos, step.inferred) for step in base.steps if step.inferred is not None}
    for old, final in template.entries:
        kind = old.kind
        if kind == CONSTANT:  # computed at load (no in_infos: the same in every plan) or while planning
            if not old.in_infos:
                append(old)
                continue
            node = old.node
            sources = [slot_of[source] for source in node.inputs]
            if unchanged(sources, infos, built):
                append(Step(CONSTANT, node, (), old.outputs, old.in_infos, old.out_infos))
                continue
            in_infos = [infos[slot] for slot in sources]
            out_infos = model._infer(node, in_infos)
            values = model._plan_values(node, in_infos, out_infos)
            if values is None:
                return None
            out_infos = [TensorInfo(i.shape, i.type, v) for i, v in zip(out_infos, values)]
            if not same_infos(out_infos, old.out_infos):
                for slot, info, value in zip(old.outputs, out_infos, values):
                    infos[slot], initial[slot] = info, value
            append(Step(CONSTANT, node, (), old.outputs, in_infos, out_infos))
            continue
        node = old.node
        if kind == INPUT:
            info = TensorInfo(shapes[node.id], old.out_infos[0].type)
            if not same_info(info, old.out_infos[0]):
                infos[old.outputs[0]] = info
            append(Step(INPUT, node, (), old.outputs, out_infos=[infos[old.outputs[0]]]))
            continue
        if kind == RESULT:
            in_infos = [infos[slot] for slot in old.inputs]
            append(Step(RESULT, node, old.inputs, old.inputs, in_infos, in_infos))
            continue
        inferred = None  # a dynamic step's memo of run-time inference (engine/reinfer.py): the base plan's, kept
        if old.state == "read":  # inferred from its init input even when the plan does not compute it
            full = [infos[slot_of[source]] for source in node.inputs]
            model._infer(node, full)
            in_infos = [infos[slot] for slot in old.inputs]
            out_infos = [model._read_info(node, full, state.get(old.variable))]
            dynamic = not all_static(in_infos + out_infos)
        elif unchanged(old.inputs, infos, built):
            in_infos, out_infos, dynamic = old.in_infos, old.out_infos, old.dynamic
            known, memo = learned.get(id(node), (None, None))
            if known is in_infos:  # while the step's input infos are the very ones the memo was learned with
                inferred = memo
        else:
            in_infos = [infos[slot] for slot in old.inputs]
            out_infos = model._infer(node, in_infos)
            if old.state is None:
                if model._plan_values(node, in_infos, out_infos) is not None:
                    return None
                if any_value(out_infos):
                    out_infos = [TensorInfo(i.shape, i.type) for i in out_infos]
            dynamic = not (all_static(in_infos) and all_static(out_infos))
        if out_infos is not old.out_infos:
            if same_infos(out_infos, old.out_infos):  # readers see the template's objects: unchanged
                out_infos = old.out_infos
            else:
                for slot, info in zip(old.outputs, out_infos):
                    infos[slot] = info
        if final is not None:  # (kernel, label) of the step the plan runs
            append(Step(KERNEL, node, old.inputs, old.outputs, in_infos, out_infos, kernel=final[0],
                        dynamic=dynamic, state=old.state, variable=old.variable, label=final[1],
                        inferred=inferred if dynamic else None))
    plan = Plan(signature, steps, base.slots, initial, base.inputs, base.outputs, infos,
                state={k: i.shape for k, i in sorted(state.items())}, model=model)
    plan.slot_of, plan.template, plan.reused = slot_of, template, True
    return plan


def make_template(built: list[Step], plan: Plan) -> Template | None:
    """`plan`'s template, taken before `Plan.finish`; None when a rewrite is not reusable or the plan's steps
    do not map one to one onto built steps of the same layer, input and output slots."""
    if not rewrites_reusable():
        return None
    built_by_node = {id(step.node): step for step in built}
    final = {}
    for step in plan.steps:
        origin = built_by_node.get(id(step.node))
        if origin is None or origin.kind != step.kind or origin.outputs != step.outputs or \
                origin.inputs != step.inputs or id(step.node) in final:
            return None
        final[id(step.node)] = (step.kernel, step.label)
    entries = [(step, final.get(id(step.node)) if step.kind == KERNEL else None) for step in built]
    return Template(entries, list(plan.infos), list(plan.initial), plan.slot_of)
