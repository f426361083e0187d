"""An execution plan: the work of one run that does not depend on input values, done once per input shape.

A plan is data. Each live layer becomes a `Step` that reads and writes numbered slots (the run keeps the
tensors in a list indexed by slot); a kernel step carries its bound kernel and the shapes and types
inference gave, and says which slots die after it. `irrun.engine.runtime.Model` builds plans (one per distinct
signature of input and state shapes, cached) and runs them; `print(model.plan(shapes))` shows one.

Steps whose output shapes depend on input values (NonZero, a Reshape to a computed shape, a Loop stopped by
its condition) or on other such steps are `dynamic`: their shapes are inferred again at run time, with the
input values, as they always were.

Rewrites: each function in `REWRITES` gets the plan after its steps are built and before its freeing
points and memory figures are computed, and may replace steps (`Plan.replace`), e.g. a decompression
chain feeding a MatMul by one fused step. That is the one place where patterns are fused.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..ops.budget import format_bytes
from .inplace import mark as mark_inplace
from ..ops.registry import TensorInfo
from ..ops.shapes import numel, shape_str

INPUT, CONSTANT, KERNEL, RESULT = "input", "constant", "kernel", "result"


@dataclass(eq=False, slots=True)
class Step:
    """One layer's work. `kernel(arrays, in_infos, out_infos) -> arrays` for kernel steps; a state step
    (`state` set: "read" or "write") gets the run's variables as a fourth argument."""

    kind: str
    node: object                                # irrun.engine.graph.Node: names the layer in errors and observers
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    in_infos: list[TensorInfo] = field(default_factory=list)
    out_infos: list[TensorInfo] = field(default_factory=list)
    kernel: Callable | None = None
    dynamic: bool = False       # shapes are inferred again at run time from the input values
    state: str | None = None    # "read" / "write": reads or writes a variable of the run
    variable: str | None = None  # that variable's id
    frees: tuple[int, ...] = ()  # slots nothing reads after this step
    out_bytes: int = 0          # static steps: bytes of the outputs allocated
    live: int = 0               # static plans: bytes of tensors alive when this step allocates
    expect: tuple = ()          # static steps: (shape, dtype) per output, to check what the kernel returns
    label: str = ""             # what the step computes, for printing (defaults to the layer)
    inplace: bool = False       # may write output 0 into the buffer of input `inplace_port` (irrun/engine/inplace.py)
    inplace_port: int = 0
    inferred: object = None     # dynamic steps: (input shapes, output infos) to reuse, or False (engine/reinfer.py)

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        ref = self.node.ref
        return f"{ref.type}-{ref.version} {ref.name!r}" if ref.version is not None else f"{ref.type} {ref.name!r}"


@dataclass(eq=False)
class Plan:
    """Steps in execution order over `slots` numbered tensors. `initial[slot]` holds constants (computed at
    load or while planning); `inputs` gives the slot of each model input (None: dead input), `outputs` the
    slot of each model output."""

    signature: tuple
    steps: list[Step]
    slots: int
    initial: list
    inputs: tuple
    outputs: tuple
    infos: list                 # slot -> TensorInfo as planned (dynamic dims stay None)
    state: dict = field(default_factory=dict)  # variable id -> shape, for the variables set
    static: bool = True         # no dynamic step: the memory figures below are exact
    held: int = 0               # bytes alive throughout the run (the state's values)
    peak: int = 0
    kernels: list[Step] = field(default_factory=list)  # the kernel steps, what a run executes
    moving: list[Step] = field(default_factory=list)   # the steps a run without observer goes through
    model: object = None        # the Model the plan belongs to, for rewrites that need its state
    slot_of: dict = field(default_factory=dict)  # (layer id, output) -> slot
    template: list | None = None  # what irrun/engine/replan.py needs to make plans for other shapes from this one
    reuse_key: tuple = ()       # plans with the same key may be made from this one
    reused: bool = False        # made from another plan by irrun/engine/replan.py
    kept: set = field(default_factory=set)     # slots never freed (model outputs, constants), set by `finish`
    sizes: list = field(default_factory=list)  # slot -> bytes as planned (0: not known), set by `finish`

    def producer(self, slot: int) -> Step | None:
        for step in self.steps:
            if slot in step.outputs:
                return step
        return None

    def readers(self, slot: int) -> list[Step]:
        return [step for step in self.steps if slot in step.inputs]

    def replace(self, old: list[Step], new: Step) -> None:
        """Put `new` where the last of `old` was and drop the others (a fused step). Slots the removed steps
        wrote and nothing else reads simply stay empty."""
        position = max(self.steps.index(step) for step in old)
        self.steps[position] = new
        for step in old:
            if step is not new and step in self.steps:
                self.steps.remove(step)

    def prune(self) -> None:
        """Drop kernel steps nothing needs: no model output, no state write and no needed step reads their
        outputs (an init subgraph while its variable is set)."""
        needed = set(self.outputs)
        kept = []
        for step in reversed(self.steps):
            if step.kind == KERNEL and step.state != "write" and not needed.intersection(step.outputs):
                continue
            needed.update(step.inputs)
            kept.append(step)
        self.steps = kept[::-1]

    def finish(self, model_outputs: set, limit: int, over_budget, held: int = 0, like: Plan | None = None) -> None:
        """Freeing points, memory figures and the kernel list. In a static plan every output is checked against
        the budget's `limit` with the bytes alive before it: `over_budget(step, index, nbytes, live)` raises.
        `held`: bytes alive throughout (the variables' values). `like`: a finished plan of the same layers in
        the same slots (irrun/engine/replan.py made this one from the same template), whose freeing points are
        taken over, and its sizes and in-place flags wherever this plan's infos are the very same objects."""
        steps = self.steps
        kept = set(model_outputs)
        kept.update(slot for slot, value in enumerate(self.initial) if value is not None)
        if like is not None and not (like.template is self.template and like.kept == kept and
                                     [step.node for step in like.steps] == [step.node for step in steps]):
            like = None
        frees = [step.frees for step in like.steps] if like is not None else freeing_points(steps, kept)
        self.static = static = not any(step.dynamic for step in steps)
        if like is None:
            sizes = [tensor_bytes(info) for info in self.infos]
        else:
            sizes = [size if info is old else tensor_bytes(info)
                     for info, old, size in zip(self.infos, like.infos, like.sizes)]
        self.kept, self.sizes = kept, sizes
        self.held = held
        live = peak = held
        for index, step in enumerate(steps):
            step.frees = tuple(frees[index])
            if step.kind == INPUT and static:
                live += sizes[step.outputs[0]]
            if step.kind != KERNEL or step.dynamic:
                continue
            step.expect = tuple((tuple(i.shape), i.type.storage) for i in step.out_infos)
            step.out_bytes = sum(sizes[slot] for slot in step.outputs)
            if static:
                step.live = live
                for port, slot in enumerate(step.outputs):
                    if live + sizes[slot] > limit:
                        over_budget(step, port, sizes[slot], live)
                    live += sizes[slot]
                peak = max(peak, live)
                for slot in step.frees:
                    live -= sizes[slot]
        self.peak = peak
        self.kernels = [step for step in self.steps if step.kind == KERNEL]
        self.moving = [step for step in self.steps if step.kind == KERNEL or step.kind == INPUT or step.frees]
        mark_inplace(self, kept, like)

    def __str__(self) -> str:
        shapes = ", ".join(shape_str(s) if s is not None else "-" for s in self.signature)
        kind = f"static, peak {format_bytes(self.peak)}" if self.static else "dynamic steps re-inferred at run"
        state = "".join(f", variable {k!r} {shape_str(v)}" for k, v in self.state.items())
        lines = [f"plan for inputs {shapes}{state}: {len(self.kernels)} kernel steps of {len(self.steps)}, "
                 f"{self.slots} slots, {kind}"]
        for index, step in enumerate(self.steps):
            ins = ",".join(f"s{s}" for s in step.inputs)
            outs = ",".join(f"s{s}" for s in step.outputs)
            types = " ".join(f"{self.infos[s].type.name}{shape_str(self.infos[s].shape)}" for s in step.outputs
                             if self.infos[s] is not None and self.infos[s].shape is not None)
            flags = (" dynamic" if step.dynamic else "") + (f" {step.state}:{step.variable}" if step.state else "") \
                + (" inplace" if step.inplace else "")
            frees = f"  frees {','.join(f's{s}' for s in step.frees)}" if step.frees else ""
            lines.append(f"  {index:4d} {step.kind:8s} {step.name}  ({ins}) -> {outs} {types}{flags}{frees}")
        return "\n".join(lines)

    __repr__ = __str__


def freeing_points(steps: list[Step], kept: set) -> list[list[int]]:
    """Per step, the slots nothing reads after it (`kept` slots are never freed)."""
    last_reader: dict[int, int] = {}
    for index, step in enumerate(steps):
        for slot in step.inputs:
            last_reader[slot] = index
    frees: list[list[int]] = [[] for _ in steps]
    for index, step in enumerate(steps):
        if step.kind == KERNEL or step.kind == INPUT:
            for slot in step.outputs:
                if slot not in kept:  # nothing reads it: it dies right after the step that makes it
                    frees[last_reader.get(slot, index)].append(slot)
    return frees


def tensor_bytes(info) -> int:
    """Bytes of a tensor of this info; 0 when its shape is not known."""
    if info is None or info.shape is None or None in info.shape:
        return 0
    return numel(info.shape) * info.type.storage.itemsize


REWRITES: list[Callable[[Plan], None]] = []  # applied in order to every new plan before `finish`


def array_bytes(array) -> int:
    return array.nbytes if isinstance(array, np.ndarray) else 0


def all_static(infos) -> bool:
    for info in infos:
        if info.shape is None or None in info.shape:
            return False
    return True


def all_values(infos) -> bool:
    for info in infos:
        if info.value is None:
            return False
    return True


def any_value(infos) -> bool:
    for info in infos:
        if info.value is not None:
            return True
    return False
