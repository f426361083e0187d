"""Finding decompression chains (irrun/engine/decompression.py says what is matched): a low-precision Const,
elementwise layers with per-group side inputs, at most one Reshape, read only by MatMul or Gather layers that
can take the weight fused."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.types import ElementType

HEAD_TYPES_MAX_BITS = 8
ELEMENTWISE = ("Convert", "Subtract", "Multiply", "Add")


@dataclass
class Chain:
    """A matched decompression chain: the code Const, its layers in order, the output and its readers."""

    codes: str                       # the Constant layer id holding the codes
    layers: list[str]                # chain layers in execution order (head first, output last)
    reshape: str | None              # the Reshape layer, if any
    consumers: list[tuple[str, int]]  # (layer id, input index) reading the chain's output

    @property
    def output(self) -> tuple[str, int]:
        return (self.layers[-1], 0)

    @property
    def absorbed(self) -> list[str]:
        return [self.codes] + self.layers


# ---------------------------------------------------------------- matching

def find_chains(graph) -> list[Chain]:
    """Every decompression chain whose readers are all MatMul/Gather layers that can take it fused."""
    readers: dict[tuple[str, int], list[tuple[str, int]]] = {}
    for layer_id in graph.order:
        for index, source in enumerate(graph.nodes[layer_id].inputs):
            readers.setdefault(source, []).append((layer_id, index))
    chains, seen, absorbed = [], set(), set()
    for layer_id in reversed(graph.order):  # readers nearest the outputs first: a codebook's own Gather
        if layer_id in absorbed:            # is then part of a chain, not a reader of one
            continue
        node = graph.nodes[layer_id]
        for index, source in enumerate(node.inputs):
            if source is None or source in seen or not _fusable_reader(graph, node, index):
                continue
            chain = _match(graph, source, readers)
            if chain is not None and all(_fusable_reader(graph, graph.nodes[r], i) for r, i in chain.consumers):
                chains.append(chain)
                seen.add(source)
                absorbed.update(chain.absorbed)
    chains.reverse()
    return chains


def _fusable_reader(graph, node, index) -> bool:
    if node.op is None:
        return False
    if node.ref.type == "MatMul":
        return index == 1 and node.op.transpose_b
    if node.ref.type == "Gather":
        axis = _const_value(graph, node.inputs[2])
        return index == 0 and axis is not None and axis.size == 1 and int(axis.reshape(-1)[0]) == 0 \
            and getattr(node.op, "batch_dims", 0) == 0
    return False


def _const_value(graph, source):
    if source is None:
        return None
    node = graph.nodes[source[0]]
    if node.ref.type != "Constant" or node.op is None or node.op.element_type.name not in ("i32", "i64"):
        return None
    try:
        return node.op.load()
    except Exception:  # noqa: BLE001 - a broken Const is reported by the normal load
        return None


def _is_codes(graph, source) -> bool:
    node = graph.nodes[source[0]]
    if node.ref.type != "Constant" or node.op is None:
        return False
    et: ElementType = node.op.element_type
    return et.storage is not None and et.bits <= HEAD_TYPES_MAX_BITS and et.name not in ("boolean",) \
        and len(node.op.shape) >= 1


def _is_side(graph, source) -> bool:
    """A small constant input: a Const, or Convert / Reshape / Unsqueeze of one."""
    node = graph.nodes[source[0]]
    if node.ref.type == "Constant":
        return True
    if node.ref.type in ("Convert", "Reshape", "Unsqueeze") and node.inputs and node.inputs[0] is not None:
        return all(s is not None and _is_side(graph, s) for s in node.inputs)
    return False


def _size_if_side(graph, source) -> float:
    """The element count of a side input's Const (the data path, which is not one, counts as infinite):
    of the two operands the larger is the weight, the smaller its zero point or scale."""
    if not _is_side(graph, source):
        return float("inf")
    node = graph.nodes[source[0]]
    while node.ref.type != "Constant":
        node = graph.nodes[node.inputs[0][0]]
    return float(np.prod(node.op.shape)) if node.op is not None else float("inf")


def _match(graph, output, readers) -> Chain | None:
    """Walk up from the chain's output to its codes; None when the layers do not form a chain."""
    layers, reshape = [], None
    source = output
    while True:
        if source is None or source[1] != 0:
            return None
        node = graph.nodes[source[0]]
        if node.op is None:
            return None
        if layers and len(readers.get(source, [])) != 1:
            return None
        kind = node.ref.type
        if kind == "Convert" and _is_codes(graph, node.inputs[0]):
            layers.append(source[0])
            codes = node.inputs[0][0]
            break
        if kind == "Gather" and _is_codes(graph, node.inputs[1]) or (
                kind == "Gather" and graph.nodes[node.inputs[1][0]].ref.type == "Convert"
                and _is_codes(graph, graph.nodes[node.inputs[1][0]].inputs[0])):
            axis = _const_value(graph, node.inputs[2])
            if axis is None or axis.size != 1 or int(axis.reshape(-1)[0]) != 0 or not _is_side(graph, node.inputs[0]):
                return None
            layers.append(source[0])
            index_source = node.inputs[1]
            if graph.nodes[index_source[0]].ref.type == "Convert":
                if len(readers.get(index_source, [])) != 1:
                    return None
                layers.append(index_source[0])
                index_source = graph.nodes[index_source[0]].inputs[0]
            codes = index_source[0]
            break
        if kind == "Reshape" and reshape is None and _const_value(graph, node.inputs[1]) is not None:
            if any(graph.nodes[lid].ref.type in ELEMENTWISE[1:] for lid in layers):
                return None  # arithmetic after the Reshape: not constant along the groups
            reshape = source[0]
            layers.append(source[0])
            source = node.inputs[0]
            continue
        if kind == "Convert":
            layers.append(source[0])
            source = node.inputs[0]
            continue
        if kind in ("Subtract", "Multiply", "Add"):
            if len(node.inputs) != 2 or None in node.inputs:
                return None
            sizes = [_size_if_side(graph, s) for s in node.inputs]
            data = [int(sizes[1] > sizes[0])]
            if sizes[0] == sizes[1] or (kind == "Subtract" and data[0] != 0):
                return None
            layers.append(source[0])
            source = node.inputs[data[0]]
            continue
        return None
    if len(readers.get((codes, 0), [])) != 1:
        return None
    layers.reverse()
    return Chain(codes, layers, reshape, list(readers.get(output, [])))
