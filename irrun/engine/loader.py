"""The loader: from a model.xml path to a ready Model in one pass, top-down.

read the IR -> bind the graph (one op per layer) -> find the compressed weights -> infer every layer and
fold what is constant -> check the variables -> name the inputs and outputs -> Model.
"""
from __future__ import annotations

import numpy as np

from . import layers, names
from ..ir.model import IRDocument
from ..ir.weights import RELEASE_BYTES, WeightsFile
from ..ir.xml import read_xml
from ..ops import TensorInfo
from ..ops.budget import Budget
from ..ops.registry import Context
from ..ops.state import WARNING_RULES as STATE_WARNINGS
from ..ops.state import graph_variables, variable_problems
from .bodies import BodyRunner
from .decompression import Decompression
from .folding import WideValues
from .graph import Graph, build_graph
from .weight_layout import aligned_for_run_time, weights_by_column
from .runtime import Model, TensorDesc


def load(path, max_memory: int | None = None) -> Model:
    """Read, resolve and check a model so that it is ready to run."""
    return load_document(read_xml(path), max_memory)


def load_document(doc: IRDocument, max_memory: int | None = None) -> Model:
    """`load` of a model.xml already read (read_xml): the fuzzer checks and loads each case from one reading."""
    budget = Budget(max_memory)
    context = Context(file=doc.xml_path, weights=WeightsFile(doc.bin_path), budget=budget, bodies=BODIES)
    graph = build_graph(doc, context)
    return bind(graph, budget, context.weights)


def bind(graph: Graph, budget: Budget, weights: WeightsFile | None = None, parameter_infos: dict | None = None,
         model_class=Model) -> Model:
    """A bound graph made a ready Model. `parameter_infos` (layer id -> TensorInfo) replaces the Parameters'
    declared shapes and types (a Loop or If body fed by its outer op)."""
    path = graph.doc.xml_path

    def infer(node, in_infos):
        if parameter_infos is not None and node.ref.type == "Parameter":
            return [parameter_infos[node.id]]
        return layers.infer(node, in_infos, path)

    consumers = graph.consumers()
    decompression = Decompression(graph)
    with np.errstate(all="ignore"):
        infos = infer_and_fold(graph, budget, weights, decompression, consumers, infer)
    weights_by_column(graph, infos, budget, weights)
    aligned_for_run_time(graph, infos, weights, decompression.absorbed)
    if weights is not None:
        weights.release()  # once every copy from the mapping is made
    for layer_id, unused in unused_outputs(graph, consumers).items():
        graph.nodes[layer_id].op.unused_outputs = unused
    for problem in variable_problems(graph, infos):
        if problem.rule not in STATE_WARNINGS:
            raise problem.located(file=path)
    inputs = [input_desc(graph, infos, layer_id, infer) for layer_id in graph.parameters]
    return model_class(graph, budget, weights, infos=infos, decompression=decompression,
                       variables=sorted(graph_variables(graph)), inputs=inputs, outputs=output_descs(graph, infos))


BODIES = BodyRunner(bind)  # handed to Loop, If and TensorIterator in their Context


def infer_and_fold(graph: Graph, budget: Budget, weights, decompression: Decompression, consumers: dict,
                   infer) -> dict[tuple[str, int], TensorInfo]:
    """Infer every live layer from the declared inputs; layers whose inputs are all constant are computed
    here once (f16 Const -> Convert, shape arithmetic) and not on every run."""
    path = graph.doc.xml_path
    infos: dict[tuple[str, int], TensorInfo] = {}
    wide = WideValues()  # f16/bf16 folded values kept in f32 (irrun/engine/folding.py)
    remaining = dict(consumers)
    for layer_id in graph.order:
        node = graph.nodes[layer_id]
        in_infos = [infos[source] for source in node.inputs]
        if layer_id in decompression.codes:  # left compressed: irrun/engine/decompression.py
            out_infos = [decompression.codes_info(node)]
        else:
            out_infos = infer(node, in_infos)
        if node.op.foldable and node.ref.type != "Constant" and in_infos and all(
                i.value is not None for i in in_infos):
            out_infos = wide.fold(node, in_infos, out_infos,
                                  lambda _, ii, oi, node=node: layers.fold(node, ii, oi, budget, path))
        for index, info in enumerate(out_infos):
            if isinstance(info.value, np.ndarray):  # read-only, as the Consts read from the weights file:
                info.value.flags.writeable = False  # kernels may keep what they derive from them
            infos[(layer_id, index)] = info
        for source in node.inputs:
            remaining[source] -= 1
            if not remaining[source]:
                wide.forget(source)
        if weights is not None:
            weights.release(RELEASE_BYTES)
    decompression.bind(infos, budget)
    return infos


def unused_outputs(graph: Graph, consumers: dict) -> dict[str, frozenset]:
    """Per live layer, the outputs no live layer reads and no Result returns (e.g. MaxPool indices a
    converter leaves unconnected): ops may skip computing them, unless an observer wants to see them."""
    read = set(consumers)
    return {layer_id: frozenset(i for i in range(len(graph.nodes[layer_id].layer.outputs))
                                if (layer_id, i) not in read)
            for layer_id in graph.order}


def input_desc(graph: Graph, infos: dict, layer_id: str, infer) -> TensorDesc:
    node = graph.nodes[layer_id]
    name, all_names = names.input_name(graph.doc, node.layer)
    info = infos.get((layer_id, 0)) or infer(node, [])[0]
    return TensorDesc(name, all_names, info.shape, info.type.name)


def output_descs(graph: Graph, infos: dict) -> list[TensorDesc]:
    nodes = [graph.nodes[r] for r in graph.results]
    sources = [(graph.nodes[n.inputs[0][0]].layer, n.inputs[0][1]) for n in nodes]
    named = names.output_names(graph.doc, [n.layer for n in nodes], sources)
    return [TensorDesc(name, all_names, infos[n.inputs[0]].shape, infos[n.inputs[0]].type.name)
            for (name, all_names), n in zip(named, nodes)]
