"""Model input and output names as OpenVINO gives them, read from the IR records alone, so that `run` (on a
loaded model) and `info` (also on a model irrun cannot load) name tensors the same way."""
from __future__ import annotations

from .graph import layer_ref
from ..ir.model import IRDocument, Layer


def tensor_names(doc: IRDocument, layer: Layer, port_index: int) -> tuple[str, ...]:
    """A tensor's names as OpenVINO reads them: the port's `names`, plus the producer's layer name in IR v10."""
    names = set(layer.outputs[port_index].names) if port_index < len(layer.outputs) else set()
    if doc.ir_version == 10 and layer_ref(layer).type != "Constant":
        names.add(layer.name if len(layer.outputs) == 1 else f"{layer.name}.{port_index}")
    return tuple(sorted(names))


def result_names(doc: IRDocument, result: Layer, source: tuple[Layer, int] | None) -> tuple[str, ...]:
    """A Result's names: its own `output_names` (IR v11) when given, else the names of the tensor it returns
    (`source`: producer layer and output port; None when the Result is not connected)."""
    own = result.extra.get("output_names")
    if own is not None and doc.ir_version >= 11:
        return tuple(sorted({n.strip() for n in own.split(",") if n.strip()}))
    return tensor_names(doc, *source) if source is not None else ()


def input_name(doc: IRDocument, parameter: Layer) -> tuple[str, tuple[str, ...]]:
    """A Parameter's name (its first tensor name, else the layer name) and every name it answers to."""
    names = tensor_names(doc, parameter, 0) or (parameter.name,)
    return names[0], tuple(dict.fromkeys(names + (parameter.name,)))


def output_names(doc: IRDocument, results: list[Layer], sources: list) -> list[tuple[str, tuple[str, ...]]]:
    """Each Result's name (its first name unless an earlier output took it: then `output<position>`) and names."""
    named, used = [], set()
    for position, (result, source) in enumerate(zip(results, sources)):
        names = result_names(doc, result, source)
        name = names[0] if names and names[0] not in used else f"output{position}"
        used.add(name)
        named.append((name, names))
    return named


def result_sources(doc: IRDocument, results: list[Layer]) -> list[tuple[Layer, int] | None]:
    """The producer (layer, output port) feeding each Result, from the IR's edges."""
    by_id = {layer.id: layer for layer in doc.layers}
    feeding = {(e.to_layer, e.to_port): (e.from_layer, e.from_port) for e in doc.edges}
    sources = []
    for result in results:
        edge = feeding.get((result.id, result.inputs[0].id if result.inputs else 0))
        producer = by_id.get(edge[0]) if edge else None
        index = next((i for i, port in enumerate(producer.outputs) if port.id == edge[1]), None) if producer else None
        sources.append((producer, index) if index is not None else None)
    return sources
