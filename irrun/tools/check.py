"""Conformance checking: every problem in an IR file, each with a stable rule id and the layer it is in.

The checker uses the same definitions as the runtime: `build_graph` (structure, with a `report` callback
that collects its problems), each op's attribute parsing (`Op.bind`) and shape/type inference
(`Op.infer`). On top of those it compares every port's declared dims and precision with what inference
gives, checks that both ends of each edge agree, and warns about unknown attributes, dead layers and ops
irrun cannot verify. docs/rules.md lists the rule ids.
"""
from __future__ import annotations

import os
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..errors import IRError, LayerRef
from ..engine.loader import BODIES
from ..engine.graph import Graph, Node, build_graph, layer_ref, unsupported_error
from ..ir.model import IRDocument, Port
from ..ir.types import element_type
from ..ir.weights import WeightsFile
from ..ir.xml import read_xml
from ..ops.partial import with_partial_values
from ..ops.registry import Context, TensorInfo
from ..ops.shapes import numel, parse_dim, shape_str
from ..ops.state import WARNING_RULES as STATE_WARNINGS
from ..ops.state import variable_problems
from ..ops.stricter import collected
from .dynamic_types import DynamicTypes
from .rule_classes import CLASS_NAMES, STRICTER, relaxed, rule_class

ERROR, WARNING = "error", "warning"
# Rules reported as warnings: OpenVINO reads such files, but something is probably not as intended.
WARNING_RULES = {"attr.unknown", "graph.dead", "layer.unimplemented", "const.size.extra", "check.internal",
                 "target.attr.dropped",
                 *STATE_WARNINGS}
# Constant subgraphs with outputs up to this many elements are computed while checking, as the runtime
# does at load, so that shape arithmetic (ShapeOf -> Gather -> Reshape) is checked with real values.
FOLD_LIMIT = 1 << 12


@dataclass(frozen=True)
class Diagnostic:
    severity: str          # "error" or "warning"
    rule: str              # a stable id from docs/rules.md
    message: str
    layer: LayerRef | None = None
    port: int | None = None  # the XML port id

    def to_dict(self) -> dict:
        layer = self.layer
        return {
            "severity": self.severity, "rule": self.rule,
            "layer_id": layer.id if layer else None, "layer_name": layer.name if layer else None,
            "layer_type": layer.type if layer else None, "op_version": layer.version if layer else None,
            "port": self.port, "message": self.message, **self.class_dict(),
        }

    def class_dict(self) -> dict:
        """Whether OpenVINO's reader refuses this too ("openvino") or irrun is stricter ("stricter", why)."""
        if self.severity == WARNING and self.rule in WARNING_RULES:
            return {"class": None, "class_reason": None}
        kind = rule_class(self.rule)
        return {"class": kind.kind, "class_reason": kind.reason or None}

    def text(self, file: str) -> str:
        """`file: layer ID (name, Type-N): rule: message`; the port and a warning are part of the message."""
        message = " ".join(self.message.split())
        if self.port is not None:
            message = f"port {self.port}: {message}"
        if self.class_dict()["class"] == STRICTER:
            message = f"({CLASS_NAMES[STRICTER]}) {message}"
        if self.severity == WARNING:
            message = f"warning: {message}"
        location = f"{self.layer}: " if self.layer else ""
        return f"{file}: {location}{self.rule}: {message}"


@dataclass
class Report:
    """What `check` found in one file."""

    file: str
    ir_version: int | None
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == ERROR]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == WARNING]

    @property
    def conformant(self) -> bool:
        return not self.errors

    def passes(self, strict: bool = False) -> bool:
        """No errors; with `strict`, no warnings either."""
        return not (self.errors or (strict and self.warnings))

    def rules(self) -> list[tuple[str, str | None]]:
        """(rule, layer id) of every diagnostic: handy in tests."""
        return [(d.rule, d.layer.id if d.layer else None) for d in self.diagnostics]

    def to_dict(self, strict: bool = False) -> dict:
        return {"file": self.file, "conformant": self.passes(strict), "ir_version": self.ir_version,
                "diagnostics": [d.to_dict() for d in self.diagnostics]}

    def lines(self) -> list[str]:
        return [d.text(self.file) for d in self.diagnostics]


def check(path, openvino_compatible: bool = False) -> Report:
    """Check one IR file (model.xml, with its .bin beside it). Never raises for a bad file: every
    problem, including an unreadable file, is a diagnostic in the report. With `openvino_compatible`,
    errors OpenVINO's reader does not share are warnings (irrun/tools/rule_classes.py)."""
    report = _check(str(path))
    if openvino_compatible:
        report.diagnostics = relaxed(report.diagnostics, ERROR, WARNING)
    return report


def _check(path: str) -> Report:
    unreadable = []
    try:
        doc = read_xml(path)
    except IRError as exc:
        if exc.rule not in ("file.xml.encoding", "file.xml.attribute"):
            return Report(path, None, [_from_error(exc)])
        unreadable, doc = [_from_error(exc)], read_xml(path, repair=True)  # as OpenVINO reads it
    return check_document(doc, unreadable, path)


def check_document(doc: IRDocument, unreadable=(), path: str | None = None) -> Report:
    """`check` of a model.xml already read (read_xml); `unreadable`: the diagnostics of its reading; `path`: the
    file as the report names it (default: as read)."""
    path = doc.xml_path if path is None else path
    checker = _Checker(doc)
    checker.diagnostics += unreadable
    try:
        checker.run()
    except Exception as exc:  # noqa: BLE001 - a bug in irrun must not stop a directory run
        checker.add(ERROR, "check.internal", f"the checker failed: {type(exc).__name__}: {exc}")
    position = {layer.id: index for index, layer in reversed(list(enumerate(doc.layers)))}
    diagnostics = sorted(checker.diagnostics, key=lambda d: -1 if d.layer is None else position.get(d.layer.id, -1))
    return Report(path, doc.ir_version, diagnostics)


def _from_error(exc: IRError, layer=None) -> Diagnostic:
    severity = WARNING if exc.rule in WARNING_RULES else ERROR
    return Diagnostic(severity, exc.rule, exc.message, exc.layer or layer, exc.port)


# ---------------------------------------------------------------- declared ports

def declared_bounds(port: Port) -> list[tuple[int, int | None]]:
    """A port's <dim>s as (lower, upper) bounds; raises ValueError on a bad dim."""
    return [parse_dim(text) for text in port.dims]


def _dims_compatible(bounds, shape) -> bool:
    """Declared bounds against an inferred shape: a dynamic dim on either side fits what its bounds allow.
    No <dim> at all is how OpenVINO writes both a scalar and a dynamic rank."""
    if shape is None:
        return True
    if not bounds:
        return len(shape) == 0
    if len(bounds) != len(shape):
        return False
    return all(d is None or (low <= d and (high is None or d <= high)) for (low, high), d in zip(bounds, shape))


def _bounds_str(bounds) -> str:
    def dim(low, high):
        if low == high:
            return str(low)
        if low == 0 and high is None:
            return "?"
        return f"{low}..{'' if high is None else high}"
    return "[" + ",".join(dim(*b) for b in bounds) + "]"


@dataclass
class _PortDecl:
    bounds: list | None  # None: the dims could not be read (reported)
    type: object         # ElementType, or None when the precision is missing or unknown (reported)

    def type_agrees(self, info: TensorInfo) -> bool:
        return self.type is None or "dynamic" in (self.type.name, info.type.name) or self.type == info.type

    def dims_agree(self, info: TensorInfo) -> bool:
        return self.bounds is None or _dims_compatible(self.bounds, info.shape)

    def agrees(self, info: TensorInfo) -> bool:
        return self.type_agrees(info) and self.dims_agree(info)

    def info(self) -> TensorInfo | None:
        """A TensorInfo standing in for inference (unimplemented ops, failed inference)."""
        if self.bounds is None or self.type is None:
            return None
        shape = tuple(low if low == high else None for low, high in self.bounds) if self.bounds else None
        return TensorInfo(shape, self.type)


# ---------------------------------------------------------------- the checker

class _Checker:
    def __init__(self, doc: IRDocument):
        self.doc = doc
        self.file = doc.xml_path
        self.diagnostics: list[Diagnostic] = []
        self.have_bin = os.path.isfile(doc.bin_path)
        # No memory budget: a Const's bytes are mapped, not copied, and are bounded by the .bin's size.
        self.context = Context(file=self.file, weights=WeightsFile(doc.bin_path), budget=None, bodies=BODIES)
        self.decls: dict[tuple[str, int, int], _PortDecl] = {}  # (layer id, port index, 0 in / 1 out)
        self.mismatched: set[tuple[str, int]] = set()  # outputs whose declaration disagrees with inference

    def add(self, severity, rule, message, layer=None, port=None):
        self.diagnostics.append(Diagnostic(severity, rule, message, layer, port))

    def report(self, exc: IRError) -> None:
        if exc.rule == "layer.unimplemented":
            versioned = exc.layer.type if exc.layer.version is None else f"{exc.layer.type}-{exc.layer.version}"
            exc.message = (f"not verified: irrun does not implement {versioned} yet; "
                           f"its output ports are taken as declared")
        self.diagnostics.append(_from_error(exc))

    def run(self) -> None:
        consts = [layer for layer in self.doc.layers if layer_ref(layer).type == "Constant"]
        if consts and not self.have_bin:
            self.add(ERROR, "file.bin", f"the weights file {os.path.basename(self.doc.bin_path)} is missing "
                                        f"({len(consts)} Const layers need it)")
        graph = build_graph(self.doc, self.context, report=self.report)
        live = set(graph.order)
        for node in graph.nodes.values():
            self.check_layer(node, node.id in live)
        if graph.results:
            for layer_id in graph.dead:
                node = graph.nodes[layer_id]
                what = "input is not used by any output" if node.ref.type == "Parameter" else \
                    "no Result depends on this layer"
                self.add(WARNING, "graph.dead", f"dead layer: {what}", node.ref)
        self.infer(graph)

    # ---------------------------------------------------------- per layer, before inference

    def check_layer(self, node: Node, live: bool) -> None:
        layer, ref = node.layer, node.ref
        seen = set()
        for port in (*layer.inputs, *layer.outputs):
            if port.id in seen:
                self.add(ERROR, "port.id", f"port id {port.id} is used twice in the layer", ref, port.id)
            seen.add(port.id)
        for direction, ports in ((0, layer.inputs), (1, layer.outputs)):
            for index, port in enumerate(ports):
                self.decls[(layer.id, index, direction)] = self.declare(ref, port, direction == 0)
        for body in layer.bodies.values():
            self.check_body_dims(body.doc)
        for name in node.unknown_attrs:
            self.add(WARNING, "attr.unknown", f"unknown attribute '{name}' (OpenVINO ignores it)", ref)
        if node.op is None and not node.invalid and not live:
            self.report(unsupported_error(node, self.file))  # live layers are reported by build_graph
        if node.ref.type == "Constant" and node.op is not None and node.op.element_type.storage is not None \
                and node.op.element_type.name != "string":  # a string Const's size depends on its strings
            needed = node.op.element_type.nbytes(numel(node.op.shape))
            if node.op.size > needed:
                self.add(WARNING, "const.size.extra", f"size {node.op.size} is more than the {needed} bytes "
                                                      f"{node.op.element_type}{list(node.op.shape)} takes", ref)

    def check_body_dims(self, doc: IRDocument) -> None:
        """Port dims OpenVINO cannot read, in a Loop's, If's or TensorIterator's body (nested ones too)."""
        for layer in doc.layers:
            for port in (*layer.inputs, *layer.outputs):
                try:
                    declared_bounds(port)
                except ValueError:
                    self.add(ERROR, "port.dims", f"dims {list(port.dims)} in a body are not all dimensions",
                             layer_ref(layer), port.id)
            for body in layer.bodies.values():
                self.check_body_dims(body.doc)

    def declare(self, ref, port: Port, is_input: bool = False) -> _PortDecl:
        try:
            bounds = declared_bounds(port)
        except ValueError:
            self.add(ERROR, "port.dims", f"dims {list(port.dims)} are not all dimensions (an integer >= -1, ? "
                                         f"or an interval like 1..8)", ref, port.id)
            bounds = None
        et = None
        rule = "port.precision.spec" if is_input else "port.precision"  # OpenVINO reads no input port's precision
        if port.precision is None:
            self.add(ERROR, rule, "the port has no precision", ref, port.id)
        else:
            et = element_type(port.precision)
            if et is None:
                self.add(ERROR, rule, f"unknown precision '{port.precision}'", ref, port.id)
        return _PortDecl(bounds, et)

    # ---------------------------------------------------------- inference

    def infer(self, graph: Graph) -> None:
        infos: dict[tuple[str, int], TensorInfo] = {}
        dynamic = DynamicTypes()
        for layer_id in _order_all(graph):
            node = graph.nodes[layer_id]
            in_infos = []
            for index, (port, source) in enumerate(zip(node.layer.inputs, node.inputs)):
                decl = self.decls[(layer_id, index, 0)]
                given = infos.get(source) if source is not None else None
                # When the producer's declaration already disagrees with inference (reported there), an input
                # that agrees with either of them is not reported again: one wrong port, one diagnostic.
                produced = self.decls[(source[0], source[1], 1)].info() if source in self.mismatched else None
                if given is not None and not (produced is not None and decl.agrees(produced)):
                    self.compare(node, port, decl, given, "edge", source)
                in_infos.append(given or decl.info())
            if _is_state_op(node):
                in_infos = [self.refined(source, info) for source, info in zip(node.inputs, in_infos)]
            outputs = self.infer_node(node, in_infos)
            for problem in dynamic.visit(node, in_infos):
                self.report(self._locate(problem, node))
            if outputs is not None:
                declared = len(node.layer.outputs)
                if declared and declared != len(outputs):
                    self.add(ERROR, "port.count", f"the layer declares {declared} output ports, the op has "
                                                  f"{len(outputs)} outputs", node.ref)
                elif declared:
                    for port, index, info in zip(node.layer.outputs, range(declared), outputs):
                        if not self.compare(node, port, self.decls[(layer_id, index, 1)], info, "port"):
                            self.mismatched.add((layer_id, index))
            for index in range(len(node.layer.outputs)):
                info = outputs[index] if outputs is not None and index < len(outputs) else \
                    self.decls[(layer_id, index, 1)].info()
                if info is not None:
                    infos[(layer_id, index)] = info
        writers = [node.inputs[0] for node in graph.nodes.values() if _is_state_op(node) and node.inputs]
        refined = {**infos, **{source: self.refined(source, infos.get(source)) for source in writers}}
        for problem in variable_problems(graph, refined):
            self.report(problem.located(file=self.file))

    def refined(self, source, info: TensorInfo | None) -> TensorInfo | None:
        """`info` with the dims irrun's inference leaves dynamic taken from the producer's declared output
        port, when the two agree. OpenVINO propagates partial values of shape subgraphs (ShapeOf -> Gather ->
        Concat -> Broadcast) that irrun does not; for the variables of ReadValue/Assign, whose declared shapes
        OpenVINO compares with those, the dims its serializer wrote stand in for them."""
        if info is None or info.shape is None or source is None or (source[0], source[1], 1) not in self.decls:
            return info
        decl = self.decls[(source[0], source[1], 1)]
        if not decl.bounds or not decl.dims_agree(info):
            return info
        shape = tuple(d if d is not None else (low if low == high else None)
                      for d, (low, high) in zip(info.shape, decl.bounds))
        return TensorInfo(shape, info.type, info.value)

    def infer_node(self, node: Node, in_infos) -> list[TensorInfo] | None:
        """The op's inferred outputs (constants computed when small), or None when it cannot be inferred."""
        if node.op is None or any(info is None for info in in_infos):
            return None
        if node.ref.type == "Constant" and not self.have_bin:
            return None
        outputs = None
        with collected() as stricter_errors:  # the op goes on to infer what OpenVINO infers
            try:
                node.op.check_inputs(len(in_infos))
                outputs = node.op.infer(in_infos)
            except IRError as exc:
                stricter_errors.append(exc)
            except Exception as exc:  # noqa: BLE001 - an op's own bug: say so, never claim the model is wrong
                self.add(WARNING, "check.internal", f"inference failed inside irrun ({type(exc).__name__}: {exc}); "
                                                    f"the layer is not verified", node.ref)
        for exc in stricter_errors:
            self.report(self._locate(exc, node))
        if stricter_errors or outputs is None:
            return outputs
        outputs = with_partial_values(node, in_infos, outputs)
        if node.op.foldable and node.ref.type != "Constant" and in_infos and all(
                info.value is not None for info in in_infos) and all(
                info.is_static and numel(info.shape) <= FOLD_LIMIT for info in outputs):
            outputs = self.fold(node, in_infos, outputs)
        return outputs

    def fold(self, node: Node, in_infos, outputs):
        try:
            values = node.op.run([info.value for info in in_infos], in_infos, outputs)
        except IRError as exc:
            self.report(self._locate(exc, node))
            return outputs
        except Exception:  # noqa: BLE001 - folding is an extra: without values the checks stay sound
            return outputs
        folded = []
        for info, value in zip(outputs, values):
            value = np.asarray(value)
            ok = value.shape == tuple(info.shape) and value.dtype == info.type.storage
            folded.append(TensorInfo(info.shape, info.type, value) if ok else info)
        return folded

    def _locate(self, exc: IRError, node: Node) -> IRError:
        # Ops name an input by its index; diagnostics name the XML port id.
        if isinstance(exc.port, int) and exc.layer is None and 0 <= exc.port < len(node.layer.inputs):
            exc.port = node.layer.inputs[exc.port].id
        return exc.located(file=self.file, layer=node.ref)

    def compare(self, node: Node, port: Port, decl: _PortDecl, info: TensorInfo, kind: str, source=None):
        """A declared port against what inference (or the producer's declaration) gives: rules
        port.dims.declared and port.type.declared for output ports, edge.dims and edge.type for input ports.
        Returns whether they agree."""
        where = "output" if kind == "port" else "input"
        origin = "inference gives" if source is None else f"its producer (layer {source[0]}, output {source[1]}) gives"
        suffix = ".declared" if kind == "port" else ""
        if not decl.type_agrees(info):
            self.add(ERROR, f"{kind}.type{suffix}", f"{where} precision is {decl.type}, {origin} {info.type}",
                     node.ref, port.id)
        if not decl.dims_agree(info):
            self.add(ERROR, f"{kind}.dims{suffix}", f"{where} dims are {_bounds_str(decl.bounds)}, {origin} "
                                            f"{shape_str(info.shape)}", node.ref, port.id)
        return decl.agrees(info)


def _is_state_op(node: Node) -> bool:
    return node.ref.type in ("ReadValue", "Assign")


def _order_all(graph: Graph) -> list[str]:
    """Every layer, dead ones included, producers first; layers on a cycle come last in XML order."""
    waiting = {layer_id: 0 for layer_id in graph.nodes}
    users: dict[str, list[str]] = {}
    for layer_id, node in graph.nodes.items():
        for source in node.inputs:
            if source is not None and source[0] in graph.nodes:
                waiting[layer_id] += 1
                users.setdefault(source[0], []).append(layer_id)
    ready = deque(layer_id for layer_id, count in waiting.items() if count == 0)
    order = []
    while ready:
        layer_id = ready.popleft()
        order.append(layer_id)
        for user in users.get(layer_id, ()):
            waiting[user] -= 1
            if waiting[user] == 0:
                ready.append(user)
    if len(order) < len(waiting):
        done = set(order)
        order += [layer_id for layer_id in graph.nodes if layer_id not in done]
    return order


__all__ = ["Diagnostic", "Report", "check", "ERROR", "WARNING"]
