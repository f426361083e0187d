"""Ops with nested graphs: TensorIterator-1, Loop-5 and If-8.

A body is an ordinary graph (built from the records `irrun.ir.xml` reads from the layer's <body>,
<then_body> or <else_body>), built once when the layer is bound, and run as a Model fed the outer op's input
shapes instead of the body Parameters' declared ones, as OpenVINO does. The engine builds and runs bodies:
it hands its body runner to the ops in their Context (`context.bodies`, irrun/engine/bodies.py).
Iterations are a Python loop; everything inside an iteration is the body's own kernels.

Inference: without input values (at load, in the checker) the body is inferred with the sliced/merged input
shapes; a concatenated output's axis is known when the iteration count is. With every input value known (at
run time, or a constant subgraph) the op is executed during inference, so that outputs whose shape depends on
the iteration count (a Loop stopped by its body's condition) get exact shapes; `run` then hands back the
arrays computed there.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from .budget import Budget
from ..errors import ExecutionError, IRError, ShapeError
from ..ir.model import Body, PortMapEntry
from ..ir.types import element_type
from .registry import Op, TensorInfo, op

_MERGE_ROUNDS = 4  # how often a back edge's shape is widened before inference gives up on it
BODY_MODELS = 8    # body Models kept per body (one per Parameter shapes), most recently used first out last


def _body_error(exc: IRError, body: str) -> IRError:
    """A problem inside a body, re-raised for the outer layer: the message names the body and its layer."""
    where = f"{body} {exc.layer}" if exc.layer is not None else body
    port = f" port {exc.port}" if exc.port is not None and exc.layer is not None else ""
    return type(exc)(f"{where}{port}: {exc.message}", rule=exc.rule)


class _NestedBudget(Budget):
    """The outer budget as seen from inside a body: the outer model's live tensors and whatever the op holds
    across iterations count too; the body's own runs reset only their own `live`."""

    def __init__(self, parent: Budget):
        self.parent, self.limit, self.live, self.held = parent, parent.limit, 0, 0

    def check(self, nbytes: int, what) -> None:
        saved = self.parent.live
        self.parent.live = saved + self.live + self.held
        try:
            self.parent.check(nbytes, what)
        finally:
            self.parent.live = saved


class _Graph:
    """One body: its graph, built once, and runtime Models of it per input signature (shapes and types)."""

    def __init__(self, name: str, body: Body, context):
        self.name, self.body, self.context = name, body, context
        try:
            self.graph = context.bodies.graph(body.doc, context)
        except IRError as exc:
            raise _body_error(exc, name) from None
        self.params = set(self.graph.parameters)
        self.result_ids = set(self.graph.results)
        for entry in body.inputs:
            if entry.internal_layer_id not in self.params:
                raise ShapeError(f"{name} port map input names layer {entry.internal_layer_id}, which is not a "
                                 f"{name} Parameter", rule="edge.ref")
        for entry in body.outputs:
            if entry.internal_layer_id not in self.result_ids:
                raise ShapeError(f"{name} port map output names layer {entry.internal_layer_id}, which is not a "
                                 f"{name} Result", rule="edge.ref")
        for source, target in body.back_edges:
            if source not in self.result_ids or target not in self.params:
                raise ShapeError(f"back edge {source} -> {target} must go from a {name} Result to a {name} "
                                 f"Parameter", rule="edge.ref")
        self._models: OrderedDict = OrderedDict()
        self.budget = None
        # OpenVINO's reader validates each body alone first, with its Parameters' declared shapes and types
        self.model({param: self.declared(param) for param in self.params})

    def declared(self, layer_id: str) -> TensorInfo:
        return self.graph.nodes[layer_id].op.infer([])[0]

    def model(self, param_infos: dict):
        """The runtime Model for these Parameter infos (values dropped: a body is never folded whole)."""
        infos = {k: TensorInfo(v.shape, v.type) for k, v in param_infos.items()}
        missing = self.params - set(infos)
        if missing:
            raise ShapeError(f"{self.name} Parameter {sorted(missing)[0]} is not fed by the port map",
                             rule="edge.unfed")
        key = tuple(sorted((k, v.shape, v.type.name) for k, v in infos.items()))
        model = self._models.get(key)
        if model is not None:
            self._models.move_to_end(key)
            return model
        outer = self.context.budget
        if self.budget is None:
            self.budget = _NestedBudget(outer) if outer is not None else Budget()
        try:
            model = self._models[key] = self.context.bodies.model(self.graph, self.budget, infos)
        except IRError as exc:
            raise _body_error(exc, self.name) from None
        if len(self._models) > BODY_MODELS:  # value-dependent shapes give a body new shapes run after run
            self._models.popitem(last=False)
        return model

    def result_infos(self, param_infos: dict) -> dict[str, TensorInfo]:
        model = self.model(param_infos)
        return {rid: model.infos[self.graph.nodes[rid].inputs[0]] for rid in self.graph.results}

    def run(self, model, feeds: dict) -> dict[str, np.ndarray]:
        try:
            outputs = model.run([feeds[pid] for pid in self.graph.parameters])
        except IRError as exc:
            raise _body_error(exc, self.name) from None
        return dict(zip(self.graph.results, outputs.values()))


def _merge(a: TensorInfo, b: TensorInfo) -> TensorInfo:
    """The widest info covering both (dims that differ become dynamic)."""
    if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
        return TensorInfo(None, a.type)
    return TensorInfo(tuple(x if x == y else None for x, y in zip(a.shape, b.shape)), a.type)


def _int_attr(entry: PortMapEntry, name: str, default: int) -> int:
    text = entry.attrs.get(name)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise ShapeError(f"port map {name}={text!r} is not an integer", rule="attr.value") from None


class _Slicing:
    """A sliced input or concatenated output of TensorIterator/Loop."""

    def __init__(self, entry: PortMapEntry):
        self.axis = _int_attr(entry, "axis", 0)
        self.start = _int_attr(entry, "start", 0)
        self.stride = _int_attr(entry, "stride", 1)
        self.end = _int_attr(entry, "end", -1)
        self.part_size = _int_attr(entry, "part_size", 1)
        if self.part_size <= 0 or self.stride == 0:
            raise ShapeError(f"port map part_size {self.part_size} and stride {self.stride}: part_size must be "
                             f"positive and stride non-zero", rule="attr.range")

    def axis_of(self, rank: int) -> int:
        axis = self.axis + rank if self.axis < 0 else self.axis
        if not 0 <= axis < rank:
            raise ShapeError(f"port map axis {self.axis} is out of range for rank {rank}", rule="attr.range")
        return axis

    def iterations(self, dim: int) -> int:
        start = self.start + dim if self.start < 0 else self.start
        end = self.end + dim if self.end < 0 else self.end
        return (abs(end - start) + 1) // self.part_size

    def bounds(self, dim: int) -> tuple[int, int]:
        return (self.start + dim if self.start < 0 else self.start), self.part_size

    def piece(self, array: np.ndarray, axis: int, index: int) -> np.ndarray:
        first, size = self.bounds(array.shape[axis])
        position = first + index * self.stride
        low = position if self.stride > 0 else position - size + 1
        if low < 0 or low + size > array.shape[axis]:
            raise ExecutionError(f"iteration {index} slices [{low}, {low + size}) outside axis {axis} of size "
                                 f"{array.shape[axis]}", rule="input.index")
        return array[(slice(None),) * axis + (slice(low, low + size),)]


class _SubGraphOp(Op):
    """TensorIterator and Loop: one body, sliced/merged/invariant inputs, last-value/concatenated outputs."""

    foldable = True
    first_input = 0  # Loop's trip count and condition come before the port-mapped inputs

    def __init__(self, values, context, layer=None):
        super().__init__(values, context, layer)
        if layer is None or "body" not in layer.bodies:
            raise ShapeError("the layer has no <body>", rule="file.structure")
        self.body = _Graph("body", layer.bodies["body"], context)
        spec = layer.bodies["body"]
        back = {target: source for source, target in spec.back_edges}
        self.special_inputs = {e.attrs.get("purpose"): e.internal_layer_id for e in spec.inputs if e.attrs.get("purpose")}
        self.special_outputs = {e.attrs.get("purpose"): e.internal_layer_id for e in spec.outputs if e.attrs.get("purpose")}
        # (input index, body Parameter, slicing or None, back-edge Result or None)
        self.in_map = []
        for entry in sorted(spec.inputs, key=lambda e: e.external_port_id):
            if entry.external_port_id < 0:
                continue
            sliced = _Slicing(entry) if "axis" in entry.attrs else None
            self.in_map.append((entry.external_port_id, entry.internal_layer_id, sliced,
                                None if sliced else back.get(entry.internal_layer_id)))
        # (body Result, concatenation or None), in output order
        self.out_map = [(e.internal_layer_id, _Slicing(e) if "axis" in e.attrs else None)
                        for e in sorted(spec.outputs, key=lambda e: e.external_port_id) if e.external_port_id >= 0]
        self._stash = None
        self.num_inputs = (self.first_input + len(self.in_map), self.first_input + len(self.in_map))
        for index, *_ in self.in_map:
            if not self.first_input <= index < self.num_inputs[1]:
                raise ShapeError(f"port map input external_port_id {index} is not one of the layer's "
                                 f"{self.num_inputs[1]} inputs", rule="port.count")

    # ------------------------------------------------------------ inference

    def _param_infos(self, inputs):
        """Body Parameter infos from the outer inputs, and the iteration count the slicing implies."""
        infos, count = {}, None
        for index, param, sliced, _ in self.in_map:
            info = inputs[index]
            if sliced is not None:
                if info.shape is not None:
                    axis = sliced.axis_of(len(info.shape))
                    shape = list(info.shape)
                    if shape[axis] is not None:
                        n = sliced.iterations(shape[axis])
                        count = n if count is None else min(count, n)
                    shape[axis] = sliced.part_size
                    info = TensorInfo(tuple(shape), info.type)
            infos[param] = TensorInfo(info.shape, info.type)
        return infos, count

    def _body_infos(self, infos):
        """Infer the body; widen back-edge Parameters until the body gives what it is fed."""
        for _ in range(_MERGE_ROUNDS):
            results = self.body.result_infos(infos)
            changed = False
            for _, param, _, source in self.in_map:
                if source is not None:
                    merged = _merge(infos[param], results[source])
                    if results[source].type != infos[param].type:
                        raise ShapeError(f"back edge from body layer {source} gives {results[source].type}, the "
                                         f"input is {infos[param].type}", rule="port.type")
                    if merged.shape != infos[param].shape:
                        infos[param], changed = merged, True
            if not changed:
                return infos, results
        return infos, self.body.result_infos(infos)

    def _out_infos(self, results, count):
        outs = []
        for index, (result, concat) in enumerate(self.out_map):
            info = results[result]
            if concat is None:
                outs.append(TensorInfo(info.shape, info.type))
                continue
            shape = info.shape
            if shape is not None:
                shape = (1,) if not shape else shape
                axis = concat.axis_of(len(shape))
                if len(info.shape) == 0 and axis != 0:
                    raise ShapeError(f"output {index}: a concatenated scalar needs axis 0", rule="attr.range")
                shape = list(shape)
                shape[axis] = None if count is None or shape[axis] is None else count * shape[axis]
                shape = tuple(shape)
            outs.append(TensorInfo(shape, info.type))
        return outs

    def infer(self, inputs):
        infos, count = self._param_infos(inputs)
        infos, results = self._body_infos(self._add_special(infos))
        count = self._count(inputs, count, results)
        if all(i.value is not None for i in inputs) and all(i.is_static for i in inputs):
            arrays = self._execute([i.value for i in inputs], inputs)
            self._stash = ([i.value for i in inputs], arrays)
            return [TensorInfo(a.shape, info.type) for a, info in zip(arrays, self._out_infos(results, count))]
        return self._out_infos(results, count)

    def _add_special(self, infos):
        return infos

    def _count(self, inputs, count, results):
        return count

    # ------------------------------------------------------------ running

    def run(self, inputs, in_infos, out_infos):
        if self._stash is not None and len(self._stash[0]) == len(inputs) and all(
                a is b for a, b in zip(self._stash[0], inputs)):
            arrays = self._stash[1]
        else:
            arrays = self._execute(inputs, in_infos)
        self._stash = None
        return [a.astype(info.type.storage, copy=False) for a, info in zip(arrays, out_infos)]

    def _iterations(self, inputs) -> tuple[int, bool]:
        """(maximum iterations, whether the first may run)."""
        raise NotImplementedError

    def _execute(self, inputs, in_infos):
        limit, go = self._iterations(inputs)
        infos, _ = self._param_infos(in_infos)
        infos, _ = self._body_infos(self._add_special(infos))
        model = self.body.model(infos)
        axes = {param: sliced.axis_of(inputs[index].ndim) for index, param, sliced, _ in self.in_map if sliced}
        feeds = {param: inputs[index] for index, param, sliced, _ in self.in_map if not sliced}
        for index, param, sliced, _ in self.in_map:
            if sliced:
                limit = min(limit, sliced.iterations(inputs[index].shape[axes[param]]))
        last: dict[str, np.ndarray] = {}
        pieces: list[list[np.ndarray]] = [[] for _ in self.out_map]
        budget, iteration = self.body.budget, 0
        condition = self.special_outputs.get("execution_condition")
        while go and iteration < limit:
            for index, param, sliced, _ in self.in_map:
                if sliced:
                    feeds[param] = sliced.piece(inputs[index], axes[param], iteration)
            self._feed_special(feeds, iteration)
            last = self.body.run(model, feeds)
            for k, (result, concat) in enumerate(self.out_map):
                if concat is not None:
                    pieces[k].append(last[result].reshape(last[result].shape or (1,)))
                    if budget is not None:
                        budget.held += pieces[k][-1].nbytes
            for _, param, _, source in self.in_map:
                if source is not None:
                    feeds[param] = last[source]
            iteration += 1
            if condition is not None:
                go = bool(np.asarray(last[condition]).reshape(-1)[0])
        if budget is not None:
            budget.held = 0
        return self._outputs(inputs, last, pieces, iteration, model)

    def _feed_special(self, feeds, iteration):
        pass

    def _outputs(self, inputs, last, pieces, iterations, model):
        outputs = []
        results = {rid: model.infos[self.body.graph.nodes[rid].inputs[0]] for rid in self.body.graph.results}
        initial = {source: inputs[index] for index, _, _, source in self.in_map if source is not None}
        for k, (result, concat) in enumerate(self.out_map):
            if concat is None:
                if result in last:
                    outputs.append(last[result])
                elif result in initial:  # no iteration ran: a back-edge value keeps its initial value
                    outputs.append(initial[result])
                else:
                    info = results[result]
                    shape = tuple(0 if d is None else d for d in info.shape or ())
                    outputs.append(np.zeros(shape, info.type.storage))
                continue
            values = pieces[k][::-1] if concat.stride < 0 else pieces[k]
            if values:
                axis = concat.axis_of(values[0].ndim)
                self.reserve(sum(v.nbytes for v in values), f"output {k} (concatenated over {iterations} iterations)")
                outputs.append(np.concatenate(values, axis=axis))
            else:
                info = results[result]
                shape = list((1,) if info.shape == () else tuple(0 if d is None else d for d in info.shape))
                shape[concat.axis_of(len(shape))] = 0
                outputs.append(np.zeros(shape, info.type.storage))
        return outputs


@op("TensorIterator", 1)
class TensorIterator1(_SubGraphOp):
    def _count(self, inputs, count, results):
        if count is None and not any(s for *_, s, _ in self.in_map):
            for _, concat in self.out_map:  # no sliced input: the first concatenated output says
                if concat is not None:
                    return abs(concat.end - concat.start) // concat.part_size
        return count

    def _iterations(self, inputs):
        count = None
        for _, concat in self.out_map:
            if concat is not None and count is None:
                count = abs(concat.end - concat.start) // concat.part_size
        if any(sliced for _, _, sliced, _ in self.in_map):
            count = 1 << 62
        if count is None:
            raise ExecutionError("the number of iterations is unknown: no sliced input and no concatenated "
                                 "output", rule="runtime")
        return count, True


def _condition_rule(shape_ok: bool) -> str:
    """A Loop's or If's trip count or condition of the right shape but another type: OpenVINO's reader takes it."""
    return "port.type.spec" if shape_ok else "port.type"


def _one_condition_value(info, what, port=None):
    """OpenVINO's Loop refuses a condition whose value it knows unless that value has one element."""
    if info.value is not None and np.asarray(info.value).size != 1:
        raise ShapeError(f"{what} is a constant of {np.asarray(info.value).size} values, not one",
                         rule="port.dims", port=port)


@op("Loop", 5)
class Loop5(_SubGraphOp):
    first_input = 2

    def _add_special(self, infos):
        current = self.special_inputs.get("current_iteration")
        if current is not None:
            infos[current] = self.body.declared(current)
        return infos

    def infer(self, inputs):
        trip, cond = inputs[0], inputs[1]
        trip_shape_ok = trip.shape is None or len(trip.shape) == 0 or (
            len(trip.shape) == 1 and trip.shape[0] in (None, 1))
        if trip.type.is_float or trip.type.name == "boolean" or not trip_shape_ok:
            raise ShapeError(f"trip count must be an integer scalar or 1-element tensor, got {trip.type}"
                             f"{list(trip.shape or [])}", rule=_condition_rule(trip_shape_ok), port=0)
        cond_shape_ok = cond.shape is None or len(cond.shape) <= 1
        if cond.type != element_type("boolean") or not cond_shape_ok:
            raise ShapeError(f"execution condition must be a boolean scalar or 1-element tensor, got {cond.type}",
                             rule=_condition_rule(cond_shape_ok), port=1)
        _one_condition_value(cond, "the execution condition", port=1)
        current = self.special_inputs.get("current_iteration")
        if current is not None and (self.body.declared(current).rank or 0) > 1:
            raise ShapeError(f"the current_iteration body Parameter has rank {self.body.declared(current).rank}, "
                             f"not 0 or 1", rule="port.rank")
        return super().infer(inputs)

    def _count(self, inputs, count, results):
        body_cond = self.special_outputs.get("execution_condition")
        if body_cond is not None:
            condition = results[body_cond]
            if (condition.rank or 0) > 1:
                raise ShapeError(f"the body's execution condition has rank {condition.rank}, not 0 or 1",
                                 rule="port.rank")
            _one_condition_value(condition, "the body's execution condition")
        trip, cond = inputs[0].value, inputs[1].value
        if trip is None or cond is None:
            return None
        if not bool(np.asarray(cond).reshape(-1)[0]):
            return 0
        body_cond = self.special_outputs.get("execution_condition")
        if body_cond is not None:
            value = results[body_cond].value
            if value is None or not bool(np.asarray(value).reshape(-1)[0]):
                return None
        trip = int(np.asarray(trip).reshape(-1)[0])
        if trip < 0:
            return count
        return trip if count is None else min(trip, count)

    def _iterations(self, inputs):
        trip = int(np.asarray(inputs[0]).reshape(-1)[0])
        go = bool(np.asarray(inputs[1]).reshape(-1)[0])
        return (1 << 62) if trip < 0 else trip, go

    def _feed_special(self, feeds, iteration):
        current = self.special_inputs.get("current_iteration")
        if current is not None:
            info = self.body.declared(current)
            feeds[current] = np.full(tuple(d or 1 for d in info.shape or ()), iteration, info.type.storage)


@op("If", 8)
class If8(Op):
    num_inputs = (1, 1 << 30)

    def __init__(self, values, context, layer=None):
        super().__init__(values, context, layer)
        if layer is None or not {"then_body", "else_body"} <= set(layer.bodies):
            raise ShapeError("If needs a <then_body> and an <else_body>", rule="file.structure")
        self.branches = {}
        for name in ("then_body", "else_body"):
            spec = layer.bodies[name]
            graph = _Graph(name, spec, context)
            inputs = [(e.external_port_id, e.internal_layer_id) for e in spec.inputs]
            outputs = [e.internal_layer_id for e in sorted(spec.outputs, key=lambda e: e.external_port_id)
                       if e.external_port_id >= 0]
            self.branches[name] = (graph, inputs, outputs)
        counts = {len(outputs) for _, _, outputs in self.branches.values()}
        if len(counts) != 1:
            raise ShapeError(f"then_body maps {len(self.branches['then_body'][2])} outputs, else_body "
                             f"{len(self.branches['else_body'][2])}", rule="port.count")
        self.num_inputs = (1, 1 + max([i for _, inputs, _ in self.branches.values() for i, _ in inputs], default=0))
        self._stash = None

    def _feeds(self, name, inputs):
        graph, mapping, _ = self.branches[name]
        for index, _ in mapping:
            if not 1 <= index < len(inputs):
                raise ShapeError(f"{name} port map input external_port_id {index} is not one of the layer's "
                                 f"{len(inputs)} inputs", rule="port.count")
        return {param: inputs[index] for index, param in mapping}

    def _branch_infos(self, name, inputs):
        graph, _, outputs = self.branches[name]
        results = graph.result_infos(self._feeds(name, inputs))
        return [results[r] for r in outputs]

    def infer(self, inputs):
        cond = inputs[0]
        shape_ok = cond.shape is None or cond.shape in ((), (1,), (None,))
        if cond.type != element_type("boolean") or not shape_ok:
            raise ShapeError(f"the condition must be a boolean scalar or 1-element tensor, got {cond.type}",
                             rule=_condition_rule(shape_ok), port=0)
        if cond.value is not None:
            name = "then_body" if bool(np.asarray(cond.value).reshape(-1)[0]) else "else_body"
            infos = self._branch_infos(name, inputs)
            if all(i.value is not None for i in inputs) and all(i.is_static for i in inputs):
                # every value is known (run time, or a constant subgraph): run the chosen branch now, so that
                # outputs whose shape depends on values (an NMS in the branch) get their actual shapes
                arrays = self._execute(name, [i.value for i in inputs], inputs)
                self._stash = ([i.value for i in inputs], arrays)
                return [TensorInfo(a.shape, i.type) for a, i in zip(arrays, infos)]
            return [TensorInfo(i.shape, i.type) for i in infos]
        then, other = self._branch_infos("then_body", inputs), self._branch_infos("else_body", inputs)
        outs = []
        for index, (a, b) in enumerate(zip(then, other)):
            if a.type != b.type:
                raise ShapeError(f"output {index}: then_body gives {a.type}, else_body {b.type}", rule="port.type")
            outs.append(_merge(a, b))
        return outs

    def run(self, inputs, in_infos, out_infos):
        if self._stash is not None and len(self._stash[0]) == len(inputs) and all(
                a is b for a, b in zip(self._stash[0], inputs)):
            arrays = self._stash[1]
        else:
            name = "then_body" if bool(np.asarray(inputs[0]).reshape(-1)[0]) else "else_body"
            arrays = self._execute(name, inputs, in_infos)
        self._stash = None
        return [a.astype(info.type.storage, copy=False) for a, info in zip(arrays, out_infos)]

    def _execute(self, name, inputs, in_infos):
        graph, _, outputs = self.branches[name]
        model = graph.model(self._feeds(name, in_infos))
        values = graph.run(model, self._feeds(name, inputs))
        return [values[r] for r in outputs]
