"""Which OpenVINO releases can read a model: `irrun check --target RELEASE` and `irrun info`.

Every op version, element type and attribute value in the file is looked up in irrun/tools/release_table.py
(measured on the releases themselves by tools/release_compat.py). Element types count wherever they appear:
a Const's or Parameter's `element_type`, any type-valued attribute (Convert's `destination_type`, ...) and
every port's precision.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import IRError, LayerRef
from ..ir.model import IRDocument, Layer
from ..ir.opsets import resolve
from ..ir.types import element_type
from ..ir.xml import read_xml
from ..ops.registry import lookup
from .check import ERROR, WARNING, Diagnostic
from .release_table import (ATTRIBUTE_VALUES, ATTRIBUTES_KEPT, ELEMENT_TYPES_CONST, ELEMENT_TYPES_PARAMETER,
                            OP_VERSIONS, RELEASES)

OLDEST = RELEASES[0]


def release_key(text: str) -> tuple[int, int]:
    """"2024.6" or "2024.6.0" -> (2024, 6)."""
    parts = text.strip().split(".")
    if len(parts) < 2 or not all(p.isdigit() for p in parts):
        raise ValueError(f"'{text}' is not an OpenVINO release (like 2024.6)")
    return int(parts[0]), int(parts[1])


def parse_target(text: str) -> tuple[int, int]:
    key = release_key(text)
    if key < release_key(OLDEST):
        raise ValueError(f"--target {text}: releases before {OLDEST} are not covered")
    return key


@dataclass(frozen=True)
class Feature:
    layer: LayerRef
    rule: str          # target.op, target.type or target.attr
    what: str          # "op Squeeze-15", "element type f4e2m1 (Const)", ...
    since: str         # the first tested release that reads it

    def text(self) -> str:
        return f"{self.what}: the first tested release that reads it is {self.since}"


def _layer_features(layer: Layer, ref: LayerRef):
    op_type, version = resolve(layer.type, layer.opset)
    if (op_type, version) in OP_VERSIONS:
        yield Feature(ref, "target.op", f"op {op_type}-{version}", OP_VERSIONS[(op_type, version)])
    types: dict[str, str] = {}  # element type -> where it first appears in the layer
    for name, value in layer.attrs.items():
        key = (op_type, version, name, value)
        if key in ATTRIBUTE_VALUES:
            yield Feature(ref, "target.attr", f"{op_type}-{version} {name}=\"{value}\"", ATTRIBUTE_VALUES[key])
        et = element_type(value) if name.endswith("type") or name == "destination_type" else None
        if et is not None:
            types.setdefault(et.name, "Const" if op_type == "Constant" and name == "element_type" else name)
    for port in (*layer.inputs, *layer.outputs):
        et = element_type(port.precision) if port.precision else None
        if et is not None:
            types.setdefault(et.name, "port precision")
    for name, where in sorted(types.items()):
        table = ELEMENT_TYPES_CONST if where == "Const" else ELEMENT_TYPES_PARAMETER
        if name in table:
            yield Feature(ref, "target.type", f"element type {name} ({where})", table[name])


def features(doc: IRDocument) -> list[Feature]:
    """Every feature of the file newer than the oldest tested release, subgraph bodies included."""
    found = []
    for layer in doc.layers:
        ref = LayerRef(layer.id, layer.name, layer.type, resolve(layer.type, layer.opset)[1])
        found += _layer_features(layer, ref)
        for body in layer.bodies.values():
            found += features(body.doc)
    return found


def unreadable(doc: IRDocument, target: str) -> list[Feature]:
    """The features release `target` cannot read, one per feature and layer."""
    key = parse_target(target)
    return [f for f in features(doc) if release_key(f.since) > key]


def target_diagnostics(path: str, target: str) -> list[Diagnostic]:
    """`irrun check --target`: an error per feature of the file that release `target` cannot read."""
    try:
        doc = read_xml(path)
    except IRError:
        return []  # the file's own diagnostics say why
    return [Diagnostic(ERROR, f.rule, f"OpenVINO {target} cannot read {f.text()}", f.layer)
            for f in unreadable(doc, target)] + dropped_attributes(doc, target)


def _is_default(op_type: str, version: int, name: str, value: str) -> bool:
    """Whether the value is the attribute's default (what a release that drops it computes with anyway)."""
    op = lookup(op_type, version)
    attr = next((a for a in (op.attributes.values() if op else ()) if name in a.xml_names), None)
    try:
        return attr is not None and attr.parse(value) == attr.default
    except ValueError:
        return False


def dropped_attributes(doc: IRDocument, target: str) -> list[Diagnostic]:
    """A warning per attribute release `target` reads past (it loads the layer and silently drops the
    attribute), unless the value is its default; subgraph bodies included."""
    key = parse_target(target)
    found = []
    for layer in doc.layers:
        op_type, version = resolve(layer.type, layer.opset)
        ref = LayerRef(layer.id, layer.name, layer.type, version)
        readable = release_key(OP_VERSIONS.get((op_type, version), OLDEST)) <= key
        for name, value in layer.attrs.items():
            since = ATTRIBUTES_KEPT.get((op_type, version, name))
            if readable and since and release_key(since) > key and not _is_default(op_type, version, name, value):
                found.append(Diagnostic(WARNING, "target.attr.dropped", f"OpenVINO {target} reads {op_type}-{version} "
                                        f"but drops attribute {name}=\"{value}\" (first kept in release {since})",
                                        ref))
        for body in layer.bodies.values():
            found += dropped_attributes(body.doc, target)
    return found


def oldest_release(doc: IRDocument) -> str:
    """The oldest tested release that reads every feature of the file."""
    return max((f.since for f in features(doc)), key=release_key, default=OLDEST)
