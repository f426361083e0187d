"""A loaded model (Model): what it is, its plans, and running them. irrun/engine/loader.py makes one."""
from __future__ import annotations

import gc
import time
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from . import blas_threads, heap, inplace, layers
from ..ops.budget import Budget
from .decompression import Decompression
from . import subnormal_products  # noqa: F401,E402 (registers its plan rewrite, after decompression's)
from . import mvn_transposes  # noqa: F401,E402 (registers its plan rewrite)
from ..errors import ExecutionError, InputError, IRError
from .graph import Graph, Node
from ..ir.types import ElementType, element_type, from_dtype
from ..ir.weights import WeightsFile
from ..ops import TensorInfo
from ..ops.strings import as_bytes_list, string_tensor
from ..ops.state import AssignBase, ReadValueBase
from ..ops.shapes import numel, parse_dim, shape_str
from .plan import (CONSTANT, INPUT, KERNEL, RESULT, REWRITES, Plan, Step, all_static, all_values, any_value,
                   tensor_bytes)
from .reinfer import infer_at_run, known_empty
from .replan import make_template, replan, reuse_key
from .session import Session
from .timeline import INFERENCE, INPUTS, OBSERVERS, PLANNING, START, STEPS, THREADS


@dataclass(frozen=True)
class TensorDesc:
    """A model input or output: its name (OpenVINO's get_any_name(), else a fallback), every tensor name,
    its shape (None for a dynamic dim; None for a dynamic rank) and its element type."""

    name: str
    names: tuple[str, ...]
    shape: tuple | None
    element_type: str


@contextmanager
def collector_paused():
    """Python's cyclic garbage collector off for the duration of a run. A run (a new plan above all) allocates
    thousands of small containers, and the collections they would trigger traverse every object of the loaded
    model: about a tenth of an LLM decode step. Garbage cycles made meanwhile are collected afterwards."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


PLAN_CACHE_SIZE = 8    # plans kept per model, most recently used first out last
FOLD_LIMIT = 1 << 20   # bytes: a plan computes a step whose inputs are all known while planning up to this size
PLAN_REUSE = True      # a new signature reuses a cached plan's structure (irrun/engine/replan.py); False: built afresh


class Model:
    """A loaded model: `inputs`, `outputs` and `run()` (and `run_batch()`, which irrun/scale/batch.py adds:
    scale-out wraps the Model, the engine does not import it).

    Each run follows a plan (irrun/engine/plan.py) built once per signature of input shapes and cached: shapes
    inferred, kernels bound, freeing points and memory figures computed. `plan(shapes)` returns one."""

    def __init__(self, graph: Graph, budget: Budget, weights: WeightsFile | None, infos: dict,
                 decompression: Decompression, variables: list[str], inputs: list[TensorDesc],
                 outputs: list[TensorDesc]):
        """What the loader (irrun/engine/loader.py) found: `infos` per (layer id, port) after inference and
        folding, the compressed weights, the variable ids (a model with any is stateful), the inputs and
        outputs."""
        self.graph = graph
        self.budget = budget
        self.weights = weights
        self.path = graph.doc.xml_path
        self.infos = infos
        self.decompression = decompression
        self.variables = variables
        self.inputs = inputs
        self.outputs = outputs
        self._by_name: dict[str, str] = {}
        for desc, layer_id in zip(self.inputs, graph.parameters):
            for name in desc.names:
                self._by_name.setdefault(name, layer_id)
        live = set(graph.order)
        self._live_params = [pid for pid in graph.parameters if pid in live]
        self._plans: OrderedDict[tuple, Plan] = OrderedDict()

    def _infer(self, node: Node, in_infos: list[TensorInfo]) -> list[TensorInfo]:
        return layers.infer(node, in_infos, self.path)

    def _fold(self, node: Node, in_infos, out_infos) -> list[np.ndarray]:
        return layers.fold(node, in_infos, out_infos, self.budget, self.path)

    # ------------------------------------------------------------ plans

    def plan(self, shapes, state=None) -> Plan:
        """The plan for inputs of these shapes: a dict by input name or a list in input order, as `run` takes
        arrays; `state`: variable id -> array (or (shape, element type name)) for variables that are set.
        `print(model.plan(...))` lists its steps."""
        if isinstance(shapes, dict):
            by_id = {self._layer_of(name): tuple(shape) for name, shape in shapes.items()}
        else:
            by_id = dict(zip(self.graph.parameters, (tuple(s) for s in shapes)))
        for desc, layer_id in zip(self.inputs, self.graph.parameters):
            if layer_id in self._live_params:
                if layer_id not in by_id:
                    raise InputError(f"input {desc.name!r} is missing", file=self.path)
                self._check_shape(desc, layer_id, by_id[layer_id])
        current = {}
        for var_id, value in (state or {}).items():
            if isinstance(value, np.ndarray):
                current[var_id] = TensorInfo(value.shape, from_dtype(value.dtype))
            else:
                current[var_id] = TensorInfo(tuple(value[0]), element_type(value[1]))
        with np.errstate(all="ignore"):
            return self._plan_for(tuple(by_id.get(pid) for pid in self.graph.parameters), current)

    def _signature(self, feeds: dict) -> tuple:
        return tuple(feeds[pid].shape if pid in feeds and pid in self._live_params else None
                     for pid in self.graph.parameters)

    def _plan_for(self, signature: tuple, state: dict[str, TensorInfo], every_layer: bool = False) -> Plan:
        """`state`: the shapes and types of the variables that are set, part of the signature. `every_layer`: a
        plan whose steps compute every live layer's outputs, for an observer that reads them (no rewrite that
        fuses layers into one step hiding their outputs, `hides_layers`)."""
        key = (signature, tuple(sorted((k, i.shape, i.type.name) for k, i in state.items())), every_layer)
        plan = self._plans.get(key)
        if plan is not None:
            self._plans.move_to_end(key)
            return plan
        plan = self._reuse_plan(signature, state, every_layer) if PLAN_REUSE else None
        if plan is None:
            plan = self._build_plan(signature, state, every_layer)
        self._plans[key] = plan
        if len(self._plans) > PLAN_CACHE_SIZE:
            self._plans.popitem(last=False)
        return plan

    def _reuse_plan(self, signature: tuple, state: dict[str, TensorInfo], every_layer: bool) -> Plan | None:
        """A plan made from the most recently used cached plan of the same structure (irrun/engine/replan.py), its
        memory figures and budget checks computed anew; None when there is none or the structure changes."""
        key = (reuse_key(signature, state), every_layer)
        for base in reversed(self._plans.values()):
            if base.template is not None and base.reuse_key == key:
                plan = replan(self, base, signature, state)
                if plan is not None:
                    plan.reuse_key = key
                    self._finish_plan(plan, state, like=base)
                return plan
        return None

    def _finish_plan(self, plan: Plan, state: dict[str, TensorInfo], like: Plan | None = None) -> None:
        plan.finish(set(plan.outputs), self.budget.limit, self._check_planned,
                    held=sum(tensor_bytes(info) for info in state.values()), like=like)
        self.budget.live = 0

    def _build_plan(self, signature: tuple, state: dict[str, TensorInfo], every_layer: bool = False) -> Plan:
        slot_of: dict[tuple[str, int], int] = {}
        infos: list[TensorInfo] = []
        initial: list = []
        steps: list[Step] = []

        def new_slots(node: Node, out_infos, values=None) -> tuple[int, ...]:
            slots = []
            for index, info in enumerate(out_infos):
                slot_of[(node.id, index)] = len(infos)
                slots.append(len(infos))
                infos.append(info)
                initial.append(None if values is None else values[index])
            return tuple(slots)

        shapes = dict(zip(self.graph.parameters, signature))
        self.budget.live = 0
        pruned = False
        for layer_id in self.graph.order:
            node = self.graph.nodes[layer_id]
            kind = node.ref.type
            if kind == "Parameter":
                info = TensorInfo(shapes[layer_id], self.infos[(layer_id, 0)].type)
                steps.append(Step(INPUT, node, (), new_slots(node, [info]), out_infos=[info]))
                continue
            if layer_id in self.decompression.absorbed:  # a fused reader decompresses it
                if (layer_id, 0) in self.decompression.weights:
                    new_slots(node, [self.infos[(layer_id, 0)]])
                continue
            known = self.infos.get((layer_id, 0))
            if known is not None and known.value is not None:  # computed at load
                out_infos = [self.infos[(layer_id, i)] for i in range(len(node.layer.outputs) or 1)]
                slots = new_slots(node, out_infos, [i.value for i in out_infos])
                steps.append(Step(CONSTANT, node, (), slots, out_infos=out_infos))
                continue
            inputs = tuple(slot_of[source] for source in node.inputs)
            in_infos = [infos[slot] for slot in inputs]
            if kind == "Result":
                steps.append(Step(RESULT, node, inputs, inputs, in_infos, in_infos))
                continue
            out_infos = self._infer(node, in_infos)
            if isinstance(node.op, (ReadValueBase, AssignBase)):
                current = state.get(node.op.variable_id)
                if isinstance(node.op, ReadValueBase):
                    out_infos = [self._read_info(node, in_infos, current)]
                    if current is not None and inputs:  # the init subgraph is not needed while the variable is set
                        inputs, in_infos, pruned = (), [], True
                steps.append(Step(KERNEL, node, inputs, new_slots(node, out_infos), in_infos, out_infos,
                                  kernel=node.op.run, dynamic=not all_static(in_infos + out_infos),
                                  state="read" if isinstance(node.op, ReadValueBase) else "write",
                                  variable=node.op.variable_id))
                continue
            values = self._plan_values(node, in_infos, out_infos)
            if values is not None:
                out_infos = [TensorInfo(i.shape, i.type, v) for i, v in zip(out_infos, values)]
                steps.append(Step(CONSTANT, node, (), new_slots(node, out_infos, values), in_infos, out_infos))
                continue
            if any_value(out_infos):
                out_infos = [TensorInfo(i.shape, i.type) for i in out_infos]
            steps.append(Step(KERNEL, node, inputs, new_slots(node, out_infos), in_infos, out_infos,
                              kernel=node.op.run, dynamic=not (all_static(in_infos) and all_static(out_infos))))
        plan = Plan(signature, steps, len(infos), initial,
                    inputs=tuple(slot_of.get((pid, 0)) for pid in self.graph.parameters),
                    outputs=tuple(slot_of[self.graph.nodes[r].inputs[0]] for r in self.graph.results),
                    infos=infos, state={k: i.shape for k, i in sorted(state.items())}, model=self)
        built = list(plan.steps)
        if pruned:
            plan.prune()
        for rewrite in REWRITES:
            if not (every_layer and getattr(rewrite, "hides_layers", False)):
                rewrite(plan)
        plan.slot_of, plan.reuse_key = slot_of, (reuse_key(signature, state), every_layer)
        plan.template = make_template(built, plan)
        self._finish_plan(plan, state)
        return plan

    def _plan_values(self, node: Node, in_infos, out_infos) -> list | None:
        """A step's outputs when they are known while planning: given by inference (ShapeOf of a static
        shape) or computed from inputs all known (shape arithmetic), if small."""
        if out_infos and all_values(out_infos):
            return [i.value for i in out_infos]
        if node.op.foldable and in_infos and all_values(in_infos) and all_static(out_infos) and sum(
                numel(i.shape) * i.type.storage.itemsize for i in out_infos) <= FOLD_LIMIT:
            return self._fold(node, in_infos, out_infos)
        return None

    def _read_info(self, node: Node, in_infos, current: TensorInfo | None) -> TensorInfo:
        try:
            return node.op.read_info(in_infos, current)
        except IRError as exc:
            raise exc.located(file=self.path, layer=node.ref) from None

    def _check_planned(self, step: Step, index: int, nbytes: int, live: int) -> None:
        self.budget.live = live
        info = step.out_infos[index]
        try:
            self.budget.check(nbytes, lambda: f"output {index} of shape {shape_str(info.shape)} {info.type}")
        except IRError as exc:
            raise exc.located(file=self.path, layer=step.node.ref) from None

    # ------------------------------------------------------------ run

    def run(self, inputs, observer=None) -> dict[str, np.ndarray]:
        """Run the model. `inputs`: a dict by input name (any tensor name or the Parameter's layer name)
        or a list in input order. Returns output name -> array, in output order.

        `observer(node, outputs, seconds)`, when given, sees every live layer in execution order with
        its output arrays and the time its kernel took (0 for inputs and for layers computed at load or
        while planning); layers fused into one step (engine/mvn_transposes.py) are unfused for it and every
        output is computed, unless it only times the steps and says so with `sees_plain_run = True`: it then
        sees the steps a plain run executes (a fused step as its last layer, outputs nothing reads as None;
        a profile of every output timed densenet121's MaxPool at 11 ms for its unused indices, against 3 ms).
        An observer returning a list replaces the layer's outputs for this run (same shapes and dtypes;
        tools/precision.py rounds them to emulate a narrower type)."""
        return self._run(inputs, observer, {})[0]

    def session(self) -> "Session":
        """A session: runs that carry the model's state (ReadValue/Assign variables) from one to the next."""
        return Session(self)

    def _run(self, inputs, observer, variables: dict) -> tuple[dict, dict]:
        """One run from the state `variables` (id -> (array, ElementType)); returns the outputs and the
        variables the run assigned (applied by the caller, after the run)."""
        mark = getattr(observer, "mark", None)  # an observer accounting for every moment of the run (timeline.py)
        if mark:
            mark(START)
        blas_threads.fit_to_load()
        if mark:
            mark(THREADS)
        with np.errstate(all="ignore"), collector_paused():  # overflow to inf, NaN from 0/0: values, not warnings
            self.budget.live = 0
            feeds = self._bind_inputs(inputs)
            if mark:
                mark(INPUTS)
            every_layer = observer is not None and not getattr(observer, "sees_plain_run", False)
            plan = self._plan_for(self._signature(feeds), {k: TensorInfo(a.shape, et) for k, (a, et) in
                                                           variables.items()}, every_layer)
            heap.keep_freed_memory(plan.peak)
            if mark:
                mark(PLANNING)
            values = plan.initial.copy()
            for layer_id, slot in zip(self.graph.parameters, plan.inputs):
                if slot is not None:
                    values[slot] = feeds[layer_id]
            writes: dict = {}
            if plan.static and observer is None:
                self._run_static(plan, values, variables, writes)
            else:
                self._run_steps(plan, values, observer, variables, writes, mark, every_output=every_layer)
            outputs = {desc.name: values[slot] for desc, slot in zip(self.outputs, plan.outputs)}
        if mark:
            mark(STEPS)
        return outputs, writes

    def _run_static(self, plan: Plan, values: list, variables: dict, writes: dict) -> None:
        """The fast loop: every shape known, every output already checked against the budget."""
        budget = self.budget
        step = None
        try:
            for step in plan.kernels:
                budget.live = step.live
                if step.inplace:
                    outputs = inplace.run_step(step, values)
                elif step.state is None:
                    outputs = step.kernel([values[slot] for slot in step.inputs], step.in_infos, step.out_infos)
                else:
                    outputs = self._state_step(step, [values[slot] for slot in step.inputs], step.in_infos,
                                               step.out_infos, variables, writes)
                for slot, array, (shape, dtype) in zip(step.outputs, outputs, step.expect):
                    if array is None or array.shape != shape or array.dtype != dtype:
                        layers.check_outputs(step.node, outputs, step.out_infos, self.path)
                    values[slot] = array
                for slot in step.frees:
                    values[slot] = None
                outputs = array = None  # noqa: F841  (nothing keeps a freed output alive)
        except IRError as exc:
            raise exc.located(file=self.path, layer=step.node.ref) from None
        except layers.FAILURES as exc:
            raise ExecutionError(f"kernel failed: {type(exc).__name__}: {exc}", file=self.path,
                                 layer=step.node.ref) from exc

    def _run_steps(self, plan: Plan, values: list, observer, variables: dict, writes: dict, mark=None,
                   every_output: bool = False) -> None:
        """The general loop: dynamic steps inferred from their input values, the budget checked as tensors
        come and go, every layer shown to the observer (with every output computed when `every_output`)."""
        live = plan.held
        budget = self.budget
        for step in plan.steps if observer else plan.moving:  # a step not moving: nothing to do without observer
            kind = step.kind
            if kind != KERNEL:
                if kind == INPUT:
                    live += values[step.outputs[0]].nbytes
                if observer:
                    if mark:
                        mark(STEPS)
                    replaced = observer(step.node, [values[slot] for slot in step.outputs], 0.0)
                    for slot, array in zip(step.outputs, replaced or ()):
                        values[slot] = array
                    if mark:
                        mark(OBSERVERS)
                for slot in step.frees:
                    live -= values[slot].nbytes
                    values[slot] = None
                continue
            in_arrays = [values[slot] for slot in step.inputs]
            if mark:
                mark(STEPS)
            outputs = None if observer or not step.dynamic else known_empty(step, in_arrays)
            if outputs is None:
                budget.live = live
                outputs = self._general_step(step, in_arrays, observer, variables, writes, mark, every_output)
            for slot, array in zip(step.outputs, outputs):
                values[slot] = array
                if array is not None:
                    live += array.nbytes
            for slot in step.frees:
                freed, values[slot] = values[slot], None
                if freed is not None:
                    live -= freed.nbytes
            in_arrays = outputs = freed = None

    def _general_step(self, step: Step, in_arrays, observer, variables: dict, writes: dict, mark, every_output: bool):
        """One kernel step of the general loop: a dynamic step inferred from its input values first."""
        if step.dynamic:
            in_infos = [info if array is None else TensorInfo(array.shape, info.type, array)
                        for array, info in zip(in_arrays, step.in_infos)]
            out_infos = infer_at_run(self, step, in_arrays, in_infos)
            if step.state == "read":
                current = variables.get(step.variable)
                current = None if current is None else TensorInfo(current[0].shape, current[1])
                out_infos = [self._read_info(step.node, in_infos, current)]
            if mark:
                mark(INFERENCE, step.node)
            out_bytes = sum(map(tensor_bytes, out_infos)) if all_static(out_infos) else None
        else:
            in_infos, out_infos, out_bytes = step.in_infos, step.out_infos, step.out_bytes
        kernel = step.kernel
        if step.state is not None:
            def kernel(arrays, ii, oi, step=step):
                return self._state_step(step, arrays, ii, oi, variables, writes)
        if observer:
            return self._observed_step(step, in_arrays, in_infos, out_infos, kernel, out_bytes, observer, mark,
                                       every_output)
        return layers.execute(step.node, in_arrays, in_infos, out_infos, self.budget, self.path, kernel, None,
                              out_bytes)

    def _observed_step(self, step: Step, in_arrays, in_infos, out_infos, kernel, out_bytes, observer, mark,
                       every_output: bool):
        """A kernel step run for an observer: timed, shown, and with `every_output` none left out as unused."""
        op = step.node.op
        saved = op.unused_outputs
        if every_output:
            op.unused_outputs = frozenset()
        started = time.perf_counter()
        try:
            outputs = layers.execute(step.node, in_arrays, in_infos, out_infos, self.budget, self.path, kernel,
                                     mark, out_bytes)
        finally:
            op.unused_outputs = saved
        outputs = observer(step.node, outputs, time.perf_counter() - started) or outputs
        if mark:
            mark(OBSERVERS)
        return outputs

    @staticmethod
    def _state_step(step: Step, arrays, in_infos, out_infos, variables: dict, writes: dict) -> list:
        if step.state == "read":
            current = variables.get(step.variable)
            return step.kernel(arrays, in_infos, out_infos, None if current is None else current[0])
        outputs = step.kernel(arrays, in_infos, out_infos)
        writes[step.variable] = (arrays[0], in_infos[0].type)
        return outputs

    def _layer_of(self, name: str) -> str:
        if name not in self._by_name:
            raise InputError(f"no model input is named {name!r}; inputs: "
                             f"{', '.join(d.name for d in self.inputs)}", file=self.path)
        return self._by_name[name]

    def _bind_inputs(self, inputs) -> dict[str, np.ndarray]:
        if isinstance(inputs, dict):
            feeds = {}
            for key, array in inputs.items():
                layer_id = self._layer_of(key)
                if layer_id in feeds:
                    raise InputError(f"input {key!r} is given twice (under two of its names)", file=self.path)
                feeds[layer_id] = array
        else:
            inputs = list(inputs)
            if len(inputs) != len(self.inputs):
                raise InputError(f"{len(inputs)} inputs given, the model has {len(self.inputs)}", file=self.path)
            feeds = dict(zip(self.graph.parameters, inputs))
        for desc, layer_id in zip(self.inputs, self.graph.parameters):
            if layer_id not in feeds:
                if layer_id in self._live_params:
                    raise InputError(f"input {desc.name!r} is missing", file=self.path)
                continue
            feeds[layer_id] = self._check_input(desc, layer_id, feeds[layer_id])
        return feeds

    def _check_input(self, desc: TensorDesc, layer_id: str, array) -> np.ndarray:
        et: ElementType = self.infos[(layer_id, 0)].type if (layer_id, 0) in self.infos else None
        node = self.graph.nodes[layer_id]
        array = np.asarray(array)
        if et is None:
            return array
        if et.name == "string" and array.dtype.kind in "USOT":
            try:
                array = string_tensor(as_bytes_list(array), array.shape)
            except IRError as exc:
                raise exc.located(file=self.path, layer=node.ref) from None
        elif array.dtype != et.storage:
            if array.dtype.kind in "biuf" and np.can_cast(array.dtype, et.storage, "safe") and et.name != "bf16":
                array = array.astype(et.storage)
            else:
                raise InputError(f"input {desc.name!r} has dtype {array.dtype}, expected {et.name} "
                                 f"({et.storage}; only lossless conversions are made)", file=self.path,
                                 layer=node.ref)
        self._check_shape(desc, layer_id, array.shape)
        try:
            self.budget.check(array.nbytes, f"input {desc.name!r}")
        except IRError as exc:
            raise exc.located(file=self.path, layer=node.ref) from None
        return array

    def _check_shape(self, desc: TensorDesc, layer_id: str, shape: tuple) -> None:
        node = self.graph.nodes[layer_id]
        bounds = node.op.shape
        if bounds is not None:
            if len(shape) != len(bounds) or any(
                    d < low or (high is not None and d > high) for d, (low, high) in zip(shape, bounds)):
                raise InputError(f"input {desc.name!r} has shape {list(shape)}, expected "
                                 f"{node.layer.attrs.get('shape', shape_str(desc.shape))}", file=self.path,
                                 layer=node.ref)


__all__ = ["Model", "Plan", "TensorDesc", "parse_dim"]
