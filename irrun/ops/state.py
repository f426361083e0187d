"""ReadValue-3/6 and Assign-3/6: model state (variables), as OpenVINO defines it.

The ops are pure functions. A run's variables live in a session (`irrun.engine.session.Session`; `Model.run`
starts each call from a fresh one): the runtime hands a ReadValue the variable's current value (`current`,
None while the variable is unset) and records what an Assign is given, writing it after the run, so every
ReadValue of a run sees the value from before it.

- ReadValue-6 (`variable_id`, `variable_type`, `variable_shape`; an optional init input): while the
  variable is unset it returns the init input, or without one zeros of the variable's shape (the CPU plugin
  makes dynamic dims 0; OpenVINO's reference evaluate only allows a static shape). Its declared output is
  the variable's type and shape, except that a variable of dynamic type and rank takes the init's.
  The init must fit the variable: `variable_shape` relaxes the init's shape, the types are equal unless the
  variable's is dynamic (irrun compares only the dims its own inference knows: see `declared`).
- ReadValue-3 (`variable_id`, one input): the variable takes the input's type and shape; the input is the
  value while the variable is unset (OpenVINO's CPU plugin, measured).
- Assign-3/6 (`variable_id`, one input): the output is the input. Its agreement with the variable (the type
  compatible, the shapes compatible) is a graph-level check: `variable_problems`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ExecutionError, GraphError, IRError, ShapeError
from ..ir.types import ElementType, element_type
from .attrs import Str, Type
from .infrastructure import Parameter, PartialShape
from .registry import Op, TensorInfo, op
from .shapes import shape_str, static_dims


def compatible(a, b) -> bool:
    """Two partial shapes that some static shape fits (PartialShape::compatible)."""
    if a is None or b is None:
        return True
    return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))


def _type_fits(variable: ElementType | None, given: ElementType) -> bool:
    return variable is None or variable.name == "dynamic" or given.name == "dynamic" or variable == given


class ReadValueBase(Op):
    """What the runtime needs of a ReadValue: `read_info` (the output for a known state) and `run` with
    the variable's current value."""

    variable_id = Str()
    foldable = False  # its value is the state's, never a constant
    reads_state = True

    def declared(self, inputs) -> TensorInfo:
        raise NotImplementedError

    def infer(self, inputs):
        return [self.declared(inputs)]

    def read_info(self, inputs: list[TensorInfo], current: TensorInfo | None) -> TensorInfo:
        """The output when the variable holds `current` (None: unset)."""
        declared = self.declared(inputs)
        if current is not None:
            if not _type_fits(declared.type, current.type) or not compatible(declared.shape, current.shape):
                raise ExecutionError(f"variable {self.variable_id!r} holds {current.type}{shape_str(current.shape)}, "
                                     f"the ReadValue gives {declared.type}{shape_str(declared.shape)}",
                                     rule="variable.type")
            return TensorInfo(current.shape, current.type)
        if inputs:
            return TensorInfo(inputs[0].shape, inputs[0].type)
        return TensorInfo(self.zeros_shape(declared.shape), declared.type)

    def zeros_shape(self, shape):
        if shape is None:
            raise ShapeError(f"variable {self.variable_id!r} is unset, has no init input and a dynamic rank",
                             rule="variable.shape")
        return tuple(0 if d is None else d for d in shape)

    def run(self, inputs, in_infos, out_infos, current=None):
        if current is not None:
            return [current]
        if inputs:
            return [inputs[0]]
        info = out_infos[0]
        return [np.zeros(info.shape, info.type.storage)]


@op("ReadValue", 3)
class ReadValue3(ReadValueBase):
    num_inputs = (1, 1)

    def declared(self, inputs):
        return TensorInfo(inputs[0].shape, inputs[0].type)


@op("ReadValue", 6)
class ReadValue6(ReadValueBase):
    variable_type = Type(default=None)
    variable_shape = PartialShape(default=None)  # bounds; None: any rank
    num_inputs = (0, 1)

    @property
    def variable_dims(self):
        return static_dims(self.variable_shape)

    def variable_info(self) -> TensorInfo:
        return TensorInfo(self.variable_dims, self.variable_type or element_type("dynamic"))

    def declared(self, inputs):
        var_type, var_shape = self.variable_type, self.variable_dims
        dynamic_type = var_type is None or var_type.name == "dynamic"
        if inputs:
            init = inputs[0]
            # OpenVINO asks that variable_shape relax the init's shape; irrun's inference leaves dims dynamic that
            # OpenVINO's propagation of partial values knows (a Broadcast to Concat(ShapeOf(x)[0], [2, 0, 4]) is
            # [?,2,0,4] there, [?,?,?,?] here), so only dims both sides know are compared.
            if not compatible(var_shape, init.shape):
                raise ShapeError(f"variable_shape {shape_str(var_shape)} does not relax (extend) the init input's "
                                 f"shape {shape_str(init.shape)}", rule="variable.shape")
            if not dynamic_type and init.type != var_type:
                raise ShapeError(f"variable_type {var_type} differs from the init input's type {init.type}",
                                 rule="variable.type")
            if dynamic_type:
                return TensorInfo(init.shape if var_shape is None else var_shape, init.type)
            return TensorInfo(var_shape, var_type)
        if dynamic_type:
            raise ShapeError(f"variable {self.variable_id!r} has a dynamic variable_type and no init input",
                             rule="variable.type")
        return TensorInfo(var_shape, var_type)


class AssignBase(Op):
    variable_id = Str()
    num_inputs = (1, 1)
    foldable = False
    writes_state = True

    def infer(self, inputs):
        return [TensorInfo(inputs[0].shape, inputs[0].type)]

    def run(self, inputs, in_infos, out_infos):
        return [inputs[0]]


@op("Assign", 3)
class Assign3(AssignBase):
    pass


@op("Assign", 6)
class Assign6(AssignBase):
    pass


# ---------------------------------------------------------------- variables of a graph

@dataclass
class VariableDecl:
    """A variable as its ReadValue declares it (`info`: type and shape; for ReadValue-3 its input's)."""

    id: str
    readers: list          # ReadValue nodes
    writers: list          # Assign nodes
    info: TensorInfo | None = None


def graph_variables(graph) -> dict[str, VariableDecl]:
    variables: dict[str, VariableDecl] = {}
    for layer_id in graph.order:
        node = graph.nodes[layer_id]
        if isinstance(node.op, (ReadValueBase, AssignBase)):
            decl = variables.setdefault(node.op.variable_id, VariableDecl(node.op.variable_id, [], []))
            (decl.readers if isinstance(node.op, ReadValueBase) else decl.writers).append(node)
    return variables


def variable_problems(graph, infos: dict) -> list[IRError]:
    """Every ReadValue/Assign pair that disagrees, given the inferred `infos` ((layer id, port) -> TensorInfo;
    missing entries are not checked). Rules: variable.assign (an Assign whose variable no ReadValue
    declares: OpenVINO cannot read the file), variable.assign.multiple (two Assigns for one variable: OpenVINO
    reads the file, its CPU plugin refuses it), variable.read.only (warning: a ReadValue whose variable no
    Assign writes; OpenVINO reads the file, its CPU plugin refuses it; irrun reads the initial value every
    run), variable.type and variable.shape (the Assign's input against the variable, two ReadValues of one
    variable declaring different types or shapes)."""
    problems: list[IRError] = []
    for decl in graph_variables(graph).values():
        declared = []
        for node in decl.readers:
            info = node.op.variable_info() if isinstance(node.op, ReadValue6) else infos.get((node.id, 0))
            if info is not None:
                declared.append((node, info))
        problems += filter(None, (_unrelaxed(graph, node) for node in decl.readers))
        for (first, a), (node, b) in zip(declared, declared[1:]):
            if a.type != b.type or a.shape != b.shape:
                problems.append(ShapeError(f"variable {decl.id!r} is declared {a.type}{shape_str(a.shape)} by layer "
                                           f"{first.id} and {b.type}{shape_str(b.shape)} here", layer=node.ref,
                                           rule="variable.conflict"))
        if not decl.readers:
            for node in decl.writers:
                problems.append(GraphError(f"no ReadValue declares variable {decl.id!r}", layer=node.ref,
                                           rule="variable.assign"))
            continue
        if not decl.writers:
            for node in decl.readers:
                problems.append(GraphError(f"no Assign writes variable {decl.id!r}: every run reads its initial "
                                           f"value (OpenVINO's CPU plugin refuses such a model)", layer=node.ref,
                                           rule="variable.read.only"))
        for node in decl.writers:
            if isinstance(node.op, Assign3) and not _reads_upstream(graph, node, decl.id):
                problems.append(GraphError(f"Assign-3 finds variable {decl.id!r} only through a ReadValue-3 of it "
                                           f"that its input depends on; there is none", layer=node.ref,
                                           rule="variable.assign"))
        for node in decl.writers[1:]:
            problems.append(GraphError(f"variable {decl.id!r} is assigned twice (also by layer "
                                       f"{decl.writers[0].id})", layer=node.ref, rule="variable.assign.multiple"))
        if not declared:
            continue
        variable = declared[0][1]
        for node in decl.writers:
            given = infos.get(node.inputs[0]) if node.inputs and node.inputs[0] is not None else None
            if given is None:
                continue
            if not _type_fits(variable.type, given.type):
                problems.append(ShapeError(f"assigns {given.type} to variable {decl.id!r} of type {variable.type}",
                                           layer=node.ref, rule="variable.type"))
            elif not compatible(variable.shape, given.shape):
                problems.append(ShapeError(f"assigns shape {shape_str(given.shape)} to variable {decl.id!r} of "
                                           f"shape {shape_str(variable.shape)}", layer=node.ref,
                                           rule="variable.shape"))
    return problems


def _unrelaxed(graph, node) -> IRError | None:
    """A ReadValue-6 fed by a Parameter (whose shape irrun knows exactly as OpenVINO does): `variable_shape`
    must relax it, so a dim the Parameter leaves dynamic must be dynamic in the variable too. (Other inits
    are compared dim by dim where both are known, in ReadValue6.declared: irrun's inference may leave dynamic
    a dim OpenVINO knows.)"""
    if not isinstance(node.op, ReadValue6) or not node.inputs or node.inputs[0] is None:
        return None
    source, var_shape = graph.nodes.get(node.inputs[0][0]), node.op.variable_dims
    if source is None or not isinstance(source.op, Parameter) or var_shape is None:
        return None
    init = source.op.infer([])[0]  # its `shape`, not the dims its port declares (which `infos` may hold)
    if init.shape is None or any(i is None and v is not None for i, v in zip(init.shape, var_shape)):
        return ShapeError(f"variable_shape {shape_str(var_shape)} does not relax (extend) the shape "
                          f"{shape_str(init.shape)} of the Parameter feeding it", layer=node.ref,
                          rule="variable.shape")
    return None


def _reads_upstream(graph, assign, variable_id: str) -> bool:
    """Whether a ReadValue-3 of the variable is among the layers the Assign's input depends on (OpenVINO's
    Assign-3 looks for its variable there, and nowhere else)."""
    seen, stack = set(), [source[0] for source in assign.inputs if source is not None]
    while stack:
        layer_id = stack.pop()
        if layer_id in seen or layer_id not in graph.nodes:
            continue
        seen.add(layer_id)
        node = graph.nodes[layer_id]
        if isinstance(node.op, ReadValue3) and node.op.variable_id == variable_id:
            return True
        stack.extend(source[0] for source in node.inputs if source is not None)
    return False


WARNING_RULES = {"variable.read.only"}
