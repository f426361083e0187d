"""The resolved graph: each layer bound to its op, edges resolved to port indices, execution order."""
from __future__ import annotations

from dataclasses import dataclass, field

from .errors import GraphError, IRError, LayerRef, UnsupportedOpError
from .ir.model import IRDocument, Layer
from .ir.opsets import is_known_opset, resolve
from .ops import lookup
from .ops.registry import Context, Op


@dataclass
class Node:
    layer: Layer
    ref: LayerRef
    op: Op | None
    inputs: list[tuple[str, int]] = field(default_factory=list)  # (producer layer id, output index)
    unknown_attrs: list[str] = field(default_factory=list)

    @property
    def id(self) -> str:
        return self.layer.id


@dataclass
class Graph:
    doc: IRDocument
    nodes: dict[str, Node]
    order: list[str]          # live layers, producers before consumers
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
    if op_class is None:
        return Node(layer, ref, None)
    try:
        op, unknown = op_class.bind(layer, context)
    except IRError as exc:
        raise exc.located(file=context.file, layer=ref) from None
    return Node(layer, ref, op, unknown_attrs=unknown)


def unsupported_error(node: Node, file) -> UnsupportedOpError:
    layer = node.layer
    if not is_known_opset(layer.opset):
        message = f"unknown opset '{layer.opset}'"
    elif node.ref.version is None:
        message = f"type '{layer.type}' is not in {layer.opset}"
    else:
        message = f"unsupported op {node.ref.type}-{node.ref.version} ({layer.opset})"
    return UnsupportedOpError(message + "; `irrun info --ops` lists the supported ops", file=file, layer=node.ref)


def build_graph(doc: IRDocument, context: Context) -> Graph:
    file = doc.xml_path
    nodes: dict[str, Node] = {}
    for layer in doc.layers:
        if layer.id in nodes:
            raise GraphError(f"layer id {layer.id} is used twice (line {layer.line})", file=file,
                             layer=layer_ref(layer), rule="layer.id")
        nodes[layer.id] = bind_layer(layer, context)

    feeds: dict[tuple[str, int], tuple[str, int]] = {}
    for edge in doc.edges:
        for end, port_id in (("from-layer", edge.from_layer), ("to-layer", edge.to_layer)):
            if port_id not in nodes:
                raise GraphError(f"edge {edge.from_layer}:{edge.from_port} -> {edge.to_layer}:{edge.to_port} "
                                 f"names a missing layer in {end}", file=file, rule="edge.ref")
        source, target = nodes[edge.from_layer], nodes[edge.to_layer]
        out_index = _port_index(source.layer.outputs, edge.from_port, source, "output", file)
        in_index = _port_index(target.layer.inputs, edge.to_port, target, "input", file)
        if (target.id, in_index) in feeds:
            raise GraphError(f"input port {edge.to_port} is fed by more than one edge", file=file,
                             layer=target.ref, port=edge.to_port, rule="edge.multiple")
        feeds[(target.id, in_index)] = (source.id, out_index)

    for node in nodes.values():
        for index, port in enumerate(node.layer.inputs):
            if (node.id, index) not in feeds:
                raise GraphError("input port is not connected", file=file, layer=node.ref, port=port.id,
                                 rule="edge.unfed")
            node.inputs.append(feeds[(node.id, index)])

    results = [layer.id for layer in doc.layers if nodes[layer.id].ref.type == "Result"]
    parameters = [layer.id for layer in doc.layers if nodes[layer.id].ref.type == "Parameter"]
    if not results:
        raise GraphError("the model has no Result layer", file=file, rule="graph.results")
    order = _topological_order(nodes, results, file)
    live = set(order)
    dead = [layer.id for layer in doc.layers if layer.id not in live]
    for layer_id in order:
        if nodes[layer_id].op is None:
            raise unsupported_error(nodes[layer_id], file)
    return Graph(doc, nodes, order, parameters, results, dead)


def _port_index(ports, port_id, node, direction, file) -> int:
    for index, port in enumerate(ports):
        if port.id == port_id:
            return index
    raise GraphError(f"an edge names {direction} port {port_id}, which the layer does not have", file=file,
                     layer=node.ref, port=port_id, rule="edge.port")


def _topological_order(nodes: dict[str, Node], roots: list[str], file) -> list[str]:
    """Post-order walk from the Results, iterative (no recursion limit), refusing cycles."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    order: list[str] = []
    for root in roots:
        if state.get(root) == 2:
            continue
        stack = [(root, iter(nodes[root].inputs))]
        state[root] = 1
        while stack:
            layer_id, pending = stack[-1]
            for source_id, _ in pending:
                status = state.get(source_id)
                if status == 1:
                    raise GraphError(f"the graph has a cycle through layer {source_id}", file=file,
                                     layer=nodes[source_id].ref, rule="graph.cycle")
                if status is None:
                    state[source_id] = 1
                    stack.append((source_id, iter(nodes[source_id].inputs)))
                    break
            else:
                stack.pop()
                state[layer_id] = 2
                order.append(layer_id)
    return order
