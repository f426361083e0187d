"""Loading a model into a runnable form and executing it."""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from . import names
from .budget import Budget
from .errors import ExecutionError, InputError, IRError, ShapeError
from .graph import Graph, Node, build_graph
from .ir.types import ElementType
from .ir.weights import WeightsFile
from .ir.xml import read_xml
from .ops import TensorInfo
from .ops.registry import Context
from .ops.shapes import numel, parse_dim, shape_str


@dataclass(frozen=True)
class TensorDesc:
    """A model input or output: its name (OpenVINO's get_any_name(), else a fallback), every tensor name,
    its shape (None for a dynamic dim; None for a dynamic rank) and its element type."""

    name: str
    names: tuple[str, ...]
    shape: tuple | None
    element_type: str


def tensor_names(graph: Graph, layer_id: str, port_index: int) -> tuple[str, ...]:
    """A tensor's names as OpenVINO reads them (irrun/names.py)."""
    return names.tensor_names(graph.doc, graph.nodes[layer_id].layer, port_index)


def result_names(graph: Graph, result_id: str) -> tuple[str, ...]:
    """A Result's names (irrun/names.py)."""
    source_id, port_index = graph.nodes[result_id].inputs[0]
    return names.result_names(graph.doc, graph.nodes[result_id].layer, (graph.nodes[source_id].layer, port_index))


class Model:
    """A loaded model: `inputs`, `outputs` and `run()`."""

    def __init__(self, graph: Graph, budget: Budget):
        self.graph = graph
        self.budget = budget
        self.path = graph.doc.xml_path
        self.infos: dict[tuple[str, int], TensorInfo] = {}
        self._consumers = graph.consumers()
        self._unused = self._unused_outputs()
        with np.errstate(all="ignore"):
            self._infer_at_load()
        self._results_read = {graph.nodes[r].inputs[0] for r in graph.results}  # inference checked they exist
        self.inputs = [self._input_desc(pid) for pid in graph.parameters]
        self.outputs = self._output_descs()

    # ------------------------------------------------------------ load

    def _infer_at_load(self) -> None:
        """Infer every live layer from the declared inputs; layers whose inputs are all constant are
        computed here once (f16 Const -> Convert, shape arithmetic) and not on every run."""
        for layer_id in self.graph.order:
            node = self.graph.nodes[layer_id]
            in_infos = [self.infos[source] for source in node.inputs]
            out_infos = self._infer(node, in_infos)
            if node.op.foldable and node.ref.type != "Constant" and in_infos and all(
                    i.value is not None for i in in_infos):
                values = self._execute(node, [i.value for i in in_infos], in_infos, out_infos)
                out_infos = [TensorInfo(info.shape, info.type, value) for info, value in zip(out_infos, values)]
            for index, info in enumerate(out_infos):
                self.infos[(layer_id, index)] = info

    def _unused_outputs(self) -> dict[str, frozenset]:
        """Per live layer, the outputs no live layer reads and no Result returns (e.g. MaxPool indices a
        converter leaves unconnected): ops may skip computing them, unless an observer wants to see them."""
        read = set(self._consumers)
        return {layer_id: frozenset(i for i in range(len(self.graph.nodes[layer_id].layer.outputs))
                                    if (layer_id, i) not in read)
                for layer_id in self.graph.order}

    def _infer(self, node: Node, in_infos: list[TensorInfo]) -> list[TensorInfo]:
        try:
            node.op.check_inputs(len(in_infos))
            out_infos = node.op.infer(in_infos)
            produced = 0 if node.ref.type == "Result" else len(out_infos)
            if len(node.layer.outputs) > produced:
                raise ShapeError(f"the layer declares {len(node.layer.outputs)} output ports; "
                                 f"{node.ref.type}-{node.ref.version} has {produced}", rule="port.count")
            return out_infos
        except IRError as exc:
            raise exc.located(file=self.path, layer=node.ref) from None
        except (ValueError, IndexError, TypeError, ArithmeticError, MemoryError) as exc:
            raise ShapeError(f"shape inference failed: {type(exc).__name__}: {exc}", file=self.path,
                             layer=node.ref) from exc

    def _input_desc(self, layer_id: str) -> TensorDesc:
        node = self.graph.nodes[layer_id]
        name, all_names = names.input_name(self.graph.doc, node.layer)
        info = self.infos.get((layer_id, 0)) or self._infer(node, [])[0]
        return TensorDesc(name, all_names, info.shape, info.type.name)

    def _output_descs(self) -> list[TensorDesc]:
        nodes = [self.graph.nodes[r] for r in self.graph.results]
        sources = [(self.graph.nodes[n.inputs[0][0]].layer, n.inputs[0][1]) for n in nodes]
        named = names.output_names(self.graph.doc, [n.layer for n in nodes], sources)
        return [TensorDesc(name, all_names, self.infos[n.inputs[0]].shape, self.infos[n.inputs[0]].type.name)
                for (name, all_names), n in zip(named, nodes)]

    # ------------------------------------------------------------ run

    def run(self, inputs, observer=None) -> dict[str, np.ndarray]:
        """Run the model. `inputs`: a dict by input name (any tensor name or the Parameter's layer name)
        or a list in input order. Returns output name -> array, in output order.

        `observer(node, outputs, seconds)`, when given, sees every live layer in execution order with
        its output arrays and the time its kernel took (0 for inputs and for layers computed at load)."""
        with np.errstate(all="ignore"):  # overflow to inf, NaN from 0/0: values, not warnings
            return self._run(inputs, observer)

    def _run(self, inputs, observer):
        self.budget.live = 0
        feeds = self._bind_inputs(inputs)
        values: dict[tuple[str, int], np.ndarray] = {}
        infos: dict[tuple[str, int], TensorInfo] = {}
        remaining = dict(self._consumers)
        keep = self._results_read
        for layer_id in self.graph.order:
            node = self.graph.nodes[layer_id]
            known = self.infos.get((layer_id, 0))
            if node.ref.type == "Parameter":
                array = feeds[layer_id]
                values[(layer_id, 0)] = array
                infos[(layer_id, 0)] = TensorInfo(array.shape, known.type, array)
                self.budget.live += array.nbytes
                if observer:
                    observer(node, [array], 0.0)
                continue
            if known is not None and known.value is not None:  # computed at load
                for index in range(len(node.layer.outputs) or 1):
                    info = self.infos[(layer_id, index)]
                    values[(layer_id, index)] = info.value
                    infos[(layer_id, index)] = info
                if observer:
                    observer(node, [values[(layer_id, i)] for i in range(len(node.layer.outputs) or 1)], 0.0)
                continue
            in_arrays = [values[source] for source in node.inputs]
            in_infos = [infos[source] for source in node.inputs]
            out_infos = self._infer(node, in_infos)
            node.op.unused_outputs = frozenset() if observer else self._unused[layer_id]
            started = time.perf_counter()
            out_arrays = self._execute(node, in_arrays, in_infos, out_infos)
            if observer:
                observer(node, out_arrays, time.perf_counter() - started)
            for index, (info, array) in enumerate(zip(out_infos, out_arrays)):
                values[(layer_id, index)] = array
                infos[(layer_id, index)] = TensorInfo(info.shape, info.type, array)
            for source in node.inputs:
                remaining[source] -= 1
                if remaining[source] == 0 and source not in keep:
                    freed = values.pop(source)
                    infos.pop(source)
                    if self.infos.get(source) is None or self.infos[source].value is None:
                        self.budget.live -= freed.nbytes
        return {desc.name: values[self.graph.nodes[r].inputs[0]] for desc, r in zip(self.outputs, self.graph.results)}

    def _execute(self, node: Node, in_arrays, in_infos, out_infos) -> list[np.ndarray]:
        for index, info in enumerate(out_infos):
            if not info.is_static:
                raise ExecutionError(f"output {index} shape {shape_str(info.shape)} is not known at run time",
                                     file=self.path, layer=node.ref)
            if node.ref.type not in ("Result", "Constant"):
                nbytes = numel(info.shape) * info.type.storage.itemsize
                try:
                    self.budget.check(nbytes, lambda: f"output {index} of shape {shape_str(info.shape)} {info.type}")
                except IRError as exc:
                    raise exc.located(file=self.path, layer=node.ref) from None
        try:
            outputs = node.op.run(in_arrays, in_infos, out_infos)
        except IRError as exc:
            raise exc.located(file=self.path, layer=node.ref) from None
        except (ValueError, IndexError, TypeError, ArithmeticError, MemoryError) as exc:
            raise ExecutionError(f"kernel failed: {type(exc).__name__}: {exc}", file=self.path,
                                 layer=node.ref) from exc
        for index, (array, info) in enumerate(zip(outputs, out_infos)):
            if array is None and index in node.op.unused_outputs:
                continue
            if array is None or array.shape != tuple(info.shape) or array.dtype != info.type.storage:
                got = "missing" if array is None else f"{array.dtype}{list(array.shape)}"
                raise ExecutionError(
                    f"internal error: output {index} is {got}, inference said "
                    f"{info.type.storage}{shape_str(info.shape)}", file=self.path, layer=node.ref)
            if node.ref.type not in ("Result", "Constant"):
                self.budget.live += array.nbytes
        return outputs

    def _bind_inputs(self, inputs) -> dict[str, np.ndarray]:
        if isinstance(inputs, dict):
            by_name = {}
            for desc, layer_id in zip(self.inputs, self.graph.parameters):
                for name in desc.names:
                    by_name.setdefault(name, layer_id)
            unknown = [k for k in inputs if k not in by_name]
            if unknown:
                raise InputError(f"no model input is named {unknown[0]!r}; inputs: "
                                 f"{', '.join(d.name for d in self.inputs)}", file=self.path)
            feeds = {}
            for key, array in inputs.items():
                if by_name[key] in feeds:
                    raise InputError(f"input {key!r} is given twice (under two of its names)", file=self.path)
                feeds[by_name[key]] = array
        else:
            inputs = list(inputs)
            if len(inputs) != len(self.inputs):
                raise InputError(f"{len(inputs)} inputs given, the model has {len(self.inputs)}", file=self.path)
            feeds = dict(zip(self.graph.parameters, inputs))
        live_params = set(self.graph.order)
        for desc, layer_id in zip(self.inputs, self.graph.parameters):
            if layer_id not in feeds:
                if layer_id in live_params:
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
        if array.dtype != et.storage:
            if array.dtype.kind in "biuf" and np.can_cast(array.dtype, et.storage, "safe") and et.name != "bf16":
                array = array.astype(et.storage)
            else:
                raise InputError(f"input {desc.name!r} has dtype {array.dtype}, expected {et.name} "
                                 f"({et.storage}; only lossless conversions are made)", file=self.path,
                                 layer=node.ref)
        bounds = node.op.shape
        if bounds is not None:
            if array.ndim != len(bounds) or any(
                    d < low or (high is not None and d > high) for d, (low, high) in zip(array.shape, bounds)):
                raise InputError(f"input {desc.name!r} has shape {list(array.shape)}, expected "
                                 f"{node.layer.attrs.get('shape', shape_str(desc.shape))}", file=self.path,
                                 layer=node.ref)
        try:
            self.budget.check(array.nbytes, f"input {desc.name!r}")
        except IRError as exc:
            raise exc.located(file=self.path, layer=node.ref) from None
        return array


def load(path, max_memory: int | None = None) -> Model:
    """Read, resolve and check a model so that it is ready to run."""
    doc = read_xml(path)
    budget = Budget(max_memory)
    context = Context(file=doc.xml_path, weights=WeightsFile(doc.bin_path), budget=budget)
    graph = build_graph(doc, context)
    return Model(graph, budget)


__all__ = ["Model", "TensorDesc", "load", "parse_dim"]
