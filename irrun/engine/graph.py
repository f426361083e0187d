"""The resolved graph: each layer bound to its op, edges resolved to port indices, execution order.

`build_graph` serves both the runtime and the checker: without `report` it raises the first structural
problem; with `report` it hands each problem to that callback and builds as much of the graph as it can
(a problem's layer is then left unbound, its edge ignored or its input None)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..errors import GraphError, InvalidAttributeError, IRError, LayerRef, UnsupportedOpError
from ..ir.model import IRDocument, Layer
from ..ir.opsets import first_listed, is_known_opset, resolve
from ..ops import lookup
from ..ops.registry import EXTENSION_REGISTRY, Context, Op

Report = Callable[[IRError], None]


@dataclass
class Node:
    layer: Layer
    ref: LayerRef
    op: Op | None
    inputs: list[tuple[str, int] | None] = field(default_factory=list)  # (producer id, output index); None: unfed
    unknown_attrs: list[str] = field(default_factory=list)
    invalid: bool = False  # its attributes could not be parsed (reported), so it has no op

    @property
    def id(self) -> str:
        return self.layer.id


@dataclass
class Graph:
    doc: IRDocument
    nodes: dict[str, Node]
    order: list[str]          # live layers (what the Results and Assigns need), producers before consumers
    parameters: list[str]     # every Parameter, in XML order (OpenVINO's input order)
    results: list[str]        # every Result, in XML order (OpenVINO's output order)
    dead: list[str]

    def consumers(self) -> dict[tuple[str, int], int]:
        """How many live inputs read each (layer id, output index)."""
        counts: dict[tuple[str, int], int] = {}
        for layer_id in self.order:
            for source in self.nodes[layer_id].inputs:
                counts[source] = counts.get(source, 0) + 1
        return counts


def layer_ref(layer: Layer) -> LayerRef:
    op_type, version = resolve(layer.type, layer.opset)
    return LayerRef(layer.id, layer.name, op_type, version)


def bind_layer(layer: Layer, context: Context) -> Node:
    ref = layer_ref(layer)
    op_class = lookup(ref.type, ref.version)
    if op_class is None and layer.opset.strip() == "extension":
        op_class = EXTENSION_REGISTRY.get(layer.type)
    if op_class is None:
        return Node(layer, ref, None)
    try:
        op, unknown = op_class.bind(layer, context)
    except IRError as exc:
        raise exc.located(file=context.file, layer=ref) from None
    return Node(layer, ref, op, unknown_attrs=unknown)


def unsupported_error(node: Node, file) -> UnsupportedOpError:
    """Why a layer has no op: an unknown opset or type (rule layer.opset / layer.type) or an op irrun does
    not implement yet (layer.unimplemented)."""
    layer = node.layer
    if not is_known_opset(layer.opset):
        message, rule = f"unknown opset '{layer.opset}'", "layer.opset"
    elif node.ref.version is None and layer.opset.strip() == "extension":
        message, rule = f"unsupported extension op {layer.type}", "layer.unimplemented"
    elif node.ref.version is None:
        message, rule = f"type '{layer.type}' is not in {layer.opset}{first_listed(node.ref.type)}", "layer.type"
    else:
        message, rule = f"unsupported op {node.ref.type}-{node.ref.version} ({layer.opset})", "layer.unimplemented"
    return UnsupportedOpError(message + "; `irrun info --ops` lists the supported ops", file=file, layer=node.ref,
                              rule=rule)


def _raise(exc: IRError):
    raise exc


def build_graph(doc: IRDocument, context: Context, report: Report | None = None) -> Graph:
    file = doc.xml_path
    problem = report or _raise
    # Problems OpenVINO's reader lets through come last, so that with _raise a refusal it shares wins.
    lenient: list[IRError] = []
    nodes: dict[str, Node] = {}
    for layer in doc.layers:
        if layer.id in nodes:  # OpenVINO keeps the last layer of an id: the edges of the id name it
            lenient.append(GraphError(f"layer id {layer.id} is used twice (line {layer.line}); the earlier layer "
                                      "is dropped", file=file, layer=layer_ref(layer), rule="layer.id.duplicate"))
        try:
            nodes[layer.id] = bind_layer(layer, context)
        except IRError as exc:
            problem(exc)
            nodes[layer.id] = Node(layer, layer_ref(layer), None, invalid=True)
            continue
        for note in getattr(nodes[layer.id].op, "spec_notes", ()):  # the checker goes on as OpenVINO reads it
            lenient.append(InvalidAttributeError(note, file=file, layer=nodes[layer.id].ref, rule="attr.value.spec"))

    feeds: dict[tuple[str, int], tuple[str, int]] = {}
    for edge in doc.edges:
        source, target = nodes.get(edge.from_layer), nodes.get(edge.to_layer)
        if source is None or target is None:
            end = "from-layer" if source is None else "to-layer"
            known = source or target
            # OpenVINO ignores an edge into a missing layer (it feeds nothing); one from a missing layer it refuses.
            error = GraphError(f"edge {edge.from_layer}:{edge.from_port} -> {edge.to_layer}:{edge.to_port} "
                               f"names a missing layer in {end}", file=file,
                               rule="edge.ref" if source is None else "edge.ref.dangling",
                               layer=known.ref if known else None)
            (problem if source is None else lenient.append)(error)
            continue
        out_index = _port_index(source.layer.outputs, edge.from_port, source, "output", file, problem)
        in_index = _port_index(target.layer.inputs, edge.to_port, target, "input", file, problem)
        if out_index is None or in_index is None:
            continue
        if (target.id, in_index) in feeds:
            problem(GraphError(f"input port {edge.to_port} is fed by more than one edge", file=file,
                               layer=target.ref, port=edge.to_port, rule="edge.multiple"))
            continue
        feeds[(target.id, in_index)] = (source.id, out_index)

    for node in nodes.values():
        for index, port in enumerate(node.layer.inputs):
            if (node.id, index) not in feeds:
                problem(GraphError("input port is not connected", file=file, layer=node.ref, port=port.id,
                                   rule="edge.unfed"))
            node.inputs.append(feeds.get((node.id, index)))

    results = [layer_id for layer_id, node in nodes.items() if node.ref.type == "Result"]
    parameters = [layer_id for layer_id, node in nodes.items() if node.ref.type == "Parameter"]
    if not results:
        problem(GraphError("the model has no Result layer", file=file, rule="graph.results"))
    sinks = [layer_id for layer_id, node in nodes.items() if node.ref.type == "Assign"]  # state writes
    order = _topological_order(nodes, results + sinks, file, problem)
    live = set(order)
    dead = [layer_id for layer_id in nodes if layer_id not in live]
    for layer_id in order:
        if nodes[layer_id].op is None and not nodes[layer_id].invalid:
            problem(unsupported_error(nodes[layer_id], file))
    for error in lenient:
        problem(error)
    return Graph(doc, nodes, order, parameters, results, dead)


def _port_index(ports, port_id, node, direction, file, problem) -> int | None:
    for index, port in enumerate(ports):
        if port.id == port_id:
            return index
    problem(GraphError(f"an edge names {direction} port {port_id}, which the layer does not have", file=file,
                       layer=node.ref, port=port_id, rule="edge.port"))
    return None


def _topological_order(nodes: dict[str, Node], roots: list[str], file, problem) -> list[str]:
    """Post-order walk from the Results, iterative (no recursion limit); an edge closing a cycle is
    reported and then ignored."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    order: list[str] = []
    for root in roots:
        if state.get(root) == 2:
            continue
        stack = [(root, iter(nodes[root].inputs))]
        state[root] = 1
        while stack:
            layer_id, pending = stack[-1]
            for source in pending:
                if source is None:
                    continue
                source_id = source[0]
                status = state.get(source_id)
                if status == 1:
                    problem(GraphError(f"the graph has a cycle through layer {source_id}", file=file,
                                       layer=nodes[source_id].ref, rule="graph.cycle"))
                    continue
                if status is None:
                    state[source_id] = 1
                    stack.append((source_id, iter(nodes[source_id].inputs)))
                    break
            else:
                stack.pop()
                state[layer_id] = 2
                order.append(layer_id)
    return order
